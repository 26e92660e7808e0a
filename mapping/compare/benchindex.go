package compare

import (
	"fmt"
	"hash/maphash"
	"math/bits"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/layermap/layermap/mapping/resolve"
	"github.com/layermap/layermap/printparse/msprobe"
	"github.com/layermap/layermap/printparse/offheap"
)

// The bench side is joined through an index decided before the first NPU
// row: msprobe.Skim walks the bench dump.json once (several times faster
// than parsing it) and gives every entry's name, byte offset and whether
// its rows may be named otherwise than "entry name + structural suffix"
// (odd). From the names alone the index knows every entry's compare-key
// prefix (the name, or the renumbered backward name), so an NPU row's
// bench rows are found without reading ahead: the candidate prefixes of
// its key (the part before ".input", ".output", ".parameters", or through
// a parameters_grad or debug part) are looked up, and the entries found
// are parsed from their offsets (msprobe.EntryReader): by the table's
// lookahead (lookahead.go) just before the NPU entry that asks for them,
// or by the join itself when the lookahead did not foresee the lookup;
// each is kept in a small cache while the NPU side needs it. Odd entries
// (none in ordinary dumps) are parsed up front and their rows indexed by
// key.
//
// A mapped compare, which has read both dumps' entries first, gives the
// index the entries it read (knownFile) instead of a skim.
//
// Whatever the two dumps' orders, the join is exact and reads every bench
// entry once in the common case (an entry evicted from the cache and
// needed again is parsed again); the rows of bench entries no NPU row
// asks for are only counted, at the end.
//
// Memory, flat in the file's length but for these fixed amounts per
// bench entry, all outside the collected heap when large (so that the
// collector's goal does not double them; printparse/offheap): its index
// slot (4 bytes at 7/10 full: 5.7, tagIndex), its key-prefix tag (4
// bytes) and its share of the tags' filter (1 byte), its offset (2.5
// bytes), its renumbered call index when it is a renumbered backward
// entry (4 bytes, and 1.5 bits an entry: renumCalls), 6 bits (tag shared
// or not, parsed, fully matched, skipped by msprobe, parsed ahead,
// parsed by the join); when it left the cache partly matched, its
// matched rows (partialRows: at most 43 bytes, and a bit per row past
// the 64th). Besides: the cache (cacheEntries parsed entries), the
// entries between the lookahead and the join (aheadQueue) or a
// tensor-parallel sibling's prefetcher hold, and the
// rows of odd entries (none in ordinary dumps).

// Bench is the bench (golden) side of a comparison: a dump.json read
// where the join needs it (BenchFile), or any Source (held in memory).
type Bench interface {
	openBench(cfg *Config) (benchSource, error)
}

// BenchFile is a bench dump.json read through its index (see above).
type BenchFile string

// benchSource gives a bench dump's entries by position.
type benchSource interface {
	// skim calls fn with every member of "data" in file order.
	skim(fn func(i int, name []byte, odd bool) error) error
	// read flattens entry i and calls fn with it, unless msprobe skips it.
	read(i int, fn func(*msprobe.Entry) error) error
	// md5 reports whether an entry read so far has an md5 (md5 mode).
	md5() bool
	// rows counts the rows entry i flattens into (0 when msprobe skips
	// it), checking it as read does.
	rows(i int) (int, error)
	// fork returns another reader of the same entries, for another
	// goroutine; closing it leaves this one open.
	fork() (benchSource, error)
	close()
}

func (p BenchFile) openBench(cfg *Config) (benchSource, error) {
	noStats := cfg.statsUnread()
	r, err := newEntryReader(string(p), noStats, cfg.chunks)
	if err != nil {
		return nil, err
	}
	return &fileBench{path: string(p), r: r, offs: &offsets{}, plan: cfg.benchPlan(string(p)), noStats: noStats, chunks: cfg.chunks}, nil
}

// newEntryReader opens the dump.json at path for reading entries, their
// statistics left out with noStats (Config.statsUnread), its chunks in
// memory chunks lends (when not nil).
func newEntryReader(path string, noStats bool, chunks *msprobe.Chunks) (*msprobe.EntryReader, error) {
	r, err := msprobe.NewEntryReader(path)
	if err != nil {
		return nil, err
	}
	if noStats {
		r.SkipStats()
	}
	if chunks != nil {
		r.UseChunks(chunks)
	}
	return r, nil
}

// benchPlan is BenchRepeats when it is the plan of the file at path (a
// tensor-parallel sibling's dump.json is opened with the bench side's
// Config too, and must not be read with the bench file's plan).
func (cfg *Config) benchPlan(path string) *msprobe.Repeats {
	if cfg.BenchRepeats.Path() != path {
		return nil
	}
	return cfg.BenchRepeats
}

type fileBench struct {
	path   string
	known  *resolve.Entries // the entries, when read before (no skim)
	r      *msprobe.EntryReader
	offs   *offsets // shared with forks
	forked bool
	plan   *msprobe.Repeats // repeated keys of "data" (rare)
	ends   map[int]int64    // with a plan: where the bodies end that are not read up to the next offset
	skims  int              // times the file was skimmed (tests)
	// noStats: the rows are read without their statistics (Config.statsUnread)
	noStats bool
	chunks  *msprobe.Chunks // lends the readers' chunk memory (Config.chunks)
}

