package cmd

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/layermap/layermap/cmd/iostreams"
	"github.com/layermap/layermap/templates"
)

// TemplatesOptions are the flags of layermap templates.
type TemplatesOptions struct {
	IO      *iostreams.IOStreams
	Show    string // the template to print
	ShowSet bool   // --show was given (else: list them)
}

const templatesLong = `templates lists layermap's built-in layer_mapping templates: name, direction
(the NPU side, whose classes key the YAML, then the bench side) and what they
are for. "suggest --template auto" picks the one whose lines pair the most
modules of the two trees (a MoE model's template over a dense one, which
leaves the experts and the router alone); "--template NAME" forces one.

Seed templates are msprobe's own, verbatim, known errors included; expert
templates are corrected versions and variants for newer transformers
layouts. --show NAME prints a template: a layer_mapping.yaml msprobe
accepts, whose header comment says where it comes from and what was fixed.
Lines whose key holds "{i}" stand for one line per layer index; suggest
writes them out for the trees it is given.`

// NewCmdTemplates builds layermap templates; runF, when set, replaces
// runTemplates.
func NewCmdTemplates(ios *iostreams.IOStreams, runF func(*TemplatesOptions) error) *cobra.Command {
	opts := &TemplatesOptions{IO: ios}
	c := &cobra.Command{
		Use:   "templates [--show NAME]",
		Short: "List the built-in layer_mapping templates, or print one",
		Long:  templatesLong,
		Example: `  layermap templates
  layermap templates --show qwen2.5-vl_mindspeed-mm_to_llamafactory-expert`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return flagErrorf("templates: expected no argument, found %q; print a template with 'layermap templates --show %s'", args[0], args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.ShowSet = cmd.Flags().Changed("show")
			if runF != nil {
				return runF(opts)
			}
			return runTemplates(opts)
		},
	}
	c.Flags().StringVar(&opts.Show, "show", "", "print the template called `NAME`")
	return c
}

func runTemplates(opts *TemplatesOptions) error {
	if opts.ShowSet {
		t, err := templates.Get(opts.Show)
		if err != nil {
			return err
		}
		_, err = opts.IO.Out.Write(t.Text)
		return err
	}
	w := tabwriter.NewWriter(opts.IO.Out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tKIND\tDIRECTION\tDESCRIPTION")
	for _, t := range templates.All() {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", t.Name, t.Kind, t.Direction(), t.Description)
	}
	return w.Flush()
}
