package cmd

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/layermap/layermap/cmd/iostreams"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/layermap/layermap/cmd/htmlview"
	"github.com/layermap/layermap/mapping/compare"
	"github.com/layermap/layermap/printparse/source"
)

// msprobeShortFlags are msprobe's single-dash multi-letter flags, which
// pflag cannot parse as such; they are rewritten to their long names.
var msprobeShortFlags = map[string]string{
	"-tp": "--target_path", "-gp": "--golden_path", "-fm": "--fuzzy_match",
	"-dm": "--data_mapping", "-lm": "--layer_mapping", "-tensor_log": "--is_print_compare_log",
	"-da": "--diff_analyze",
	// the legacy compare.json CLI's (msprobe-compare.md §2.3): -f after
	// compare is --fuzzy_match, -hl fills the xlsx red/yellow
	"-f": "--fuzzy_match", "-hl": "--xlsx", "--highlight": "--xlsx",
}

// msprobeIgnored are legacy msprobe compare flags that change nothing in
// layermap's table: the stack column is auto-detected (-s) and there is no
// advisor report to skip (-c).
var msprobeIgnored = map[string]bool{"-s": true, "--stack_mode": true, "-c": true, "--compare_only": true}

// msprobeUnsupported are msprobe compare flags layermap does not implement.
var msprobeUnsupported = map[string]string{
	"-cm": "cell mapping", "--cell_mapping": "cell mapping", "-am": "api mapping", "--api_mapping": "api mapping",
	"--consistent_check": "train/infer consistency check",
}

func normalizeCompareArgs(args []string) ([]string, error) {
	out := make([]string, 0, len(args))
	for i, a := range args {
		if a == "--" {
			return append(out, args[i:]...), nil
		}
		name, val, hasVal := strings.Cut(a, "=")
		if what, ok := msprobeUnsupported[name]; ok {
			return nil, fmt.Errorf("%s (%s) is not supported by layermap compare", name, what)
		}
		if msprobeIgnored[a] {
			continue
		}
		if long, ok := msprobeShortFlags[name]; ok {
			if hasVal {
				out = append(out, long+"="+val)
			} else {
				out = append(out, long)
			}
			continue
		}
		out = append(out, a)
	}
	return out, nil
}

// CompareOptions are the flags of layermap compare (msprobe's spellings
// accepted, see normalizeCompareArgs).
type CompareOptions struct {
	IO             *iostreams.IOStreams
	Target, Golden string // -tp, -gp
	Input          string // -i compare.json, instead of -tp and -gp
	OutDir         string
	XLSX, Fuzzy    bool
	DataMapping    string // -dm
	LayerMapping   string // -lm, --mapping
	Pairs          string
	HTML           bool
	Format         string // text or json
	Fused          bool   // N:1 groups compared combined (--fused, default on)
	TP             string // --tp-size NPU,BENCH tensor-parallel sizes
	Strict         bool   // mapping-health findings fail the run
	DiffAnalyze    bool   // -da: msprobe's first-divergence JSON files
}

