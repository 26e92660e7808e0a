package scan

import (
	"bytes"
	"strings"
	"unicode/utf16"
)

// Decode turns the bytes of a text file into text: UTF-16 with a
// byte-order mark (PowerShell's "> log.txt" writes it) is decoded, a UTF-8
// byte-order mark dropped. ok is false for binary data (a NUL byte in the
// first 8 KiB).
func Decode(data []byte) (text string, ok bool) {
	if len(data) >= 2 && (data[0] == 0xff && data[1] == 0xfe || data[0] == 0xfe && data[1] == 0xff) {
		data = decodeUTF16(data)
	}
	if bytes.IndexByte(data[:min(len(data), 8192)], 0) >= 0 {
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

func FirstNonBlank(lines []string) int {
	for i, l := range lines {
		if strings.TrimSpace(l) != "" {
			return i + 1
		}
	}
	return 1
}

// Lines splits on "\n", dropping one trailing "\r" per line. The
// strings share src's memory.
func Lines(src string) []string {
	if strings.IndexByte(src, '\n') < 0 && strings.IndexByte(src, '\r') >= 0 {
		src = strings.ReplaceAll(src, "\r", "\n") // classic Mac line ends
	}
	lines := make([]string, 0, strings.Count(src, "\n")+1)
	for len(src) > 0 {
		k := strings.IndexByte(src, '\n')
		var l string
		if k < 0 {
			l, src = src, ""
		} else {
			l, src = src[:k], src[k+1:]
		}
		if n := len(l); n > 0 && l[n-1] == '\r' {
			l = l[:n-1]
		}
		lines = append(lines, l)
	}
	return lines
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

func isClassByte(c byte) bool {
	return c == '_' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// ClassToken returns the length of the class name at the start of s (0 if
// there is none). Class names are Python identifiers, optionally dotted
// (PEFT's "lora.Linear").
func ClassToken(s string) int {
	if s == "" || !(s[0] == '_' || s[0] >= 'a' && s[0] <= 'z' || s[0] >= 'A' && s[0] <= 'Z') {
		return 0
	}
	j := 1
	for j < len(s) && isClassByte(s[j]) {
		j++
	}
	for j > 0 && s[j-1] == '.' {
		j--
	}
	return j
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
