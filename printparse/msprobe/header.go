package msprobe

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"slices"
	"unsafe"

	"github.com/layermap/layermap/printparse/nametable"
	"github.com/layermap/layermap/printparse/offheap"
	"github.com/layermap/layermap/printparse/source"
)

// Header is the top-level information of a dump.json (or debug.json).
type Header struct {
	Task      string // "statistics", "tensor", "structure", ...
	Level     string // "L0", "L1", "mix", "L2", "debug"
	Framework string // "pytorch", "mindspore", "mindtorch"
	// FrameworkMissing is true when the file has no (or a null) framework
	// key; Framework is then "pytorch", the value msprobe assumes after
	// logging a warning.
	FrameworkMissing bool
	DumpDataDir      string // the header's dump_data_dir ("" for null); msprobe's compare ignores it

	// The fields below are filled by Scan, which reads the whole file.

	// Entries counts the keys of "data".
	Entries int
	// Skipped lists the entries msprobe's parser drops because their name
	// has no forward/backward/parameters_grad part (e.g.
	// "Tensor.weird_entry"); Scan does not pass them to fn.
	Skipped []string
	// MD5 is true when some entry has a first-level item with an "md5"
	// key (msprobe's md5_find): a statistics dump is compared in md5 mode
	// when both sides have MD5 set.
	MD5 bool
}

// errStop ends a top-level read early.
var errStop = errors.New("stop")

// readTop reads the top-level object of a dump file, filling h from the
// header keys and calling onData with the lexer positioned at the value of
// "data". onData must consume that value or return errStop.
func readTop(lx *lexer, h *Header, onData func() error) error {
	if err := lx.expect('{', "'{' starting the dump object"); err != nil {
		return err
	}
	p := parser{lx: lx, t: &tree{}}
	seenData, seenFramework := false, false
	var key []byte
	first := true
	closeLine := 0
	for {
		c, ok := lx.peek()
		if !ok {
			return lx.atEOF("'}' closing the dump object")
		}
		if c == '}' && first {
			closeLine = lx.line
			lx.pos++
			break
		}
		if c != '"' {
			return lx.errorf("expected an object key string, found %s", lx.describe())
		}
		var err error
		key, err = lx.readString(key[:0])
		if err != nil {
			return err
		}
		if err := lx.expect(':', "':' after the object key"); err != nil {
			return err
		}
		switch k := string(key); k {
		case "data":
			seenData = true
			if err := onData(); err != nil {
				return err
			}
		case "task", "level", "framework", "dump_data_dir":
			p.t.reset()
			v, err := p.value(0, "a value")
			if err != nil {
				return err
			}
			s := ""
			if p.t.nodes[v].kind != kNull {
				s = string(p.t.appendPyStr(nil, v))
			}
			switch k {
			case "task":
				h.Task = s
			case "level":
				h.Level = s
			case "framework":
				h.Framework = s
				seenFramework = s != ""
			case "dump_data_dir":
				h.DumpDataDir = s
			}
		default:
			if err := lx.skipValue("a value"); err != nil {
				return err
			}
		}
		first = false
		c, ok = lx.peek()
		if !ok {
			return lx.atEOF("',' or '}' in the dump object")
		}
		closeLine = lx.line
		lx.pos++
		if c == '}' {
			break
		}
		if c != ',' {
			lx.pos--
			return lx.errorf("expected ',' or '}' in the dump object, found %s", lx.describe())
		}
	}
	if _, ok := lx.peek(); ok {
		return lx.errorf("expected end of file after the dump object, found %s", lx.describe())
	}
	if lx.rerr != nil && !errors.Is(lx.rerr, io.EOF) {
		return lx.atEOF("end of file")
	}
	if !seenFramework {
		h.Framework = "pytorch"
		h.FrameworkMissing = true
	}
	if !seenData {
		return &source.Error{File: lx.source, Line: closeLine, Msg: `expected a "data" key in the dump object, found none`}
	}
	return nil
}

// ReadHeader reads task, level, framework and dump_data_dir of a dump.json
// without reading its entries: it stops at "data" once task, level and
// framework are known (msprobe writes "data" last); otherwise it skips
// "data" and reads on. A missing framework gives "pytorch" with
// FrameworkMissing set.
func ReadHeader(path string) (Header, error) {
	f, err := source.Open(path, source.MaxDumpJSON)
	if err != nil {
		return Header{}, err // *source.Error naming the file
	}
	defer f.Close()
	lx := newLexer(f, path)
	lx.buf = make([]byte, 4096)
	var h Header
	seen := func() bool { return h.Task != "" && h.Level != "" && h.Framework != "" }
	err = readTop(lx, &h, func() error {
		if seen() {
			return errStop
		}
		c, ok := lx.peek()
		if ok && c != '{' {
			return lx.errorf(`expected an object as the value of "data", found %s`, lx.describe())
		}
		return lx.skipValue(`the "data" object`)
	})
	if errors.Is(err, errStop) {
		return h, nil
	}
	if err != nil {
		return Header{}, err
	}
	return h, nil
}

