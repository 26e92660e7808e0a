package cmd

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/layermap/layermap/cmd/htmlview"
	"github.com/layermap/layermap/infer"
	"github.com/layermap/layermap/mapping"
	"github.com/layermap/layermap/mapping/output"
	"github.com/layermap/layermap/printparse"
)

func newSuggestCmd(s *streams) *cobra.Command {
	var (
		out, revOut, tmpl, report, pairs string
		html, pairsIn                    string
		reverse                          bool
		indexNPU, indexBench             int
	)
	c := &cobra.Command{
		Use:   "suggest NPU BENCH",
		Short: "Draft msprobe's layer_mapping.yaml from two model structures",
		Long: `suggest aligns two model structures and drafts the layer_mapping.yaml msprobe
needs to compare them, with a report of how sure it is of every line.

NPU and BENCH are print(model) text files (logs are fine) or msprobe dump
folders; "-" reads one of them from standard input. The NPU side's classes key the YAML (msprobe's -tp side); BENCH is
the other (-gp). The draft is minimal (no identity lines), outside-in, with
a comment on every line giving its alignment score, the margin over the
runner-up and the reasons. Classes that need different renames in
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
not prove; use 'layermap validate' to gate CI), 2 on bad input.`,
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
				return badInput(fmt.Errorf("suggest: expected two inputs, NPU and BENCH (print(model) text files or msprobe dump folders), found %d arguments\nRun 'layermap suggest --help' for usage", len(args)))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if report != "text" && report != "json" {
				return badInput(fmt.Errorf("--report must be text or json, got %q", report))
			}
			for _, f := range []struct{ name, path string }{{"-o", out}, {"-O", revOut}} {
				if f.path != "" && !strings.HasSuffix(f.path, ".yaml") {
					return badInput(fmt.Errorf("%s %s: the name must end in .yaml (msprobe refuses other names)", f.name, f.path))
				}
			}
			if revOut != "" && !reverse {
				return badInput(errors.New("-O needs --reverse"))
			}
			if reverse && revOut == "" {
				if out == "" {
					return badInput(errors.New("--reverse needs -O FILE when the draft goes to stdout"))
				}
				revOut = reverseName(out)
			}
			if err := distinctOutputs(out, revOut, pairs, html, reverse); err != nil {
				return badInput(err)
			}
			if args[0] == "-" && args[1] == "-" {
				return badInput(errors.New("suggest: expected at most one of NPU and BENCH as \"-\" (standard input), found both"))
			}
			npu, err := loadTree(s, args[0], "--index-npu", indexNPU)
			if err != nil {
				return badInput(err)
			}
			bench, err := loadTree(s, args[1], "--index-bench", indexBench)
			if err != nil {
				return badInput(err)
			}
			if isTerminal(s.err) {
				// aligning a 60-layer MoE pair takes seconds: say what runs,
				// on a terminal only, and erase it after
				fmt.Fprintf(s.err, "suggest: aligning %d NPU and %d bench modules ...", countNodes(npu), countNodes(bench))
			}
			r, err := infer.Suggest(npu, bench, infer.Options{Template: tmpl})
			if isTerminal(s.err) {
				fmt.Fprint(s.err, "\r\033[K")
			}
			if err != nil {
				return badInput(err)
			}
			for _, w := range r.Warnings {
				fmt.Fprintln(s.err, "layermap: warning: "+w)
			}
			var manual *htmlview.ManualResult
			if pairsIn != "" {
				ps, err := htmlview.ReadManual(pairsIn)
				if err != nil {
					return badInput(err)
				}
				manual = htmlview.Manual(npu, bench, r.Forward.Mapping, ps)
				r.Forward.Sidecar = append(r.Forward.Sidecar, manual.Sidecar...)
				printManual(s.err, pairsIn, manual)
			}
			yml, err := r.Forward.Mapping.Marshal()
			if err != nil {
				return err
			}
			var rep bytes.Buffer
			if err := infer.WriteReport(&rep, r, report); err != nil {
				return err
			}
			// every output is staged before any is renamed into place: a
			// failure leaves none of them (a bad -o used to leave -O's
			// and --pairs' files behind)
			var files []outFile
			if out != "" {
				files = append(files, outFile{out, yml})
			}
			if reverse {
				ry, err := r.Reverse.Mapping.Marshal()
				if err != nil {
					return err
				}
				files = append(files, outFile{revOut, ry})
			}
			if pairs != "" {
				side := []struct {
					path string
					ps   []mapping.ModulePair
				}{{pairs, r.Forward.Sidecar}}
				if reverse {
					side = append(side, struct {
						path string
						ps   []mapping.ModulePair
					}{reverseName(pairs), r.Reverse.Sidecar})
				}
				for _, sc := range side {
					var b bytes.Buffer
					if err := mapping.WritePairs(&b, sc.ps); err != nil {
						return err
					}
					files = append(files, outFile{sc.path, b.Bytes()})
				}
			}
			if html != "" {
				v, err := htmlview.FromSuggest(npu, bench, r)
				if err != nil {
					return err
				}
				v.AddManual(manual)
				var b bytes.Buffer
				if err := htmlview.Write(&b, v); err != nil {
					return err
				}
				files = append(files, outFile{html, b.Bytes()})
			}
			if err := writeAll(files); err != nil {
				return badInput(err)
			}
			if out == "" {
				if _, err := s.out.Write(yml); err != nil {
					return err
				}
				_, err = s.err.Write(rep.Bytes())
				return err
			}
			_, err = s.out.Write(rep.Bytes())
			return err
		},
	}
	f := c.Flags()
	f.StringVarP(&out, "output", "o", "", "write the YAML to `FILE` (must end in .yaml) instead of stdout")
	f.BoolVar(&reverse, "reverse", false, "also draft the reverse direction (BENCH classes as keys)")
	f.StringVarP(&revOut, "reverse-output", "O", "", "write the reverse YAML to `FILE` (with --reverse)")
	f.StringVar(&tmpl, "template", infer.TemplateAuto, "template prior: auto, none, or a template `NAME`")
	f.StringVar(&report, "report", "text", "report format: text or json")
	f.StringVar(&pairs, "pairs", "", "write the sidecar of pairs no YAML can express to `FILE`")
	f.StringVar(&html, "html", "", "write the HTML view of the two trees to `FILE`")
	f.StringVar(&pairsIn, "pairs-in", "", "read manual matches from `FILE` (the view's manual_pairs.yaml or msprobe's .vis.config)")
	f.IntVar(&indexNPU, "index-npu", -1, "which dump of the NPU file to read, 0-based, when it holds several")
	f.IntVar(&indexBench, "index-bench", -1, "which dump of the BENCH file to read, 0-based, when it holds several")
	return c
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
func printManual(w io.Writer, file string, r *htmlview.ManualResult) {
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

// loadTree reads one input and reports the parser's repairs on stderr.
// flag is the option that set index, named in messages.
func loadTree(s *streams, path, flag string, index int) (*printparse.Tree, error) {
	if index < -1 {
		return nil, fmt.Errorf("%s: %s must be a 0-based dump number, got %d", path, flag, index)
	}
	t, err := printparse.Load(path, printparse.Options{Index: index, IndexFlag: flag, Stdin: s.in})
	if err != nil {
		return nil, err
	}
	t.WriteWarnings(s.err)
	return t, nil
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
