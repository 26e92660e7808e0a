package msprobe

import (
	"encoding/binary"
	"hash/maphash"
	"iter"
	"math/bits"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/layermap/layermap/printparse/offheap"
)

// Names is a dump's entry names in file order, held in about 8 bytes a
// name: each name as a pattern and a number, the pattern shared by the
// names that differ only there. The number is the last of the name's
// dot-separated parts that is a decimal number as Python writes it
// (msprobe's call count: "Functional.linear.5.forward",
// "Module.layers.0.mlp.MLP.forward.3"), so a dump of half a million
// entries has a thousand patterns or so. A name without such a part is
// its own pattern.
//
// The zero Names is empty and ready: add the names in order. A nil Names
// has none.
type Names struct {
	refs *offheap.List[nameRef] // outside the heap: it is most of a Names
	pt   Patterns

	index    sync.Once // Find's table, made on first use
	seed     maphash.Seed
	slots    []int32     // open addressing: a name's position + 1, 0 for none
	free     func()      // releases slots
	distinct int         // set once, before counted
	counted  atomic.Bool // distinct is set (kept when the index goes)
}

// nameRef is one name: its pattern and its number.
type nameRef struct {
	pat int32
	num uint32
}

// Patterns interns the patterns of names, as Names splits them: a name
// is a pattern (an int32 id, in the order the patterns come) and a
// number. The zero Patterns is empty and ready.
type Patterns struct {
	rows bool // the number is a row name's (RowPatterns)
	pats []pattern
	ids  map[string]int32 // a pattern's key (appendKey) -> index in pats
	key  []byte           // scratch for Add's key
}

// RowPatterns returns an empty Patterns for row names ("<entry>.input.0",
// "<entry>.parameters.weight"), whose number is their entry's call count:
// the last part that is a number and not the name's last part, else the
// last part that is a number. The rows of the entries that differ only
// in their call count then share a pattern.
func RowPatterns() *Patterns { return &Patterns{rows: true} }

// Add returns the pattern of name, added if new, and its number.
func (p *Patterns) Add(name string) (id int32, num uint32) {
	var cut int32
	p.key, cut, num = p.appendKey(p.key[:0], name)
	if p.ids == nil {
		p.ids = patternIDs(p.pats)
	}
	id, ok := p.ids[string(p.key)]
	if !ok {
		id = int32(len(p.pats))
		k := string(p.key)
		p.ids[k] = id
		p.pats = append(p.pats, pattern{text: k[:len(k)-4], cut: cut})
	}
	return id, num
}

// Find returns the pattern of name and its number; false: name has a
// pattern not added. Finds may run beside each other, not beside Add.
func (p *Patterns) Find(name string) (id int32, num uint32, ok bool) {
	var buf [256]byte
	key, _, num := p.appendKey(buf[:0], name)
	id, ok = p.ids[string(key)]
	return id, num, ok
}

// appendKey appends name's pattern key (see patternIDs) to dst, and
// returns where the number goes and the number.
func (p *Patterns) appendKey(dst []byte, name string) (key []byte, cut int32, num uint32) {
	lo, hi, num := splitNumber(name)
	if p.rows {
		lo, hi, num = splitRowNumber(name)
	}
	cut = int32(lo)
	if lo < 0 {
		lo, hi = len(name), len(name)
	}
	return appendCut(append(append(dst, name[:lo]...), name[hi:]...), cut), cut, num
}

// Numbered reports whether the names of pattern id have a number (else
// there is one name of it, whatever the number given).
func (p *Patterns) Numbered(id int32) bool { return p.pats[id].cut >= 0 }

// Name returns the name of pattern id with number num, made anew unless
// it has no number.
func (p *Patterns) Name(id int32, num uint32) string {
	return p.pats[id].name(num)
}

// AppendName appends the name of pattern id with number num to dst.
func (p *Patterns) AppendName(dst []byte, id int32, num uint32) []byte {
	return p.pats[id].append(dst, num)
}

// Len is the number of patterns.
func (p *Patterns) Len() int {
	if p == nil {
		return 0
	}
	return len(p.pats)
}

// pattern is a name with its number cut out: text is what comes before
// the number and after it, cut where the number goes (-1: no number).
type pattern struct {
	text string
	cut  int32
}

// maxNameNumber bounds the numbers a pattern takes: larger ones (and
// zero-padded ones) stay in the pattern's text.
const maxNameNumber = 999_999_999

// NamesOf returns names as a Names.
func NamesOf(names []string) *Names {
	n := &Names{}
	for _, s := range names {
		n.AddString(s)
	}
	n.Done()
	return n
}

// Add appends a name.
func (n *Names) Add(name []byte) {
	n.AddString(unsafe.String(unsafe.SliceData(name), len(name)))
}

