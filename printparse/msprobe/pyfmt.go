package msprobe

import (
	"math"
	"strings"
	"unicode"
	"unicode/utf8"
)

// AppendPyFloat appends Python's repr(f): the shortest digits that
// round-trip; positional notation when the decimal exponent is in
// [-4, 16), else d.ddde±XX with at least two exponent digits; integral
// values keep ".0"; nan, inf, -inf.
func AppendPyFloat(dst []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, "nan"...)
	case math.IsInf(f, 1):
		return append(dst, "inf"...)
	case math.IsInf(f, -1):
		return append(dst, "-inf"...)
	case f == 0:
		if math.Signbit(f) {
			return append(dst, "-0.0"...)
		}
		return append(dst, "0.0"...)
	}
	if f < 0 {
		dst = append(dst, '-')
	}
	// The shortest round-tripping digits, the closest to f: Python's
	// (repr uses David Gay's shortest mode).
	m, e := shortestDecimal(f)
	var buf [20]byte
	i := appendDigits(&buf, m)
	digits := buf[i:]
	nd := len(digits)
	switch decpt := nd + e; {
	case decpt-1 < -4 || decpt-1 >= 16: // d[.ddd]e±XX
		dst = append(dst, digits[0])
		if nd > 1 {
			dst = append(dst, '.')
			dst = append(dst, digits[1:]...)
		}
		x := decpt - 1
		if x < 0 {
			dst = append(dst, 'e', '-')
			x = -x
		} else {
			dst = append(dst, 'e', '+')
		}
		if x >= 100 {
			dst = append(dst, byte('0'+x/100))
			x %= 100
		}
		return append(dst, digitPairs[2*x], digitPairs[2*x+1])
	case decpt <= 0: // 0.000ddd
		dst = append(dst, "0.000"[:2-decpt]...)
		return append(dst, digits...)
	case decpt >= nd: // ddd000.0
		dst = append(dst, digits...)
		dst = append(dst, "0000000000000000"[:decpt-nd]...)
		return append(dst, '.', '0')
	default: // dd.ddd
		dst = append(dst, digits[:decpt]...)
		dst = append(dst, '.')
		return append(dst, digits[decpt:]...)
	}
}

// isPyRepr tells whether text is AppendPyFloat(f) (Value.Repr).
func isPyRepr(text []byte, f float64) bool {
	var buf [32]byte
	return string(AppendPyFloat(buf[:0], f)) == string(text)
}

// PyFloat returns Python's repr(f) (see AppendPyFloat).
func PyFloat(f float64) string {
	var buf [40]byte
	return string(AppendPyFloat(buf[:0], f))
}

// PandasCSVFloat is a float cell as msprobe's CSV holds it: Python repr,
// except ±inf, which pandas writes with a leading space (" inf", " -inf"),
// and NaN, which it writes as an empty cell.
func PandasCSVFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return " inf"
	case math.IsInf(f, -1):
		return " -inf"
	case math.IsNaN(f):
		return ""
	}
	return PyFloat(f)
}

// AppendPyRepr appends Python's repr() of the string s: single quotes
// unless s contains a single quote and no double quote; backslash, the
// quote, \t \n \r escaped; other non-printable characters as \xNN, \uNNNN
// or \UNNNNNNNN; printable non-ASCII kept.
func AppendPyRepr(dst []byte, s string) []byte {
	quote := byte('\'')
	if containsByte(s, '\'') && !containsByte(s, '"') {
		quote = '"'
	}
	dst = append(dst, quote)
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == quote || c == '\\':
				dst = append(dst, '\\', c)
			case c == '\t':
				dst = append(dst, '\\', 't')
			case c == '\n':
				dst = append(dst, '\\', 'n')
			case c == '\r':
				dst = append(dst, '\\', 'r')
			case c < 0x20 || c == 0x7f:
				dst = append(dst, '\\', 'x', hexDigit(c>>4), hexDigit(c&15))
			default:
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, '\\', 'x', hexDigit(c>>4), hexDigit(c&15))
		case pyPrintable(r):
			dst = append(dst, s[i:i+size]...)
		case r < 0x100:
			dst = append(dst, '\\', 'x', hexDigit(byte(r>>4)), hexDigit(byte(r&15)))
		case r < 0x10000:
			dst = append(dst, '\\', 'u')
			for sh := 12; sh >= 0; sh -= 4 {
				dst = append(dst, hexDigit(byte(r>>sh)&15))
			}
		default:
			dst = append(dst, '\\', 'U')
			for sh := 28; sh >= 0; sh -= 4 {
				dst = append(dst, hexDigit(byte(r>>sh)&15))
			}
		}
		i += size
	}
	return append(dst, quote)
}

// pyPrintable approximates Python's str.isprintable for one character:
// letters, marks, numbers, punctuation, symbols and the ASCII space.
func pyPrintable(r rune) bool {
	return unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S)
}

func containsByte(s string, c byte) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return true
		}
	}
	return false
}

