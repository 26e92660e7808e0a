package cmd

import (
	"errors"

	"github.com/spf13/cobra"
)

// PLACEHOLDER: replaced by the owner of this command.
func newCompareCmd(s *streams) *cobra.Command {
	return &cobra.Command{
		Use:    "compare",
		Hidden: true,
		RunE: func(*cobra.Command, []string) error {
			return badInput(errors.New("compare: not built yet"))
		},
	}
}
