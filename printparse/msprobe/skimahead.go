package msprobe

import (
	"bytes"
	"errors"
	"io"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
)

// A skim of a large regular file runs ahead of itself. The part of "data"
// past its first member is cut every skimAheadChunk bytes; a worker skims
// each chunk from its first member (a name at the start of a line,
// indented as the first member of "data" is) to the first member at or
// past the next cut, keeping the members' names, lines, offsets and Odd.
// The skim proper, when it reaches a member name exactly where a chunk's
// worker began and that worker got through, takes the chunk's members in
// order (checking them for repeats and giving them to fn, as it does its
// own) and goes on just past the chunk's last value. Everywhere else (a
// worker that failed, a cut that fell on no member of "data", irregular
// indentation) it reads on by itself, so that what fn is given, and every
// error, is what the sequential skim gives. Chunks are skimmed as many at
// once as there are CPUs, at most that many ahead of the skim proper.

// skimAheadChunk is the bytes of "data" a worker skims.
const skimAheadChunk = 2 << 20

// skimWorkers is how many chunks are skimmed at once (no skimming ahead
// below 2).
type skimWorkers struct {
	n     int
	chunk int64
	took  func(members int) // tests: called for each chunk taken
	check repeatCheck       // tests
}

func defaultSkimWorkers() skimWorkers {
	return skimWorkers{n: runtime.GOMAXPROCS(0), chunk: skimAheadChunk}
}

// aheadChunk is one chunk: the cut it starts at (from) and the next (to),
// and what its worker found.
type aheadChunk struct {
	from, to int64
	found    chan struct{} // closed once start is set
	done     chan struct{} // closed once the worker returns
	abandon  atomic.Bool   // the skim went past, or stopped: stop

	start int64 // offset of its first member name; -1: none
	ok    bool  // skimmed to the end of the chunk
	bufs  *aheadBufs
	end   int64 // just past the last value
	lines int   // newlines from start to end
}

// aheadBufs are a worker's buffers, used again by later chunks.
type aheadBufs struct {
	ents  []aheadEntry
	names []byte
	lex   []byte // the lexer's
	find  []byte
}

type aheadEntry struct {
	nameEnd int // end of the name in names
	off     int64
	line    int // lines after start's
	odd     bool
}

type skimAhead struct {
	f     *os.File
	path  string
	size  int64
	lead  []byte // '\n', the first member's indentation, '"'
	chunk int64
	next  int64            // where the next chunk begins
	queue chan *aheadChunk // chunks started, in order
	free  chan *aheadBufs  // buffers to use again
	stop  chan struct{}    // closed by close
	wg    sync.WaitGroup
	// the consumer's: the chunk it waits to reach
	cur    *aheadChunk
	closed bool
}

// startSkimAhead starts the workers once the skim is at the first member
// of "data", at byte off0 of f; nil when the file is not worth it (or not
// a regular file, or not indented).
func startSkimAhead(f *os.File, path string, off0 int64, w skimWorkers) *skimAhead {
	if w.n < 2 || w.chunk <= 0 {
		return nil
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() || st.Size()-off0 < 2*w.chunk {
		return nil
	}
	n := min(off0, 256)
	head := make([]byte, n)
	if _, err := f.ReadAt(head, off0-n); err != nil {
		return nil
	}
	nl := bytes.LastIndexByte(head, '\n')
	if nl < 0 {
		return nil
	}
	for _, c := range head[nl+1:] {
		if c != ' ' && c != '\t' {
			return nil
		}
	}
	a := &skimAhead{f: f, path: path, size: st.Size(), lead: append(head[nl:], '"'), chunk: w.chunk,
		next: off0 + w.chunk, queue: make(chan *aheadChunk, w.n-1), free: make(chan *aheadBufs, w.n+1),
		stop: make(chan struct{})}
	// Chunks are made as they are started: at most w.n at once (those
	// queued and the one the skim waits on).
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		defer close(a.queue)
		for from := a.next; from < a.size; from += a.chunk {
			c := &aheadChunk{from: from, to: min(from+a.chunk, a.size), start: -1,
				found: make(chan struct{}), done: make(chan struct{})}
			select {
			case a.queue <- c:
			case <-a.stop:
				return
			}
			a.wg.Add(1)
			go func() {
				defer a.wg.Done()
				a.skim(c)
			}()
		}
	}()
	return a
}

