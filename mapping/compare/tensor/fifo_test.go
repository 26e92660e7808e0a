//go:build unix

package tensor

import (
	"errors"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/layermap/layermap/printparse/source"
)

// A FIFO where a tensor file should be is refused at once, naming it.
func TestLoadRefusesFIFO(t *testing.T) {
	for _, name := range []string{"x.pt", "x.npy"} {
		p := filepath.Join(t.TempDir(), name)
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { _, err := Load(p, 1<<20); done <- err }()
		select {
		case err := <-done:
			var se *source.Error
			if !errors.As(err, &se) || se.File != p {
				t.Errorf("Load(%s): %v, want a source.Error naming it", name, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("Load(%s) blocks on a FIFO", name)
		}
	}
}
