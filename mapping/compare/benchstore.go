package compare

import (
	"encoding/binary"
	"hash/maphash"
	"slices"
	"strconv"
	"strings"

	"github.com/layermap/layermap/printparse/msprobe"
)

// The bench side is held in memory in a packed, pointer-free form so that
// a multi-GB dump costs little more than its numbers and the garbage
// collector has nothing to scan in it. A row keeps only what its cells
// need, and nothing that can be derived: its name is its entry's name plus
// a numbered suffix (".input.0"), its compare key the entry's key prefix
// plus that suffix, its dtype and shape one numbered pair, integer
// literals their float; what does not fit that form (a string statistic,
// an md5, a data name and a tensor row's line, an odd name) goes into a
// per-row blob in a byte arena. Rows live in fixed-size chunks (growing
// the table never copies it) and the key index is an open-addressing
// table of row numbers tagged with their key hash, checked against the
// rebuilt key. A matched row is unpacked into a sideRow when needed.
//
// Measured on the generated 256 MB statistics dump (1.02M rows): the
// former store (names, keys and texts in the arena, 24-byte values, a Go
// map index) held 250 bytes per row; this one holds about 80.

const (
	chunkBits  = 16
	arenaChunk = 4 << 20
)

// ref addresses bytes in the arena: chunk<<48 | offset<<24 | length; 0 is
// the empty string.
type ref uint64

const refMax = 1<<24 - 1

type arena struct {
	chunk  int // chunk size (default arenaChunk)
	chunks [][]byte
	big    []string // strings of 16 MiB or more (never seen in dumps)
}

func (a *arena) add(s []byte) ref {
	if len(s) == 0 {
		return 0
	}
	if len(s) > refMax {
		a.big = append(a.big, string(s))
		return ref(0xffff)<<48 | ref(len(a.big)-1)<<24 | refMax
	}
	last := len(a.chunks) - 1
	if last < 0 || len(a.chunks[last])+len(s) > cap(a.chunks[last]) {
		a.chunks = append(a.chunks, make([]byte, 0, max(a.chunkSize(), len(s))))
		last++
	}
	off := len(a.chunks[last])
	a.chunks[last] = append(a.chunks[last], s...)
	return ref(last)<<48 | ref(off)<<24 | ref(len(s))
}

func (a *arena) addString(s string) ref {
	if len(s) == 0 {
		return 0
	}
	if len(s) > refMax {
		a.big = append(a.big, s)
		return ref(0xffff)<<48 | ref(len(a.big)-1)<<24 | refMax
	}
	last := len(a.chunks) - 1
	if last < 0 || len(a.chunks[last])+len(s) > cap(a.chunks[last]) {
		a.chunks = append(a.chunks, make([]byte, 0, max(a.chunkSize(), len(s))))
		last++
	}
	off := len(a.chunks[last])
	a.chunks[last] = append(a.chunks[last], s...)
	return ref(last)<<48 | ref(off)<<24 | ref(len(s))
}

