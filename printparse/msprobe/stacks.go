package msprobe

import (
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"math/bits"
	"slices"
	"strings"

	"github.com/layermap/layermap/printparse/offheap"
	"github.com/layermap/layermap/printparse/source"
)

// Stacks is a stack.json read for lookups by entry name (see ReadStack
// for the formats): a table of two hashes of each name (96 bits)
// and its frames list, each distinct frames list held once. Two names
// would share frames only if both hashes agreed (odds of 2^-96 per pair).
// Memory: 16 bytes a name and 2 to 4 bytes of bucket index, outside the
// collected heap (printparse/offheap), freed by Release; and the
// distinct frames lists.
type Stacks struct {
	seed  maphash.Seed
	seed2 maphash.Seed
	list  offheap.List[stackName] // while reading
	names []stackName             // sorted by (h, h2) once read
	// starts[b] is where the names whose hash's top shift bits are b
	// begin (one or two names a bucket): a lookup reads one or two cache
	// lines, not a binary search's fifteen.
	starts []uint32
	shift  uint
	frees  [2]func() // of names and starts
	frames [][]string
	dedupe map[string]int32 // frames list -> id, while reading
}

type stackName struct {
	h  uint64
	h2 uint32
	id int32 // frames index + 1
}

func (s *Stacks) key(name string) stackName {
	return stackName{maphash.String(s.seed, name), uint32(maphash.String(s.seed2, name)), 0}
}

// Frames returns the call stack of an entry.
func (s *Stacks) Frames(name string) ([]string, bool) {
	if s == nil || len(s.names) == 0 {
		return nil, false
	}
	k := s.key(name)
	b := k.h >> (64 - s.shift)
	for i := s.starts[b]; i < s.starts[b+1]; i++ {
		if n := s.names[i]; n.h == k.h && n.h2 == k.h2 {
			return s.frames[n.id-1], true
		}
	}
	return nil, false
}

// Len is the number of names.
func (s *Stacks) Len() int { return len(s.names) }

// Release frees the names' tables; Frames finds nothing afterwards. A
// Stacks dropped without it is freed by the collector's cleanup.
func (s *Stacks) Release() {
	if s == nil {
		return
	}
	s.list.Release()
	s.names, s.starts = nil, nil
	for _, f := range s.frees {
		if f != nil {
			f()
		}
	}
}

// set gives name the frames list id; a later set of the same name wins.
func (s *Stacks) set(name string, id int32) {
	k := s.key(name)
	k.id = id
	s.list.Add(k)
}

// done groups the names by bucket (a stable counting sort on the top
// shift bits of h), the last set of a name kept, into a table of their
// exact size.
func (s *Stacks) done() {
	n := s.list.Len()
	s.shift = uint(max(1, bits.Len(uint(n))-1))
	nb := 1 << s.shift
	starts, freeStarts := offheap.Make[uint32](nb + 1)
	for i := range n {
		starts[s.list.At(i).h>>(64-s.shift)+1]++
	}
	for b := 1; b <= nb; b++ {
		starts[b] += starts[b-1]
	}
	names, free := offheap.Make[stackName](n)
	for i := range n { // starts[b] walks bucket b, ending at bucket b+1's start
		k := s.list.At(i)
		b := k.h >> (64 - s.shift)
		names[starts[b]] = k
		starts[b]++
	}
	s.list.Release()
	out := uint32(0)
	lo := uint32(0)
	for b := range nb {
		hi := starts[b]
		starts[b] = out
		for i := lo; i < hi; i++ {
			if !laterInBucket(names[i+1:hi], names[i]) {
				names[out] = names[i]
				out++
			}
		}
		lo = hi
	}
	starts[nb] = out
	s.names = names[:out]
	s.dedupe = nil
	s.starts, s.frees = starts, [2]func(){free, freeStarts}
	offheap.Cleanup(s, func() { free(); freeStarts() })
}

// laterInBucket reports whether a name set later in the bucket is n's.
func laterInBucket(later []stackName, n stackName) bool {
	for _, m := range later {
		if m.h == n.h && m.h2 == n.h2 {
			return true
		}
	}
	return false
}

// errStackFallback sends ReadStacks to the whole-file reader.
var errStackFallback = errors.New("stack.json needs the whole-file reader")

// ReadStacks reads stack.json as ReadStack does, streaming: memory holds
// one top-level member at a time (a group, or an entry's frames) and the
// Stacks. A grouped file whose group keys repeat (Python keeps the last
// value, at the first key's place) is read whole by ReadStack.
func ReadStacks(path string) (*Stacks, error) {
	s, err := readStacks(path)
	if !errors.Is(err, errStackFallback) {
		return s, err
	}
	m, err := ReadStack(path)
	if err != nil {
		return nil, err
	}
	s = newStacks()
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	ids := map[*string]int32{}
	for _, n := range names {
		fr := m[n]
		var id int32
		if len(fr) > 0 {
			id = ids[&fr[0]]
		}
		if id == 0 {
			s.frames = append(s.frames, fr)
			id = int32(len(s.frames))
			if len(fr) > 0 {
				ids[&fr[0]] = id
			}
		}
		s.set(n, id)
	}
	s.done()
	return s, nil
}

