// Package nametable maps names to int32 ids without keeping the names,
// for the large sets of entry names a dump has: 96 bits of two hashes of
// each name (two names are taken for one only if all agree: odds of
// 2^-96 a pair). Names are set while a file is read, a later set of a
// name winning; Done then groups them by bucket for lookups that read one
// or two cache lines. Memory: 16 bytes a name and 2 to 4 bytes of bucket
// index, outside the collected heap (printparse/offheap), freed by
// Release or else by the collector's cleanup.
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
	frees  [2]func() // of names and starts
}

type entry struct {
	h  uint64
	h2 uint32
	id int32
}

// New returns an empty Table, ready for Set.
func New() *Table { return newMasked(^uint64(0)) }

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
	t.starts, t.frees = starts, [2]func(){free, freeStarts}
	offheap.Cleanup(t, func() { free(); freeStarts() })
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
	b := k.h >> (64 - t.shift)
	for i := t.starts[b]; i < t.starts[b+1]; i++ {
		if n := t.names[i]; n.h == k.h && n.h2 == k.h2 {
			return n.id, true
		}
	}
	return 0, false
}

// Len is the number of distinct names, once Done.
func (t *Table) Len() int {
	if t == nil {
		return 0
	}
	return len(t.names)
}

// Release frees the tables; Get finds nothing afterwards.
func (t *Table) Release() {
	if t == nil {
		return
	}
	t.list.Release()
	t.names, t.starts = nil, nil
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
	for _, n := range t.names {
		fn(n.id)
	}
}
