package compare

import (
	"cmp"
	"fmt"
	"unsafe"

	"github.com/layermap/layermap/printparse/msprobe"
)

// fuzzyMatcher is msprobe's fuzzy match (Match.process_fuzzy_match): rows
// of both sides are pushed in lockstep into two queues; after each step
// the newest NPU row is tried against the queued bench rows (oldest first,
// the newest bench row last), then the older NPU rows against the newest
// bench row. On a hit the NPU rows queued before it come out unmatched,
// the pair comes out matched and both queues are cut behind the pair.
// Rows are equal when their names agree after renameAPI (call indices
// dropped).
//
// msprobe stops as soon as, after a step, exactly one queue is empty: when
// the NPU side is longer and the bench queue is drained, the rest of the
// NPU rows after the next one are lost. That is kept (the tensor-mode
// golden shows it). Where msprobe differs: in statistics and md5 mode its
// result frame is misaligned by two columns, so every row fails the dtype
// gate and comes out unmatched (and it crashes when a row stays
// unmatched); here those modes match as in tensor mode.
type fuzzyMatcher struct {
	bench benchRows
	cfg   *Config

	npu, b  fuzzyQueue
	stopped bool
	done    bool          // the bench side has no more rows
	pushed  int           // bench rows queued so far
	matched int           // bench rows matched
	onMatch func(pos int) // told the position of each bench row matched, when set
	buf     []byte
	text    []byte // the block the next new name goes in

	// The bench queue's rows before position packedEnd are packed as the
	// whole-bench join holds them (benchstore.go), once the queue is
	// longer than packAfter (0: never): a queue that grows with the file
	// (no name pairs, or one side far ahead). They go in generations, each
	// let go once the queue's head has passed it.
	packAfter int
	genRows   int // a generation's rows (packedGenRows)
	packedEnd int
	gens      []*packedGen
	released  int // bench rows released
	unpacked  sideRow
}

// packedGen is a generation of packed bench rows, from queue position
// first on.
type packedGen struct {
	bs      *benchSide
	first   int
	entry   string // the entry of the last row added
	entryAt int32  // its number in bs
}

// packedGenRows is a generation's size: its memory goes once the queue's
// head has passed its last row.
const packedGenRows = 1 << 16

// packAfterRows is the bench queue's length past which its older rows
// are packed.
const packAfterRows = 1 << 12

// benchRows are the bench side's rows in file order, as the fuzzy match
// queues them.
type benchRows interface {
	// next returns the next row, nil after the last. A row stays valid
	// until release frees it.
	next() (*sideRow, error)
	// release frees the first n rows next gave (n only grows).
	release(n int)
	// rest counts the rows next has not given, and tells whether an entry
	// of the bench side or its header has an md5 (Summary.benchMD5).
	rest() (rows int, md5 bool, err error)
}

func newFuzzyMatcher(bench benchRows, cfg *Config) *fuzzyMatcher {
	return &fuzzyMatcher{bench: bench, cfg: cfg, npu: newFuzzyQueue(), b: newFuzzyQueue(), packAfter: cmp.Or(cfg.fuzzyPack, packAfterRows), genRows: packedGenRows}
}

// benchRow is the queued bench row at position p, unpacked into a
// buffer of the matcher's when packed (valid until the next call).
func (f *fuzzyMatcher) benchRow(p int) *sideRow {
	if p >= f.packedEnd {
		return f.b.row(p - f.b.base)
	}
	for _, g := range f.gens {
		if p < g.first+g.bs.len() {
			return g.bs.rowInto(&f.unpacked, int32(p-g.first))
		}
	}
	panic("compare: a packed bench row outside its generations")
}

