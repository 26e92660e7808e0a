package msprobe

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"unsafe"
)

// The fast path of the flattening: an entry body in the common grammar of
// msprobe statistics dumps is flattened straight from the lexer's buffer
// into rows, without the per-entry tree. On anything it does not handle
// exactly as the tree path does (an md5 that is not a string in an item,
// P2P, repeated keys, parameters_grad and debug entries, escapes and
// non-ASCII strings, values other than scalars but a torch.Size's or a
// slice's list of ints, values msprobe's checks refuse, a body that
// crosses the end of the buffer) it declines: the lexer is left untouched
// and the tree path reads the entry. Its rows equal the tree path's for
// every entry it takes (flat_test.go checks both on every dump and by
// fuzzing).

// flatWindow is how many bytes of input the buffer should hold before the
// fast path tries an entry. A body it declines within flatSlack of the
// buffer's end may go on past it (a token the end cuts): the buffer then
// reads as much again and the fast path tries again, while it holds less
// than flatMaxEntry bytes unread (an optimizer's foreach call on every
// parameter, a cat of many tensors); the buffer then holds up to twice
// that, and comes back to its size after the entry (lexer.fill). A long
// body declined late for what it holds (an escaped string near its end)
// is so flattened about twice before the tree path reads it.
const (
	flatWindow   = 32 << 10
	flatSlack    = 4 << 10
	flatMaxEntry = 256 << 20
)

// flatMaxDepth bounds the nesting the fast path follows.
const flatMaxDepth = 32

// flatter is the fast path's state; it belongs to the decoding goroutine.
type flatter struct {
	b     []byte // input up to the end of the lexer's buffer
	i     int
	line  int
	name  string // the entry's
	whole bool   // a parameters_grad entry (flatWhole)
	state string // the field's row state
	path  []byte // structural name being built
	keys  [][]byte
	items []Item   // the tree's fitems, being appended
	spans []pspans // the tree's fspans, likewise
	sb    []byte   // the tree's fsb, being appended
	base  int      // start of the entry's bytes in sb

	scratch []byte
	list    []byte // str of the item's value, a list (intList)
	intern  map[string]string
	crcs    crcHexes
	recent  [8]string
	next    int
	lastTyp string // internLast's for an item's type and dtype
	lastDt  string

	taken int  // entries flattened here (tests)
	names bool // rows are built with their names only (scanner.names)
	// noStats: the statistics members are checked, not read (scanner.noStats).
	noStats bool
	// count: the rows are only counted into rows, neither names nor
	// strings built (EntryReader.Rows; names is set too).
	count bool
	rows  int

	// md5 tells whether the entry has an md5 where msprobe's md5_find
	// looks (tree.md5Find): in an item that is a member of the body
	// (md5Base: an io field's value, a parameter of a whole body) or an
	// element of such a member's list; topList is set while that list is
	// read.
	md5, topList bool
}

// Entry kinds for the fast path.
const (
	flatNo    = iota // not taken: debug entries, a parameters_grad part elsewhere
	flatIO           // the io fields of the body
	flatWhole        // parameters_grad: the whole body, list items keep their parent's name
)

// flatKind tells how the fast path takes entries named name (process's
// switch on the name).
func flatKind(name string) int {
	lastDot := strings.LastIndexByte(name, '.')
	last := name[lastDot+1:]
	if last == StateDebug {
		return flatNo
	}
	if !strings.Contains(name, StateParametersGrad) || !hasPGSegment(name) {
		return flatIO
	}
	if last == StateParametersGrad {
		return flatWhole
	}
	if lastDot >= 0 {
		secondLast := name[:lastDot]
		if d := strings.LastIndexByte(secondLast, '.'); d >= 0 {
			secondLast = secondLast[d+1:]
		}
		if secondLast == StateParametersGrad {
			return flatWhole
		}
	}
	return flatNo
}

// entry flattens the body at the lexer into t's flat rows; false: it
// declined and nothing moved but the buffer, which may have read more.
func (f *flatter) entry(lx *lexer, t *tree, name string, line int, kind int) (job, bool) {
	if lx.end-lx.pos < flatWindow && lx.rerr == nil {
		lx.fill()
	}
	for {
		j, ok := f.try(lx, t, name, line, kind)
		if ok || lx.rerr != nil || f.i < lx.end-flatSlack || lx.end-lx.pos >= flatMaxEntry {
			return j, ok
		}
		for want := 2 * (lx.end - lx.pos); lx.end-lx.pos < want && lx.fill(); {
		}
	}
}

// try is entry on what the buffer holds.
func (f *flatter) try(lx *lexer, t *tree, name string, line int, kind int) (job, bool) {
	f.b, f.i, f.line, f.name = lx.buf[:lx.end], lx.pos, lx.line, name
	f.keys = f.keys[:0]
	f.md5, f.topList = false, false
	f.rows = 0
	f.items, f.spans, f.sb = t.fitems, t.fspans, t.fsb
	ilo, slo := len(f.items), len(f.sb)
	f.base = slo
	var ok bool
	if f.whole = kind == flatWhole; f.whole {
		if !f.count {
			f.path = append(f.path[:0], name...)
		}
		f.state = StateParametersGrad
		ok = f.ws() == '{' && f.object(0)
	} else {
		ok = f.body()
	}
	t.fitems, t.fspans, t.fsb = f.items, f.spans, f.sb
	f.items, f.spans, f.sb, f.b = nil, nil, nil, nil
	if !ok {
		t.fitems, t.fspans, t.fsb = t.fitems[:ilo], t.fspans[:ilo], t.fsb[:slo]
		return job{}, false
	}
	lx.pos, lx.line = f.i, f.line
	f.taken++
	if f.count {
		return job{t: t, name: name, line: line, flat: true, md5: f.md5, ihi: int32(f.rows)}, true
	}
	return job{t: t, name: name, line: line, flat: true, md5: f.md5,
		ilo: int32(ilo), ihi: int32(len(t.fitems)), slo: int32(slo), shi: int32(len(t.fsb))}, true
}

