// Package msprobe is the msprobe dump format: it reads dump folders (the
// rank/proc layout), dump.json (streamed, every value kind msprobe writes),
// stack.json, construct.json and the tensor file names of tensor mode.
//
// Layout: FindRankDir resolves a user path to one rank folder, StepRanks
// lists the rank folders of a step folder and PairRanks pairs two of them
// as msprobe's directory compare does; Locate finds the files of a rank
// folder and Paths.TensorPath turns a data_name into a file path, refusing
// names that would leave dump_tensor_data.
//
// dump.json: Scan (ScanFile) streams the file and yields each entry
// flattened into rows exactly as msprobe's compare flattens it (spec
// §3.1), with what the compare key needs (§3.2). ReadHeader reads only the
// header; EntryNames lists the entry names. Memory is bounded by the
// largest entry. The reader has its own tokenizer: Python writes bare
// NaN/Infinity/-Infinity, which encoding/json rejects, and number literals
// are kept as written so that they can be printed as msprobe prints them
// (Value.PyStr, PyFloat).
//
// stack.json and construct.json: ReadStack, ReadConstruct (ReadParentIndex
// for lookups by name in less memory). The manual
// matches of msprobe's graph view (.vis.config): ParseVisConfig.
//
// Errors about file content are *source.Error values ("file:line: expected
// ..., found ..."); files are opened with source.Open (regular files only,
// within the budgets source.MaxDumpJSON and source.MaxTreeJSON).
package msprobe