// DetectFramework is msprobe's detect_framework_by_dump_json
// (core/common/utils.py): the "framework" field of the dump when it is
// "pytorch" or "mindspore" (wherever it stands), else the framework of the
// first line naming a MindSpore or torch value type ("type": "mindspore..."
// or "torch..."), a line naming both being MindSpore's. Lines end as
// Python's text files end them: at \n, \r\n or \r. The file is read in
// chunks of 64 KB, whatever the length of its lines.
func DetectFramework(path string) (string, error) {
	h, err := ReadHeader(path)
	if err != nil {
		h = Header{FrameworkMissing: true}
	}
	return DetectFrameworkOf(path, h)
}

// DetectFrameworkOf is DetectFramework of the dump at path whose header
// h is read already (ReadHeader: a dump without a framework field is read
// to its end for it).
func DetectFrameworkOf(path string, h Header) (string, error) {
	if !h.FrameworkMissing && (h.Framework == "pytorch" || h.Framework == "mindspore") {
		return h.Framework, nil
	}
	f, err := source.Open(path, source.MaxDumpJSON)
	if err != nil {
		return "", err // *source.Error naming the file
	}
	defer f.Close()
	fw, err := detectTypes(f, make([]byte, 64<<10))
	if err != nil {
		return "", &source.Error{File: path, Err: err}
	}
	return fw, nil
}

// ErrNoFramework is DetectFramework's error for a dump it can take for
// neither framework.
var ErrNoFramework = errors.New("expected a MindSpore or PyTorch dump, found no framework field and no typed values")

// detectTypes applies msprobe's pattern_ms, `"type":\s*"mindspore`, then
// its pattern_pt, `"type":\s*"torch`, to each line of r, read through buf:
// "mindspore" or "pytorch" for the first line either matches, else
// ErrNoFramework. \s is Python's for str patterns, Unicode whitespace,
// matched in UTF-8, as msprobe decodes the file: within a line \t, \v,
// \f, space, \x1c-\x1f and U+0085, U+00A0, U+1680, U+2000-U+200A,
// U+2028, U+2029, U+202F, U+205F, U+3000. Memory does not grow with the
// length of a line.
func detectTypes(r io.Reader, buf []byte) (string, error) {
	s, torch := tNone, false
	for {
		n, err := r.Read(buf)
		b, eol := buf[:n], -1
		for i := 0; i < len(b); {
			if s == tNone && len(b)-i > len(typeKey) {
				// Outside a partial match only a whole "type": starts
				// one: skip to it, unless torch was seen and the line
				// ends first.
				end := len(b)
				if torch {
					if eol < 0 { // once a chunk: reaching it returns
						eol = i + lineEnd(b[i:])
					}
					end = eol
				}
				if j := bytes.Index(b[i:end], typeKey); j >= 0 {
					s, i = tW, i+j+len(typeKey)
					continue
				}
				if end < len(b) {
					return "pytorch", nil
				}
				i = len(b) - (len(typeKey) - 1) // where a key cut by the chunk's end may start
			}
			if s = typeDFA[s][b[i]]; s >= tNumStates {
				switch s {
				case tMindspore:
					return "mindspore", nil
				case tTorch:
					torch = true
				case tLineEnd:
					if torch {
						return "pytorch", nil
					}
				}
				s = tNone
			}
			i++
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", err
		}
	}
	if torch {
		return "pytorch", nil
	}
	return "", ErrNoFramework
}

// typeKey starts both patterns.
var typeKey = []byte(`"type":`)

// lineEnd is the index of the first \n or \r in b, or len(b).
func lineEnd(b []byte) int {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		b = b[:i]
	}
	if i := bytes.IndexByte(b, '\r'); i >= 0 {
		return i
	}
	return len(b)
}

// The states of typeDFA, how much of a match the line ends with (tWC2 to
// tWE380: the leading bytes of a multi-byte whitespace character after
// the colon), then the outcomes of a byte, after which it starts anew.
const (
	tNone uint8 = iota
	tK1         // "
	tK2         // "t
	tK3         // "ty
	tK4         // "typ
	tK5         // "type
	tK6         // "type"
	tW          // "type": and whitespace
	tWC2
	tWE1
	tWE19A
	tWE2
	tWE280
	tWE281
	tWE3
	tWE380
	tQ  // "type":\s*" (its " may also open a key: tK1)
	tT1 // ..."t (also tK2)
	tT2 // ..."to
	tT3
	tT4
	tM1 // ..."m
	tM2
	tM3
	tM4
	tM5
	tM6
	tM7
	tM8 // ..."mindspor
	tNumStates

	tTorch     = tNumStates     // pattern_pt matched
	tMindspore = tNumStates + 1 // pattern_ms matched
	tLineEnd   = tNumStates + 2 // \n or \r
)

// typeDFA[s][c] is the state after byte c in state s.
var typeDFA = func() (t [tNumStates][256]uint8) {
	for s := range t {
		for c := range t[s] {
			t[s][c] = typeStep(uint8(s), byte(c))
		}
	}
	return t
}()