// ws skips whitespace and returns the next byte, 0 at the end of the buffer.
func (f *flatter) ws() byte {
	b, i := f.b, f.i
	if i < len(b) && b[i] > ' ' {
		return b[i]
	}
	i, f.line = skipWS(b, i, f.line)
	if f.i = i; i < len(b) {
		return b[i]
	}
	return 0
}

// str reads a string of plain bytes (no escape, control or non-ASCII
// byte) at the opening quote.
func (f *flatter) str() ([]byte, bool) {
	j := f.i + 1
	if j > len(f.b) {
		return nil, false
	}
	n := plainLen(f.b[j:])
	if j+n >= len(f.b) || f.b[j+n] != '"' {
		return nil, false
	}
	f.i = j + n + 1
	return f.b[j : j+n], true
}

// Ids of the keys the fast path knows; the io fields in ioFields order.
const (
	kyOther = iota
	kyInputArgs
	kyInputKwargs
	kyInput
	kyOutput
	kyParameters
	kyType
	kyDtype
	kyShape
	kyMax
	kyMin
	kyMean
	kyNorm
	kyReqGrad
	kyDataName
	kyValue
	kyMD5
	kyClassType
	kyGroupRanks
)

// keyNames are the known keys by id.
var keyNames = [...]string{kyInputArgs: "input_args", kyInputKwargs: "input_kwargs", kyInput: "input",
	kyOutput: "output", kyParameters: "parameters", kyType: "type", kyDtype: "dtype", kyShape: "shape",
	kyMax: "Max", kyMin: "Min", kyMean: "Mean", kyNorm: "Norm", kyReqGrad: "requires_grad",
	kyDataName: "data_name", kyValue: "value", kyMD5: "md5", kyClassType: "class_type",
	kyGroupRanks: "group_ranks"}

// keyWords holds each known key followed by `": ` as two masked
// little-endian words, and its length, for a test of the key the parser
// expects next (the longest, requires_grad, and `": ` make 16 bytes).
var keyWords = func() (t [32]struct {
	w1, m1, w2, m2 uint64
	n              int
}) {
	for id, k := range keyNames {
		if k == "" {
			continue
		}
		var b [16]byte
		n := copy(b[:], k+"\": ")
		if n != len(k)+3 {
			panic("msprobe: key too long for keyWords")
		}
		mask := func(n int) uint64 {
			if n >= 8 {
				return ^uint64(0)
			}
			return 1<<(8*uint(n)) - 1
		}
		t[id].m1, t[id].m2 = mask(n), mask(max(n-8, 0))
		t[id].w1 = binary.LittleEndian.Uint64(b[:]) & t[id].m1
		t[id].w2 = binary.LittleEndian.Uint64(b[8:]) & t[id].m2
		t[id].n = len(k)
	}
	return
}()

// keyID is the id of key k (kyOther: not a known key).
func keyID(k []byte) int {
	switch string(k) {
	case "input_args":
		return kyInputArgs
	case "input_kwargs":
		return kyInputKwargs
	case "input":
		return kyInput
	case "output":
		return kyOutput
	case "parameters":
		return kyParameters
	case "type":
		return kyType
	case "dtype":
		return kyDtype
	case "shape":
		return kyShape
	case "Max":
		return kyMax
	case "Min":
		return kyMin
	case "Mean":
		return kyMean
	case "Norm":
		return kyNorm
	case "requires_grad":
		return kyReqGrad
	case "data_name":
		return kyDataName
	case "value":
		return kyValue
	case "md5":
		return kyMD5
	case "class_type":
		return kyClassType
	case "group_ranks":
		return kyGroupRanks
	}
	return kyOther
}

// nextKey is the key that most often follows each one in statistics
// dumps, tested first.
var nextKey = [len(keyNames)]int{kyOther: kyInputArgs, kyInputArgs: kyInputKwargs, kyInputKwargs: kyOutput,
	kyInput: kyOutput, kyOutput: kyParameters, kyType: kyDtype, kyDtype: kyShape, kyShape: kyMax,
	kyMax: kyMin, kyMin: kyMean, kyMean: kyNorm, kyNorm: kyReqGrad, kyReqGrad: kyMD5}

// key reads `"key":` and tells which known key it is (kyOther: none);
// want is the key expected there.
func (f *flatter) key(want int) ([]byte, int, bool) {
	// Mostly a newline and fewer than eight spaces before the quote, or
	// none, and then want and `": `: these are tested first, in 32 bytes
	// read without ws or a call that would spill the caller's registers.
	if i := f.i; want != kyOther && i+32 <= len(f.b) {
		s := f.b[i : i+32 : i+32]
		j, nl := 0, 0
		if s[0] == '\n' {
			w := binary.LittleEndian.Uint64(s[1:]) ^ 0x2020202020202020
			j, nl = 1+bits.TrailingZeros64(w)/8, 1
		}
		j &= 15 // at most 9: no bounds checks below
		kw := &keyWords[want&31]
		if s[j] == '"' && binary.LittleEndian.Uint64(s[j+1:])&kw.m1 == kw.w1 &&
			binary.LittleEndian.Uint64(s[j+9:])&kw.m2 == kw.w2 {
			n := kw.n & 15 // at most 13
			f.i, f.line = i+j+1+n+3, f.line+nl
			return s[j+1 : j+1+n], want, true
		}
	}
	return f.keyAny()
}

