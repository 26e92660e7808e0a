package cmd

import (
	"errors"
	"fmt"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/layermap/layermap/cmd/iostreams"
	"github.com/layermap/layermap/mapping"
	"github.com/layermap/layermap/mapping/validate"
	"github.com/layermap/layermap/printparse/source"
	"github.com/layermap/layermap/printparse/testkit"
)

// parse runs a NewCmdX with runF capturing its options.
func parse[T any](t *testing.T, newCmd func(*iostreams.IOStreams, func(*T) error) *cobra.Command, args ...string) (*T, error) {
	t.Helper()
	ios, _, _, _ := iostreams.Test()
	var got *T
	c := newCmd(ios, func(o *T) error { got = o; return nil })
	c.SetArgs(args)
	c.SetOut(ios.Out)
	c.SetErr(ios.ErrOut)
	c.SilenceErrors, c.SilenceUsage = true, true
	err := c.Execute()
	return got, err
}

func TestNewCmdTree(t *testing.T) {
	o, err := parse(t, NewCmdTree, "--depth", "2", "--expand", "--index", "1", "x.txt")
	if err != nil {
		t.Fatal(err)
	}
	if want := (TreeOptions{IO: o.IO, Input: "x.txt", Depth: 2, Expand: true, Index: 1}); *o != want {
		t.Errorf("%+v, want %+v", *o, want)
	}
	for _, args := range [][]string{{"--depth", "-1", "x"}, {"--json", "--depth", "1", "x"}, {"--index", "-2", "x"}, {}} {
		if _, err := parse(t, NewCmdTree, args...); !isFlagError(err) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
}

func TestNewCmdSuggest(t *testing.T) {
	o, err := parse(t, NewCmdSuggest, "a.txt", "b.txt", "-o", "d/x.yaml", "--reverse", "--pairs", "p.yaml", "--template", "none", "--report", "json")
	if err != nil {
		t.Fatal(err)
	}
	want := SuggestOptions{IO: o.IO, NPU: "a.txt", Bench: "b.txt", Output: "d/x.yaml", Reverse: true, ReverseOutput: "d/x_reverse.yaml",
		Template: "none", Report: "json", Pairs: "p.yaml", IndexNPU: -1, IndexBench: -1}
	if *o != want {
		t.Errorf("%+v, want %+v", *o, want)
	}
	for _, args := range [][]string{
		{"a", "b", "--report", "xml"}, {"a", "b", "-o", "x.yml"}, {"a", "b", "-O", "r.yaml"}, {"a", "b", "--reverse"},
		{"-", "-"}, {"a", "b", "--index-npu", "-2"}, {"a", "b", "-o", "x.yaml", "--pairs", "x.yaml"}, {"a"},
	} {
		if _, err := parse(t, NewCmdSuggest, args...); !isFlagError(err) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
}

func TestNewCmdValidate(t *testing.T) {
	o, err := parse(t, NewCmdValidate, "m.yaml", "--npu", "n", "--bench", "b", "--min-coverage", "90%", "--strict", "--format", "github")
	if err != nil {
		t.Fatal(err)
	}
	want := ValidateOptions{IO: o.IO, Mapping: "m.yaml", NPU: "n", Bench: "b", MinCoverage: 0.9, Strict: true, Format: "github", IndexNPU: -1, IndexBench: -1}
	if *o != want {
		t.Errorf("%+v, want %+v", *o, want)
	}
	for _, args := range [][]string{
		{"m", "--npu", "n"}, {"-", "--npu", "-", "--bench", "b"}, {"m", "--npu", "n", "--bench", "b", "--format", "xml"},
		{"m", "--npu", "n", "--bench", "b", "--min-coverage", "2"}, {"m", "--npu", "n", "--bench", "b", "--index-bench", "-3"},
	} {
		if _, err := parse(t, NewCmdValidate, args...); !isFlagError(err) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
}

func TestNewCmdCompare(t *testing.T) {
	o, err := parse(t, NewCmdCompare, "-tp", "n", "-gp", "b", "-o", "out", "-fm", "-lm", "m.yaml", "-dm", "d.yaml", "--pairs", "p.yaml", "-hl", "-s",
		"--tp-size", "2,1", "--strict")
	if err != nil {
		t.Fatal(err)
	}
	want := CompareOptions{IO: o.IO, Target: "n", Golden: "b", OutDir: "out", Fuzzy: true, XLSX: true,
		LayerMapping: "m.yaml", DataMapping: "d.yaml", Pairs: "p.yaml", Format: "text", Fused: true, TP: "2,1", Strict: true}
	if *o != want {
		t.Errorf("%+v, want %+v", *o, want)
	}
	for _, args := range [][]string{{"-tp", "n"}, {"-i", "c.json", "-tp", "n"}, {"-tp", "n", "-gp", "b", "--format", "xml"}, {"-tp", "n", "-gp", "b", "extra"}, {"-cm", "x"},
		{"-tp", "n", "-gp", "b", "--tp-size", "2"}, {"-tp", "n", "-gp", "b", "--tp-size", "0,1"}} {
		if _, err := parse(t, NewCmdCompare, args...); !isFlagError(err) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
}

func TestNewCmdTemplates(t *testing.T) {
	o, err := parse(t, NewCmdTemplates, "--show", "x")
	if err != nil || o.Show != "x" || !o.ShowSet {
		t.Errorf("%+v, %v", o, err)
	}
	if o, err = parse(t, NewCmdTemplates); err != nil || o.ShowSet {
		t.Errorf("%+v, %v", o, err)
	}
}

func isFlagError(err error) bool {
	var fe *FlagError
	return errors.As(err, &fe)
}

// Exit statuses are decided in one place.
func TestExitStatus(t *testing.T) {
	tests := []struct {
		err  error
		want int
	}{
		{nil, ExitOK},
		{ErrFindings, ExitFindings},
		{fmt.Errorf("run: %w", ErrFindings), ExitFindings},
		{flagErrorf("bad flag"), ExitBadInput},
		{&source.Error{File: "x", Line: 1, Expected: "y"}, ExitBadInput},
		{errors.New("disk full"), ExitBadInput},
	}
	for _, tc := range tests {
		if got := exitStatus(tc.err); got != tc.want {
			t.Errorf("exitStatus(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}

// The version is never a bare "dev".
func TestVersion(t *testing.T) {
	tests := []struct {
		info debug.BuildInfo
		want string
	}{
		{debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.3"}}, "v1.2.3"},
		{debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "true"}}}, "devel 0123456789ab+dirty (go1.26.8)"},
		{debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}}, "devel (go1.26.8, built without version control information)"},
	}
	for _, tc := range tests {
		if got := buildVersion(&tc.info); got != tc.want {
			t.Errorf("buildVersion = %q, want %q", got, tc.want)
		}
	}
	if v := version(); v == "" || v == "dev" {
		t.Errorf("version() = %q", v)
	}
}

// validate --help lists every code there is.
func TestValidateHelpCodes(t *testing.T) {
	code, out, _ := run("validate", "--help")
	if code != ExitOK {
		t.Fatalf("exit %d", code)
	}
	for _, c := range append(append([]mapping.CodeInfo{}, mapping.LoadCodes...), validate.Codes...) {
		if !strings.Contains(out, c.Code+"  ") {
			t.Errorf("validate --help does not list %s", c.Code)
		}
	}
}

// On a terminal compare draws a progress bar on stderr and erases it; off
// a terminal it draws none.
func TestCompareProgress(t *testing.T) {
	demo := testkit.Testdata(t, "demo", "dumps")
	for _, tty := range []bool{true, false} {
		ios, _, _, errOut := iostreams.Test()
		ios.SetStderrTTY(tty)
		args := []string{"compare", "-tp", filepath.Join(demo, "llamafactory"), "-gp", filepath.Join(demo, "mindspeed-mm"), "-o", t.TempDir()}
		if code := Run(ios, args); code != ExitOK && code != ExitFindings {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		s := errOut.String()
		drawn := strings.Contains(s, "\r\033[Kcompare [") && strings.Contains(s, "] 100% ") && strings.HasSuffix(s, "\r\033[K")
		if drawn != tty {
			t.Errorf("tty %v: stderr %q", tty, s)
		}
		if !tty && s != "" {
			t.Errorf("off a terminal stderr holds %q", s)
		}
	}
}
