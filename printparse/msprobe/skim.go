package msprobe

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"os"
	"path/filepath"
	"strings"

	"github.com/layermap/layermap/printparse/offheap"
	"github.com/layermap/layermap/printparse/source"
)

// SkimEntry is one member of a dump.json's "data" object as Skim finds
// it, without its body decoded.
type SkimEntry struct {
	Index  int    // position among the members of "data"
	Name   []byte // the entry name, valid during the callback
	Offset int64  // byte offset of the name's opening quote
	Line   int    // line of the name
	// Odd is set when some row of the entry may be named otherwise than
	// the entry name followed by its structural suffix (".input.0",
	// ".output.0", ".parameters.weight", ".weight" below a
	// parameters_grad or debug entry), or when the entry name may occur a
	// second time in a row name: a leaf's data_name that is no string, or
	// whose stem is not the entry name followed by such a suffix, and a
	// key (or an escaped key) holding the first dot-part of the entry
	// name. Most dumps have no odd entry; Scan or EntryReader tell their
	// rows.
	Odd bool
	// End, when not 0, is the offset just past the entry's body: then read
	// the entry up to End, not up to the next entry's Offset (SkimWith with
	// a plan: a repeated key's body stands elsewhere).
	End int64
}

// errSkim marks input the skim does not follow; Skim then reports the
// error a full Scan finds.
var errSkim = errors.New("skim")

// Skim walks the "data" object of the dump.json at path and calls fn for
// each member in file order, skipping the bodies without decoding them
// (several times faster than Scan). It reads the header keys as Scan
// does; Header.Entries counts the members, Header.Skipped and Header.MD5
// are left empty. Syntax errors inside bodies are found by EntryReader
// (or Scan), not here; errors in the structure around the bodies are
// reported as Scan reports them. fn is called on the caller's goroutine;
// a large indented file is also skimmed ahead on as many goroutines as
// there are CPUs (skimahead.go), with the same results.
//
// A "data" that repeats a key stops the skim once "data" is read (fn
// given its members, the repeats too) with an error wrapping
// ErrRepeatedKey (see Repeats); SkimWith reads it with the plan.
func Skim(path string, fn func(e *SkimEntry) error) (Header, error) {
	return SkimWith(path, nil, fn)
}

// SkimWith is Skim with the plan FindRepeats gave for the file (nil:
// none). With a plan, a repeated name is given once, at its first place,
// with the Offset, Line and End of its last occurrence and Odd set; End
// is set for every entry.
func SkimWith(path string, plan *Repeats, fn func(e *SkimEntry) error) (Header, error) {
	return skimWith(path, plan, defaultSkimWorkers(), fn)
}

// skimWith is SkimWith skimming ahead with w (see skimahead.go) when
// there is no plan.
func skimWith(path string, plan *Repeats, w skimWorkers, fn func(e *SkimEntry) error) (Header, error) {
	f, err := source.Open(path, source.MaxDumpJSON)
	if err != nil {
		return Header{}, err // *source.Error naming the file
	}
	defer f.Close()
	lx := newLexer(f, path)
	kf := newKeyFilter(path, plan, w.check)
	var h Header
	var e SkimEntry
	var stack []byte
	// give hands e to fn as the next member.
	give := func() error {
		if err := fn(&e); err != nil {
			return err
		}
		e.Index++
		h.Entries++
		return nil
	}
	var ahead func(off int64) (bool, error)
	var a *skimAhead // nil: none (close does nothing)
	defer func() { a.close() }()
	if plan == nil {
		started := false
		ahead = func(off int64) (bool, error) {
			if !started {
				started = true
				a = startSkimAhead(f, path, off, w)
			}
			if a == nil {
				return false, nil
			}
			c := a.take(off)
			if c == nil {
				return false, nil
			}
			base, from := lx.line, 0
			for _, ce := range c.bufs.ents {
				name := c.bufs.names[from:ce.nameEnd:ce.nameEnd]
				from = ce.nameEnd
				line := base + ce.line
				kf.member(name, line, ce.off)
				e.Name, e.Line, e.Offset, e.End, e.Odd = name, line, ce.off, 0, ce.odd
				if err := give(); err != nil {
					return false, err
				}
			}
			if w.took != nil {
				w.took(len(c.bufs.ents))
			}
			a.reuse(c)
			return true, lx.seek(c.end, base+c.lines)
		}
	}
	err = readTop(lx, &h, func() error {
		return kf.onData(lx, func() error {
			return walkDataMembers(lx, kf, ahead, func(name []byte, line int, off int64, at *memberAt) error {
				e.Name, e.Line, e.Offset, e.End = name, line, off, 0
				var err error
				if at != nil {
					e.Line, e.Offset, e.End, e.Odd = at.line, at.off, at.end, true
					err = lx.skipValue("an entry body")
				} else {
					e.Odd, stack, err = skimValue(lx, name, stack[:0])
					if plan != nil {
						e.End = lx.read + int64(lx.pos)
					}
				}
				if err != nil {
					return err
				}
				return give()
			})
		})
	})
	if errors.Is(err, errSkim) {
		a.close()
		// Let the full scanner name the problem.
		if _, serr := ScanFileWith(path, ScanOptions{Plan: plan}, func(*Entry) error { return nil }); serr != nil {
			return Header{}, serr
		}
		return Header{}, &source.Error{File: path, Line: lx.line, Expected: "a JSON value", Found: "malformed input"}
	}
	if err != nil {
		return Header{}, err
	}
	return h, nil
}