// pack packs the bench queue's older rows, down to half of packAfter
// left as they are, and releases them.
func (f *fuzzyMatcher) pack() {
	upto := f.b.base + f.b.len() - f.packAfter/2
	for p := max(f.packedEnd, f.b.base); p < upto; p++ {
		i := p - f.b.base
		r := f.b.row(i)
		var g *packedGen
		if n := len(f.gens); n > 0 && f.gens[n-1].bs.len() < f.genRows {
			g = f.gens[n-1]
		} else {
			g = &packedGen{bs: newBenchSide(f.cfg.Mode), first: p}
			g.bs.rowCap, g.bs.ar.chunk = 1<<10, 64<<10 // a queue may pack a few rows at a time
			f.gens = append(f.gens, g)
		}
		if g.bs.len() == 0 || r.it.Entry != g.entry {
			g.entry, g.entryAt = r.it.Entry, g.bs.addEntry(r.it.Entry)
		}
		g.bs.add(r, g.entryAt)
		f.b.rows[f.b.head+i] = nil
	}
	f.packedEnd = max(f.packedEnd, upto)
	f.release(f.packedEnd)
}

// release releases the bench rows before position n, and the packed
// generations the queue's head has passed.
func (f *fuzzyMatcher) release(n int) {
	if n > f.released {
		f.released = n
		f.bench.release(n)
	}
	k := 0
	for k < len(f.gens) && f.gens[k].first+f.gens[k].bs.len() <= f.b.base {
		k++
	}
	f.gens = moveDown(f.gens, k)
}

// moveDown moves s[head:] to the front of s, clearing what it leaves:
// the queues here drop from their front by a head index, and move down
// once the rows dropped are as many as those left, so that a slice does
// not grow past twice its queue.
func moveDown[T any](s []T, head int) []T {
	left := copy(s, s[head:])
	clear(s[left:])
	return s[:left]
}

// fuzzyQueue is one side's queue: its rows with their fuzzy names, and
// each name's queued rows as a list. Positions count the rows ever
// queued; the queue is rows[head:] (and keys, next), its first at
// position base.
type fuzzyQueue struct {
	rows []*sideRow
	keys []string
	next []int // the position of the next queued row of the same name, -1: none
	head int
	at   map[string]nameRows
	base int
}

// nameRows are the first and last queued positions of a name.
type nameRows struct {
	first, last int
	key         string
}

func newFuzzyQueue() fuzzyQueue { return fuzzyQueue{at: map[string]nameRows{}} }

// len is the number of queued rows.
func (q *fuzzyQueue) len() int { return len(q.rows) - q.head }

// row is queued row i (position base+i).
func (q *fuzzyQueue) row(i int) *sideRow { return q.rows[q.head+i] }

// lastKey is the newest row's name.
func (q *fuzzyQueue) lastKey() string { return q.keys[len(q.keys)-1] }

func (q *fuzzyQueue) push(r *sideRow, key string) {
	p := q.base + q.len()
	if n, ok := q.at[key]; ok {
		q.next[q.head+n.last-q.base] = p
		n.last = p
		q.at[key] = n
	} else {
		q.at[key] = nameRows{first: p, last: p, key: key}
	}
	q.rows = append(q.rows, r)
	q.keys = append(q.keys, key)
	q.next = append(q.next, -1)
}

// first returns the first queued position of key below limit, or -1.
func (q *fuzzyQueue) first(key string, limit int) int {
	if n, ok := q.at[key]; ok && n.first < limit {
		return n.first
	}
	return -1
}

// cut drops the first n rows: what the match keeps is its queues (the
// rows left move down as moveDown says).
func (q *fuzzyQueue) cut(n int) {
	end := q.head + n
	for i, k := range q.keys[q.head:end] {
		if nx := q.next[q.head+i]; nx >= 0 { // the row is its name's first
			r := q.at[k]
			r.first = nx
			q.at[k] = r
		} else {
			delete(q.at, k)
		}
	}
	clear(q.rows[q.head:end])
	clear(q.keys[q.head:end])
	q.head, q.base = end, q.base+n
	if q.len() <= q.head {
		q.rows, q.keys, q.next, q.head = moveDown(q.rows, q.head), moveDown(q.keys, q.head), moveDown(q.next, q.head), 0
	}
}

// reset empties the queue.
func (q *fuzzyQueue) reset() {
	q.base += q.len()
	clear(q.rows)
	clear(q.keys)
	q.rows, q.keys, q.next, q.head = q.rows[:0], q.keys[:0], q.next[:0], 0
	clear(q.at)
}

