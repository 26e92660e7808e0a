package cmd

import (
	"fmt"

	"github.com/layermap/layermap/printparse"
	"github.com/spf13/cobra"
)

func newTreeCmd(s *streams) *cobra.Command {
	var (
		asJSON bool
		depth  int
		expand bool
		index  int
	)
	c := &cobra.Command{
		Use:   "tree INPUT",
		Short: "Show the module tree layermap reads from a print(model) dump or msprobe dump folder",
		Long: `tree prints the module tree layermap reads from INPUT, so you can check it
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
stderr as "file:line: warning: ...".`,
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
				return badInput(fmt.Errorf("tree: expected one INPUT (a print(model) text file or an msprobe dump folder), found %d arguments\nRun 'layermap tree --help' for usage", len(args)))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if depth < 0 {
				return badInput(fmt.Errorf("--depth must be 0 (unlimited) or more, got %d", depth))
			}
			if index < -1 {
				return badInput(fmt.Errorf("--index must be a 0-based dump number, got %d", index))
			}
			if asJSON && depth > 0 {
				// WriteJSON writes every node: a cut was silently ignored
				return badInput(fmt.Errorf("--depth applies to the print(model) form; --json always holds the whole tree"))
			}
			t, err := printparse.Load(args[0], printparse.Options{Index: index, DumpParams: asJSON, Stdin: s.in})
			if err != nil {
				return badInput(err)
			}
			t.WriteWarnings(s.err)
			if asJSON {
				return printparse.WriteJSON(s.out, t)
			}
			return printparse.Render(s.out, t, printparse.RenderOptions{Expand: expand, Depth: depth})
		},
	}
	f := c.Flags()
	f.BoolVar(&asJSON, "json", false, "print the tree as JSON with every node field (repeat groups expanded; for an msprobe folder, parameter shapes too)")
	f.IntVar(&depth, "depth", 0, "print at most `N` levels below the root (0: all; not with --json)")
	f.BoolVar(&expand, "expand", false, "list every member of a repeat group on its own line")
	f.IntVar(&index, "index", -1, "which dump to read when the file holds several, 0-based (-1: the only one)")
	return c
}