// keyAny is key for any key and whitespace.
func (f *flatter) keyAny() ([]byte, int, bool) {
	if f.ws() != '"' {
		return nil, 0, false
	}
	k, ok := f.str()
	if !ok {
		return nil, 0, false
	}
	id := keyID(k)
	// Mostly `": `: the colon and one space are looked at first.
	if b, i := f.b, f.i; i+1 < len(b) && b[i] == ':' {
		i++
		if b[i] == ' ' {
			i++
		}
		f.i = i
		return k, id, true
	}
	if f.ws() != ':' {
		return nil, 0, false
	}
	f.i++
	return k, id, true
}

// sep reads the ',' or the closer after a member or element: 1 for ',',
// 2 for the closer, 0 otherwise.
func (f *flatter) sep(closer byte) int {
	switch f.ws() {
	case ',':
		f.i++
		return 1
	case closer:
		f.i++
		return 2
	}
	return 0
}

func (f *flatter) word(w string) bool {
	if len(f.b)-f.i > len(w) && string(f.b[f.i:f.i+len(w)]) == w {
		f.i += len(w)
		return true
	}
	return false
}

// fnum is a number literal the fast path read, with its digits.
type fnum struct {
	lit   []byte
	mant  uint64 // the significant digits (wrapped past 19 of them)
	exp   int32  // value = mant * 10^exp
	sig   int32  // significant digits
	neg   bool
	float bool // a fraction or exponent (a Python float)
	one   bool // the integer part is one digit, not 0
	// xd is the exponent part's digit count (at most 127), 0 without
	// one; its top bit is set for an 'E' or an exponent without sign.
	xd uint8
}

// value is the literal's float64, as parseNumber gives it.
func (n *fnum) value() float64 {
	if n.sig > 19 {
		return slowParse(n.lit)
	}
	return floatOf(n.mant, int(n.exp), n.neg, n.lit)
}

// isRepr tells whether the literal is AppendPyFloat(x), x its value
// (finite): its digits are x's shortest and laid out as repr lays them
// out, positional for a decimal point at d in [-3, 16], else d.ddde±XX.
func (n *fnum) isRepr(x float64) bool {
	if !n.float || n.sig > 17 { // repr has at most 17 digits, ".0" one
		return false
	}
	if n.mant == 0 {
		return n.exp == -1 && n.xd == 0 // "0.0", "-0.0"
	}
	if x == 0 {
		return false // underflow
	}
	m, e := shortestDecimal(x)
	// The literal's first digit is significant: d is the decimal point's
	// place, also repr's when the digits are x's.
	d := int(n.sig + n.exp)
	if d-1 < -4 || d-1 >= 16 {
		xd := uint8(2)
		if d-1 >= 100 || d-1 <= -100 {
			xd = 3
		}
		return n.one && n.xd == xd && n.mant == m && int(n.exp) == e
	}
	if n.xd != 0 {
		return false
	}
	if e < 0 {
		return n.mant == m && int(n.exp) == e
	}
	// integral: the digits, zeros, ".0"
	return n.exp == -1 && e < len(pow10u64)-1 && n.mant == m*pow10u64[e+1]
}

// num reads a number literal in Python's JSON grammar, its digits
// parsed on the way.
func (f *flatter) num(n *fnum) bool {
	b, i := f.b, f.i
	*n = fnum{}
	if i < len(b) && b[i] == '-' {
		n.neg = true
		i++
	}
	if i >= len(b) {
		return false
	}
	switch c := b[i]; {
	case c == '0':
		i++
	case c-'1' < 9:
		if i+1 < len(b) && b[i+1]-'0' > 9 { // one digit, mostly (d.ddd)
			n.mant, n.sig, n.one = uint64(c-'0'), 1, true
			i++
			break
		}
		s := i
		n.mant, i = Digits(b, i, 0)
		n.sig = int32(i - s)
	default:
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		d := i
		if n.mant == 0 {
			for i < len(b) && b[i] == '0' {
				i++ // leading zeros are not significant
			}
		}
		s := i
		n.mant, i = Digits(b, i, n.mant)
		if i == d {
			return false
		}
		n.sig += int32(i - s)
		n.exp -= int32(i - d)
		n.float = true
	}
	if i < len(b) && b[i]|0x20 == 'e' {
		xd := uint8(0x80)
		if b[i] == 'e' {
			xd = 0
		}
		i++
		eneg := false
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			eneg = b[i] == '-'
			i++
		} else {
			xd = 0x80
		}
		d, e := i, 0
		for ; i < len(b) && b[i]-'0' <= 9; i++ {
			if e < 10000 {
				e = e*10 + int(b[i]-'0')
			}
		}
		if i == d {
			return false
		}
		if eneg {
			e = -e
		}
		n.exp += int32(e)
		n.float = true
		n.xd = xd | uint8(min(i-d, 127))
	}
	if i >= len(b) {
		return false // the literal may go on past the buffer
	}
	n.lit = b[f.i:i]
	f.i = i
	return true
}

