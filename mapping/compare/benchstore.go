package compare

import (
	"github.com/layermap/layermap/mapping/dump"
)

// The bench side is held in memory in a packed form (about 120 bytes a row
// plus its name): the strings that repeat (entry, dtype, shape,
// requires_grad) are numbered, statistics keep their text only for ints and
// strings, and rows live in fixed-size chunks so that growing the table
// never copies it. A matched row is unpacked into a sideRow when needed.

const chunkBits = 16

type packedValue struct {
	f    float64
	text int32 // index into benchSide.texts, -1 for none
	kind dump.ValueKind
	b    bool
}

type benchRow struct {
	name  string
	key   string // "" when the key is the name
	extra string // md5 (md5 mode) or data name (tensor mode)
	stats [4]packedValue
	entry int32
	dtype int32
	shape int32
	grad  int32
	none  bool
}

// benchSide is the bench dump held in memory: its rows and an index from
// compare key to rows.
type benchSide struct {
	mode    Mode
	chunks  [][]benchRow
	n       int
	strs    []string
	strIdx  map[string]int32
	texts   []string
	first   map[string]int32   // key -> first row
	more    map[string][]int32 // key -> all rows, for keys held by several rows
	matched []bool
	one     [1]int32
}

func newBenchSide(mode Mode) *benchSide {
	return &benchSide{mode: mode, strIdx: map[string]int32{}, first: map[string]int32{}, more: map[string][]int32{}}
}

func (b *benchSide) len() int { return b.n }

// str numbers a repeating string; past 1<<20 distinct ones it stops
// sharing (shapes of a huge model) but keeps working.
func (b *benchSide) str(s string) int32 {
	if i, ok := b.strIdx[s]; ok {
		return i
	}
	i := int32(len(b.strs))
	b.strs = append(b.strs, s)
	if len(b.strIdx) < 1<<20 {
		b.strIdx[s] = i
	}
	return i
}

func (b *benchSide) add(r *sideRow, entry int32) {
	it := &r.it
	br := benchRow{name: it.Name, entry: entry, dtype: b.str(it.Dtype), shape: b.str(it.Shape),
		grad: b.str(it.RequiresGrad), none: it.NoneItem}
	if r.key != it.Name {
		br.key = r.key
	}
	switch b.mode {
	case MD5:
		br.extra = it.MD5
	case Tensor:
		br.extra = it.DataName
	}
	for i, v := range it.Stats {
		p := packedValue{f: v.Num, text: -1, kind: v.Kind, b: v.Bool}
		if v.Kind == dump.String || (v.Kind == dump.Number && isIntLiteral(v.Text)) {
			p.text = int32(len(b.texts))
			b.texts = append(b.texts, v.Text)
		}
		br.stats[i] = p
	}
	if b.n>>chunkBits == len(b.chunks) {
		b.chunks = append(b.chunks, make([]benchRow, 0, 1<<chunkBits))
	}
	c := &b.chunks[len(b.chunks)-1]
	*c = append(*c, br)
	idx := int32(b.n)
	b.n++
	k := r.key
	if f, ok := b.first[k]; ok {
		if _, ok := b.more[k]; !ok {
			b.more[k] = []int32{f}
		}
		b.more[k] = append(b.more[k], idx)
	} else {
		b.first[k] = idx
	}
}

func (b *benchSide) at(i int32) *benchRow { return &b.chunks[i>>chunkBits][i&(1<<chunkBits-1)] }

// lookup returns the rows of a compare key, in file order.
func (b *benchSide) lookup(key string) []int32 {
	if m, ok := b.more[key]; ok {
		return m
	}
	if f, ok := b.first[key]; ok {
		b.one[0] = f
		return b.one[:]
	}
	return nil
}

func (b *benchSide) dtype(i int32) string { return b.strs[b.at(i).dtype] }

func (b *benchSide) key(i int32) string {
	r := b.at(i)
	if r.key != "" {
		return r.key
	}
	return r.name
}

// row unpacks row i.
func (b *benchSide) row(i int32) *sideRow {
	r := b.at(i)
	it := dump.Item{Name: r.name, Entry: b.strs[r.entry], Dtype: b.strs[r.dtype], Shape: b.strs[r.shape],
		RequiresGrad: b.strs[r.grad], NoneItem: r.none}
	switch b.mode {
	case MD5:
		it.MD5 = r.extra
	case Tensor:
		it.DataName = r.extra
	}
	for k, p := range r.stats {
		v := dump.Value{Kind: p.kind, Num: p.f, Bool: p.b}
		if p.text >= 0 {
			v.Text = b.texts[p.text]
		}
		it.Stats[k] = v
	}
	return &sideRow{it: it, key: b.key(i), order: int(i)}
}

// collectBench reads the whole bench side.
func collectBench(src Source, cfg *Config, renumber bool) (*benchSide, error) {
	b := newBenchSide(cfg.Mode)
	err := forEachRow(src, cfg, renumber, nil, func(e *dump.Entry, rs []sideRow) error {
		if len(rs) == 0 {
			return nil
		}
		entry := int32(len(b.strs))
		b.strs = append(b.strs, e.Name)
		for i := range rs {
			b.add(&rs[i], entry)
		}
		return nil
	})
	b.matched = make([]bool, b.n)
	return b, err
}
