package cmd

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/layermap/layermap/cmd/htmlview"
	"github.com/layermap/layermap/cmd/iostreams"
	"github.com/layermap/layermap/infer"
	"github.com/layermap/layermap/mapping"
	"github.com/layermap/layermap/mapping/output"
	"github.com/layermap/layermap/printparse"
)

// SuggestOptions are the flags and arguments of layermap suggest.
type SuggestOptions struct {
	IO         *iostreams.IOStreams
	NPU, Bench string // print(model) text, an msprobe dump folder, or "-"
	Output     string // -o: the draft; "" for stdout
	Reverse    bool
	// ReverseOutput is -O, or the -o name with "_reverse" before ".yaml".
	ReverseOutput        string
	Template             string
	Report               string // text or json
	Pairs                string // the sidecar file
	HTML                 string // the view
	PairsIn              string // manual matches to read back
	IndexNPU, IndexBench int
}

const suggestLong = `suggest aligns two model structures and drafts the layer_mapping.yaml msprobe
needs to compare them, with a report of how sure it is of every line.

NPU and BENCH are print(model) text files (logs are fine) or msprobe dump
folders; "-" reads one of them from standard input. The NPU side's classes key the YAML (msprobe's -tp side); BENCH is
the other (-gp). The draft is minimal (no identity lines), outside-in, with
a comment on every line giving its confidence band first ("sure:",
"CHECK (why):" look before trusting its rows, "UNSURE (why):" nothing but a
prior or a name supports it), then its alignment score, the margin over the
runner-up and the reasons; 'layermap validate' reports the CHECK and UNSURE
lines (LM111, LM112) and --report json gives every pair's band. Classes that need different renames in
different places (MindSpeed-MM's vision and text TransformerLayer) are
resolved with longer keys at a uniquely named ancestor and every resolution
is proven by running msprobe's resolver over both structures. Pairs no YAML
can express are listed in the report and written with --pairs.

Output:
  without -o   the YAML goes to stdout, the report to stderr
  with -o      the YAML goes to the file, the report to stdout
Files are written atomically (a temporary file renamed into place).

--reverse also drafts the other direction (BENCH classes as keys) from the
same alignment, into -O FILE (default: the -o name with "_reverse" before
".yaml"; -O is required without -o).

--pairs FILE writes the sidecar: a YAML list of {npu: PATH, bench: PATH}
module paths that no YAML line can express, as 'layermap compare --pairs'
reads it (with --reverse, the reverse draft's goes to FILE with "_reverse"
before ".yaml"). It is "[]" when the draft expresses every pair.

--html FILE writes the view of the two trees: one self-contained HTML file
(no server, no network; open it from a file:// URL) with the pairs, their
confidence and reasons, the unmatched modules and why, the conflicts, search
and manual matching. A manual match there offers the layer_mapping lines to
add (or sidecar pairs where no line can say it), and manual_pairs.yaml.

--pairs-in FILE reads manual matches back: the view's manual_pairs.yaml, or
msprobe's .vis.config (the manual matches of its TensorBoard graph view).
Each pair becomes a line of the draft where a class rule is sound (checked
with msprobe's resolver over both structures), a sidecar pair where not.

--template auto (default) uses the best built-in template that applies as a
strong prior and keeps its lines' form where they hold; none drafts from the
structures alone; NAME forces one template ('layermap templates' lists them).

Exit status: 0 when the draft was written (the report lists what it could
not prove; use 'layermap validate' to gate CI), 2 on bad input.`

