package compare

import (
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// pyFloat renders f as Python's repr(float) does: the shortest digits that
// round-trip, fixed notation when the decimal exponent is in [-4, 16),
// otherwise scientific with a signed, at least two-digit exponent; integral
// values keep ".0".
func pyFloat(f float64) string {
	var buf [40]byte
	return string(appendPyFloat(buf[:0], f))
}

// appendPyFloat appends pyFloat(f) to dst.
func appendPyFloat(dst []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, "nan"...)
	case math.IsInf(f, 1):
		return append(dst, "inf"...)
	case math.IsInf(f, -1):
		return append(dst, "-inf"...)
	}
	if f == 0 {
		if math.Signbit(f) {
			return append(dst, "-0.0"...)
		}
		return append(dst, "0.0"...)
	}
	var tmp [32]byte
	s := strconv.AppendFloat(tmp[:0], f, 'e', -1, 64) // [-]d[.ddd]e±XX
	if s[0] == '-' {
		dst = append(dst, '-')
		s = s[1:]
	}
	epos := 0
	for epos < len(s) && s[epos] != 'e' {
		epos++
	}
	mant := s[:epos]
	e := 0
	neg := s[epos+1] == '-'
	for _, c := range s[epos+2:] {
		e = e*10 + int(c-'0')
	}
	if neg {
		e = -e
	}
	var dbuf [24]byte
	digits := append(dbuf[:0], mant[0])
	if len(mant) > 2 {
		digits = append(digits, mant[2:]...)
	}
	decpt := e + 1
	if decpt > -4 && decpt <= 16 {
		switch {
		case decpt <= 0:
			dst = append(dst, "0."...)
			for i := 0; i < -decpt; i++ {
				dst = append(dst, '0')
			}
			dst = append(dst, digits...)
		case decpt >= len(digits):
			dst = append(dst, digits...)
			for i := len(digits); i < decpt; i++ {
				dst = append(dst, '0')
			}
			dst = append(dst, ".0"...)
		default:
			dst = append(dst, digits[:decpt]...)
			dst = append(dst, '.')
			dst = append(dst, digits[decpt:]...)
		}
		return dst
	}
	dst = append(dst, digits[0])
	if len(digits) > 1 {
		dst = append(dst, '.')
		dst = append(dst, digits[1:]...)
	}
	dst = append(dst, 'e')
	if e < 0 {
		dst = append(dst, '-')
		e = -e
	} else {
		dst = append(dst, '+')
	}
	if e < 10 {
		dst = append(dst, '0')
	}
	return strconv.AppendInt(dst, int64(e), 10)
}

// pyRepr renders s as Python's repr(str): single quotes unless the text
// holds a single quote and no double quote, with Python's escapes.
func pyRepr(s string) string {
	q := byte('\'')
	if strings.IndexByte(s, '\'') >= 0 && strings.IndexByte(s, '"') < 0 {
		q = '"'
	}
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte(q)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case r == rune(q):
			b.WriteByte('\\')
			b.WriteByte(q)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == utf8.RuneError && n == 1:
			b.WriteString(`\x`)
			b.WriteString(hex2(s[i-1]))
		case r < 0x20 || r == 0x7f:
			b.WriteString(`\x`)
			b.WriteString(hex2(byte(r)))
		case r < 0x7f || unicode.IsPrint(r):
			b.WriteRune(r)
		case r <= 0xff:
			b.WriteString(`\x`)
			b.WriteString(hex2(byte(r)))
		case r <= 0xffff:
			b.WriteString(`\u`)
			b.WriteString(strconv.FormatInt(int64(r)|0x10000, 16)[1:])
		default:
			b.WriteString(`\U`)
			b.WriteString(strconv.FormatInt(int64(r)|0x100000000, 16)[1:])
		}
	}
	b.WriteByte(q)
	return b.String()
}

func hex2(c byte) string {
	const h = "0123456789abcdef"
	return string([]byte{h[c>>4], h[c&15]})
}

// pyStrList renders a list of strings as Python's str(list).
func pyStrList(items []string) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, s := range items {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(pyRepr(s))
	}
	b.WriteByte(']')
	return b.String()
}

// jsonDumps renders a list of strings as Python's json.dumps does by
// default: ", " separators and non-ASCII escaped as \uXXXX.
func jsonDumps(items []string) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, s := range items {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteByte('"')
		for _, r := range s {
			switch r {
			case '"':
				b.WriteString(`\"`)
			case '\\':
				b.WriteString(`\\`)
			case '\n':
				b.WriteString(`\n`)
			case '\r':
				b.WriteString(`\r`)
			case '\t':
				b.WriteString(`\t`)
			case '\b':
				b.WriteString(`\b`)
			case '\f':
				b.WriteString(`\f`)
			default:
				if r < 0x20 || r > 0x7e {
					if r > 0xffff {
						r -= 0x10000
						b.WriteString(`\u` + strconv.FormatInt(0x10000|int64(0xd800+(r>>10)), 16)[1:])
						b.WriteString(`\u` + strconv.FormatInt(0x10000|int64(0xdc00+(r&0x3ff)), 16)[1:])
						continue
					}
					b.WriteString(`\u` + strconv.FormatInt(0x10000|int64(r), 16)[1:])
					continue
				}
				b.WriteRune(r)
			}
		}
		b.WriteByte('"')
	}
	b.WriteByte(']')
	return b.String()
}
