package compare

import (
	"hash/maphash"
	"slices"
)

// The lookahead takes the NPU entries on their way to the table's join,
// works out which bench entries their rows will look up (aheadKey, the
// index's tags), parses each of them once, in the order the join will ask
// for them, and hands each on just before the NPU entry that asks for it.
// The join's requests drift away from file order as a dump goes on (API
// call counters differ between frameworks), which a prefetcher's hold of
// fixed size cannot follow; the lookahead needs no hold. Entries no row
// asks for are not parsed (finish only counts their rows), and the join
// parses only what the lookahead missed: rows a fused call looks up by
// other names, entries its cache let go, the rest of an NPU entry that
// asks for more than aheadPerEntry.

// aheadQueue bounds the NPU and bench entries between the lookahead and
// the join; they go in batches of at most aheadBatch.
const (
	aheadQueue = 128
	aheadBatch = 16
)

// aheadPerEntry bounds the bench entries parsed ahead for one NPU entry,
// so that they fit in the join's cache with those of the lookup before.
const aheadPerEntry = cacheEntries / 2

// aheadKey gives the key the join will look an NPU row up by (see
// joinKey), the suffix checks of a deferred data mapping answered by has;
// "" when it looks nothing up.
type aheadKey func(n *sideRow, buf *[]byte, has suffixHas) string

// lookahead is a pass's lookahead.
type lookahead struct {
	ix      *benchIndex
	key     aheadKey
	most    int // bench entries parsed ahead an NPU entry
	out     chan []npuEntry
	cur     []npuEntry // the batch under way
	free    batchPool
	stop    chan struct{}
	done    chan struct{}
	taken   takenBits // entries the join parses itself
	parsed  bitset    // lookahead side
	release func()    // frees taken and parsed, once the goroutine is done
	p       *entryParser
	cands   []int
	hashes  []uint64 // of the key prefixes cands ends
	buf     []byte
	looked  [8]uint64 // the last key-prefix hashes looked up for the entry under way
	none    uint8     // the looked hashes the table has nothing under, a bit each
	nLook   int
	sent    int   // bench entries parsed ahead for it
	near    int32 // the bench entry found last (see benchIndex.find)
	md5     bool
	last    entryPair
}

// lookAhead starts the lookahead of a pass over the NPU entries in and
// returns what the join reads instead: the same entries, each after the
// bench entries parsed for it (npuEntry.isAhead). Without a fork of the
// bench side, in is returned as it is.
func (ix *benchIndex) lookAhead(in <-chan []npuEntry, free batchPool, key aheadKey) <-chan []npuEntry {
	ix.stopAhead()
	la := &lookahead{ix: ix, key: key, free: free, most: max(1, min(aheadPerEntry, ix.cacheLimit()/2)),
		out: make(chan []npuEntry, aheadQueue/aheadBatch), stop: make(chan struct{}), done: make(chan struct{})}
	var freeTaken, freeParsed func()
	la.taken, freeTaken = newTakenBits(ix.n)
	la.parsed, freeParsed = newBitset(ix.n)
	la.release = func() { freeTaken(); freeParsed() }
	finished := func() {
		close(la.out)
		close(la.done)
	}
	if !ix.goAhead(&la.md5, finished, func(p *entryParser) {
		la.p = p
		for batch := range in {
			for _, e := range batch {
				if !la.entry(e.rows) || !la.send(e) {
					la.drop()
					return
				}
			}
			la.free.put(batch)
			// Nothing more to read yet: the join gets what there is.
			if len(in) == 0 && !la.flush() {
				la.drop()
				return
			}
		}
		if !la.flush() {
			la.drop()
		}
	}) {
		la.release()
		return in
	}
	ix.ahead = la
	return la.out
}

