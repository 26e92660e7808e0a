// Package offheap holds large pointer-free tables outside the collected
// heap: such a table costs its size in memory, not twice it (the garbage
// collector lets the heap grow to twice what is live), and is freed when
// its owner releases it, not at the next collection.
package offheap

import (
	"runtime"
	"sync/atomic"
	"unsafe"
)

// Min is the size in bytes from which tables are mapped outside the heap;
// smaller ones are ordinary slices.
const Min = 64 << 10

// chunkBytes is the size of a List's chunks.
const chunkBytes = 1 << 20

// Make returns n zeroed values of T, outside the heap when large, and the
// function that releases them (the slice is unusable afterwards; later
// calls do nothing). The memory is meant to be written all over soon
// (a table): where the system allows, its pages are mapped at once.
// T must hold no pointers: the collector does not see this memory.
func Make[T any](n int) ([]T, func()) {
	return alloc[T](n, true)
}

// MakeInOrder is Make for memory written from its start on, perhaps only
// in part (a list's chunk): its pages are mapped as they are touched.
func MakeInOrder[T any](n int) ([]T, func()) {
	return alloc[T](n, false)
}

// alloc is Make; when whole, all its pages are mapped at once.
func alloc[T any](n int, whole bool) ([]T, func()) {
	var zero T
	size := n * int(unsafe.Sizeof(zero))
	if n > 0 && size >= Min {
		if b := mapBytes(size, whole); b != nil {
			var freed atomic.Bool
			return unsafe.Slice((*T)(unsafe.Pointer(&b[0])), n), func() {
				if freed.CompareAndSwap(false, true) {
					unmapBytes(b)
				}
			}
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
	return max(1, chunkBytes/int(unsafe.Sizeof(zero)))
}

// Add appends v.
func (l *List[T]) Add(v T) {
	c := chunkLen[T]()
	if l.n%c == 0 {
		s, free := MakeInOrder[T](c)
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

// Set replaces value i.
func (l *List[T]) Set(i int, v T) {
	c := chunkLen[T]()
	l.chunks[i/c][i%c] = v
}

// Len is the number of values.
func (l *List[T]) Len() int { return l.n }

// MoveTo copies the values into dst (at least Len long), freeing each
// chunk once copied, so that the list and a copy are not held whole at
// once; the list is empty afterwards.
func (l *List[T]) MoveTo(dst []T) {
	at := 0
	for k, c := range l.chunks {
		at += copy(dst[at:l.n], c)
		l.frees[k]()
	}
	*l = List[T]{}
}

// Table moves the values into one table of their exact size, outside the
// heap when large, and returns it with its release: the table's pages
// are mapped as they are written (MakeInOrder) and each chunk is freed
// once copied (MoveTo), so that the list and the table are not held
// whole at once. The list is empty afterwards.
func (l *List[T]) Table() ([]T, func()) {
	t, free := MakeInOrder[T](l.n)
	l.MoveTo(t)
	return t, free
}

// Release frees the list; it is empty afterwards.
func (l *List[T]) Release() {
	for _, f := range l.frees {
		f()
	}
	*l = List[T]{}
}

// Cleanup releases free when owner becomes unreachable: a safety net for
// an owner whose release may be skipped (an error path); free must not
// refer to owner, and must be safe to call after an explicit release
// (Make's is).
func Cleanup[O any](owner *O, free func()) {
	runtime.AddCleanup(owner, func(f func()) { f() }, free)
}
