package msprobe

import (
	"math"
	"strconv"
)

// Node kinds of the per-entry tree.
const (
	kNull uint8 = iota
	kFalse
	kTrue
	kInt   // number without fraction or exponent (a Python int)
	kFloat // number with fraction or exponent (a Python float)
	kNaN
	kInf
	kNegInf
	kString
	kArray
	kObject
)

// span is a byte range of the tree's arena.
type span struct{ off, n int32 }

// in is the string sp spans in str, "" for no span (off < 0).
func (sp span) in(str string) string {
	if sp.off < 0 {
		return ""
	}
	return str[sp.off : sp.off+sp.n]
}

// node is one JSON value of the tree. Children of arrays and objects are
// linked through first/next; object members carry their key.
type node struct {
	kind  uint8
	key   span // member key (objects only)
	text  span // string value or number literal
	first int32
	last  int32
	next  int32
	n     int32 // number of children
	line  int32
}

// tree holds one JSON value (an entry body, or a whole small file) as
// nodes over a byte arena. It is reset and reused between entries so that
// scanning allocates nothing per node.
type tree struct {
	nodes []node
	arena []byte
	// keys indexes the member keys of objects with more than
	// indexKeysAbove members (whole construct.json and stack.json files
	// are one object), so that the duplicate-key check stays linear.
	keys map[int32]map[string]int32
	// fitems and fsb hold the rows of entries the fast path flattened
	// (see flat.go).
	fitems []Item
	fspans []pspans // the spans of fitems' strings
	fsb    []byte
}

// indexKeysAbove is the member count past which an object's keys are
// indexed; below it a linear scan is cheaper and allocates nothing.
const indexKeysAbove = 16

func (t *tree) reset() {
	t.nodes = t.nodes[:0]
	t.arena = t.arena[:0]
	t.keys = nil
	t.fitems = t.fitems[:0]
	t.fspans = t.fspans[:0]
	t.fsb = t.fsb[:0]
}

func (t *tree) str(s span) string { return string(t.arena[s.off : s.off+s.n]) }

func (t *tree) bytes(s span) []byte { return t.arena[s.off : s.off+s.n] }

// keyIs reports whether member i's key equals k, without allocating.
func (t *tree) keyIs(i int32, k string) bool {
	s := t.nodes[i].key
	return int(s.n) == len(k) && string(t.arena[s.off:s.off+s.n]) == k
}

// textIs reports whether string node i equals s.
func (t *tree) textIs(i int32, s string) bool {
	n := &t.nodes[i]
	return n.kind == kString && int(n.text.n) == len(s) && string(t.arena[n.text.off:n.text.off+n.text.n]) == s
}

// get returns the member of object o with key k, or -1. Duplicate keys
// were merged at parse time (last value wins, first position kept, as in
// Python's dict).
func (t *tree) get(o int32, k string) int32 {
	if o < 0 || t.nodes[o].kind != kObject {
		return -1
	}
	for c := t.nodes[o].first; c >= 0; c = t.nodes[c].next {
		if t.keyIs(c, k) {
			return c
		}
	}
	return -1
}

// truthy is Python's bool() of the JSON value.
func (t *tree) truthy(i int32) bool {
	if i < 0 {
		return false
	}
	n := &t.nodes[i]
	switch n.kind {
	case kNull, kFalse:
		return false
	case kInt, kFloat:
		f, _ := strconv.ParseFloat(string(t.bytes(n.text)), 64)
		return f != 0
	case kString:
		return n.text.n > 0
	case kArray, kObject:
		return n.n > 0
	}
	return true // true, NaN, ±Infinity
}

// parser builds trees from a lexer.
type parser struct {
	lx *lexer
	t  *tree
}

func (p *parser) add(kind uint8) int32 {
	p.t.nodes = append(p.t.nodes, node{kind: kind, first: -1, last: -1, next: -1, line: int32(p.lx.line)})
	return int32(len(p.t.nodes) - 1)
}