func (f *fileBench) skim(fn func(int, []byte, bool) error) error {
	if k := f.known; k != nil {
		f.known = nil   // replayed once
		var name []byte // reused, as a skim's name is
		for i := range k.Names.Len() {
			f.offs.add(k.Offsets[i])
			name = k.Names.Append(name[:0], i)
			if err := fn(i, name, k.Odd[i]); err != nil {
				return err
			}
		}
		return nil
	}
	f.skims++
	// With a plan every entry's end is given; an entry is read up to the
	// next one's offset (the reader stops after the body) unless that
	// offset is before the end (a body moved to a repeat's place) or far
	// past it (over a member skipped in between), so only those ends
	// are kept, and the last entry's.
	last, lastEnd := -1, int64(0)
	keep := func(next int64) {
		if last >= 0 && (next < lastEnd || next-lastEnd > maxEndGap) {
			if f.ends == nil {
				f.ends = map[int]int64{}
			}
			f.ends[last] = lastEnd
		}
		last = -1
	}
	_, err := msprobe.SkimWith(f.path, f.plan, func(e *msprobe.SkimEntry) error {
		keep(e.Offset)
		f.offs.add(e.Offset)
		if e.End != 0 {
			last, lastEnd = e.Index, e.End
		}
		return fn(e.Index, e.Name, e.Odd)
	})
	keep(-1)
	return err
}

// maxEndGap bounds the bytes between an entry's end and the next
// entry's offset that a read takes in rather than keep the end: the
// comma and the indentation between members.
const maxEndGap = 256

// knownFile is a bench dump.json whose entries were read before (a mapped
// compare's reading of both dumps, a view's skim): indexed from them,
// without a skim, unless the file is read with a plan of repeated keys or
// as a debug.json. The first index takes the entries (and lets them go
// once replayed); a later one skims the file.
type knownFile struct {
	path    string
	entries *resolve.Entries
}

func (p *knownFile) openBench(cfg *Config) (benchSource, error) {
	es := p.entries
	p.entries = nil
	if es == nil || cfg.Debug || cfg.benchPlan(p.path) != nil {
		return BenchFile(p.path).openBench(cfg)
	}
	noStats := cfg.statsUnread()
	r, err := newEntryReader(p.path, noStats, cfg.chunks)
	if err != nil {
		return nil, err
	}
	return &fileBench{path: p.path, known: es, r: r, offs: &offsets{}, noStats: noStats, chunks: cfg.chunks}, nil
}

// span is where entry i starts and its body ends (-1: the end of the
// file).
func (f *fileBench) span(i int) (off, end int64) {
	off, end = f.offs.span(i)
	if e, ok := f.ends[i]; ok {
		end = e
	}
	return off, end
}

func (f *fileBench) read(i int, fn func(*msprobe.Entry) error) error {
	off, end := f.span(i)
	// Lines are not kept: errors count theirs from the file's start.
	return f.r.Read(i, off, end, 0, fn)
}

// offsets are the entries' byte offsets, 2.5 bytes an entry outside the
// collected heap: blocks of offBlock entries, each the offset of its
// first and for each other the uint16 distance from the entry before,
// summed up to the entry asked for (entries are read about once each,
// so the sum costs less than a wider table would hold). The rare
// distance of 64 KB or more (a huge entry) or backwards (a repeated
// key's body moved, see SkimWith) is kept aside with its offset.
type offsets struct {
	blocks offheap.List[offsetBlock]
	cur    offsetBlock // the block being filled
	n      int
	last   int64 // the offset added last
	far    map[int]int64
}

const (
	offBlock = 16
	farStep  = 1<<16 - 1
)

type offsetBlock struct {
	base int64
	step [offBlock - 1]uint16
}

func (o *offsets) add(off int64) {
	if k := o.n % offBlock; k == 0 {
		if o.n > 0 {
			o.blocks.Add(o.cur)
		}
		o.cur = offsetBlock{base: off}
	} else if d := off - o.last; d >= 0 && d < farStep {
		o.cur.step[k-1] = uint16(d)
	} else {
		if o.far == nil {
			o.far = map[int]int64{}
		}
		o.far[o.n] = off
		o.cur.step[k-1] = farStep
	}
	o.last = off
	o.n++
}

func (o *offsets) len() int { return o.n }

// block is block b.
func (o *offsets) block(b int) offsetBlock {
	if b == o.blocks.Len() {
		return o.cur
	}
	return o.blocks.At(b)
}

// next is the offset of entry i (not a block's first) from that of
// the entry before, off, and its block's step to it.
func (o *offsets) next(i int, off int64, d uint16) int64 {
	if d == farStep {
		return o.far[i]
	}
	return off + int64(d)
}

// span is entry i's offset and the next entry's (-1 after the last).
func (o *offsets) span(i int) (off, end int64) {
	blk := o.block(i / offBlock)
	first := i &^ (offBlock - 1)
	off = blk.base
	for k := first + 1; k <= i; k++ {
		off = o.next(k, off, blk.step[k-first-1])
	}
	switch j := i + 1; {
	case j == o.n:
		end = -1
	case j%offBlock == 0:
		end = o.block(j / offBlock).base
	default:
		end = o.next(j, off, blk.step[j-first-1])
	}
	return off, end
}

