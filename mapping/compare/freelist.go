package compare

import "math/bits"

// freeList keeps recycled buffers by capacity class, so that a buffer
// asked for n rows is found whatever the sizes recycled before it: class
// c holds buffers of capacity at least minCap<<c, and a buffer made for n
// rows gets the capacity of n's class.
type freeList[T any] struct {
	free [freeClasses][]T
	n    int
}

const (
	// entries mostly hold 2 to 4 rows: a larger floor is memory the
	// cache and the pools hold for nothing
	minCap      = 2
	freeClasses = 24
)

// capClass is the class whose capacity holds n rows (n's class).
func capClass(n int) int {
	if n <= minCap {
		return 0
	}
	return bits.Len(uint(n-1)) - bits.Len(minCap-1)
}

// classCap is the capacity a buffer for n rows is made with.
func classCap(n int) int {
	if c := capClass(n); c < freeClasses {
		return minCap << c
	}
	return n
}

// take returns a kept buffer of capacity at least n, or ok false.
func (l *freeList[T]) take(n int) (x T, ok bool) {
	for c := capClass(n); c < freeClasses; c++ {
		if k := len(l.free[c]); k > 0 {
			x = l.free[c][k-1]
			var zero T
			l.free[c][k-1] = zero
			l.free[c] = l.free[c][:k-1]
			l.n--
			return x, true
		}
	}
	return x, false
}

// give keeps x, a buffer of capacity capacity, unless limit buffers are
// kept already.
func (l *freeList[T]) give(x T, capacity, limit int) {
	if l.n >= limit || capacity < minCap {
		return
	}
	// the largest class whose capacity it holds
	c := min(bits.Len(uint(capacity))-bits.Len(minCap), freeClasses-1)
	l.free[c] = append(l.free[c], x)
	l.n++
}