// value parses one JSON value into the tree and returns its index.
func (p *parser) value(depth int, want string) (int32, error) {
	l := p.lx
	c, ok := l.peek()
	if !ok {
		return -1, l.atEOF(want)
	}
	switch {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		i := p.add(kString)
		off := len(p.t.arena)
		var err error
		p.t.arena, err = l.readString(p.t.arena)
		p.t.nodes[i].text = span{int32(off), int32(len(p.t.arena) - off)}
		return i, err
	case c == '-' || c >= '0' && c <= '9':
		i := p.add(kInt)
		off := len(p.t.arena)
		arena, kind, err := l.readNumber(p.t.arena)
		p.t.arena = arena
		n := &p.t.nodes[i]
		n.text = span{int32(off), int32(len(arena) - off)}
		switch kind {
		case numFloat:
			n.kind = kFloat
		case numNegInf:
			n.kind = kNegInf
		}
		return i, err
	case c == 't':
		if l.literal("true") {
			return p.add(kTrue), nil
		}
	case c == 'f':
		if l.literal("false") {
			return p.add(kFalse), nil
		}
	case c == 'n':
		if l.literal("null") {
			return p.add(kNull), nil
		}
	case c == 'N':
		if l.literal("NaN") {
			return p.add(kNaN), nil
		}
	case c == 'I':
		if l.literal("Infinity") {
			return p.add(kInf), nil
		}
	}
	if l.truncatedWord() {
		return -1, l.atEOF(want)
	}
	return -1, l.errorf("expected %s, found %s", want, l.describe())
}

func (p *parser) appendChild(parent, child int32) {
	n := &p.t.nodes[parent]
	if n.first < 0 {
		n.first = child
	} else {
		p.t.nodes[n.last].next = child
	}
	n.last = child
	n.n++
}

func (p *parser) array(depth int) (int32, error) {
	l := p.lx
	if depth >= maxNesting {
		return -1, l.errorf("expected at most %d levels of nesting, found more", maxNesting)
	}
	a := p.add(kArray)
	l.pos++ // '['
	return p.arrayRest(a, depth)
}

// arrayRest reads the elements of array a, whose '[' is read, and its ']'.
func (p *parser) arrayRest(a int32, depth int) (int32, error) {
	l := p.lx
	if c, ok := l.peek(); ok && c == ']' {
		l.pos++
		return a, nil
	}
	for {
		v, err := p.value(depth+1, "a value")
		if err != nil {
			return -1, err
		}
		p.appendChild(a, v)
		if end, err := l.sep(']'); err != nil {
			return -1, err
		} else if end {
			return a, nil
		}
	}
}

func (p *parser) object(depth int) (int32, error) {
	l := p.lx
	if depth >= maxNesting {
		return -1, l.errorf("expected at most %d levels of nesting, found more", maxNesting)
	}
	o := p.add(kObject)
	l.pos++           // '{'
	var keySig uint64 // a bit per key's length and end bytes (see below)
	if c, ok := l.peek(); ok && c == '}' {
		l.pos++
		return o, nil
	}
	for {
		c, ok := l.peek()
		if !ok {
			return -1, l.atEOF("an object key")
		}
		if c != '"' {
			return -1, l.errorf("expected an object key string, found %s", l.describe())
		}
		off := len(p.t.arena)
		var err error
		p.t.arena, err = l.readString(p.t.arena)
		if err != nil {
			return -1, err
		}
		key := span{int32(off), int32(len(p.t.arena) - off)}
		if err := l.expect(':', "':' after the object key"); err != nil {
			return -1, err
		}
		v, err := p.value(depth+1, "a value")
		if err != nil {
			return -1, err
		}
		p.t.nodes[v].key = key
		// A key can repeat only if one with its length, first and last
		// byte came before: most keys skip the search.
		bit := uint64(1)
		if k := p.t.arena[key.off : key.off+key.n]; len(k) > 0 {
			bit <<= (uint(len(k)) + uint(k[0])*7 + uint(k[len(k)-1])*13) & 63
		}
		dup := int32(-1)
		if keySig&bit != 0 {
			dup = p.findKey(o, key)
		}
		keySig |= bit
		if dup >= 0 {
			p.replaceChild(o, dup, v)
			if m := p.t.keys[o]; m != nil {
				m[string(p.t.bytes(key))] = v
			}
		} else {
			p.appendChild(o, v)
			p.indexKey(o, v)
		}
		if end, err := l.sep('}'); err != nil {
			return -1, err
		} else if end {
			return o, nil
		}
	}
}

// findKey returns the child of o whose key equals key, or -1: a linear
// scan for the small objects of entry bodies, the key index for large ones.
func (p *parser) findKey(o int32, key span) int32 {
	k := p.t.bytes(key)
	if m := p.t.keys[o]; m != nil {
		if c, ok := m[string(k)]; ok {
			return c
		}
		return -1
	}
	for c := p.t.nodes[o].first; c >= 0; c = p.t.nodes[c].next {
		if string(p.t.bytes(p.t.nodes[c].key)) == string(k) {
			return c
		}
	}
	return -1
}