// Digits reads the run of decimal digits at b[i:] into mant (which wraps
// past 19 digits), eight at a time while eight bytes are left, and
// returns mant and the end of the run.
func Digits[T string | []byte](b T, i int, mant uint64) (uint64, int) {
	for i+8 <= len(b) {
		w := load8(b[i : i+8])
		n := digitRun(w)
		if n < 8 {
			if n > 0 {
				// The n digits moved up, '0's below them.
				w = w<<(8*uint(8-n)) | 0x3030303030303030>>(8*uint(n))
				mant = mant*pow10u64[n] + EightDigits(w)
			}
			return mant, i + n
		}
		mant = mant*1e8 + EightDigits(w)
		i += 8
	}
	for ; i < len(b) && b[i]-'0' <= 9; i++ {
		mant = mant*10 + uint64(b[i]-'0')
	}
	return mant, i
}

// pow10u64 holds the powers of ten a uint64 holds.
var pow10u64 = [...]uint64{1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14,
	1e15, 1e16, 1e17, 1e18, 1e19}

// digitRun is how many of the bytes of w, from its lowest, are ASCII
// digits in a row. A byte above 0xf9 may carry into the bytes above it,
// which only follow the first non-digit.
func digitRun(w uint64) int {
	const hi, zeros, six = 0xf0f0f0f0f0f0f0f0, 0x3030303030303030, 0x0606060606060606
	nd := (w&hi ^ zeros) | ((w+six)&hi ^ zeros)
	return bits.TrailingZeros64(nd) / 8
}

// digitMasks are digitRun's constants, read into registers by skipDigits.
var digitMasks = [3]uint64{0xf0f0f0f0f0f0f0f0, 0x3030303030303030, 0x0606060606060606}

// EightDigits is the number the eight ASCII digits of w spell, its lowest
// byte the first digit (SWAR; w must hold digits only).
func EightDigits(w uint64) uint64 {
	w -= 0x3030303030303030
	w = w*10 + w>>8
	return ((w&0x000000ff000000ff)*(100+1000000<<32) + (w>>16&0x000000ff000000ff)*(1+10000<<32)) >> 32
}

// plainOK reports whether a string value passes what the fast path
// leaves to the tree path: msprobe's formula check, and md5_find.
func plainOK(s []byte) bool {
	return !formulaStartBytes(s) && !bytes.Contains(s, []byte("md5"))
}

// fval is a scalar the fast path read; lit is a number's literal or a
// string's bytes, nil for the other kinds.
type fval struct {
	fnum       // kInt, kFloat: the digits too
	kind uint8 // kNull, kTrue, kFalse, kInt, kFloat, kNaN, kInf, kNegInf, kString
	set  bool
}

// scalar reads a number, NaN, Infinity, -Infinity, true, false, null or
// plain string.
func (f *flatter) scalar(v *fval) bool {
	v.set, v.lit = true, nil
	switch c := f.ws(); {
	case c == '-' && !f.negInf() || c-'0' <= 9:
		ok := f.num(&v.fnum)
		v.kind = kInt
		if v.float {
			v.kind = kFloat
		}
		return ok
	case c == '"':
		s, ok := f.str()
		v.kind, v.lit = kString, s
		return ok && plainOK(s)
	case c == 't':
		v.kind = kTrue
		return f.word("true")
	case c == 'f':
		v.kind = kFalse
		return f.word("false")
	case c == 'n':
		v.kind = kNull
		return f.word("null")
	case c == '-':
		v.kind = kNegInf
		return f.word("-Infinity")
	case c == 'N':
		v.kind = kNaN
		return f.word("NaN")
	case c == 'I':
		v.kind = kInf
		return f.word("Infinity")
	}
	return false
}

// statScalar is scalar for a value the row keeps only outside names mode
// (statistics, value, members the row does without). In names mode only
// its acceptance matters: see scalarCheck.
func (f *flatter) statScalar(v *fval) bool {
	if f.names {
		return f.scalarCheck(v)
	}
	if i := f.i; i < len(f.b) && (f.b[i]-'0' <= 9 || f.b[i] == '-' && !f.negInf()) {
		// mostly a number right after the key's ": "
		v.set = true
		ok := f.num(&v.fnum)
		v.kind = kInt
		if v.float {
			v.kind = kFloat
		}
		return ok
	}
	return f.scalar(v)
}

// statistic is statScalar for Max, Min, Mean or Norm, which with noStats
// are only checked.
func (f *flatter) statistic(v *fval) bool {
	if f.noStats {
		return f.scalarCheck(v)
	}
	return f.statScalar(v)
}

// scalarCheck is scalar for a value whose acceptance alone matters: it
// accepts what scalar does, no number converted (a number leaves v set,
// its kind and value unset).
func (f *flatter) scalarCheck(v *fval) bool {
	if c := f.ws(); c != '-' && c-'0' > 9 || c == '-' && f.negInf() {
		return f.scalar(v)
	}
	v.set = true
	_, _, ok := f.numCheck()
	return ok
}

// negInf reports whether the '-' at the cursor starts -Infinity.
func (f *flatter) negInf() bool { return f.i+1 < len(f.b) && f.b[f.i+1] == 'I' }

// numCheck is num for a literal whose grammar, sign and kind alone
// matter: it accepts exactly what num does, its digits not parsed.
func (f *flatter) numCheck() (neg, float, ok bool) {
	b, i := f.b, f.i
	if i < len(b) && b[i] == '-' {
		neg = true
		i++
	}
	if i >= len(b) {
		return
	}
	switch c := b[i]; {
	case c == '0':
		i++
	case c-'1' < 9:
		i = skipDigits(b, i+1)
	default:
		return
	}
	if i < len(b) && b[i] == '.' {
		d := i + 1
		if i = skipDigits(b, d); i == d {
			return
		}
		float = true
	}
	if i < len(b) && b[i]|0x20 == 'e' {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		d := i
		if i = skipDigits(b, d); i == d {
			return
		}
		float = true
	}
	if i >= len(b) {
		return // the literal may go on past the buffer
	}
	f.i = i
	return neg, float, true
}

