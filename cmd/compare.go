package cmd

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/layermap/layermap/mapping/resolve"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/layermap/layermap/cmd/htmlview"
	"github.com/layermap/layermap/mapping"
	"github.com/layermap/layermap/mapping/compare"
	"github.com/layermap/layermap/printparse/msprobe"
	"github.com/layermap/layermap/printparse/source"
)

// msprobeShortFlags are msprobe's single-dash multi-letter flags, which
// pflag cannot parse as such; they are rewritten to their long names.
var msprobeShortFlags = map[string]string{
	"-tp": "--target_path", "-gp": "--golden_path", "-fm": "--fuzzy_match",
	"-dm": "--data_mapping", "-lm": "--layer_mapping", "-tensor_log": "--is_print_compare_log",
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
	"-da":                "first-divergence analysis JSON (layermap prints the first divergence in its summary)",
	"--diff_analyze":     "first-divergence analysis JSON (layermap prints the first divergence in its summary)",
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

// compareJSON is msprobe's legacy compare.json (-i).
type compareJSON struct {
	NPUPath           *string `json:"npu_path"`
	BenchPath         *string `json:"bench_path"`
	StackPath         *string `json:"stack_path"`
	IsPrintCompareLog *bool   `json:"is_print_compare_log"`
}

func readCompareJSON(path string) (npu, bench, stack string, err error) {
	b, err := source.ReadFile(path, source.MaxSmallJSON)
	if err != nil {
		return "", "", "", err
	}
	var c compareJSON
	dec := json.NewDecoder(strings.NewReader(string(b)))
	if err := dec.Decode(&c); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line := 1 + strings.Count(string(b[:se.Offset]), "\n")
			return "", "", "", &source.Error{File: path, Line: line, Expected: "a JSON object with npu_path and bench_path", Found: fmt.Sprintf("invalid JSON (%v)", err)}
		}
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &te) && te.Field != "":
			line := 1 + strings.Count(string(b[:min(int(te.Offset), len(b))]), "\n")
			want := "a path (string)"
			if te.Field == "is_print_compare_log" {
				want = "true or false"
			}
			return "", "", "", &source.Error{File: path, Line: line, Expected: want + " for " + te.Field, Found: "a JSON " + te.Value}
		case errors.As(err, &te):
			return "", "", "", &source.Error{File: path, Line: 1, Expected: "a JSON object with npu_path and bench_path", Found: "a JSON " + te.Value}
		case errors.Is(err, io.EOF):
			return "", "", "", &source.Error{File: path, Line: 1, Expected: "a JSON object with npu_path and bench_path", Found: "an empty file"}
		}
		return "", "", "", &source.Error{File: path, Line: 1, Msg: "expected a JSON object with npu_path and bench_path", Err: err}
	}
	if c.NPUPath == nil || c.BenchPath == nil {
		return "", "", "", &source.Error{File: path, Line: 1, Expected: "keys npu_path and bench_path", Found: missingKeys(c)}
	}
	if c.StackPath != nil {
		stack = *c.StackPath
	}
	return *c.NPUPath, *c.BenchPath, stack, nil
}

