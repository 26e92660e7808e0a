package compare

import (
	"cmp"
	"iter"
	"slices"
	"sort"

	"github.com/layermap/layermap/printparse/msprobe"
	"github.com/layermap/layermap/printparse/offheap"
)

// DataMapping is msprobe's data mapping (-dm): NPU row names to bench row
// names, the last pair of a repeated NPU name winning (as PyYAML reads
// the file). The data mappings msprobe and layermap write pair every row
// of a dump, and a row name is a pattern and a call count (its entry's;
// msprobe.RowPatterns): the rows of one module's calls, one kind
// ("input.0", "parameters.weight"), share a pattern. Their pairs are held
// in runs: consecutive call counts of one NPU pattern, paired with one
// bench pattern at a fixed difference of call counts. A run takes 16
// bytes whatever its length (outside the heap, when there are more than
// a few thousand), each pattern its text once, and a mapping has few of
// either: 27,826 runs for the 100,750 pairs of the Qwen2.5-VL dumps of
// 27 MB a side, 196,432 for 775,000 at 216 MB (where Tensor and
// Functional calls drift between the sides; each module's calls make one
// run), 2,632 NPU and 1,479 bench patterns for both. A pair that follows
// no pattern takes a run and its names' length. A nil *DataMapping maps
// nothing.
type DataMapping struct {
	npu, bench *msprobe.Patterns
	runs       []dmRun  // by NPU pattern, then call count: disjoint; outside the heap
	starts     []uint32 // runs[starts[p]:starts[p+1]] are NPU pattern p's
	pairs      int

	// while pairs are added
	added *offheap.List[addedRun] // in file order
	last  []int32                 // by NPU pattern: its last run in added, -1 for none
}

// dmRun is n pairs: an NPU pattern's names with call counts first to
// first+n-1, each paired with the name of the bench pattern whose call
// count is shift more (any, for a bench pattern without a number).
type dmRun struct {
	first, n uint32
	bench    int32
	shift    int32
}

// addedRun is a run and its NPU pattern, as pairs are added.
type addedRun struct {
	dmRun
	npu int32
}

// newDataMapping returns an empty DataMapping to add pairs to in file
// order; done makes it ready for lookups.
func newDataMapping() *DataMapping {
	d := &DataMapping{npu: msprobe.RowPatterns(), bench: msprobe.RowPatterns(), added: &offheap.List[addedRun]{}}
	offheap.Cleanup(d, d.added.Release) // a mapping dropped before done (a refused piece)
	return d
}

// drop frees what a mapping dropped before done holds.
func (d *DataMapping) drop() { d.added.Release() }

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
	p, num := d.npu.Add(npu)
	b, bnum := d.bench.Add(bench)
	var shift int32
	if d.bench.Numbered(b) {
		shift = int32(int64(bnum) - int64(num)) // both at most 999,999,999
	}
	for int(p) >= len(d.last) {
		d.last = append(d.last, -1)
	}
	next := dmRun{first: num, n: 1, bench: b, shift: shift}
	if l := d.last[p]; l >= 0 {
		if r := d.added.At(int(l)); r.meets(next) {
			r.n++
			d.added.Set(int(l), r)
			return
		}
	}
	d.last[p] = int32(d.added.Len())
	d.added.Add(addedRun{next, p})
}

// meets reports whether next continues r: the next call counts, paired
// with the same bench pattern at the same shift.
func (r dmRun) meets(next dmRun) bool {
	return r.first+r.n == next.first && r.bench == next.bench && r.shift == next.shift
}

// done sorts the runs by NPU pattern and call count, a later pair
// replacing an earlier one of the same NPU name, and joins the runs that
// then meet.
func (d *DataMapping) done() {
	// by pattern, stably: a pattern's runs come in file order, since a
	// run takes pairs only while it is its pattern's last
	d.starts = make([]uint32, d.npu.Len()+1)
	for i := range d.added.Len() {
		d.starts[d.added.At(i).npu+1]++
	}
	for p := 1; p < len(d.starts); p++ {
		d.starts[p] += d.starts[p-1]
	}
	byPattern, free := offheap.Make[addedRun](d.added.Len())
	defer free()
	next := slices.Clone(d.starts[:len(d.starts)-1])
	for i := range d.added.Len() {
		r := d.added.At(i)
		byPattern[next[r.npu]] = r
		next[r.npu]++
	}
	d.added.Release()
	d.last = nil
	d.bench.Done() // its names are only made from now on
	var runs offheap.List[dmRun]
	for p := range len(d.starts) - 1 {
		from := runs.Len()
		appendPatternRuns(&runs, byPattern[d.starts[p]:d.starts[p+1]])
		d.starts[p] = uint32(from)
	}
	d.starts[len(d.starts)-1] = uint32(runs.Len())
	var release func()
	d.runs, release = runs.Table()
	offheap.Cleanup(d, release)
	d.pairs = 0
	for _, r := range d.runs {
		d.pairs += int(r.n)
	}
}