// SkimExact is Skim that reads a "data" repeating keys as Python's
// json.load does: on a repeat it calls reset (the caller forgets the
// entries fn was given) and skims the file again with its Repeats.
// Read an entry at its Offset up to its End when End is set.
func SkimExact(path string, reset func(), fn func(e *SkimEntry) error) (Header, error) {
	h, err := Skim(path, fn)
	if err == nil {
		return h, nil
	}
	plan, ferr := FindRepeatsAfter(err)
	switch {
	case ferr != nil:
		return Header{}, ferr
	case plan == nil:
		return Header{}, err
	}
	reset()
	return SkimWith(path, plan, fn)
}

// skim byte classes
const (
	sOther = iota
	sSpace
	sNewline
	sQuote
	sOpen
	sClose
	sColon
	sComma
)

var skimClass = func() (t [256]uint8) {
	t[' '], t['\t'], t['\r'] = sSpace, sSpace, sSpace
	t['\n'] = sNewline
	t['"'] = sQuote
	t['{'], t['['] = sOpen, sOpen
	t['}'], t[']'] = sClose, sClose
	t[':'] = sColon
	t[','] = sComma
	return
}()

// skimValue consumes one JSON value at the lexer (an entry body) and
// tells whether it makes the entry odd (see SkimEntry). It checks the
// nesting only; anything it does not follow gives errSkim.
func skimValue(lx *lexer, name []byte, stack []byte) (odd bool, _ []byte, err error) {
	return skimValueBy(lx, name, stack, true)
}

