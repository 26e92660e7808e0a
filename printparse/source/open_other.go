//go:build !unix

package source

import "os"

// openNonBlocking checks that path is a regular file before opening it,
// so that the open cannot block on a named pipe.
func openNonBlocking(path string) (*os.File, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if err := checkFile(path, st, 0); err != nil {
		return nil, err
	}
	return os.Open(path)
}