func (o *offsets) release() {
	o.blocks.Release()
	*o = offsets{}
}

func (f *fileBench) md5() bool { return f.r.MD5() }

func (f *fileBench) rows(i int) (int, error) {
	off, end := f.span(i)
	return f.r.Rows(i, off, end, 0)
}

func (f *fileBench) fork() (benchSource, error) {
	r, err := newEntryReader(f.path, f.noStats, f.chunks)
	if err != nil {
		return nil, err
	}
	return &fileBench{path: f.path, r: r, offs: f.offs, forked: true, plan: f.plan, ends: f.ends, noStats: f.noStats, chunks: f.chunks}, nil
}

func (f *fileBench) close() {
	f.r.Close()
	if !f.forked {
		f.offs.release()
	}
}

// openBench holds a Source's entries in memory.
func (s Source) openBench(cfg *Config) (benchSource, error) {
	m := &memBench{debug: cfg.Debug}
	err := s(func(e *msprobe.Entry) error {
		c := *e
		c.Items = slices.Clone(e.Items)
		m.entries = append(m.entries, c)
		return nil
	})
	return m, err
}

type memBench struct {
	entries []msprobe.Entry
	debug   bool
}

func (m *memBench) skim(fn func(int, []byte, bool) error) error {
	for i := range m.entries {
		e := &m.entries[i]
		if err := fn(i, []byte(e.Name), !msprobe.NormalRows(e)); err != nil {
			return err
		}
	}
	return nil
}

func (m *memBench) read(i int, fn func(*msprobe.Entry) error) error {
	e := m.entries[i]
	return fn(&e)
}

func (m *memBench) md5() bool {
	for i := range m.entries {
		if m.entries[i].HasMD5 {
			return true
		}
	}
	return false
}

func (m *memBench) rows(i int) (int, error) { return len(m.entries[i].Items), nil }

func (m *memBench) fork() (benchSource, error) { return m, nil }

func (m *memBench) close() {}

// candidates appends to dst the ends of the prefixes of key that may be
// the key prefix of an entry holding a row keyed key (a row named as
// msprobe.NormalRow says): before each input, kwargs, output or
// parameters part, and through each parameters_grad or debug part and
// the part after it (debug.json: every dot-prefix and the key itself).
func candidates(dst []int, key string, debug bool) []int {
	if debug {
		for i := 0; i < len(key); i++ {
			if key[i] == '.' {
				dst = append(dst, i)
			}
		}
		return append(dst, len(key))
	}
	// The parts start after the dots, found eight bytes at a time; only
	// those whose first byte may begin a part named above are looked at.
	dst = candidateAt(dst, key, 0)
	for i := 0; i < len(key); i += 8 {
		var w uint64
		if i+8 <= len(key) {
			w = word8(key[i : i+8])
		} else if len(key) >= 8 {
			// The last eight bytes, shifted so that key[i] is the lowest
			// (the bytes above it zero: no dot).
			w = word8(key[len(key)-8:]) >> (8 * (i + 8 - len(key)))
		} else {
			for j := len(key) - 1; j >= i; j-- {
				w = w<<8 | uint64(key[j])
			}
		}
		for m := dots8(w); m != 0; m &= m - 1 {
			start := i + bits.TrailingZeros64(m)>>3 + 1
			if start < len(key) && partInitial(key[start]) {
				dst = candidateAt(dst, key, start)
			}
		}
	}
	return dst
}

// dots8 has the high bit of each byte of w that is a '.' (exact: no
// carry crosses bytes).
func dots8(w uint64) uint64 {
	const lows, highs = 0x7f7f7f7f7f7f7f7f, 0x8080808080808080
	x := w ^ 0x2e2e2e2e2e2e2e2e
	return ^((x&lows + lows) | x) & highs
}

// partInitial reports whether c may begin a part candidates looks for:
// d(ebug), i(nput), k(wargs), o(utput), p(arameters[_grad]).
func partInitial(c byte) bool {
	const set = 1<<('d'-'d') | 1<<('i'-'d') | 1<<('k'-'d') | 1<<('o'-'d') | 1<<('p'-'d')
	c -= 'd'
	return c < 64 && set>>c&1 != 0
}

// candidateAt appends the candidate ends the part of key starting at
// start gives (see candidates).
func candidateAt(dst []int, key string, start int) []int {
	rest := key[start:]
	n, around := 0, false // the part's length; whether it is parameters_grad or debug
	switch {              // (constant comparisons compile to loads, HasPrefix's to a call)
	case len(rest) >= 5 && rest[:5] == "input":
		n = 5
	case len(rest) >= 6 && (rest[:6] == "kwargs" || rest[:6] == "output"):
		n = 6
	case len(rest) >= 15 && rest[:15] == "parameters_grad" && (len(rest) == 15 || rest[15] == '.'):
		n, around = 15, true
	case len(rest) >= 10 && rest[:10] == "parameters":
		n = 10
	case len(rest) >= 5 && rest[:5] == "debug":
		n, around = 5, true
	default:
		return dst
	}
	end := start + n
	if end < len(key) && key[end] != '.' {
		return dst
	}
	if !around {
		if start > 0 {
			dst = append(dst, start-1)
		}
		return dst
	}
	dst = append(dst, end)
	if end < len(key) {
		if next := strings.IndexByte(key[end+1:], '.'); next >= 0 {
			return append(dst, end+1+next)
		}
		dst = append(dst, len(key))
	}
	return dst
}