// AddString appends a name.
func (n *Names) AddString(name string) {
	if n.slots != nil {
		panic("msprobe: Names.Add after Find")
	}
	id, num := n.pt.Add(name)
	if n.refs == nil {
		n.refs = &offheap.List[nameRef]{}
		offheap.Cleanup(n, n.refs.Release)
	}
	n.refs.Add(nameRef{pat: id, num: num})
}

// splitNumber finds the number of name: the last dot-separated part that
// is "0" or a decimal without a leading zero, up to maxNameNumber. It
// returns where it starts and ends, and its value; lo is -1 for none.
func splitNumber(name string) (lo, hi int, num uint32) {
	hi = len(name)
	for hi >= 0 {
		lo = strings.LastIndexByte(name[:hi], '.') + 1
		part := name[lo:hi]
		if v, ok := callNumber(part); ok {
			return lo, hi, v
		}
		if lo == 0 {
			break
		}
		hi = lo - 1
	}
	return -1, -1, 0
}

// splitRowNumber is splitNumber for a row name: the last number before
// the name's last part, if any.
func splitRowNumber(name string) (lo, hi int, num uint32) {
	if end := strings.LastIndexByte(name, '.'); end > 0 {
		if lo, hi, num := splitNumber(name[:end]); lo >= 0 {
			return lo, hi, num
		}
	}
	return splitNumber(name)
}

// callNumber reads s as a number Python writes with str(int): "0" or
// digits without a leading zero, up to maxNameNumber.
func callNumber(s string) (uint32, bool) {
	if len(s) == 0 || len(s) > 9 || len(s) > 1 && s[0] == '0' {
		return 0, false
	}
	var v uint32
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + uint32(c-'0')
	}
	return v, true
}

// Len is the number of names.
func (n *Names) Len() int {
	if n == nil || n.refs == nil {
		return 0
	}
	return n.refs.Len()
}

// Patterns is the number of distinct patterns.
func (n *Names) Patterns() int {
	if n == nil {
		return 0
	}
	return n.pt.Len()
}

// At returns name i, made anew unless it has no number.
func (n *Names) At(i int) string {
	r := n.refs.At(i)
	return n.pt.Name(r.pat, r.num)
}

// Append appends name i to dst.
func (n *Names) Append(dst []byte, i int) []byte {
	r := n.refs.At(i)
	return n.pt.AppendName(dst, r.pat, r.num)
}