// indexKey records member c of object o in the key index, building the
// index when o grows past indexKeysAbove members.
func (p *parser) indexKey(o, c int32) {
	t := p.t
	if t.nodes[o].n <= indexKeysAbove {
		return // no index yet: member counts only grow
	}
	if m := t.keys[o]; m != nil {
		m[string(t.bytes(t.nodes[c].key))] = c
		return
	}
	if t.keys == nil {
		t.keys = map[int32]map[string]int32{}
	}
	m := make(map[string]int32, 2*indexKeysAbove)
	for x := t.nodes[o].first; x >= 0; x = t.nodes[x].next {
		m[string(t.bytes(t.nodes[x].key))] = x
	}
	t.keys[o] = m
}

// replaceChild puts v in old's place among o's children (Python's dict
// keeps the first position of a repeated key and the last value).
func (p *parser) replaceChild(o, old, v int32) {
	nodes := p.t.nodes
	nodes[v].next = nodes[old].next
	if nodes[o].first == old {
		nodes[o].first = v
	} else {
		for c := nodes[o].first; c >= 0; c = nodes[c].next {
			if nodes[c].next == old {
				nodes[c].next = v
				break
			}
		}
	}
	if nodes[o].last == old {
		nodes[o].last = v
	}
}

// number returns the Value of a number node without its Text.
func (t *tree) number(i int32) Value {
	f := parseNumber(t.bytes(t.nodes[i].text))
	k := Number
	if math.IsInf(f, 1) {
		k = PosInf
	} else if math.IsInf(f, -1) {
		k = NegInf
	}
	return Value{Kind: k, Num: f}
}

// value converts a scalar node to a Value; lists and objects become
// Composite values holding their Python str().
func (t *tree) scalar(i int32) Value {
	if i < 0 {
		return Value{Kind: Null}
	}
	n := &t.nodes[i]
	switch n.kind {
	case kNull:
		return Value{Kind: Null}
	case kTrue:
		return Value{Kind: Bool, Bool: true}
	case kFalse:
		return Value{Kind: Bool}
	case kInt, kFloat:
		s := t.str(n.text)
		f, _ := strconv.ParseFloat(s, 64) // a range error leaves ±Inf
		k := Number
		if math.IsInf(f, 1) {
			k = PosInf
		} else if math.IsInf(f, -1) {
			k = NegInf
		}
		return Value{Kind: k, Num: f, Text: s}
	case kNaN:
		return Value{Kind: NaN, Num: math.NaN(), Text: "NaN"}
	case kInf:
		return Value{Kind: PosInf, Num: math.Inf(1), Text: "Infinity"}
	case kNegInf:
		return Value{Kind: NegInf, Num: math.Inf(-1), Text: "-Infinity"}
	case kString:
		return Value{Kind: String, Text: t.str(n.text)}
	}
	return Value{Kind: Composite, Text: string(t.appendPyStr(nil, i))}
}

// appendPyStr appends Python's str() of the value Python's json module
// would load from node i: None/True/False, ints as written, floats by
// repr, strings bare at the top and repr-quoted inside containers, lists
// "[a, b]" and dicts "{'k': v}".
func (t *tree) appendPyStr(dst []byte, i int32) []byte {
	if i < 0 {
		return append(dst, "None"...)
	}
	if n := &t.nodes[i]; n.kind == kString {
		return append(dst, t.bytes(n.text)...)
	}
	return t.appendPyRepr(dst, i)
}

// pyConsts are Python's str() and repr() of the values of the kinds that
// hold one value.
var pyConsts = [...]string{kNull: "None", kTrue: "True", kFalse: "False", kNaN: "nan", kInf: "inf", kNegInf: "-inf"}

// appendPyRepr appends Python's repr() of node i's value.
func (t *tree) appendPyRepr(dst []byte, i int32) []byte {
	return t.appendValue(dst, i, &pyConsts, AppendPyRepr)
}

// jsonConsts are Python's json.dumps of the values of the kinds that hold
// one value.
var jsonConsts = [...]string{kNull: "null", kTrue: "true", kFalse: "false", kNaN: "NaN", kInf: "Infinity", kNegInf: "-Infinity"}

// appendJSON appends Python's json.dumps() of node i's value as json.load
// read it (ensure_ascii; containers on one line).
func (t *tree) appendJSON(dst []byte, i int32) []byte {
	return t.appendValue(dst, i, &jsonConsts, AppendJSONString)
}

