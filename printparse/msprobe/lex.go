package msprobe

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"github.com/layermap/layermap/printparse/source"
)

// maxNesting bounds JSON nesting so that hostile input cannot exhaust the
// stack. msprobe's own flattening stops at 400 levels (see maxDepth).
const maxNesting = 10000

// lexer is a streaming JSON tokenizer over an io.Reader. It accepts the
// bare NaN, Infinity and -Infinity tokens Python's json module writes and
// tracks line numbers (newlines can only occur in whitespace: Python
// escapes them inside strings, and raw control characters in strings are
// rejected as Python's strict decoder does).
type lexer struct {
	r      io.Reader
	source string
	buf    []byte
	pos    int
	end    int
	line   int
	rerr   error // sticky read error; io.EOF at end of input
	read   int64 // bytes consumed before buf[0]
}

// lexBuf is a lexer's buffer size; it grows for a token or an entry
// longer than that (flatter.entry), and comes back to it once what it
// holds unread fits again and it is more than lexShrinkAbove.
const (
	lexBuf         = 64 << 10
	lexShrinkAbove = 4 << 20
)

func newLexer(r io.Reader, source string) *lexer {
	return &lexer{r: r, source: source, buf: make([]byte, lexBuf), line: 1}
}

// fill reads more input after buf[pos:end], moving the unread bytes to the
// front. It returns false at end of input or on a read error.
func (l *lexer) fill() bool {
	if l.rerr != nil {
		return false
	}
	if len(l.buf) > lexShrinkAbove && l.end-l.pos < lexBuf/2 {
		nb := make([]byte, lexBuf)
		l.end = copy(nb, l.buf[l.pos:l.end])
		l.read += int64(l.pos)
		l.buf, l.pos = nb, 0
	}
	if l.pos > 0 {
		n := copy(l.buf, l.buf[l.pos:l.end])
		l.read += int64(l.pos)
		l.end = n
		l.pos = 0
	}
	if l.end == len(l.buf) {
		nb := make([]byte, 2*len(l.buf))
		copy(nb, l.buf[:l.end])
		l.buf = nb
	}
	for tries := 0; tries < 100; tries++ {
		n, err := l.r.Read(l.buf[l.end:])
		l.end += n
		if err != nil {
			l.rerr = err
		}
		if n > 0 {
			return true
		}
		if err != nil {
			return false
		}
	}
	l.rerr = io.ErrNoProgress
	return false
}

// errorf builds an Error at the current line.
func (l *lexer) errorf(format string, args ...any) error {
	return &source.Error{File: l.source, Line: l.line, Msg: fmt.Sprintf(format, args...)}
}

// atEOF builds the error for an unexpected end of input (or a read
// failure) while want was expected.
func (l *lexer) atEOF(want string) error {
	if l.rerr != nil && !errors.Is(l.rerr, io.EOF) {
		return &source.Error{File: l.source, Line: l.line, Msg: fmt.Sprintf("read error: %v", l.rerr)}
	}
	return l.errorf("expected %s, found end of file (truncated?)", want)
}

// peek skips whitespace and returns the next byte without consuming it.
func (l *lexer) peek() (byte, bool) {
	for {
		for l.pos < l.end {
			switch c := l.buf[l.pos]; c {
			case ' ', '\t', '\r':
				l.pos++
			case '\n':
				l.line++
				l.pos++
				// Indentation: spaces eight at a time.
				for l.pos+8 <= l.end {
					w := binary.LittleEndian.Uint64(l.buf[l.pos:])
					if w != 0x2020202020202020 {
						l.pos += bits.TrailingZeros64(w^0x2020202020202020) / 8
						break
					}
					l.pos += 8
				}
			default:
				return c, true
			}
		}
		if !l.fill() {
			return 0, false
		}
	}
}

// describe renders the input at the current position for "found ...".
func (l *lexer) describe() string {
	if l.pos >= l.end && !l.fill() {
		return "end of file"
	}
	c := l.buf[l.pos]
	if l.pos == 0 && l.read == 0 && (c == 0xef || c == 0xfe || c == 0xff || c == 0) {
		for l.end < 4 && l.fill() {
		}
		if bom := source.BOM(l.buf[:l.end]); bom != "" {
			return bom + " (Python's json module refuses it: save the file as UTF-8 without BOM)"
		}
	}
	switch {
	case c == '"':
		return "a string"
	case c == '{':
		return "'{'"
	case c == '[':
		return "'['"
	case c == '-' || (c >= '0' && c <= '9'):
		return "a number"
	case c >= 0x20 && c < 0x7f:
		// Show the word that starts here, if any.
		end := l.pos
		for end < l.end && end-l.pos < 12 && isWordByte(l.buf[end]) {
			end++
		}
		if end > l.pos+1 {
			return strconv.Quote(string(l.buf[l.pos:end]))
		}
		return fmt.Sprintf("%q", rune(c))
	default:
		return fmt.Sprintf("byte 0x%02x", c)
	}
}

func isWordByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// expect consumes byte c after optional whitespace.
func (l *lexer) expect(c byte, want string) error {
	b, ok := l.peek()
	if !ok {
		return l.atEOF(want)
	}
	if b != c {
		return l.errorf("expected %s, found %s", want, l.describe())
	}
	l.pos++
	return nil
}

// sep consumes what follows a member of a list (end ']') or an object
// (end '}') after optional whitespace: ',' (false: a member follows) or
// end (true).
func (l *lexer) sep(end byte) (bool, error) {
	want := "',' or ']'"
	if end == '}' {
		want = "',' or '}'"
	}
	c, ok := l.peek()
	if !ok {
		return false, l.atEOF(want)
	}
	switch c {
	case ',':
		l.pos++
		return false, nil
	case end:
		l.pos++
		return true, nil
	}
	return false, l.errorf("expected %s, found %s", want, l.describe())
}

// readString consumes a JSON string (the opening quote is at pos) and
// appends its decoded bytes to dst.
func (l *lexer) readString(dst []byte) ([]byte, error) {
	l.pos++ // opening quote
	for {
		// Fast path: copy a run of plain bytes.
		start := l.pos
		l.pos += plainLen(l.buf[l.pos:l.end])
		dst = append(dst, l.buf[start:l.pos]...)
		if l.pos == l.end {
			if !l.fill() {
				return dst, l.atEOF("'\"' closing the string")
			}
			continue
		}
		c := l.buf[l.pos]
		switch {
		case c == '"':
			l.pos++
			return dst, nil
		case c < 0x20:
			return dst, l.errorf("expected '\"' closing the string, found control character 0x%02x", c)
		case c >= utf8.RuneSelf:
			n, err := l.utf8Seq()
			if err != nil {
				return dst, err
			}
			dst = append(dst, l.buf[l.pos:l.pos+n]...)
			l.pos += n
			continue
		}
		// Escape sequence.
		if l.end-l.pos < 2 && !l.ensure(2) {
			return dst, l.atEOF("an escape sequence")
		}
		e := l.buf[l.pos+1]
		switch e {
		case '"', '\\', '/':
			dst = append(dst, e)
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, n, err := l.readUnicodeEscape()
			if err != nil {
				return dst, err
			}
			dst = utf8.AppendRune(dst, r)
			l.pos += n
			continue
		default:
			return dst, l.errorf("expected a valid escape sequence, found \"\\%c\"", e)
		}
		l.pos += 2
	}
}

// utf8Seq checks the UTF-8 sequence at pos (its first byte is not ASCII)
// and returns its length. Python decodes the file as UTF-8 before parsing
// (json.load on a text file): a byte that is not UTF-8 is an error at its
// line, as there.
func (l *lexer) utf8Seq() (int, error) {
	if !utf8.FullRune(l.buf[l.pos:l.end]) {
		l.ensure(utf8.UTFMax) // at the end of input the sequence stays short
	}
	r, n := utf8.DecodeRune(l.buf[l.pos:l.end])
	if r == utf8.RuneError && n <= 1 {
		return 0, l.errorf("expected UTF-8 text in the string, found byte 0x%02x, which is not UTF-8 (Python's json.load refuses the file)", l.buf[l.pos])
	}
	return n, nil
}

// stringStop marks the bytes that end a run of plain string bytes: the
// quote, the backslash, control characters and bytes above ASCII (whose
// UTF-8 is checked).
var stringStop = func() (t [256]bool) {
	for c := 0; c < 0x20; c++ {
		t[c] = true
	}
	for c := utf8.RuneSelf; c < 256; c++ {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return
}()

// plainLen is the length of the run of plain string bytes (no stringStop
// byte) that b starts with; it tests eight bytes at a time, the first word
// inline (most keys are short), the rest in plainLenFrom.
func plainLen(b []byte) int {
	if len(b) < 8 {
		i := 0
		for ; i < len(b) && !stringStop[b[i]]; i++ {
		}
		return i
	}
	if stop := plainStops(binary.LittleEndian.Uint64(b)); stop != 0 {
		return bits.TrailingZeros64(stop) / 8
	}
	return plainLenFrom(b, 8)
}

// plainStops has a high bit set per stringStop byte of w (little endian)
// and no other bit below the lowest stop byte, so the lowest set bit is
// exact: only a byte above ASCII, itself a stop, carries into the next.
func plainStops(w uint64) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	// High bit set per ASCII byte: >= 0x20, not '"', not '\\'.
	ok := (w + ones*(0x80-0x20)) & ((w ^ ones*'"') + ones*0x7f) & ((w ^ ones*'\\') + ones*0x7f)
	return (w | ^ok) & highs
}

