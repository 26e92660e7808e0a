package compare

import (
	"iter"
	"strings"

	"github.com/layermap/layermap/printparse/msprobe"
)

// DataMapping is msprobe's data mapping (-dm): NPU row names to bench row
// names, the last pair of a repeated NPU name winning (as PyYAML reads
// the file). The data mappings msprobe and layermap write pair every row
// of a dump, so the names are held as msprobe.RowNames, pair i at
// position i on both sides: a pattern shared by the rows that differ
// only in their entry's call count, and that count, outside the heap.
// That is 16 bytes a pair, and 8 to 16 of index for the NPU names,
// whatever the names' length; names that follow no such patterns cost
// their length besides. A nil *DataMapping maps nothing.
type DataMapping struct {
	names [2]*msprobe.Names // NPU, bench
}

// newDataMapping returns an empty DataMapping to add pairs to in file
// order; done makes it ready for lookups.
func newDataMapping() *DataMapping {
	return &DataMapping{names: [2]*msprobe.Names{msprobe.RowNames(), msprobe.RowNames()}}
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
	d.names[0].AddString(npu)
	d.names[1].AddString(bench)
}

// done indexes the NPU names for lookups.
func (d *DataMapping) done() {
	d.names[0].Done()
	d.names[1].Done()
	d.names[0].Distinct() // makes the index
}

// Len is the number of NPU names the mapping pairs.
func (d *DataMapping) Len() int {
	if d == nil {
		return 0
	}
	return d.names[0].Distinct()
}

// find is the pair of the NPU row name npu.
func (d *DataMapping) find(npu string) (int, bool) {
	if d == nil {
		return 0, false
	}
	return d.names[0].Find(npu)
}

// Lookup returns the bench row name paired with the NPU row name npu.
func (d *DataMapping) Lookup(npu string) (string, bool) {
	i, ok := d.find(npu)
	if !ok {
		return "", false
	}
	return d.names[1].At(i), true // no copy for a name without a number ("N/A")
}

// AppendLookup is Lookup with the bench row name appended to dst.
func (d *DataMapping) AppendLookup(dst []byte, npu string) ([]byte, bool) {
	i, ok := d.find(npu)
	if !ok {
		return dst, false
	}
	return d.names[1].Append(dst, i), true
}

// All yields the pairs in file order, each NPU name once (its last pair).
func (d *DataMapping) All() iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		if d == nil {
			return
		}
		for i, npu := range d.names[0].All() {
			if j, _ := d.find(npu); j != i {
				continue // a later pair wins
			}
			if !yield(strings.Clone(npu), d.names[1].At(i)) { // npu is read in place
				return
			}
		}
	}
}
