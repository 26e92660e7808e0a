package msprobe

import (
	"cmp"
	"errors"
	"hash/maphash"
	"io"
	"math/bits"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/layermap/layermap/printparse/offheap"
	"github.com/layermap/layermap/printparse/source"
)

// Stacks is a stack.json read for lookups by entry name (see ReadStack
// for the formats): each name as 96 bits of two hashes of it, in file
// order (12 bytes a name, outside the collected heap; two names are
// taken for one only if both hashes agree: odds of 2^-96 a pair), each
// name's frames list by runs of names that share it (a group's names are
// listed together; where runs do not pay, as in the old format, 4 bytes
// a name), each distinct frames list held once. Lookups in about file
// order (FramesNext) compare the names after the last ones found (and a
// few groups' first names); others use an index of the names' last sets
// (4 bytes a name and 1 to 2 of buckets) made by the first of them. The
// index is also made while the names are done, to find a name set twice,
// and kept only then. Release frees it all.
type Stacks struct {
	keys   offheap.List[nameKey] // while reading
	names  []nameKey             // once done
	seeds  [2]maphash.Seed
	frames [][]string
	dedupe map[string]int32 // frames list -> id, while reading

	runs    offheap.List[stackRun] // while reading
	byRun   []stackRun             // ids by runs of names, once done
	ids     []int32                // or by name, when runs do not pay
	later   []uint64               // bit i: a later set of name i follows (nil: none)
	index   sync.Once
	indexed atomic.Bool // idx is made
	idx     stackIndex
	nDist   int
	frees   []func()
	release sync.Once
}

// nameKey is a name's two hashes: the first's low and high halves, the
// second's low half (12 bytes, so that a list of them packs).
type nameKey [3]uint32

// h is the first hash.
func (k nameKey) h() uint64 { return uint64(k[1])<<32 | uint64(k[0]) }

func newNameKey(h, h2 uint64) nameKey { return nameKey{uint32(h), uint32(h >> 32), uint32(h2)} }

// stackRun is a run of names from start on with the frames list id.
type stackRun struct {
	start uint32
	id    int32
}

// stackIndex finds a name's last set by its first hash: perm lists
// those positions by bucket, bucket b being perm[starts[b]:starts[b+1]].
type stackIndex struct {
	shift  uint
	starts []uint32
	perm   []uint32
	free   func()
}

// StackCursor remembers where lookups by FramesNext were, to find the
// names that follow them. Its zero value is ready; one goroutine uses it.
type StackCursor struct {
	at   [16]uint32 // the position after a name found
	run  [16]uint32 // the run at holds, a guess
	live uint16     // the at that found a name (the others hold 0)
	slot uint8      // the next at to replace once all are live
}

// Frames returns the call stack of an entry.
func (s *Stacks) Frames(name string) ([]string, bool) {
	if s == nil || len(s.names) == 0 {
		return nil, false
	}
	i, ok := s.find(s.key(name))
	if !ok {
		return nil, false
	}
	return s.frames[s.idAt(i, nil)-1], true
}

// FramesNext is Frames for entries looked up mostly in file order (or in
// stack.json's order, a group's names at a time, up to 16 groups at
// once): c remembers where the last ones were, so that the next is found
// by comparing a name's hashes or a few.
func (s *Stacks) FramesNext(c *StackCursor, name string) ([]string, bool) {
	if s == nil || len(s.names) == 0 {
		return nil, false
	}
	k := s.key(name)
	for j, i := range c.at {
		if int(i) < len(s.names) && s.names[i] == k {
			c.at[j] = i + 1
			c.live |= 1 << j
			if s.isLater(i) { // the last set's id
				last, _ := s.find(k)
				return s.frames[s.idAt(last, nil)-1], true
			}
			return s.frames[s.idAt(int(i), &c.run[j])-1], true
		}
	}
	i, ok := s.find(k)
	if !ok {
		return nil, false
	}
	j := bits.TrailingZeros16(^c.live) // an at no name was found at
	if j == 16 {
		j = int(c.slot % 16)
		c.slot++
	}
	c.live |= 1 << j
	c.at[j] = uint32(i) + 1
	return s.frames[s.idAt(i, &c.run[j])-1], true
}