const compareLong = `compare compares an NPU (target) msprobe dump with a bench (golden) dump and
writes the same table msprobe compare writes, cell for cell:
compare_result[_rankN]_{YYYYmmddHHMMSS}.csv (or .xlsx with --xlsx, rows
filled red/yellow by msprobe's highlight rules) in the output folder.

TARGET and GOLDEN are two dump.json files (or rank folders), or two step
folders: then every rank folder is compared with the bench rank folder at
the same sorted position, one table per rank. The mode (statistics, md5,
tensor) comes from the dump headers, as in msprobe.

Matching is msprobe's: exact names with backward call renumbering,
--fuzzy_match (-fm) to ignore call indices, --data_mapping (-dm) for a
row-level data mapping. --mapping (-lm) applies a layer_mapping.yaml the way
msprobe's MindSpore compare and graph compare do (the table equals msprobe's
table with -dm of the data mapping msprobe derives; that data mapping is
saved next to the table; a -dm beside it is not read, as msprobe's
MindSpore compare replaces it). --pairs adds explicit module pairs from
suggest's sidecar file (a YAML list of {npu: PATH, bench: PATH}, N:1
groups among them), which win over the data mapping. A data mapping and
pairs are joined through before anything else, as msprobe joins through
a data mapping: beside either, -fm pairs no row in order and only leaves
backward calls unrenumbered (a warning says so).

--html also writes, beside each table and named as it, one self-contained
HTML file (no server, no network; open it from a file:// URL): the two
module trees side by side, coloured by the Result of each module's output
rows with msprobe's colours (grey: unmatched), the first divergence, the
table rows of a selected module (at most 4 MB of rows: every warning and
error row first, then each module's first rows; the page says what it left
out), and manual matching that offers the layer_mapping lines to add. It is
part of the run's files: all are written or none.

N:1 groups are compared exactly (--fused, on by default): one module on one
side computing what several compute on the other (MindSpeed's linear_fc1 =
LLaMA-Factory's [gate_proj ; up_proj], a fused qkv, grouped experts). The
groups come from the --pairs sidecar (suggest writes them) and from the
dumps themselves: a mapped pair whose outputs differ along one axis while
siblings of the smaller one read the very same input makes up a group. The
parts' statistics are combined (Max/Min, Mean by element count, Norm as the
root of the summed squares; tensor mode concatenates the files) and compared
as one row, named "[part ; part]", its Err_message saying so; rows with no
exact combination (the gradient of the shared input, a sum) are marked
"fused: inputs only" and not compared. --tp-size NPU,BENCH compares ranks of
different tensor-parallel sizes, the shards of one side combined.
--fused=false writes msprobe's own table.

With a layer mapping, its health against the two dumps comes first in the
summary: validate's checks (dead classes and keys, bad targets, missing
rules) and pairs naming no module, each with file:line, and the rows each
rule sends to a bench name no entry has. Keys, targets and pairs naming a
layer index the dump does not hold (a scope-limited dump, a smaller model)
are info "layer not dumped". The findings are printed and leave the exit
status alone; --strict makes a warning or error finding (a mapping or
pairs file that matches no row, say) exit 1.

The first divergence is noise-aware and classified: a compared output
differs when its statistics differ by more than its dtype's noise floor
(bfloat16 2^-7, float16 2^-10, float32 1e-5; integers exactly; md5 mode:
when its md5 differs). An entry whose outputs differ is a root cause when
its inputs agree, or when its outputs differ at least 10 times as much as
its inputs (it amplifies the difference: msprobe's "norm relative error of
output is 10 times that of input"); inherited when its inputs differ and it
does not amplify (the summary names where from: an earlier divergence, the
parameters of its enclosing module, or nothing compared); absorbed when
its enclosing module's outputs agree. Divergences are listed per
direction in execution order (a module whose parameters differ before
the calls inside it), the first of each class; the first divergence is
the earliest that is not absorbed, with its bench partner, enclosing
module and stack line.
--diff_analyze (-da) writes msprobe's first-divergence files instead of the
tables, byte for byte as msprobe does, with the mapping, pairs and N:1
groups applied (msprobe's own -da ignores mappings), and for a single
pair of dumps too (msprobe's takes step folders only, and writes the
table for a pair of dump files as if -da were not given).

A summary follows on stdout: rows, pass/warning/error counts (msprobe's
Result column, which passes rows never compared), the rows compared and
their results, unmatched rows on both sides, rows matched by each source,
the N:1 rows per kind, and the divergences (--format json: the same, the
first as first_divergence).

The legacy compare.json command line works as is: -s and -c are accepted
and change nothing (the stack column is auto-detected, there is no advisor
report), -f is -fm and -hl is --xlsx.

Exit status: 0 no error rows, 1 error rows found (or no NPU row found a
bench row, so nothing was compared, or --strict and a mapping-health
warning or error), 2 bad input (nothing is written, not even the output
folder).`