// skimValueBy is skimValue, through skimLines where lines is set (tests
// compare it with the byte loop alone).
func skimValueBy(lx *lexer, name []byte, stack []byte, lines bool) (odd bool, _ []byte, err error) {
	first := name
	if d := bytes.IndexByte(name, '.'); d >= 0 {
		first = name[:d]
	}
	if len(first) == 0 || isDigitsBytes(first) || bytes.Contains([]byte("input kwargs output parameters"), first) {
		odd = true
	}
	// key: the last string read was an object key; dataName: the value
	// now expected is a data_name's.
	var key, dataName bool
	for {
		if lx.pos >= lx.end && !lx.fill() {
			return odd, stack, errSkim
		}
		b := lx.buf[lx.pos:lx.end]
		i := 0
	scan:
		for i < len(b) {
			switch skimClass[b[i]] {
			case sSpace:
				for i++; i < len(b) && skimClass[b[i]] == sSpace; i++ {
				}
			case sNewline:
				if lines && !dataName && len(stack) > 0 && len(b)-i >= skimLinesMin {
					// json.dump's indented lines, most of the file
					i, stack, lx.line, key, odd = skimLines(b, i, first, stack, lx.line, key, odd)
					if skimClass[b[i]] != sNewline {
						continue
					}
				}
				lx.line++
				i++
				// Indentation: spaces eight at a time.
				for i+8 <= len(b) {
					w := binary.LittleEndian.Uint64(b[i:])
					if w != 0x2020202020202020 {
						i += bits.TrailingZeros64(w^0x2020202020202020) / 8
						break
					}
					i += 8
				}
			case sOpen:
				if dataName {
					odd, dataName = true, false
				}
				if len(stack) >= maxNesting {
					return odd, stack, errSkim
				}
				stack = append(stack, b[i])
				key = b[i] == '{'
				i++
			case sClose:
				if len(stack) == 0 || closerOf(stack[len(stack)-1]) != b[i] {
					return odd, stack, errSkim
				}
				stack = stack[:len(stack)-1]
				i++
				if len(stack) == 0 {
					lx.pos += i
					return odd, stack, nil
				}
				key = false
			case sComma:
				i++
				key = len(stack) > 0 && stack[len(stack)-1] == '{'
			case sColon:
				i++
				key = false
			case sQuote:
				// The string, whole within b, or refill.
				j := i + 1
				esc := false
				for {
					k := bytes.IndexByte(b[j:], '"')
					if k < 0 {
						j = -1
						break
					}
					j += k
					// An escaped quote has an odd run of backslashes before it.
					n := 0
					for n < j-i-1 && b[j-1-n] == '\\' {
						n++
					}
					if n > 0 {
						esc = true
					}
					if n%2 == 0 {
						break
					}
					j++
				}
				if j < 0 {
					break scan // refill
				}
				s := b[i+1 : j]
				if esc && !odd {
					esc = bytes.IndexByte(s, '\\') >= 0
				}
				switch {
				case key:
					if esc || len(s) >= len(first) && bytes.Contains(s, first) {
						odd = true
					}
					dataName = string(s) == "data_name"
				case dataName:
					dataName = false
					if esc || !normalDataName(s, name) {
						odd = true
					}
				}
				if len(stack) == 0 {
					lx.pos += j + 1
					return odd, stack, nil
				}
				i = j + 1
			default:
				// A number or a bare word: up to the next delimiter.
				j := i
				for j < len(b) && skimClass[b[j]] == sOther {
					j++
				}
				if j == len(b) {
					break scan // refill
				}
				if dataName {
					dataName = false
					if w := string(b[i:j]); w != "null" {
						odd = true
					}
				}
				if len(stack) == 0 {
					lx.pos += j
					return odd, stack, nil
				}
				i = j
			}
		}
		lx.pos += i
		if i == 0 || lx.pos >= lx.end {
			// A token crosses the end of the buffer: read more (the lexer
			// keeps the unread bytes).
			if !lx.fill() {
				return odd, stack, errSkim
			}
		}
	}
}

// skimLinesMin is the bytes skimLines wants ahead of a line: it takes no
// line nearer the end of the buffer (the byte loop refills there).
const skimLinesMin = len(lineWindow{})

// skimLines is skimValue's fast path through the lines json.dump(indent)
// writes: per line a key and its value, or a value, or a closing bracket,
// then an optional comma. Called at a newline (b[i]) with a bracket open
// and no data_name value to come, it takes line after line, doing to the
// stack, the line count, key and odd what the byte loop does, and
// returns where the byte loop goes on: the start of the first token it
// did not take (a backslash or a byte from 0x80 up in a string, a
// data_name key, a key that may hold the entry name's first dot-part, a
// bracket closing one it did not open or opening the 63rd, a token
// running far along a long line, anything else), or a newline near the
// end of b. Strings and numbers are read eight bytes at a time. The
// brackets it opens are kept in the bits of a word until it returns, and
// what would call (bytes.Contains, append) is left to the byte loop: its
// state stays in registers.
func skimLines(b []byte, i int, first, stack []byte, line int, key, odd bool) (int, []byte, int, bool, bool) {
	if len(stack) == 0 || len(stack) > maxNesting-62 || !odd && len(first) == 0 {
		return i, stack, line, key, odd
	}
	// Keys minKey long or longer may hold first (which makes the entry
	// odd): those holding its first byte where first may start are left
	// to the byte loop, as data_name keys are. keys packs what lineRun
	// needs of it in one word.
	minKey, f0 := 1<<20, byte(0)
	if !odd {
		minKey, f0 = min(len(first), 1<<20), first[0]
	}
	keys := uint64(min(minKey, len("data_name")))<<32 | uint64(minKey)<<8 | uint64(f0)
	// A bit per bracket: bit 0 is the innermost (1: '{'); the stack's
	// last, then those opened here, above it the highest bit set.
	kinds := uint64(2) | uint64(stack[len(stack)-1]>>5&1)
	var rest int
	rest, kinds, line, key = lineRun(b[i:], kinds, line, key, keys)
	i = len(b) - rest
	for n := bits.Len64(kinds) - 2; n > 0; n-- {
		stack = append(stack, '['|byte(kinds>>(n-1)&1)<<5)
	}
	return i, stack, line, key, odd
}

