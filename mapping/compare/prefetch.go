package compare

import (
	"hash/maphash"
	"slices"
	"sync/atomic"
)

// Bench entries are parsed ahead of their lookups by a goroutine of their
// own, so that the join goroutine does not carry the bench side's parsing
// alone, in one of two ways:
//   - a prefetcher parses every entry in file order, for lookups that ask
//     for most entries in about file order (a tensor-parallel sibling's);
//     the lookups take its entries into the cache when they miss one, and
//     an entry they parse themselves is marked taken and skipped;
//   - a planner (below) parses what the table's join will ask for, in the
//     order it asks.

// prefetchAhead bounds the entries parsed ahead and not yet taken.
const prefetchAhead = 256

// prefetchKeep bounds the prefetched entries held until asked for.
const prefetchKeep = 1024

// prefetchWait is how far ahead of the last prefetched entry the join
// waits for the prefetcher rather than parsing an entry itself.
const prefetchWait = 64

type prefetcher struct {
	ch    chan prefetched
	stop  chan struct{}
	done  chan struct{}
	taken []atomic.Uint64 // entries the join parses itself
	held  map[int32]*parsedEntry
	order []int32 // held, oldest first
	last  int32   // the last entry received (join side)
	ended bool    // ch closed (join side)
	md5   bool    // an entry the prefetcher read had an md5
	err   error
}

type prefetched struct {
	i   int32
	e   *parsedEntry // nil: msprobe skips the entry
	err error
}

