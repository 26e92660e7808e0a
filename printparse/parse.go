package printparse

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"

	"github.com/layermap/layermap/printparse/source"
)

// Options selects what ParseText reads from a text that holds more than one
// dump.
type Options struct {
	// Index is the 0-based dump to read when the text holds several.
	// -1 means "the only one": several dumps then give an error that lists
	// them (line and root class) and asks for an index.
	Index int
	// MaxNodes caps the number of nodes a dump may expand to (repeat
	// groups included), so that a corrupt "(0-99999999): 100000000 x"
	// fails instead of exhausting memory. 0 means DefaultMaxNodes.
	MaxNodes int
	// DumpParams makes Load read parameter shapes from an msprobe dump
	// folder (DumpOptions.Params); print(model) text ignores it.
	DumpParams bool
	// IndexFlag is the command-line flag that sets Index, named in the
	// error for a text holding several dumps ("" means "--index").
	IndexFlag string
}

// DefaultMaxNodes is the node cap when Options.MaxNodes is 0: about 25
// times the largest public MoE models (DeepSeek-V3 expands to ~80k).
const DefaultMaxNodes = 2_000_000

// ParseText reads a PyTorch print(model) dump (nn.Module.__repr__ text) into
// a Tree. name names the input in errors and warnings.
//
// The dump may sit among other log lines and carry a prefix on its first
// line (a logger header, "model = ") or on every line (a launcher's "0: " or
// "[rank0]: " tag, a timestamp); CRLF line ends, tabs and trailing spaces
// are accepted. Damage with an unambiguous reading is repaired and reported
// in Tree.Warnings: a missing final ")", indentation that is not two spaces
// per level (the parentheses decide), blank lines, lines hard-wrapped by a
// terminal, diff markers, "..." elisions, custom reprs that nest module
// reprs in their arguments, and the "/* n_params=... */" annotations of
// mbridge's memory estimator. Anything else is a *source.Error naming the
// line.
func ParseText(data []byte, name string, opts Options) (*Tree, error) {
	if len(data) >= 2 && (data[0] == 0xff && data[1] == 0xfe || data[0] == 0xfe && data[1] == 0xff) {
		data = fromUTF16(data) // PowerShell's "> log.txt" writes UTF-16
	}
	if bytes.IndexByte(data[:min(len(data), 8192)], 0) >= 0 {
		return nil, &source.Error{File: name, Expected: "text holding a print(model) dump", Found: "binary data"}
	}
	src := strings.TrimPrefix(string(data), "\ufeff")
	lines := splitLines(src)
	var found []*Tree
	for i := 0; i < len(lines); {
		h, ok := rootHeader(lines, i)
		if !ok {
			i++
			continue
		}
		p := newDumpParser(name, lines, h)
		p.maxNodes = opts.MaxNodes
		if p.maxNodes <= 0 {
			p.maxNodes = DefaultMaxNodes
		}
		t, err := p.parse()
		if err != nil {
			return nil, err
		}
		found = append(found, t)
		i = p.end + 1
		if opts.Index >= 0 && len(found) > opts.Index {
			break
		}
	}
	switch {
	case len(found) == 0:
		e := &source.Error{File: name, Expected: "a print(model) dump (a line ending in `ClassName(` followed by `  (name): ...` lines)"}
		if strings.TrimSpace(src) == "" {
			e.Found = "empty input"
		} else {
			e.Line = firstNonBlank(lines)
			e.Found = "`" + clip(strings.TrimSpace(lines[e.Line-1])) + "` and no dump after it"
		}
		return nil, e
	case opts.Index >= 0 && opts.Index < len(found):
		return found[opts.Index], nil
	case opts.Index < 0 && len(found) == 1:
		return found[0], nil
	case opts.Index < 0 && identical(found):
		// Logs often print the model twice (before and after wrapping,
		// once per stage); the same text twice leaves no choice to make.
		t := found[0]
		var at []string
		for _, u := range found {
			at = append(at, strconv.Itoa(u.Line))
		}
		t.Warnings = append(t.Warnings, Warning{Line: t.Line, Msg: fmt.Sprintf("the input holds %d identical dumps (lines %s); read the first", len(found), strings.Join(at, ", "))})
		sortWarnings(t.Warnings)
		return t, nil
	}
	var b strings.Builder
	for i, t := range found {
		if i == 6 && len(found) > 7 {
			fmt.Fprintf(&b, ", ... (%d more), #%d at line %d %s", len(found)-7, len(found)-1, found[len(found)-1].Line, rootClass(found[len(found)-1]))
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "#%d at line %d %s", i, t.Line, rootClass(t))
	}
	flag := opts.IndexFlag
	if flag == "" {
		flag = "--index"
	}
	exp := fmt.Sprintf("one print(model) dump; pass %s N (0-based) to pick one", flag)
	if opts.Index >= 0 {
		exp = fmt.Sprintf("dump #%d (%s is 0-based)", opts.Index, flag)
	}
	return nil, &source.Error{File: name, Expected: exp, Found: fmt.Sprintf("%d: %s", len(found), b.String())}
}