// NewCmdCompare builds layermap compare; runF, when set, replaces
// runCompare.
func NewCmdCompare(ios *iostreams.IOStreams, runF func(*CompareOptions) error) *cobra.Command {
	opts := &CompareOptions{IO: ios}
	var tensorLog bool // msprobe's per-row tensor log; the table is the same either way
	c := &cobra.Command{
		Use:   "compare -tp TARGET -gp GOLDEN [-o OUT] [flags]",
		Short: "Compare two msprobe dumps and write msprobe's compare table",
		Long:  compareLong,
		Example: `  # rank folders (or dump.json files, or step folders), paths from a layermap checkout
  layermap compare -tp testdata/demo/dumps/llamafactory -gp testdata/demo/dumps/mindspeed-mm -o out

  # through the draft and sidecar of 'layermap suggest --help', as .xlsx
  layermap compare -tp testdata/demo/dumps/llamafactory/dump.json -gp testdata/demo/dumps/mindspeed-mm/dump.json \
      --mapping lf_to_ms.yaml --pairs lf_pairs.yaml --xlsx -o out

  # msprobe's compare.json, JSON summary for CI
  layermap compare -i testdata/demo/compare.json --format json -o out`,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, raw []string) error {
			if err := parseCompareFlags(cmd, raw); err != nil {
				return err
			}
			if h, _ := cmd.Flags().GetBool("help"); h {
				return cmd.Help()
			}
			if err := opts.check(cmd); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return runCompare(opts)
		},
	}
	f := c.Flags()
	f.StringVar(&opts.Target, "target_path", "", "NPU side: dump.json, rank folder or step folder (-tp)")
	f.StringVar(&opts.Golden, "golden_path", "", "bench side, same kind as the target (-gp)")
	f.StringVarP(&opts.OutDir, "output_path", "o", "./output", "output folder")
	f.StringVarP(&opts.Input, "input", "i", "", "msprobe's legacy compare.json (npu_path, bench_path, stack_path, is_print_compare_log)")
	f.BoolVar(&opts.XLSX, "xlsx", false, "write .xlsx (rows highlighted red/yellow as msprobe -hl did) instead of .csv")
	f.BoolVar(&opts.Fuzzy, "fuzzy_match", false, "match names ignoring call indices (-fm)")
	f.StringVar(&opts.DataMapping, "data_mapping", "", "row-level data mapping yaml {npu_row: bench_row} (-dm)")
	f.StringVar(&opts.LayerMapping, "layer_mapping", "", "layer_mapping.yaml applied as msprobe does (-lm)")
	f.StringVar(&opts.LayerMapping, "mapping", "", "same as --layer_mapping")
	f.StringVar(&opts.Pairs, "pairs", "", "explicit module pairs: YAML list of {npu: PATH, bench: PATH}")
	f.BoolVar(&opts.HTML, "html", false, "also write the HTML view of the two dumps beside each table")
	f.StringVar(&opts.Format, "format", "text", "summary format: text or json")
	f.BoolVar(&opts.Fused, "fused", true, "compare N:1 groups (fused modules, grouped experts) combined; false: msprobe's table")
	f.StringVar(&opts.TP, "tp-size", "", "tensor-parallel sizes of target and golden, NPU,BENCH (e.g. 2,1): shards compared combined")
	f.BoolVar(&opts.Strict, "strict", false, "mapping-health warnings and errors make the run exit 1")
	f.BoolVar(&opts.DiffAnalyze, "diff_analyze", false, "msprobe's -da: per rank compare_result_rank{N}_{ts}.json instead of the table, then diff_analyze_{ns}.json (the first divergence across ranks), mapping applied")
	f.BoolVar(&tensorLog, "is_print_compare_log", false, "accepted for msprobe compatibility (-tensor_log)")
	f.BoolP("help", "h", false, "help for compare")
	f.SetNormalizeFunc(func(_ *pflag.FlagSet, name string) pflag.NormalizedName {
		switch name {
		case "target", "target-path":
			name = "target_path"
		case "golden", "golden-path":
			name = "golden_path"
		case "output", "output-path":
			name = "output_path"
		case "fuzzy-match":
			name = "fuzzy_match"
		case "data-mapping":
			name = "data_mapping"
		case "layer-mapping":
			name = "layer_mapping"
		case "diff-analyze":
			name = "diff_analyze"
		}
		return pflag.NormalizedName(name)
	})
	return c
}

// parseCompareFlags parses msprobe's compare command line: its
// single-dash multi-letter flags are rewritten first, and errors name the
// flag as typed.
func parseCompareFlags(cmd *cobra.Command, raw []string) error {
	args, err := normalizeCompareArgs(raw)
	if err != nil {
		return &FlagError{err}
	}
	if err := cmd.Flags().Parse(args); err != nil {
		msg := err.Error()
		for _, a := range raw {
			// name the flag as typed: "-tp", not "--target_path"
			if long, ok := msprobeShortFlags[a]; ok {
				msg = strings.ReplaceAll(msg, long, a)
			}
		}
		return flagErrorf("%s\nRun 'layermap compare --help' for usage", msg)
	}
	return nil
}