// NewCmdSuggest builds layermap suggest; runF, when set, replaces
// runSuggest.
func NewCmdSuggest(ios *iostreams.IOStreams, runF func(*SuggestOptions) error) *cobra.Command {
	opts := &SuggestOptions{IO: ios}
	c := &cobra.Command{
		Use:   "suggest NPU BENCH",
		Short: "Draft msprobe's layer_mapping.yaml from two model structures",
		Long:  suggestLong,
		Example: `  # draft NPU -> bench, report on stderr (paths from a layermap checkout)
  layermap suggest testdata/demo/qwen25vl-mindspeed-mm.txt testdata/demo/qwen25vl-llamafactory.txt > layer_mapping.yaml

  # both directions, JSON report, sidecar of pairs YAML cannot express
  layermap suggest testdata/demo/qwen25vl-mindspeed-mm.txt testdata/demo/qwen25vl-llamafactory.txt \
      -o layer_mapping.yaml --reverse -O reverse.yaml --report json --pairs pairs.yaml

  # two msprobe dump folders (rank folders), structures only, no template
  layermap suggest --template none testdata/demo/dumps/llamafactory testdata/demo/dumps/mindspeed-mm \
      -o lf_to_ms.yaml --pairs lf_pairs.yaml`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 2 {
				return flagErrorf("suggest: expected two inputs, NPU and BENCH (print(model) text files or msprobe dump folders), found %d arguments\nRun 'layermap suggest --help' for usage", len(args))
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error {
			opts.NPU, opts.Bench = args[0], args[1]
			if err := opts.check(); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return runSuggest(opts)
		},
	}
	f := c.Flags()
	f.StringVarP(&opts.Output, "output", "o", "", "write the YAML to `FILE` (must end in .yaml) instead of stdout")
	f.BoolVar(&opts.Reverse, "reverse", false, "also draft the reverse direction (BENCH classes as keys)")
	f.StringVarP(&opts.ReverseOutput, "reverse-output", "O", "", "write the reverse YAML to `FILE` (with --reverse)")
	f.StringVar(&opts.Template, "template", infer.TemplateAuto, "template prior: auto, none, or a template `NAME`")
	f.StringVar(&opts.Report, "report", "text", "report format: text or json")
	f.StringVar(&opts.Pairs, "pairs", "", "write the sidecar of pairs no YAML can express to `FILE`")
	f.StringVar(&opts.HTML, "html", "", "write the HTML view of the two trees to `FILE`")
	f.StringVar(&opts.PairsIn, "pairs-in", "", "read manual matches from `FILE` (the view's manual_pairs.yaml or msprobe's .vis.config)")
	f.IntVar(&opts.IndexNPU, "index-npu", -1, "which dump of the NPU file to read, 0-based, when it holds several")
	f.IntVar(&opts.IndexBench, "index-bench", -1, "which dump of the BENCH file to read, 0-based, when it holds several")
	return c
}

// check validates the flags together and fills in ReverseOutput.
func (o *SuggestOptions) check() error {
	if o.Report != "text" && o.Report != "json" {
		return flagErrorf("--report must be text or json, got %q", o.Report)
	}
	for _, f := range []struct{ name, path string }{{"-o", o.Output}, {"-O", o.ReverseOutput}} {
		if f.path != "" && !strings.HasSuffix(f.path, ".yaml") {
			return flagErrorf("%s %s: the name must end in .yaml (msprobe refuses other names)", f.name, f.path)
		}
	}
	if o.ReverseOutput != "" && !o.Reverse {
		return flagErrorf("-O needs --reverse")
	}
	if o.Reverse && o.ReverseOutput == "" {
		if o.Output == "" {
			return flagErrorf("--reverse needs -O FILE when the draft goes to stdout")
		}
		o.ReverseOutput = reverseName(o.Output)
	}
	if err := distinctOutputs(o.Output, o.ReverseOutput, o.Pairs, o.HTML, o.Reverse); err != nil {
		return &FlagError{err}
	}
	if o.NPU == "-" && o.Bench == "-" {
		return flagErrorf("suggest: expected at most one of NPU and BENCH as \"-\" (standard input), found both")
	}
	return checkIndexes(o.IndexNPU, o.IndexBench)
}

func runSuggest(opts *SuggestOptions) error {
	ios := opts.IO
	npu, err := loadTree(ios, opts.NPU, printparse.Options{Index: opts.IndexNPU, IndexFlag: "--index-npu"}, "")
	if err != nil {
		return err
	}
	bench, err := loadTree(ios, opts.Bench, printparse.Options{Index: opts.IndexBench, IndexFlag: "--index-bench"}, "")
	if err != nil {
		return err
	}
	if p := ios.ProgressOut(); p != nil {
		// aligning a 60-layer MoE pair takes seconds: say what runs, on
		// a terminal only, and erase it after
		fmt.Fprintf(p, "suggest: aligning %d NPU and %d bench modules ...", countNodes(npu), countNodes(bench))
	}
	r, err := infer.Suggest(npu, bench, infer.Options{Template: opts.Template})
	if p := ios.ProgressOut(); p != nil {
		fmt.Fprint(p, "\r\033[K")
	}
	if err != nil {
		return err
	}
	for _, w := range r.Warnings {
		fmt.Fprintln(ios.ErrOut, "layermap: warning: "+w)
	}
	var manual *infer.ManualResult
	if opts.PairsIn != "" {
		ps, err := infer.ReadManual(opts.PairsIn)
		if err != nil {
			return err
		}
		manual = infer.Manual(npu, bench, r.Forward.Mapping, ps)
		r.AddManual(npu, bench, manual)
		printManual(ios.ErrOut, opts.PairsIn, manual)
	}
	yml, err := r.Forward.Mapping.Marshal()
	if err != nil {
		return err
	}
	var rep bytes.Buffer
	if err := infer.WriteReport(&rep, r, opts.Report); err != nil {
		return err
	}
	files, err := suggestFiles(opts, npu, bench, r, yml)
	if err != nil {
		return err
	}
	if err := writeAll(files); err != nil {
		return err
	}
	if opts.Output == "" {
		if _, err := ios.Out.Write(yml); err != nil {
			return err
		}
		_, err = ios.ErrOut.Write(rep.Bytes())
		return err
	}
	_, err = ios.Out.Write(rep.Bytes())
	return err
}

// suggestFiles lists the files suggest writes, as one output set: a
// failure writes none of them (a bad -o used to leave -O's and --pairs'
// files behind).
func suggestFiles(opts *SuggestOptions, npu, bench *printparse.Tree, r *infer.Result, yml []byte) ([]outFile, error) {
	var files []outFile
	if opts.Output != "" {
		files = append(files, outFile{opts.Output, yml})
	}
	if opts.Reverse {
		ry, err := r.Reverse.Mapping.Marshal()
		if err != nil {
			return nil, err
		}
		files = append(files, outFile{opts.ReverseOutput, ry})
	}
	if opts.Pairs != "" {
		side := []struct {
			path string
			ps   []mapping.ModulePair
		}{{opts.Pairs, r.Forward.Sidecar}}
		if opts.Reverse {
			side = append(side, struct {
				path string
				ps   []mapping.ModulePair
			}{reverseName(opts.Pairs), r.Reverse.Sidecar})
		}
		for _, sc := range side {
			var b bytes.Buffer
			if err := mapping.WritePairs(&b, sc.ps); err != nil {
				return nil, err
			}
			files = append(files, outFile{sc.path, b.Bytes()})
		}
	}
	if opts.HTML != "" {
		v, err := htmlview.FromSuggest(npu, bench, r)
		if err != nil {
			return nil, err
		}
		var b bytes.Buffer
		if err := htmlview.Write(&b, v); err != nil {
			return nil, err
		}
		files = append(files, outFile{opts.HTML, b.Bytes()})
	}
	return files, nil
}

// countNodes counts the modules of t.
func countNodes(t *printparse.Tree) int {
	n := 0
	if t.Root != nil {
		t.Root.Walk(func(*printparse.Node) bool { n++; return true })
	}
	return n
}

// distinctOutputs refuses output files that coincide (one draft would
// silently overwrite the other) or that are folders (the rename would fail
// after the other files were written).
func distinctOutputs(out, revOut, pairs, html string, reverse bool) error {
	type output struct{ flag, path string }
	outs := []output{{"-o", out}, {"-O", revOut}, {"--pairs", pairs}, {"--html", html}}
	if reverse && pairs != "" {
		outs = append(outs, output{"--pairs (reverse sidecar)", reverseName(pairs)})
	}
	seen := map[string]string{}
	for _, o := range outs {
		if o.path == "" {
			continue
		}
		if fi, err := os.Stat(o.path); err == nil && fi.IsDir() {
			return fmt.Errorf("%s %s: expected a file name, found a folder", o.flag, o.path)
		}
		key := filepath.Clean(o.path)
		if abs, err := filepath.Abs(key); err == nil {
			key = abs
		}
		if prev, ok := seen[key]; ok {
			return fmt.Errorf("%s and %s both write %s: expected different files, one would overwrite the other", prev, o.flag, o.path)
		}
		seen[key] = o.flag
	}
	return nil
}

// printManual says what became of the manual matches of --pairs-in.
func printManual(w io.Writer, file string, r *infer.ManualResult) {
	fmt.Fprintf(w, "manual matches (%s): %d layer_mapping lines, %d sidecar pairs, %d already made by the draft\n",
		file, len(r.Lines), len(r.Sidecar), len(r.Covered))
	for _, l := range r.Lines {
		fmt.Fprintf(w, "  %s: %s: %s  (%s -> %s)\n", l.Class, l.Key, l.Value, l.NPU, l.Bench)
	}
	for _, p := range r.Sidecar {
		fmt.Fprintf(w, "  sidecar: %s -> %s (no sound layer_mapping line)\n", p.NPU, p.Bench)
	}
	if len(r.Extended) > 0 {
		fmt.Fprintf(w, "  the lines also pair %d modules at the other instances of their classes\n", len(r.Extended))
	}
	for _, sk := range r.Skipped {
		fmt.Fprintln(w, "  skipped: "+sk)
	}
}

// reverseName inserts "_reverse" before a file name's ".yaml" (or at its
// end).
func reverseName(path string) string {
	if strings.HasSuffix(path, ".yaml") {
		return strings.TrimSuffix(path, ".yaml") + "_reverse.yaml"
	}
	return path + "_reverse"
}

// outFile is one output file and its content.
type outFile struct {
	path string
	data []byte
}

// writeAll writes the files as one output set: each through a temporary
// in its folder (which must exist), renamed into place only once all are
// written, so a failure leaves no file half-written and no set half-done.
func writeAll(files []outFile) error {
	set := output.NewSet()
	for _, o := range files {
		if _, err := set.WriteFile(filepath.Dir(o.path), output.Name{Prefix: filepath.Base(o.path)}, o.data, 0o644); err != nil {
			set.Abort()
			return err
		}
	}
	return set.Commit(time.Time{})
}