func missingKeys(c compareJSON) string {
	var m []string
	if c.NPUPath == nil {
		m = append(m, "no npu_path")
	}
	if c.BenchPath == nil {
		m = append(m, "no bench_path")
	}
	return strings.Join(m, " and ")
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func newCompareCmd(s *streams) *cobra.Command {
	var (
		target, golden, outDir, input string
		stackPath                     string
		xlsx, fuzzy, tensorLog        bool
		dataMapping, layerMap, pairs  string
		format                        string
		html                          bool
	)
	c := &cobra.Command{
		Use:   "compare -tp TARGET -gp GOLDEN [-o OUT] [flags]",
		Short: "Compare two msprobe dumps and write msprobe's compare table",
		Long: `compare compares an NPU (target) msprobe dump with a bench (golden) dump and
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
saved next to the table). --pairs adds explicit module pairs from suggest's
sidecar file (a YAML list of {npu: PATH, bench: PATH}).

--html also writes, beside each table and named as it, one self-contained
HTML file (no server, no network; open it from a file:// URL): the two
module trees side by side, coloured by the Result of each module's output
rows with msprobe's colours (grey: unmatched), the first divergence, the
table rows of a selected module, and manual matching that offers the
layer_mapping lines to add. It is part of the run's files: all are written
or none.

A summary follows on stdout: rows, pass/warning/error counts, unmatched rows
on both sides, rows matched by each source, and the first module (in NPU
execution order) whose inputs agree and whose outputs are marked error.

The legacy compare.json command line works as is: -s and -c are accepted
and change nothing (the stack column is auto-detected, there is no advisor
report), -f is -fm and -hl is --xlsx.

Exit status: 0 no error rows, 1 error rows found (or no NPU row found a
bench row, so nothing was compared), 2 bad input.`,
		Example: `  # rank folders (or dump.json files, or step folders), paths from a layermap checkout
  layermap compare -tp testdata/demo/dumps/llamafactory -gp testdata/demo/dumps/mindspeed-mm -o out

  # through the draft and sidecar of 'layermap suggest --help', as .xlsx
  layermap compare -tp testdata/demo/dumps/llamafactory/dump.json -gp testdata/demo/dumps/mindspeed-mm/dump.json \
      --mapping lf_to_ms.yaml --pairs lf_pairs.yaml --xlsx -o out

  # msprobe's compare.json, JSON summary for CI
  layermap compare -i testdata/demo/compare.json --format json -o out`,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, raw []string) error {
			args, err := normalizeCompareArgs(raw)
			if err != nil {
				return badInput(err)
			}
			if err := cmd.Flags().Parse(args); err != nil {
				msg := err.Error()
				for _, a := range raw {
					// name the flag as typed: "-tp", not "--target_path"
					if long, ok := msprobeShortFlags[a]; ok {
						msg = strings.ReplaceAll(msg, long, a)
					}
				}
				return badInput(fmt.Errorf("%s\nRun 'layermap compare --help' for usage", msg))
			}
			if h, _ := cmd.Flags().GetBool("help"); h {
				return cmd.Help()
			}
			if cmd.Flags().NArg() > 0 {
				return badInput(fmt.Errorf("unexpected argument %q; pass the dumps with -tp and -gp", cmd.Flags().Arg(0)))
			}
			if format != "text" && format != "json" {
				return badInput(fmt.Errorf("--format: expected text or json, found %q", format))
			}
			if input != "" {
				if target != "" || golden != "" {
					return badInput(errors.New("-i compare.json and -tp/-gp exclude each other"))
				}
				target, golden, stackPath, err = readCompareJSON(input)
				if err != nil {
					return badInput(err)
				}
				if stackPath != "" {
					if _, err := os.Stat(stackPath); err != nil {
						return badInput(fmt.Errorf("%s: stack_path: %w", input, err))
					}
				}
			}
			if target == "" || golden == "" {
				return badInput(errors.New("expected both -tp TARGET and -gp GOLDEN (or -i compare.json)"))
			}
			_ = tensorLog // msprobe's per-row tensor log; the table is the same either way
			if sameFile(target, golden) {
				fmt.Fprintf(s.err, "layermap: warning: -tp and -gp name the same dump (%s): every row is compared with itself and passes\n", target)
			}
			opt := compare.Options{Target: target, Golden: golden, OutDir: outDir, XLSX: xlsx, Fuzzy: fuzzy, StackJSON: stackPath}
			var tensorFiles []*missingTensors
			opt.NewTensor = func(npu, bench msprobe.Paths) (compare.TensorComparer, error) {
				tc, err := compare.NewTensorFiles(npu, bench)
				if err != nil {
					return nil, err
				}
				mt := &missingTensors{TensorComparer: tc, npu: npu, bench: bench}
				tensorFiles = append(tensorFiles, mt)
				return mt, nil
			}
			if dataMapping != "" {
				dm, err := loadDataMapping(dataMapping)
				if err != nil {
					return badInput(err)
				}
				opt.DataMapping = dm
			}
			if layerMap != "" {
				m, diags, err := mapping.Load(layerMap)
				if err != nil {
					return badInput(err)
				}
				for _, d := range diags {
					fmt.Fprintln(s.err, d)
				}
				opt.LayerMapping = func(npuDir, benchDir string) ([][2]string, error) {
					dm, err := resolve.GenerateDataMapping(m, npuDir, benchDir)
					if err != nil {
						return nil, err
					}
					out := make([][2]string, len(dm))
					for i, p := range dm {
						out[i] = [2]string{p.NPU, p.Bench}
					}
					return out, nil
				}
			}
			if html {
				var mf *htmlview.MappingFile
				if layerMap != "" {
					text, err := source.ReadFile(layerMap, source.MaxMappingYAML)
					if err != nil {
						return badInput(err)
					}
					if mf, err = htmlview.NewMappingFile(filepath.Base(layerMap), string(text)); err != nil {
						return badInput(err)
					}
				}
				opt.View = func(npu, bench msprobe.Paths) compare.ViewSink {
					return htmlview.NewCompareSink(npu, bench, mf)
				}
			}
			if pairs != "" {
				ps, err := compare.LoadPairs(pairs)
				if err != nil {
					return badInput(err)
				}
				opt.Pairs = func(npu, bench msprobe.Paths) (map[string]string, error) {
					return compare.PairRows(ps, npu, bench)
				}
			}
			// The bench side is held in a pointer-free store the collector
			// need not scan, so a low GC target costs little CPU and keeps
			// the heap near its live size on multi-GB dumps.
			defer debug.SetGCPercent(debug.SetGCPercent(25))
			progress := isTerminal(s.err)
			if progress {
				opt.Progress = func(rank string, done, total int64) {
					if rank != "" {
						rank = " " + rank
					}
					fmt.Fprintf(s.err, "\rcompare%s %s", rank, progressBar(done, total))
				}
			}
			rep, err := compare.Run(opt)
			if progress {
				fmt.Fprint(s.err, "\r\033[K")
			}
			if err != nil {
				var de *source.Error
				if errors.As(err, &de) {
					// "dump.json:LINE: expected ..., found ...", the file first
					// (not "target: " or "read stack.json: " before it)
					return badInput(de)
				}
				if errors.Is(err, os.ErrNotExist) {
					return badInput(err)
				}
				return err
			}
			for _, mt := range tensorFiles {
				mt.warn(s.err)
			}
			// a source the user gave is counted even when it matched nothing
			asked := map[string]bool{"name": true, "fuzzy": fuzzy, "data_mapping": dataMapping != "", "layer_mapping": layerMap != "", "pairs": pairs != ""}
			if format == "json" {
				for _, r := range rep.Ranks {
					if r.Summary == nil {
						continue
					}
					for k, on := range asked {
						if _, ok := r.Summary.MatchedBy[k]; on && k != "name" && !ok {
							if r.Summary.MatchedBy == nil {
								r.Summary.MatchedBy = map[string]int{}
							}
							r.Summary.MatchedBy[k] = 0
						}
					}
				}
				enc := json.NewEncoder(s.out)
				enc.SetIndent("", "  ")
				if err := enc.Encode(rep); err != nil {
					return err
				}
			} else {
				printCompareSummary(s.out, rep, asked)
			}
			for _, r := range rep.Ranks {
				if r.Summary != nil && (r.Summary.Rows == 0 || r.Summary.BenchRows == 0) {
					// nothing compared: never report a clean run for it
					return badInput(fmt.Errorf("%s vs %s: no valid data to compare", r.Target, r.Golden))
				}
			}
			failed := false
			for _, r := range rep.Ranks {
				if r.Summary != nil && r.Summary.NPUUnmatched >= r.Summary.Rows {
					// msprobe marks an unmatched row pass: a table of them is no clean run
					fmt.Fprintf(s.err, "layermap: %s vs %s: expected NPU rows with a bench partner, found none of %d: nothing was compared, whatever the pass count says; check --mapping, -dm, --pairs or which dumps were paired\n",
						r.Target, r.Golden, r.Summary.Rows)
					failed = true
				}
				if r.Summary != nil && r.Summary.Error > 0 {
					failed = true
				}
			}
			if failed {
				return findings()
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&target, "target_path", "", "NPU side: dump.json, rank folder or step folder (-tp)")
	f.StringVar(&golden, "golden_path", "", "bench side, same kind as the target (-gp)")
	f.StringVarP(&outDir, "output_path", "o", "./output", "output folder")
	f.StringVarP(&input, "input", "i", "", "msprobe's legacy compare.json (npu_path, bench_path, stack_path, is_print_compare_log)")
	f.BoolVar(&xlsx, "xlsx", false, "write .xlsx (rows highlighted red/yellow as msprobe -hl did) instead of .csv")
	f.BoolVar(&fuzzy, "fuzzy_match", false, "match names ignoring call indices (-fm)")
	f.StringVar(&dataMapping, "data_mapping", "", "row-level data mapping yaml {npu_row: bench_row} (-dm)")
	f.StringVar(&layerMap, "layer_mapping", "", "layer_mapping.yaml applied as msprobe does (-lm)")
	f.StringVar(&layerMap, "mapping", "", "same as --layer_mapping")
	f.StringVar(&pairs, "pairs", "", "explicit module pairs: YAML list of {npu: PATH, bench: PATH}")
	f.BoolVar(&html, "html", false, "also write the HTML view of the two dumps beside each table")
	f.StringVar(&format, "format", "text", "summary format: text or json")
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
		}
		return pflag.NormalizedName(name)
	})
	return c
}

