// Package cmd is the layermap command line: it parses flags, calls the
// packages that do the work and prints their results. No logic lives here.
package cmd

import (
	"errors"
	"fmt"
	"io"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// Version is the layermap version, set at build time with
// -ldflags "-X github.com/layermap/layermap/cmd.Version=v1.2.3".
var Version = "dev"

// version is Version when set at build time; otherwise what the Go
// toolchain recorded: the module version of a `go install ...@vX` build,
// or the VCS revision (with "+dirty" for uncommitted changes) of a build
// from a checkout.
func version() string {
	if Version != "dev" {
		return Version
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return Version
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, dirty string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if rev == "" {
		return Version
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	return Version + " (" + rev + dirty + ")"
}

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
		Version:       version(),
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
