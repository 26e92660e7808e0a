package scan

import (
	"fmt"
	"strings"
)

// Child is a parsed "(key): [N x ]Class(...)" line.
type Child struct {
	Key         string
	First, Last int
	Count       int    // > 0 for a repeat group
	None        bool   // "(key): None"
	Class       string // class name
	Body        string // text after "Class(" ("" for a node opening here)
	Open        bool   // the line ends right after "Class("
	Leaf        bool   // "Class(...)" closed on this line; Body is the extra
	Partial     bool   // unbalanced or cut: continues on the next lines
	BadCount    string // set when "(a-b): n x" is inconsistent
	TooBig      string // set when a number of "(a-b): n x" has more than 18 digits
}

// ParseChild parses a child line, "(key): [N x ]Class(body" with its
// indentation removed; ok is false when the line is not one.
func ParseChild(c string) (Child, bool) {
	if c == "" || c[0] != '(' {
		return Child{}, false
	}
	off := 1
	for {
		k := strings.Index(c[off:], "): ")
		if k < 0 {
			return Child{}, false
		}
		key, rest := c[1:off+k], c[off+k+3:]
		if h, ok := parseRepr(key, rest); ok {
			return h, true
		}
		off += k + 1
	}
}

// Atoi reads a decimal of at most 18 digits (so that it fits an int64 and
// a range b-a+1 cannot overflow).
func Atoi(s string) (int, bool) {
	if s == "" || len(s) > 18 {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = n*10 + int(s[i]-'0')
	}
	return n, true
}

// AllDigits reports whether s is a non-empty run of ASCII digits (a list
// index).
func AllDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

func parseRepr(key, rest string) (Child, bool) {
	h := Child{Key: key}
	if rest == "None" {
		h.None, h.Class = true, "None"
		return h, true
	}
	// "(a-b): n x Class("
	if j := strings.Index(rest, " x "); j > 0 {
		if d := strings.IndexByte(key, '-'); d > 0 && AllDigits(rest[:j]) && AllDigits(key[:d]) && AllDigits(key[d+1:]) &&
			max(j, d, len(key)-d-1) > 18 && ClassToken(rest[j+3:]) > 0 {
			// a repeat group no machine could hold: an error, not an extra_repr
			h.TooBig, h.Class = "("+key+"): "+rest[:j]+" x", rest[j+3:j+3+ClassToken(rest[j+3:])]
			return h, true
		}
		if n, ok := Atoi(rest[:j]); ok {
			d := strings.IndexByte(key, '-')
			a, ok1 := Atoi(key[:max(d, 0)])
			b, ok2 := Atoi(key[d+1:])
			switch {
			case d <= 0 || !ok1 || !ok2:
				return Child{}, false
			case b < a || n != b-a+1:
				h.BadCount = fmt.Sprintf("(%d-%d): %d x", a, b, n)
			}
			h.First, h.Last, h.Count = a, b, n
			rest = rest[j+3:]
		}
	}
	n := ClassToken(rest)
	if n == 0 {
		return Child{}, false
	}
	h.Class = rest[:n]
	if n == len(rest) {
		h.Partial = true // cut after the class name
		return h, true
	}
	if rest[n] != '(' {
		return Child{}, false
	}
	h.Body = rest[n+1:]
	if h.Body == "" {
		h.Open = true
		return h, true
	}
	m := MatchParen(rest, n, true)
	if m != len(rest)-1 && rest[len(rest)-1] == ')' {
		// An unpaired quote in the extra_repr (a repr of "it's"); PyTorch
		// prints a leaf on one line, so trust the brackets alone.
		if m2 := MatchParen(rest, n, false); m2 == len(rest)-1 {
			m = m2
		}
	}
	switch {
	case m == len(rest)-1:
		h.Leaf, h.Body = true, rest[n+1:m]
	case m < 0:
		h.Partial = true
	default:
		return Child{}, false
	}
	return h, true
}

// walk calls fn with each byte of s from s[from] on that is outside a
// quoted string (' or ", skipped when quotes is set) and the bracket
// depth after it, until fn returns false; it returns the final depth.
func walk(s string, from int, quotes bool, fn func(k int, c byte, depth int) bool) int {
	depth := 0
	var quote byte
	for k := from; k < len(s); k++ {
		c := s[k]
		if quote != 0 {
			if c == quote {
				quote = 0
			}
			continue
		}
		switch c {
		case '\'', '"':
			if quotes {
				quote = c
				continue
			}
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
		}
		if !fn(k, c, depth) {
			break
		}
	}
	return depth
}

// MatchParen returns the index of the ")" matching the "(" at s[i], or -1.
// Quoted strings are skipped when quotes is set.
func MatchParen(s string, i int, quotes bool) int {
	at := -1
	walk(s, i, quotes, func(k int, c byte, depth int) bool {
		if depth == 0 && (c == ')' || c == ']' || c == '}') {
			at = k
			return false
		}
		return true
	})
	return at
}

// Balance returns the change in bracket depth over s, quoted strings
// skipped.
func Balance(s string) int {
	return walk(s, 0, true, func(int, byte, int) bool { return true })
}

// SplitTop splits s at the sep bytes outside brackets and quoted strings:
// "(3584,), eps=1e-06" split at ',' gives "(3584,)" and " eps=1e-06".
func SplitTop(s string, sep byte) []string {
	var out []string
	start := 0
	walk(s, 0, true, func(k int, c byte, depth int) bool {
		if c == sep && depth == 0 {
			out = append(out, s[start:k])
			start = k + 1
		}
		return true
	})
	return append(out, s[start:])
}
