package compare

import (
	"errors"
	"fmt"
	"hash/maphash"
	"slices"

	"github.com/layermap/layermap/printparse/msprobe"
)

// The windowed join keeps memory independent of the bench file where the
// two dumps come in similar order (same model, same step): the bench side
// is streamed alongside the NPU side into a window of recent rows, each NPU
// row takes its bench rows from the window, and rows leave the window
// once it is full, oldest first. What stays for the whole file is one
// hash of every bench key (8 to 16 bytes a row), which proves the result
// exact: the join is only valid when no bench row ever arrives for a key
// the NPU side has already been answered for, and no NPU row asks for a
// key whose rows have left the window. When either happens (bench rows far
// out of order, duplicate keys spread over the file, a bench row an NPU
// row missed) the pass stops with errFallback and Compare writes the table
// again from the whole bench side in memory (benchSide).

const (
	// windowAhead is how far the window reads past the last matched bench
	// row to find an NPU row's key before the row is taken as unmatched.
	windowAhead = 1 << 14
	// windowRows is the most rows the window holds.
	windowRows = 2 * windowAhead
)

// errFallback stops a windowed pass that cannot be exact.
var errFallback = errors.New("bench side out of window order")

// A seen slot holds a key hash with its low bits replaced by flags and by
// how many bench rows with that hash were read (saturating).
const (
	seenResolved = 1 << iota // an NPU row was answered for this hash
	seenEvicted              // a row with this hash left the window
	seenUsed                 // slot in use
	seenOne                  // count unit (bits 3-6)
	seenFlags    = 1<<7 - 1
	seenMaxCount = 15
)

func seenCount(v uint64) int { return int(v>>3) & seenMaxCount }

// hashSet is an open-addressing set of key hashes (the low bits hold
// flags and a count): what the windowed join keeps of every bench row.
// Two keys that share a hash share a slot; that can only make the join
// search more or give way to the full join, never give a wrong row.
type hashSet struct {
	slots []uint64
	n     int
}

// slot returns the slot of hash h, adding it. The pointer is valid until
// the next call.
func (s *hashSet) slot(h uint64) *uint64 {
	h = h&^seenFlags | seenUsed
	if (s.n+1)*4 > len(s.slots)*3 {
		old := s.slots
		s.slots = make([]uint64, max(1024, 2*len(old)))
		s.n = 0
		for _, v := range old {
			if v != 0 {
				*s.find(v) = v
				s.n++
			}
		}
	}
	p := s.find(h)
	if *p == 0 {
		*p = h
		s.n++
	}
	return p
}

// find returns the slot holding h's hash, or the empty slot where it goes.
func (s *hashSet) find(h uint64) *uint64 {
	mask := uint64(len(s.slots) - 1)
	for i := (h >> 32) & mask; ; i = (i + 1) & mask {
		if v := s.slots[i]; v == 0 || v&^seenFlags == h&^seenFlags {
			return &s.slots[i]
		}
	}
}

// segment is a run of consecutive bench rows, packed as benchSide packs
// the whole side (pointer-free, so that the window costs the garbage
// collector nothing to scan).
type segment struct {
	bs     *benchSide
	base   int      // bench position of its first row
	hashes []uint64 // key hash of each row
}

// benchWindow is the bench side of a windowed pass.
type benchWindow struct {
	ahead int // windowAhead
	size  int // windowRows
	ch    chan *segment
	free  chan *segment // evicted segments, for reuse
	stop  chan struct{}
	errc  chan error
	eof   bool
	seed  maphash.Seed
	seen  hashSet
	segs  []*segment // the window, oldest first
	rows  int        // rows in segs
	last  int        // bench position of the last row an NPU row was given
	total int        // bench rows read
	unmat int        // bench rows that left the window unmatched
	buf   []winPos
}

// winPos is a row in the window.
type winPos struct {
	seg *segment
	i   int32
}

// newBenchWindow starts reading the bench side, segment by segment.
func newBenchWindow(bench Source, cfg *Config, renumber bool) *benchWindow {
	w := &benchWindow{ch: make(chan *segment, 2), free: make(chan *segment, 4), stop: make(chan struct{}), errc: make(chan error, 1),
		seed: maphash.MakeSeed(), ahead: windowAhead, size: windowRows}
	if cfg.window > 0 {
		w.ahead, w.size = cfg.window, 2*cfg.window
	}
	segRows := max(w.ahead/4, 16)
	mode := cfg.Mode
	newSeg := func(base int) *segment {
		select {
		case sg := <-w.free:
			sg.bs.reset()
			sg.base, sg.hashes = base, sg.hashes[:0]
			return sg
		default:
		}
		bs := newBenchSide(mode)
		bs.seed, bs.rowCap, bs.ar.chunk = w.seed, segRows+64, 64<<10
		return &segment{bs: bs, base: base}
	}
	send := func(sg *segment) error {
		sg.bs.matched = slices.Grow(sg.bs.matched[:0], sg.bs.n)[:sg.bs.n]
		clear(sg.bs.matched)
		select {
		case w.ch <- sg:
			return nil
		case <-w.stop:
			return errStopped
		}
	}
	go func() {
		sg := newSeg(0)
		err := forEachRow(bench, cfg, renumber, nil, func(e *msprobe.Entry, rs []sideRow) error {
			if len(rs) == 0 {
				return nil
			}
			entry := sg.bs.addEntry(e.Name)
			for i := range rs {
				sg.hashes = append(sg.hashes, sg.bs.add(&rs[i], entry))
			}
			if sg.bs.n < segRows {
				return nil
			}
			if err := send(sg); err != nil {
				return err
			}
			sg = newSeg(sg.base + sg.bs.n)
			return nil
		})
		if err == nil && sg.bs.n > 0 {
			err = send(sg)
		}
		close(w.ch)
		w.errc <- err
	}()
	return w
}