// appendValue appends node i's value as repr() and json.dumps() both
// write it but for consts (the values of the kinds that hold one) and
// str (a string, a key): numbers as repr, lists and dicts on one line,
// ", " and ": " between their members.
func (t *tree) appendValue(dst []byte, i int32, consts *[len(pyConsts)]string, str func([]byte, string) []byte) []byte {
	n := &t.nodes[i]
	switch n.kind {
	case kNull, kTrue, kFalse, kNaN, kInf, kNegInf:
		return append(dst, consts[n.kind]...)
	case kInt:
		return appendPyInt(dst, t.bytes(n.text))
	case kFloat:
		f, _ := strconv.ParseFloat(string(t.bytes(n.text)), 64)
		return AppendPyFloat(dst, f)
	case kString:
		return str(dst, t.str(n.text))
	case kArray:
		dst = append(dst, '[')
		for c := n.first; c >= 0; c = t.nodes[c].next {
			if c != n.first {
				dst = append(dst, ", "...)
			}
			dst = t.appendValue(dst, c, consts, str)
		}
		return append(dst, ']')
	case kObject:
		dst = append(dst, '{')
		for c := n.first; c >= 0; c = t.nodes[c].next {
			if c != n.first {
				dst = append(dst, ", "...)
			}
			dst = str(dst, t.str(t.nodes[c].key))
			dst = append(dst, ": "...)
			dst = t.appendValue(dst, c, consts, str)
		}
		return append(dst, '}')
	}
	return dst
}

// appendPyInt appends Python's str() of a JSON integer literal: the
// literal itself, except that "-0" is 0.
func appendPyInt(dst, lit []byte) []byte {
	if string(lit) == "-0" {
		return append(dst, '0')
	}
	return append(dst, lit...)
}

// pow10tab holds the powers of ten that are exact in a float64.
var pow10tab = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// parseNumber parses a JSON number literal (already validated by the
// lexer), correctly rounded. Up to 19 significant digits are read into
// an integer; with at most 2^53 and a decimal exponent of at most 22 it
// is converted exactly by one multiplication or division (Clinger's fast
// path), else by eiselLemire; longer mantissas and the cases those cannot
// decide go to strconv.
func parseNumber(b []byte) float64 {
	i, neg := 0, false
	if len(b) > 0 && b[0] == '-' {
		neg, i = true, 1
	}
	var mant uint64
	exp := 0
	// Leading zeros are not significant: of the integer part, and of the
	// fraction when the integer part is 0.
	for i < len(b) && b[i] == '0' {
		i++
	}
	start := i
	for ; i < len(b) && b[i]-'0' <= 9; i++ {
		mant = mant*10 + uint64(b[i]-'0')
	}
	digits := i - start // significant digits
	if i < len(b) && b[i] == '.' {
		i++
		if digits == 0 {
			for ; i < len(b) && b[i] == '0'; i++ {
				exp--
			}
		}
		fs := i
		for ; i < len(b) && b[i]-'0' <= 9; i++ {
			mant = mant*10 + uint64(b[i]-'0')
		}
		digits += i - fs
		exp -= i - fs
	}
	if digits > 19 {
		return slowParse(b)
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		eneg := false
		if i < len(b) && (b[i] == '-' || b[i] == '+') {
			eneg = b[i] == '-'
			i++
		}
		e := 0
		for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
			if e < 10000 {
				e = e*10 + int(b[i]-'0')
			}
		}
		if eneg {
			e = -e
		}
		exp += e
	}
	if i < len(b) {
		return slowParse(b) // not a plain literal (-Infinity)
	}
	return floatOf(mant, exp, neg, b)
}

// floatOf is the float64 nearest to mant*10^exp (negated with neg), of
// at most 19 significant digits, read from the literal lit.
func floatOf(mant uint64, exp int, neg bool, lit []byte) float64 {
	if mant == 0 {
		if neg {
			return math.Copysign(0, -1)
		}
		return 0
	}
	if mant <= 1<<53 && exp >= -22 && exp <= 22 {
		f := float64(mant) // exact
		if exp < 0 {
			f /= pow10tab[-exp]
		} else {
			f *= pow10tab[exp]
		}
		if neg {
			f = -f
		}
		return f
	}
	if f, ok := eiselLemire(mant, exp, neg); ok {
		return f
	}
	return slowParse(lit)
}

func slowParse(b []byte) float64 {
	f, _ := strconv.ParseFloat(string(b), 64) // a range error leaves ±Inf
	return f
}