// loadDataMapping reads an msprobe data mapping yaml {npuRow: benchRow}.
func loadDataMapping(path string) (map[string]string, error) {
	return compare.LoadDataMapping(path)
}

func printCompareSummary(w io.Writer, rep *compare.Report, asked map[string]bool) {
	for _, r := range rep.Ranks {
		s := r.Summary
		head := "compare"
		if r.Rank != "" {
			head += " " + r.Rank
		}
		if s.Rows == 0 || s.BenchRows == 0 {
			side := r.Target
			if s.Rows > 0 {
				side = r.Golden
			}
			fmt.Fprintf(w, "%s: no valid data found in %s (no entry msprobe can compare); no table written\n", head, side)
			continue
		}
		fmt.Fprintf(w, "%s: %s mode, %d rows -> %s\n", head, s.Mode, s.Rows, strings.Join(r.Files, ", "))
		fmt.Fprintf(w, "  result: %d pass, %d warning, %d error\n", s.Pass, s.Warning, s.Error)
		fmt.Fprintf(w, "  unmatched: %d NPU rows without a bench row, %d bench rows not compared\n", s.NPUUnmatched, s.BenchUnmatched)
		var srcs []string
		for _, k := range []string{"name", "fuzzy", "data_mapping", "layer_mapping", "pairs"} {
			if n, ok := s.MatchedBy[k]; ok || asked[k] && k != "name" {
				srcs = append(srcs, fmt.Sprintf("%s %d", strings.ReplaceAll(k, "_", " "), n))
			}
		}
		if len(srcs) > 0 {
			fmt.Fprintf(w, "  matched by: %s\n", strings.Join(srcs, ", "))
		}
		d, what := s.First, "module"
		if d == nil {
			d, what = s.FirstAPI, "API"
		}
		if d == nil {
			fmt.Fprintln(w, "  first divergence: none (no entry with agreeing inputs and an error output)")
			continue
		}
		fmt.Fprintf(w, "  first divergence (%s): %s (bench %s)\n", what, d.NPUEntry, d.BenchEntry)
		fmt.Fprintf(w, "    %s vs %s: %s\n", d.Row, d.BenchRow, strings.Join(d.Messages, "; "))
	}
}

