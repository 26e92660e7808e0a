package msprobe

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"math/bits"
	"os"
	"slices"
	"strconv"

	"github.com/layermap/layermap/printparse/offheap"
	"github.com/layermap/layermap/printparse/source"
)

// Repeated keys of "data". msprobe reads dump.json with Python's
// json.load: a key of "data" given twice is one entry, at the place of its
// first occurrence with the body of its last (a dict keeps the first
// key's position and the last value), and a second "data" key replaces
// the first whole. The readers stream the file, so they cannot take back
// entries already handed out: on the common path they keep a 52-bit
// hash of each name (6 bytes, nothing per row) and, once "data" ends,
// stop with an error wrapping ErrRepeatedKey when two names repeat; the
// caller then forgets the entries it was given (the repeats among them)
// and reads the file again with the Repeats FindRepeats gives (the rare
// path), and the readers hand out each entry once, in Python's order
// with Python's body.

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
// plan when no key repeats: two names' hashes collided, and the reader
// could not read the names again to tell, see keyFilter.check); for
// another *source.Error of a dump file, its Repeats when it has repeated
// keys: the refused body may be one Python replaces by a later one.
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
// the common path (plan nil) it keeps a hash of each name and looks for
// a repeat when "data" ends; with a plan it hands a repeated name out
// once, at its first place, relocated to its last occurrence, and skips
// the others.
type keyFilter struct {
	file     string
	plan     *Repeats
	set      nameSet
	maxNamed int
	given    map[string]bool // repeated names handed out (plan set)
	data     int             // "data" keys seen
}

// repeatCheck changes how a keyFilter checks for repeated names (tests;
// the zero value is the readers' check).
type repeatCheck struct {
	hash     func(name []byte) uint64 // nil: the set's own
	maxNamed int                      // 0: maxNamed
}

