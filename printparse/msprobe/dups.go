package msprobe

import (
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"math/bits"
	"os"
	"strconv"

	"github.com/layermap/layermap/printparse/offheap"
	"github.com/layermap/layermap/printparse/source"
)

// Repeated keys of "data". msprobe reads dump.json with Python's
// json.load: a key of "data" given twice is one entry, at the place of its
// first occurrence with the body of its last (a dict keeps the first
// key's position and the last value), and a second "data" key replaces
// the first whole. The readers stream the file, so they cannot take back
// entries already handed out: on the common path they only notice a
// repeat (a 48-bit hash per name, nothing per row) and stop with an
// error wrapping ErrRepeatedKey; the caller then reads the file again
// with the Repeats FindRepeats gives (the rare path), and the readers
// hand out each entry once, in Python's order with Python's body.

// ErrRepeatedKey is wrapped by the *source.Error readers return when the
// "data" object of a dump.json repeats a key (or the file repeats "data"):
// read the file again with FindRepeats' plan.
var ErrRepeatedKey = errors.New("Python's json.load keeps the last value of a repeated key, in the first one's place")

// Repeats is where a dump.json's repeated keys stand: for each name given
// more than once in the "data" read, its last occurrence; and how many
// "data" keys the file has (only the last is read).
type Repeats struct {
	path string
	last map[string]memberAt
	data int
}

// memberAt is one member of "data": the offset of its name, the name's
// line, and the offset just past its body.
type memberAt struct {
	off, end int64
	line     int
}