// progressBar renders "[#####.....]  42% 1.2/2.9 GB", in the unit that
// suits the total (KB, MB or GB).
func progressBar(done, total int64) string {
	if total <= 0 {
		return byteSizes(done, -1)
	}
	done = min(done, total)
	const width = 30
	frac := float64(done) / float64(total)
	n := int(frac * width)
	return fmt.Sprintf("[%s%s] %3d%% %s", strings.Repeat("#", n), strings.Repeat(".", width-n),
		int(frac*100), byteSizes(done, total))
}

// byteSizes renders "done/total UNIT" ("done UNIT" when total < 0).
func byteSizes(done, total int64) string {
	ref := max(done, total)
	var f func(int64) string
	unit := "KB"
	switch {
	case ref >= 1<<30:
		f, unit = func(v int64) string { return fmt.Sprintf("%.1f", float64(v)/(1<<30)) }, "GB"
	case ref >= 1<<20:
		f, unit = func(v int64) string { return fmt.Sprint(v >> 20) }, "MB"
	default:
		f = func(v int64) string { return fmt.Sprint((v + 1023) >> 10) }
	}
	if total < 0 {
		return f(done) + " " + unit
	}
	return f(done) + "/" + f(total) + " " + unit
}

// sameFile reports whether two paths name one file or folder.
func sameFile(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}

