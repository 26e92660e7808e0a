package compare

import "unsafe"

// The bench index's tables grow with the bench file and hold no pointers:
// they are allocated outside the collected heap (offheap_unix.go), so that
// they cost their size in memory, not twice it (the garbage collector lets
// the heap grow to twice what is live), and are freed when Compare ends.

// offHeapMin is the size from which tables are mapped outside the heap.
const offHeapMin = 1 << 20

// allocWords returns n zeroed words, outside the heap when large, and
// the function that releases them.
func allocWords(n int) ([]uint64, func()) {
	if n*8 >= offHeapMin {
		if b := mapBytes(n * 8); b != nil {
			return unsafe.Slice((*uint64)(unsafe.Pointer(&b[0])), n), func() { unmapBytes(b) }
		}
	}
	return make([]uint64, n), func() {}
}

// allocUint32s is allocWords for uint32s.
func allocUint32s(n int) ([]uint32, func()) {
	w, free := allocWords((n + 1) / 2)
	return unsafe.Slice((*uint32)(unsafe.Pointer(&w[0])), n), free
}

// wordList is a growing list of words in chunks outside the heap.
type wordList struct {
	chunks [][]uint64
	frees  []func()
	n      int
}

const wordChunk = 1 << 17 // 1 MB

func (l *wordList) add(w uint64) {
	if l.n%wordChunk == 0 {
		c, free := allocWords(wordChunk)
		l.chunks, l.frees = append(l.chunks, c), append(l.frees, free)
	}
	l.chunks[l.n/wordChunk][l.n%wordChunk] = w
	l.n++
}

func (l *wordList) at(i int) uint64 { return l.chunks[i/wordChunk][i%wordChunk] }

func (l *wordList) len() int { return l.n }

func (l *wordList) release() {
	for _, f := range l.frees {
		f()
	}
	*l = wordList{}
}
