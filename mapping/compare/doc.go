// Package compare is layermap's built-in comparator: it reproduces msprobe's
// accuracy compare table (msprobe compare -tp -gp, HEAD 8ff00da) cell for
// cell, from two msprobe dumps read by package msprobe (printparse/msprobe).
//
// Pipeline (spec: shared/docs/msprobe-compare.md): both sides are read as
// rows keyed by msprobe's compare key (op_name_update, with backward call
// renumbering); the NPU side is streamed entry by entry and each row is
// joined with the bench rows of its key (exact names, -dm data mapping, the
// data mapping derived from a layer mapping, explicit pairs, or msprobe's
// fuzzy match), gated by dtype, then each entry's rows get their statistics
// diffs or tensor metrics and msprobe's rule checkers (Result,
// Err_message) and are written in NPU dump order. Goroutines: the NPU
// decode and flatten, the bench lookahead (lookahead.go), the join, and the
// workers that finish each entry's rows into CSV lines with the writer
// (the caller) -- or, in statistics and md5 mode on two CPUs or fewer,
// the join finishing and writing the rows itself (inlineRows); the
// table's full buffers are written by another goroutine (output.Writer),
// so the join waits on a write only when the one before is still under
// way; rank pairs of a step folder run side by side.
//
// Memory: the NPU side is streamed; the bench side is joined through an
// index built before the first NPU row from a skim of the bench file
// (benchindex.go; the skim runs ahead on every CPU, see msprobe.Skim):
// every entry's compare-key prefix and byte offset, so that each NPU row
// finds its bench rows whatever the two files' orders, and bench entries
// are parsed where the join needs them. Nothing is kept per row beyond
// the parsed bench entries in use (a cache of cacheEntries, and those
// parsed ahead for the next NPU entries), the entries being joined and
// written, and the capped first-divergence candidates (maxCandidates,
// maxModules). An entry is joined and written whole: one of many rows
// (an optimizer's foreach call on every parameter) holds them a few
// times over while it is (about 6 KB a row in all: its NPU items and
// rows, the bench entry's, the table's rows), 230 MB for an entry of
// 40,000 rows. What grows with the files is a fixed amount per entry,
// outside the collected heap (printparse/offheap): per bench entry about
// 13 bytes of index and offset, 4 more when it is a renumbered backward
// entry, at most 43 more when it left the cache partly matched
// (benchindex.go), and 6 bytes while the bench file is skimmed; per NPU
// entry 6 bytes while the NPU file is read (the names' hashes that find
// repeated keys, dups.go; none in a mapped compare, whose reading found
// none); per NPU stack.json name 12 bytes (msprobe.Stacks;
// 16 in the old format, each name its own frames), 5 to 6 more once a
// lookup misses the names after the last ones found and the groups'
// first names (-da, an entry stack.json lacks) or a name is set twice,
// and while the names are done; per distinct op 24 bytes
// (keys.go); under -da, per communication op its input rows' names and
// values, and the search's nodes of its layer when they differ (the
// layer's first compute diff and the op's own, rendered: dasearch.go).
// msprobe's fuzzy match (-fm) pairs the rows of both sides in file order
// and reads the bench side as a stream too (fuzzy.go): it keeps the rows
// of its two queues and their names, and nothing of the rows before. A
// queue holds the rows since its last cut, about 420 bytes a row and
// the row's strings: a few rows while pairs keep coming; the rows a side
// runs ahead after a block of rows the other lacks; every row left
// unmatched after the last pair (the table writes them only once a later
// pair or the end settles them), the whole file where no name pairs. The
// bench queue packs its older rows once it is longer than packAfterRows,
// as the whole-bench join holds them (fuzzy.go).
// With tensor-parallel shards, which look bench rows up by name, it
// reads the whole bench side into memory in a packed form
// (benchstore.go). Beside a data mapping or pairs it pairs no row in
// order: the rows are joined through those, with the index.
//
// A layer mapping (-lm) is not streamed: msprobe's scope resolution needs
// every entry of both sides before it answers (a scope's class comes from
// its last entry), so the two dumps' entries are read first (package
// resolve, one goroutine a side) and their entry names held, as
// msprobe.Names: 8 bytes a name (a pattern shared by the names that
// differ only in their call number, and the number), outside the
// collected heap, and while they are read and checked (construct.json's
// parents found among them, whether one extends another, how many are
// distinct) 8 to 16 more of index for lookups by name, dropped before
// the mappings are made. The join takes entries by position
// (msprobe.Entry.Member): the NPU side's names go once the N:1 plan is
// made, the bench side's are held through the join. Each side's
// entries are kept in a compact form until the api mapping is derived
// (12 bytes an entry outside the heap and 4 in its scope trie's node:
// its full scope, state and ordinal, the name by position), and
// construct.json's parents as positions among the names (4 bytes); the
// api mapping is a bench position per NPU entry (4 bytes outside the
// heap), which the data mapping keeps through the join. Where every row
// is its entry's name and a structural suffix and no entry name extends
// another (the common case), the entries are only skimmed (8 bytes of
// offset an entry): a row's pair then follows from its entry's, the data
// mapping file is written as the join reads the rows (dataMapLog), and
// the entries a rule sends nowhere are kept as runs of positions (12
// bytes a run, sentNowhere). Otherwise the rows' names are read first
// too. The reading's garbage is
// returned to the system before the mappings are made, the N:1
// detection's indexes are built once they are (the tries gone), and one
// collection then sets the collector's goal from the join's live heap
// (see checkMapping, applyInputs). The NPU side is read without a check
// for repeated keys, which the reading ruled out. Measured on a
// Qwen2.5-VL pair of 244,400 NPU and 256,202 bench entries (216 MB a
// side): peak RSS about 43 MB, towards the end of the join (31 MB at
// 27 MB a side; without a layer mapping 39 and 29 MB). On dumpgen's
// pair of 575,235 entries a side (512 MB), 46 MB (32 MB at 64 MB).
//
// A data mapping (-dm) is read as it is cut into pieces, on every CPU,
// at most one piece more than the CPUs held at a time (dmchunks.go), and
// kept as a DataMapping: runs of pairs whose call counts go up together,
// 16 bytes a run outside the heap, and each name pattern's text once (at
// most a run and two patterns a pair; 196,432 runs and 4,111 patterns for
// the 775,000 pairs of the Qwen2.5-VL data mapping of the pair above,
// 70 MB). What its reading left goes back to the system before the dumps
// are read. That compare peaks at 43 MB (31 MB at 27 MB a side); the
// mapping is held for the compare, since msprobe looks rows up in it in
// any order.
//
// Byte parity: numbers print as Python repr, diffs parse their inputs
// with pandas' precise_xstrtod, and the whole-column pandas effects of
// msprobe's pandas 1.5 run (float blocks, the no-bench fillna downcast,
// integer-only diff columns) are detected in a first pass; when they apply
// the table is written again with them (a second pass over both files).
// The no-bench downcast alone, which changes only int cells of the rows
// without bench data, is patched into a CSV table, -da's JSON and the
// rows a view kept (csvpatch.go, NoBenchView) instead, and an md5 table,
// which prints no statistics, takes none. Nor does an md5 table read
// them: both dumps are read with their statistics left unconverted
// (msprobe.ScanOptions.NoStats, Config.statsUnread), but for the N:1
// detection's indexes, which compare them.
//
// Known divergences from msprobe, by design: -lm applies to a PyTorch
// target as msprobe's MindSpore compare applies it (msprobe's PyTorch
// compare ignores -lm, and with -dm beside it would use -dm, which
// layermap then does not read); statistics/md5-mode fuzzy
// match pairs rows (msprobe's result frame is misaligned there and every
// row comes out unmatched, or it crashes); -da writes its files for a
// single pair of dumps too (msprobe's -da takes step folders only, and
// writes the table for a pair of dump files) and applies the mappings
// (msprobe's ignores them); two dumps whose frameworks msprobe's compare
// refuses to pair (get_compare_framework: a pytorch target takes only a
// pytorch bench, a mindtorch bench none; a step folder's first NPU rank
// not mindtorch), or a MindSpore target's bench it takes for neither
// framework, are compared, the dtype gate as msprobe sets it where it
// compares (crossFramework); --xlsx fills rows with msprobe's highlight
// rules (its former -hl; HEAD writes no colors); a rank that fails stops
// the run (msprobe skips it); in tensor mode a tensor file that exists but
// cannot be read (corrupt, truncated, not a tensor, a link out of the
// dump, a FIFO) makes an error row whose Err_message carries msprobe's own
// message for it ("error: Dump file: X or Y not found or read failed."),
// where msprobe writes an "unsupported" pass row (a missing file keeps
// msprobe's row). Not implemented: verl consistency checks, -cm/-am cell
// and api mappings. Tensor mode applies msprobe's dirty_valid_len
// cleaning: the NPU output rows of npu_grouped_matmul /
// npu_dequant_swiglu_quant entries are zeroed past the sum of their
// group_list / group_index kwarg (see DirtyGroup).
package compare