// missingTensors counts the tensor-mode rows whose .npy/.pt file is not in
// dump_tensor_data: msprobe fills them with "unsupported" and says nothing
// in the table, so a dump copied without its tensor folder looks compared.
type missingTensors struct {
	compare.TensorComparer
	npu, bench    msprobe.Paths
	rows, missing atomic.Int64
	mu            sync.Mutex
	example       string
}

// Metrics implements compare.TensorComparer.
func (m *missingTensors) Metrics(npu, bench, group *msprobe.Item) ([6]compare.Metric, error) {
	m.rows.Add(1)
	if p := m.absent(m.npu, npu); p != "" {
		m.note(p)
	} else if bench != nil {
		if p := m.absent(m.bench, bench); p != "" {
			m.note(p)
		}
	}
	return m.TensorComparer.Metrics(npu, bench, group)
}

// absent returns the path of it's tensor file when it has one that does
// not exist ("" otherwise, also for data names msprobe refuses).
func (m *missingTensors) absent(p msprobe.Paths, it *msprobe.Item) string {
	if it.DataName == "" || it.DataName == "-1" {
		return ""
	}
	path, err := p.TensorPath(it.DataName)
	if err != nil {
		return ""
	}
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return path
	}
	return ""
}

func (m *missingTensors) note(path string) {
	m.missing.Add(1)
	m.mu.Lock()
	if m.example == "" {
		m.example = path
	}
	m.mu.Unlock()
}

// Err forwards the wrapped comparer's refusal of a data_name that leaves
// its folder (compare.Run checks for it: without this method the wrapper
// hid it and such a dump was compared).
func (m *missingTensors) Err() error {
	if e, ok := m.TensorComparer.(interface{ Err() error }); ok {
		return e.Err()
	}
	return nil
}

// warn prints one line when rows lacked their tensor files, and one per
// unreadable file (the first few) with a count.
func (m *missingTensors) warn(w io.Writer) {
	if u, ok := m.TensorComparer.(interface{ Unreadable() (int, []error) }); ok {
		if n, errs := u.Unreadable(); n > 0 {
			for _, err := range errs {
				fmt.Fprintf(w, "layermap: warning: %v\n", err)
			}
			fmt.Fprintf(w, "layermap: warning: %s: %d tensor-mode rows have a tensor file that cannot be read; they are marked error\n", m.npu.Dir, n)
		}
	}
	n := m.missing.Load()
	if n == 0 {
		return
	}
	fmt.Fprintf(w, "layermap: warning: %s: %d of %d tensor-mode rows have no tensor file (e.g. %s): their metrics are \"unsupported\" and cannot show a precision problem; was the dump copied without dump_tensor_data?\n",
		m.npu.Dir, n, m.rows.Load(), m.example)
}
