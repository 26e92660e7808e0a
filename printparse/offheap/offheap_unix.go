//go:build unix

package offheap

import "syscall"

// mapBytes maps n zeroed bytes outside the Go heap (nil on failure); when
// whole, all their pages are mapped at once where the system allows it.
func mapBytes(n int, whole bool) []byte {
	flags := syscall.MAP_ANON | syscall.MAP_PRIVATE
	if whole {
		flags |= populate
	}
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, flags)
	if err != nil {
		return nil
	}
	return b
}

func unmapBytes(b []byte) { syscall.Munmap(b) }
