// Package cmd is the layermap command line: it parses flags, calls the
// packages that do the work and prints their results. No logic lives here.
package cmd

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// Version is the layermap version, set at build time with
// -ldflags "-X github.com/layermap/layermap/cmd.Version=v1.2.3".
var Version = "dev"

// Exit statuses shared by every command.
const (
	ExitOK       = 0 // ran fine, nothing found
	ExitFindings = 1 // ran fine, found problems (validate findings, compare errors)
	ExitBadInput = 2 // unusable input or usage error
)

// exitError carries an exit status through cobra's error return.
type exitError struct {
	code int
	err  error // nil when the message was already printed
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// badInput wraps err so that the command exits with status 2.
func badInput(err error) error { return &exitError{code: ExitBadInput, err: err} }

// findings makes the command exit with status 1 without printing anything more.
func findings() error { return &exitError{code: ExitFindings} }

// streams is what every command writes to.
type streams struct {
	in  io.Reader
	out io.Writer
	err io.Writer
}

// newRootCmd builds the command tree.
func newRootCmd(s *streams) *cobra.Command {
	root := &cobra.Command{
		Use:   "layermap",
		Short: "Draft, check and apply msprobe layer_mapping.yaml files",
		Long: `layermap helps compare two training runs of the same model (for example
MindSpeed on Ascend NPU against LLaMA-Factory on GPU) with msprobe.

It reads print(model) dumps and msprobe dump folders, drafts the
layer_mapping.yaml msprobe needs, checks a mapping against both structures,
and compares two msprobe dumps through the mapping.`,
		Version:       Version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(s.in)
	root.SetOut(s.out)
	root.SetErr(s.err)
	root.SetVersionTemplate("layermap {{.Version}}\n")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return badInput(fmt.Errorf("%w\nRun '%s --help' for usage", err, c.CommandPath()))
	})
	root.AddCommand(
		newTreeCmd(s),
		newSuggestCmd(s),
		newTemplatesCmd(s),
		newValidateCmd(s),
		newCompareCmd(s),
	)
	return root
}

// Execute runs layermap with args and returns the process exit status.
func Execute(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	s := &streams{in: stdin, out: stdout, err: stderr}
	root := newRootCmd(s)
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintln(stderr, "layermap:", ee.err)
		}
		return ee.code
	}
	// Cobra's own errors (unknown command, bad args) are usage errors.
	fmt.Fprintln(stderr, "layermap:", err)
	return ExitBadInput
}
