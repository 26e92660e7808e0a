package compare

import (
	"math/bits"

	"github.com/layermap/layermap/printparse/offheap"
)

// tagTable is an open-addressing hash table of numbers (the fuzzy
// match's rows, op names) tagged with the high 32 bits of their key's
// hash: 8 bytes a slot, pointer-free (the garbage collector does not
// scan it), at most 3/4 full. Callers check the numbers it gives against
// the real key.
type tagTable struct {
	slots   []uint64 // tag | number+1; 0 is empty
	used    int
	offHeap bool   // large tables outside the collected heap (printparse/offheap)
	free    func() // releases slots
}

// home is the first slot a tag probes (any table size).
func (t *tagTable) home(s uint64) int { return int((s >> 32) * uint64(len(t.slots)) >> 32) }

// size makes room for n numbers at once (the table then holds them at
// about 7/10 full).
func (t *tagTable) size(n int) {
	if n*10/7 > len(t.slots) {
		t.rehash(n*10/7 + 1)
	}
}

func (t *tagTable) rehash(n int) {
	old, free := t.slots, t.free
	if t.offHeap {
		t.slots, t.free = offheap.Make[uint64](n)
	} else {
		t.slots = make([]uint64, n)
	}
	t.used = 0
	for _, s := range old {
		if s != 0 {
			t.place(s)
		}
	}
	if free != nil {
		free()
	}
}

// release frees an off-heap table; it is empty afterwards.
func (t *tagTable) release() {
	if t.free != nil {
		t.free()
	}
	t.slots, t.used, t.free = nil, 0, nil
}

// insert adds number n under hash h.
func (t *tagTable) insert(h uint64, n uint32) {
	if (t.used+1)*4 > len(t.slots)*3 {
		t.rehash(max(1024, 2*len(t.slots)))
	}
	t.place(h&^(1<<32-1) | uint64(n+1))
}

// place puts slot value s in the first free slot from its home.
func (t *tagTable) place(s uint64) {
	for i := t.home(s); ; i++ {
		if i == len(t.slots) {
			i = 0
		}
		if t.slots[i] == 0 {
			t.slots[i] = s
			t.used++
			return
		}
	}
}

// find calls fn with every number inserted under a hash with h's tag,
// until fn returns false.
func (t *tagTable) find(h uint64, fn func(n uint32) bool) {
	if len(t.slots) == 0 {
		return
	}
	tag := h &^ (1<<32 - 1)
	for i := t.home(h); ; i++ {
		if i == len(t.slots) {
			i = 0
		}
		s := t.slots[i]
		if s == 0 {
			return
		}
		if s&^(1<<32-1) == tag && !fn(uint32(s)-1) {
			return
		}
	}
}

// reset empties the table, keeping its memory.
func (t *tagTable) reset() {
	clear(t.slots)
	t.used = 0
}

// tagFilter is a blocked Bloom filter of tags (a key hash's high 32
// bits): a tag sets 3 bits of one 64-bit word. At about a byte a tag
// (a ninth of the table) it is more often in cache than the table, and
// answers most lookups of absent tags (about 96%) without probing it.
// It never says absent for an added tag.
type tagFilter []uint64

// newTagFilter sizes a filter for n tags (8 bits a tag), outside the
// collected heap when large, and gives its release.
func newTagFilter(n int) (tagFilter, func()) { return offheap.Make[uint64](max(1, (n+7)/8)) }

// bits are the word and the bits of it tag sets: the word from the
// tag's high bits, the bits from its low 18.
func (f tagFilter) bits(tag uint32) (*uint64, uint64) {
	return &f[uint64(tag)*uint64(len(f))>>32], 1<<(tag&63) | 1<<(tag>>6&63) | 1<<(tag>>12&63)
}

func (f tagFilter) add(tag uint32) {
	w, m := f.bits(tag)
	*w |= m
}

// has is false when tag was certainly not added.
func (f tagFilter) has(tag uint32) bool {
	w, m := f.bits(tag)
	return *w&m == m
}

// tagIndex is a hash table of numbers whose tags (a key hash's high 32
// bits) the caller keeps, one per number (tags[number]): open
// addressing, a uint32 a slot holding the number+1 in its low bits and
// the tag's low bits above it, outside the collected heap when large,
// sized once for its numbers at about 7/10 full: 5.7 bytes a number,
// where a tagTable takes 11.4. A probe reads the kept tag only where
// the slot's bits of it agree (while there are fewer than 2^24 numbers,
// those are 8 or more bits: all but about 1/256 of other slots are
// passed on them).
type tagIndex struct {
	slots []uint32
	free  func()
	tags  []uint32
	shift uint8  // bits of the number+1
	mask  uint32 // those bits
}

// newTagIndex indexes the numbers in holds (count of them), a number's
// tag being tags[number], and clears from in the numbers that share
// their tag with another: in then holds the lone ones.
func newTagIndex(tags []uint32, count int, in bitset) tagIndex {
	t := tagIndex{tags: tags, shift: uint8(bits.Len32(uint32(len(tags))))}
	t.mask = 1<<t.shift - 1
	t.slots, t.free = offheap.Make[uint32](count*10/7 + 1)
	for n := range len(tags) { // (a number's bit is cleared once it is passed)
		if !in.get(int32(n)) {
			continue
		}
		tag := tags[n]
		i := t.home(tag)
		for ; ; i++ {
			if i == len(t.slots) {
				i = 0
			}
			s := t.slots[i]
			if s == 0 {
				break
			}
			if o := s&t.mask - 1; (s^tag<<t.shift)&^t.mask == 0 && tags[o] == tag {
				in.clear(int32(o))
				in.clear(int32(n))
			}
		}
		t.slots[i] = tag<<t.shift | uint32(n+1)
	}
	return t
}

// home is the first slot tag probes.
func (t *tagIndex) home(tag uint32) int { return int(uint64(tag) * uint64(len(t.slots)) >> 32) }

// find calls fn with every number under tag, until fn returns false.
func (t *tagIndex) find(tag uint32, fn func(n uint32) bool) {
	if len(t.slots) == 0 {
		return
	}
	b := tag << t.shift
	for i := t.home(tag); ; i++ {
		if i == len(t.slots) {
			i = 0
		}
		s := t.slots[i]
		if s == 0 {
			return
		}
		if (s^b)&^t.mask == 0 {
			if n := s&t.mask - 1; t.tags[n] == tag && !fn(n) {
				return
			}
		}
	}
}

// release frees the slots; the index is empty afterwards.
func (t *tagIndex) release() {
	if t.free != nil {
		t.free()
	}
	*t = tagIndex{}
}