// rowRef is a bench row: entry and row within it.
type rowRef struct{ entry, row int32 }

// parsedEntry is a bench entry parsed for the join.
type parsedEntry struct {
	name    string
	key     entryKey
	rows    []sideRow
	matched []bool
	odd     bool
	gen     int // the last lookup that used it
	// An entry of suffixIndexRows rows or more has them indexed by their
	// name past the entry name: the suffix's first row, and each row's
	// next row of the same suffix (-1: none); the NPU side asks for the
	// rows one by one, and scanning them all for each would be quadratic
	// (an optimizer's foreach call on a list of every parameter).
	bySuffix map[string]int32
	same     []int32
}

// suffixIndexRows is the least number of rows of an entry that has them
// indexed by suffix (parsedEntry); fewer are scanned.
const suffixIndexRows = 64

// indexSuffixes indexes e's rows by suffix when it has many. A row not
// named after its entry (an odd entry's, named by its data_name) has no
// suffix: no lookup by suffix finds it.
func (e *parsedEntry) indexSuffixes() {
	if len(e.rows) < suffixIndexRows {
		return
	}
	e.bySuffix = make(map[string]int32, len(e.rows))
	e.same = slices.Grow(e.same[:0], len(e.rows))[:len(e.rows)]
	for r := len(e.rows) - 1; r >= 0; r-- {
		s, named := strings.CutPrefix(e.rows[r].it.Name, e.name)
		if !named {
			e.same[r] = -1
			continue
		}
		next, ok := e.bySuffix[s]
		if !ok {
			next = -1
		}
		e.same[r] = next
		e.bySuffix[s] = int32(r)
	}
}

// withSuffix calls fn, in row order, with each row of e whose name is
// the entry name followed by suffix; fn returns false to stop.
func (e *parsedEntry) withSuffix(suffix string, fn func(r int32) bool) {
	if e.bySuffix == nil {
		for r := range e.rows {
			if s, named := strings.CutPrefix(e.rows[r].it.Name, e.name); named && s == suffix && !fn(int32(r)) {
				return
			}
		}
		return
	}
	r, ok := e.bySuffix[suffix]
	for ok && r >= 0 && fn(r) {
		r = e.same[r]
	}
}

// benchIndex is the bench side's index (see above) and, per pass, the
// parsed entries in use and the counts of the summary.
type benchIndex struct {
	src     benchSource
	cfg     *Config
	side    string // in errors: "bench" (or "target" for an index of the NPU side)
	n       int    // entries
	seed    maphash.Seed
	index   tagIndex   // key-prefix hash tag -> entries
	tags    []uint32   // each entry's key-prefix hash tag (0 when not indexed)
	frees   []func()   // release tags, lone, filter (outside the heap when large)
	lone    bitset     // indexed entries no other entry shares a tag with
	filter  tagFilter  // the indexed tags, to skip probing the table for absent ones
	renum   renumCalls // the renumbered backward entries' call indices
	odd     map[string][]rowRef
	oddEnts map[int32]*parsedEntry
	rows    int            // rows of odd entries
	names   *msprobe.Names // every entry's name as the skim gave it, when asked (see indexSides)

	// per pass
	cache    map[int32]*parsedEntry
	clock    []int32 // cached entries, oldest first
	fetched  bitset
	full     bitset       // entries left the cache with every row matched
	freePass func()       // releases fetched, full and skipped
	partial  partialRows  // entries left the cache with some rows matched
	benchRow int          // rows of the entries parsed so far
	matchedN int          // distinct bench rows matched
	cands    []int        // the candidate prefix ends of the key being looked up
	hashes   []uint64     // and their hashes
	none     uint8        // and those the table has nothing under, a bit each (from keyHashes)
	gen      int          // lookups so far
	spare    entryPool    // evicted entries, for reuse (the prefetcher's and lookahead's too)
	parser   *entryParser // the join's
	skipped  bitset       // entries msprobe skips, found so
	pf       *prefetcher  // this pass's, in file order
	ahead    *lookahead   // this pass's, in the join's order
	last     int32        // the bench entry row gave last (an NPU entry's rows mostly ask for one)
	near     int32        // the bench entry the join's lookups found last (see find)
	lastE    *parsedEntry // and where, while odd or cached (nil: none)
	pfMD5    bool
}

// cacheEntries bounds the parsed bench entries kept for the join.
const cacheEntries = 1024

type bitset []uint64

// newBitset is a bitset of n bits, outside the collected heap when
// large, and its release.
func newBitset(n int) (bitset, func()) { return offheap.Make[uint64]((n + 63) / 64) }

func (b bitset) get(i int32) bool { return b[i>>6]&(1<<(i&63)) != 0 }
func (b bitset) set(i int32)      { b[i>>6] |= 1 << (i & 63) }
func (b bitset) clear(i int32)    { b[i>>6] &^= 1 << (i & 63) }

// newBenchIndex skims the bench side and indexes it.
func newBenchIndex(bench Bench, cfg *Config, renumber bool) (*benchIndex, error) {
	return newSideIndex("bench", bench, cfg, renumber, false, nil)
}

