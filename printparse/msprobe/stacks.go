package msprobe

import (
	"errors"
	"io"
	"slices"
	"strconv"

	"github.com/layermap/layermap/printparse/nametable"
	"github.com/layermap/layermap/printparse/source"
)

// Stacks is a stack.json read for lookups by entry name (see ReadStack
// for the formats): each name's frames list under 96 bits of two hashes
// of the name (an ordered nametable.Table: 16 bytes a name, in file
// order, and 6 to 8 bytes of bucket index, outside the collected heap,
// freed by Release), each distinct frames list held once. Two names
// would share frames only if both hashes agreed (odds of 2^-96 per
// pair).
type Stacks struct {
	tab    *nametable.Table // name -> frames index + 1
	frames [][]string
	dedupe map[string]int32 // frames list -> id, while reading
}

// Frames returns the call stack of an entry.
func (s *Stacks) Frames(name string) ([]string, bool) {
	if s == nil {
		return nil, false
	}
	id, ok := s.tab.Get(name)
	if !ok {
		return nil, false
	}
	return s.frames[id-1], true
}

// FramesNext is Frames for entries looked up mostly in file order (or in
// stack.json's order, a group's names at a time): c remembers where the
// last ones were, so that the next is found on lines just read.
func (s *Stacks) FramesNext(c *nametable.Cursor, name string) ([]string, bool) {
	if s == nil {
		return nil, false
	}
	id, ok := s.tab.Next(c, name)
	if !ok {
		return nil, false
	}
	return s.frames[id-1], true
}

// Len is the number of names.
func (s *Stacks) Len() int { return s.tab.Len() }

// Release frees the names' tables; Frames finds nothing afterwards. A
// Stacks dropped without it is freed by the collector's cleanup.
func (s *Stacks) Release() {
	if s != nil {
		s.tab.Release()
	}
}

// set gives name the frames list id; a later set of the same name wins.
func (s *Stacks) set(name string, id int32) { s.tab.Set(name, id) }

func (s *Stacks) setBytes(name []byte, id int32) { s.tab.SetBytes(name, id) }

// done makes the names ready for lookups.
func (s *Stacks) done() {
	s.tab.Done()
	s.dedupe = nil
}

// errStackFallback sends ReadStacks to the whole-file reader.
var errStackFallback = errors.New("stack.json needs the whole-file reader")

// ReadStacks reads stack.json as ReadStack does, streaming: memory holds
// the Stacks and one top-level member's frames at a time (a group's names
// are taken as they are read, see streamGroup). A grouped file whose
// group keys repeat (Python keeps the last value, at the first key's
// place) is read whole by ReadStack.
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

func newStacks() *Stacks { return &Stacks{tab: nametable.NewOrdered()} }

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
	var k []byte              // the frames' key, built in place: most repeat a stack
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
		} else if isGrouped {
			return nil, errStackFallback
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
