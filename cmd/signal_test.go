//go:build unix

package cmd

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/layermap/layermap/cmd/htmlview/htmltest"
	"github.com/layermap/layermap/printparse/msprobe/dumpgen"
)

// mainEnv makes the test binary run layermap (Execute on its arguments)
// instead of the tests, so that a test can signal a real process.
const mainEnv = "LAYERMAP_CMD_TEST_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(mainEnv) != "" {
		os.Exit(Execute(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	code := m.Run()
	htmltest.Close()
	os.Exit(code)
}

// SIGTERM and SIGINT in the middle of a compare remove its temporaries
// and end it with 143 and 130.
func TestCompareSignal(t *testing.T) {
	if testing.Short() {
		t.Skip("writes two 40 MB dumps")
	}
	dir := t.TempDir()
	write := func(name string, perturb float64) string {
		p := filepath.Join(dir, name, "dump.json")
		os.MkdirAll(filepath.Dir(p), 0o755)
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := dumpgen.Write(f, dumpgen.Options{Seed: 1, TargetBytes: 40 << 20, Hidden: 64, Perturb: perturb}); err != nil {
			t.Fatal(err)
		}
		return p
	}
	npu, bench := write("npu", 0), write("bench", 0.01)
	for _, tc := range []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGTERM, 143}, {syscall.SIGINT, 130}} {
		t.Run(tc.sig.String(), func(t *testing.T) {
			out := t.TempDir()
			cmd := exec.Command(os.Args[0], "compare", "-tp", npu, "-gp", bench, "-o", out)
			cmd.Env = append(os.Environ(), mainEnv+"=1")
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// wait for the table's temporary, then signal
			deadline := time.Now().Add(30 * time.Second)
			for {
				es, _ := os.ReadDir(out)
				if len(es) > 0 {
					break
				}
				if time.Now().After(deadline) {
					cmd.Process.Kill()
					t.Fatal("no temporary appeared")
				}
				time.Sleep(5 * time.Millisecond)
			}
			cmd.Process.Signal(tc.sig)
			err := cmd.Wait()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != tc.code {
				t.Fatalf("exit %v, want status %d (the run may have ended before the signal)", err, tc.code)
			}
			es, _ := os.ReadDir(out)
			var left []string
			for _, e := range es {
				left = append(left, e.Name())
			}
			if len(left) > 0 {
				t.Errorf("left in the output folder: %s", strings.Join(left, " "))
			}
		})
	}
}