// newSideIndex is newBenchIndex of a dump of either side, its errors
// naming the side ("bench", "target"); with names, it keeps every
// entry's name in ix.names.
func newSideIndex(side string, bench Bench, cfg *Config, renumber, names bool, stop *atomic.Bool) (*benchIndex, error) {
	src, err := bench.openBench(cfg)
	if err != nil {
		return nil, err
	}
	ix := &benchIndex{src: src, cfg: cfg, side: side, seed: maphash.MakeSeed(), odd: map[string][]rowRef{}, oddEnts: map[int32]*parsedEntry{}}
	if cfg.trace != nil && side == "bench" { // (a target index is built beside it)
		cfg.trace.seed = ix.seed
	}
	namer := newKeyNamer(renumber, cfg.Debug)
	defer namer.release()
	var odd []int32
	// The indexed entries' key-prefix hash tags (their top 32 bits) at
	// their entry numbers (0 for the others) and a bit each, put in the
	// table when the skim is done: 4 bytes and a bit an entry while the
	// table is built.
	var tags offheap.List[uint32]
	defer tags.Release()
	var isIndexed bitset
	indexed := 0
	if names {
		ix.names = &msprobe.Names{}
	}
	err = src.skim(func(i int, name []byte, isOdd bool) error {
		if stop != nil && stop.Load() {
			return errStopped
		}
		ix.n = i + 1
		if ix.names != nil {
			ix.names.Add(name)
		}
		// The name is read in place: entryKey copies what it keeps (a
		// renumbered prefix), the hash below reads it and is done.
		ek, ok := namer.entryKey(unsafe.String(unsafe.SliceData(name), len(name)))
		if !ok {
			return nil
		}
		if ek.renumbered {
			ix.renum.add(i, ek.call)
		}
		if isOdd {
			odd = append(odd, int32(i))
			return nil
		}
		for tags.Len() < i {
			tags.Add(0)
		}
		tags.Add(uint32(maphash.String(ix.seed, ek.prefix) >> 32))
		for len(isIndexed) <= i>>6 {
			isIndexed = append(isIndexed, 0)
		}
		isIndexed.set(int32(i))
		indexed++
		return nil
	})
	if err != nil {
		ix.close()
		return nil, err
	}
	ix.names.Done()
	if f, ok := src.(*fileBench); ok && cfg.trace != nil && side == "bench" {
		cfg.trace.skims += f.skims
	}
	var freeTags, freeLone, freeFilter func()
	ix.tags, freeTags = tags.Table()
	ix.lone, freeLone = newBitset(len(ix.tags))
	copy(ix.lone, isIndexed)
	ix.filter, freeFilter = newTagFilter(indexed)
	ix.frees = append(ix.frees, freeTags, freeLone, freeFilter)
	for i, tag := range ix.tags {
		if ix.lone.get(int32(i)) {
			ix.filter.add(tag)
		}
	}
	ix.index = newTagIndex(ix.tags, indexed, ix.lone)
	for _, i := range odd {
		e, err := ix.parse(i)
		if err != nil {
			ix.close()
			return nil, err
		}
		if e == nil {
			continue
		}
		e.odd = true
		ix.oddEnts[i] = e
		for r := range e.rows {
			ix.odd[e.rows[r].key] = append(ix.odd[e.rows[r].key], rowRef{i, int32(r)})
		}
	}
	return ix, nil
}

func (ix *benchIndex) close() {
	ix.stopAhead()
	ix.stopPrefetch()
	ix.src.close()
	ix.index.release()
	ix.releasePass()
	for _, free := range ix.frees {
		free()
	}
	ix.tags, ix.lone, ix.filter, ix.frees = nil, nil, nil, nil
	ix.renum.release()
	ix.partial.release()
}

// keyOf is the entryKey of entry i named name.
func (ix *benchIndex) keyOf(i int32, name string) entryKey {
	call, ok := ix.renum.call(int(i))
	if !ok {
		return entryKey{prefix: name}
	}
	op, cd, _ := msprobe.SplitName(name)
	return renumbered(name, op, cd, call)
}

// renumCalls are the call indices of the renumbered backward entries
// (entryKey.call), outside the collected heap: a bit an entry telling
// which are, with a count of those before every 64 entries, and 4
// bytes each of those (1.5 bits an entry and 4 bytes a renumbered one).
type renumCalls struct {
	words offheap.List[uint64] // the bits, whole words
	ranks offheap.List[uint32] // renumbered entries before each word
	word  uint64               // the word being filled
	start uint32               // renumbered entries before it
	calls offheap.List[uint32]
}

// add records entry i, after those added before, as renumbered to call.
func (r *renumCalls) add(i, call int) {
	for r.words.Len() < i>>6 {
		r.words.Add(r.word)
		r.ranks.Add(r.start)
		r.word, r.start = 0, uint32(r.calls.Len())
	}
	r.word |= 1 << (i & 63)
	r.calls.Add(uint32(call))
}

// call is entry i's renumbered call index (ok false: not renumbered).
func (r *renumCalls) call(i int) (call int, ok bool) {
	w := i >> 6
	var word uint64
	var rank uint32
	switch {
	case w < r.words.Len():
		word, rank = r.words.At(w), r.ranks.At(w)
	case w == r.words.Len():
		word, rank = r.word, r.start
	default:
		return 0, false
	}
	bit := uint64(1) << (i & 63)
	if word&bit == 0 {
		return 0, false
	}
	return int(r.calls.At(int(rank) + bits.OnesCount64(word&(bit-1)))), true
}

