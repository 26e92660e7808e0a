package source

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

// ExpectedFile is what Open and Check expect at a path.
const ExpectedFile = "a file to read"

// PathError turns err, what the file system said about path, into an
// *Error in the form of every bad input: "path: expected <expected>,
// found <what err means>" ("no such file or folder", "no permission
// (permission denied)", ...), instead of Go's "open path: ...". err stays
// the cause: errors.Is(e, fs.ErrNotExist) and errors.As(e, **fs.PathError)
// still hold. An *Error is returned as it is, nil as nil; path "" names
// the path the file-system error holds.
func PathError(path, expected string, err error) error {
	if err == nil {
		return nil
	}
	var se *Error
	if errors.As(err, &se) {
		return err
	}
	if path == "" {
		var pe *fs.PathError
		var le *os.LinkError
		switch {
		case errors.As(err, &pe):
			path = pe.Path
		case errors.As(err, &le):
			path = le.New
		}
	}
	found := FoundFS(err)
	if errors.Is(err, syscall.ENOTDIR) {
		// path itself may be the file in the way (mkdir -p onto a file)
		if st, serr := os.Stat(path); serr == nil && !st.IsDir() {
			found = "a file"
			if kind := Kind(st.Mode()); kind != "" {
				found = kind
			}
		}
	}
	return &Error{File: path, Expected: expected, Found: found, cause: err}
}

// FoundFS says what a file-system error found, for the "found ..." part
// of a message: "no such file or folder", "a file where a folder of its
// path should be", "no permission (permission denied)", ...
func FoundFS(err error) string {
	switch {
	case errors.Is(err, syscall.ENOTDIR):
		return "a file where a folder of its path should be"
	case errors.Is(err, fs.ErrNotExist):
		var pe *fs.PathError
		if errors.As(err, &pe) && pe.Op == "mkdir" {
			// MkdirAll makes the missing parents: the file system refused
			return "none, and the file system refuses to create it (no such file or directory)"
		}
		return "no such file or folder"
	case errors.Is(err, fs.ErrPermission):
		return "no permission (permission denied)"
	case errors.Is(err, syscall.ELOOP):
		return "a symbolic link that loops (too many levels of symbolic links)"
	case errors.Is(err, syscall.EROFS):
		return "a read-only file system"
	case errors.Is(err, syscall.EISDIR):
		return "a folder"
	case errors.Is(err, syscall.ENOSPC):
		return "no space left on the device"
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err.Error()
	}
	return err.Error()
}