// lineRun is skimLines' loop from rest's first byte, on its own so that
// what it keeps stays in registers; it returns the bytes of rest left.
// kinds holds the brackets (see skimLines); keys is
// min(minKey, 9)<<32 | minKey<<8 | f0 (keys shorter than both never
// stop). It reads the lines through windows (no bounds to check).
func lineRun(rest []byte, kinds uint64, line int, key bool, keys uint64) (int, uint64, int, bool) {
	const ones, spaces = 0x0101010101010101, 0x2020202020202020
	o := 0 // offset in rest of the token at hand
	for len(rest) >= len(lineWindow{}) {
		// The lines starting in the window's first lineStarts bytes.
		l := (*lineWindow)(rest)
	line:
		if l.byteAt(o) != '\n' {
			break
		}
		line++
		// Indentation: spaces eight at a time.
		o++
		w := l.at(o) ^ spaces
		for w == 0 {
			if o += 8; o > lineReach {
				goto out
			}
			w = l.at(o) ^ spaces
		}
		o += bits.TrailingZeros64(w) / 8
		// A string (a key, then maybe its value), or else a value or a
		// closing bracket.
		w = l.at(o)
		if byte(w) == '"' {
			q, ok := l.stringEnd(o, w|0x7f)
			if !ok {
				goto out
			}
			// Keys shorter than keys>>32 bytes do not stop, else
			// "data_name" does, and those minKey long or longer holding
			// f0 where first may start.
			if key && uint64(q-o)<<32 > keys {
				n, minKey := q-o-1, int(keys>>8&(1<<24-1))
				if n == len("data_name") && l.at(o+1) == dataNam && l.byteAt(o+9) == 'e' || n >= minKey && l.holds(o+1, q+1-minKey, byte(keys)) {
					goto out
				}
			}
			o = q + 1
			if w = l.at(o); byte(w) != ':' {
				goto comma
			}
			key = false
			o++
			if byte(w>>8) == ' ' {
				o++
			}
			if w = l.at(o); byte(w) == '"' {
				q, ok := l.stringEnd(o, w|0x7f)
				if !ok {
					goto out
				}
				o = q + 1
				goto comma
			}
		}
		switch c := byte(w); {
		case c-'-' <= '9'-'-':
			// A number, by runs of '-' to '9': signs, points and digits.
			j, ok := l.wordEnd(o, w, ones*'-', ones*(0x80-'9'-1))
			if !ok {
				goto out
			}
			o = j
		case skimClass[c] == sOther:
			// true, false and null by runs of 'a' to 'z'.
			j, ok := l.wordEnd(o, w, ones*'a', ones*(0x80-'z'-1))
			if !ok {
				goto out
			}
			o = j
		case c == '{' || c == '[':
			if int64(kinds) < 0 {
				goto out
			}
			// '{' and '[', '}' and ']' differ in bit 5; a closer is its
			// opener plus 2.
			kinds = kinds<<1 | uint64(c>>5&1)
			key = c == '{'
			o++
			if byte(w>>8) == c+2 {
				kinds >>= 1
				key = false
				o++
			}
		case c == '}' || c == ']':
			if kinds < 4 || uint64(c>>5&1) != kinds&1 {
				goto out
			}
			kinds >>= 1
			key = false
			o++
		default:
			goto out
		}
	comma:
		if l.byteAt(o) == ',' {
			key = kinds&1 != 0
			o++
		}
		if o <= lineStarts {
			goto line
		}
		rest, o = rest[o&(lineWin-1):], 0
	}
out:
	return len(rest) - o, kinds, line, key
}

