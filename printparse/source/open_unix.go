//go:build unix

package source

import (
	"os"
	"syscall"
)

// openNonBlocking opens path read-only without blocking on a FIFO that
// has no writer (O_NONBLOCK); Open refuses anything but a regular file
// right after, and regular files ignore the flag.
func openNonBlocking(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}