// skipDigits returns the end of the run of decimal digits at b[i:].
// (digitRun a word a turn, its constants in registers and no bounds
// checks, as plainLenFrom.)
func skipDigits(b []byte, i int) int {
	if i >= 0 && i+8 <= len(b) {
		hi, zeros, six := digitMasks[0], digitMasks[1], digitMasks[2]
		base := unsafe.Pointer(unsafe.SliceData(b))
		for last := len(b) - 8; i <= last; i += 8 {
			w := load64(unsafe.Add(base, i))
			// digitRun(w)
			if nd := (w&hi ^ zeros) | ((w+six)&hi ^ zeros); nd != 0 {
				return i + bits.TrailingZeros64(nd)/8
			}
		}
	}
	for i < len(b) && b[i]-'0' <= 9 {
		i++
	}
	return i
}

// body flattens an entry body, an object, as process does for an entry
// that is neither debug nor parameters_grad.
func (f *flatter) body() bool {
	if f.ws() != '{' {
		return false
	}
	f.i++
	if f.ws() == '}' {
		f.i++
		return true
	}
	f.keys = f.keys[:0]
	var seen uint8
	var v fval
	prev := kyOther
	for {
		key, id, ok := f.key(nextKey[prev])
		if !ok {
			return false
		}
		k := id - kyInputArgs
		prev = id
		switch {
		case id >= kyInputArgs && id <= kyParameters:
			// The input fields' rows must come in ioFields order.
			if seen>>k&1 != 0 || k <= 2 && seen&(0b111&^(1<<(k+1)-1)) != 0 {
				return false
			}
			seen |= 1 << k
			if !f.count {
				f.path = append(append(f.path[:0], f.name...), ioFields[k].suffix...)
			}
			f.state = ioFields[k].state
			if c := f.ws(); c != '{' && c != '[' && c != 'n' {
				return false
			}
			if !f.value(0) {
				return false
			}
		case id == kyMD5:
			return false
		default:
			for _, o := range f.keys {
				if string(o) == string(key) {
					return false
				}
			}
			f.keys = append(f.keys, key)
			if !f.scalar(&v) {
				return false
			}
		}
		switch f.sep('}') {
		case 0:
			return false
		case 2:
			return true
		}
	}
}

// value flattens one value named f.path (parse in scan.go).
func (f *flatter) value(depth int) bool {
	if depth > flatMaxDepth {
		return false
	}
	switch f.ws() {
	case 'n':
		line := int32(f.line)
		if !f.word("null") {
			return false
		}
		if f.count {
			f.rows++
			return true
		}
		pi := f.newItem(line, f.add(f.path))
		pi.it.NoneItem = true
		pi.it.Dtype, pi.it.Shape = "None", "None"
		return true
	case '[':
		f.i++
		if f.ws() == ']' {
			f.i++
			return true
		}
		base := len(f.path)
		members := depth == f.md5Base()
		if members {
			f.topList = true
		}
		for k := 0; ; k++ {
			if !f.whole && !f.count {
				f.path = strconv.AppendInt(append(f.path[:base], '.'), int64(k), 10)
			}
			if !f.value(depth + 1) {
				return false
			}
			switch f.sep(']') {
			case 0:
				return false
			case 2:
				f.path = f.path[:base]
				if members {
					f.topList = false
				}
				return true
			}
		}
	case '{':
		return f.object(depth)
	}
	var v fval
	return f.scalar(&v) // bare scalars give no row
}

// object flattens an object: an item (its first key "type" with a string
// value) or a dict of named values.
func (f *flatter) object(depth int) bool {
	line := f.line
	f.i++
	if f.ws() == '}' {
		f.i++
		return true
	}
	key, id, ok := f.key(kyType)
	if !ok {
		return false
	}
	// At the top of a whole body, io field keys are checked by
	// check_dump_json_str: left to the tree path.
	top := depth == 0 && f.whole
	if id == kyType {
		if f.ws() != '"' {
			return false
		}
		typ, ok := f.str()
		seen := depth == f.md5Base() || depth == f.md5Base()+1 && f.topList
		return ok && f.leaf(typ, int32(line), top, seen)
	}
	kbase, pbase := len(f.keys), len(f.path)
	for {
		switch id {
		case kyType, kyClassType, kyMD5:
			return false
		case kyShape:
			if f.ws() != '[' {
				return false
			}
		case kyReqGrad:
			if c := f.ws(); c != 't' && c != 'f' {
				return false
			}
		case kyOther:
			if !f.whole && hasPGSegment(key) {
				return false
			}
		case kyInputArgs, kyInputKwargs, kyInput, kyOutput:
			if top {
				return false
			}
		}
		for _, o := range f.keys[kbase:] {
			if string(o) == string(key) {
				return false
			}
		}
		f.keys = append(f.keys, key)
		if !f.count {
			f.path = append(append(f.path[:pbase], '.'), key...)
		}
		if !f.value(depth + 1) {
			return false
		}
		switch f.sep('}') {
		case 0:
			return false
		case 2:
			f.path, f.keys = f.path[:pbase], f.keys[:kbase]
			return true
		}
		if key, id, ok = f.key(kyOther); !ok {
			return false
		}
	}
}

