package msprobe

import (
	"sync"
	"sync/atomic"

	"github.com/layermap/layermap/printparse/offheap"
)

// Chunks lends EntryReaders the memory they read a file's chunks into,
// and takes it back when they close: readers opened one after another
// (a step folder's rank pairs, the readers that count a dump's rows)
// then read into pages touched before rather than fresh ones, each of
// which costs a page fault (some 12 us in a virtual machine). It keeps
// at most keptChunks readers' memory given back; more is unmapped. The
// zero Chunks is ready to lend; Free ends the lending. Safe for
// concurrent use.
type Chunks struct {
	mu     sync.Mutex
	free   []chunkMem // given back, to lend again
	closed bool
}

// keptChunks bounds the readers' memory a Chunks keeps given back (1 MB
// each): a machine of many CPUs counts a dump's rows on as many readers,
// whose memory would otherwise stay resident for the rest of the run.
const keptChunks = 8

// chunkMem is the memory of a reader's chunks and what unmaps it.
type chunkMem struct {
	b     []byte
	unmap func()
}

// lend returns memory for a reader's chunks and the function that gives
// it back, which may be called more than once.
func (c *Chunks) lend() ([]byte, func()) {
	c.mu.Lock()
	var m chunkMem
	if n := len(c.free); n > 0 && !c.closed {
		m, c.free = c.free[n-1], c.free[:n-1]
	}
	c.mu.Unlock()
	if m.b == nil {
		m.b, m.unmap = offheap.MakeInOrder[byte](readChunks * readChunk)
	}
	var given atomic.Bool
	return m.b, func() {
		if given.Swap(true) {
			return
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.closed || len(c.free) >= keptChunks {
			m.unmap()
			return
		}
		c.free = append(c.free, m)
	}
}

// Free returns the memory given back to the system now, and the memory
// still lent when its readers close.
func (c *Chunks) Free() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for _, m := range c.free {
		m.unmap()
	}
	c.free = nil
}
