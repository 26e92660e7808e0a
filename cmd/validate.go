package cmd

import (
	"errors"

	"github.com/spf13/cobra"
)

// PLACEHOLDER: replaced by the owner of this command.
func newValidateCmd(s *streams) *cobra.Command {
	return &cobra.Command{
		Use:    "validate",
		Hidden: true,
		RunE: func(*cobra.Command, []string) error {
			return badInput(errors.New("validate: not built yet"))
		},
	}
}
