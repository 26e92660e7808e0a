//go:build unix

package offheap

import "syscall"

// mapBytes maps n zeroed bytes outside the Go heap (nil on failure).
func mapBytes(n int) []byte {
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE|populate)
	if err != nil {
		return nil
	}
	return b
}

func unmapBytes(b []byte) { syscall.Munmap(b) }
