// Package compare is layermap's built-in comparator: it reproduces msprobe's
// accuracy compare table (msprobe compare -tp -gp, HEAD 8ff00da) cell for
// cell, from two msprobe dumps read by package dump.
//
// Pipeline (spec: shared/docs/msprobe-compare.md): the bench side is read
// into memory as rows keyed by msprobe's compare key (op_name_update, with
// backward call renumbering); the NPU side is streamed entry by entry and
// joined against that index (exact names, -dm data mapping, the data
// mapping derived from a layer mapping, explicit pairs, or msprobe's fuzzy
// match), gated by dtype, then each entry's rows get their statistics diffs
// or tensor metrics and msprobe's rule checkers (Result, Err_message) and
// are written in NPU dump order. Memory holds the bench rows and one NPU
// entry at a time; the two files are parsed concurrently.
//
// Byte parity: numbers print as Python repr, diffs parse their inputs
// with pandas' precise_xstrtod, and the whole-column pandas effects of
// msprobe's pandas 1.5 run (float blocks, the no-bench fillna downcast,
// integer-only diff columns) are detected in a first pass; when they apply
// the table is written again with them (a second pass over the NPU file).
//
// Known divergences from msprobe, by design: statistics/md5-mode fuzzy
// match pairs rows (msprobe's result frame is misaligned there and every
// row comes out unmatched, or it crashes); --xlsx fills rows with
// msprobe's highlight rules (its former -hl; HEAD writes no colors); a
// rank that fails stops the run (msprobe skips it). Not implemented: verl
// consistency checks, -cm/-am cell and api mappings, the -da JSON files,
// and the dirty_valid_len cleaning of npu_grouped_matmul outputs.
package compare