// dataNam is the first eight bytes of "data_name" as lineWindow.at reads
// them.
var dataNam = binary.LittleEndian.Uint64([]byte("data_nam"))

// A lineWindow is the bytes lineRun reads the lines starting in its
// first lineStarts bytes from: at offsets taken modulo lineWin, so that
// no bounds are checked. No token runs on past lineReach (the offsets
// read stay well below lineWin): the rest of a longer line is left to
// the byte loop, so lines up to lineReach-lineStarts bytes are always
// taken.
type lineWindow [lineWin + 8]byte

const (
	lineWin    = 256
	lineStarts = 64
	lineReach  = 216
)

// at is the eight bytes at o, little-endian.
func (l *lineWindow) at(o int) uint64 {
	o &= lineWin - 1
	return binary.LittleEndian.Uint64(l[o : o+8])
}

// byteAt is the byte at o.
func (l *lineWindow) byteAt(o int) byte { return l[o&(lineWin-1)] }

// holds reports whether the bytes from i to j hold the byte c, reading
// eight bytes at a time.
func (l *lineWindow) holds(i, j int, c byte) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for ; i < j; i += 8 {
		w := l.at(i) ^ ones*uint64(c)
		// A high bit per byte that is c (and none without one below).
		m := (w - ones) &^ w & highs
		if j-i < 8 {
			m &= 1<<(8*(j-i)) - 1
		}
		if m != 0 {
			return true
		}
	}
	return false
}

// stringEnd returns the closing quote of the string whose opening quote
// is at o (w: the eight bytes there, the quote set to 0x7f, which is
// neither a quote nor a backslash), reading eight bytes at a time; false
// when a backslash or a byte from 0x80 up (left to the byte loop) comes
// first, or no quote by lineReach.
func (l *lineWindow) stringEnd(o int, w uint64) (int, bool) {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for ; ; w = l.at(o) {
		// A high bit per byte that is a quote, a backslash, or from
		// 0x80 up (their xor with '"' or '\\' is); the lowest one is
		// exact, as the bytes below it borrow nothing.
		q, bs := w^(ones*'"'), w^(ones*'\\')
		if m := ((q - ones) | (bs - ones)) & highs; m != 0 {
			o += bits.TrailingZeros64(m) / 8
			return o, l[o&(lineWin-1)] == '"'
		}
		if o += 8; o > lineReach {
			return 0, false
		}
	}
}

// wordEnd returns the end of the number or bare word at o (w: the eight
// bytes there): the first byte after it that is not skimClass sOther;
// false past lineReach. It is read eight bytes at a time by runs of the
// bytes lo to 0x7f-hi (lo and hi repeated in each byte). (digitRun's
// test in two terms, not four: digitRun here slowed the skim.)
func (l *lineWindow) wordEnd(o int, w, lo, hi uint64) (int, bool) {
	const highs = 0x8080808080808080
	for ; ; w = l.at(o) {
		// A high bit per byte out of the run's range; the lowest one is
		// exact.
		if m := ((w - lo) | (w + hi)) & highs; m != 0 {
			o += bits.TrailingZeros64(m) / 8
			if skimClass[l.byteAt(o)] != sOther {
				return o, true
			}
			o -= 7
		}
		if o += 8; o > lineReach {
			return 0, false
		}
	}
}

// normalDataName reports whether a data_name leaves the row named as
// NormalRow says: "-1" or "" (the structural name is kept), or a stem
// (the text before its last '.') that NormalRow accepts.
func normalDataName(s, name []byte) bool {
	if len(s) == 0 || string(s) == "-1" {
		return true
	}
	if d := bytes.LastIndexByte(s, '.'); d >= 0 {
		s = s[:d]
	}
	return NormalRow(string(name), string(s))
}

// NormalRow reports whether a row name is its entry's name followed by a
// structural suffix, as rows named from the body's structure are: "" or
// "." and anything below an entry whose whole body is flattened (a
// parameters_grad or debug entry), else ".input", ".kwargs", ".output" or
// ".parameters" followed by "." or nothing; and the entry name's first
// dot-part does not occur in the suffix (so the name occurs once).
func NormalRow(entry, row string) bool {
	first, _, _ := strings.Cut(entry, ".")
	return normalRow(entry, row, first, WholeBody(entry))
}

