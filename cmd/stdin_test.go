package cmd

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/layermap/layermap/printparse/testkit"
)

// suggest and validate read one side from standard input with "-", as tree
// does (it was "stat -: no such file or directory"); the result equals the
// one read from the file, but for the name.
func TestStdinSide(t *testing.T) {
	npu, bench := pairA(t)
	benchText, err := os.ReadFile(bench)
	if err != nil {
		t.Fatal(err)
	}
	root := testkit.Root(t)
	seed := filepath.Join(root, "mapping/testdata/seed/qwen2.5-vl_mindspeed-mm_to_llamafactory.yaml")
	execIn := func(stdin []byte, args ...string) (int, string, string) {
		var o, e bytes.Buffer
		code := Execute(args, bytes.NewReader(stdin), &o, &e)
		return code, o.String(), e.String()
	}
	tests := []struct {
		name       string
		fromFile   []string // the same run with the file named
		fromStdin  []string
		code       int
		stdinShows string // stdin's name in the output
	}{
		{"suggest bench from stdin", []string{"suggest", npu, bench}, []string{"suggest", npu, "-"}, 0, "# bench side (-gp): <stdin>"},
		{"validate bench from stdin", []string{"validate", seed, "--npu", npu, "--bench", bench}, []string{"validate", seed, "--npu", npu, "--bench", "-"}, 1, "bench <stdin>"},
	}
	// the mapping from stdin: suggest's draft piped into validate
	_, draft, _ := execIn(nil, "suggest", npu, bench)
	t.Run("validate mapping from stdin", func(t *testing.T) {
		code, out, errOut := execIn([]byte(draft), "validate", "-", "--npu", npu, "--bench", bench)
		if code != ExitOK || !strings.HasPrefix(out, "<stdin>: 0 errors, 0 warnings, 4 info; coverage 223/429 (52.0%)") {
			t.Errorf("exit %d\n%s\n%s", code, out, errOut)
		}
	})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wantCode, wantOut, _ := execIn(nil, tc.fromFile...)
			code, out, errOut := execIn(benchText, tc.fromStdin...)
			if code != tc.code || wantCode != tc.code {
				t.Fatalf("exit %d from stdin, %d from the file, want %d; stderr %s", code, wantCode, tc.code, errOut)
			}
			if !strings.Contains(out, tc.stdinShows) {
				t.Errorf("output lacks %q:\n%s", tc.stdinShows, out)
			}
			// the same lines, but for those naming the bench input
			strip := func(s string) string {
				var keep []string
				for _, l := range strings.Split(s, "\n") {
					if !strings.Contains(l, "<stdin>") && !strings.Contains(l, filepath.Base(bench)) {
						keep = append(keep, l)
					}
				}
				return strings.Join(keep, "\n")
			}
			if strip(out) != strip(wantOut) {
				t.Errorf("output from stdin differs from the file's:\n%s\n---\n%s", out, wantOut)
			}
		})
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"suggest both from stdin", []string{"suggest", "-", "-"}, `layermap: suggest: expected at most one of NPU and BENCH as "-" (standard input), found both` + "\n"},
		{"validate both from stdin", []string{"validate", seed, "--npu", "-", "--bench", "-"}, `layermap: validate: expected at most one of MAPPING, --npu and --bench as "-" (standard input), found 2` + "\n"},
		{"validate mapping and npu from stdin", []string{"validate", "-", "--npu", "-", "--bench", npu}, `layermap: validate: expected at most one of MAPPING, --npu and --bench as "-" (standard input), found 2` + "\n"},
		{"validate empty mapping on stdin", []string{"validate", "-", "--npu", npu, "--bench", bench}, "layermap: <stdin>:1:1: expected a map of class names to maps of child paths, found an empty document\n"},
		{"empty stdin", []string{"suggest", npu, "-"}, "layermap: <stdin>: expected a print(model) dump (a line ending in `ClassName(` followed by `  (name): ...` lines), found empty input\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := execIn(nil, tc.args...)
			if code != ExitBadInput || errOut != tc.want || out != "" {
				t.Errorf("exit %d, stdout %q, stderr %q; want %d and %q", code, out, errOut, ExitBadInput, tc.want)
			}
		})
	}
}