// appendPatternRuns adds the runs of one NPU pattern, given in file
// order, to dst: sorted by call count, disjoint, joined where they meet.
func appendPatternRuns(dst *offheap.List[dmRun], rs []addedRun) {
	sorted := rs
	byFirst := func(a, b addedRun) int { return cmp.Compare(a.first, b.first) }
	if !slices.IsSortedFunc(rs, byFirst) {
		sorted = slices.Clone(rs)
		slices.SortFunc(sorted, byFirst)
	}
	for i := 1; i < len(sorted); i++ {
		if sorted[i-1].first+sorted[i-1].n > sorted[i].first {
			appendResolved(dst, rs)
			return
		}
	}
	j := runJoiner{dst: dst}
	for _, r := range sorted {
		j.add(r.dmRun)
	}
}

// runJoiner adds runs, given by call count, to dst, joining each to the
// one it continues.
type runJoiner struct {
	dst  *offheap.List[dmRun]
	last dmRun
	some bool
}

func (j *runJoiner) add(r dmRun) {
	l := &j.last
	if j.some && l.meets(r) {
		l.n += r.n
		j.dst.Set(j.dst.Len()-1, *l)
		return
	}
	j.last, j.some = r, true
	j.dst.Add(r)
}

// appendResolved is appendPatternRuns for runs that overlap, that is,
// NPU names paired more than once: each call count's last pair wins.
// rs is in file order.
func appendResolved(dst *offheap.List[dmRun], rs []addedRun) {
	type pair struct {
		num   uint32
		order int32 // in rs, the file's
	}
	var ps []pair
	for i, r := range rs {
		for k := range r.n {
			ps = append(ps, pair{num: r.first + k, order: int32(i)})
		}
	}
	slices.SortFunc(ps, func(a, b pair) int {
		return cmp.Or(cmp.Compare(a.num, b.num), cmp.Compare(a.order, b.order))
	})
	j := runJoiner{dst: dst}
	for i, p := range ps {
		if i+1 < len(ps) && ps[i+1].num == p.num {
			continue // a later pair wins
		}
		r := rs[p.order].dmRun
		r.first, r.n = p.num, 1
		j.add(r)
	}
}

// Len is the number of NPU names the mapping pairs.
func (d *DataMapping) Len() int {
	if d == nil {
		return 0
	}
	return d.pairs
}

// find is the run that pairs the NPU row name npu, and its call count.
func (d *DataMapping) find(npu string) (dmRun, uint32, bool) {
	if d == nil {
		return dmRun{}, 0, false
	}
	p, num, ok := d.npu.Find(npu)
	if !ok {
		return dmRun{}, 0, false
	}
	runs := d.runs[d.starts[p]:d.starts[p+1]]
	i := sort.Search(len(runs), func(i int) bool { return runs[i].first > num }) - 1
	if i < 0 || num-runs[i].first >= runs[i].n {
		return dmRun{}, 0, false
	}
	return runs[i], num, true
}

// benchNumber is the call count of the bench name run pairs with the NPU
// call count num.
func (r dmRun) benchNumber(num uint32) uint32 { return uint32(int64(num) + int64(r.shift)) }

// Lookup returns the bench row name paired with the NPU row name npu.
func (d *DataMapping) Lookup(npu string) (string, bool) {
	r, num, ok := d.find(npu)
	if !ok {
		return "", false
	}
	return d.bench.Name(r.bench, r.benchNumber(num)), true // no copy for a name without a number ("N/A")
}

// AppendLookup is Lookup with the bench row name appended to dst.
func (d *DataMapping) AppendLookup(dst []byte, npu string) ([]byte, bool) {
	r, num, ok := d.find(npu)
	if !ok {
		return dst, false
	}
	return d.bench.AppendName(dst, r.bench, r.benchNumber(num)), true
}

// All yields the pairs, each NPU name once (its last pair), by NPU
// pattern and call count.
func (d *DataMapping) All() iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		if d == nil {
			return
		}
		for p := range len(d.starts) - 1 {
			for _, r := range d.runs[d.starts[p]:d.starts[p+1]] {
				for num := r.first; num-r.first < r.n; num++ {
					if !yield(d.npu.Name(int32(p), num), d.bench.Name(r.bench, r.benchNumber(num))) {
						return
					}
				}
			}
		}
	}
}