// close stops the reader.
func (w *benchWindow) close() {
	if w.eof {
		return
	}
	close(w.stop)
	for range w.ch {
	}
	<-w.errc
	w.eof = true
}

// pull reads the next bench segment into the window (keep) or only checks
// and counts it (when draining).
func (w *benchWindow) pull(keep bool) error {
	sg, ok := <-w.ch
	if !ok {
		w.eof = true
		if err := <-w.errc; err != nil {
			return fmt.Errorf("bench: %w", err)
		}
		return nil
	}
	for _, h := range sg.hashes {
		s := w.seen.slot(h)
		if *s&seenResolved != 0 {
			return errFallback
		}
		if seenCount(*s) < seenMaxCount {
			*s += seenOne
		}
		if !keep {
			*s |= seenEvicted
		}
	}
	w.total += sg.bs.n
	if !keep {
		w.unmat += sg.bs.n
		return nil
	}
	w.segs = append(w.segs, sg)
	w.rows += sg.bs.n
	for len(w.segs) > 1 && w.rows-w.segs[0].bs.n >= w.size {
		old := w.segs[0]
		for i, h := range old.hashes {
			*w.seen.slot(h) |= seenEvicted
			if !old.bs.matched[i] {
				w.unmat++
			}
		}
		w.rows -= old.bs.n
		w.segs[0] = nil
		w.segs = w.segs[1:]
		select {
		case w.free <- old:
		default:
		}
	}
	return nil
}

// find collects the window's rows of a key, in file order: count rows
// at most (the rows read with its hash), newest segments first.
func (w *benchWindow) find(key string, h uint64, count int) []winPos {
	w.buf = w.buf[:0]
	for k := len(w.segs) - 1; k >= 0 && len(w.buf) < count; k-- {
		sg := w.segs[k]
		for _, i := range sg.bs.lookupHash(key, h) {
			w.buf = append(w.buf, winPos{sg, i})
		}
	}
	if len(w.buf) > 1 {
		slices.SortFunc(w.buf, func(a, b winPos) int { return (a.seg.base + int(a.i)) - (b.seg.base + int(b.i)) })
	}
	return w.buf
}

// lookup returns the bench rows of a key, in file order, reading ahead as
// far as the window allows. The result is valid until the next call.
func (w *benchWindow) lookup(key string) ([]winPos, error) {
	h := maphash.String(w.seed, key)
	s := w.seen.slot(h)
	for !w.eof && seenCount(*s) == 0 && w.total <= w.last+w.ahead {
		if err := w.pull(true); err != nil {
			return nil, err
		}
		s = w.seen.slot(h)
	}
	if *s&seenEvicted != 0 {
		return nil, errFallback
	}
	*s |= seenResolved
	n := seenCount(*s)
	if n == seenMaxCount {
		n = w.rows + 1
	}
	var l []winPos
	if n > 0 {
		l = w.find(key, h, n)
	}
	if len(l) > 0 {
		p := l[len(l)-1]
		w.last = max(w.last, p.seg.base+int(p.i))
	}
	return l, nil
}

// finish reads the rest of the bench side (checking that no row comes
// for an answered key) and counts the bench rows.
func (w *benchWindow) finish(sum *Summary) error {
	for !w.eof {
		if err := w.pull(false); err != nil {
			return err
		}
	}
	sum.BenchRows = w.total
	sum.BenchUnmatched = w.unmat
	for _, sg := range w.segs {
		for _, m := range sg.bs.matched {
			if !m {
				sum.BenchUnmatched++
			}
		}
	}
	return nil
}

// joinWindow is joinRow against the window.
func joinWindow(n *sideRow, w *benchWindow, cfg *Config, emit func(*sideRow, *segment, int32, MatchSource) error) error {
	key, src, gate := joinKey(n, cfg)
	idx, err := w.lookup(key)
	if err != nil {
		return err
	}
	if len(idx) == 0 {
		return emit(n, nil, -1, Unmatched)
	}
	for _, p := range idx {
		if gate && !dtypeMatch(n.it.Dtype, p.seg.bs.dtype(p.i), cfg.CrossFramework) {
			if err := emit(n, nil, -1, Unmatched); err != nil {
				return err
			}
			continue
		}
		p.seg.bs.matched[p.i] = true
		if err := emit(n, p.seg, p.i, src); err != nil {
			return err
		}
	}
	return nil
}