// key is name's two hashes.
func (s *Stacks) key(name string) nameKey {
	return newNameKey(maphash.String(s.seeds[0], name), maphash.String(s.seeds[1], name))
}

// isLater reports whether name i is set again later.
func (s *Stacks) isLater(i uint32) bool {
	return s.later != nil && s.later[i/64]&(1<<(i%64)) != 0
}

// idAt is the frames id of name i; run, if not nil, is a guess at its run,
// updated.
func (s *Stacks) idAt(i int, run *uint32) int32 {
	if s.ids != nil {
		return s.ids[i]
	}
	r := s.byRun
	if run != nil {
		if k := *run; int(k) < len(r) && r[k].start <= uint32(i) && (int(k)+1 == len(r) || uint32(i) < r[k+1].start) {
			return r[k].id
		}
	}
	k, _ := slices.BinarySearchFunc(r, uint32(i)+1, func(x stackRun, t uint32) int { return cmp.Compare(x.start, t) })
	if run != nil {
		*run = uint32(k - 1)
	}
	return r[k-1].id
}

// find is the position of the last set of the name k. Where no name is
// set twice and no index is made yet, it tries the runs' first names
// (while few: where a cursor starts), then makes the index.
func (s *Stacks) find(k nameKey) (int, bool) {
	if s.later == nil && !s.indexed.Load() && len(s.byRun) <= 64 {
		for _, r := range s.byRun {
			if s.names[r.start] == k {
				return int(r.start), true
			}
		}
	}
	s.index.Do(func() {
		s.idx, _ = s.buildIndex()
		s.indexed.Store(true)
	})
	x := &s.idx
	b := k.h() >> (64 - x.shift)
	for _, i := range x.perm[x.starts[b]:x.starts[b+1]] {
		if s.names[i] == k {
			return int(i), true
		}
	}
	return 0, false
}

// buildIndex indexes the names' last sets (a counting sort by bucket);
// later marks the names set again after, nil when none is.
func (s *Stacks) buildIndex() (x stackIndex, later []uint64) {
	names := s.names
	n := len(names)
	x.shift = uint(max(1, bits.Len(uint(n))-2))
	nb := 1 << x.shift
	all, free := offheap.Make[uint32](nb + 1 + n)
	starts, perm := all[:nb+1], all[nb+1:]
	for _, k := range names {
		starts[k.h()>>(64-x.shift)+1]++
	}
	for b := 1; b <= nb; b++ {
		starts[b] += starts[b-1]
	}
	for i, k := range names {
		b := k.h() >> (64 - x.shift)
		perm[starts[b]] = uint32(i)
		starts[b]++
	}
	// Drop all but a name's last set, marking the others.
	out, lo := uint32(0), uint32(0)
	for b := range nb {
		hi := starts[b]
		starts[b] = out
		for j := lo; j < hi; j++ {
			i := perm[j]
			k := names[i]
			dup := false
			for _, m := range perm[j+1 : hi] { // positions ascend in a bucket
				if names[m] == k {
					dup = true
					break
				}
			}
			if !dup {
				perm[out] = i
				out++
				continue
			}
			if later == nil {
				later = make([]uint64, (n+63)/64)
			}
			later[i/64] |= 1 << (i % 64)
		}
		lo = hi
	}
	starts[nb] = out
	x.starts, x.perm, x.free = starts, perm[:out], free
	offheap.Cleanup(s, free)
	return x, later
}

// Len is the number of distinct names.
func (s *Stacks) Len() int {
	if s == nil {
		return 0
	}
	return s.nDist
}

// Release frees the names and their tables; Frames finds nothing
// afterwards. A Stacks dropped without it is freed by the collector's
// cleanup.
func (s *Stacks) Release() {
	if s == nil {
		return
	}
	s.release.Do(func() {
		s.keys.Release()
		s.runs.Release()
		for _, f := range s.frees {
			f()
		}
		s.index.Do(func() {})
		if s.idx.free != nil {
			s.idx.free()
		}
		s.names, s.byRun, s.ids, s.later, s.idx, s.nDist = nil, nil, nil, nil, stackIndex{}, 0
	})
}

// set gives name the frames list id; a later set of the same name wins.
func (s *Stacks) set(name string, id int32) {
	s.keys.Add(s.key(name))
	s.addRun(id)
}

