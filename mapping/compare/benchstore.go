package compare

import (
	"hash/maphash"

	"github.com/layermap/layermap/mapping/dump"
)

// The bench side is held in memory in a packed, pointer-free form so that
// a multi-GB dump costs little more than its row names and the garbage
// collector has nothing to scan in it: names, keys and texts live in byte
// arenas addressed by offset, repeating strings (entry, dtype, shape,
// requires_grad) are numbered, rows live in fixed-size chunks (growing the
// table never copies it) and the key index is a map from a 64-bit key hash
// to rows, checked against the stored key. A matched row is unpacked into
// a sideRow when needed.

const (
	chunkBits  = 16
	arenaChunk = 4 << 20
)

// ref addresses bytes in the arena: chunk<<48 | offset<<24 | length; 0 is
// the empty string.
type ref uint64

const refMax = 1<<24 - 1

type arena struct {
	chunks [][]byte
	big    []string // strings of 16 MiB or more (never seen in dumps)
}

func (a *arena) add(s string) ref {
	if len(s) == 0 {
		return 0
	}
	if len(s) > refMax {
		a.big = append(a.big, s)
		return ref(0xffff)<<48 | ref(len(a.big)-1)<<24 | refMax
	}
	last := len(a.chunks) - 1
	if last < 0 || len(a.chunks[last])+len(s) > cap(a.chunks[last]) {
		a.chunks = append(a.chunks, make([]byte, 0, arenaChunk))
		last++
	}
	off := len(a.chunks[last])
	a.chunks[last] = append(a.chunks[last], s...)
	return ref(last)<<48 | ref(off)<<24 | ref(len(s))
}

func (a *arena) bytes(r ref) []byte {
	if r == 0 {
		return nil
	}
	c, off, n := r>>48, (r>>24)&refMax, r&refMax
	if c == 0xffff {
		return []byte(a.big[off])
	}
	return a.chunks[c][off : off+n]
}

func (a *arena) str(r ref) string {
	if r == 0 {
		return ""
	}
	return string(a.bytes(r))
}

type packedValue struct {
	f    float64
	text ref // ints and strings only
	kind dump.ValueKind
	b    bool
}

type benchRow struct {
	name  ref
	key   ref // n == 0 when the key is the name
	extra ref // md5 (md5 mode) or data name (tensor mode)
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
	ar      arena
	strs    []string // numbered repeating strings
	strIdx  map[string]int32
	entries []ref // entry names
	seed    maphash.Seed
	first   map[uint64]int32   // key hash -> first row
	more    map[uint64][]int32 // key hash -> all rows, when several rows share the hash
	matched []bool
	buf     []int32
}

func newBenchSide(mode Mode) *benchSide {
	return &benchSide{mode: mode, strIdx: map[string]int32{}, seed: maphash.MakeSeed(),
		first: map[uint64]int32{}, more: map[uint64][]int32{}}
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
	br := benchRow{name: b.ar.add(it.Name), entry: entry, dtype: b.str(it.Dtype), shape: b.str(it.Shape),
		grad: b.str(it.RequiresGrad), none: it.NoneItem}
	if r.key != it.Name {
		br.key = b.ar.add(r.key)
	}
	switch b.mode {
	case MD5:
		br.extra = b.ar.add(it.MD5)
	case Tensor:
		br.extra = b.ar.add(it.DataName)
	}
	for i, v := range it.Stats {
		p := packedValue{f: v.Num, kind: v.Kind, b: v.Bool}
		if v.Kind == dump.String || (v.Kind == dump.Number && isIntLiteral(v.Text)) {
			p.text = b.ar.add(v.Text)
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
	h := maphash.String(b.seed, r.key)
	if f, ok := b.first[h]; ok {
		if _, ok := b.more[h]; !ok {
			b.more[h] = []int32{f}
		}
		b.more[h] = append(b.more[h], idx)
	} else {
		b.first[h] = idx
	}
}

func (b *benchSide) at(i int32) *benchRow { return &b.chunks[i>>chunkBits][i&(1<<chunkBits-1)] }

func (b *benchSide) keyBytes(i int32) []byte {
	r := b.at(i)
	if r.key != 0 {
		return b.ar.bytes(r.key)
	}
	return b.ar.bytes(r.name)
}

// lookup returns the rows of a compare key, in file order. The result is
// valid until the next call.
func (b *benchSide) lookup(key string) []int32 {
	h := maphash.String(b.seed, key)
	if m, ok := b.more[h]; ok {
		b.buf = b.buf[:0]
		for _, i := range m {
			if string(b.keyBytes(i)) == key {
				b.buf = append(b.buf, i)
			}
		}
		return b.buf
	}
	if f, ok := b.first[h]; ok && string(b.keyBytes(f)) == key {
		b.buf = append(b.buf[:0], f)
		return b.buf
	}
	return nil
}

func (b *benchSide) dtype(i int32) string { return b.strs[b.at(i).dtype] }

func (b *benchSide) key(i int32) string { return string(b.keyBytes(i)) }

// row unpacks row i.
func (b *benchSide) row(i int32) *sideRow { return b.rowInto(new(sideRow), i) }

// rowInto unpacks row i into dst.
func (b *benchSide) rowInto(dst *sideRow, i int32) *sideRow {
	r := b.at(i)
	it := dump.Item{Name: b.ar.str(r.name), Entry: b.ar.str(b.entries[r.entry]), Dtype: b.strs[r.dtype], Shape: b.strs[r.shape],
		RequiresGrad: b.strs[r.grad], NoneItem: r.none}
	switch b.mode {
	case MD5:
		it.MD5 = b.ar.str(r.extra)
	case Tensor:
		it.DataName = b.ar.str(r.extra)
	}
	for k, p := range r.stats {
		it.Stats[k] = dump.Value{Kind: p.kind, Num: p.f, Bool: p.b, Text: b.ar.str(p.text)}
	}
	key := it.Name
	if r.key != 0 {
		key = b.ar.str(r.key)
	}
	*dst = sideRow{it: it, key: key, order: int(i)}
	return dst
}

// collectBench reads the whole bench side.
func collectBench(src Source, cfg *Config, renumber bool) (*benchSide, error) {
	b := newBenchSide(cfg.Mode)
	err := forEachRow(src, cfg, renumber, nil, func(e *dump.Entry, rs []sideRow) error {
		if len(rs) == 0 {
			return nil
		}
		entry := int32(len(b.entries))
		b.entries = append(b.entries, b.ar.add(e.Name))
		for i := range rs {
			b.add(&rs[i], entry)
		}
		return nil
	})
	b.matched = make([]bool, b.n)
	return b, err
}