func (r *renumCalls) release() {
	r.words.Release()
	r.ranks.Release()
	r.calls.Release()
	*r = renumCalls{}
}

// parse reads entry i with its rows keyed; nil when msprobe skips it.
func (ix *benchIndex) parse(i int32) (*parsedEntry, error) {
	if ix.parser == nil {
		ix.parser = ix.newParser(ix.src)
	}
	return ix.parser.parse(i)
}

// entryParser parses bench entries with one reader; its callback is made
// once, so that a parse allocates nothing but the entry's strings.
type entryParser struct {
	ix   *benchIndex
	src  benchSource
	i    int32
	be   *parsedEntry
	fn   func(*msprobe.Entry) error
	fast bool // rows get fastStats: the parser is not the join's own
}

func (ix *benchIndex) newParser(src benchSource) *entryParser {
	p := &entryParser{ix: ix, src: src}
	p.fn = p.take
	return p
}

func (p *entryParser) take(e *msprobe.Entry) error {
	be := p.ix.spare.get(len(e.Items))
	be.name, be.key = e.Name, p.ix.keyOf(p.i, e.Name)
	for r := range e.Items {
		be.rows[r].set(&e.Items[r])
		if p.fast {
			be.rows[r].fast = fastStats(&e.Items[r])
		}
	}
	be.key.setKeys(e.Name, be.rows)
	be.indexSuffixes()
	p.be = be
	return nil
}

// parse reads entry i with its rows keyed; nil when msprobe skips it.
func (p *entryParser) parse(i int32) (*parsedEntry, error) {
	p.i, p.be = i, nil
	if err := p.src.read(int(i), p.fn); err != nil {
		return nil, fmt.Errorf("%s: %w", p.ix.side, err)
	}
	return p.be, nil
}

// entryPool recycles parsed entries that left the cache (or the
// prefetcher's hold); the join, the prefetcher and the lookahead share
// it.
type entryPool struct {
	mu   sync.Mutex
	free freeList[*parsedEntry]
}

// get is a parsedEntry for n rows, reusing a recycled one's memory.
func (p *entryPool) get(n int) *parsedEntry {
	p.mu.Lock()
	e, ok := p.free.take(n)
	p.mu.Unlock()
	if !ok {
		c := classCap(n)
		return &parsedEntry{rows: make([]sideRow, n, c), matched: make([]bool, n, c)}
	}
	*e = parsedEntry{rows: e.rows[:n], matched: e.matched[:n], same: e.same[:0]}
	clear(e.matched)
	return e
}

// put recycles e, which nothing refers to any more.
func (p *entryPool) put(e *parsedEntry) {
	clear(e.rows) // drop the strings for the collector
	e.name, e.key, e.bySuffix = "", entryKey{}, nil
	p.mu.Lock()
	p.free.give(e, min(cap(e.rows), cap(e.matched)), 256)
	p.mu.Unlock()
}

// releasePass frees a pass's bits.
func (ix *benchIndex) releasePass() {
	if ix.freePass != nil {
		ix.freePass()
		ix.fetched, ix.full, ix.skipped, ix.freePass = nil, nil, nil, nil
	}
}

// reset starts a pass; with prefetch, its entries are parsed ahead in
// file order on a goroutine of their own (for lookups that ask for most
// of them), else only those asked for are, unless a lookahead is started
// (lookAhead).
func (ix *benchIndex) reset(prefetch bool) {
	ix.stopAhead()
	ix.stopPrefetch() // (a list's or the last pass's: what it parsed goes with the pass)
	ix.cache, ix.lastE = map[int32]*parsedEntry{}, nil
	ix.clock = ix.clock[:0]
	ix.releasePass()
	words := (ix.n + 63) / 64
	var bits bitset
	bits, ix.freePass = newBitset(3 * 64 * words)
	ix.fetched, ix.full, ix.skipped = bits[:words:words], bits[words:2*words:2*words], bits[2*words:]
	ix.partial.release()
	ix.benchRow, ix.matchedN = 0, 0
	for _, e := range ix.oddEnts {
		clear(e.matched)
		ix.benchRow += len(e.rows)
	}
	if prefetch {
		ix.pf = ix.startPrefetch(nil)
	}
}

// prefetchOf has the entries of list (in increasing order) parsed ahead
// on a goroutine of their own, for lookups that ask for them in that
// order.
func (ix *benchIndex) prefetchOf(list []int32) {
	ix.stopPrefetch()
	ix.pf = ix.startPrefetch(list)
}

// entry returns bench entry i parsed: from the cache, from the
// prefetcher, or from the file.
func (ix *benchIndex) entry(i int32) (*parsedEntry, error) {
	if e := ix.lastE; e != nil && i == ix.last {
		e.gen = ix.gen
		return e, nil
	}
	if e := ix.oddEnts[i]; e != nil {
		return e, nil
	}
	if e := ix.cache[i]; e != nil {
		e.gen = ix.gen
		return e, nil
	}
	if ix.skipped.get(i) {
		return nil, nil
	}
	if e := ix.fromPrefetch(i); e != nil {
		return e, nil
	}
	ix.pf.take(i)
	ix.ahead.take(i)
	e, err := ix.parse(i)
	if err != nil || e == nil {
		if err == nil {
			ix.firstRead(i, nil)
		}
		return nil, err
	}
	switch {
	case ix.firstRead(i, e):
	case ix.full.get(i):
		for r := range e.matched {
			e.matched[r] = true
		}
	default:
		ix.partial.get(i, e.matched)
	}
	ix.cacheAdd(i, e)
	return e, nil
}

