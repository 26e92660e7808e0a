package scan

import "strings"

// Line is one body line of a dump, prefix and indentation removed.
type Line struct {
	Num    int    // 1-based
	Indent int    // columns of indentation (a tab counts 2)
	Text   string // rest of the line, right-trimmed
	Marker bool   // a diff/quote marker was removed: indent unknown
}

// Scanner reads the body lines of the dump a Header starts: it removes
// the per-line prefix, mbridge's comments and the indentation, and counts
// the blank lines and the lines foreign to the dump it passes over.
type Scanner struct {
	lines Text
	h     Header
	// Pos is the index of the current line; the parser moves it.
	Pos int
	// Blank and Skipped count the blank lines and the lines without the
	// dump's prefix read with count set; FirstBlank and FirstSkip are the
	// 1-based numbers of the first of each.
	Blank, FirstBlank  int
	Skipped, FirstSkip int
}

// NewScanner returns a Scanner over lines for the dump h starts.
func NewScanner(lines Text, h Header) *Scanner {
	return &Scanner{lines: lines, h: h}
}

// Raw returns line i as it is in the text.
func (s *Scanner) Raw(i int) string { return s.lines.Line(i) }

// Len is the number of lines of the whole text.
func (s *Scanner) Len() int { return s.lines.Len() }

// Line returns body line i with prefix, comments and indentation removed;
// ok is false for blank lines and lines foreign to the dump, which count
// in Blank and Skipped when count is set.
func (s *Scanner) Line(i int, count bool) (Line, bool) {
	raw := s.lines.Line(i)
	if s.h.Prefix != "" {
		if !hasPrefix(raw, s.h.Prefix, s.h.Loose) {
			if strings.TrimSpace(raw) != "" && !strings.HasPrefix(s.h.Prefix, Rstrip(raw)) {
				if count {
					if s.Skipped == 0 {
						s.FirstSkip = i + 1
					}
					s.Skipped++
				}
				return Line{}, false
			}
			raw = ""
		} else {
			raw = raw[len(s.h.Prefix):]
		}
	}
	raw = Rstrip(raw)
	if s.h.Comment {
		raw = stripComments(raw)
	}
	k, ind := 0, 0
	for k < len(raw) && (raw[k] == ' ' || raw[k] == '\t') {
		if raw[k] == '\t' {
			ind += 2
		} else {
			ind++
		}
		k++
	}
	if k == len(raw) {
		if count {
			if s.Blank == 0 {
				s.FirstBlank = i + 1
			}
			s.Blank++
		}
		return Line{}, false
	}
	return Line{Num: i + 1, Indent: ind, Text: raw[k:]}, true
}

// Peek returns the body line after Pos without consuming it. It is used
// to find the continuation of a line cut by a terminal, so a line without
// the dump's per-line prefix (the terminal wrapped the launcher's output)
// is returned as it is.
func (s *Scanner) Peek() (Line, bool) {
	for k := s.Pos + 1; k < s.lines.Len(); k++ {
		if l, ok := s.Line(k, false); ok {
			return l, true
		}
		raw := Rstrip(s.lines.Line(k))
		if t := strings.TrimLeft(raw, " \t"); t != "" {
			if s.h.Prefix == "" || hasPrefix(raw, s.h.Prefix, s.h.Loose) {
				return Line{}, false
			}
			return Line{Num: k + 1, Indent: len(raw) - len(t), Text: t}, true
		}
	}
	return Line{}, false
}