// name is the pattern's name with number num, made anew unless the
// pattern has no number.
func (p pattern) name(num uint32) string {
	if p.cut < 0 {
		return p.text
	}
	b := p.append(make([]byte, 0, len(p.text)+10), num)
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// append appends the pattern's name with number num to dst.
func (p pattern) append(dst []byte, num uint32) []byte {
	if p.cut < 0 {
		return append(dst, p.text...)
	}
	var digits [20]byte
	k := appendDigits(&digits, uint64(num))
	dst = append(dst, p.text[:p.cut]...)
	dst = append(dst, digits[k:]...)
	return append(dst, p.text[p.cut:]...)
}

// Is reports whether name i is s.
func (n *Names) Is(i int, s string) bool {
	r := n.refs.At(i)
	p := n.pt.pats[r.pat]
	if p.cut < 0 {
		return p.text == s
	}
	head, tail := p.text[:p.cut], p.text[p.cut:]
	if len(s) <= len(p.text) || s[:len(head)] != head || s[len(s)-len(tail):] != tail {
		return false
	}
	// the number as written: the part between reads back as it (no
	// leading zero, at most nine digits)
	v, ok := callNumber(s[len(head) : len(s)-len(tail)])
	return ok && v == r.num
}

// All yields each name with its position, in order, read in place: a
// name is valid until the next is yielded (copy it to keep it).
func (n *Names) All() iter.Seq2[int, string] {
	return func(yield func(int, string) bool) {
		var b []byte
		for i := range n.Len() {
			b = n.Append(b[:0], i)
			if !yield(i, unsafe.String(unsafe.SliceData(b), len(b))) {
				return
			}
		}
	}
}

// Strings returns every name (nil for none).
func (n *Names) Strings() []string {
	if n.Len() == 0 {
		return nil
	}
	out := make([]string, n.Len())
	for i := range out {
		out[i] = n.At(i)
	}
	return out
}

// Done drops what adding needs (the patterns' index); adding afterwards
// builds it again.
func (n *Names) Done() {
	if n != nil {
		n.pt.Done()
	}
}

// Done drops what Add and Find need (the patterns' index), for a holder
// that only makes names from now on; a later Add builds it again, and
// Find finds nothing until then.
func (p *Patterns) Done() { p.ids, p.key = nil, nil }

// patternIDs indexes pats by their keys (appendCut of text and cut).
func patternIDs(pats []pattern) map[string]int32 {
	ids := make(map[string]int32, len(pats))
	for id, p := range pats {
		ids[string(appendCut([]byte(p.text), p.cut))] = int32(id)
	}
	return ids
}

// appendCut ends a pattern's key (its text) with where its number goes.
func appendCut(key []byte, cut int32) []byte {
	return binary.LittleEndian.AppendUint32(key, uint32(cut))
}

// Find returns the position of the last name that is s. The names must
// all be added before the first Find or Distinct, which index them: 8 to
// 16 bytes a name, outside the heap, and nothing else (the names are
// compared where they are).
func (n *Names) Find(s string) (int, bool) {
	if n.Len() == 0 {
		return 0, false
	}
	n.index.Do(n.build)
	mask := uint64(len(n.slots) - 1)
	for k := maphash.String(n.seed, s) & mask; ; k = (k + 1) & mask {
		at := n.slots[k]
		if at == 0 {
			return 0, false
		}
		if n.Is(int(at-1), s) {
			return int(at - 1), true
		}
	}
}

// FindFrom is Find for a reader that asks for the names about in their
// order: it looks first among the window names from position from on
// (the first of them that is s: Find's answer where the names are
// distinct), and only then indexes them.
func (n *Names) FindFrom(s string, from, window int) (int, bool) {
	for k := max(from, 0); k < min(n.Len(), from+window); k++ {
		if n.Is(k, s) {
			return k, true
		}
	}
	return n.Find(s)
}

// Distinct is the number of distinct names: counted by the first Find
// or Distinct, which index the names, and kept when the index goes.
func (n *Names) Distinct() int {
	if n.Len() == 0 {
		return 0
	}
	if !n.counted.Load() {
		n.index.Do(n.build)
	}
	return n.distinct
}

// Extends reports whether a name is another followed by '.' and more. It
// looks prefixes up with Find (making its index), a pattern at a time
// where it can: a prefix that ends before a pattern's number is the same
// for all its names, and one that keeps the number can only be a name of
// the pattern that is the prefix with the number cut out.
func (n *Names) Extends() bool {
	if n.Len() == 0 {
		return false
	}
	ids := patternIDs(n.pt.pats) // not n.pt.ids, which Done dropped: Extends may run beside other readers
	var key []byte
	// ends[id]: where the prefixes that keep pattern id's number end in
	// its text, for those a pattern of the prefix exists for
	var ends map[int32][]int
	for id, p := range n.pt.pats {
		for k := 0; k < len(p.text); k++ {
			if p.text[k] != '.' {
				continue
			}
			if p.cut < 0 || k < int(p.cut) {
				if _, ok := n.Find(p.text[:k]); ok {
					return true
				}
				continue
			}
			key = appendCut(append(key[:0], p.text[:k]...), p.cut)
			if _, ok := ids[string(key)]; ok {
				if ends == nil {
					ends = map[int32][]int{}
				}
				ends[int32(id)] = append(ends[int32(id)], k)
			}
		}
	}
	if ends == nil {
		return false
	}
	var b []byte
	for i := range n.Len() {
		r := n.refs.At(i)
		p := n.pt.pats[r.pat]
		for _, k := range ends[r.pat] {
			b = pattern{text: p.text[:k], cut: p.cut}.append(b[:0], r.num)
			if _, ok := n.Find(unsafe.String(unsafe.SliceData(b), len(b))); ok {
				return true
			}
		}
	}
	return false
}

// Unindex frees the table Find and Distinct made, for a holder that is
// done looking names up; a later Find makes it again (Distinct keeps its
// count). It must not run beside them.
func (n *Names) Unindex() {
	if n == nil || n.free == nil {
		return
	}
	n.free()
	n.slots, n.free = nil, nil
	n.index = sync.Once{}
}

// build indexes the names for Find: a table of twice their number, a
// later name taking the place of an earlier equal one.
func (n *Names) build() {
	n.seed = maphash.MakeSeed()
	n.slots, n.free = offheap.Make[int32](1 << bits.Len(uint(2*n.Len()-1)))
	offheap.Cleanup(n, n.free)
	mask := uint64(len(n.slots) - 1)
	distinct := 0
	for i, s := range n.All() {
		k := maphash.String(n.seed, s) & mask
		for ; n.slots[k] != 0 && !n.Is(int(n.slots[k]-1), s); k = (k + 1) & mask {
		}
		if n.slots[k] == 0 {
			distinct++
		}
		n.slots[k] = int32(i + 1)
	}
	if !n.counted.Load() { // a later index (after Unindex) leaves the count to readers
		n.distinct = distinct
		n.counted.Store(true)
	}
}