func (s *Stacks) setBytes(name []byte, id int32) {
	s.keys.Add(newNameKey(maphash.Bytes(s.seeds[0], name), maphash.Bytes(s.seeds[1], name)))
	s.addRun(id)
}

func (s *Stacks) addRun(id int32) {
	n := s.runs.Len()
	if n > 0 && s.runs.At(n-1).id == id {
		return
	}
	s.runs.Add(stackRun{start: uint32(s.keys.Len() - 1), id: id})
}

// done makes the names ready for lookups: ids by runs where they pay (a
// run costs twice a name's id), the index kept when a name is set twice.
func (s *Stacks) done() {
	s.dedupe = nil
	n := s.keys.Len()
	if n == 0 {
		s.runs.Release()
		return
	}
	names, free := s.keys.Table()
	s.names, s.frees = names, append(s.frees, free)
	offheap.Cleanup(s, free)
	if nr := s.runs.Len(); 2*nr <= n {
		s.byRun = make([]stackRun, nr)
		s.runs.MoveTo(s.byRun)
	} else {
		ids, free := offheap.Make[int32](n)
		for k := range nr {
			r := s.runs.At(k)
			end := n
			if k+1 < nr {
				end = int(s.runs.At(k + 1).start)
			}
			for i := int(r.start); i < end; i++ {
				ids[i] = r.id
			}
		}
		s.runs.Release()
		s.ids, s.frees = ids, append(s.frees, free)
		offheap.Cleanup(s, free)
	}
	x, later := s.buildIndex()
	s.nDist = len(x.perm)
	if later != nil {
		s.later = later
		s.index.Do(func() {
			s.idx = x
			s.indexed.Store(true)
		})
		return
	}
	x.free() // made again if lookups need it
}

// errStackFallback sends ReadStacks to the whole-file reader.
var errStackFallback = errors.New("stack.json needs the whole-file reader")

// ReadStacks reads stack.json as ReadStack does, streaming: memory holds
// the Stacks and one top-level member's frames at a time (a group's names
// are taken as they are read, see streamGroup). A file whose keys repeat
// (Python keeps the last value, at the first key's place) is read whole
// by ReadStack.
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