func (a *arena) chunkSize() int {
	if a.chunk > 0 {
		return a.chunk
	}
	return arenaChunk
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

// interner numbers repeating strings; past 1<<20 distinct ones it stops
// numbering (the caller then stores the string itself).
type interner struct {
	strs []string
	idx  map[string]int32
}

func (t *interner) id(s string) (int32, bool) {
	if i, ok := t.idx[s]; ok {
		return i, true
	}
	if len(t.strs) >= 1<<20 {
		return 0, false
	}
	if t.idx == nil {
		t.idx = map[string]int32{}
	}
	i := int32(len(t.strs))
	t.strs = append(t.strs, s)
	t.idx[s] = i
	return i, true
}

// row flags
const (
	fKindBits  = 4  // 4 bits per statistic kind, bits 0-15
	fBool      = 16 // +i: Stats[i].Bool
	fIntText   = 20 // +i: Stats[i].Text is the integer Num prints as
	fNone      = 24 // NoneItem
	fKeyName   = 25 // key == name
	fKeyPrefix = 26 // key == entry key prefix + suffix
	fNameBlob  = 27 // name in the blob (else entry name + suffix)
	fPairBlob  = 28 // dtype and shape in the blob (else pair)
)

// blob field tags
const (
	bName = iota
	bKey
	bExtra
	bDtype
	bShape
	bGrad
	bText             // +i
	bLine = bText + 4 // after the four statistics' texts
)

type benchRow struct {
	f      [4]float64
	entry  int32
	suffix int32 // suffix id (when the name is not in the blob)
	pair   int32 // dtype/shape/requires_grad id (when not in the blob)
	flags  uint32
	blob   ref
}

type benchEntry struct {
	name   ref
	keyPre ref  // prefix of its rows' keys, when the first row set one
	hasPre bool // keyPre is set
}

type dsPair struct{ dtype, shape, grad string }

// benchSide is the bench dump held in memory: its rows and an index from
// compare key to rows.
type benchSide struct {
	mode     Mode
	chunks   [][]benchRow
	n        int
	rowCap   int // capacity of the first row chunk (default 1<<chunkBits)
	ar       arena
	suffixes interner
	pairs    []dsPair
	pairIdx  map[dsPair]int32
	entries  []benchEntry
	seed     maphash.Seed
	index    tagTable // key hash -> rows
	matched  []bool
	md5      bool // an entry has an md5
	buf      []int32
	blobBuf  []byte
	// simple keeps unpacked rows and a map index (the reference store,
	// for tests).
	simple    bool
	plain     []sideRow
	plainIdx  map[string][]int32
	plainEnts []string
}

func newBenchSide(mode Mode) *benchSide {
	return &benchSide{mode: mode, seed: maphash.MakeSeed(), pairIdx: map[dsPair]int32{}}
}

func (b *benchSide) len() int { return b.n }

// reset empties b for reuse, keeping its memory and its numbered strings.
func (b *benchSide) reset() {
	for i := range b.chunks {
		b.chunks[i] = b.chunks[i][:0]
	}
	b.chunks = b.chunks[:min(len(b.chunks), 1)]
	for i := range b.ar.chunks {
		b.ar.chunks[i] = b.ar.chunks[i][:0]
	}
	b.ar.chunks, b.ar.big = b.ar.chunks[:min(len(b.ar.chunks), 1)], nil
	b.entries = b.entries[:0]
	b.index.reset()
	b.n = 0
}

// addEntry registers an entry; its rows are added next with its number.
func (b *benchSide) addEntry(name string) int32 {
	if b.simple {
		b.plainEnts = append(b.plainEnts, name)
		return int32(len(b.plainEnts) - 1)
	}
	b.entries = append(b.entries, benchEntry{name: b.ar.addString(name)})
	return int32(len(b.entries) - 1)
}

func (b *benchSide) putBlob(tag byte, s string) {
	b.blobBuf = append(b.blobBuf, tag)
	b.blobBuf = binary.AppendUvarint(b.blobBuf, uint64(len(s)))
	b.blobBuf = append(b.blobBuf, s...)
}

// putBlobUint puts v in the blob as a field of its uvarint bytes.
func (b *benchSide) putBlobUint(tag byte, v uint64) {
	n := len(b.blobBuf)
	b.blobBuf = binary.AppendUvarint(append(b.blobBuf, tag, 0), v)
	b.blobBuf[n+1] = byte(len(b.blobBuf) - n - 2) // at most 10: one byte
}

// keepsText reports whether the store keeps a statistic's text beside
// its number (benchSide.add, benchItem): a string, a list msprobe keeps
// raw, an integer literal.
func keepsText(v msprobe.Value) bool {
	return v.Kind == msprobe.String || v.Kind == msprobe.Composite || (v.Kind == msprobe.Number && isIntLiteral(v.Text))
}

// intText reports whether an integer literal prints as strconv of its
// float (so that it need not be stored).
func intText(v msprobe.Value) bool {
	if v.Num != v.Num || v.Num > 1<<53 || v.Num < -(1<<53) {
		return false
	}
	return strconv.FormatInt(int64(v.Num), 10) == v.Text
}

// add adds a row of entry and returns its key hash.
func (b *benchSide) add(r *sideRow, entry int32) uint64 {
	if b.simple {
		b.addPlain(r, entry)
		return 0
	}
	it := &r.it
	e := &b.entries[entry]
	ename := b.ar.bytes(e.name)
	br := benchRow{entry: entry}
	b.blobBuf = b.blobBuf[:0]
	// name = entry name + suffix
	suffix := ""
	if strings.HasPrefix(it.Name, string(ename)) {
		suffix = it.Name[len(ename):]
		if id, ok := b.suffixes.id(suffix); ok {
			br.suffix = id
		} else {
			br.flags |= 1 << fNameBlob
		}
	} else {
		br.flags |= 1 << fNameBlob
	}
	if br.flags&(1<<fNameBlob) != 0 {
		b.putBlob(bName, it.Name)
	}
	// key
	switch {
	case r.key == it.Name:
		br.flags |= 1 << fKeyName
	case br.flags&(1<<fNameBlob) == 0 && strings.HasSuffix(r.key, suffix):
		pre := r.key[:len(r.key)-len(suffix)]
		if !e.hasPre {
			e.keyPre, e.hasPre = b.ar.addString(pre), true
		}
		if string(b.ar.bytes(e.keyPre)) == pre {
			br.flags |= 1 << fKeyPrefix
		} else {
			b.putBlob(bKey, r.key)
		}
	default:
		b.putBlob(bKey, r.key)
	}
	switch b.mode {
	case MD5:
		b.putBlob(bExtra, it.MD5)
	case Tensor:
		// the line a refused data_name is reported at (the rows are
		// read whole, their lines the file's)
		b.putBlob(bExtra, it.DataName)
		b.putBlobUint(bLine, uint64(max(it.Line, 0)))
	}
	p := dsPair{it.Dtype, it.Shape, it.RequiresGrad}
	if id, ok := b.pairIdx[p]; ok {
		br.pair = id
	} else if len(b.pairs) < 1<<20 {
		br.pair = int32(len(b.pairs))
		b.pairs = append(b.pairs, p)
		b.pairIdx[p] = br.pair
	} else {
		br.flags |= 1 << fPairBlob
		b.putBlob(bDtype, it.Dtype)
		b.putBlob(bShape, it.Shape)
		b.putBlob(bGrad, it.RequiresGrad)
	}
	if it.NoneItem {
		br.flags |= 1 << fNone
	}
	for i, v := range it.Stats {
		br.f[i] = v.Num
		br.flags |= uint32(v.Kind) << (fKindBits * i)
		if v.Bool {
			br.flags |= 1 << (fBool + i)
		}
		if keepsText(v) {
			if v.Kind == msprobe.Number && intText(v) {
				br.flags |= 1 << (fIntText + i)
			} else {
				b.putBlob(byte(bText+i), v.Text)
			}
		}
	}
	br.blob = b.ar.add(b.blobBuf)
	if b.n>>chunkBits >= len(b.chunks) {
		n := 1 << chunkBits
		if b.n == 0 && b.rowCap > 0 {
			n = b.rowCap
		}
		b.chunks = append(b.chunks, make([]benchRow, 0, n))
	}
	c := &b.chunks[len(b.chunks)-1]
	*c = append(*c, br)
	idx := int32(b.n)
	b.n++
	h := maphash.String(b.seed, r.key)
	b.index.insert(h, uint32(idx))
	return h
}

// benchItem is what a bench row keeps of its item: what its cells need.
func benchItem(it *msprobe.Item, entry string, mode Mode) msprobe.Item {
	keep := msprobe.Item{Name: it.Name, Entry: entry, Dtype: it.Dtype, Shape: it.Shape,
		RequiresGrad: it.RequiresGrad, NoneItem: it.NoneItem}
	switch mode {
	case MD5:
		keep.MD5 = it.MD5
	case Tensor:
		keep.DataName, keep.Line = it.DataName, it.Line
	}
	for i, v := range it.Stats {
		keep.Stats[i] = msprobe.Value{Kind: v.Kind, Num: v.Num, Bool: v.Bool}
		if keepsText(v) {
			keep.Stats[i].Text = v.Text
		}
	}
	return keep
}

func (b *benchSide) addPlain(r *sideRow, entry int32) {
	keep := benchItem(&r.it, b.plainEnts[entry], b.mode)
	if b.plainIdx == nil {
		b.plainIdx = map[string][]int32{}
	}
	b.plainIdx[r.key] = append(b.plainIdx[r.key], int32(b.n))
	b.plain = append(b.plain, sideRow{it: keep, key: r.key})
	b.n++
}

func (b *benchSide) at(i int32) *benchRow { return &b.chunks[i>>chunkBits][i&(1<<chunkBits-1)] }

// blobField returns a field of a row's blob.
func (b *benchSide) blobField(r *benchRow, tag byte) (string, bool) {
	f, ok := b.blobBytes(r, tag)
	return string(f), ok
}

// blobBytes returns a field of a row's blob, in the arena.
func (b *benchSide) blobBytes(r *benchRow, tag byte) ([]byte, bool) {
	if r.blob == 0 {
		return nil, false
	}
	p := b.ar.bytes(r.blob)
	for len(p) > 0 {
		t := p[0]
		n, w := binary.Uvarint(p[1:])
		p = p[1+w:]
		if t == tag {
			return p[:n], true
		}
		p = p[n:]
	}
	return nil, false
}

func (b *benchSide) name(r *benchRow) string {
	if r.flags&(1<<fNameBlob) != 0 {
		s, _ := b.blobField(r, bName)
		return s
	}
	return string(b.ar.bytes(b.entries[r.entry].name)) + b.suffixes.strs[r.suffix]
}

// keyParts returns a row's key as head+tail.
func (b *benchSide) keyParts(r *benchRow) (head []byte, tail string) {
	switch {
	case r.flags&(1<<fKeyName) != 0:
		if r.flags&(1<<fNameBlob) != 0 {
			s, _ := b.blobField(r, bName)
			return nil, s
		}
		return b.ar.bytes(b.entries[r.entry].name), b.suffixes.strs[r.suffix]
	case r.flags&(1<<fKeyPrefix) != 0:
		return b.ar.bytes(b.entries[r.entry].keyPre), b.suffixes.strs[r.suffix]
	}
	s, _ := b.blobField(r, bKey)
	return nil, s
}

func (b *benchSide) keyIs(i int32, key string) bool {
	head, tail := b.keyParts(b.at(i))
	return len(key) == len(head)+len(tail) && string(head) == key[:len(head)] && tail == key[len(head):]
}

// lookup returns the rows of a compare key, in file order. The result is
// valid until the next call.
func (b *benchSide) lookup(key string) []int32 {
	if b.simple {
		return b.plainIdx[key]
	}
	return b.lookupHash(key, maphash.String(b.seed, key))
}

// lookupHash is lookup with the key's hash under b.seed.
func (b *benchSide) lookupHash(key string, h uint64) []int32 {
	b.buf = b.buf[:0]
	b.index.find(h, func(n uint32) bool {
		if row := int32(n); b.keyIs(row, key) {
			b.buf = append(b.buf, row)
		}
		return true
	})
	if len(b.buf) > 1 {
		slices.Sort(b.buf)
	}
	return b.buf
}

func (b *benchSide) pair(r *benchRow) dsPair {
	if r.flags&(1<<fPairBlob) != 0 {
		var p dsPair
		p.dtype, _ = b.blobField(r, bDtype)
		p.shape, _ = b.blobField(r, bShape)
		p.grad, _ = b.blobField(r, bGrad)
		return p
	}
	return b.pairs[r.pair]
}

func (b *benchSide) dtype(i int32) string {
	if b.simple {
		return b.plain[i].it.Dtype
	}
	return b.pair(b.at(i)).dtype
}

func (b *benchSide) key(i int32) string {
	if b.simple {
		return b.plain[i].key
	}
	head, tail := b.keyParts(b.at(i))
	return string(head) + tail
}

// row unpacks row i.
func (b *benchSide) row(i int32) *sideRow { return b.rowInto(new(sideRow), i) }

// rowInto unpacks row i into dst.
func (b *benchSide) rowInto(dst *sideRow, i int32) *sideRow {
	if b.simple {
		*dst = b.plain[i]
		return dst
	}
	r := b.at(i)
	p := b.pair(r)
	it := msprobe.Item{Name: b.name(r), Entry: b.ar.str(b.entries[r.entry].name), Dtype: p.dtype, Shape: p.shape,
		RequiresGrad: p.grad, NoneItem: r.flags&(1<<fNone) != 0}
	switch b.mode {
	case MD5:
		it.MD5, _ = b.blobField(r, bExtra)
	case Tensor:
		it.DataName, _ = b.blobField(r, bExtra)
		if f, ok := b.blobBytes(r, bLine); ok {
			line, _ := binary.Uvarint(f)
			it.Line = int(line)
		}
	}
	for k := range r.f {
		v := msprobe.Value{Kind: msprobe.ValueKind(r.flags >> (fKindBits * k) & (1<<fKindBits - 1)), Num: r.f[k],
			Bool: r.flags&(1<<(fBool+k)) != 0}
		if r.flags&(1<<(fIntText+k)) != 0 {
			v.Text = strconv.FormatInt(int64(v.Num), 10)
		} else if v.Kind == msprobe.String || v.Kind == msprobe.Number || v.Kind == msprobe.Composite {
			v.Text, _ = b.blobField(r, byte(bText+k))
		}
		it.Stats[k] = v
	}
	key := it.Name
	if r.flags&(1<<fKeyName) == 0 {
		key = b.key(i)
	}
	*dst = sideRow{it: it, key: key}
	return dst
}

// collectBench reads the whole bench side.
func collectBench(src Source, cfg *Config, renumber bool) (*benchSide, error) {
	b := newBenchSide(cfg.Mode)
	b.simple = cfg.simpleBench
	err := forEachRow(src, cfg, renumber, nil, nil, func(e *msprobe.Entry, rs []sideRow) error {
		b.md5 = b.md5 || e.HasMD5
		if len(rs) == 0 {
			return nil
		}
		entry := b.addEntry(e.Name)
		for i := range rs {
			b.add(&rs[i], entry)
		}
		return nil
	})
	b.matched = make([]bool, b.n)
	return b, err
}