// close stops the workers and waits for them (before f is closed).
func (a *skimAhead) close() {
	if a == nil || a.closed {
		return
	}
	a.closed = true
	close(a.stop)
	if a.cur != nil {
		a.cur.abandon.Store(true)
	}
	for c := range a.queue {
		c.abandon.Store(true)
	}
	a.wg.Wait()
}

// take returns the chunk whose worker began at off and got through, once
// skimmed, or nil. Chunks the skim has gone past are let go.
func (a *skimAhead) take(off int64) *aheadChunk {
	for off >= a.next {
		c := a.cur
		if c == nil {
			var ok bool
			if c, ok = <-a.queue; !ok {
				a.next = a.size // no more chunks
				return nil
			}
			a.cur = c
		}
		<-c.found
		if c.start > off {
			return nil // not reached yet
		}
		a.cur, a.next = nil, c.to
		if c.start < off { // gone past (or no member found)
			c.abandon.Store(true)
			select {
			case <-c.done:
				a.reuse(c)
			default:
			}
			continue
		}
		<-c.done
		if !c.ok {
			a.reuse(c)
			return nil
		}
		return c
	}
	return nil
}

// reuse keeps the buffers of a chunk whose worker is done for a later
// chunk.
func (a *skimAhead) reuse(c *aheadChunk) {
	if b := c.bufs; b != nil {
		c.bufs = nil
		b.ents, b.names = b.ents[:0], b.names[:0]
		select {
		case a.free <- b:
		default:
		}
	}
}

// skim is chunk c's worker. A panic fails the chunk: the skim then reads
// it itself and meets the same.
func (a *skimAhead) skim(c *aheadChunk) {
	defer close(c.done)
	found := false
	defer func() {
		if !found {
			c.start = -1
			close(c.found)
		}
	}()
	defer func() {
		if recover() != nil {
			c.ok = false
		}
	}()
	var b *aheadBufs
	select {
	case b = <-a.free:
	default:
		b = &aheadBufs{lex: make([]byte, 64<<10), find: make([]byte, 64<<10)}
	}
	c.bufs = b
	c.start = a.find(c.from, c.to, b.find)
	found = true
	close(c.found)
	if c.start < 0 {
		return
	}
	lx := &lexer{r: io.NewSectionReader(a.f, c.start, a.size-c.start), source: a.path, buf: b.lex, read: c.start}
	defer func() { b.lex = lx.buf }()
	var name, stack []byte
	for !c.abandon.Load() {
		if b, ok := lx.peek(); !ok || b != '"' {
			return
		}
		line, off := lx.line, lx.read+int64(lx.pos)
		if off >= c.to {
			c.ok = true
			return
		}
		var err error
		var odd bool
		if name, err = lx.readString(name[:0]); err != nil {
			return
		}
		if lx.expect(':', "':'") != nil {
			return
		}
		if odd, stack, err = skimValue(lx, name, stack[:0]); err != nil {
			return
		}
		b.names = append(b.names, name...)
		b.ents = append(b.ents, aheadEntry{nameEnd: len(b.names), off: off, line: line, odd: odd})
		c.end, c.lines = lx.read+int64(lx.pos), lx.line
		p, ok := lx.peek()
		if !ok {
			return
		}
		lx.pos++
		switch p {
		case '}':
			c.ok = true
			return
		case ',':
		default:
			return
		}
	}
}

// find returns the offset of the quote of the first lead in [from, to),
// or -1; buf is its buffer.
func (a *skimAhead) find(from, to int64, buf []byte) int64 {
	for at := from; at < to; {
		n, err := a.f.ReadAt(buf[:int(min(int64(len(buf)), a.size-at))], at)
		if i := bytes.Index(buf[:n], a.lead); i >= 0 {
			if q := at + int64(i+len(a.lead)-1); q < to {
				return q
			}
			return -1
		}
		if err != nil && !errors.Is(err, io.EOF) || n < len(a.lead) {
			return -1
		}
		at += int64(n - len(a.lead) + 1)
	}
	return -1
}

// seek moves the lexer to byte off of its input (an io.Seeker), at line.
func (l *lexer) seek(off int64, line int) error {
	s, ok := l.r.(io.Seeker)
	if !ok {
		return errors.New("seek: input is not seekable")
	}
	if _, err := s.Seek(off, io.SeekStart); err != nil {
		return err
	}
	l.read, l.pos, l.end, l.line, l.rerr = off, 0, 0, line, nil
	return nil
}