// typeStep is typeDFA's transition. A byte that breaks a partial match
// starts a new one when it is '"'; two partial matches overlap only
// where the '"' closing "type" or opening the value is followed by t,
// which may also begin a key.
func typeStep(s uint8, c byte) uint8 {
	if c == '\n' || c == '\r' {
		return tLineEnd
	}
	restart := tNone
	if c == '"' {
		restart = tK1
	}
	in := func(to uint8, want ...byte) uint8 {
		if bytes.IndexByte(want, c) >= 0 {
			return to
		}
		return restart
	}
	switch s {
	case tK1:
		return in(tK2, 't')
	case tK2:
		return in(tK3, 'y')
	case tK3:
		return in(tK4, 'p')
	case tK4:
		return in(tK5, 'e')
	case tK5:
		return in(tK6, '"')
	case tK6:
		if c == 't' { // "type"type": the second '"' opens a key
			return tK2
		}
		return in(tW, ':')
	case tW:
		switch c {
		case '\t', '\v', '\f', ' ', 0x1c, 0x1d, 0x1e, 0x1f:
			return tW
		case 0xc2:
			return tWC2
		case 0xe1:
			return tWE1
		case 0xe2:
			return tWE2
		case 0xe3:
			return tWE3
		case '"':
			return tQ
		}
	case tWC2: // U+0085, U+00A0
		return in(tW, 0x85, 0xa0)
	case tWE1: // U+1680
		return in(tWE19A, 0x9a)
	case tWE19A:
		return in(tW, 0x80)
	case tWE2:
		switch c {
		case 0x80:
			return tWE280
		case 0x81:
			return tWE281
		}
	case tWE280: // U+2000-U+200A, U+2028, U+2029, U+202F
		if 0x80 <= c && c <= 0x8a || c == 0xa8 || c == 0xa9 || c == 0xaf {
			return tW
		}
	case tWE281: // U+205F
		return in(tW, 0x9f)
	case tWE3: // U+3000
		return in(tWE380, 0x80)
	case tWE380:
		return in(tW, 0x80)
	case tQ:
		switch c {
		case 't':
			return tT1
		case 'm':
			return tM1
		}
	case tT1:
		if c == 'y' { // "type":"ty: the value's '"' opens a key
			return tK3
		}
		return in(tT2, 'o')
	case tT2:
		return in(tT3, 'r')
	case tT3:
		return in(tT4, 'c')
	case tT4:
		return in(tTorch, 'h')
	case tM1, tM2, tM3, tM4, tM5, tM6, tM7:
		return in(s+1, "indspor"[s-tM1])
	case tM8:
		return in(tMindspore, 'e')
	}
	return restart
}

// EntryNames returns the keys of dump.json's "data" object in file order,
// streaming: entry bodies are skipped, not decoded.
func EntryNames(dumpJSONPath string) ([]string, error) {
	names, err := entryNames(dumpJSONPath, nil, repeatCheck{})
	if errors.Is(err, ErrRepeatedKey) {
		plan, ferr := FindRepeatsAfter(err)
		if ferr != nil {
			return nil, ferr
		}
		return entryNames(dumpJSONPath, plan, repeatCheck{})
	}
	return names, err
}

// SkimEntryNames is EntryNames read by a skim (see Skim), several times
// faster: the same names, the structure around the bodies checked as
// EntryNames checks it, but not the bodies themselves, for a reader that
// reads the entries (and finds their errors) anyway.
func SkimEntryNames(dumpJSONPath string) ([]string, error) {
	var names []string
	_, err := SkimExact(dumpJSONPath, func() { names = names[:0] }, func(e *SkimEntry) error {
		names = append(names, string(e.Name))
		return nil
	})
	if err != nil {
		return nil, err
	}
	return names, nil
}

func entryNames(dumpJSONPath string, plan *Repeats, c repeatCheck) ([]string, error) {
	f, err := source.Open(dumpJSONPath, source.MaxDumpJSON)
	if err != nil {
		return nil, err // *source.Error naming the file
	}
	defer f.Close()
	lx := newLexer(f, dumpJSONPath)
	kf := newKeyFilter(dumpJSONPath, plan, c)
	var names []string
	var h Header
	err = readTop(lx, &h, func() error {
		return kf.onData(lx, func() error {
			return forEachDataKey(lx, kf, func(name []byte, line int, _ *memberAt) error {
				names = append(names, string(name))
				return lx.skipValue("an entry body")
			})
		})
	})
	if err != nil {
		return nil, err
	}
	return names, nil
}

// EntryLine returns the line of the member of "data" at index (0-based) in
// file order, or 0 when the file cannot tell: for messages about an entry
// found by a reader that keeps no lines (EntryNames).
func EntryLine(dumpJSONPath string, index int) int {
	f, err := source.Open(dumpJSONPath, source.MaxDumpJSON)
	if err != nil {
		return 0
	}
	defer f.Close()
	lx := newLexer(f, dumpJSONPath)
	line, k := 0, 0
	readTop(lx, &Header{}, func() error {
		return forEachDataKey(lx, nil, func(_ []byte, l int, _ *memberAt) error {
			if k == index {
				line = l
				return errStop
			}
			k++
			return lx.skipValue("an entry body")
		})
	})
	return line
}

