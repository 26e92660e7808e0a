// Package cmd is the layermap command line, in the gh CLI's style: per
// verb an Options struct, a NewCmdX(ios, runF) that parses flags into it
// (tests pass runF to see what was parsed) and a plain runX(opts) that
// calls the packages doing the work and prints their results. No logic
// lives here. Exit statuses come from the errors the verbs return, mapped
// in one place (exitStatus).
package cmd

import (
	"errors"
	"fmt"
	"io"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/layermap/layermap/cmd/iostreams"
)

// Version is the layermap version, set at build time with
// -ldflags "-X github.com/layermap/layermap/cmd.Version=v1.2.3".
var Version = ""

// version is Version when set at build time; otherwise what the Go
// toolchain recorded: the module version of a `go install ...@vX` build,
// or "devel" with the VCS revision (and "+dirty" for uncommitted changes)
// of a build from a checkout; a build with neither says so, with the Go
// version.
func version() string {
	if Version != "" {
		return Version
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel (built without module information)"
	}
	return buildVersion(info)
}

func buildVersion(info *debug.BuildInfo) string {
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
		return "devel (" + info.GoVersion + ", built without version control information)"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	return "devel " + rev + dirty + " (" + info.GoVersion + ")"
}

// Exit statuses shared by every command.
const (
	ExitOK       = 0 // ran fine, nothing found
	ExitFindings = 1 // ran fine, found problems (validate findings, compare errors)
	ExitBadInput = 2 // unusable input, usage error or failure
)

// FlagError is a usage error: a bad flag or argument.
type FlagError struct{ Err error }

// Error is the usage error's message.
func (e *FlagError) Error() string { return e.Err.Error() }

// Unwrap returns the error behind the usage error.
func (e *FlagError) Unwrap() error { return e.Err }

// flagErrorf returns a *FlagError with a formatted message.
func flagErrorf(format string, a ...any) error { return &FlagError{fmt.Errorf(format, a...)} }

// ErrFindings says that a command ran fine and found problems, which it
// has printed: exit status 1, nothing more printed.
var ErrFindings = errors.New("findings")

// exitStatus maps a command's error to the process exit status. It is the
// only place that decides one: findings are 1; usage errors (*FlagError),
// bad input (*source.Error, a missing file) and every other failure are 2.
func exitStatus(err error) int {
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, ErrFindings):
		return ExitFindings
	}
	return ExitBadInput
}

// NewCmdRoot builds the command tree on ios.
func NewCmdRoot(ios *iostreams.IOStreams) *cobra.Command {
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
	root.SetIn(ios.In)
	root.SetOut(ios.Out)
	root.SetErr(ios.ErrOut)
	root.SetVersionTemplate("layermap {{.Version}}\n")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return flagErrorf("%w\nRun '%s --help' for usage", err, c.CommandPath())
	})
	root.AddCommand(
		NewCmdTree(ios, nil),
		NewCmdSuggest(ios, nil),
		NewCmdTemplates(ios, nil),
		NewCmdValidate(ios, nil),
		NewCmdCompare(ios, nil),
	)
	return root
}

// Run runs layermap with args on ios, prints the error of a failed run
// ("layermap: ..."), and returns the exit status.
func Run(ios *iostreams.IOStreams, args []string) int {
	root := NewCmdRoot(ios)
	root.SetArgs(args)
	err := root.Execute()
	code := exitStatus(err)
	if err != nil && code != ExitFindings {
		fmt.Fprintln(ios.ErrOut, "layermap:", err)
	}
	return code
}

// Execute is Run on the given streams; stderr is not a terminal.
func Execute(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ios := &iostreams.IOStreams{In: stdin, Out: stdout, ErrOut: stderr}
	ios.SetStderrTTY(false)
	return Run(ios, args)
}