func hexDigit(b byte) byte { return "0123456789abcdef"[b&15] }

// IsInt reports whether v is a JSON number written without fraction or
// exponent, which Python's json module loads as an int (printed "3", not
// "3.0").
func (v Value) IsInt() bool {
	if v.Kind != Number && v.Kind != PosInf && v.Kind != NegInf {
		return false
	}
	if v.Text == "" {
		return false
	}
	for i := 0; i < len(v.Text); i++ {
		switch v.Text[i] {
		case '.', 'e', 'E', 'I', 'N':
			return false
		}
	}
	return true
}

// PyStr renders v as Python's str() renders the value msprobe holds:
// None, True/False, an int as written (-0 is 0), a float by repr (nan,
// inf, -inf), a string as is, a Composite as its stored text.
//
// Note for the CSV: msprobe replaces a null statistic by the string
// "None", and pandas prints a float ±inf cell as " inf"/" -inf"; those
// rules belong to the table writer, not to PyStr.
func (v Value) PyStr() string {
	switch v.Kind {
	case Null:
		return "None"
	case Bool:
		if v.Bool {
			return "True"
		}
		return "False"
	case Number, PosInf, NegInf:
		if v.IsInt() {
			if v.Text == "-0" {
				return "0"
			}
			return v.Text
		}
		return PyFloat(v.Num)
	case NaN:
		return "nan"
	}
	return v.Text
}

// PyStrList renders a list of strings as Python's str(list).
func PyStrList(items []string) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, s := range items {
		if i > 0 {
			b.WriteString(", ")
		}
		b.Write(AppendPyRepr(nil, s))
	}
	b.WriteByte(']')
	return b.String()
}

// JSONDumps renders a list of strings as Python's json.dumps does by
// default: ", " separators and non-ASCII escaped as \uXXXX.
func JSONDumps(items []string) string {
	n := 2
	for _, s := range items {
		n += len(s) + 4
	}
	return string(AppendJSONDumps(make([]byte, 0, n), items))
}

// AppendJSONDumps appends JSONDumps(items).
func AppendJSONDumps(dst []byte, items []string) []byte {
	dst = append(dst, '[')
	for i, s := range items {
		if i > 0 {
			dst = append(dst, ", "...)
		}
		dst = AppendJSONString(dst, s)
	}
	return append(dst, ']')
}

// AppendJSONString appends s as Python's json module writes a string by
// default (ensure_ascii): quoted, with \" \\ \n \r \t \b \f, and every
// other character outside space..tilde as \uXXXX (UTF-16 surrogate pairs
// above U+FFFF; an invalid UTF-8 byte as U+FFFD). Runs of characters that
// need no escape are appended whole.
func AppendJSONString[T ~string | ~[]byte](b []byte, s T) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if i+8 <= len(s) && jsonPlain8(load8(s[i:i+8])) {
			i += 8
			continue
		}
		c := s[i]
		if c >= ' ' && c <= '~' && c != '"' && c != '\\' {
			i++
			continue
		}
		b = append(b, s[start:i]...)
		r, size := rune(c), 1
		if c >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(string(s[i:min(i+utf8.UTFMax, len(s))]))
		}
		i += size
		start = i
		switch r {
		case '"':
			b = append(b, `\"`...)
		case '\\':
			b = append(b, `\\`...)
		case '\n':
			b = append(b, `\n`...)
		case '\r':
			b = append(b, `\r`...)
		case '\t':
			b = append(b, `\t`...)
		case '\b':
			b = append(b, `\b`...)
		case '\f':
			b = append(b, `\f`...)
		default:
			if r > 0xffff {
				r -= 0x10000
				b = appendUTF16Escape(b, 0xd800+r>>10)
				r = 0xdc00 + r&0x3ff
			}
			b = appendUTF16Escape(b, r)
		}
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// jsonPlain8 tells whether the eight bytes of w need no escape: none is
// below space, above tilde, a quote or a backslash. (Each test is exact:
// a byte's borrow reaches only bytes above the one that caused it.)
func jsonPlain8(w uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	below := (w - ones*' ') &^ w // a high bit where a byte is below space (or high)
	q, bs, del := w^(ones*'"'), w^(ones*'\\'), w^(ones*0x7f)
	zero := ((q - ones) &^ q) | ((bs - ones) &^ bs) | ((del - ones) &^ del) // a high bit at a zero byte of either
	return (below|zero|w)&highs == 0
}

// load8 reads the first eight bytes of s as a little-endian word (one
// load: the compiler combines them).
func load8[T ~string | ~[]byte](s T) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// appendUTF16Escape appends \uXXXX, lower-case hex, of a UTF-16 unit.
func appendUTF16Escape(b []byte, u rune) []byte {
	const hex = "0123456789abcdef"
	return append(b, '\\', 'u', hex[u>>12&0xf], hex[u>>8&0xf], hex[u>>4&0xf], hex[u&0xf])
}
