package cmd

import (
	"errors"

	"github.com/spf13/cobra"
)

// PLACEHOLDER: replaced by the owner of this command.
func newTemplatesCmd(s *streams) *cobra.Command {
	return &cobra.Command{
		Use:    "templates",
		Hidden: true,
		RunE: func(*cobra.Command, []string) error {
			return badInput(errors.New("templates: not built yet"))
		},
	}
}
