package cmd

import (
	"fmt"
	"text/tabwriter"

	"github.com/layermap/layermap/templates"
	"github.com/spf13/cobra"
)

func newTemplatesCmd(s *streams) *cobra.Command {
	var show string
	c := &cobra.Command{
		Use:   "templates [--show NAME]",
		Short: "List the built-in layer_mapping templates, or print one",
		Long: `templates lists layermap's built-in layer_mapping templates: name, direction
(the NPU side, whose classes key the YAML, then the bench side) and what they
are for. "suggest --template auto" picks among them by the class names it
finds; "--template NAME" forces one.

Seed templates are msprobe's own, verbatim, known errors included; expert
templates are corrected versions and variants for newer transformers
layouts. --show NAME prints a template: a layer_mapping.yaml msprobe
accepts, whose header comment says where it comes from and what was fixed.
Lines whose key holds "{i}" stand for one line per layer index; suggest
writes them out for the trees it is given.`,
		Example: `  layermap templates
  layermap templates --show qwen2.5-vl_mindspeed-mm_to_llamafactory-expert`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return badInput(fmt.Errorf("templates: expected no argument, found %q; print a template with 'layermap templates --show %s'", args[0], args[0]))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cmd.Flags().Changed("show") {
				t, err := templates.Get(show)
				if err != nil {
					return badInput(err)
				}
				_, err = s.out.Write(t.Text)
				return err
			}
			w := tabwriter.NewWriter(s.out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(w, "NAME\tKIND\tDIRECTION\tDESCRIPTION")
			for _, t := range templates.All() {
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", t.Name, t.Kind, t.Direction(), t.Description)
			}
			return w.Flush()
		},
	}
	c.Flags().StringVar(&show, "show", "", "print the template called `NAME`")
	return c
}
