// Package nametable maps names to int32 ids without keeping the names,
// for the large sets of entry names a dump has: 96 bits of two hashes of
// each name (two names are taken for one only if all agree: odds of
// 2^-96 a pair). Names are set while a file is read, a later set of a
// name winning; Done then groups them by bucket for lookups that read one
// or two cache lines (an ordered table, NewOrdered, keeps them in the
// order set, for lookups by Next in about that order). Memory: 16 bytes
// a name and 2 to 4 bytes of bucket index (ordered: 4 more), outside the
// collected heap (printparse/offheap), freed by Release or else by the
// collector's cleanup.
package nametable

import (
	"hash/maphash"
	"math/bits"

	"github.com/layermap/layermap/printparse/offheap"
)

// Table maps names to ids. Make one with New; a nil Table has no names.
type Table struct {
	seed, seed2 maphash.Seed
	mask        uint64 // applied to the first hash (tests force collisions)

	list  offheap.List[entry] // while reading
	names []entry             // by bucket, once Done
	// starts[b] is where the names whose first hash's top shift bits are
	// b begin (one or two names a bucket).
	starts []uint32
	shift  uint
	frees  [3]func() // of names, starts and perm

	// ordered keeps names in the order set (see NewOrdered); perm lists
	// their indexes by bucket.
	ordered bool
	perm    []uint32
}

type entry struct {
	h  uint64
	h2 uint32
	id int32
}

// New returns an empty Table, ready for Set.
func New() *Table { return newMasked(^uint64(0)) }

// NewOrdered is New for names looked up mostly in runs of the order
// set (a dump read in file order): Next finds such a name on cache
// lines just read. It costs 4 more bytes a name, and Get one more load.
func NewOrdered() *Table {
	t := New()
	t.ordered = true
	return t
}

func newMasked(mask uint64) *Table {
	return &Table{seed: maphash.MakeSeed(), seed2: maphash.MakeSeed(), mask: mask}
}

func (t *Table) key(name string) entry {
	return entry{maphash.String(t.seed, name) & t.mask, uint32(maphash.String(t.seed2, name)), 0}
}

// Set gives name the id; a later set of the same name wins.
func (t *Table) Set(name string, id int32) {
	k := t.key(name)
	k.id = id
	t.list.Add(k)
}

// SetBytes is Set for a name in bytes.
func (t *Table) SetBytes(name []byte, id int32) {
	t.list.Add(entry{maphash.Bytes(t.seed, name) & t.mask, uint32(maphash.Bytes(t.seed2, name)), id})
}

// Done makes the names ready for lookups.
func (t *Table) Done() {
	if t.ordered {
		t.doneOrdered()
		return
	}
	t.doneBuckets()
}

// countBuckets sets the bucket count for n names (t.shift) and returns
// each bucket's start (a counting sort's prefix sums over the names'
// hashes: bucket b is [starts[b], starts[b+1])) and its release.
func (t *Table) countBuckets(n int, hash func(i int) uint64) ([]uint32, func()) {
	t.shift = uint(max(1, bits.Len(uint(n))-1))
	nb := 1 << t.shift
	starts, free := offheap.Make[uint32](nb + 1)
	for i := range n {
		starts[hash(i)>>(64-t.shift)+1]++
	}
	for b := 1; b <= nb; b++ {
		starts[b] += starts[b-1]
	}
	return starts, free
}

// doneBuckets groups the names by bucket (a stable counting sort on the top
// shift bits of h), the last set of a name kept, into a table of their
// exact size.
func (t *Table) doneBuckets() {
	n := t.list.Len()
	starts, freeStarts := t.countBuckets(n, func(i int) uint64 { return t.list.At(i).h })
	nb := len(starts) - 1
	names, free := offheap.Make[entry](n)
	for i := range n { // starts[b] walks bucket b, ending at bucket b+1's start
		k := t.list.At(i)
		b := k.h >> (64 - t.shift)
		names[starts[b]] = k
		starts[b]++
	}
	t.list.Release()
	out := uint32(0)
	lo := uint32(0)
	for b := range nb {
		hi := starts[b]
		starts[b] = out
		for i := lo; i < hi; i++ {
			if !laterInBucket(names[i+1:hi], names[i]) {
				names[out] = names[i]
				out++
			}
		}
		lo = hi
	}
	starts[nb] = out
	t.names = names[:out]
	t.starts, t.frees = starts, [3]func(){free, freeStarts}
	offheap.Cleanup(t, func() { free(); freeStarts() })
}