// md5Base is the depth of the values that are members of the body: an io
// field's value (body reads them at 0), a parameter of a whole body (its
// object is read at 0).
func (f *flatter) md5Base() int {
	if f.whole {
		return 1
	}
	return 0
}

// itemMembers are the members of an item that its row is made of (leaf
// reads them, leafRow makes the row).
// Its zero value is an item with none of them, so that leaf only clears it.
type itemMembers struct {
	dtype, dataName, md5 []byte
	shape, reqGrad       string
	ranks                string // str(group_ranks); "": none (str(None))
	listN                int    // the length of a value that is a list (intList)
	listed               bool   // the value is a list
	stats                [4]fval
	val                  fval
}

// leaf is leaf in scan.go for the item whose "type" (its first key) is
// typ, after that key; md5Seen: where md5_find looks.
func (f *flatter) leaf(typ []byte, line int32, top, md5Seen bool) bool {
	var (
		seen uint16
		m    itemMembers
		skip fval
		ok   bool
		prev = kyType
	)
	for {
		switch f.sep('}') {
		case 0:
			return false
		case 2:
			return f.leafRow(typ, line, &m)
		}
		_, id, kok := f.key(nextKey[prev])
		if !kok {
			return false
		}
		var bit uint16
		switch id {
		case kyDtype:
			bit = 1 << 0
			if f.ws() == '"' {
				// leafRow interns it, which checks it as scalar does
				m.dtype, ok = f.str()
			} else {
				ok = f.scalar(&skip) && skip.kind == kNull
				m.dtype = nil
			}
		case kyShape:
			bit = 1 << 1
			m.shape, ok = f.shape()
		case kyMax:
			bit = 1 << 2
			ok = f.statistic(&m.stats[0])
		case kyMin:
			bit = 1 << 3
			ok = f.statistic(&m.stats[1])
		case kyMean:
			bit = 1 << 4
			ok = f.statistic(&m.stats[2])
		case kyNorm:
			bit = 1 << 5
			ok = f.statistic(&m.stats[3])
		case kyReqGrad:
			bit = 1 << 6
			ok = f.scalar(&skip)
			switch skip.kind {
			case kTrue:
				m.reqGrad = "True"
			case kFalse:
				m.reqGrad = "False"
			default:
				ok = false
			}
		case kyDataName:
			bit = 1 << 7
			ok = f.scalar(&skip) && (skip.kind == kString || skip.kind == kNull)
			m.dataName = skip.lit
		case kyValue:
			bit = 1 << 8
			if f.ws() == '[' {
				m.listN, ok = f.intList()
				m.listed = true
			} else {
				ok = f.statScalar(&m.val)
			}
		case kyMD5:
			// a string, as msprobe writes it
			bit = 1 << 9
			ok = f.scalar(&skip) && skip.kind == kString
			m.md5 = skip.lit
			f.md5 = f.md5 || md5Seen
		case kyGroupRanks:
			// a list of ranks (a torch.ProcessGroup's); its str is
			// shape's
			bit = 1 << 10
			m.ranks, ok = f.shape()
		case kyType, kyClassType:
			return false
		case kyInputArgs, kyInputKwargs, kyInput, kyOutput:
			ok = !top && f.statScalar(&skip)
		default:
			ok = f.statScalar(&skip)
		}
		if !ok || seen&bit != 0 {
			return false
		}
		seen |= bit
		prev = id
	}
}