// KeyLine returns the line of the top-level key of the JSON object file at
// path (construct.json, stack.json), or 0 when it is not found: for
// messages about a key found by a reader that keeps no lines.
func KeyLine(path, key string) int {
	f, err := source.Open(path, source.MaxTreeJSON)
	if err != nil {
		return 0
	}
	defer f.Close()
	lx := newLexer(f, path)
	if lx.expect('{', "") != nil {
		return 0
	}
	var k []byte
	for {
		c, ok := lx.peek()
		if !ok || c != '"' {
			return 0
		}
		line := lx.line
		if k, err = lx.readString(k[:0]); err != nil {
			return 0
		}
		if string(k) == key {
			return line
		}
		if lx.expect(':', "") != nil || lx.skipValue("") != nil {
			return 0
		}
		if c, ok := lx.peek(); !ok || c != ',' {
			return 0
		}
		lx.pos++
	}
}

// forEachDataKey walks the "data" object: for each member it reads the key
// and calls fn, which must consume the member's value (or, at non-nil,
// skip it and read the body at at instead: see keyFilter).
func forEachDataKey(lx *lexer, kf *keyFilter, fn func(name []byte, line int, at *memberAt) error) error {
	return forEachDataMember(lx, kf, func(name []byte, line int, _ int64, at *memberAt) error { return fn(name, line, at) })
}

// forEachDataMember is forEachDataKey that also gives the byte offset of
// each member's key (its opening quote). kf, when set, watches for
// repeated keys (see keyFilter); members it skips are not given to fn.
func forEachDataMember(lx *lexer, kf *keyFilter, fn func(name []byte, line int, off int64, at *memberAt) error) error {
	return walkDataMembers(lx, kf, nil, fn)
}

// walkDataMembers is forEachDataMember that calls ahead (when not nil) at
// each member name's opening quote, at byte off: when ahead takes the
// members from there itself, it returns true with the lexer just past the
// last value it took (see skimAhead).
func walkDataMembers(lx *lexer, kf *keyFilter, ahead func(off int64) (bool, error), fn func(name []byte, line int, off int64, at *memberAt) error) error {
	c, ok := lx.peek()
	if !ok {
		return lx.atEOF(`an object as the value of "data"`)
	}
	if c != '{' {
		return lx.errorf(`expected an object as the value of "data", found %s`, lx.describe())
	}
	lx.pos++
	if c, ok := lx.peek(); ok && c == '}' {
		lx.pos++
		return nil
	}
	var name []byte
	for {
		c, ok := lx.peek()
		if !ok {
			return lx.atEOF("an entry name")
		}
		if c != '"' {
			return lx.errorf("expected an entry name string, found %s", lx.describe())
		}
		line, off := lx.line, lx.read+int64(lx.pos)
		took := false
		if ahead != nil {
			var err error
			if took, err = ahead(off); err != nil {
				return err
			}
		}
		if !took {
			var err error
			if name, err = dataMember(lx, kf, name[:0], line, off, fn); err != nil {
				return err
			}
		}
		c, ok = lx.peek()
		if !ok {
			return lx.atEOF(`',' or '}' closing "data"`)
		}
		lx.pos++
		if c == '}' {
			return nil
		}
		if c != ',' {
			lx.pos--
			return lx.errorf(`expected ',' or '}' in "data", found %s`, lx.describe())
		}
	}
}

// dataMember reads one member of "data" from its name's opening quote,
// at line and byte off: the name (into name, returned), ':' and the value,
// given to fn or skipped when kf says so.
func dataMember(lx *lexer, kf *keyFilter, name []byte, line int, off int64, fn func(name []byte, line int, off int64, at *memberAt) error) ([]byte, error) {
	name, err := lx.readString(name)
	if err != nil {
		return name, err
	}
	if err := lx.expect(':', "':' after the entry name"); err != nil {
		return name, err
	}
	var at *memberAt
	if kf != nil {
		var skip bool
		if at, skip = kf.member(name, line, off); skip {
			return name, lx.skipValue("an entry body")
		}
	}
	return name, fn(name, line, off, at)
}

// readTree parses a whole small JSON file (stack.json, construct.json)
// into a tree.
func readTree(path string) (*tree, int32, error) {
	f, err := source.Open(path, source.MaxTreeJSON)
	if err != nil {
		return nil, -1, err
	}
	defer f.Close()
	lx := newLexer(f, path)
	p := parser{lx: lx, t: &tree{}}
	root, err := p.value(0, "a JSON value")
	if err != nil {
		return nil, -1, err
	}
	if _, ok := lx.peek(); ok {
		return nil, -1, lx.errorf("expected end of file, found %s", lx.describe())
	}
	if lx.rerr != nil && !errors.Is(lx.rerr, io.EOF) {
		return nil, -1, lx.atEOF("end of file")
	}
	return p.t, root, nil
}