// plainMasks are plainStops' constants, read into registers by
// plainLenFrom (as constants they are rebuilt at each use): 0x60, '"',
// '\\', 0x7f and 0x80 in each byte.
var plainMasks = [5]uint64{0x6060606060606060, 0x2222222222222222, 0x5c5c5c5c5c5c5c5c,
	0x7f7f7f7f7f7f7f7f, 0x8080808080808080}

// plainLenFrom is plainLen(b) when b[:i] is plain, a word a turn.
func plainLenFrom(b []byte, i int) int {
	if i+8 <= len(b) {
		lo, q, bs, sev, hi := plainMasks[0], plainMasks[1], plainMasks[2], plainMasks[3], plainMasks[4]
		base := unsafe.Pointer(unsafe.SliceData(b))
		for last := len(b) - 8; i <= last; i += 8 {
			w := load64(unsafe.Add(base, i))
			// plainStops(w)
			if s := (w | ^((w + lo) & ((w ^ q) + sev) & ((w ^ bs) + sev))) & hi; s != 0 {
				return i + bits.TrailingZeros64(s)/8
			}
		}
	}
	for ; i < len(b) && !stringStop[b[i]]; i++ {
	}
	return i
}

// load64 reads the eight bytes at p as a little-endian word.
func load64(p unsafe.Pointer) uint64 {
	return binary.LittleEndian.Uint64((*[8]byte)(p)[:])
}

// ensure makes at least n bytes available at pos, reading more if needed.
func (l *lexer) ensure(n int) bool {
	for l.end-l.pos < n {
		if !l.fill() {
			return false
		}
	}
	return true
}

// readUnicodeEscape decodes \uXXXX (and a following low surrogate) at pos
// and returns the rune and the number of bytes it spans. Lone surrogates,
// which Python keeps, become U+FFFD.
func (l *lexer) readUnicodeEscape() (rune, int, error) {
	if !l.ensure(6) {
		return 0, 0, l.atEOF("four hex digits after \\u")
	}
	r1, ok := hex4(l.buf[l.pos+2 : l.pos+6])
	if !ok {
		return 0, 0, l.errorf("expected four hex digits after \\u, found %q", string(l.buf[l.pos+2:l.pos+6]))
	}
	if !utf16.IsSurrogate(r1) {
		return r1, 6, nil
	}
	if r1 < 0xdc00 && l.ensure(12) && l.buf[l.pos+6] == '\\' && l.buf[l.pos+7] == 'u' {
		if r2, ok := hex4(l.buf[l.pos+8 : l.pos+12]); ok && r2 >= 0xdc00 && r2 <= 0xdfff {
			return utf16.DecodeRune(r1, r2), 12, nil
		}
	}
	return utf8.RuneError, 6, nil
}