// leafRow appends the row of an item (gen_op_item) from its members (in
// names mode, the row with its names only).
func (f *flatter) leafRow(typ []byte, line int32, m *itemMembers) bool {
	dtype, dataName, md5, listN, listed, stats, val := m.dtype, m.dataName, m.md5, m.listN, m.listed, &m.stats, &m.val
	typStr, ok := f.internLast(&f.lastTyp, typ)
	if !ok {
		return false
	}
	// rankOf: the str that is the row's statistics and md5 (scan.go's
	// leaf) for a rank (src, dst) or a process group without dtype
	// (rank: the item is one; rankOf may be empty or nil).
	var rankOf []byte
	rank := false
	if len(dtype) == 0 {
		// dtype missing, null or "": the plain scalar case, torch.Size
		// and slice (their value a list or none), ellipsis, ranks and
		// process groups.
		switch typStr {
		case "torch.Size", "slice":
			if val.set {
				return false
			}
		case "ellipsis":
			if listed {
				return false
			}
		default:
			if listed {
				return false
			}
			if f.names {
				break // rankOf makes statistics: none here
			}
			switch string(f.path[bytes.LastIndexByte(f.path, '.')+1:]) {
			case "src", "dst", "group_src", "group_dst":
				rankOf, rank = f.appendPyStr(f.scratch[:0], val), true
				f.scratch = rankOf
			default:
				if typStr == "torch.ProcessGroup" {
					rankOf = append(f.scratch[:0], m.ranks...)
					if m.ranks == "" {
						rankOf = append(rankOf, "None"...)
					}
					f.scratch, rank = rankOf, true
				}
			}
		}
	}
	if f.count { // the row only counted: the check of the dtype
		f.rows++
		if len(dtype) > 0 {
			_, ok = f.internLast(&f.lastDt, dtype)
		}
		return ok
	}
	// The name: the data_name's stem (a prefix of its bytes) or the path.
	var pi pitem
	if len(dataName) > 0 {
		dn := f.add(dataName)
		stem := dn
		if d := bytes.LastIndexByte(dataName, '.'); d >= 0 {
			stem.n = int32(d)
		}
		pi = f.newItem(line, stem)
		pi.dataName = dn
	} else {
		pi = f.newItem(line, f.add(f.path))
	}
	pi.it.Type = typStr
	if f.names { // no statistics or md5: only the check of the dtype
		if len(dtype) > 0 {
			_, ok = f.internOK(dtype)
		}
		return ok
	}
	pi.it.RequiresGrad = m.reqGrad
	if len(dtype) > 0 {
		if pi.it.Dtype, ok = f.internLast(&f.lastDt, dtype); !ok {
			return false
		}
		pi.it.Shape = m.shape
		if m.shape == "" {
			pi.it.Shape = "None"
		}
		f.stats(pi, stats)
	} else if rank {
		pi.it.Dtype, pi.it.Shape = typStr, "[]"
		r := f.add(rankOf)
		for k := range pi.stats {
			pi.it.Stats[k] = Value{Kind: String}
			pi.stats[k] = r
		}
		if len(rankOf) > 0 {
			pi.md5 = r
			return true
		}
		md5 = nil // "": the value's CRC-32, the item's md5 unread
	} else if typStr == "torch.Size" || typStr == "slice" {
		// the shape: str(value), np.shape(value); the statistics are the
		// item's own
		pi.it.Dtype, pi.it.Shape = typStr, "None"
		switch {
		case typStr == "torch.Size" && listed:
			if pi.it.Shape, ok = f.internOK(f.list); !ok {
				return false
			}
		case typStr == "slice" && listed:
			pi.it.Shape = "(" + strconv.Itoa(listN) + ",)"
		case typStr == "slice":
			pi.it.Shape = "()"
		}
		f.stats(pi, stats)
	} else {
		pi.it.Dtype = pyTypeNames[val.kind]
		if !val.set {
			pi.it.Dtype = pyTypeNames[kNull]
		}
		if typStr == "ellipsis" {
			pi.it.Dtype = typStr
		}
		pi.it.Shape = "[]"
		f.stat(pi, 0, val, false)
		pi.it.Stats[1], pi.it.Stats[2], pi.it.Stats[3] = pi.it.Stats[0], pi.it.Stats[0], pi.it.Stats[0]
		pi.stats[1], pi.stats[2], pi.stats[3] = pi.stats[0], pi.stats[0], pi.stats[0]
	}
	if len(md5) > 0 { // the item's own; "" is falsy: the value's CRC-32
		pi.md5 = f.add(md5)
		return true
	}
	var crc uint32
	if val.set {
		crc = crc32.ChecksumIEEE(f.appendPyStr(f.scratch[:0], val))
	} else if listed {
		crc = crc32.ChecksumIEEE(f.list)
	}
	pi.it.MD5 = f.crcs.hex(crc)
	return true
}

// intList reads a list of integers and nulls (the value of a torch.Size
// or a slice) at the cursor into f.list as its Python str, and returns
// its length.
func (f *flatter) intList() (int, bool) {
	f.i++
	l := append(f.list[:0], '[')
	defer func() { f.list = l }()
	if f.ws() == ']' {
		f.i++
		l = append(l, ']')
		return 0, true
	}
	for n := 1; ; n++ {
		if c := f.ws(); c == 'n' {
			if !f.word("null") {
				return 0, false
			}
			l = append(l, "None"...)
		} else {
			start := f.i
			if _, float, ok := f.numCheck(); !ok || float {
				return 0, false
			}
			l = appendPyInt(l, f.b[start:f.i])
		}
		switch f.sep(']') {
		case 0:
			return 0, false
		case 2:
			l = append(l, ']')
			return n, true
		}
		l = append(l, ", "...)
	}
}

// crcHexes gives the CRC-32 of a non-tensor value (its md5 column) in
// eight hex digits, from a small direct-mapped cache: a value's crc
// repeats (flags, dims), but the distinct ones grow with the dump, which
// an intern map would keep.
type crcHexes [256]struct {
	crc uint32
	hex string
}

func (c *crcHexes) hex(crc uint32) string {
	e := &c[crc%uint32(len(c))]
	if e.hex == "" || e.crc != crc {
		var hex [8]byte
		for k, x := 7, crc; k >= 0; k-- {
			hex[k] = hexDigit(byte(x))
			x >>= 4
		}
		e.crc, e.hex = crc, string(hex[:])
	}
	return e.hex
}

// pyTypeNames is pyTypeName by kind.
var pyTypeNames = [...]string{
	kNull: "<class 'NoneType'>", kFalse: "<class 'bool'>", kTrue: "<class 'bool'>",
	kInt: "<class 'int'>", kFloat: "<class 'float'>", kNaN: "<class 'float'>", kInf: "<class 'float'>",
	kNegInf: "<class 'float'>", kString: "<class 'str'>",
}

// appendPyStr is tree.appendPyStr of a scalar.
func (f *flatter) appendPyStr(dst []byte, v *fval) []byte {
	switch v.kind {
	case kInt:
		return appendPyInt(dst, v.lit)
	case kFloat:
		return AppendPyFloat(dst, v.value())
	case kString:
		return append(dst, v.lit...)
	}
	return append(dst, pyConsts[v.kind]...)
}

// stats sets the item's statistics from its members (none with noStats:
// Null, as newItem left them).
func (f *flatter) stats(pi pitem, stats *[4]fval) {
	if f.noStats {
		return
	}
	for k := range stats {
		f.stat(pi, k, &stats[k], true)
	}
}

