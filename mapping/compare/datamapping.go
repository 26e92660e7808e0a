package compare

import (
	"hash/maphash"
	"iter"
	"math/bits"
	"strings"
	"unsafe"

	"github.com/layermap/layermap/printparse/msprobe"
	"github.com/layermap/layermap/printparse/offheap"
)

// DataMapping is msprobe's data mapping (-dm): NPU row names to bench row
// names, the last pair of a repeated NPU name winning (as PyYAML reads
// the file). The data mappings msprobe and layermap write pair every row
// of a dump, so it is held in about 32 bytes a pair, outside the heap,
// whatever the names' length: each name is cut after its last dot-part
// that is a number and not its last part ("...Linear.forward.7" and
// ".input.0"); the heads go into a msprobe.Names (a pattern shared by the
// heads that differ only in their number, and that number), the tails,
// few, into a table. Names that follow no such patterns cost their length
// besides. A nil *DataMapping maps nothing.
type DataMapping struct {
	heads  [2]*msprobe.Names        // NPU, bench
	tailOf *offheap.List[[2]uint32] // each pair's tails (NPU, bench)
	tails  []string                 // by id
	tailID map[string]uint32        // while adding
	key    []byte                   // scratch
	seed   maphash.Seed             // of slots
	slots  []int32                  // open addressing: a pair's position + 1, 0 for none
	free   func()                   // releases slots
	n      int                      // distinct NPU names
}

// newDataMapping returns an empty DataMapping to add pairs to in file
// order; done makes it ready for lookups.
func newDataMapping() *DataMapping {
	d := &DataMapping{heads: [2]*msprobe.Names{{}, {}}, tailOf: &offheap.List[[2]uint32]{}, tailID: map[string]uint32{}}
	offheap.Cleanup(d, d.tailOf.Release)
	return d
}

// DataMappingOf returns pairs (NPU row name to bench row name) as a
// DataMapping; nil for nil (no data mapping, where an empty one turns the
// dtype gate off).
func DataMappingOf(pairs map[string]string) *DataMapping {
	if pairs == nil {
		return nil
	}
	d := newDataMapping()
	for npu, bench := range pairs {
		d.add(npu, bench)
	}
	d.done()
	return d
}

// add appends a pair; a later pair of the same NPU name replaces it.
func (d *DataMapping) add(npu, bench string) {
	var t [2]uint32
	for k, name := range [2]string{npu, bench} {
		head, tail := cutName(name)
		d.heads[k].AddString(head)
		id, ok := d.tailID[tail]
		if !ok {
			id = uint32(len(d.tails))
			tail = strings.Clone(tail)
			d.tails = append(d.tails, tail)
			d.tailID[tail] = id
		}
		t[k] = id
	}
	d.tailOf.Add(t)
}

// done indexes the NPU names, a table of twice their number (4 to 8
// bytes a pair), a later pair taking the place of an earlier one of the
// same name.
func (d *DataMapping) done() {
	d.heads[0].Done()
	d.heads[1].Done()
	d.tailID = nil
	n := d.tailOf.Len()
	if n == 0 {
		return
	}
	d.seed = maphash.MakeSeed()
	d.slots, d.free = offheap.Make[int32](1 << bits.Len(uint(2*n-1)))
	offheap.Cleanup(d, d.free)
	mask := uint64(len(d.slots) - 1)
	for i := range n {
		d.key = d.appendName(d.key[:0], 0, i)
		s := unsafe.String(unsafe.SliceData(d.key), len(d.key))
		k := maphash.String(d.seed, s) & mask
		for ; d.slots[k] != 0 && !d.is(int(d.slots[k]-1), s); k = (k + 1) & mask {
		}
		if d.slots[k] == 0 {
			d.n++
		}
		d.slots[k] = int32(i + 1)
	}
	d.key = nil
}

// cutName cuts name after its last dot-part that is a number and not its
// last part; the tail is "" where there is none.
func cutName(name string) (head, tail string) {
	end := strings.LastIndexByte(name, '.')
	for end > 0 {
		lo := strings.LastIndexByte(name[:end], '.') + 1
		if digitsOnly(name[lo:end]) {
			return name[:end], name[end:]
		}
		end = lo - 1
	}
	return name, ""
}

func digitsOnly(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// appendName appends side k's name of pair i to dst.
func (d *DataMapping) appendName(dst []byte, k, i int) []byte {
	return append(d.heads[k].Append(dst, i), d.tails[d.tailOf.At(i)[k]]...)
}

// is reports whether the NPU name of pair i is s.
func (d *DataMapping) is(i int, s string) bool {
	tail := d.tails[d.tailOf.At(i)[0]]
	return strings.HasSuffix(s, tail) && d.heads[0].Is(i, s[:len(s)-len(tail)])
}

// find returns the pair of the NPU name s.
func (d *DataMapping) find(s string) (int, bool) {
	if d == nil || d.slots == nil {
		return 0, false
	}
	mask := uint64(len(d.slots) - 1)
	for k := maphash.String(d.seed, s) & mask; ; k = (k + 1) & mask {
		at := d.slots[k]
		if at == 0 {
			return 0, false
		}
		if d.is(int(at-1), s) {
			return int(at - 1), true
		}
	}
}

// Len is the number of NPU names the mapping pairs.
func (d *DataMapping) Len() int {
	if d == nil {
		return 0
	}
	return d.n
}

// Lookup returns the bench row name paired with the NPU row name npu.
func (d *DataMapping) Lookup(npu string) (string, bool) {
	b, ok := d.AppendLookup(nil, npu)
	return string(b), ok
}

// AppendLookup is Lookup with the bench row name appended to dst.
func (d *DataMapping) AppendLookup(dst []byte, npu string) ([]byte, bool) {
	i, ok := d.find(npu)
	if !ok {
		return dst, false
	}
	return d.appendName(dst, 1, i), true
}

// All yields the pairs in file order, each NPU name once (its last pair).
func (d *DataMapping) All() iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		if d == nil || d.slots == nil {
			return
		}
		var b []byte
		for i := range d.tailOf.Len() {
			b = d.appendName(b[:0], 0, i)
			npu := string(b)
			if j, _ := d.find(npu); j != i {
				continue // a later pair wins
			}
			b = d.appendName(b[:0], 1, i)
			if !yield(npu, string(b)) {
				return
			}
		}
	}
}