// FindRepeats reads the names of the dump.json at path and returns where
// its repeated keys stand (nil when there are none).
func FindRepeats(path string) (*Repeats, error) {
	f, err := source.Open(path, source.MaxDumpJSON)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	lx := newLexer(f, path)
	r := &Repeats{path: path}
	var seen map[string]memberAt
	err = readTop(lx, &Header{}, func() error {
		r.data++
		seen = map[string]memberAt{}
		r.last = map[string]memberAt{}
		return forEachDataMember(lx, nil, func(name []byte, line int, off int64, _ *memberAt) error {
			if err := lx.skipValue("an entry body"); err != nil {
				return err
			}
			at := memberAt{off: off, end: lx.read + int64(lx.pos), line: line}
			if _, ok := seen[string(name)]; ok {
				r.last[string(name)] = at
			} else {
				seen[string(name)] = at
			}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	if len(r.last) == 0 && r.data <= 1 {
		return nil, nil
	}
	return r, nil
}

// FindRepeatsAfter returns the plan to read again the file that err
// stopped a read of, or nil when reading again would change nothing. For
// an error wrapping ErrRepeatedKey that is the file's Repeats (an empty
// plan when two names' hashes collided); for another *source.Error of a
// dump file, its Repeats when it has repeated keys: the refused body may
// be one Python replaces by a later one.
func FindRepeatsAfter(err error) (*Repeats, error) {
	var se *source.Error
	if !errors.As(err, &se) || se.File == "" {
		return nil, nil
	}
	if !errors.Is(err, ErrRepeatedKey) {
		if r, ferr := FindRepeats(se.File); ferr == nil && r != nil {
			return r, nil
		}
		return nil, nil
	}
	r, ferr := FindRepeats(se.File)
	if ferr != nil {
		return nil, ferr
	}
	if r == nil {
		r = NoRepeats(se.File) // the hashes of two names collided
	}
	return r, nil
}

// NoRepeats is the plan for the dump.json at path when a reading of it
// found one "data" key and no repeated name in it (as a skim of the whole
// file does): readers given it look for no repeats, and keep nothing per
// name to find them.
func NoRepeats(path string) *Repeats { return &Repeats{path: path, data: 1} }

// Path is the dump.json the plan is for.
func (r *Repeats) Path() string {
	if r == nil {
		return ""
	}
	return r.path
}

// keyFilter decides, member by member, what a reader of "data" does: on
// the common path (plan nil) it records a hash of each name and stops at
// a repeat; with a plan it hands a repeated name out once, at its first
// place, relocated to its last occurrence, and skips the others.
type keyFilter struct {
	file  string
	plan  *Repeats
	set   nameSet
	given map[string]bool // repeated names handed out (plan set)
	data  int             // "data" keys seen
	size  int64           // the input's bytes (0: unknown): set's growth
}

func newKeyFilter(file string, plan *Repeats) *keyFilter {
	return &keyFilter{file: file, plan: plan}
}

// dataKey is called at each "data" key: false means skip its value (an
// earlier "data" that a later one replaces); a second "data" without a
// plan is an error.
func (k *keyFilter) dataKey(line int) (bool, error) {
	k.data++
	if k.plan == nil {
		if k.data > 1 {
			return false, &source.Error{File: k.file, Line: line, Expected: `one "data" key`, Found: "a second one", Err: ErrRepeatedKey}
		}
		return true, nil
	}
	return k.data == max(k.plan.data, 1), nil
}

// onData reads the value of a "data" key at lx with walk, or skips it
// when a later "data" replaces it (see dataKey).
func (k *keyFilter) onData(lx *lexer, walk func() error) error {
	read, err := k.dataKey(lx.line)
	if err != nil {
		return err
	}
	if !read {
		return lx.skipValue(`the value of "data"`)
	}
	// The names are checked within one "data" (a second one without a
	// plan is refused above).
	defer k.set.release()
	return walk()
}

// member tells what to do with the member name at line and byte off:
// give it (at nil: its own body; else the body at at), or skip it (skip
// true).
func (k *keyFilter) member(name []byte, line int, off int64) (at *memberAt, skip bool, err error) {
	if k.plan == nil {
		if k.set.add(name, off, k.size) {
			return nil, false, &source.Error{File: k.file, Line: line, Expected: `each key of "data" once`,
				Found: strconv.Quote(string(name)) + " again", Err: ErrRepeatedKey}
		}
		return nil, false, nil
	}
	if _, ok := k.plan.last[string(name)]; !ok {
		return nil, false, nil // (no copy of the member on the heap for it)
	}
	if k.given[string(name)] {
		return nil, true, nil
	}
	if k.given == nil {
		k.given = map[string]bool{}
	}
	k.given[string(name)] = true
	last := k.plan.last[string(name)]
	return &last, false, nil
}

// nameSet is a set of hashes of names: open addressing, 6 bytes a slot
// holding a hash's low 48 bits (0 marks an empty slot), at most 3/4 full,
// outside the collected heap once large (printparse/offheap) until
// release. It is split in nameParts tables by the hash's top bits, each
// growing on its own, so that a growth holds a part twice, not the whole
// set. A full table grows towards what the names so far foretell for the
// whole input (their count over the bytes read, times the input's size;
// at most doubling), so that a file of even density is rehashed a few
// times, not at every quarter, and ends about 7/10 full; with no size
// known it grows by a quarter. 8 to 10 bytes a name; at most 16 when the
// density changes along the file. Two names are taken for one when the
// 51 bits of their hashes the set keeps agree (part and slot): about once
// in 4,500 files of a million names; the caller's rare path then reads
// the names themselves (FindRepeats) and finds no repeat.
type nameSet struct {
	seed  maphash.Seed
	parts [nameParts]namePart
	n     int // names held
}

const (
	nameParts = 16
	slotBytes = 6
	slotMask  = 1<<48 - 1
)

type namePart struct {
	slots []byte // slotBytes a slot, little-endian
	free  func()
	n     int // names held
	size  int // slots
}

// add records name, read at byte off of an input of size bytes (0:
// unknown), and reports whether its hash was there already.
func (s *nameSet) add(name []byte, off, size int64) bool {
	if s.parts[0].slots == nil {
		s.seed = maphash.MakeSeed()
		for k := range s.parts {
			s.parts[k].alloc(64)
		}
	}
	h := maphash.Bytes(s.seed, name)
	p := &s.parts[h>>60]
	v := h&slotMask | 1
	if p.n >= p.size/4*3 {
		p.grow(s.foretold(off, size))
	}
	for i := p.home(v); ; i++ {
		if i == p.size {
			i = 0
		}
		switch p.at(i) {
		case 0:
			p.set(i, v)
			p.n++
			s.n++
			return false
		case v:
			return true
		}
	}
}

func (p *namePart) alloc(size int) {
	p.slots, p.free = offheap.Make[byte](size * slotBytes)
	p.size = size
}

func (p *namePart) at(i int) uint64 {
	b := p.slots[i*slotBytes : i*slotBytes+slotBytes : i*slotBytes+slotBytes]
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 | uint64(b[4])<<32 | uint64(b[5])<<40
}

func (p *namePart) set(i int, v uint64) {
	b := p.slots[i*slotBytes : i*slotBytes+slotBytes : i*slotBytes+slotBytes]
	b[0], b[1], b[2], b[3], b[4], b[5] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24), byte(v>>32), byte(v>>40)
}

// home is where v's probe starts: its bits scaled to the table's size.
func (p *namePart) home(v uint64) int {
	hi, _ := bits.Mul64(v<<16, uint64(p.size))
	return int(hi)
}

// foretold is how many slots a part needs for the names the input's
// density so far foretells (at 7/10 full), or 0 when that is not known.
func (s *nameSet) foretold(off, size int64) int {
	if size <= 0 || off <= 0 || off >= size || s.n < 1024 {
		return 0
	}
	names := float64(s.n) * float64(size) / float64(off)
	return int(min(names/nameParts*10/7, 1<<31))
}

// grow rehashes the part into want slots, but at least a quarter more
// than it has and at most twice as many (a density that changes along
// the file costs at most a doubling's slack).
func (p *namePart) grow(want int) {
	old, free, size := *p, p.free, p.size
	p.alloc(min(max(size+size/4, want), 2*size))
	for k := 0; k < size; k++ {
		v := old.at(k)
		if v == 0 {
			continue
		}
		i := p.home(v)
		for p.at(i) != 0 {
			if i++; i == p.size {
				i = 0
			}
		}
		p.set(i, v)
	}
	free()
}

// release frees the set; it is empty afterwards.
func (s *nameSet) release() {
	for k := range s.parts {
		if f := s.parts[k].free; f != nil {
			f()
		}
	}
	*s = nameSet{}
}

// inputSize is the size of the file r reads, or 0.
func inputSize(r io.Reader) int64 {
	if f, ok := r.(interface{ Stat() (os.FileInfo, error) }); ok {
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
			return st.Size()
		}
	}
	return 0
}

// relocator parses the body of a member elsewhere in the same file: a
// second reader of the file, used on the rare path only.
type relocator struct {
	f  *os.File
	lx *lexer
}

// body positions a lexer after the name and colon of the member at at
// and returns it, ready to read the body.
func (r *relocator) body(path string, at *memberAt) (*lexer, error) {
	if r.f == nil {
		f, err := source.Open(path, source.MaxDumpJSON)
		if err != nil {
			return nil, err
		}
		r.f = f
	}
	if _, err := r.f.Seek(at.off, io.SeekStart); err != nil {
		return nil, fmt.Errorf("read dump: %w", err)
	}
	if r.lx == nil {
		r.lx = newLexer(r.f, path)
	}
	lx := r.lx
	lx.r, lx.pos, lx.end, lx.rerr, lx.read, lx.line = r.f, 0, 0, nil, at.off, at.line
	if c, ok := lx.peek(); !ok || c != '"' {
		return nil, lx.errorf("expected an entry name string, found %s", lx.describe())
	}
	if err := lx.skipString(); err != nil {
		return nil, err
	}
	if err := lx.expect(':', "':' after the entry name"); err != nil {
		return nil, err
	}
	return lx, nil
}

func (r *relocator) close() {
	if r.f != nil {
		r.f.Close()
	}
}