// entry parses ahead what the rows of one NPU entry will ask for, at most
// la.most entries; false when the lookahead is stopped.
func (la *lookahead) entry(rows []sideRow) bool {
	la.nLook, la.sent = 0, 0
	for r := range rows {
		if la.sent >= la.most {
			return true
		}
		row := &rows[r]
		key := la.key(row, &la.buf, la)
		if key == "" {
			continue
		}
		la.cands = candidates(la.cands[:0], key, la.ix.cfg.Debug)
		la.hashes = la.hashes[:0]
		for _, end := range la.cands {
			la.hashes = append(la.hashes, maphash.String(la.ix.seed, key[:end]))
		}
		// The join looks the row up by the same key: when it is the
		// row's own (no mapping; a mapped key is built in a buffer),
		// it takes the hashes, and which of them the table has nothing
		// under.
		kh := &row.ahead
		own := len(la.cands) <= maxKeyHashes && key == row.key
		if own {
			kh.n, kh.none = uint8(len(la.cands)+1), 0
			for c, end := range la.cands {
				kh.ends[c], kh.h[c] = int32(end), la.hashes[c]
			}
		}
		for c := range la.cands {
			if la.sent >= la.most {
				return true
			}
			h := la.hashes[c]
			// The rows of an entry mostly share their prefixes: the
			// last few are not looked up again (the others' entries
			// are parsed already, and found again cheaply).
			if k := slices.Index(la.looked[:min(la.nLook, len(la.looked))], h); k >= 0 {
				if own && la.none>>k&1 != 0 {
					kh.none |= 1 << c
				}
				continue
			}
			k := la.nLook % len(la.looked)
			la.looked[k] = h
			la.none &^= 1 << k
			la.nLook++
			ok, found := true, false
			la.ix.find(h, &la.near, func(n uint32) bool {
				found = true
				if la.sent >= la.most {
					return false
				}
				ok = la.parse(int32(n))
				return ok
			})
			if !ok {
				return false
			}
			if !found { // the table was probed to its end
				la.none |= 1 << k
				if own {
					kh.none |= 1 << c
				}
			}
		}
	}
	return true
}

// has parses ahead the bench entry a deferred data mapping's suffix check
// will read (suffixHas); it answers yes, so that the row's key is looked
// ahead too.
func (la *lookahead) has(i int32, _ string) bool {
	if la.sent < la.most {
		la.parse(i)
	}
	return true
}

func (la *lookahead) lastPair() *entryPair { return &la.last }

// parse parses entry i and hands it on, unless it was parsed ahead
// before, the join took it or the index keeps it; false when the
// lookahead is stopped.
func (la *lookahead) parse(i int32) bool {
	ix := la.ix
	if i < 0 || int(i) >= ix.n || la.parsed.get(i) || ix.oddEnts[i] != nil || la.taken.has(i) {
		return true
	}
	la.parsed.set(i)
	e, err := la.p.parse(i)
	if err != nil {
		return true // the join reads it, if a row asks for it, and reports the error where it would
	}
	if !la.send(npuEntry{ahead: e, aheadAt: i, isAhead: true}) {
		return false
	}
	la.sent++
	return true
}

// send hands e on to the join, in the batch under way; false when the
// lookahead is stopped.
func (la *lookahead) send(e npuEntry) bool {
	if la.cur == nil {
		la.cur = la.free.get()
	}
	la.cur = append(la.cur, e)
	return len(la.cur) < aheadBatch || la.flush()
}

// flush hands the batch under way on to the join; false when the
// lookahead is stopped.
func (la *lookahead) flush() bool {
	b := la.cur
	if len(b) == 0 {
		return true
	}
	if !sendBatch(la.out, b, la.stop) {
		return false
	}
	la.cur = nil
	return true
}

// drop gives back the bench entries of the batch under way, the
// lookahead being stopped.
func (la *lookahead) drop() {
	for _, e := range la.cur {
		if e.isAhead && e.ahead != nil {
			la.ix.spare.put(e.ahead)
		}
	}
	la.cur = nil
}

// take marks entry i parsed by the join.
func (la *lookahead) take(i int32) {
	if la != nil {
		la.taken.set(i)
	}
}

// takeAhead takes bench entry i, parsed ahead (nil: msprobe skips it),
// into the cache (join side). No lookup is under way: each entry taken
// starts a generation, so that it may push out any entry before it (the
// oldest first: an NPU entry's at most half the cache stay).
func (ix *benchIndex) takeAhead(i int32, e *parsedEntry) {
	if !ix.firstRead(i, e) { // the join parsed it meanwhile
		if e != nil {
			ix.spare.put(e)
		}
		return
	}
	if e == nil {
		return
	}
	ix.gen++
	ix.cacheAdd(i, e)
}

// stopAhead stops the lookahead, dropping what it parsed and the join did
// not take.
func (ix *benchIndex) stopAhead() {
	la := ix.ahead
	if la == nil {
		return
	}
	ix.ahead = nil
	close(la.stop)
	for b := range la.out {
		for _, e := range b {
			if e.isAhead && e.ahead != nil {
				ix.spare.put(e.ahead)
			}
		}
	}
	<-la.done
	la.release()
	ix.pfMD5 = ix.pfMD5 || la.md5
}