// startPrefetch starts the prefetcher of a pass (nil when the bench side
// cannot be forked).
func (ix *benchIndex) startPrefetch() *prefetcher {
	src, err := ix.src.fork()
	if err != nil {
		return nil
	}
	pf := &prefetcher{ch: make(chan prefetched, prefetchAhead), stop: make(chan struct{}), done: make(chan struct{}),
		taken: make([]atomic.Uint64, (ix.n+63)/64), last: -1, held: map[int32]*parsedEntry{}}
	go func() {
		defer close(pf.done)
		defer close(pf.ch)
		if src != ix.src {
			defer src.close()
		}
		defer func() { pf.md5 = src.md5() }()
		p := ix.newParser(src)
		for i := int32(0); i < int32(ix.n); i++ {
			if ix.oddEnts[i] != nil || pf.taken[i>>6].Load()&(1<<(i&63)) != 0 {
				continue
			}
			e, err := p.parse(i)
			select {
			case pf.ch <- prefetched{i, e, err}:
			case <-pf.stop:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return pf
}

// take marks entry i parsed by the join.
func (pf *prefetcher) take(i int32) {
	if pf != nil {
		pf.taken[i>>6].Or(1 << (i & 63))
	}
}

// receive takes a prefetched entry into the index (join side).
func (ix *benchIndex) receive(p prefetched) {
	pf := ix.pf
	pf.last = p.i
	if p.err != nil {
		pf.err = p.err
		return
	}
	if ix.fetched.get(p.i) {
		return // the join parsed it meanwhile
	}
	ix.fetched.set(p.i)
	if p.e == nil {
		return
	}
	ix.benchRow += len(p.e.rows)
	// Held apart from the cache until asked for, so that entries no NPU
	// row asks for (counted already) do not push out those in use.
	if len(pf.order) >= prefetchKeep {
		if e := pf.held[pf.order[0]]; e != nil {
			delete(pf.held, pf.order[0])
			ix.spare.put(e)
		}
		pf.order = pf.order[1:]
	}
	pf.held[p.i] = p.e
	pf.order = append(pf.order, p.i)
}

// takeHeld moves a prefetched entry into the cache.
func (ix *benchIndex) takeHeld(i int32) *parsedEntry {
	pf := ix.pf
	if pf == nil {
		return nil
	}
	e := pf.held[i]
	if e != nil {
		delete(pf.held, i) // its place in order expires harmlessly
		ix.cacheAdd(i, e)
	}
	return e
}

// fromPrefetch takes what the prefetcher has ready and returns entry i if
// it came; it waits for the prefetcher when i is a little ahead of it.
func (ix *benchIndex) fromPrefetch(i int32) (*parsedEntry, error) {
	pf := ix.pf
	if pf == nil {
		return nil, nil
	}
	if e := ix.takeHeld(i); e != nil {
		return e, nil
	}
	for !pf.ended && pf.err == nil {
		var p prefetched
		var ok bool
		select {
		case p, ok = <-pf.ch:
		default:
			if i <= pf.last || i-pf.last > prefetchWait {
				return nil, nil
			}
			p, ok = <-pf.ch
		}
		if !ok {
			pf.ended = true
			break
		}
		ix.receive(p)
		if e := ix.takeHeld(i); e != nil {
			return e, nil
		}
		if p.i > i {
			break // it skipped i
		}
	}
	return nil, pf.err
}

// stopPrefetch stops the prefetcher and takes what it had parsed.
func (ix *benchIndex) stopPrefetch() error {
	pf := ix.pf
	if pf == nil {
		return nil
	}
	ix.pf = nil
	select {
	case <-pf.stop:
	default:
		close(pf.stop)
	}
	for p := range pf.ch {
		if pf.err == nil && ix.cache != nil {
			ix.pf = pf
			ix.receive(p)
			ix.pf = nil
		}
	}
	<-pf.done
	ix.pfMD5 = ix.pfMD5 || pf.md5
	return pf.err
}

// The planner takes the NPU entries on their way to the table's join,
// works out which bench entries their rows will look up (planKey, the
// index's tags), parses each of them once, in the order the join will ask
// for them, and hands each on just before the NPU entry that asks for it.
// The join's requests drift away from file order as a dump goes on (API
// call counters differ between frameworks), which a prefetcher's hold of
// fixed size cannot follow; the planner needs no hold. Nothing is parsed
// that no row asks for (finish only counts those rows), and the join
// parses only what the plan missed (rows a fused call looks up by other
// names, entries the cache let go).

// planPerEntry bounds the bench entries planned for one NPU entry.
const planPerEntry = cacheEntries / 2

// planKey gives the key the join will look an NPU row up by (see
// joinKey), the suffix checks of a deferred data mapping answered by has;
// "" when it looks nothing up.
type planKey func(n *sideRow, buf *[]byte, has suffixHas) string

// planner is a pass's planner.
type planner struct {
	ix      *benchIndex
	key     planKey
	out     chan npuEntry
	stop    chan struct{}
	done    chan struct{}
	taken   []atomic.Uint64 // entries the join parses itself
	planned bitset          // planner side
	p       *entryParser
	cands   []int
	buf     []byte
	looked  []uint64 // key-prefix hashes looked up for the entry under way
	sent    int      // bench entries planned for it
	md5     bool
}

// planAhead starts the planner of a pass over the NPU entries in and
// returns what the join reads instead: the same entries, each after the
// bench entries parsed for it (npuEntry.ahead). Without a fork of the
// bench side, in is returned as it is.
func (ix *benchIndex) planAhead(in <-chan npuEntry, key planKey) <-chan npuEntry {
	src, err := ix.src.fork()
	if err != nil {
		return in
	}
	pl := &planner{ix: ix, key: key, out: make(chan npuEntry, prefetchAhead), stop: make(chan struct{}), done: make(chan struct{}),
		taken: make([]atomic.Uint64, (ix.n+63)/64), planned: make(bitset, (ix.n+63)/64)}
	pl.p = ix.newParser(src)
	ix.plan = pl
	go func() {
		defer close(pl.done)
		defer close(pl.out)
		if src != ix.src {
			defer src.close()
		}
		defer func() { pl.md5 = src.md5() }()
		for e := range in {
			if !pl.entry(e.rows) {
				return
			}
			select {
			case pl.out <- e:
			case <-pl.stop:
				return
			}
		}
	}()
	return pl.out
}

// entry parses ahead what the rows of one NPU entry will ask for; false
// when the planner is stopped. It plans at most planPerEntry bench
// entries an NPU entry (the join parses the rest of a huge one itself),
// so that the entries parsed ahead fit in the join's cache.
func (pl *planner) entry(rows []sideRow) bool {
	pl.looked, pl.sent = pl.looked[:0], 0
	for r := range rows {
		if pl.sent >= planPerEntry {
			return true
		}
		key := pl.key(&rows[r], &pl.buf, pl)
		if key == "" {
			continue
		}
		pl.cands = candidates(pl.cands[:0], key, pl.ix.cfg.Debug)
		for _, end := range pl.cands {
			h := maphash.String(pl.ix.seed, key[:end])
			// Rows in a row mostly share their prefixes: the last few
			// are not looked up again (the others' entries are planned
			// already, and found again cheaply).
			if slices.Contains(pl.looked[max(0, len(pl.looked)-8):], h) {
				continue
			}
			pl.looked = append(pl.looked, h)
			ok := true
			pl.ix.index.find(h, func(n uint32) bool {
				ok = pl.parse(int32(n))
				return ok && pl.sent < planPerEntry
			})
			if !ok {
				return false
			}
		}
	}
	return true
}

// has plans the bench entry a deferred data mapping's suffix check will
// read (suffixHas); it answers yes, so that the row's key is planned too.
func (pl *planner) has(i int32, _ string) bool {
	pl.parse(i)
	return true
}

// parse parses entry i and hands it on, unless it was planned, the join
// took it or the index keeps it; false when the planner is stopped.
func (pl *planner) parse(i int32) bool {
	ix := pl.ix
	if i < 0 || int(i) >= ix.n || pl.planned.get(i) || ix.oddEnts[i] != nil || pl.taken[i>>6].Load()&(1<<(i&63)) != 0 {
		return true
	}
	pl.planned.set(i)
	e, err := pl.p.parse(i)
	if err != nil {
		return true // the join reads it, if a row asks for it, and reports the error where it would
	}
	select {
	case pl.out <- npuEntry{ahead: prefetched{i: i, e: e}, isAhead: true}:
		pl.sent++
		return true
	case <-pl.stop:
		if e != nil {
			ix.spare.put(e)
		}
		return false
	}
}

// take marks entry i parsed by the join.
func (pl *planner) take(i int32) {
	if pl != nil {
		pl.taken[i>>6].Or(1 << (i & 63))
	}
}

// takeAhead takes a bench entry the planner parsed into the cache (join
// side).
func (ix *benchIndex) takeAhead(p prefetched) {
	if ix.fetched.get(p.i) { // the join parsed it meanwhile
		if p.e != nil {
			ix.spare.put(p.e)
		}
		return
	}
	ix.fetched.set(p.i)
	if p.e == nil {
		return
	}
	ix.benchRow += len(p.e.rows)
	ix.cacheAdd(p.i, p.e)
}

// stopPlan stops the planner, dropping what it parsed and the join did
// not take.
func (ix *benchIndex) stopPlan() {
	pl := ix.plan
	if pl == nil {
		return
	}
	ix.plan = nil
	select {
	case <-pl.stop:
	default:
		close(pl.stop)
	}
	for e := range pl.out {
		if e.isAhead && e.ahead.e != nil {
			ix.spare.put(e.ahead.e)
		}
	}
	<-pl.done
	ix.pfMD5 = ix.pfMD5 || pl.md5
}