// firstRead records bench entry i, just parsed (nil: msprobe skips it),
// unless it was read before: it is fetched, and skipped or its rows
// counted. false when it was read before.
func (ix *benchIndex) firstRead(i int32, e *parsedEntry) bool {
	if ix.fetched.get(i) {
		return false
	}
	ix.fetched.set(i)
	if e == nil {
		ix.skipped.set(i)
	} else {
		ix.benchRow += len(e.rows)
	}
	return true
}

// cacheAdd puts a parsed entry in the cache, evicting the oldest ones the
// lookup under way has not used.
func (ix *benchIndex) cacheAdd(i int32, e *parsedEntry) {
	limit := ix.cacheLimit()
	for k := len(ix.clock); len(ix.clock) >= limit && k > 0; k-- {
		old := ix.clock[0]
		ix.clock = ix.clock[1:]
		if ix.cache[old].gen == ix.gen {
			ix.clock = append(ix.clock, old)
			continue
		}
		ix.evict(old)
	}
	e.gen = ix.gen
	ix.cache[i] = e
	ix.clock = append(ix.clock, i)
}

// cacheLimit is the number of parsed entries the cache keeps.
func (ix *benchIndex) cacheLimit() int {
	if ix.cfg.cache > 0 {
		return ix.cfg.cache
	}
	return cacheEntries
}

func (ix *benchIndex) evict(i int32) {
	e := ix.cache[i]
	delete(ix.cache, i)
	if e == ix.lastE {
		ix.lastE = nil
	}
	n := 0
	for _, m := range e.matched {
		if m {
			n++
		}
	}
	switch {
	case n == len(e.matched) && n > 0:
		ix.full.set(i)
	case n > 0:
		ix.partial.put(i, e.matched)
	}
	ix.spare.put(e)
}

// keyHashes are the candidate prefixes of a row's own key (sideRow.key)
// and their hashes, as the lookahead worked them out for the join's lookup
// (n: how many, plus one; 0: not worked out). none spares the join
// probing the table for what the lookahead found missing.
type keyHashes struct {
	n    uint8
	none uint8 // the hashes the table has nothing under, a bit each
	ends [maxKeyHashes]int32
	h    [maxKeyHashes]uint64
}

// maxKeyHashes bounds the prefixes keyHashes keeps: a key mostly has one.
const maxKeyHashes = 2

// hashKey works out key's candidate prefixes and their hashes into
// ix.cands and ix.hashes.
func (ix *benchIndex) hashKey(key string) {
	ix.cands = candidates(ix.cands[:0], key, ix.cfg.Debug)
	ix.hashes, ix.none = ix.hashes[:0], 0
	for _, end := range ix.cands {
		ix.hashes = append(ix.hashes, maphash.String(ix.seed, key[:end]))
	}
}

// lookup returns the bench rows keyed key, in bench file order; the
// result is valid until the next call.
func (ix *benchIndex) lookup(key string, dst []rowRef) ([]rowRef, error) {
	ix.hashKey(key)
	return ix.lookupHashed(key, dst)
}

// lookupRow is lookup of row n by key, with the prefixes the lookahead
// hashed when key is the row's own.
func (ix *benchIndex) lookupRow(n *sideRow, key string, dst []rowRef) ([]rowRef, error) {
	if kh := &n.ahead; kh.n > 0 && key == n.key {
		k := int(kh.n) - 1
		ix.cands, ix.hashes, ix.none = ix.cands[:0], ix.hashes[:0], kh.none
		for i := range k {
			ix.cands = append(ix.cands, int(kh.ends[i]))
			ix.hashes = append(ix.hashes, kh.h[i])
		}
	} else {
		ix.hashKey(key)
	}
	return ix.lookupHashed(key, dst)
}

// nearSpan is how many entries from the last one found find tries
// before the table.
const nearSpan = 4

// find is index.find of h, trying first the entries from *near on (NPU
// and bench entries come in nearly the same order), whose tags are read
// in order, where the table's slot is mostly a cache miss: an entry
// there with h's tag, that no other entry shares, is all the table would
// give. The filter then spares probing the table for most absent tags.
// *near becomes the last entry found.
func (ix *benchIndex) find(h uint64, near *int32, fn func(n uint32) bool) {
	tag := uint32(h >> 32)
	for j := *near; j < *near+nearSpan && int(j) < len(ix.tags); j++ {
		if ix.tags[j] == tag && ix.lone.get(j) {
			*near = j
			fn(uint32(j))
			return
		}
	}
	if !ix.filter.has(tag) {
		return
	}
	ix.index.find(tag, func(n uint32) bool {
		*near = int32(n)
		return fn(n)
	})
}