// NormalRows reports whether every row of e is NormalRow's.
func NormalRows(e *Entry) bool {
	first, _, _ := strings.Cut(e.Name, ".")
	whole := WholeBody(e.Name)
	for i := range e.Items {
		if !normalRow(e.Name, e.Items[i].Name, first, whole) {
			return false
		}
	}
	return true
}

// normalRow is NormalRow given the entry name's first dot-part and
// WholeBody.
func normalRow(entry, row, first string, whole bool) bool {
	if !strings.HasPrefix(row, entry) {
		return false
	}
	s := row[len(entry):]
	if first == "" || strings.Contains(s, first) {
		return false
	}
	if whole {
		return s == "" || s[0] == '.'
	}
	for _, f := range [...]string{".input", ".kwargs", ".output", ".parameters"} {
		if strings.HasPrefix(s, f) && (len(s) == len(f) || s[len(f)] == '.') {
			return true
		}
	}
	return false
}

// WholeBody reports whether an entry's whole body is flattened (its last
// dot-part is debug, or one of its last two is parameters_grad) rather
// than its input and output fields.
func WholeBody(entry string) bool {
	i := strings.LastIndexByte(entry, '.')
	last, second := entry[i+1:], ""
	if i >= 0 {
		second = entry[:i]
		second = second[strings.LastIndexByte(second, '.')+1:]
	}
	return last == StateDebug || last == StateParametersGrad || second == StateParametersGrad
}

func isDigitsBytes(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return len(b) > 0
}

// EntryReader parses single members of a dump.json's "data" object by
// their byte offsets (see Skim), for readers that need a dump's entries
// out of file order. Entries are flattened as Scan flattens them, except
// that ForwardCallOrder and BackwardCallOrder are not counted (they
// depend on the entries before). It is not safe for concurrent use.
type EntryReader struct {
	f      *os.File
	ra     io.ReaderAt // f (tests count what is read)
	path   string
	size   int64
	s      *scanner
	p      parser
	h      Header
	chunks []byte  // readChunks chunks of the file, outside the collected heap (printparse/offheap)
	free   func()  // releases chunks
	lender *Chunks // lends the chunks' memory, when set (UseChunks)
	slots  [readChunks]chunkSlot
	last   int // the slot used last
	tick   int
	recent [recentChunks]int64 // the last chunks of the bytes asked for lately
	next   int                 // the next of recent to replace
	buf    []byte              // an entry across chunks, too large for them, or scattered
	lx     lexer               // the entry being read
	name   []byte              // its name
}

// An EntryReader reads the file in aligned chunks and keeps the last
// used: entries read near each other, in whatever order (a join in the
// other dump's order, a count of scattered entries), share what was read,
// and the file's bytes are read about once. An entry far from the chunks
// kept and from those asked for lately is read alone (scattered).
const (
	readChunk  = 64 << 10
	readChunks = 16
)

// recentChunks is how many of the last requests scattered remembers: a
// few walks along the file taken in turn keep their chunks.
const recentChunks = 4

// chunkSlot is the state of one of the chunks.
type chunkSlot struct {
	at   int64 // the chunk's index in the file; -1: none
	n    int   // bytes read into it (fewer at the end of the file)
	used int   // tick of the last use
}

// NewEntryReader opens the dump.json at path for EntryReader.Read.
func NewEntryReader(path string) (*EntryReader, error) {
	f, err := source.Open(path, source.MaxDumpJSON)
	if err != nil {
		return nil, err // *source.Error naming the file
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("read dump: %w", err)
	}
	r := &EntryReader{f: f, ra: f, path: path, size: st.Size()}
	r.forget()
	r.s = &scanner{reuse: true, debug: filepath.Base(path) == DebugJSONName, intern: map[string]string{}}
	r.p.t = &tree{}
	return r, nil
}

// forget marks every chunk slot empty.
func (r *EntryReader) forget() {
	for i := range r.slots {
		r.slots[i] = chunkSlot{at: -1}
	}
	r.recent = [recentChunks]int64{} // as if the file were read from its start
}

