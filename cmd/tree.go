package cmd

import (
	"errors"
	"fmt"

	"github.com/layermap/layermap/printparse/source"
	"github.com/spf13/cobra"

	"github.com/layermap/layermap/cmd/iostreams"
	"github.com/layermap/layermap/printparse"
)

// TreeOptions are the flags and argument of layermap tree.
type TreeOptions struct {
	IO     *iostreams.IOStreams
	Input  string // print(model) text, an msprobe dump folder, or "-"
	JSON   bool
	Depth  int
	Expand bool
	Index  int
}

const treeLong = `tree prints the module tree layermap reads from INPUT, so you can check it
before drafting a mapping.

INPUT is either a text file holding PyTorch print(model) output (a log is
fine: logger prefixes, "[rank0]: " tags, timestamps and other lines around
the dump are skipped; "-" reads standard input), or an msprobe dump folder:
a rank/proc folder with dump.json and construct.json, or a step folder
holding exactly one rank.

The output is print(model) form, repeat groups collapsed as PyTorch prints
them ("(0-27): 28 x Qwen2DecoderLayer("), so for a clean dump it is the dump
itself without the log noise. For an msprobe folder it is the same form of
the dumped modules; "?" stands for a module no dump entry names (the
model's outer wrapper). Repairs made to a damaged dump are reported on
stderr as "file:line: warning: ...".`

// NewCmdTree builds layermap tree; runF, when set, replaces runTree.
func NewCmdTree(ios *iostreams.IOStreams, runF func(*TreeOptions) error) *cobra.Command {
	opts := &TreeOptions{IO: ios}
	c := &cobra.Command{
		Use:   "tree INPUT",
		Short: "Show the module tree layermap reads from a print(model) dump or msprobe dump folder",
		Long:  treeLong,
		Example: `  # the tree of a MindSpeed-MM print(model) log
  layermap tree testdata/demo/qwen25vl-mindspeed-mm.txt

  # two levels only
  layermap tree --depth 2 testdata/demo/qwen25vl-mindspeed-mm.txt

  # every layer on its own line instead of "(0-15): 16 x ..."
  layermap tree --expand testdata/demo/qwen25vl-llamafactory.txt

  # the second of several dumps in one log
  layermap tree --index 1 cmd/testdata/tree/two-dumps.log

  # from standard input
  cat testdata/demo/qwen25vl-llamafactory.txt | layermap tree -

  # an msprobe dump folder, as JSON with every node field
  layermap tree --json testdata/demo/dumps/mindspeed-mm`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return flagErrorf("tree: expected one INPUT (a print(model) text file or an msprobe dump folder), found %d arguments\nRun 'layermap tree --help' for usage", len(args))
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error {
			opts.Input = args[0]
			switch {
			case opts.Depth < 0:
				return flagErrorf("--depth must be 0 (unlimited) or more, got %d", opts.Depth)
			case opts.Index < -1:
				return indexError("--index", opts.Index)
			case opts.JSON && opts.Depth > 0:
				// WriteJSON writes every node: a cut was silently ignored
				return flagErrorf("--depth applies to the print(model) form; --json always holds the whole tree")
			}
			if runF != nil {
				return runF(opts)
			}
			return runTree(opts)
		},
	}
	f := c.Flags()
	f.BoolVar(&opts.JSON, "json", false, "print the tree as JSON with every node field (repeat groups expanded; for an msprobe folder, parameter shapes too)")
	f.IntVar(&opts.Depth, "depth", 0, "print at most `N` levels below the root (0: all; not with --json)")
	f.BoolVar(&opts.Expand, "expand", false, "list every member of a repeat group on its own line")
	f.IntVar(&opts.Index, "index", -1, "which dump to read when the file holds several, 0-based (-1: the only one)")
	return c
}

func runTree(opts *TreeOptions) error {
	t, err := loadTree(opts.IO, opts.Input, printparse.Options{Index: opts.Index, DumpParams: opts.JSON}, "")
	if err != nil {
		return err
	}
	if opts.JSON {
		return printparse.WriteJSON(opts.IO.Out, t)
	}
	return printparse.Render(opts.IO.Out, t, printparse.RenderOptions{Expand: opts.Expand, Depth: opts.Depth})
}

// loadTree reads one structure (printparse.Load, standard input for "-")
// and reports the parser's repairs on stderr. role ("--npu") prefixes an
// error that names no file position; "" for none.
func loadTree(ios *iostreams.IOStreams, path string, o printparse.Options, role string) (*printparse.Tree, error) {
	o.Stdin = ios.In
	t, err := printparse.Load(path, o)
	if err != nil {
		var se *source.Error
		if role == "" || errors.As(err, &se) {
			return nil, err // "file:line: expected ..., found ...": the file says which side
		}
		return nil, fmt.Errorf("%s: %w", role, err)
	}
	t.WriteWarnings(ios.ErrOut)
	return t, nil
}

// indexError refuses an --index value that picks no dump.
func indexError(flag string, v int) error {
	return flagErrorf("%s must be a 0-based dump number, got %d", flag, v)
}

// checkIndexes checks --index-npu and --index-bench (-1: the only dump).
func checkIndexes(npu, bench int) error {
	if npu < -1 {
		return indexError("--index-npu", npu)
	}
	if bench < -1 {
		return indexError("--index-bench", bench)
	}
	return nil
}