// identical reports whether the trees render to the same text and none
// needed repairs.
func identical(ts []*Tree) bool {
	var first string
	for i, t := range ts {
		if len(t.Warnings) > 0 {
			return false
		}
		s := t.String()
		if i == 0 {
			first = s
		} else if s != first {
			return false
		}
	}
	return true
}

// fromUTF16 decodes UTF-16 text that starts with a byte order mark.
func fromUTF16(data []byte) []byte {
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

func rootClass(t *Tree) string {
	if t.List {
		if len(t.Root.Children) > 0 {
			return "[" + t.Root.Children[0].Class + "]"
		}
		return "[]"
	}
	return t.Root.Class
}

func firstNonBlank(lines []string) int {
	for i, l := range lines {
		if strings.TrimSpace(l) != "" {
			return i + 1
		}
	}
	return 1
}

// splitLines splits on "\n", dropping one trailing "\r" per line. The
// strings share src's memory.
func splitLines(src string) []string {
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

func rstrip(s string) string {
	n := len(s)
	for n > 0 && (s[n-1] == ' ' || s[n-1] == '\t' || s[n-1] == '\r') {
		n--
	}
	return s[:n]
}

// clip shortens s for an error message.
func clip(s string) string {
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

// classToken returns the length of the class name at the start of s (0 if
// there is none). Class names are Python identifiers, optionally dotted
// (PEFT's "lora.Linear").
func classToken(s string) int {
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

// header describes the first line of one dump.
type header struct {
	line    int    // 0-based index of the root line
	class   string // root class
	list    bool   // "[Class(": a Python list of models
	prefix  string // prefix repeated on every line of the dump ("" if none)
	loose   bool   // prefix holds a timestamp: digits may differ per line
	first   string // text in front of the root class on its line only
	comment bool   // mbridge "Class /* ... */ (" annotations
}

// rootHeader reports whether lines[i] starts a dump: it ends in
// "Class(" (after an optional prefix and "[") and a "(name): ..." line
// follows within a few lines.
func rootHeader(lines []string, i int) (header, bool) {
	l := rstrip(lines[i])
	if l == "" || l[len(l)-1] != '(' {
		return header{}, false
	}
	h := header{line: i}
	t := l[:len(l)-1]
	if u := rstrip(t); strings.HasSuffix(u, "*/") {
		k := strings.LastIndex(u, "/*")
		if k < 0 {
			return header{}, false
		}
		t, h.comment = rstrip(u[:k]), true
	}
	j := len(t)
	for j > 0 && isClassByte(t[j-1]) {
		j--
	}
	if n := classToken(t[j:]); n == 0 || n != len(t)-j {
		return header{}, false
	}
	h.class = t[j:]
	pre := t[:j]
	if strings.HasSuffix(pre, "[") {
		h.list, pre = true, pre[:len(pre)-1]
	}
	// Inside a dump, "(name): Class(" and "arg=Class(" are not roots.
	if tp := strings.TrimLeft(pre, " \t"); strings.HasPrefix(tp, "(") && strings.Contains(tp, "): ") {
		return header{}, false
	}
	// Find the first body line and decide whether the prefix repeats.
	seen := 0
	for k := i + 1; k < len(lines) && seen < 4 && k <= i+12; k++ {
		b := rstrip(lines[k])
		if strings.TrimSpace(b) == "" {
			continue
		}
		if seen == 0 && pre != "" {
			if hasPrefix(b, pre, false) {
				h.prefix = pre
			} else if countDigits(pre) >= 6 && hasPrefix(b, pre, true) {
				h.prefix, h.loose = pre, true
			} else if n := commonPrefix(pre, b, countDigits(pre) >= 6); n >= 2 {
				// "[rank0]: model: Net(" over "[rank0]:   (fc): ...": the
				// tag repeats, the rest of the text is the first line's.
				if c := strings.TrimLeft(b[n:], " \t"); strings.HasPrefix(c, "(") && strings.Contains(c, "): ") {
					h.prefix, h.loose = pre[:n], countDigits(pre) >= 6
				}
			}
		}
		if h.prefix != "" {
			if !hasPrefix(b, h.prefix, h.loose) {
				return header{}, false
			}
			b = b[len(h.prefix):]
		}
		if h.comment {
			b = stripComments(b)
		}
		c := strings.TrimLeft(b, " \t")
		switch {
		case strings.HasPrefix(c, "(") && strings.Contains(c, "): "):
			if h.prefix == "" {
				h.first = pre
			}
			return h, true
		case strings.HasPrefix(c, ")"):
			return header{}, false
		case isEllipsis(c):
			if h.prefix == "" {
				h.first = pre
			}
			return h, true
		}
		seen++
	}
	return header{}, false
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
		b.WriteString(rstrip(s[:k]))
		s = strings.TrimLeft(s[k+e+2:], " \t")
		k = strings.Index(s, "/*")
	}
	b.WriteString(s)
	return b.String()
}

// isEllipsis reports whether an inner line is an author's elision.
func isEllipsis(s string) bool {
	return strings.HasPrefix(s, "...") || strings.HasPrefix(s, "…")
}

// line is one body line of a dump, prefix and indentation removed.
type line struct {
	num    int    // 1-based
	indent int    // columns of indentation (a tab counts 2)
	text   string // rest of the line, right-trimmed
	marker bool   // a diff/quote marker was removed: indent unknown
}

type frame struct {
	n        *Node
	depth    int
	sawChild bool
	template bool // n is the first member of a repeat group: expand on close
}

type mismatch struct {
	line     int
	want     int
	got      int
	dedent   bool
	expected string
	found    string
}

type cached struct {
	extra  []string
	fields []Field
}

type dumpParser struct {
	src   string
	lines []string
	h     header
	tree  *Tree

	stack []frame
	base  int
	i     int // index of the current line
	end   int // index of the last line of the dump

	mis        *mismatch
	mismatches int
	consistent int // lines indented like PyTorch before the first mismatch
	blank      int
	firstBlank int
	skipped    int
	firstSkip  int
	resync     int // index+1 of the elision warning awaiting a resync
	commentW   bool

	arena    []Node
	nodes    int // nodes made so far
	maxNodes int
	cache    map[string]cached
	names    map[*Node]map[string]*Node // child index of large parents
}

func newDumpParser(src string, lines []string, h header) *dumpParser {
	return &dumpParser{src: src, lines: lines, h: h, cache: make(map[string]cached)}
}

func (p *dumpParser) node() *Node {
	if len(p.arena) == 0 {
		p.arena = make([]Node, 512)
	}
	n := &p.arena[0]
	p.arena = p.arena[1:]
	p.nodes++
	return n
}

func joinPath(parent, name string) string {
	if parent == "" {
		return name
	}
	return parent + "." + name
}

func (p *dumpParser) warn(line int, format string, args ...any) {
	p.tree.Warnings = append(p.tree.Warnings, Warning{Line: line, Msg: fmt.Sprintf(format, args...)})
}

func (p *dumpParser) errf(line int, expected, found string) error {
	return &source.Error{File: p.src, Line: line, Expected: expected, Found: found}
}

func (p *dumpParser) top() *frame { return &p.stack[len(p.stack)-1] }

// get returns body line i with prefix, comments and indentation removed;
// ok is false for blank lines and lines foreign to the dump.
func (p *dumpParser) get(i int, count bool) (line, bool) {
	raw := p.lines[i]
	if p.h.prefix != "" {
		if !hasPrefix(raw, p.h.prefix, p.h.loose) {
			if strings.TrimSpace(raw) != "" && !strings.HasPrefix(p.h.prefix, rstrip(raw)) {
				if count {
					if p.skipped == 0 {
						p.firstSkip = i + 1
					}
					p.skipped++
				}
				return line{}, false
			}
			raw = ""
		} else {
			raw = raw[len(p.h.prefix):]
		}
	}
	raw = rstrip(raw)
	if p.h.comment {
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
			if p.blank == 0 {
				p.firstBlank = i + 1
			}
			p.blank++
		}
		return line{}, false
	}
	return line{num: i + 1, indent: ind, text: raw[k:]}, true
}

// parse reads the dump that starts at p.h.line.
func (p *dumpParser) parse() (*Tree, error) {
	h := p.h
	p.tree = &Tree{Source: p.src, Kind: KindPrint, List: h.list, Line: h.line + 1}
	if h.comment {
		p.warn(h.line+1, "this is not nn.Module.__repr__ output: its `/* n_params=... */` annotations (mbridge memory-estimator style) were removed and the tree read from the rest; it prints no extra_repr, so no shapes")
	}
	// The root line's column is 0 once a per-line prefix is removed; with a
	// first-line-only prefix take it from the first body line.
	for k := h.line + 1; k < len(p.lines); k++ {
		if l, ok := p.get(k, false); ok {
			if h.first != "" && l.indent >= 2 && !isEllipsis(l.text) {
				p.base = l.indent - 2
			}
			break
		}
	}
	root := p.node()
	root.Line = h.line + 1
	if h.list {
		el := p.node()
		*el = Node{Name: "0", Path: "0", Class: h.class, Parent: root, Line: h.line + 1}
		root.Children = append(root.Children, el)
		p.stack = append(p.stack, frame{n: root, depth: -1, sawChild: true}, frame{n: el, depth: 0})
	} else {
		root.Class = h.class
		p.stack = append(p.stack, frame{n: root, depth: 0})
	}
	p.tree.Root = root

	for p.i = h.line + 1; p.i < len(p.lines); p.i++ {
		l, ok := p.get(p.i, true)
		if !ok {
			continue
		}
		done, stop, err := p.handle(l)
		if err != nil {
			return nil, err
		}
		if done {
			p.end = p.i
			return p.finish()
		}
		if stop {
			return p.finishOpen(l)
		}
	}
	return p.finishOpen(line{})
}

// handle consumes one body line. done: the root closed on it. stop: the line
// is not part of the dump, which ended before it.
func (p *dumpParser) handle(l line) (done, stop bool, err error) {
	c := l.text
	if p.resync > 0 && (c[0] == '(' || c[0] == ')') {
		if err := p.resyncTo(l); err != nil {
			return false, false, err
		}
	}
	top := p.top()
	want := p.base + 2*(top.depth+1)
	switch {
	case c[0] == ')':
		return p.closer(l)
	case c[0] == '(':
		if ch, ok := parseHeader(c); ok {
			return false, false, p.child(l, ch)
		}
		// "(linear_q" + "kv): Linear(...)": cut inside the name.
		if nl, ok := p.peek(); ok && nl.indent == 0 && want > 0 && !nl.marker && nl.text[0] != '(' && nl.text[0] != ')' {
			if ch, ok := parseHeader(c + nl.text); ok {
				p.warn(nl.num, "joined this line to line %d: the line looks cut by a terminal (`%s` + `%s`)", l.num, clip(lastWord(c)), clip(firstWord(nl.text)))
				p.i = nl.num - 1
				l.text = c + nl.text
				return false, false, p.child(l, ch)
			}
		}
	case isEllipsis(c):
		n := top.n
		n.Elisions = append(n.Elisions, Elision{Line: l.num, Text: c, Before: len(n.Children)})
		p.warn(l.num, "`%s` stands for lines left out of the dump: the subtree of %s is incomplete", clip(c), describe(n))
		p.resync = len(p.tree.Warnings)
		return false, false, nil
	case !l.marker && (c[0] == '-' || c[0] == '+' || c[0] == '>' || c[0] == '#') && len(c) > 2 && (c[1] == ' ' || c[1] == '\t'):
		rest := strings.TrimLeft(c[1:], " \t")
		if rest != "" && (rest[0] == '(' || rest[0] == ')') {
			p.warn(l.num, "ignored the `%c` in front of this line (a diff or quote marker)", c[0])
			return p.handle(line{num: l.num, indent: l.indent, text: rest, marker: true})
		}
	}
	// An extra_repr line: only before the node's children.
	if !top.sawChild && (l.marker || l.indent >= want || p.mismatches > 0) {
		text := c
		if l.indent > want && p.mismatches == 0 && !l.marker {
			text = strings.Repeat(" ", l.indent-want) + c
		}
		p.checkIndent(l, max(l.indent, want), func() string { return "an extra_repr line of " + describe(top.n) })
		top.n.Extra = append(top.n.Extra, text)
		top.n.Fields = append(top.n.Fields, splitFields(text)...)
		return false, false, nil
	}
	if p.mismatches == 0 && l.indent < want && !l.marker {
		return false, true, nil // the dump stopped before this line
	}
	return false, false, p.errf(l.num, "`(name): Class(...)` or `)` inside "+describe(top.n), "`"+clip(c)+"`")
}

// resyncTo closes the nodes that an elision swallowed the end of, judging by
// the indentation of the first line after it.
func (p *dumpParser) resyncTo(l line) error {
	w := &p.tree.Warnings[p.resync-1]
	p.resync = 0
	if p.mismatches > 0 || l.marker || (l.indent-p.base)%2 != 0 || l.indent < p.base {
		return nil
	}
	d := (l.indent - p.base) / 2 // depth of the node this line closes
	if l.text[0] == '(' {
		d-- // a child line: d is its parent's depth
	}
	var closed []string
	for len(p.stack) > 1 && p.top().depth > d {
		n := p.top().n
		name := n.Name
		if r := n.Repeat; r != nil && r.Count > 1 {
			name = strconv.Itoa(r.First) + "-" + strconv.Itoa(r.Last)
		}
		closed = append(closed, name+" ("+n.Class+")")
		if err := p.pop(); err != nil {
			return err
		}
	}
	if len(closed) > 0 {
		w.Msg += "; judging by the indentation of line " + strconv.Itoa(l.num) + ", " + strings.Join(closed, ", ") + " end inside the omitted lines"
	}
	return nil
}

// describe names a node in a message. A repeat group's members are named
// by their range: "model.layers.0-31.mlp (LlamaMLP)", as the text printed
// them once for all.
func describe(n *Node) string {
	cls := n.Class
	if n.Path == "" {
		if cls == "" {
			return "the root"
		}
		return "the root " + cls
	}
	var segs []string
	for m := n; m.Parent != nil; m = m.Parent {
		seg := m.Name
		if r := m.Repeat; r != nil && r.Count > 1 {
			seg = strconv.Itoa(r.First) + "-" + strconv.Itoa(r.Last)
		}
		segs = append(segs, seg)
	}
	slices.Reverse(segs)
	return strings.Join(segs, ".") + " (" + cls + ")"
}

// checkIndent records a line whose indentation is not 2 per level.
func (p *dumpParser) checkIndent(l line, want int, what func() string) {
	if l.marker || l.indent == want {
		if p.mis == nil {
			p.consistent++
		}
		return
	}
	p.mismatches++
	if p.mis == nil {
		p.mis = &mismatch{line: l.num, want: want, got: l.indent, dedent: l.indent < want,
			expected: what(), found: "`" + clip(l.text) + "`"}
	}
}

// pop closes the top frame, expanding a repeat group.
func (p *dumpParser) pop() error {
	f := p.stack[len(p.stack)-1]
	p.stack = p.stack[:len(p.stack)-1]
	if n := f.n; len(n.Extra) == 1 && len(n.Children) == 0 && len(n.Elisions) == 0 && f.depth >= 0 {
		p.warn(n.Line, "%s spreads one extra_repr line and no children over several lines, which nn.Module.__repr__ never does; kept the line as its extra_repr", describe(n))
	}
	if f.template {
		return p.expand(f.n)
	}
	return nil
}

func (p *dumpParser) closer(l line) (done, stop bool, err error) {
	top := p.top()
	rest := l.text[1:]
	list := p.h.list && len(p.stack) == 2
	switch {
	case rest == "":
	case rest == "]" && list:
	case len(p.stack) == 1 && !p.h.list && (rest == "}" || rest == ",)" || rest == ")" || rest == "]"):
		// the end of a dict, tuple or call around the model: print({'m': m})
	case strings.HasPrefix(rest, ", ") && list:
		next := rest[2:]
		n := classToken(next)
		if n == 0 || next[n:] != "(" {
			return false, false, p.errf(l.num, "`), Class(` starting the next model of the list", "`"+clip(l.text)+"`")
		}
		p.checkIndent(l, p.base, func() string { return "`)` closing " + describe(top.n) })
		if err := p.pop(); err != nil {
			return false, false, err
		}
		root := p.tree.Root
		name := strconv.Itoa(len(root.Children))
		el := p.node()
		*el = Node{Name: name, Path: name, Class: next[:n], Parent: root, Line: l.num}
		root.Children = append(root.Children, el)
		p.stack = append(p.stack, frame{n: el, depth: 0})
		return false, false, nil
	default:
		return false, false, p.errf(l.num, "`)` closing "+describe(top.n), "`"+clip(l.text)+"`")
	}
	p.checkIndent(l, p.base+2*top.depth, func() string { return "`)` closing " + describe(top.n) })
	if rest == "]" && len(p.stack) != 2 {
		return false, false, p.errf(l.num, "`)` closing "+describe(top.n), "`)]`")
	}
	if err := p.pop(); err != nil {
		return false, false, err
	}
	if len(p.stack) == 1 && p.h.list {
		if rest != "]" {
			p.warn(l.num, "the list of models ends without `]`; assumed it ends here")
		}
		p.stack = p.stack[:0]
		return true, false, nil
	}
	return len(p.stack) == 0, false, nil
}

// childHeader is a parsed "(key): [N x ]Class(...)" line.
type childHeader struct {
	key         string
	first, last int
	count       int    // > 0 for a repeat group
	none        bool   // "(key): None"
	class       string // class name
	body        string // text after "Class(" ("" for a node opening here)
	open        bool   // the line ends right after "Class("
	leaf        bool   // "Class(...)" closed on this line; body is the extra
	partial     bool   // unbalanced or cut: continues on the next lines
	badCount    string // set when "(a-b): n x" is inconsistent
	tooBig      string // set when a number of "(a-b): n x" has more than 18 digits
}

// parseHeader parses a child line; ok is false when the line is not one.
func parseHeader(c string) (childHeader, bool) {
	off := 1
	for {
		k := strings.Index(c[off:], "): ")
		if k < 0 {
			return childHeader{}, false
		}
		key, rest := c[1:off+k], c[off+k+3:]
		if h, ok := parseRepr(key, rest); ok {
			return h, true
		}
		off += k + 1
	}
}

// atoi reads a decimal of at most 18 digits (so that it fits an int64 and
// a range b-a+1 cannot overflow).
func atoi(s string) (int, bool) {
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

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

func parseRepr(key, rest string) (childHeader, bool) {
	h := childHeader{key: key}
	if rest == "None" {
		h.none, h.class = true, "None"
		return h, true
	}
	// "(a-b): n x Class("
	if j := strings.Index(rest, " x "); j > 0 {
		if d := strings.IndexByte(key, '-'); d > 0 && allDigits(rest[:j]) && allDigits(key[:d]) && allDigits(key[d+1:]) &&
			max(j, d, len(key)-d-1) > 18 && classToken(rest[j+3:]) > 0 {
			// a repeat group no machine could hold: an error, not an extra_repr
			h.tooBig, h.class = "("+key+"): "+rest[:j]+" x", rest[j+3:j+3+classToken(rest[j+3:])]
			return h, true
		}
		if n, ok := atoi(rest[:j]); ok {
			d := strings.IndexByte(key, '-')
			a, ok1 := atoi(key[:max(d, 0)])
			b, ok2 := atoi(key[d+1:])
			switch {
			case d <= 0 || !ok1 || !ok2:
				return childHeader{}, false
			case b < a || n != b-a+1:
				h.badCount = fmt.Sprintf("(%d-%d): %d x", a, b, n)
			}
			h.first, h.last, h.count = a, b, n
			rest = rest[j+3:]
		}
	}
	n := classToken(rest)
	if n == 0 {
		return childHeader{}, false
	}
	h.class = rest[:n]
	if n == len(rest) {
		h.partial = true // cut after the class name
		return h, true
	}
	if rest[n] != '(' {
		return childHeader{}, false
	}
	h.body = rest[n+1:]
	if h.body == "" {
		h.open = true
		return h, true
	}
	m := matchParen(rest, n, true)
	if m != len(rest)-1 && rest[len(rest)-1] == ')' {
		// An unpaired quote in the extra_repr (a repr of "it's"); PyTorch
		// prints a leaf on one line, so trust the brackets alone.
		if m2 := matchParen(rest, n, false); m2 == len(rest)-1 {
			m = m2
		}
	}
	switch {
	case m == len(rest)-1:
		h.leaf, h.body = true, rest[n+1:m]
	case m < 0:
		h.partial = true
	default:
		return childHeader{}, false
	}
	return h, true
}

// matchParen returns the index of the ")" matching the "(" at s[i], or -1.
// Quoted strings are skipped when quotes is set.
func matchParen(s string, i int, quotes bool) int {
	depth := 0
	var quote byte
	for k := i; k < len(s); k++ {
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
			}
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
			if depth == 0 {
				return k
			}
		}
	}
	return -1
}

// balance returns the change in bracket depth over s.
func balance(s string) int {
	d := 0
	var quote byte
	for k := 0; k < len(s); k++ {
		c := s[k]
		if quote != 0 {
			if c == quote {
				quote = 0
			}
			continue
		}
		switch c {
		case '\'', '"':
			quote = c
		case '(', '[', '{':
			d++
		case ')', ']', '}':
			d--
		}
	}
	return d
}

func (p *dumpParser) child(l line, h childHeader) error {
	top := p.top()
	want := p.base + 2*(top.depth+1)
	// A line cut by a terminal continues at column 0 of the next line.
	for h.partial {
		nl, ok := p.peek()
		if !ok || nl.indent != 0 || want == 0 || nl.text[0] == '(' || nl.text[0] == ')' || nl.marker {
			break
		}
		joined := l.text + nl.text
		nh, ok := parseHeader(joined)
		if !ok {
			break
		}
		p.warn(nl.num, "joined this line to line %d: the line looks cut by a terminal (`%s` + `%s`)", l.num, clip(lastWord(l.text)), clip(firstWord(nl.text)))
		p.i = nl.num - 1
		l.text, h = joined, nh
	}
	if h.badCount != "" {
		return p.errf(l.num, "a repeat count equal to the index range, as in `(0-27): 28 x`", "`"+h.badCount+"`")
	}
	if h.tooBig != "" {
		return p.errf(l.num, fmt.Sprintf("at most %d modules after expanding repeat groups", p.maxNodes), "`"+clip(h.tooBig)+"`")
	}
	p.checkIndent(l, want, func() string { return "a child of " + describe(top.n) + " or the `)` closing it" })
	parent := top.n
	n := p.node()
	name := h.key
	if h.count > 0 {
		name = strconv.Itoa(h.first)
	}
	*n = Node{Name: name, Path: joinPath(parent.Path, name), Class: h.class, Parent: parent, Line: l.num, None: h.none}
	if h.count > 0 {
		n.Repeat = &Repeat{First: h.first, Last: h.last, Count: h.count, Line: l.num}
	}
	if first := p.duplicate(parent, name); first != nil {
		return p.errf(l.num, "a child name not used before in "+describe(parent)+" (nn.Module children have unique names)",
			"`("+name+")` again (first at line "+strconv.Itoa(first.Line)+")")
	}
	top.sawChild = true
	parent.Children = append(parent.Children, n)
	p.addName(parent, n)
	switch {
	case h.open:
		p.stack = append(p.stack, frame{n: n, depth: top.depth + 1, template: h.count > 0})
		return nil
	case h.leaf:
		if h.body != "" {
			p.setExtra(n, h.body)
			if h.body == "..." || h.body == "…" {
				p.warn(l.num, "`%s(...)`: the body of %s was left out of the dump; its children are unknown", h.class, describe(n))
			}
		}
	case h.partial:
		if h.body == "" && !strings.HasSuffix(l.text, "(") {
			return p.errf(l.num, "`(` after the class name `"+h.class+"`", "end of line")
		}
		if err := p.custom(l, n, h); err != nil {
			return err
		}
	}
	if h.count > 0 {
		return p.expand(n)
	}
	return nil
}

// duplicate returns the child of parent already called name, if any.
// Large parents keep an index.
func (p *dumpParser) duplicate(parent *Node, name string) *Node {
	if idx := p.names[parent]; idx != nil {
		return idx[name]
	}
	if len(parent.Children) < 32 {
		for _, c := range parent.Children {
			if c.Name == name {
				return c
			}
		}
		return nil
	}
	if p.names == nil {
		p.names = map[*Node]map[string]*Node{}
	}
	idx := make(map[string]*Node, 2*len(parent.Children))
	for _, c := range parent.Children {
		if _, ok := idx[c.Name]; !ok {
			idx[c.Name] = c
		}
	}
	p.names[parent] = idx
	return idx[name]
}

func (p *dumpParser) addName(parent, n *Node) {
	if idx := p.names[parent]; idx != nil {
		idx[n.Name] = n
	}
}

// custom reads a leaf whose repr spans lines: a custom __repr__ that puts
// module reprs inside its arguments (torchode's AutoDiffAdjoint(step_method=
// Dopri5(...), ...)). The whole text becomes the leaf's Extra.
func (p *dumpParser) custom(l line, n *Node, h childHeader) error {
	bal := balance(h.body) + 1
	extra := []string{h.body}
	var inner []string
	start := l.num
	for bal > 0 {
		p.i++
		if p.i >= len(p.lines) {
			return p.errf(start, "the `)` that closes `"+h.class+"(` by balance", "end of input")
		}
		nl, ok := p.get(p.i, true)
		if !ok {
			continue
		}
		bal += balance(nl.text)
		t := nl.text
		if bal == 0 && strings.HasSuffix(t, ")") {
			t = t[:len(t)-1]
		}
		if d := nl.indent - l.indent; d > 0 && !nl.marker { // keep the layout relative to the header
			t = strings.Repeat(" ", d) + t
		}
		extra = append(extra, t)
		if ch, ok := parseHeader(nl.text); ok {
			inner = append(inner, ch.key)
		}
	}
	n.Extra, n.Custom = extra, true
	for _, e := range extra {
		n.Fields = append(n.Fields, splitFields(e)...)
	}
	msg := fmt.Sprintf("%s prints a custom repr over lines %d-%d, with module reprs inside its arguments; it is kept as one leaf", describe(n), start, p.i+1)
	if len(inner) > 0 {
		msg += " and the modules inside it (" + strings.Join(inner, ", ") + ") are not in the tree"
	}
	p.warn(start, "%s", msg)
	return nil
}

func lastWord(s string) string {
	k := strings.LastIndexAny(s, " (")
	return s[k+1:]
}

func firstWord(s string) string {
	if k := strings.IndexAny(s, "(, "); k > 0 {
		return s[:k+1]
	}
	return s
}

// peek returns the next body line without consuming it.
// It is used to find the continuation of a line cut by a terminal, so a
// line without the dump's per-line prefix (the terminal wrapped the
// launcher's output) is returned as it is.
func (p *dumpParser) peek() (line, bool) {
	for k := p.i + 1; k < len(p.lines); k++ {
		if l, ok := p.get(k, false); ok {
			return l, true
		}
		raw := rstrip(p.lines[k])
		if t := strings.TrimLeft(raw, " \t"); t != "" {
			if p.h.prefix == "" || hasPrefix(raw, p.h.prefix, p.h.loose) {
				return line{}, false
			}
			return line{num: k + 1, indent: len(raw) - len(t), text: t}, true
		}
	}
	return line{}, false
}

func (p *dumpParser) setExtra(n *Node, body string) {
	if c, ok := p.cache[body]; ok {
		n.Extra, n.Fields = c.extra, c.fields
		return
	}
	c := cached{extra: []string{body}, fields: splitFields(body)}
	p.cache[body] = c
	n.Extra, n.Fields = c.extra, c.fields
}

// expand appends the members First+1..Last of the repeat group whose first
// member is n, each a deep copy of n.
func (p *dumpParser) expand(n *Node) error {
	r := n.Repeat
	parent := n.Parent
	if r.Count <= 1 {
		return nil
	}
	size := 0
	n.Walk(func(*Node) bool { size++; return true })
	if r.Count-1 > p.maxNodes {
		// size*(Count-1) could overflow: say no more than the group's size
		return p.errf(r.Line, fmt.Sprintf("at most %d modules after expanding repeat groups", p.maxNodes),
			fmt.Sprintf("`(%d-%d): %d x %s(` needing more", r.First, r.Last, r.Count, n.Class))
	}
	if need := p.nodes + size*(r.Count-1); need > p.maxNodes {
		return p.errf(r.Line, fmt.Sprintf("at most %d modules after expanding repeat groups", p.maxNodes),
			fmt.Sprintf("`(%d-%d): %d x %s(` needing %d", r.First, r.Last, r.Count, n.Class, need))
	}
	parent.Children = slices.Grow(parent.Children, r.Count-1)
	for i := r.First + 1; i <= r.Last; i++ {
		name := strconv.Itoa(i)
		if first := p.duplicate(parent, name); first != nil {
			return p.errf(r.Line, "a child name not used before in "+describe(parent)+" (nn.Module children have unique names)",
				"`("+name+")` again in `("+strconv.Itoa(r.First)+"-"+strconv.Itoa(r.Last)+")` (first at line "+strconv.Itoa(first.Line)+")")
		}
		c := p.clone(n, parent, name, r)
		parent.Children = append(parent.Children, c)
		p.addName(parent, c)
	}
	return nil
}

// clone deep-copies n under parent with a new name; members of repeat
// groups inside n get groups of their own.
func (p *dumpParser) clone(n, parent *Node, name string, rep *Repeat) *Node {
	c := p.node()
	*c = *n
	c.Name, c.Parent, c.Repeat = name, parent, rep
	c.Path = joinPath(parent.Path, name)
	if len(n.Children) > 0 {
		c.Children = make([]*Node, len(n.Children))
		var oldR, newR *Repeat
		for i, ch := range n.Children {
			r := ch.Repeat
			if r != nil {
				if r != oldR {
					oldR, newR = r, new(Repeat)
					*newR = *r
				}
				r = newR
			}
			c.Children[i] = p.clone(ch, c, ch.Name, r)
		}
	}
	return c
}

// finish completes a dump whose root closed.
func (p *dumpParser) finish() (*Tree, error) {
	// Lines that go on like the dump's body mean the root closed early:
	// an opening line is missing, and what follows would be lost.
	for k := p.end + 1; k < len(p.lines) && k <= p.end+3; k++ {
		l, ok := p.get(k, false)
		if !ok {
			continue
		}
		_, isChild := parseHeader(l.text)
		if l.text[0] == '(' && isChild || l.text == ")" || l.text == ")]" {
			root := p.tree.Root
			if p.h.list {
				root = root.Children[len(root.Children)-1]
			}
			return nil, p.errf(l.num, fmt.Sprintf("the end of the dump after line %d closed %s (an opening line missing?)", p.end+1, describe(root)), "`"+clip(l.text)+"`")
		}
		break
	}
	if p.mismatches > 0 {
		m := p.mis
		p.warn(m.line, "indentation is not 2 spaces per level (here column %d, expected %d; %d such lines); the structure was read from the parentheses", m.got, m.want, p.mismatches)
	}
	p.finalWarnings()
	return p.tree, nil
}

func (p *dumpParser) finalWarnings() {
	if p.blank > 0 {
		p.warn(p.firstBlank, "ignored %d blank lines inside the dump (PyTorch prints none)", p.blank)
	}
	if p.skipped > 0 {
		p.warn(p.firstSkip, "skipped %d lines inside the dump that lack its `%s` prefix", p.skipped, strings.TrimSpace(p.h.prefix))
	}
	sortWarnings(p.tree.Warnings)
}

func sortWarnings(ws []Warning) {
	// insertion sort: few warnings, keeps discovery order for equal lines
	for i := 1; i < len(ws); i++ {
		for j := i; j > 0 && ws[j].Line < ws[j-1].Line; j-- {
			ws[j], ws[j-1] = ws[j-1], ws[j]
		}
	}
}

// finishOpen completes a dump that ended (at stop, or at the end of the
// input when stop.num is 0) with nodes still open.
func (p *dumpParser) finishOpen(stop line) (*Tree, error) {
	last := p.h.line
	endAt := len(p.lines)
	if stop.num > 0 {
		endAt = stop.num - 1
	}
	for k := endAt - 1; k > p.h.line; k-- {
		if _, ok := p.get(k, false); ok {
			last = k
			break
		}
	}
	p.end = last
	found := "end of input"
	if stop.num > 0 {
		found = "`" + clip(stop.text) + "` (line " + strconv.Itoa(stop.num) + ")"
	}
	if p.mismatches > 0 {
		m := p.mis
		if m.dedent && p.consistent >= 3 {
			return nil, p.errf(m.line, m.expected+" at column "+strconv.Itoa(m.want)+" (lines missing from the dump?)", m.found+" at column "+strconv.Itoa(m.got))
		}
		top := p.top()
		return nil, p.errf(last+1, "`)` closing "+describe(top.n)+" from line "+strconv.Itoa(top.n.Line), found)
	}
	var open []string
	for i := len(p.stack) - 1; i >= 0; i-- {
		f := p.stack[i]
		if f.depth < 0 {
			continue
		}
		open = append(open, describe(f.n)+" from line "+strconv.Itoa(f.n.Line))
	}
	if len(open) > 1 {
		// More than the final ")" is missing: the dump was cut off and
		// whatever followed (more children, more layers) is unknown.
		top := p.top()
		at := last + 1
		if stop.num > 0 {
			at = stop.num
		}
		return nil, p.errf(at, fmt.Sprintf("`)` closing %s from line %d (the dump is cut off with %d modules open)", describe(top.n), top.n.Line, len(open)), found)
	}
	for len(p.stack) > 0 {
		if err := p.pop(); err != nil {
			return nil, err
		}
	}
	what := "the input ends"
	if stop.num > 0 {
		what = "the dump stops (line " + strconv.Itoa(stop.num) + " is not part of it)"
	}
	closer := "`)`"
	if p.h.list {
		closer = "`)]`"
	}
	p.warn(last+1, "%s without the closing %s of %s; assumed it ends at line %d", what, closer, open[0], last+1)
	p.finalWarnings()
	return p.tree, nil
}