func hex4(b []byte) (rune, bool) {
	var r rune
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// skipString consumes a JSON string without decoding it.
func (l *lexer) skipString() error {
	l.pos++
	for {
		for l.pos < l.end {
			l.pos += plainLen(l.buf[l.pos:l.end])
			if l.pos == l.end {
				break
			}
			c := l.buf[l.pos]
			switch {
			case c == '"':
				l.pos++
				return nil
			case c == '\\':
				if !l.ensure(2) {
					return l.atEOF("an escape sequence")
				}
				switch e := l.buf[l.pos+1]; e {
				case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
					l.pos += 2
				case 'u':
					_, n, err := l.readUnicodeEscape()
					if err != nil {
						return err
					}
					l.pos += n
				default:
					return l.errorf("expected a valid escape sequence, found \"\\%c\"", e)
				}
				continue
			case c < 0x20:
				return l.errorf("expected '\"' closing the string, found control character 0x%02x", c)
			case c >= utf8.RuneSelf:
				n, err := l.utf8Seq()
				if err != nil {
					return err
				}
				l.pos += n
				continue
			}
			l.pos++
		}
		if !l.fill() {
			return l.atEOF("'\"' closing the string")
		}
	}
}

// numKind tells what readNumber found.
const (
	numInt = iota
	numFloat
	numNegInf // the -Infinity token
)

// readNumber consumes a JSON number (or -Infinity) at pos and appends its
// literal text to dst. It follows Python's json number grammar:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?; a fraction or exponent
// makes it a float.
func (l *lexer) readNumber(dst []byte) ([]byte, int, error) {
	// Fast path: a number without exponent that ends inside the buffer.
	if b := l.buf[l.pos:l.end]; len(b) > 0 {
		i := 0
		if b[0] == '-' {
			i++
		}
		start := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		ok := i > start && (b[start] != '0' || i == start+1)
		kind := numInt
		if ok && i < len(b) && b[i] == '.' {
			j := i + 1
			for j < len(b) && b[j] >= '0' && b[j] <= '9' {
				j++
			}
			ok = j > i+1
			i, kind = j, numFloat
		}
		if ok && i < len(b) && b[i] != 'e' && b[i] != 'E' {
			dst = append(dst, b[:i]...)
			l.pos += i
			return dst, kind, nil
		}
	}
	kind := numInt
	i := 0 // bytes of the number seen so far, at buf[pos:pos+i]
	at := func(k int) (byte, bool) {
		if l.pos+k >= l.end && !l.ensure(k+1) {
			return 0, false
		}
		return l.buf[l.pos+k], true
	}
	c, _ := at(0)
	if c == '-' {
		i++
		c2, ok := at(i)
		if !ok {
			return dst, 0, l.atEOF("a digit after '-'")
		}
		if c2 == 'I' {
			if !l.ensure(9) || string(l.buf[l.pos:l.pos+9]) != "-Infinity" {
				if l.truncatedWord() {
					return dst, 0, l.atEOF("-Infinity")
				}
				return dst, 0, l.errorf("expected a number or -Infinity, found %s", l.describeAt(i))
			}
			dst = append(dst, "-Infinity"...)
			l.pos += 9
			return dst, numNegInf, nil
		}
	}
	c, ok := at(i)
	switch {
	case !ok:
		return dst, 0, l.atEOF("a digit")
	case c == '0':
		i++
	case c >= '1' && c <= '9':
		i++
		for {
			c, ok = at(i)
			if !ok || c < '0' || c > '9' {
				break
			}
			i++
		}
	default:
		return dst, 0, l.errorf("expected a digit, found %s", l.describeAt(i))
	}
	if c, ok = at(i); ok && c == '.' {
		c2, ok2 := at(i + 1)
		if !ok2 {
			l.pos += i + 1
			return dst, 0, l.atEOF("a digit after '.'")
		}
		if c2 < '0' || c2 > '9' {
			return dst, 0, l.errorf("expected a digit after '.', found %s", l.describeAt(i+1))
		}
		kind = numFloat
		i += 2
		for {
			c, ok = at(i)
			if !ok || c < '0' || c > '9' {
				break
			}
			i++
		}
	}
	if c, ok = at(i); ok && (c == 'e' || c == 'E') {
		j := i + 1
		if c2, ok2 := at(j); ok2 && (c2 == '+' || c2 == '-') {
			j++
		}
		c3, ok3 := at(j)
		if !ok3 {
			l.pos += j
			return dst, 0, l.atEOF("a digit in the exponent")
		}
		if c3 < '0' || c3 > '9' {
			return dst, 0, l.errorf("expected a digit in the exponent, found %s", l.describeAt(j))
		}
		kind = numFloat
		i = j + 1
		for {
			c, ok = at(i)
			if !ok || c < '0' || c > '9' {
				break
			}
			i++
		}
	}
	dst = append(dst, l.buf[l.pos:l.pos+i]...)
	l.pos += i
	return dst, kind, nil
}

// skipNumber is readNumber without the text: it consumes the number as
// it goes, so that a number of any length takes no memory, and gives
// readNumber's errors.
func (l *lexer) skipNumber() error {
	cur := func() (byte, bool) {
		if l.pos >= l.end && !l.fill() {
			return 0, false
		}
		return l.buf[l.pos], true
	}
	digits := func() {
		for {
			for l.pos < l.end && l.buf[l.pos] >= '0' && l.buf[l.pos] <= '9' {
				l.pos++
			}
			if l.pos < l.end || !l.fill() {
				return
			}
		}
	}
	if c, _ := cur(); c == '-' {
		if !l.ensure(2) {
			return l.atEOF("a digit after '-'")
		}
		if l.buf[l.pos+1] == 'I' {
			_, _, err := l.readNumber(nil) // -Infinity: nine bytes
			return err
		}
		l.pos++
	}
	c, ok := cur()
	switch {
	case !ok:
		return l.atEOF("a digit")
	case c == '0':
		l.pos++
	case c >= '1' && c <= '9':
		digits()
	default:
		return l.errorf("expected a digit, found %s", l.describe())
	}
	// one digit or more, where want is expected
	someDigits := func(want string) error {
		c, ok := cur()
		if !ok {
			return l.atEOF(want)
		}
		if c < '0' || c > '9' {
			return l.errorf("expected %s, found %s", want, l.describe())
		}
		digits()
		return nil
	}
	if c, ok = cur(); ok && c == '.' {
		l.pos++
		if err := someDigits("a digit after '.'"); err != nil {
			return err
		}
	}
	if c, ok = cur(); ok && (c == 'e' || c == 'E') {
		l.pos++
		if c, ok = cur(); ok && (c == '+' || c == '-') {
			l.pos++
		}
		return someDigits("a digit in the exponent")
	}
	return nil
}

// describeAt is describe for the byte k positions ahead.
func (l *lexer) describeAt(k int) string {
	save := l.pos
	if l.pos+k <= l.end {
		l.pos += k
	}
	s := l.describe()
	l.pos = save
	return s
}

// literal consumes the bare word w (true, false, null, NaN, Infinity).
func (l *lexer) literal(w string) bool {
	if !l.ensure(len(w)) {
		return false
	}
	if string(l.buf[l.pos:l.pos+len(w)]) != w {
		return false
	}
	l.pos += len(w)
	return true
}

// truncatedWord reports whether the input ends inside one of the bare
// words true, false, null, NaN, Infinity, -Infinity.
func (l *lexer) truncatedWord() bool {
	if l.ensure(9) {
		return false
	}
	rest := string(l.buf[l.pos:l.end])
	if rest == "" {
		return false
	}
	for _, w := range [...]string{"true", "false", "null", "NaN", "Infinity", "-Infinity"} {
		if len(rest) < len(w) && w[:len(rest)] == rest {
			return true
		}
	}
	return false
}

// skipValue consumes one JSON value without building anything.
func (l *lexer) skipValue(want string) error {
	var stack []byte // open containers: '{' or '['
	for {
		c, ok := l.peek()
		if !ok {
			return l.atEOF(want)
		}
		switch {
		case c == '{' || c == '[':
			l.pos++
			closing := closerOf(c)
			if c2, ok := l.peek(); ok && c2 == closing {
				l.pos++
				break // an empty container is a complete value
			}
			if len(stack) >= maxNesting {
				return l.errorf("expected at most %d levels of nesting, found more", maxNesting)
			}
			stack = append(stack, c)
			if c == '{' {
				if err := l.skipKey(); err != nil {
					return err
				}
			}
			want = "a value"
			continue
		case c == '"':
			if err := l.skipString(); err != nil {
				return err
			}
		case c == '-' || c >= '0' && c <= '9':
			if err := l.skipNumber(); err != nil {
				return err
			}
		default:
			if !l.skipLiteral(c) {
				if l.truncatedWord() {
					return l.atEOF(want)
				}
				return l.errorf("expected %s, found %s", want, l.describe())
			}
		}
		// A value is complete: close containers, or go on after ','.
		for len(stack) > 0 {
			top := stack[len(stack)-1]
			c, ok := l.peek()
			if !ok {
				return l.atEOF(fmt.Sprintf("',' or %q", closerOf(top)))
			}
			if c == closerOf(top) {
				l.pos++
				stack = stack[:len(stack)-1]
				continue
			}
			if c != ',' {
				return l.errorf("expected ',' or %q, found %s", closerOf(top), l.describe())
			}
			l.pos++
			if top == '{' {
				if err := l.skipKey(); err != nil {
					return err
				}
			}
			break
		}
		if len(stack) == 0 {
			return nil
		}
		want = "a value"
	}
}

func closerOf(open byte) byte {
	if open == '{' {
		return '}'
	}
	return ']'
}

// skipLiteral consumes one of the bare words true, false, null, NaN,
// Infinity starting with c.
func (l *lexer) skipLiteral(c byte) bool {
	switch c {
	case 't':
		return l.literal("true")
	case 'f':
		return l.literal("false")
	case 'n':
		return l.literal("null")
	case 'N':
		return l.literal("NaN")
	case 'I':
		return l.literal("Infinity")
	}
	return false
}

// skipKey consumes `"key" :` after an opening '{'.
func (l *lexer) skipKey() error {
	c, ok := l.peek()
	if !ok {
		return l.atEOF("an object key")
	}
	if c != '"' {
		return l.errorf("expected an object key string, found %s", l.describe())
	}
	if err := l.skipString(); err != nil {
		return err
	}
	return l.expect(':', "':' after the object key")
}