// stat sets stat k of pi from v as statValue does.
func (f *flatter) stat(pi pitem, k int, v *fval, converted bool) {
	if !v.set {
		return // Null, as newItem left it
	}
	switch v.kind {
	case kTrue, kFalse:
		if converted {
			pi.it.Stats[k] = Value{Kind: String, Text: "False"}
			if v.kind == kTrue {
				pi.it.Stats[k].Text = "True"
			}
			return
		}
		pi.it.Stats[k] = Value{Kind: Bool, Bool: v.kind == kTrue}
	case kInt, kFloat:
		x := v.value()
		kind := Number
		if math.IsInf(x, 1) {
			kind = PosInf
		} else if math.IsInf(x, -1) {
			kind = NegInf
		}
		pi.it.Stats[k] = Value{Kind: kind, Num: x, Repr: kind == Number && v.isRepr(x)}
		pi.stats[k] = f.add(v.lit)
	case kString:
		pi.it.Stats[k] = Value{Kind: String}
		pi.stats[k] = f.add(v.lit)
	case kNaN:
		pi.it.Stats[k] = Value{Kind: NaN, Num: math.NaN(), Text: "NaN"}
	case kInf:
		pi.it.Stats[k] = Value{Kind: PosInf, Num: math.Inf(1), Text: "Infinity"}
	case kNegInf:
		pi.it.Stats[k] = Value{Kind: NegInf, Num: math.Inf(-1), Text: "-Infinity"}
	}
}

// shape reads a list of non-negative integers and returns its Python str;
// in names mode it only checks the list, the string not built ("").
// (numCheck, ws and sep inlined: a shape is a few small integers over
// several lines.)
func (f *flatter) shape() (string, bool) {
	if f.ws() != '[' {
		return "", false
	}
	b, i, line := f.b, f.i+1, f.line
	s := f.scratch[:0] // names mode builds nothing
	if !f.names {
		s = append(s, '[')
	}
	for n := 0; ; n++ {
		if i, line = skipWS(b, i, line); i >= len(b) {
			return "", false
		}
		if n == 0 && b[i] == ']' {
			f.i, f.line = i+1, line
			return "[]", true
		}
		start := i
		switch c := b[i]; {
		case c == '0':
			i++
		case c-'1' < 9:
			i = skipDigits(b, i+1)
		default:
			return "", false // a sign, a closer after ',', no number
		}
		if i >= len(b) || b[i] == '.' || b[i]|0x20 == 'e' {
			return "", false // past the buffer, or a float
		}
		if !f.names {
			if n > 0 {
				s = append(s, ", "...)
			}
			s = append(s, b[start:i]...)
		}
		if i, line = skipWS(b, i, line); i >= len(b) {
			return "", false
		}
		switch b[i] {
		case ',':
			i++
			continue
		case ']':
		default:
			return "", false
		}
		f.i, f.line = i+1, line
		if f.names {
			return "", true
		}
		f.scratch = append(s, ']')
		return f.internOK(f.scratch)
	}
}

// skipWS returns the end of the whitespace at b[i:] and line with its
// newlines counted; the indentation after a newline is skipped eight
// spaces at a time.
func skipWS(b []byte, i, line int) (int, int) {
	for i < len(b) && b[i] <= ' ' {
		switch b[i] {
		case '\n':
			line++
			i++
			for i+8 <= len(b) { // the indentation, eight spaces at a time
				w := binary.LittleEndian.Uint64(b[i:]) ^ 0x2020202020202020
				if w != 0 {
					i += bits.TrailingZeros64(w) / 8
					break
				}
				i += 8
			}
		case ' ', '\t', '\r':
			i++
		default:
			return i, line
		}
	}
	return i, line
}

// newItem appends an item named name (f.add's) with none of its strings.
func (f *flatter) newItem(line int32, name span) pitem {
	f.items = append(f.items, Item{})
	f.spans = append(f.spans, pspans{})
	pi := pitem{&f.items[len(f.items)-1], &f.spans[len(f.spans)-1]}
	pi.it.State = f.state
	pi.it.Line = int(line)
	pi.it.DataName = "-1"
	pi.name = name
	pi.dataName, pi.md5 = span{-1, 0}, span{-1, 0}
	pi.stats = [4]span{{-1, 0}, {-1, 0}, {-1, 0}, {-1, 0}}
	return pi
}

// add copies b into the entry's string bytes.
func (f *flatter) add(b []byte) span {
	off := len(f.sb) - f.base
	f.sb = append(f.sb, b...)
	return span{int32(off), int32(len(b))}
}

// internLast is internOK for a value that mostly repeats the one before
// it, kept in *last.
func (f *flatter) internLast(last *string, b []byte) (string, bool) {
	if string(b) == *last {
		return *last, true
	}
	v, ok := f.internOK(b)
	if ok {
		*last = v
	}
	return v, ok
}

// internOK returns a shared string for a frequent short value, false when
// it is not plainOK; only plainOK values are kept.
func (f *flatter) internOK(b []byte) (string, bool) {
	for _, v := range f.recent {
		if v == string(b) && v != "" {
			return v, true
		}
	}
	v, ok := f.intern[string(b)]
	if !ok {
		if !plainOK(b) {
			return "", false
		}
		v = string(b)
		if f.intern == nil {
			f.intern = make(map[string]string)
		}
		if len(f.intern) < 1<<14 {
			f.intern[v] = v
		}
	}
	f.recent[f.next] = v
	f.next = (f.next + 1) % len(f.recent)
	return v, true
}