// nodeErr builds an Error at node i of a file tree.
func nodeErr(path string, t *tree, i int32, format string, args ...any) error {
	return &source.Error{File: path, Line: int(t.nodes[i].line), Msg: fmt.Sprintf(format, args...)}
}

// kindName describes a node kind for "found ..." messages.
func kindName(k uint8) string {
	switch k {
	case kNull:
		return "null"
	case kTrue, kFalse:
		return "a boolean"
	case kInt, kFloat, kNaN, kInf, kNegInf:
		return "a number"
	case kString:
		return "a string"
	case kArray:
		return "a list"
	}
	return "an object"
}

// megatronKey marks the Megatron micro-step variant of construct.json.
const megatronKey = "megatron_micro_step_number"

// ReadConstruct reads construct.json: entry name -> parent module entry
// name, "" for a null or empty parent (top level). In the Megatron variant
// (a "megatron_micro_step_number" key) values may be [parent, microStep];
// the parent is kept, the micro step and the special key dropped.
func ReadConstruct(path string) (map[string]string, error) {
	m, err := readConstructInto(path, newConstructMap, func(*constructMap) {})
	if err != nil {
		return nil, err
	}
	return m.m, nil
}

// readConstructInto reads construct.json into a sink made by fresh:
// streamed for the common file (readConstructPlain), else through the
// file's tree into a second fresh sink. drop gets a sink that is not
// returned: the first after a fallback (it may hold members), the second
// on an error.
func readConstructInto[S constructSink](path string, fresh func() S, drop func(S)) (S, error) {
	s := fresh()
	if readConstructPlain(path, s) {
		return s, nil
	}
	drop(s)
	s = fresh()
	if err := readConstructTree(path, s); err != nil {
		drop(s)
		var none S
		return none, err
	}
	return s, nil
}

// constructSink receives construct.json's members in file order: an
// entry's name and its parent ("" for none), both valid only during the
// call.
type constructSink interface {
	member(key, parent []byte)
}

// constructMap is ReadConstruct's sink. Parent names repeat: each
// distinct one is kept once.
type constructMap struct {
	m       map[string]string
	parents map[string]string
}

func newConstructMap() *constructMap {
	return &constructMap{m: map[string]string{}, parents: map[string]string{}}
}

func (c *constructMap) member(key, parent []byte) {
	p, ok := c.parents[string(parent)]
	if !ok {
		p = string(parent)
		c.parents[p] = p
	}
	c.m[string(key)] = p
}

// readConstructTree reads construct.json through the file's tree.
func readConstructTree(path string, sink constructSink) error {
	t, root, err := readTree(path)
	if err != nil {
		return readErr("construct.json", err)
	}
	if t.nodes[root].kind != kObject {
		return nodeErr(path, t, root, "expected an object of entry -> parent, found %s", kindName(t.nodes[root].kind))
	}
	megatron := t.get(root, megatronKey) >= 0
	for c := t.nodes[root].first; c >= 0; c = t.nodes[c].next {
		key := t.str(t.nodes[c].key)
		v := c
		if megatron {
			if key == megatronKey {
				continue
			}
			if t.nodes[c].kind == kArray {
				if t.nodes[c].n != 2 {
					return nodeErr(path, t, c, "entry %q: expected [parent, microStep], found a list of %d", key, t.nodes[c].n)
				}
				v = t.nodes[c].first
			}
		}
		switch t.nodes[v].kind {
		case kNull:
			sink.member([]byte(key), nil)
		case kString:
			sink.member([]byte(key), []byte(t.str(t.nodes[v].text)))
		default:
			return nodeErr(path, t, v, "entry %q: expected a parent name or null, found %s", key, kindName(t.nodes[v].kind))
		}
	}
	return nil
}

// readConstructPlain reads the common construct.json streamed: an object
// whose values are all parent names or null. It returns false for
// anything else (the Megatron variant, a list, a syntax error), which
// readConstructTree then reads (or refuses) into a new sink: sink may
// have had members by then.
func readConstructPlain(path string, sink constructSink) bool {
	f, err := source.Open(path, source.MaxTreeJSON)
	if err != nil {
		return false
	}
	defer f.Close()
	lx := newLexer(f, path)
	if lx.expect('{', "") != nil {
		return false
	}
	var key, val []byte
	for first := true; ; first = false {
		c, ok := lx.peek()
		if !ok {
			return false
		}
		if c == '}' && first {
			lx.pos++
			break
		}
		if c != '"' {
			return false
		}
		if key, err = lx.readString(key[:0]); err != nil || string(key) == megatronKey {
			return false
		}
		if lx.expect(':', "") != nil {
			return false
		}
		c, _ = lx.peek()
		switch {
		case c == '"':
			if val, err = lx.readString(val[:0]); err != nil {
				return false
			}
		case lx.literal("null"):
			val = val[:0]
		default:
			return false
		}
		sink.member(key, val)
		c, ok = lx.peek()
		if !ok {
			return false
		}
		lx.pos++
		if c == '}' {
			break
		}
		if c != ',' {
			return false
		}
	}
	return atEnd(lx) == nil
}

