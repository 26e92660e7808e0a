//go:build unix

package cmd

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/layermap/layermap/printparse/testkit"
)

// A FIFO where an input file should be is refused at once (exit 2, the
// file named), for every kind of input: nothing blocks on it.
func TestFIFOInputs(t *testing.T) {
	root := testkit.Root(t)
	demo := filepath.Join(root, "testdata", "demo")
	npuTxt, benchTxt := filepath.Join(demo, "qwen25vl-mindspeed-mm.txt"), filepath.Join(demo, "qwen25vl-llamafactory.txt")
	seed := filepath.Join(root, "mapping", "testdata", "seed", "qwen2.5-vl_mindspeed-mm_to_llamafactory.yaml")
	// a writable copy of a dump pair, to put FIFOs in
	copyDump := func(t *testing.T) (npu, bench string) {
		dir := t.TempDir()
		for _, side := range []string{"llamafactory", "mindspeed-mm"} {
			os.MkdirAll(filepath.Join(dir, side), 0o755)
			for _, f := range []string{"dump.json", "stack.json", "construct.json"} {
				b, err := os.ReadFile(filepath.Join(demo, "dumps", side, f))
				if err != nil {
					t.Fatal(err)
				}
				os.WriteFile(filepath.Join(dir, side, f), b, 0o644)
			}
		}
		return filepath.Join(dir, "llamafactory"), filepath.Join(dir, "mindspeed-mm")
	}
	fifo := func(t *testing.T, p string) string {
		os.Remove(p)
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// an output folder that does not exist yet: a refused input creates
	// nothing (checked below)
	newOut := func(t *testing.T) string { return filepath.Join(t.TempDir(), "out", "run") }
	tests := []struct {
		name string
		args func(t *testing.T) (args []string, fifo string)
	}{
		{"print(model) text", func(t *testing.T) ([]string, string) {
			f := fifo(t, filepath.Join(t.TempDir(), "model.txt"))
			return []string{"tree", f}, f
		}},
		{"suggest side", func(t *testing.T) ([]string, string) {
			f := fifo(t, filepath.Join(t.TempDir(), "model.txt"))
			return []string{"suggest", npuTxt, f}, f
		}},
		{"layer_mapping.yaml", func(t *testing.T) ([]string, string) {
			f := fifo(t, filepath.Join(t.TempDir(), "map.yaml"))
			return []string{"validate", f, "--npu", npuTxt, "--bench", benchTxt}, f
		}},
		{"construct.json", func(t *testing.T) ([]string, string) {
			npu, _ := copyDump(t)
			return []string{"tree", npu}, fifo(t, filepath.Join(npu, "construct.json"))
		}},
		{"dump.json", func(t *testing.T) ([]string, string) {
			npu, bench := copyDump(t)
			return []string{"compare", "-tp", npu, "-gp", bench, "-o", newOut(t)}, fifo(t, filepath.Join(bench, "dump.json"))
		}},
		{"stack.json", func(t *testing.T) ([]string, string) {
			npu, bench := copyDump(t)
			return []string{"compare", "-tp", npu, "-gp", bench, "-o", newOut(t)}, fifo(t, filepath.Join(npu, "stack.json"))
		}},
		{"compare.json", func(t *testing.T) ([]string, string) {
			f := fifo(t, filepath.Join(t.TempDir(), "compare.json"))
			return []string{"compare", "-i", f, "-o", newOut(t)}, f
		}},
		{"compare -lm", func(t *testing.T) ([]string, string) {
			npu, bench := copyDump(t)
			f := fifo(t, filepath.Join(t.TempDir(), "map.yaml"))
			return []string{"compare", "-tp", npu, "-gp", bench, "-lm", f, "-o", newOut(t)}, f
		}},
		{"compare -dm", func(t *testing.T) ([]string, string) {
			npu, bench := copyDump(t)
			f := fifo(t, filepath.Join(t.TempDir(), "dm.yaml"))
			return []string{"compare", "-tp", npu, "-gp", bench, "-dm", f, "-o", newOut(t)}, f
		}},
		{"compare --pairs", func(t *testing.T) ([]string, string) {
			npu, bench := copyDump(t)
			f := fifo(t, filepath.Join(t.TempDir(), "pairs.yaml"))
			return []string{"compare", "-tp", npu, "-gp", bench, "--mapping", seed, "--pairs", f, "-o", newOut(t)}, f
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args, f := tc.args(t)
			type result struct {
				code   int
				stderr string
			}
			done := make(chan result, 1)
			go func() {
				var out, errb bytes.Buffer
				code := Execute(args, strings.NewReader(""), &out, &errb)
				done <- result{code, errb.String()}
			}()
			select {
			case r := <-done:
				want := f + ": expected a regular file, found a named pipe (FIFO)"
				if r.code != ExitBadInput || !strings.Contains(r.stderr, want) {
					t.Errorf("exit %d, stderr %q; want exit 2 and %q", r.code, r.stderr, want)
				}
				for i, a := range args {
					if a == "-o" {
						if _, err := os.Stat(filepath.Dir(args[i+1])); err == nil {
							t.Errorf("the refused compare created %s", filepath.Dir(args[i+1]))
						}
					}
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("layermap %s blocks on the FIFO", strings.Join(args, " "))
			}
		})
	}
}
