package cmd

import (
	"errors"

	"github.com/spf13/cobra"
)

// PLACEHOLDER: replaced by the owner of this command.
func newSuggestCmd(s *streams) *cobra.Command {
	return &cobra.Command{
		Use:    "suggest",
		Hidden: true,
		RunE: func(*cobra.Command, []string) error {
			return badInput(errors.New("suggest: not built yet"))
		},
	}
}