func newStacks() *Stacks {
	return &Stacks{seeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}}
}

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
	// The keys read, to find a repeat: the first ones by name, the rest
	// by hash (25 to 40 bytes a key while the file is read; a hash met
	// twice, a repeat or, most unlikely, two keys' hashes, goes to the
	// whole-file reader, which is exact either way).
	keys := map[string]bool{}
	var hashed map[uint64]struct{}
	seed := maphash.MakeSeed()
	var k []byte // the frames' key, built in place: most repeat a stack
	framesID := func(st *Stacks, i int32, name string) (int32, error) {
		var ok bool
		if k, ok = appendFramesKey(k[:0], p.t, i); ok {
			if id, ok := st.dedupe[string(k)]; ok {
				return id, nil
			}
		}
		fr, err := framesAt(p.t, i, name, path)
		if err != nil {
			return 0, err
		}
		st.frames = append(st.frames, fr)
		id := int32(len(st.frames))
		st.dedupe[string(k)] = id
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
		v, streamed := int32(-1), false
		if c, ok := lx.peek(); ok && c == '[' && (isGrouped || string(key) == "0") {
			// A group: "[[" starts its names, read as they come.
			lx.pos++
			if c, ok := lx.peek(); ok && c == '[' {
				lx.pos++
				isGrouped, streamed = true, true
				gerr, err := streamGroup(&p, grouped, path)
				if err != nil {
					return nil, readErr("stack.json", err)
				}
				if groupErr == nil {
					groupErr = gerr
				}
			} else if v, err = p.arrayRest(p.add(kArray), 1); err != nil {
				return nil, readErr("stack.json", err)
			}
		} else if v, err = p.value(1, "a value"); err != nil {
			return nil, readErr("stack.json", err)
		}
		t := p.t
		name := string(key)
		if len(keys) < 1<<12 {
			if keys[name] {
				return nil, errStackFallback
			}
			keys[name] = true
		} else {
			h := maphash.String(seed, name)
			if _, ok := hashed[h]; ok || keys[name] {
				return nil, errStackFallback
			}
			if hashed == nil {
				hashed = map[uint64]struct{}{}
			}
			hashed[h] = struct{}{}
		}
		if !streamed && name == "0" && t.truthy(v) {
			isGrouped = true
		}
		// Old format: name -> frames (moot once "0" said grouped).
		if !isGrouped && t.nodes[v].kind != kNull && oldErr == nil {
			if id, err := framesID(old, v, name); err != nil {
				oldErr = err
			} else {
				old.set(name, id)
			}
		}
		// Grouped: [names, frames].
		if streamed {
			// Read already.
		} else if n := &t.nodes[v]; n.kind == kArray && n.n == 2 && groupErr == nil {
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
					grouped.setBytes(t.bytes(t.nodes[c].text), id)
				}
			}
		}
		if end, err := lx.sep('}'); err != nil {
			return nil, readErr("stack.json", err)
		} else if end {
			break
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

// framesAt reads tree node i as the frames of name's stack: a list, each
// frame as Python's str gives it, or one string.
func framesAt(t *tree, i int32, name, path string) ([]string, error) {
	switch t.nodes[i].kind {
	case kString:
		return []string{t.str(t.nodes[i].text)}, nil
	case kArray:
		fr := make([]string, 0, t.nodes[i].n)
		for c := t.nodes[i].first; c >= 0; c = t.nodes[c].next {
			fr = append(fr, string(t.appendPyStr(nil, c)))
		}
		return fr, nil
	}
	return nil, nodeErr(path, t, i, "stack of %q: expected a list of frames, found %s", name, kindName(t.nodes[i].kind))
}

// appendFramesKey appends the key of the frames framesAt reads at node
// i: the frames joined by NUL, then \x01 and their count; false when
// framesAt refuses the node.
func appendFramesKey(dst []byte, t *tree, i int32) ([]byte, bool) {
	n := 1
	switch t.nodes[i].kind {
	case kString:
		dst = append(dst, t.bytes(t.nodes[i].text)...)
	case kArray:
		n = 0
		for c := t.nodes[i].first; c >= 0; c = t.nodes[c].next {
			if n > 0 {
				dst = append(dst, 0)
			}
			dst = t.appendPyStr(dst, c)
			n++
		}
	default:
		return dst, false
	}
	dst = append(dst, 1)
	return strconv.AppendInt(dst, int64(n), 10), true
}

// streamGroup reads the rest of a grouped file's member [names, frames],
// whose "[[" is read, as the tree reading would read it, but giving each
// name its frames as the name is read: a group's names (up to all of a
// dump's entries) are never held. The frames, read after the names, go
// to the id the names were given. A member the tree reading would read
// otherwise (not two members, or null frames) sends the file to
// ReadStack (errStackFallback). gerr is a bad frames list's error.
func streamGroup(p *parser, s *Stacks, path string) (gerr, err error) {
	lx := p.lx
	id := int32(len(s.frames) + 1)
	var name, first []byte
	named := false
	// The names, as parser.arrayRest reads them at depth 2.
	if c, ok := lx.peek(); ok && c == ']' {
		lx.pos++
	} else {
		for {
			if c, ok := lx.peek(); ok && c == '"' {
				if name, err = lx.readString(name[:0]); err != nil {
					return nil, err
				}
				if !named {
					first, named = append(first, name...), true
				}
				s.setBytes(name, id)
			} else {
				p.t.reset()
				if _, err := p.value(3, "a value"); err != nil {
					return nil, err
				}
			}
			if end, err := lx.sep(']'); err != nil {
				return nil, err
			} else if end {
				break
			}
		}
	}
	// The frames, and the member's end.
	if end, err := lx.sep(']'); err != nil {
		return nil, err
	} else if end {
		return nil, errStackFallback // one member
	}
	p.t.reset()
	v, err := p.value(2, "a value")
	if err != nil {
		return nil, err
	}
	end, err := lx.sep(']')
	switch {
	case err != nil:
		return nil, err
	case !end:
		return nil, errStackFallback // more than two members
	case !named:
		return nil, nil
	case p.t.nodes[v].kind == kNull:
		return nil, errStackFallback
	}
	fr, gerr := framesAt(p.t, v, string(first), path)
	if gerr == nil {
		s.frames = append(s.frames, fr)
	}
	return gerr, nil
}