// key returns renameAPI(name), a string either queue holds when it has
// one (a row's pair mostly follows it).
func (f *fuzzyMatcher) key(name string) string {
	f.buf = appendRenameAPI(f.buf[:0], name)
	if n, ok := f.npu.at[string(f.buf)]; ok {
		return n.key
	}
	if n, ok := f.b.at[string(f.buf)]; ok {
		return n.key
	}
	if len(f.text)+len(f.buf) > cap(f.text) {
		f.text = make([]byte, 0, max(keyText, len(f.buf)))
	}
	f.text = append(f.text, f.buf...)
	k := f.text[len(f.text)-len(f.buf):]
	return unsafe.String(unsafe.SliceData(k), len(k))
}

// keyText is the size of the blocks the queues' names are held in: many
// to an allocation. A queue holds the rows since its last cut, so the
// blocks it keeps are those of its own names (and one more).
const keyText = 64 << 10

func (f *fuzzyMatcher) push(n *sideRow, emit rowEmit) error {
	if f.stopped {
		return nil
	}
	f.npu.push(n, f.key(n.key))
	if err := f.pushBench(); err != nil {
		return err
	}
	if f.b.len() == 0 {
		// exactly one queue is empty after the step: msprobe stops here.
		f.stopped = true
		return nil
	}
	return f.step(emit)
}

func (f *fuzzyMatcher) step(emit rowEmit) error {
	nLast := f.npu.base + f.npu.len() - 1
	bLast := f.b.base + f.b.len() - 1
	nk, bk := f.npu.lastKey(), f.b.lastKey()
	np, bp := -1, -1
	if p := f.b.first(nk, bLast); p >= 0 {
		np, bp = nLast, p
	} else if nk == bk {
		np, bp = nLast, bLast
	} else if p := f.npu.first(bk, nLast); p >= 0 {
		np, bp = p, bLast
	}
	if np < 0 {
		return nil
	}
	ni, bi := np-f.npu.base, bp-f.b.base
	for i := range ni {
		if err := emit(f.npu.row(i), nil, Unmatched); err != nil {
			return err
		}
	}
	n, b := f.npu.row(ni), f.benchRow(bp)
	if dtypeMatch(n.it.Dtype, b.it.Dtype, f.cfg.CrossFramework) {
		f.matched++
		if f.onMatch != nil {
			f.onMatch(bp)
		}
		if err := emit(n, b, ByFuzzy); err != nil {
			return err
		}
	} else if err := emit(n, nil, Unmatched); err != nil {
		return err
	}
	f.npu.cut(ni + 1)
	f.b.cut(bi + 1)
	f.release(f.b.base)
	return nil
}

// pushBench queues the next bench row, if there is one.
func (f *fuzzyMatcher) pushBench() error {
	if f.done {
		return nil
	}
	r, err := f.bench.next()
	if err != nil {
		return err
	}
	if r == nil {
		f.done = true
		return nil
	}
	f.b.push(r, f.key(r.key))
	f.pushed++
	if f.packAfter > 0 && f.b.len() > f.packAfter && f.b.base+f.b.len()-f.packedEnd > f.packAfter {
		f.pack()
	}
	return nil
}

// finish handles bench rows beyond the NPU side's length, emits the NPU
// rows still queued as unmatched and counts the bench side's rows.
func (f *fuzzyMatcher) finish(emit rowEmit, sum *Summary) error {
	// When the bench side is longer, msprobe keeps pushing bench rows
	// alone, until exactly one queue is empty.
	for !f.stopped && f.npu.len() > 0 {
		n := f.b.len()
		if err := f.pushBench(); err != nil {
			return err
		}
		if f.b.len() == n {
			break
		}
		if err := f.step(emit); err != nil {
			return err
		}
	}
	for i := range f.npu.len() {
		if err := emit(f.npu.row(i), nil, Unmatched); err != nil {
			return err
		}
	}
	f.npu.reset()
	f.b.reset()
	f.release(f.pushed)
	rest, md5, err := f.bench.rest()
	if err != nil {
		return err
	}
	sum.BenchRows, sum.benchMD5 = f.pushed+rest, md5
	sum.BenchUnmatched = sum.BenchRows - f.matched
	return nil
}

// fuzzyJoin is the fuzzy match as a pass's join.
type fuzzyJoin struct {
	m *fuzzyMatcher
}

