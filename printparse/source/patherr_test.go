package source

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestPathError(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	loop := filepath.Join(dir, "loop")
	if err := os.Symlink(loop, loop); err != nil {
		t.Fatal(err)
	}
	_, missing := os.Stat(filepath.Join(dir, "nope"))
	_, underFile := os.Open(filepath.Join(file, "x"))
	onFile := os.MkdirAll(filepath.Join(file, "out"), 0o755)
	mkdirFile := os.MkdirAll(file, 0o755)
	_, looping := os.Stat(loop)
	for _, tc := range []struct {
		name, path string
		err        error
		want       string
	}{
		{"missing", "p", missing, "p: expected a file to read, found no such file or folder"},
		{"under a file", "p", underFile, "p: expected a file to read, found a file where a folder of its path should be"},
		{"folder under a file", filepath.Join(file, "out"), onFile, filepath.Join(file, "out") + ": expected a file to read, found a file where a folder of its path should be"},
		{"folder onto a file", file, mkdirFile, file + ": expected a file to read, found a file"},
		{"loop", "p", looping, "p: expected a file to read, found a symbolic link that loops (too many levels of symbolic links)"},
		{"path from the error", "", missing, filepath.Join(dir, "nope") + ": expected a file to read, found no such file or folder"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.err == nil {
				t.Fatal("no error to explain")
			}
			e := PathError(tc.path, ExpectedFile, tc.err)
			if e.Error() != tc.want {
				t.Errorf("got  %s\nwant %s", e, tc.want)
			}
			var pe *fs.PathError
			if !errors.As(e, &pe) || !errors.Is(e, errors.Unwrap(pe)) {
				t.Errorf("%v: the file-system error is no longer its cause", e)
			}
		})
	}
	if PathError("p", ExpectedFile, nil) != nil {
		t.Error("PathError(nil) is not nil")
	}
	se := &Error{File: "q", Expected: "x", Found: "y"}
	if got := PathError("p", ExpectedFile, se); got != se {
		t.Errorf("an *Error was rewritten: %v", got)
	}
	if !errors.Is(PathError("p", ExpectedFile, missing), fs.ErrNotExist) {
		t.Error("errors.Is(fs.ErrNotExist) lost")
	}
}

func TestOpenMissing(t *testing.T) {
	p := filepath.Join(t.TempDir(), "nope")
	_, err := Open(p, 0)
	var se *Error
	if !errors.As(err, &se) || !errors.Is(err, fs.ErrNotExist) || se.Error() != p+": expected a file to read, found no such file or folder" {
		t.Errorf("Open(missing) = %v", err)
	}
	if err := Check(p, 0); !errors.As(err, &se) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Check(missing) = %v", err)
	}
}