// Close closes the file and frees the chunks.
func (r *EntryReader) Close() error {
	if r.free != nil {
		r.free()
		r.chunks, r.free = nil, nil
		r.forget()
	}
	return r.f.Close()
}

// UseChunks makes r read its chunks into memory c lends, given back when
// r closes (or is collected unclosed).
func (r *EntryReader) UseChunks(c *Chunks) { r.lender = c }

// SkipStats makes Read leave the statistics out of the rows that take
// them from the item's members, as ScanOptions.NoStats does.
func (r *EntryReader) SkipStats() { r.s.noStats, r.s.flat.noStats = true, true }

// MD5 reports whether an entry read so far carries an md5 (msprobe's
// md5_find; see Header.MD5).
func (r *EntryReader) MD5() bool { return r.h.MD5 }

// bytesAt returns the file bytes [off, end), valid until the next call;
// fewer when the file ends before end.
func (r *EntryReader) bytesAt(off, end int64) ([]byte, error) {
	end = min(end, r.size)
	if off < 0 || off > end {
		return nil, fmt.Errorf("%s: offset %d out of range", r.path, off)
	}
	first, last := off/readChunk, (end-1)/readChunk
	alone := end == off || last-first >= readChunks/2 || r.scattered(first, last)
	r.recent[r.next], r.next = last, (r.next+1)%recentChunks
	if alone {
		// Large, or away from what was read lately: read alone.
		if int64(cap(r.buf)) < end-off {
			r.buf = make([]byte, end-off)
		}
		n, err := r.ra.ReadAt(r.buf[:end-off], off)
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("read dump: %w", err)
		}
		return r.buf[:n], nil
	}
	r.tick++
	if first == last {
		c, err := r.chunk(first)
		if err != nil {
			return nil, err
		}
		base := first * readChunk
		return c[min(off-base, int64(len(c))):min(end-base, int64(len(c)))], nil
	}
	// Across chunks: copied together (a few entries in a hundred).
	r.buf = r.buf[:0]
	for i := first; i <= last; i++ {
		c, err := r.chunk(i)
		if err != nil {
			return nil, err
		}
		base := i * readChunk
		// (a chunk of a file that shrank may end before off)
		r.buf = append(r.buf, c[min(max(off-base, 0), int64(len(c))):min(end-base, int64(len(c)))]...)
		if len(c) < readChunk {
			break // the file ended
		}
	}
	return r.buf, nil
}

// scattered reports whether the bytes in chunks first..last are best
// read alone: none of those chunks is kept, and none of the last
// recentChunks requests ended within a chunk of first. Entries asked
// for in no order of the file's (a bench dump whose entries the other
// dump orders otherwise) then cost their own bytes, not a chunk each,
// while walks along the file, either way and a few in turn, and a
// second entry of a chunk just read alone keep their chunks.
func (r *EntryReader) scattered(first, last int64) bool {
	for _, at := range r.recent {
		if first >= at-1 && first <= at+1 {
			return false
		}
	}
	for i := range r.slots {
		if at := r.slots[i].at; at >= first && at <= last {
			return false
		}
	}
	return true
}

// chunk returns chunk i of the file, read unless kept.
func (r *EntryReader) chunk(i int64) ([]byte, error) {
	// Entries read in order mostly share the chunk used last.
	if s := &r.slots[r.last]; s.at == i {
		s.used = r.tick
		return r.chunks[r.last*readChunk : r.last*readChunk+s.n], nil
	}
	return r.chunkSlow(i)
}

// chunkSlow is chunk through all the slots.
func (r *EntryReader) chunkSlow(i int64) ([]byte, error) {
	lru := 0
	for k := range r.slots {
		s := &r.slots[k]
		if s.at == i {
			s.used, r.last = r.tick, k
			return r.chunks[k*readChunk : k*readChunk+s.n], nil
		}
		if s.used < r.slots[lru].used {
			lru = k
		}
	}
	if r.chunks == nil {
		// Outside the heap: they would count twice in the heap of a
		// compare with several readers.
		if r.lender != nil {
			r.chunks, r.free = r.lender.lend()
		} else {
			r.chunks, r.free = offheap.MakeInOrder[byte](readChunks * readChunk)
		}
		offheap.Cleanup(r, r.free)
	}
	s := &r.slots[lru]
	c := r.chunks[lru*readChunk : (lru+1)*readChunk]
	n, err := r.ra.ReadAt(c, i*readChunk)
	if err != nil && err != io.EOF {
		*s = chunkSlot{at: -1}
		return nil, fmt.Errorf("read dump: %w", err)
	}
	*s = chunkSlot{at: i, n: n, used: r.tick}
	r.last = lru
	return c[:n], nil
}