// FileMembers reads the file f, a JSON object, member by member without
// decoding and without holding it (from its start, through ReadAt: f's
// offset is left as it is): fn gets each member's key as written, quotes
// and escapes kept (a buffer reused for the next key), and the byte span
// of its value in the file, with the value's text while the reading still
// holds it (valid during the call; nil: read the span where wanted). ok
// is false when the file is not one object the lexer reads whole, or
// cannot be read; fn may have been called by then.
func FileMembers(f *os.File, fn func(key, value []byte, start, end int64)) (ok bool) {
	lx := newLexer(io.NewSectionReader(f, 0, math.MaxInt64), "")
	at := func() int64 { return lx.read + int64(lx.pos) }
	if lx.expect('{', "") != nil {
		return false
	}
	if c, ok := lx.peek(); ok && c == '}' {
		lx.pos++
		return atEnd(lx) == nil
	}
	var key []byte
	for {
		if c, ok := lx.peek(); !ok || c != '"' {
			return false
		}
		k0 := at()
		if lx.skipString() != nil {
			return false
		}
		k1 := at()
		key = slices.Grow(key[:0], int(k1-k0))[:k1-k0]
		if k0 >= lx.read { // still in the lexer's buffer
			copy(key, lx.buf[k0-lx.read:])
		} else if _, err := f.ReadAt(key, k0); err != nil {
			return false
		}
		if lx.expect(':', "") != nil {
			return false
		}
		if _, ok := lx.peek(); !ok {
			return false
		}
		v := at()
		if lx.skipValue("") != nil {
			return false
		}
		var value []byte
		if v >= lx.read {
			value = lx.buf[v-lx.read : lx.pos]
		}
		fn(key, value, v, at())
		if end, err := lx.sep('}'); err != nil {
			return false
		} else if end {
			return atEnd(lx) == nil
		}
	}
}

// ReadStack reads stack.json into entry name -> call stack frames. Both
// formats are accepted, as msprobe's load_stack_json does: the grouped
// format {"0": [[names...], [frames...]], "1": ...} (detected by a
// non-empty "0" key; groups that are not a [list, frames] pair are
// skipped, a later group wins for a repeated name) and the old format
// {name: [frames...]}. A frames value that is a single string becomes a
// one-frame stack; null entries are left out.
func ReadStack(path string) (map[string][]string, error) {
	t, root, err := readTree(path)
	if err != nil {
		return nil, readErr("stack.json", err)
	}
	if t.nodes[root].kind != kObject {
		return nil, nodeErr(path, t, root, "expected an object, found %s", kindName(t.nodes[root].kind))
	}
	m := make(map[string][]string)
	if t.truthy(t.get(root, "0")) {
		for g := t.nodes[root].first; g >= 0; g = t.nodes[g].next {
			if t.nodes[g].kind != kArray || t.nodes[g].n != 2 {
				continue
			}
			names := t.nodes[g].first
			fr := t.nodes[names].next
			if t.nodes[names].kind != kArray {
				continue
			}
			var stack []string
			for n := t.nodes[names].first; n >= 0; n = t.nodes[n].next {
				if t.nodes[n].kind != kString {
					continue
				}
				if stack == nil {
					if t.nodes[fr].kind == kNull {
						break
					}
					if stack, err = framesAt(t, fr, t.str(t.nodes[n].text), path); err != nil {
						return nil, err
					}
				}
				m[t.str(t.nodes[n].text)] = stack
			}
		}
		return m, nil
	}
	for c := t.nodes[root].first; c >= 0; c = t.nodes[c].next {
		if t.nodes[c].kind == kNull {
			continue
		}
		name := t.str(t.nodes[c].key)
		st, err := framesAt(t, c, name, path)
		if err != nil {
			return nil, err
		}
		m[name] = st
	}
	return m, nil
}

// ReadParents streams construct.json and returns the parents of the
// entries want accepts (as ReadConstruct gives them), keeping nothing
// else: the few entries a compare run asks about, whatever the file's
// size.
func ReadParents(path string, want map[string]bool) (map[string]string, error) {
	return readParents(path, want, nil)
}

// ParentReader answers ReadParents again about a construct.json it has
// read once, for a caller that climbs its parents a generation at a time:
// it keeps where the value of each module entry (ModuleEntry's prefix)
// is, 24 bytes an entry outside the collected heap, and reads just those
// values. Release frees it.
type ParentReader struct {
	path    string
	at      *nametable.Table    // module entry -> index in values
	values  offheap.List[int64] // byte offsets of their values
	repeats bool                // some module entry is a key twice
}

// ReadParentsKeeping is ReadParents, and a ParentReader of the file.
func ReadParentsKeeping(path string, want map[string]bool) (map[string]string, *ParentReader, error) {
	r := &ParentReader{path: path, at: nametable.New()}
	out, err := readParents(path, want, r)
	if err != nil {
		r.Release()
		return nil, nil, err
	}
	r.at.Done()
	r.repeats = r.at.Len() < r.values.Len()
	return out, r, nil
}

