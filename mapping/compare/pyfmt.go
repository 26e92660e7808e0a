package compare

import (
	"strconv"
	"strings"

	"github.com/layermap/layermap/printparse/msprobe"
)

// pyFloat renders f as Python's repr(float) does (msprobe.PyFloat).
func pyFloat(f float64) string {
	var buf [40]byte
	return string(msprobe.AppendPyFloat(buf[:0], f))
}

// appendPyFloat appends pyFloat(f) to dst.
func appendPyFloat(dst []byte, f float64) []byte { return msprobe.AppendPyFloat(dst, f) }

// pyRepr renders s as Python's repr(str) (msprobe.AppendPyRepr).
func pyRepr(s string) string { return string(msprobe.AppendPyRepr(nil, s)) }

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