func newFuzzyJoin(bench benchRows, cfg *Config) *fuzzyJoin {
	return &fuzzyJoin{m: newFuzzyMatcher(bench, cfg)}
}

func (j *fuzzyJoin) row(n *sideRow, emit rowEmit) error { return j.m.push(n, emit) }

func (j *fuzzyJoin) end(emit rowEmit, sum *Summary) error { return j.m.finish(emit, sum) }

func (j *fuzzyJoin) abort() {
	if a, ok := j.m.bench.(aborter); ok {
		a.abort()
	}
}

// storeRows are the rows of a bench side held whole (storeJoin).
type storeRows struct {
	bs *benchSide
	i  int32
}

func (s *storeRows) next() (*sideRow, error) {
	if int(s.i) >= s.bs.len() {
		return nil, nil
	}
	s.i++
	return s.bs.row(s.i - 1), nil
}

func (s *storeRows) release(int) {}

func (s *storeRows) rest() (int, bool, error) { return s.bs.len() - int(s.i), s.bs.md5, nil }

// benchStream reads the bench side's rows in file order on a goroutine
// of its own (sideStream), ahead of the fuzzy match, and holds the
// entries whose rows are still queued: the match keeps its queues, never
// the whole side.
type benchStream struct {
	ch      <-chan []npuEntry
	errc    <-chan error
	stop    func()
	batches batchPool
	pool    rowsPool
	md5     *bool // the header's md5 or an entry's, once errc gave nil

	batch  []npuEntry // the batch being read, from at on
	at     int
	rows   []sideRow // the entry being read, from row on
	row    int
	given  int        // rows next gave
	held   []heldRows // from heldAt on: entries with a row given and not released, oldest first
	heldAt int
	ended  bool
}

// heldRows is an entry's rows; the last is row number end-1 of those
// given.
type heldRows struct {
	buf *rowsBuf
	end int
}

func newBenchStream(bench Bench, cfg *Config) *benchStream {
	s := &benchStream{batches: newBatchPool(), md5: new(bool)}
	var header, entry bool
	src := benchEntries(bench, &header, cfg)
	withMD5 := func(yield func(*msprobe.Entry) error) error {
		err := src(func(e *msprobe.Entry) error {
			entry = entry || e.HasMD5
			return yield(e)
		})
		*s.md5 = header || entry
		return err
	}
	var ready func()
	s.ch, s.errc, ready, s.stop = sideStream(withMD5, cfg, false, nil, &s.pool, s.batches)
	ready()
	return s
}

func (s *benchStream) next() (*sideRow, error) {
	for s.row == len(s.rows) {
		if s.at == len(s.batch) {
			if s.batch != nil {
				s.batches.put(s.batch)
				s.batch, s.at = nil, 0
			}
			if s.ended {
				return nil, nil
			}
			b, ok := <-s.ch
			if !ok {
				s.ended = true
				if err := <-s.errc; err != nil {
					return nil, fmt.Errorf("bench: %w", err)
				}
				return nil, nil
			}
			s.batch = b
			continue
		}
		s.rows, s.row = s.batch[s.at].rows, 0
		s.at++
		if len(s.rows) > 0 {
			s.held = append(s.held, heldRows{buf: s.rows[0].owner, end: s.given + len(s.rows)})
		}
	}
	s.row++
	s.given++
	return &s.rows[s.row-1], nil
}

// release recycles the entries whose rows are all before row n (the
// entries left move down as moveDown says).
func (s *benchStream) release(n int) {
	for s.heldAt < len(s.held) && s.held[s.heldAt].end <= n {
		s.pool.put(s.held[s.heldAt].buf)
		s.held[s.heldAt] = heldRows{}
		s.heldAt++
	}
	if len(s.held)-s.heldAt <= s.heldAt {
		s.held, s.heldAt = moveDown(s.held, s.heldAt), 0
	}
}

func (s *benchStream) rest() (int, bool, error) {
	n := s.given
	for {
		r, err := s.next()
		if err != nil {
			return 0, false, err
		}
		if r == nil {
			break
		}
		s.release(s.given)
	}
	return s.given - n, *s.md5, nil
}

func (s *benchStream) abort() { s.stop() }
