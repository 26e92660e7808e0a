//go:build unix

package source

import (
	"errors"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// Anything but a regular file is refused at once with a message naming
// the file and what it is; a FIFO without a writer must not block.
func TestOpenRefusesNonRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "dump.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ path, found string }{
		{fifo, "a named pipe (FIFO)"},
		{dir, "a folder"},
		{"/dev/null", "a character device"},
	}
	for _, tc := range tests {
		done := make(chan error, 1)
		go func() {
			f, err := Open(tc.path, 0)
			if f != nil {
				f.Close()
			}
			done <- err
		}()
		select {
		case err := <-done:
			var se *Error
			if !errors.As(err, &se) || se.File != tc.path || se.Found != tc.found {
				t.Errorf("Open(%s) = %v, want a *source.Error naming the file, found %s", tc.path, err, tc.found)
			}
			if want := tc.path + ": expected a regular file, found " + tc.found; err.Error() != want {
				t.Errorf("Open(%s): %q, want %q", tc.path, err, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("Open(%s) blocks", tc.path)
		}
		if _, err := ReadFile(tc.path, 0); err == nil {
			t.Errorf("ReadFile(%s) accepted it", tc.path)
		}
		if err := Check(tc.path, 0); err == nil {
			t.Errorf("Check(%s) accepted it", tc.path)
		}
	}
}