func newKeyFilter(file string, plan *Repeats, c repeatCheck) *keyFilter {
	return &keyFilter{file: file, plan: plan, set: nameSet{hash: c.hash}, maxNamed: cmp.Or(c.maxNamed, maxNamed)}
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
// when a later "data" replaces it (see dataKey). Without a plan, the
// names walk met are checked once it is done (a second "data" is
// refused above).
func (k *keyFilter) onData(lx *lexer, walk func() error) error {
	read, err := k.dataKey(lx.line)
	if err != nil {
		return err
	}
	if !read {
		return lx.skipValue(`the value of "data"`)
	}
	defer k.set.release()
	if err := walk(); err != nil || k.plan != nil {
		return err
	}
	return k.check(lx.line)
}

// member tells what to do with the member name at line and byte off:
// give it (at nil: its own body; else the body at at), or skip it (skip
// true). Without a plan every member is given, its name's hash kept.
func (k *keyFilter) member(name []byte, line int, off int64) (at *memberAt, skip bool) {
	if k.plan == nil {
		k.set.add(name)
		return nil, false
	}
	if _, ok := k.plan.last[string(name)]; !ok {
		return nil, false // (no copy of the member on the heap for it)
	}
	if k.given[string(name)] {
		return nil, true
	}
	if k.given == nil {
		k.given = map[string]bool{}
	}
	k.given[string(name)] = true
	last := k.plan.last[string(name)]
	return &last, false
}

// check tells whether the names of "data" (read up to its end, at line
// end) repeat: nil when their hashes do not. Hashes that agree are rare
// (a repeated key, or two names colliding): the file's "data" is read
// again, its names only, for the first name given twice: the error names
// it at the line of its second occurrence, as Python would see it. Hashes
// that only collided give nil once that reading has met the very names
// the set was given (their count and the sum of their hashes). When the
// file cannot be read again so, or more than maxNamed names would be
// held to tell (a file whose names nearly all repeat), the error names
// the end of "data" (FindRepeats, called afterwards, holds every name).
func (k *keyFilter) check(end int) error {
	s := &k.set
	reps := s.repeats()
	if len(reps) == 0 {
		return nil
	}
	failed := &source.Error{File: k.file, Line: end, Expected: `each key of "data" once`, Found: "a key again", Err: ErrRepeatedKey}
	f, err := source.Open(k.file, source.MaxDumpJSON)
	if err != nil {
		return failed
	}
	defer f.Close()
	lx := newLexer(f, k.file)
	var found error
	seen := map[string]bool{}
	n, sum := 0, uint64(0)
	err = readTop(lx, &Header{}, func() error {
		err := forEachDataMember(lx, nil, func(name []byte, line int, _ int64, _ *memberAt) error {
			h := s.hashOf(name)
			n, sum = n+1, sum+h
			if _, ok := slices.BinarySearch(reps, hashKey(h)); ok {
				if seen[string(name)] {
					found = &source.Error{File: k.file, Line: line, Expected: `each key of "data" once`,
						Found: strconv.Quote(string(name)) + " again", Err: ErrRepeatedKey}
					return errStop
				}
				if len(seen) == k.maxNamed {
					return errTooMany
				}
				seen[string(name)] = true
			}
			return lx.skipValue("an entry body")
		})
		if err != nil {
			return err
		}
		return errStop // the first "data" only
	})
	switch {
	case found != nil:
		return found
	case err == errStop && n == s.n && sum == s.sum:
		return nil // hashes collided
	}
	return failed
}

// maxNamed bounds the names keyFilter.check holds (the rare path's
// memory beside the reader's: about 100 bytes a name).
const maxNamed = 4096

var errTooMany = errors.New("too many names")

// nameSet keeps a 52-bit hash of each name it is given, to tell at the
// end which agree: 4 bits choose one of nameParts lists, the other 48
// are appended to it: 6 bytes a name, outside the collected heap once
// large (printparse/offheap). Appending writes memory in order, where
// an insert into a hash table was a cache miss a name; repeats sorts the
// lists at the end, one at a time. Two distinct names agree on all 52
// bits about once in 9,000 files of a million names (n²/2 pairs over
// 2⁵²); the reader then reads the names again (keyFilter.check) and
// finds no repeat.
type nameSet struct {
	seed  maphash.Seed
	hash  func([]byte) uint64 // tests: instead of maphash
	parts [nameParts]hashList
	n     int    // names given
	sum   uint64 // of their hashes
}

const (
	nameParts = 16
	hashBytes = 6
	hashMask  = 1<<48 - 1
)

// add keeps name's hash.
func (s *nameSet) add(name []byte) {
	if s.n == 0 && s.hash == nil {
		s.seed = maphash.MakeSeed()
	}
	h := s.hashOf(name)
	s.n++
	s.sum += h
	s.parts[h>>60].add(h & hashMask)
}

func (s *nameSet) hashOf(name []byte) uint64 {
	if s.hash != nil {
		return s.hash(name)
	}
	return maphash.Bytes(s.seed, name)
}

// hashKey is the 52 bits of h the set keeps, as repeats gives them: the
// part above the 48 bits kept in it.
func hashKey(h uint64) uint64 { return h>>60<<48 | h&hashMask }

// repeats returns the hashes (hashKey) given more than once, in
// increasing order, freeing the lists: each part in turn is spread into
// a scratch as large as the largest part by a counting sort on the top
// bits of its hashes (about bucketHashes a bucket), and the hashes of
// each bucket are compared. The set keeps its seed, count and sum.
func (s *nameSet) repeats() []uint64 {
	largest := 0
	for k := range s.parts {
		largest = max(largest, s.parts[k].n)
	}
	if largest < 2 {
		s.freeParts()
		return nil
	}
	dst, freeDst := offheap.Make[byte](largest * hashBytes)
	defer freeDst()
	counts, freeCounts := offheap.Make[uint32](max(largest/bucketHashes, 1) + 1)
	defer freeCounts()
	var reps []uint64
	for k := range s.parts {
		p := &s.parts[k]
		if p.n < 2 {
			p.release()
			continue
		}
		b := bits.Len(uint(max(p.n/bucketHashes, 1))) - 1 // 2^b buckets
		shift := 48 - b
		count := counts[:1<<b+1]
		clear(count)
		for _, c := range p.chunks {
			for i := 0; i+hashBytes <= len(c); i += hashBytes {
				count[getHash(c[i:i+hashBytes:i+hashBytes])>>shift+1]++
			}
		}
		for i := 1; i < len(count); i++ {
			count[i] += count[i-1]
		}
		for _, c := range p.chunks {
			for i := 0; i+hashBytes <= len(c); i += hashBytes {
				v := getHash(c[i : i+hashBytes : i+hashBytes])
				j := int(count[v>>shift]) * hashBytes
				count[v>>shift]++
				putHash(dst[j:j+hashBytes:j+hashBytes], v)
			}
		}
		p.release()
		// count[i] is now where bucket i ends
		lo := 0
		for _, hi := range count[:1<<b] {
			if int(hi)-lo > 1 {
				reps = bucketRepeats(reps, uint64(k)<<48, dst[lo*hashBytes:int(hi)*hashBytes])
			}
			lo = int(hi)
		}
	}
	slices.Sort(reps)
	return slices.Compact(reps)
}

// bucketHashes is about how many hashes a bucket of repeats holds.
const bucketHashes = 8

// bucketRepeats appends to reps, with part, the hashes b holds more than
// once (some maybe more than once): b's few hashes are compared pairwise,
// many (a name repeated often) sorted.
func bucketRepeats(reps []uint64, part uint64, b []byte) []uint64 {
	m := len(b) / hashBytes
	if m > 32 {
		vs := make([]uint64, m)
		for j := range vs {
			vs[j] = getHash(b[j*hashBytes : j*hashBytes+hashBytes : j*hashBytes+hashBytes])
		}
		slices.Sort(vs)
		for j := 1; j < m; j++ {
			if vs[j] == vs[j-1] {
				reps = append(reps, part|vs[j])
			}
		}
		return reps
	}
	var vs [32]uint64
	for j := range m {
		vs[j] = getHash(b[j*hashBytes : j*hashBytes+hashBytes : j*hashBytes+hashBytes])
	}
	for j := 1; j < m; j++ {
		for i := range j {
			if vs[i] == vs[j] {
				reps = append(reps, part|vs[j])
			}
		}
	}
	return reps
}

func putHash(b []byte, v uint64) {
	binary.LittleEndian.PutUint32(b, uint32(v))
	binary.LittleEndian.PutUint16(b[4:], uint16(v>>32))
}

func getHash(b []byte) uint64 {
	return uint64(binary.LittleEndian.Uint32(b)) | uint64(binary.LittleEndian.Uint16(b[4:]))<<32
}

func (s *nameSet) freeParts() {
	for k := range s.parts {
		s.parts[k].release()
	}
}

// release frees the set; it is empty afterwards.
func (s *nameSet) release() {
	s.freeParts()
	*s = nameSet{hash: s.hash}
}

// hashList is a list of hashes, hashBytes each, in chunks: a first one
// of firstHashes on the heap, then chunks outside it, doubling from 128
// KB up to 1 MB, their pages mapped as they are written
// (offheap.MakeInOrder): 6 bytes a hash, and at most a page.
type hashList struct {
	chunks [][]byte // the last one is being filled: their len is the bytes written
	frees  []func()
	n      int
}

const (
	firstHashes = 64
	minChunk    = 2 * offheap.Min // bytes (a page multiple, and at least Min once cut to whole hashes)
	maxChunk    = 1 << 20
)

func (l *hashList) add(v uint64) {
	k := len(l.chunks) - 1
	if k < 0 || len(l.chunks[k]) == cap(l.chunks[k]) {
		l.grow()
		k++
	}
	c := l.chunks[k]
	i := len(c)
	c = c[:i+hashBytes]
	putHash(c[i:i+hashBytes:i+hashBytes], v)
	l.chunks[k] = c
	l.n++
}

func (l *hashList) grow() {
	size := firstHashes * hashBytes
	if k := len(l.chunks); k > 0 {
		size = min(max(2*cap(l.chunks[k-1]), minChunk), maxChunk) / hashBytes * hashBytes
	}
	c, free := offheap.MakeInOrder[byte](size)
	l.chunks, l.frees = append(l.chunks, c[:0]), append(l.frees, free)
}

// release frees the list; it is empty afterwards.
func (l *hashList) release() {
	for _, f := range l.frees {
		f()
	}
	*l = hashList{}
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