// check validates the flags together.
func (o *CompareOptions) check(cmd *cobra.Command) error {
	switch {
	case cmd.Flags().NArg() > 0:
		return flagErrorf("unexpected argument %q; pass the dumps with -tp and -gp", cmd.Flags().Arg(0))
	case o.Format != "text" && o.Format != "json":
		return flagErrorf("--format: expected text or json, found %q", o.Format)
	case o.Input != "" && (o.Target != "" || o.Golden != ""):
		return flagErrorf("-i compare.json and -tp/-gp exclude each other")
	case o.Input == "" && (o.Target == "" || o.Golden == ""):
		return flagErrorf("expected both -tp TARGET and -gp GOLDEN (or -i compare.json)")
	}
	if _, err := parseTP(o.TP); err != nil {
		return flagErrorf("--tp-size: %v", err)
	}
	return nil
}

// parseTP reads --tp-size NPU,BENCH.
func parseTP(s string) (compare.TPSizes, error) {
	if s == "" {
		return compare.TPSizes{}, nil
	}
	var tp compare.TPSizes
	a, b, ok := strings.Cut(s, ",")
	_, err1 := fmt.Sscan(a, &tp.NPU)
	_, err2 := fmt.Sscan(b, &tp.Bench)
	if !ok || err1 != nil || err2 != nil || tp.NPU <= 0 || tp.Bench <= 0 {
		return tp, fmt.Errorf("expected two positive sizes NPU,BENCH (e.g. 2,1), found %q", s)
	}
	return tp, nil
}

func runCompare(opts *CompareOptions) error {
	ios := opts.IO
	opt := compare.Options{Target: opts.Target, Golden: opts.Golden, OutDir: opts.OutDir, XLSX: opts.XLSX, Fuzzy: opts.Fuzzy,
		DataMappingFile: opts.DataMapping, LayerMappingFile: opts.LayerMapping, PairsFile: opts.Pairs,
		NoFused: !opts.Fused, Strict: opts.Strict, DiffAnalyze: opts.DiffAnalyze, Warnings: ios.ErrOut, Progress: ios.ProgressOut()}
	opt.TP, _ = parseTP(opts.TP)
	if opts.Input != "" {
		var err error
		if opt.Target, opt.Golden, opt.StackJSON, err = compare.ReadCompareJSON(opts.Input); err != nil {
			return err
		}
		if opt.StackJSON != "" {
			if _, err := os.Stat(opt.StackJSON); err != nil {
				return source.PathError(opt.StackJSON, "the stack.json named by "+opts.Input+"'s stack_path", err)
			}
		}
	}
	if opts.HTML {
		views, err := newHTMLViews(opts.LayerMapping)
		if err != nil {
			return err
		}
		opt.Views = views
	}
	rep, err := compare.Run(opt)
	if err != nil {
		var de *source.Error
		if errors.As(err, &de) {
			// "dump.json:LINE: expected ..., found ...", the file first
			// (not "target: " or "read stack.json: " before it)
			return de
		}
		return err
	}
	if opts.Format == "json" {
		err = rep.WriteJSON(ios.Out)
	} else {
		err = rep.WriteText(ios.Out)
	}
	if err != nil {
		return err
	}
	if err := rep.Err(); err != nil {
		return err
	}
	found, notes := rep.Findings()
	for _, n := range notes {
		fmt.Fprintln(ios.ErrOut, "layermap:", n)
	}
	if found {
		return ErrFindings
	}
	return nil
}

// newHTMLViews prepares compare --html's view, with the layer mapping's
// text when there is one.
func newHTMLViews(layerMap string) (htmlViews, error) {
	if layerMap == "" {
		return htmlViews{}, nil
	}
	text, err := source.ReadFile(layerMap, source.MaxMappingYAML)
	if err != nil {
		return htmlViews{}, err
	}
	mf, err := htmlview.NewMappingFile(filepath.Base(layerMap), string(text))
	if err != nil {
		return htmlViews{}, err
	}
	return htmlViews{mf}, nil
}

// htmlViews makes the HTML view of each rank pair (compare --html).
type htmlViews struct{ mf *htmlview.MappingFile }

// NewView implements compare.ViewMaker.
func (h htmlViews) NewView(d compare.ViewDumps) compare.ViewSink {
	return htmlview.NewCompareSink(d, h.mf)
}
