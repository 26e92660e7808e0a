package scan

import (
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/layermap/layermap/printparse/source"
)

// Decode turns the bytes of a text file into text: UTF-16 with a
// byte-order mark (PowerShell's "> log.txt" writes it) is decoded, a UTF-8
// byte-order mark dropped. ok is false for binary data (source.Binary).
func Decode(data []byte) (text string, ok bool) {
	if len(data) >= 2 && (data[0] == 0xff && data[1] == 0xfe || data[0] == 0xfe && data[1] == 0xff) {
		data = decodeUTF16(data)
	}
	if source.Binary(data) {
		return "", false
	}
	return strings.TrimPrefix(string(data), "\ufeff"), true
}

// decodeUTF16 decodes UTF-16 text that starts with a byte order mark.
func decodeUTF16(data []byte) []byte {
	be := data[0] == 0xfe
	u := make([]uint16, 0, len(data)/2)
	for i := 2; i+1 < len(data); i += 2 {
		if be {
			u = append(u, uint16(data[i])<<8|uint16(data[i+1]))
		} else {
			u = append(u, uint16(data[i+1])<<8|uint16(data[i]))
		}
	}
	return []byte(string(utf16.Decode(u)))
}

// FirstNonBlank returns the 1-based number of the first line holding more
// than blanks (1 when there is none).
func FirstNonBlank(lines Text) int {
	for i := range lines.Len() {
		if strings.TrimSpace(lines.Line(i)) != "" {
			return i + 1
		}
	}
	return 1
}

// Text is a text split into lines: the one string and the offset where
// each line starts (4 bytes per line, so a file of empty lines costs 4
// times its size, not the 16 of a string per line).
type Text struct {
	src    string
	starts []uint32 // starts[i]: offset of line i; then where a next line would start
}

// Lines splits src on "\n"; Text.Line drops one trailing "\r" per line.
// A text without "\n" but with "\r" (classic Mac line ends) is split on
// "\r". src must be shorter than 4 GiB.
func Lines(src string) Text {
	if strings.IndexByte(src, '\n') < 0 && strings.IndexByte(src, '\r') >= 0 {
		src = strings.ReplaceAll(src, "\r", "\n") // classic Mac line ends
	}
	n := strings.Count(src, "\n")
	if len(src) > 0 && src[len(src)-1] != '\n' {
		n++
	}
	starts := make([]uint32, 0, n+1)
	for off := 0; off < len(src); {
		starts = append(starts, uint32(off))
		k := strings.IndexByte(src[off:], '\n')
		if k < 0 {
			off = len(src)
			break
		}
		off += k + 1
	}
	end := uint32(len(src)) // the line after the last starts past its "\n"
	if len(src) > 0 && src[len(src)-1] != '\n' {
		end++
	}
	starts = append(starts, end)
	return Text{src: src, starts: starts}
}

// Len is the number of lines.
func (t Text) Len() int {
	if len(t.starts) == 0 {
		return 0
	}
	return len(t.starts) - 1
}

// NextWith returns the first line from line i on that holds the byte c,
// or -1: a search of the text, not a call per line.
func (t Text) NextWith(i int, c byte) int {
	if i >= t.Len() {
		return -1
	}
	k := strings.IndexByte(t.src[t.starts[i]:], c)
	if k < 0 {
		return -1
	}
	off := uint32(int(t.starts[i]) + k)
	// gallop, then bisect, for the last line starting at or before off
	lo, step := i, 1
	for lo+step < t.Len() && t.starts[lo+step] <= off {
		lo += step
		step *= 2
	}
	hi := min(lo+step, t.Len()) // starts[hi] > off, or hi is the last line + 1
	for hi-lo > 1 {
		m := int(uint(lo+hi) >> 1)
		if t.starts[m] <= off {
			lo = m
		} else {
			hi = m
		}
	}
	return lo
}

// Strings returns every line (Line of each).
func (t Text) Strings() []string {
	out := make([]string, t.Len())
	for i := range out {
		out[i] = t.Line(i)
	}
	return out
}

// Line returns line i (0-based) without its "\n" and one trailing "\r".
// The string shares the text's memory.
func (t Text) Line(i int) string {
	l := t.src[t.starts[i] : t.starts[i+1]-1]
	if n := len(l); n > 0 && l[n-1] == '\r' {
		l = l[:n-1]
	}
	return l
}

func Rstrip(s string) string {
	n := len(s)
	for n > 0 && (s[n-1] == ' ' || s[n-1] == '\t' || s[n-1] == '\r') {
		n--
	}
	return s[:n]
}

// Clip shortens s for an error message.
func Clip(s string) string {
	const max = 80
	s = strings.ToValidUTF8(s, "\ufffd")
	if strings.IndexFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0 {
		s = strings.Map(func(r rune) rune {
			if r < 0x20 || r == 0x7f {
				return ' '
			}
			return r
		}, s)
	}
	if len(s) <= max {
		return s
	}
	k := max
	for k > 0 && s[k]&0xC0 == 0x80 { // do not cut a UTF-8 sequence
		k--
	}
	return s[:k] + "…"
}

// isClassByte reports whether the ASCII byte c can be part of a class
// name (identRune judges the rest).
func isClassByte(c byte) bool {
	return c == '_' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// ClassToken returns the length of the class name at the start of s (0 if
// there is none). Class names are Python identifiers, optionally dotted
// (PEFT's "lora.Linear"), Unicode letters included; a byte that is not
// UTF-8 is taken into the name, so that the parser reports it (Invalid)
// instead of reading a cut name.
func ClassToken(s string) int {
	r, size := utf8.DecodeRuneInString(s)
	if s == "" || !(r == '_' || r < utf8.RuneSelf && (s[0] >= 'a' && s[0] <= 'z' || s[0] >= 'A' && s[0] <= 'Z') ||
		r >= utf8.RuneSelf && (unicode.IsLetter(r) || r == utf8.RuneError)) {
		return 0
	}
	j := size
	for j < len(s) {
		c := s[j]
		if c < utf8.RuneSelf {
			if !isClassByte(c) {
				break
			}
			j++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[j:])
		if !identRune(r) {
			break
		}
		j += size
	}
	for j > 0 && s[j-1] == '.' {
		j--
	}
	return j
}

// identRune reports whether a rune above ASCII can continue a Python
// identifier; an invalid byte (RuneError) counts, see ClassToken.
func identRune(r rune) bool {
	return r == utf8.RuneError || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.In(r, unicode.Mn, unicode.Mc, unicode.Pc)
}

// Invalid returns the offset of the first byte of s that is not UTF-8,
// or -1.
func Invalid(s string) int {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			return i
		}
		i += size
	}
	return -1
}

// stripComments removes mbridge's "   /* ... */ " annotations.
func stripComments(s string) string {
	k := strings.Index(s, "/*")
	if k < 0 {
		return s
	}
	var b strings.Builder
	for k >= 0 {
		e := strings.Index(s[k:], "*/")
		if e < 0 {
			break
		}
		b.WriteString(Rstrip(s[:k]))
		s = strings.TrimLeft(s[k+e+2:], " \t")
		k = strings.Index(s, "/*")
	}
	b.WriteString(s)
	return b.String()
}

// IsEllipsis reports whether an inner line is an author's elision.
func IsEllipsis(s string) bool {
	return strings.HasPrefix(s, "...") || strings.HasPrefix(s, "…")
}
