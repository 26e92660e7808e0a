package compare

import (
	"sync/atomic"

	"github.com/layermap/layermap/printparse/offheap"
)

// Bench entries are parsed ahead of their lookups by a goroutine of their
// own, so that the join goroutine does not carry the bench side's parsing
// alone, in one of three ways:
//   - the table's join has a lookahead (lookahead.go) parse what its rows
//     will ask for, in the order they ask;
//   - a tensor-parallel sibling's index, whose lookups cannot be known
//     ahead (only rows whose shapes differ look one up), has a prefetcher
//     parse every entry in file order. The lookups take its entries into
//     the cache when they miss one; an entry they parse themselves is
//     marked taken and skipped;
//   - the N:1 detection's index of the NPU side has a prefetcher parse the
//     entries it will ask for first (prefetchOf), a list in file order,
//     taken likewise.
//
// A prefetcher reports no error: it stops at an entry it cannot parse,
// which the lookup that asks for it parses itself, and an entry no
// lookup asks for is checked when the pass ends (benchIndex.countUnread).
// Which error the lookups meet thus depends on their order alone, never
// on how far the prefetcher got.

// takenBits are the entries the join parses itself, which a goroutine
// parsing ahead of it skips: a bit each, set by the join as it goes.
type takenBits []atomic.Uint64

// newTakenBits makes the bits of n entries, outside the collected heap
// when large, and gives their release.
func newTakenBits(n int) (takenBits, func()) { return offheap.Make[atomic.Uint64]((n + 63) / 64) }

func (t takenBits) set(i int32)      { t[i>>6].Or(1 << (i & 63)) }
func (t takenBits) has(i int32) bool { return t[i>>6].Load()&(1<<(i&63)) != 0 }

// prefetchAhead bounds the entries parsed ahead and not yet taken.
const prefetchAhead = 256

// prefetchKeep bounds the prefetched entries held until asked for.
const prefetchKeep = 1024

// prefetchWait is how far ahead of the last prefetched entry the join
// waits for the prefetcher rather than parsing an entry itself.
const prefetchWait = 64

type prefetcher struct {
	ch      chan prefetched
	stop    chan struct{}
	done    chan struct{}
	taken   takenBits // entries the join parses itself
	release func()    // frees taken, once the goroutine is done
	held    map[int32]*parsedEntry
	order   []int32 // held, oldest first
	last    int32   // the last entry received (join side)
	ended   bool    // ch closed (join side)
	md5     bool    // an entry the prefetcher read had an md5
}

type prefetched struct {
	i int32
	e *parsedEntry // nil: msprobe skips the entry
}

// startPrefetch starts the prefetcher of a pass over the entries of list,
// in increasing order, or over every entry when list is nil (nil when
// the bench side cannot be forked).
func (ix *benchIndex) startPrefetch(list []int32) *prefetcher {
	pf := &prefetcher{ch: make(chan prefetched, prefetchAhead), stop: make(chan struct{}), done: make(chan struct{}),
		last: -1, held: map[int32]*parsedEntry{}}
	pf.taken, pf.release = newTakenBits(ix.n)
	finished := func() {
		close(pf.ch)
		close(pf.done)
	}
	if !ix.goAhead(&pf.md5, finished, func(p *entryParser) {
		n := ix.n
		if list != nil {
			n = len(list)
		}
		for k := range n {
			i := int32(k)
			if list != nil {
				i = list[k]
			}
			if ix.oddEnts[i] != nil || pf.taken.has(i) {
				continue
			}
			e, err := p.parse(i)
			if err != nil {
				return // left to a lookup, or to the pass's end
			}
			select {
			case pf.ch <- prefetched{i, e}:
			case <-pf.stop:
				return
			}
		}
	}) {
		pf.release()
		return nil
	}
	return pf
}

// goAhead runs body, the work of a prefetcher or a lookahead, on a
// goroutine of its own with a parser on a fork of the bench side. When
// body returns, *md5 tells whether an entry the fork read had an md5, the
// fork is closed, and finished is called (it closes the goroutine's
// channels). false when the bench side cannot be forked.
func (ix *benchIndex) goAhead(md5 *bool, finished func(), body func(p *entryParser)) bool {
	src, err := ix.src.fork()
	if err != nil {
		return false
	}
	p := ix.newParser(src)
	p.fast = true // off the join's goroutine
	go func() {
		defer finished()
		if src != ix.src {
			defer src.close()
		}
		defer func() { *md5 = src.md5() }()
		body(p)
	}()
	return true
}

// take marks entry i parsed by the join.
func (pf *prefetcher) take(i int32) {
	if pf != nil {
		pf.taken.set(i)
	}
}

// receive takes a prefetched entry into the index (join side).
func (ix *benchIndex) receive(p prefetched) {
	pf := ix.pf
	pf.last = p.i
	if !ix.firstRead(p.i, p.e) || p.e == nil {
		return // the join parsed it meanwhile, or msprobe skips it
	}
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
// it came (nil: the caller parses it); it waits for the prefetcher when i
// is a little ahead of it.
func (ix *benchIndex) fromPrefetch(i int32) *parsedEntry {
	pf := ix.pf
	if pf == nil {
		return nil
	}
	if e := ix.takeHeld(i); e != nil {
		return e
	}
	for !pf.ended {
		var p prefetched
		var ok bool
		select {
		case p, ok = <-pf.ch:
		default:
			if i <= pf.last || i-pf.last > prefetchWait {
				return nil
			}
			p, ok = <-pf.ch
		}
		if !ok {
			pf.ended = true
			break
		}
		ix.receive(p)
		if e := ix.takeHeld(i); e != nil {
			return e
		}
		if p.i > i {
			break // it skipped i
		}
	}
	return nil
}

// stopPrefetch stops the prefetcher and takes what it had parsed.
func (ix *benchIndex) stopPrefetch() {
	pf := ix.pf
	if pf == nil {
		return
	}
	ix.pf = nil
	select {
	case <-pf.stop:
	default:
		close(pf.stop)
	}
	for p := range pf.ch {
		if ix.cache != nil {
			ix.pf = pf
			ix.receive(p)
			ix.pf = nil
		}
	}
	<-pf.done
	pf.release()
	ix.pfMD5 = ix.pfMD5 || pf.md5
}
