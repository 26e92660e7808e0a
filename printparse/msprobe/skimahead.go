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
	abandon  atomic.Bool   // the skim went past: stop

	start int64 // offset of its first member name; -1: none
	ok    bool  // skimmed to the end of the chunk
	ents  []aheadEntry
	names []byte
	end   int64 // just past the last value
	lines int   // newlines from start to end
}

type aheadEntry struct {
	nameEnd int // end of the name in names
	off     int64
	line    int // lines after start's
	odd     bool
}

type skimAhead struct {
	f      *os.File
	path   string
	size   int64
	lead   []byte // '\n', the first member's indentation, '"'
	chunks []*aheadChunk
	next   int // the first chunk the skim has not reached or passed
	slots  chan struct{}
	stop   chan struct{}
	wg     sync.WaitGroup
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
	a := &skimAhead{f: f, path: path, size: st.Size(), lead: append(head[nl:], '"'),
		slots: make(chan struct{}, w.n), stop: make(chan struct{})}
	for from := off0 + w.chunk; from < a.size; from += w.chunk {
		a.chunks = append(a.chunks, &aheadChunk{from: from, to: min(from+w.chunk, a.size),
			found: make(chan struct{}), done: make(chan struct{}), start: -1})
	}
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		for _, c := range a.chunks {
			select {
			case a.slots <- struct{}{}:
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
	if a != nil {
		close(a.stop)
		for _, c := range a.chunks {
			c.abandon.Store(true)
		}
		a.wg.Wait()
	}
}

// take returns the chunk whose worker began at off and got through, once
// skimmed, or nil. Chunks the skim has gone past are let go.
func (a *skimAhead) take(off int64) *aheadChunk {
	for a.next < len(a.chunks) {
		c := a.chunks[a.next]
		if off < c.from {
			return nil
		}
		<-c.found
		if c.start > off {
			return nil // not reached yet
		}
		a.next++
		if c.start < off { // gone past (or no member found)
			c.abandon.Store(true)
			<-a.slots
			continue
		}
		<-c.done
		<-a.slots
		if !c.ok {
			return nil
		}
		return c
	}
	return nil
}

// skim is chunk c's worker.
func (a *skimAhead) skim(c *aheadChunk) {
	defer close(c.done)
	c.start = a.find(c.from, c.to)
	close(c.found)
	if c.start < 0 {
		return
	}
	lx := newLexer(io.NewSectionReader(a.f, c.start, a.size-c.start), a.path)
	lx.read, lx.line = c.start, 0
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
		c.names = append(c.names, name...)
		c.ents = append(c.ents, aheadEntry{nameEnd: len(c.names), off: off, line: line, odd: odd})
		c.end, c.lines = lx.read+int64(lx.pos), lx.line
		b, ok := lx.peek()
		if !ok {
			return
		}
		lx.pos++
		switch b {
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
// or -1.
func (a *skimAhead) find(from, to int64) int64 {
	buf := make([]byte, 64<<10)
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
