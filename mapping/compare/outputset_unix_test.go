//go:build unix

package compare

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/layermap/layermap/printparse/testkit"
)

// TestRunCreatesOutputFolders: a missing output folder is made, every
// level of it, as msprobe makes it: 0750, nothing for others, no write
// for the group. The umask is 0 meanwhile, so that it takes nothing
// away; the test is not parallel, as the umask is the process's.
func TestRunCreatesOutputFolders(t *testing.T) {
	defer syscall.Umask(syscall.Umask(0))
	pair := filepath.Join(testkit.Corpus(t, "msprobe"), "golden", "synth_md5")
	root := t.TempDir()
	out := filepath.Join(root, "new", "a", "b")
	if _, err := Run(Options{Target: filepath.Join(pair, "npu", "dump.json"), Golden: filepath.Join(pair, "bench", "dump.json"), OutDir: out}); err != nil {
		t.Fatal(err)
	}
	for dir := out; dir != root; dir = filepath.Dir(dir) {
		st, err := os.Stat(dir)
		if err != nil {
			t.Fatal(err)
		}
		if p := st.Mode().Perm(); p != 0o750 {
			t.Errorf("%s: mode %v, want 0750", dir, p)
		}
	}
}