func newStacks() *Stacks { return &Stacks{seed: maphash.MakeSeed(), seed2: maphash.MakeSeed()} }

// readStacks streams the file, reading it both ways (grouped and old
// format) until the "0" key tells which one holds; the other stays small
// (an old-format file has no [names, frames] pairs; a grouped one only
// its group keys as names).
func readStacks(path string) (st *Stacks, err error) {
	f, err := source.Open(path, source.MaxTreeJSON)
	if err != nil {
		return nil, readErr("stack.json", err)
	}
	defer f.Close()
	lx := newLexer(f, path)
	p := parser{lx: lx, t: &tree{}}
	if c, ok := lx.peek(); !ok || c != '{' {
		// Not an object: let the whole-file reader name what it is.
		return nil, errStackFallback
	}
	lx.pos++
	old, grouped := newStacks(), newStacks()
	defer func() { // free the reading not returned
		for _, x := range [...]*Stacks{old, grouped} {
			if x != st || err != nil {
				x.Release()
			}
		}
	}()
	old.dedupe, grouped.dedupe = map[string]int32{}, map[string]int32{}
	var oldErr, groupErr error // the first error of each reading
	isGrouped := false
	keys := map[string]bool{} // group keys, while few
	framesID := func(st *Stacks, i int32, name string) (int32, error) {
		t := p.t
		var fr []string
		switch t.nodes[i].kind {
		case kString:
			fr = []string{t.str(t.nodes[i].text)}
		case kArray:
			fr = make([]string, 0, t.nodes[i].n)
			for c := t.nodes[i].first; c >= 0; c = t.nodes[c].next {
				fr = append(fr, string(t.appendPyStr(nil, c)))
			}
		default:
			return 0, nodeErr(path, t, i, "stack of %q: expected a list of frames, found %s", name, kindName(t.nodes[i].kind))
		}
		k := strings.Join(fr, "\x00") + "\x01" + fmt.Sprint(len(fr))
		if id, ok := st.dedupe[k]; ok {
			return id, nil
		}
		st.frames = append(st.frames, fr)
		id := int32(len(st.frames))
		st.dedupe[k] = id
		return id, nil
	}
	c, ok := lx.peek()
	if ok && c == '}' {
		lx.pos++
		if err := atEnd(lx); err != nil {
			return nil, err
		}
		old.done()
		return old, nil
	}
	var key []byte
	for {
		c, ok := lx.peek()
		if !ok {
			return nil, readErr("stack.json", lx.atEOF("an object key"))
		}
		if c != '"' {
			return nil, readErr("stack.json", lx.errorf("expected an object key string, found %s", lx.describe()))
		}
		if key, err = lx.readString(key[:0]); err != nil {
			return nil, readErr("stack.json", err)
		}
		if err := lx.expect(':', "':' after the object key"); err != nil {
			return nil, readErr("stack.json", err)
		}
		p.t.reset()
		v, err := p.value(1, "a value")
		if err != nil {
			return nil, readErr("stack.json", err)
		}
		t := p.t
		name := string(key)
		if len(keys) < 1<<12 {
			if keys[name] {
				return nil, errStackFallback
			}
			keys[name] = true
		} else if isGrouped {
			return nil, errStackFallback
		}
		if name == "0" && t.truthy(v) {
			isGrouped = true
		}
		// Old format: name -> frames (moot once "0" said grouped).
		if t.nodes[v].kind != kNull && oldErr == nil && !isGrouped {
			if id, err := framesID(old, v, name); err != nil {
				oldErr = err
			} else {
				old.set(name, id)
			}
		}
		// Grouped: [names, frames].
		if n := &t.nodes[v]; n.kind == kArray && n.n == 2 && groupErr == nil {
			names := n.first
			fr := t.nodes[names].next
			if t.nodes[names].kind == kArray {
				var id int32
				for c := t.nodes[names].first; c >= 0; c = t.nodes[c].next {
					if t.nodes[c].kind != kString {
						continue
					}
					if id == 0 {
						if t.nodes[fr].kind == kNull {
							break
						}
						if id, err = framesID(grouped, fr, t.str(t.nodes[c].text)); err != nil {
							groupErr = err
							break
						}
					}
					grouped.set(t.str(t.nodes[c].text), id)
				}
			}
		}
		c, ok = lx.peek()
		if !ok {
			return nil, readErr("stack.json", lx.atEOF("',' or '}'"))
		}
		lx.pos++
		if c == '}' {
			break
		}
		if c != ',' {
			lx.pos--
			return nil, readErr("stack.json", lx.errorf("expected ',' or '}', found %s", lx.describe()))
		}
	}
	if err := atEnd(lx); err != nil {
		return nil, err
	}
	if isGrouped {
		grouped.done()
		return grouped, groupErr
	}
	old.done()
	return old, oldErr
}

// atEnd refuses anything but whitespace after the top value (Python's
// json.load: "Extra data").
func atEnd(lx *lexer) error {
	if _, ok := lx.peek(); ok {
		return lx.errorf("expected end of file, found %s", lx.describe())
	}
	if lx.rerr != nil && !errors.Is(lx.rerr, io.EOF) {
		return lx.atEOF("end of file")
	}
	return nil
}