// doneOrdered keeps the names in the order set and lists their indexes
// by bucket (a stable counting sort), the last set of a name listed; an
// earlier set of it takes the last one's id, for Next.
func (t *Table) doneOrdered() {
	n := t.list.Len()
	names, free := offheap.Make[entry](n)
	t.list.MoveTo(names)
	starts, freeStarts := t.countBuckets(n, func(i int) uint64 { return names[i].h })
	nb := len(starts) - 1
	perm, freePerm := offheap.Make[uint32](n)
	for i, k := range names {
		b := k.h >> (64 - t.shift)
		perm[starts[b]] = uint32(i)
		starts[b]++
	}
	out := uint32(0)
	lo := uint32(0)
	const dropped = 1 << 31 // a flag on perm: a later set of the name follows
	for b := range nb {
		hi := starts[b]
		starts[b] = out
		// Backwards, a name takes the id of its next set, which already
		// holds the last one's: linear in a name's repeats.
		for i := int(hi) - 1; i >= int(lo); i-- {
			k := names[perm[i]]
			for _, j := range perm[i+1 : hi] {
				if m := names[j&^dropped]; m.h == k.h && m.h2 == k.h2 {
					names[perm[i]].id = m.id
					perm[i] |= dropped
					break
				}
			}
		}
		for _, j := range perm[lo:hi] {
			if j&dropped == 0 {
				perm[out] = j
				out++
			}
		}
		lo = hi
	}
	starts[nb] = out
	t.names, t.perm = names, perm[:out]
	t.starts, t.frees = starts, [3]func(){free, freeStarts, freePerm}
	offheap.Cleanup(t, func() { free(); freeStarts(); freePerm() })
}

// laterInBucket reports whether a name set later in the bucket is n's.
func laterInBucket(later []entry, n entry) bool {
	for _, m := range later {
		if m.h == n.h && m.h2 == n.h2 {
			return true
		}
	}
	return false
}

// Get returns the id of name, once Done.
func (t *Table) Get(name string) (int32, bool) {
	if t == nil || len(t.names) == 0 {
		return 0, false
	}
	k := t.key(name)
	if t.ordered {
		if i, ok := t.find(k); ok {
			return t.names[i].id, true
		}
		return 0, false
	}
	b := k.h >> (64 - t.shift)
	for i := t.starts[b]; i < t.starts[b+1]; i++ {
		if n := t.names[i]; n.h == k.h && n.h2 == k.h2 {
			return n.id, true
		}
	}
	return 0, false
}

// find is the index of k's name in an ordered table.
func (t *Table) find(k entry) (uint32, bool) {
	b := k.h >> (64 - t.shift)
	for _, i := range t.perm[t.starts[b]:t.starts[b+1]] {
		if n := t.names[i]; n.h == k.h && n.h2 == k.h2 {
			return i, true
		}
	}
	return 0, false
}

// Cursor remembers where a table's lookups by Next were, to find the
// names that follow them. Its zero value is ready; one goroutine uses it.
type Cursor struct {
	at   [16]uint32 // the index after a name found
	slot uint8      // the next at to replace
}

// Next is Get for an ordered table, trying first the names just after
// those c found last: a lookup in the order set (or in several runs of
// it at once, up to 16) reads only lines just read.
func (t *Table) Next(c *Cursor, name string) (int32, bool) {
	if t == nil || len(t.names) == 0 {
		return 0, false
	}
	if !t.ordered {
		return t.Get(name)
	}
	k := t.key(name)
	for s, i := range c.at {
		if i < uint32(len(t.names)) {
			if n := t.names[i]; n.h == k.h && n.h2 == k.h2 {
				c.at[s] = i + 1
				return n.id, true
			}
		}
	}
	i, ok := t.find(k)
	if !ok {
		return 0, false
	}
	c.at[c.slot%16] = i + 1
	c.slot++
	return t.names[i].id, true
}

// Len is the number of distinct names, once Done.
func (t *Table) Len() int {
	if t == nil {
		return 0
	}
	if t.ordered {
		return len(t.perm)
	}
	return len(t.names)
}

// Release frees the tables; Get finds nothing afterwards.
func (t *Table) Release() {
	if t == nil {
		return
	}
	t.list.Release()
	t.names, t.starts, t.perm = nil, nil, nil
	for i, f := range t.frees {
		if f != nil {
			f()
			t.frees[i] = nil
		}
	}
}

// Each calls fn with the id of every name, once Done, in no particular
// order.
func (t *Table) Each(fn func(id int32)) {
	if t == nil {
		return
	}
	if t.ordered {
		for _, i := range t.perm {
			fn(t.names[i].id)
		}
		return
	}
	for _, n := range t.names {
		fn(n.id)
	}
}