// Read parses the member of "data" whose name starts at byte off (a
// SkimEntry's Offset; end is the next member's Offset, or -1 for the end
// of the file), flattens it and calls fn with it, unless msprobe skips the
// entry (then fn is not called). index is given to Entry.Index and
// Entry.Member (the entry's place among the members of "data"); line is
// the name's line (SkimEntry.Line) for the entry's and its rows' Line
// fields and for errors; 0 when unknown: the Line fields then count from
// the name's line (1; itemLine counts a row's in the file) and
// errors are given the absolute line, counted from the file's start.
// As with ScanReuse, the Entry and its Items are
// reused by the next Read (their strings stay valid, the Entry's name
// sharing its rows' allocation).
func (r *EntryReader) Read(index int, off, end int64, line int, fn func(*Entry) error) error {
	if line > 0 {
		r.s.linesFrom = false
		return r.read(index, off, end, line, fn)
	}
	r.s.linesFrom = true
	err := r.read(index, off, end, 1, fn)
	if err == nil {
		return nil
	}
	var se *source.Error
	if errors.As(err, &se) && se.File == r.path && se.Line > 0 {
		line, lerr := lineFrom(r.f, off, se.Line)
		if lerr != nil {
			return fmt.Errorf("read dump: %w", lerr)
		}
		se.Line = line
	}
	return err
}

// lineFrom is the line in f of line rel of the text from byte off on
// (rel 1: the line of off), counted from the file's start: an entry
// read without its line (EntryReader.Read) counts its lines from its
// name, and only a message needs them counted in the file.
func lineFrom(f io.ReaderAt, off int64, rel int) (int, error) {
	base, err := source.LineAt(f, off)
	if err != nil {
		return 0, err
	}
	return base + rel - 1, nil
}

// Rows is Read for readers that need only the number of rows the entry
// flattens into (0 when msprobe skips it): the body is parsed and
// checked as Read does, the rows are counted, not built, and their
// values checked, not converted (the flattener's names mode).
func (r *EntryReader) Rows(index int, off, end int64, line int) (int, error) {
	r.s.countOnly, r.s.flat.names, r.s.flat.count = true, true, true
	defer func() { r.s.countOnly, r.s.flat.names, r.s.flat.count = false, false, false }()
	r.s.rows = 0
	err := r.Read(index, off, end, line, func(*Entry) error { return nil })
	return r.s.rows, err
}

func (r *EntryReader) read(index int, off, end int64, line int, fn func(*Entry) error) error {
	if end < 0 {
		end = r.size
	}
	b, err := r.bytesAt(off, end)
	if err != nil {
		return err
	}
	lx := &r.lx
	*lx = lexer{buf: b, end: len(b), line: line, source: r.path, rerr: io.EOF, read: off}
	r.s.lx, r.s.fn, r.s.index = lx, fn, index
	r.h.Skipped = r.h.Skipped[:0]
	r.p.lx = lx
	r.p.t.reset()
	if c, ok := lx.peek(); !ok || c != '"' {
		return lx.errorf("expected an entry name string, found %s", lx.describe())
	}
	name, err := lx.readString(r.name[:0])
	if err != nil {
		return err
	}
	r.name = name
	if err := lx.expect(':', "':' after the entry name"); err != nil {
		return err
	}
	j, err := r.s.decode(&r.p, name, line, nil)
	if err != nil {
		return err
	}
	j.off = off
	if c, ok := lx.peek(); ok && c != ',' && c != '}' {
		return lx.errorf(`expected ',' or '}' in "data", found %s`, lx.describe())
	}
	r.s.member = index // the Entry's Member, whatever was read before
	return r.s.process(&r.h, &j)
}
