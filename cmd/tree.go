package cmd

import (
	"errors"

	"github.com/spf13/cobra"
)

// PLACEHOLDER: replaced by the owner of this command.
func newTreeCmd(s *streams) *cobra.Command {
	return &cobra.Command{
		Use:    "tree",
		Hidden: true,
		RunE: func(*cobra.Command, []string) error {
			return badInput(errors.New("tree: not built yet"))
		},
	}
}