// lookupHashed is lookup of key with its prefixes in ix.cands and
// ix.hashes.
func (ix *benchIndex) lookupHashed(key string, dst []rowRef) ([]rowRef, error) {
	dst = dst[:0]
	ix.gen++
	for c, end := range ix.cands {
		if ix.none>>c&1 != 0 {
			continue
		}
		pre := key[:end]
		var err error
		ix.find(ix.hashes[c], &ix.near, func(n uint32) bool {
			i := int32(n)
			var e *parsedEntry
			if e, err = ix.entry(i); err != nil {
				return false
			}
			if e == nil || e.key.prefix != pre {
				return true
			}
			e.withSuffix(key[end:], func(r int32) bool {
				dst = append(dst, rowRef{i, r})
				return true
			})
			return true
		})
		if err != nil {
			return nil, err
		}
	}
	if len(ix.odd) > 0 { // (none in ordinary dumps)
		dst = append(dst, ix.odd[key]...)
	}
	if len(dst) > 1 {
		slices.SortFunc(dst, func(a, b rowRef) int {
			if a.entry != b.entry {
				return int(a.entry - b.entry)
			}
			return int(a.row - b.row)
		})
	}
	return dst, nil
}

// row returns bench row r, which lookup returned.
func (ix *benchIndex) row(r rowRef) (*parsedEntry, *sideRow) {
	e := ix.lastE
	if e == nil || r.entry != ix.last {
		if e = ix.oddEnts[r.entry]; e == nil {
			e = ix.cache[r.entry]
		}
		ix.last, ix.lastE = r.entry, e
	}
	return e, &e.rows[r.row]
}

// match marks bench row r matched.
func (ix *benchIndex) match(r rowRef) {
	e, _ := ix.row(r)
	if !e.matched[r.row] {
		e.matched[r.row] = true
		ix.matchedN++
	}
}

// finish counts the rows of the bench entries no NPU row asked for
// (checking them as a parse does) and fills the summary's bench counts.
// Under -da, which read and counted the whole file (daRank.benchTotal),
// they are its count.
func (ix *benchIndex) finish(sum *Summary) error {
	ix.stopAhead()
	ix.stopPrefetch()
	// -da read the whole file already, and counted its rows.
	if rows, md5, ok := ix.cfg.da.benchTotal(); ok && rows >= ix.benchRow {
		sum.BenchRows = rows
		sum.BenchUnmatched = rows - ix.matchedN
		sum.benchMD5 = md5 || ix.src.md5() || ix.pfMD5
		return nil
	}
	rows, md5, err := ix.countUnread()
	if err != nil {
		return err
	}
	ix.benchRow += rows
	sum.BenchRows = ix.benchRow
	sum.BenchUnmatched = ix.benchRow - ix.matchedN
	sum.benchMD5 = ix.src.md5() || md5 || ix.pfMD5
	return nil
}

// countUnread stops the pass's lookahead and prefetcher and counts the
// rows of the entries not read so far, checking them as a parse does:
// its error is the first of those entries' in file order, which is the
// file's first, since the entries read before parsed.
func (ix *benchIndex) countUnread() (rows int, md5 bool, err error) {
	ix.stopAhead()
	ix.stopPrefetch()
	// Skipped entries are read too: msprobe finds md5 keys in them.
	left := func(i int32) bool { return !ix.fetched.get(i) && ix.oddEnts[i] == nil }
	n := 0
	for i := int32(0); i < int32(ix.n); i++ {
		if left(i) {
			n++
		}
	}
	todo, free := offheap.Make[int32](n)
	defer free()
	todo = todo[:0]
	for i := int32(0); i < int32(ix.n); i++ {
		if left(i) {
			todo = append(todo, i)
		}
	}
	return countRows(ix.src, ix.side, todo)
}

// countRows counts the rows of entries (in file order), on as many
// goroutines as there are cores, each with its own reader, taking the
// entries in batches as they go (entries differ in size). The batches are
// long runs, so that the readers seldom read the same part of the file.
// The error is the first in file order.
func countRows(src benchSource, side string, entries []int32) (rows int, md5 bool, err error) {
	workers := max(1, min(runtime.GOMAXPROCS(0), len(entries)/256))
	batch := min(max(len(entries)/(8*workers), 64), 4096)
	type result struct {
		rows int
		md5  bool
		at   int32 // the entry err is about
		err  error
	}
	res := make([]result, workers)
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			r := &res[w]
			s := src
			if w > 0 {
				var err error
				if s, err = src.fork(); err != nil {
					return // the others take its batches
				}
				defer s.close()
			}
			// A worker stops at its error: the batches before it were
			// taken before, and are counted to their end or to an
			// error of their own.
			for r.err == nil {
				k := int(next.Add(int64(batch))) - batch
				if k >= len(entries) {
					break
				}
				for _, i := range entries[k:min(k+batch, len(entries))] {
					n, err := s.rows(int(i))
					if err != nil {
						r.at, r.err = i, fmt.Errorf("%s: %w", side, err)
						break
					}
					r.rows += n
				}
			}
			r.md5 = s.md5()
		})
	}
	wg.Wait()
	first := -1
	for w, r := range res {
		if r.err != nil && (first < 0 || r.at < res[first].at) {
			first = w
		}
		rows += r.rows
		md5 = md5 || r.md5
	}
	if first >= 0 {
		return 0, false, res[first].err
	}
	return rows, md5, nil
}