// Parents is ReadParents(path, want) of the file read: module entries
// are read at their place, other names (rare: parents are modules) by
// reading the file again, and so is everything when a value cannot be
// read, for ReadParents' error, or when a module entry is a key twice
// (ReadParents reads each of its values).
func (r *ParentReader) Parents(want map[string]bool) (map[string]string, error) {
	if r.repeats {
		return ReadParents(r.path, want)
	}
	f, err := source.Open(r.path, source.MaxTreeJSON)
	if err != nil {
		return nil, readErr("construct.json", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return ReadParents(r.path, want)
	}
	out := map[string]string{}
	var rest map[string]bool
	buf := make([]byte, 4<<10)
	for name := range want {
		if !moduleLike([]byte(name)) { // the Megatron key too: ReadParents skips it
			if rest == nil {
				rest = map[string]bool{}
			}
			rest[name] = true
			continue
		}
		i, ok := r.at.Get(name)
		if !ok {
			continue // not in the file
		}
		off := r.values.At(int(i))
		lx := &lexer{r: io.NewSectionReader(f, off, st.Size()-off), source: r.path, buf: buf, line: 1, read: off}
		p, _, err := lx.parentValue(name, nil)
		if err != nil {
			return ReadParents(r.path, want)
		}
		out[name] = p
	}
	if rest != nil {
		more, err := ReadParents(r.path, rest)
		if err != nil {
			return ReadParents(r.path, want)
		}
		maps.Copy(out, more)
	}
	return out, nil
}

// Release frees the reader's tables.
func (r *ParentReader) Release() {
	if r != nil {
		r.at.Release()
		r.values.Release()
	}
}

// readParents is ReadParents; with keep, it also records where the
// value of every module entry is.
func readParents(path string, want map[string]bool, keep *ParentReader) (map[string]string, error) {
	return readParentsFast(path, want, keep, true)
}

// readParentsFast is readParents; without fast, every member is read by
// the general lexer (the reference the tests hold the fast path to).
func readParentsFast(path string, want map[string]bool, keep *ParentReader, fast bool) (map[string]string, error) {
	f, err := source.Open(path, source.MaxTreeJSON)
	if err != nil {
		return nil, readErr("construct.json", err)
	}
	defer f.Close()
	lx := newLexer(f, path)
	out := map[string]string{}
	if err := lx.expect('{', "an object of entry -> parent"); err != nil {
		return nil, err
	}
	var key, val, seen []byte
	ws := newWantSet(want)
members:
	for first := true; ; first = false {
		c, ok := lx.peek()
		if !ok {
			return nil, lx.atEOF("'}'")
		}
		if c == '}' && first {
			lx.pos++
			break
		}
		if c != '"' {
			return nil, lx.errorf("expected an entry name, found %s", lx.describe())
		}
		for fast {
			k, v, colon, null, next, ok := lx.plainMember(&seen)
			if !ok {
				break // read in full below
			}
			keep.keepAt(k, lx.read+int64(colon))
			if ws.has(k) {
				parent := ""
				if !null {
					parent = string(v)
				}
				out[string(k)] = parent
			}
			if !next {
				if end, err := lx.sep('}'); err != nil {
					return nil, err
				} else if end {
					break members
				}
				continue members
			}
		}
		if key, err = lx.readString(key[:0]); err != nil {
			return nil, err
		}
		if err := lx.expect(':', "':'"); err != nil {
			return nil, err
		}
		keep.keepAt(key, lx.read+int64(lx.pos))
		if !ws.has(key) {
			if err := lx.skipValue("a parent"); err != nil {
				return nil, err
			}
		} else {
			k := string(key)
			var parent string
			if parent, val, err = lx.parentValue(k, val); err != nil {
				return nil, err
			}
			out[k] = parent
		}
		if end, err := lx.sep('}'); err != nil {
			return nil, err
		} else if end {
			break
		}
	}
	if err := atEnd(lx); err != nil {
		return nil, err
	}
	return out, nil
}

// plainMember reads the common member of construct.json, from its key's
// opening quote at pos, when it lies whole in the buffer: a key and a
// string value of plain bytes (no escape, none above ASCII) or null,
// spaces only around ':'. key and val alias the buffer; colon is the
// index in buf just past ':'. With next, it has also read the ',' after
// the value and the spaces and newlines up to the next key's opening
// quote. Any other member gives ok false with nothing consumed, for the
// general reading.
//
// seen holds the last value read (a copy): a key or value that repeats
// it (a module's children name it one after another, then the module is
// the next key) is compared rather than checked byte by byte.
func (l *lexer) plainMember(seen *[]byte) (key, val []byte, colon int, null, next, ok bool) {
	b := l.buf[l.pos:l.end]
	i := 1 + plainRun(b[1:], *seen)
	if i >= len(b) || b[i] != '"' {
		return
	}
	key = b[1:i]
	for i++; i < len(b) && b[i] == ' '; i++ {
	}
	if i >= len(b) || b[i] != ':' {
		return
	}
	i++
	colon = l.pos + i
	for ; i < len(b) && b[i] == ' '; i++ {
	}
	if i >= len(b) {
		return
	}
	switch b[i] {
	case '"':
		j := i + 1 + len(*seen)
		if j >= len(b) || b[j] != '"' || !bytes.Equal(b[i+1:j], *seen) {
			j = i + 1 + plainLen(b[i+1:])
			if j >= len(b) || b[j] != '"' {
				return
			}
			*seen = append((*seen)[:0], b[i+1:j]...)
		}
		val, i = b[i+1:j], j+1
	case 'n':
		if len(b)-i < 4 || string(b[i:i+4]) != "null" {
			return
		}
		null, i = true, i+4
	default:
		return
	}
	ok = true
	if i < len(b) && b[i] == ',' {
		j, lines := i+1, 0
		for ; j < len(b); j++ {
			if b[j] == '\n' {
				lines++
			} else if b[j] != ' ' {
				break
			}
		}
		if j < len(b) && b[j] == '"' {
			l.pos += j
			l.line += lines
			return key, val, colon, null, true, true
		}
	}
	l.pos += i
	return key, val, colon, null, false, true
}

// plainRun is plainLen(b) when that ends at a '"' and b starts with the
// plain bytes seen (then compared, not checked): their length.
func plainRun(b, seen []byte) int {
	if n := len(seen); n < len(b) && b[n] == '"' && bytes.Equal(b[:n], seen) {
		return n
	}
	return plainLen(b)
}

// keepAt records, when r keeps them, where the value of entry k is
// (off, in the file) if k is a module's.
func (r *ParentReader) keepAt(k []byte, off int64) {
	if r != nil && moduleLike(k) {
		r.at.SetBytes(k, int32(r.values.Len()))
		r.values.Add(off)
	}
}

// wantSet is the entries whose parents readParents gives (but Megatron's
// key), with a filter in front of the map: a bit per hash of the wanted
// names of eight bytes or more (shorter names always pass it).
type wantSet struct {
	bits [64]uint64
	want map[string]bool
}

func newWantSet(want map[string]bool) *wantSet {
	ws := &wantSet{want: want}
	for k, w := range want {
		if w && len(k) >= 8 {
			h := wantHash(k)
			ws.bits[h/64] |= 1 << (h % 64)
		}
	}
	return ws
}

// has reports whether the parent of entry k is wanted.
func (ws *wantSet) has(k []byte) bool {
	if len(k) >= 8 {
		h := wantHash(unsafe.String(unsafe.SliceData(k), len(k)))
		if ws.bits[h/64]&(1<<(h%64)) == 0 {
			return false
		}
	}
	return ws.want[string(k)] && string(k) != megatronKey
}

// wantHash mixes a name's length, its last eight bytes and the eight
// in its middle into 12 bits; len(k) >= 8.
func wantHash(k string) uint {
	n := len(k)
	p := unsafe.Pointer(unsafe.StringData(k))
	a, b := load64(unsafe.Add(p, n-8)), load64(unsafe.Add(p, n/2-4))
	return uint(((a ^ b*0x9e3779b97f4a7c15) + uint64(n)) * 0xff51afd7ed558ccd >> 52)
}

// parentValue reads the value of entry k in construct.json: a parent
// name, null ("") or Megatron's [parent, microStep]. val is scratch.
func (lx *lexer) parentValue(k string, val []byte) (string, []byte, error) {
	c, _ := lx.peek()
	list := c == '[' // Megatron: [parent, microStep]
	if list {
		lx.pos++
		c, _ = lx.peek()
	}
	parent := ""
	var err error
	switch {
	case c == '"':
		if val, err = lx.readString(val[:0]); err != nil {
			return "", val, err
		}
		parent = string(val)
	case lx.literal("null"):
	default:
		return "", val, lx.errorf("entry %q: expected a parent entry name or null, found %s", k, lx.describe())
	}
	for list {
		c, _ := lx.peek()
		lx.pos++
		if c == ']' {
			break
		}
		if c != ',' {
			lx.pos--
			return "", val, lx.errorf("entry %q: expected ',' or ']', found %s", k, lx.describe())
		}
		if err := lx.skipValue("a micro step"); err != nil {
			return "", val, err
		}
	}
	return parent, val, nil
}

// readErr returns a *source.Error as it is (it names its file and line)
// and says which file was being read otherwise.
func readErr(what string, err error) error {
	var se *source.Error
	if errors.As(err, &se) {
		return err
	}
	return fmt.Errorf("read %s: %w", what, err)
}

// CheckJSON reads the file at path as Python's json.load does, building
// nothing, and returns its first syntax error (a *source.Error at the
// line of the bad byte), or nil. msprobe loads each dump.json whole
// before it looks at any of it, so such an error comes before any other
// of the file's.
func CheckJSON(path string) error {
	f, err := source.Open(path, source.MaxDumpJSON)
	if err != nil {
		return err
	}
	defer f.Close()
	lx := newLexer(f, path)
	if err := lx.skipValue("a JSON value"); err != nil {
		return err
	}
	return atEnd(lx)
}
