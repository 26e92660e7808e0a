package scan

import (
	"strings"
	"unicode/utf8"
)

// Header describes the first line of one dump.
type Header struct {
	Line    int    // 0-based index of the root line
	Class   string // root class
	List    bool   // "[Class(": a Python list of models
	Prefix  string // prefix repeated on every line of the dump ("" if none)
	Loose   bool   // prefix holds a timestamp: digits may differ per line
	First   string // text in front of the root class on its line only
	Comment bool   // mbridge "Class /* ... */ (" annotations
}

// FindHeader reports whether lines[i] starts a dump: it ends in
// "Class(" (after an optional prefix and "[") and a "(name): ..." line
// follows within a few lines.
func FindHeader(lines Text, i int) (Header, bool) {
	l := Rstrip(lines.Line(i))
	if l == "" || l[len(l)-1] != '(' {
		return Header{}, false
	}
	h := Header{Line: i}
	t := l[:len(l)-1]
	if u := Rstrip(t); strings.HasSuffix(u, "*/") {
		k := strings.LastIndex(u, "/*")
		if k < 0 {
			return Header{}, false
		}
		t, h.Comment = Rstrip(u[:k]), true
	}
	j := len(t)
	for j > 0 {
		if c := t[j-1]; c < utf8.RuneSelf {
			if !isClassByte(c) {
				break
			}
			j--
			continue
		}
		r, size := utf8.DecodeLastRuneInString(t[:j])
		if !identRune(r) {
			break
		}
		j -= size
	}
	if n := ClassToken(t[j:]); n == 0 || n != len(t)-j {
		return Header{}, false
	}
	h.Class = t[j:]
	pre := t[:j]
	if strings.HasSuffix(pre, "[") {
		h.List, pre = true, pre[:len(pre)-1]
	}
	// Inside a dump, "(name): Class(" and "arg=Class(" are not roots.
	if tp := strings.TrimLeft(pre, " \t"); strings.HasPrefix(tp, "(") && strings.Contains(tp, "): ") {
		return Header{}, false
	}
	// Find the first body line and decide whether the prefix repeats.
	seen := 0
	for k := i + 1; k < lines.Len() && seen < 4 && k <= i+12; k++ {
		b := Rstrip(lines.Line(k))
		if strings.TrimSpace(b) == "" {
			continue
		}
		if seen == 0 && pre != "" {
			if hasPrefix(b, pre, false) {
				h.Prefix = pre
			} else if countDigits(pre) >= 6 && hasPrefix(b, pre, true) {
				h.Prefix, h.Loose = pre, true
			} else if n := commonPrefix(pre, b, countDigits(pre) >= 6); n >= 2 {
				// "[rank0]: model: Net(" over "[rank0]:   (fc): ...": the
				// tag repeats, the rest of the text is the first line's.
				if c := strings.TrimLeft(b[n:], " \t"); strings.HasPrefix(c, "(") && strings.Contains(c, "): ") {
					h.Prefix, h.Loose = pre[:n], countDigits(pre) >= 6
				}
			}
		}
		if h.Prefix != "" {
			if !hasPrefix(b, h.Prefix, h.Loose) {
				return Header{}, false
			}
			b = b[len(h.Prefix):]
		}
		if h.Comment {
			b = stripComments(b)
		}
		c := strings.TrimLeft(b, " \t")
		switch {
		case strings.HasPrefix(c, "(") && strings.Contains(c, "): "):
			if h.Prefix == "" {
				h.First = pre
			}
			return h, true
		case strings.HasPrefix(c, ")"):
			return Header{}, false
		case IsEllipsis(c):
			if h.Prefix == "" {
				h.First = pre
			}
			return h, true
		}
		seen++
	}
	return Header{}, false
}

// commonPrefix returns the length of the longest common prefix of a and
// b, cut back to just after a space ("[rank0]: "); loose lets digits
// differ.
func commonPrefix(a, b string, loose bool) int {
	n := 0
	for n < len(a) && n < len(b) && (a[n] == b[n] || loose && a[n] >= '0' && a[n] <= '9' && b[n] >= '0' && b[n] <= '9') {
		n++
	}
	for n > 0 && a[n-1] != ' ' {
		n--
	}
	return n
}

func countDigits(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] >= '0' && s[i] <= '9' {
			n++
		}
	}
	return n
}

// hasPrefix reports whether s starts with p; loose lets digits differ.
func hasPrefix(s, p string, loose bool) bool {
	if len(s) < len(p) {
		return false
	}
	if !loose {
		return s[:len(p)] == p
	}
	for i := 0; i < len(p); i++ {
		a, b := s[i], p[i]
		if a != b && !(a >= '0' && a <= '9' && b >= '0' && b <= '9') {
			return false
		}
	}
	return true
}
