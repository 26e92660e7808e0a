// Package offheap holds large pointer-free tables outside the collected
// heap: such a table costs its size in memory, not twice it (the garbage
// collector lets the heap grow to twice what is live), and is freed when
// its owner releases it, not at the next collection.
package offheap

import (
	"runtime"
	"unsafe"
)

// Min is the size in bytes from which tables are mapped outside the heap;
// smaller ones are ordinary slices.
const Min = 1 << 20

// Make returns n zeroed values of T, outside the heap when large, and the
// function that releases them (once; the slice is unusable afterwards).
// T must hold no pointers: the collector does not see this memory.
func Make[T any](n int) ([]T, func()) {
	var zero T
	size := n * int(unsafe.Sizeof(zero))
	if n > 0 && size >= Min {
		if b := mapBytes(size); b != nil {
			return unsafe.Slice((*T)(unsafe.Pointer(&b[0])), n), func() { unmapBytes(b) }
		}
	}
	return make([]T, n), func() {}
}

// List is a growing list of values of T (pointer-free) in chunks of 1 MB
// outside the heap, so that it grows without copies. The zero List is
// empty and ready.
type List[T any] struct {
	chunks [][]T
	frees  []func()
	n      int
}

func chunkLen[T any]() int {
	var zero T
	return max(1, Min/int(unsafe.Sizeof(zero)))
}

// Add appends v.
func (l *List[T]) Add(v T) {
	c := chunkLen[T]()
	if l.n%c == 0 {
		s, free := Make[T](c)
		l.chunks, l.frees = append(l.chunks, s), append(l.frees, free)
	}
	l.chunks[l.n/c][l.n%c] = v
	l.n++
}

// At is value i.
func (l *List[T]) At(i int) T {
	c := chunkLen[T]()
	return l.chunks[i/c][i%c]
}

// Len is the number of values.
func (l *List[T]) Len() int { return l.n }

// Release frees the list; it is empty afterwards.
func (l *List[T]) Release() {
	for _, f := range l.frees {
		f()
	}
	*l = List[T]{}
}

// Cleanup releases free when owner becomes unreachable: a safety net for
// an owner whose release may be skipped (an error path); free must not
// refer to owner, and must be safe to call after an explicit release.
func Cleanup[O any](owner *O, free func()) {
	runtime.AddCleanup(owner, func(f func()) { f() }, free)
}
