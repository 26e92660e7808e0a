package printparse

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/layermap/layermap/printparse/scan"
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
	// Stdin is what Load reads print(model) text from for the path "-"
	// (named "<stdin>" in messages).
	Stdin io.Reader
}

// textWhat is what a print(model) input is expected to be.
const textWhat = "text holding a print(model) dump"

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
	if len(data) > source.MaxText {
		return nil, &source.Error{File: name, Expected: "a text of at most " + source.Size(source.MaxText), Found: source.Size(int64(len(data)))}
	}
	src, ok := scan.Decode(data)
	if !ok {
		return nil, &source.Error{File: name, Expected: textWhat, Found: "binary data (a NUL byte in its first " + source.Size(source.TextBlock) + ")"}
	}
	lines := scan.Lines(src)
	var found []*Tree
	for i := 0; i < lines.Len(); {
		if i = lines.NextWith(i, '('); i < 0 { // every header holds a "("
			break
		}
		h, ok := scan.FindHeader(lines, i)
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
			e.Line = scan.FirstNonBlank(lines)
			e.Found = "`" + scan.Clip(strings.TrimSpace(lines.Line(e.Line-1))) + "` and no dump after it"
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
func rootClass(t *Tree) string {
	if t.List {
		if len(t.Root.Children) > 0 {
			return "[" + t.Root.Children[0].Class + "]"
		}
		return "[]"
	}
	return t.Root.Class
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

// dumpParser builds the Tree of one dump from the lines its scanner
// gives: the stack of open nodes, the indentation judgement, repeat
// groups and the warnings. Reading lines (prefixes, comments, blank and
// foreign lines) is the scanner's.
type dumpParser struct {
	src  string
	sc   *scan.Scanner
	h    scan.Header
	tree *Tree

	stack []frame
	base  int
	end   int // index of the last line of the dump

	mis          *mismatch
	mismatches   int
	consistent   int // lines indented like PyTorch before the first mismatch
	resync       int // index+1 of the elision warning awaiting a resync; -1: one left out
	dropped      int // warnings left out (maxWarnings), the first at line firstDropped
	firstDropped int
	commentW     bool

	arena     []Node
	nodes     int // nodes made so far
	maxNodes  int
	pathBytes int // sum of the lengths of the paths made so far (source.MaxPathBytes)
	cache     map[string]cached
	names     map[*Node]map[string]*Node // child index of large parents
}

func newDumpParser(src string, lines scan.Text, h scan.Header) *dumpParser {
	return &dumpParser{src: src, sc: scan.NewScanner(lines, h), h: h, cache: make(map[string]cached)}
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

// budget refuses, at line, a node at depth (levels below the root) or
// more path bytes than the budgets allow (source.MaxDepth,
// source.MaxPathBytes): paths are what a deep tree costs.
func (p *dumpParser) budget(line, depth, pathBytes int, parent *Node) error {
	if depth > source.MaxDepth {
		return p.errf(line, fmt.Sprintf("modules nested at most %d deep (no real model nests more than a few dozen levels)", source.MaxDepth),
			fmt.Sprintf("a module at depth %d inside %s", depth, describe(parent)))
	}
	if p.pathBytes += pathBytes; p.pathBytes > source.MaxPathBytes {
		return p.errf(line, "module paths of at most "+source.Size(source.MaxPathBytes)+" in all (real models need a few MB)",
			"more, at a module inside "+describe(parent))
	}
	return nil
}

// maxWarnings bounds the warnings kept per dump: a text of a million
// "..." lines is not worth a million messages (nor their memory).
const maxWarnings = 1000

func (p *dumpParser) warn(line int, format string, args ...any) {
	if p.full(line) {
		return
	}
	p.tree.Warnings = append(p.tree.Warnings, Warning{Line: line, Msg: fmt.Sprintf(format, args...)})
}

// always records a warning whatever the count: the once-per-dump
// summaries.
func (p *dumpParser) always(line int, format string, args ...any) {
	p.tree.Warnings = append(p.tree.Warnings, Warning{Line: line, Msg: fmt.Sprintf(format, args...)})
}

// full reports whether no more warnings are kept, counting the one at
// line that is left out. Callers whose message costs work ask first.
func (p *dumpParser) full(line int) bool {
	if len(p.tree.Warnings) < maxWarnings {
		return false
	}
	if p.dropped == 0 {
		p.firstDropped = line
	}
	p.dropped++
	return true
}
func (p *dumpParser) errf(line int, expected, found string) error {
	return &source.Error{File: p.src, Line: line, Expected: expected, Found: found}
}
func (p *dumpParser) top() *frame { return &p.stack[len(p.stack)-1] }

// checkUTF8 refuses line num (1-based) of the dump when it is not UTF-8:
// Python prints UTF-8, and a name read around a bad byte would be wrong
// ("Mod\xffel(" is not class "el").
func (p *dumpParser) checkUTF8(num int) error {
	raw := p.sc.Raw(num - 1)
	if utf8.ValidString(raw) {
		return nil
	}
	k := scan.Invalid(raw)
	if k < 0 {
		return nil
	}
	return &source.Error{File: p.src, Line: num, Col: k + 1, Expected: "UTF-8 text",
		Found: fmt.Sprintf("byte 0x%02x, which is not UTF-8, in `%s`", raw[k], scan.Clip(raw))}
}

// parse reads the dump that starts at p.h.Line.
func (p *dumpParser) parse() (*Tree, error) {
	h := p.h
	if scan.Invalid(h.Class) >= 0 {
		return nil, p.checkUTF8(h.Line + 1)
	}
	p.tree = &Tree{Source: p.src, Kind: KindPrint, List: h.List, Line: h.Line + 1}
	if h.Comment {
		p.always(h.Line+1, "this is not nn.Module.__repr__ output: its `/* n_params=... */` annotations (mbridge memory-estimator style) were removed and the tree read from the rest; it prints no extra_repr, so no shapes")
	}
	// The root line's column is 0 once a per-line prefix is removed; with a
	// first-line-only prefix take it from the first body line.
	for k := h.Line + 1; k < p.sc.Len(); k++ {
		if l, ok := p.sc.Line(k, false); ok {
			if h.First != "" && l.Indent >= 2 && !scan.IsEllipsis(l.Text) {
				p.base = l.Indent - 2
			}
			break
		}
	}
	root := p.node()
	root.Line = h.Line + 1
	if h.List {
		el := p.node()
		*el = Node{Name: "0", Path: "0", Class: h.Class, Parent: root, Line: h.Line + 1}
		root.Children = append(root.Children, el)
		p.stack = append(p.stack, frame{n: root, depth: -1, sawChild: true}, frame{n: el, depth: 0})
	} else {
		root.Class = h.Class
		p.stack = append(p.stack, frame{n: root, depth: 0})
	}
	p.tree.Root = root

	for p.sc.Pos = h.Line + 1; p.sc.Pos < p.sc.Len(); p.sc.Pos++ {
		l, ok := p.sc.Line(p.sc.Pos, true)
		if !ok {
			continue
		}
		done, stop, err := p.handle(l)
		if err != nil {
			return nil, err
		}
		if done {
			p.end = p.sc.Pos
			return p.finish()
		}
		if stop {
			return p.finishOpen(l)
		}
	}
	return p.finishOpen(scan.Line{})
}

// handle consumes one body line. done: the root closed on it. stop: the line
// is not part of the dump, which ended before it.
func (p *dumpParser) handle(l scan.Line) (done, stop bool, err error) {
	c := l.Text
	if err := p.checkUTF8(l.Num); err != nil {
		return false, false, err
	}
	if p.resync != 0 && (c[0] == '(' || c[0] == ')') {
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
		if ch, ok := scan.ParseChild(c); ok {
			return false, false, p.child(l, ch)
		}
		// "(linear_q" + "kv): Linear(...)": cut inside the name.
		if nl, ok := p.sc.Peek(); ok && nl.Indent == 0 && want > 0 && !nl.Marker && nl.Text[0] != '(' && nl.Text[0] != ')' {
			if ch, ok := scan.ParseChild(c + nl.Text); ok {
				p.warn(nl.Num, "joined this line to line %d: the line looks cut by a terminal (`%s` + `%s`)", l.Num, scan.Clip(lastWord(c)), scan.Clip(firstWord(nl.Text)))
				p.sc.Pos = nl.Num - 1
				l.Text = c + nl.Text
				return false, false, p.child(l, ch)
			}
		}
	case scan.IsEllipsis(c):
		n := top.n
		n.Elisions = append(n.Elisions, Elision{Line: l.Num, Text: c, Before: len(n.Children)})
		if p.full(l.Num) {
			p.resync = -1
			return false, false, nil
		}
		p.warn(l.Num, "`%s` stands for lines left out of the dump: the subtree of %s is incomplete", scan.Clip(c), describe(n))
		p.resync = len(p.tree.Warnings)
		return false, false, nil
	case !l.Marker && (c[0] == '-' || c[0] == '+' || c[0] == '>' || c[0] == '#') && len(c) > 2 && (c[1] == ' ' || c[1] == '\t'):
		rest := strings.TrimLeft(c[1:], " \t")
		if rest != "" && (rest[0] == '(' || rest[0] == ')') {
			p.warn(l.Num, "ignored the `%c` in front of this line (a diff or quote marker)", c[0])
			return p.handle(scan.Line{Num: l.Num, Indent: l.Indent, Text: rest, Marker: true})
		}
	}
	// An extra_repr line: only before the node's children.
	if !top.sawChild && (l.Marker || l.Indent >= want || p.mismatches > 0) {
		text := c
		if l.Indent > want && p.mismatches == 0 && !l.Marker {
			text = strings.Repeat(" ", l.Indent-want) + c
		}
		p.checkIndent(l, max(l.Indent, want), func() string { return "an extra_repr line of " + describe(top.n) })
		top.n.Extra = append(top.n.Extra, text)
		top.n.Fields = append(top.n.Fields, splitFields(text)...)
		return false, false, nil
	}
	if p.mismatches == 0 && l.Indent < want && !l.Marker {
		return false, true, nil // the dump stopped before this line
	}
	return false, false, p.errf(l.Num, "`(name): Class(...)` or `)` inside "+describe(top.n), "`"+scan.Clip(c)+"`")
}

// resyncTo closes the nodes that an elision swallowed the end of, judging by
// the indentation of the first line after it.
func (p *dumpParser) resyncTo(l scan.Line) error {
	var w *Warning // nil: the elision's warning was left out
	if p.resync > 0 {
		w = &p.tree.Warnings[p.resync-1]
	}
	p.resync = 0
	if p.mismatches > 0 || l.Marker || (l.Indent-p.base)%2 != 0 || l.Indent < p.base {
		return nil
	}
	d := (l.Indent - p.base) / 2 // depth of the node this line closes
	if l.Text[0] == '(' {
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
	if len(closed) > 0 && w != nil {
		w.Msg += "; judging by the indentation of line " + strconv.Itoa(l.Num) + ", " + strings.Join(closed, ", ") + " end inside the omitted lines"
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
	return clipPath(segs) + " (" + cls + ")"
}

// clipPath joins path segments for a message, leaving out the middle of
// a deep path ("a.b.c.d.e.f.…(4090 more).u.v.w.x.y.z") and, when that is
// still long, keeping fewer and shorter segments, so that a message stays
// one short line however the input nests.
func clipPath(segs []string) string {
	if s := joinClipped(segs, 6, 80); len(s) <= 160 {
		return s
	}
	return joinClipped(segs, 2, 24)
}

func joinClipped(segs []string, keep, width int) string {
	clipSeg := func(s string) string {
		if len(s) > width {
			k := width
			for k > 0 && s[k]&0xC0 == 0x80 {
				k--
			}
			return s[:k] + "…"
		}
		return s
	}
	var b strings.Builder
	for i, s := range segs {
		if i == keep && len(segs) > 2*keep+4 {
			fmt.Fprintf(&b, ".…(%d more)", len(segs)-2*keep)
			for _, s := range segs[len(segs)-keep:] {
				b.WriteString("." + clipSeg(s))
			}
			break
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(clipSeg(s))
	}
	return b.String()
}

// checkIndent records a line whose indentation is not 2 per level.
func (p *dumpParser) checkIndent(l scan.Line, want int, what func() string) {
	if l.Marker || l.Indent == want {
		if p.mis == nil {
			p.consistent++
		}
		return
	}
	p.mismatches++
	if p.mis == nil {
		p.mis = &mismatch{line: l.Num, want: want, got: l.Indent, dedent: l.Indent < want,
			expected: what(), found: "`" + scan.Clip(l.Text) + "`"}
	}
}

// pop closes the top frame, expanding a repeat group.
func (p *dumpParser) pop() error {
	f := p.stack[len(p.stack)-1]
	p.stack = p.stack[:len(p.stack)-1]
	if n := f.n; len(n.Extra) == 1 && len(n.Children) == 0 && len(n.Elisions) == 0 && f.depth >= 0 && !p.full(n.Line) {
		p.warn(n.Line, "%s spreads one extra_repr line and no children over several lines, which nn.Module.__repr__ never does; kept the line as its extra_repr", describe(n))
	}
	if f.template {
		return p.expand(f.n)
	}
	return nil
}
func (p *dumpParser) closer(l scan.Line) (done, stop bool, err error) {
	top := p.top()
	rest := l.Text[1:]
	list := p.h.List && len(p.stack) == 2
	switch {
	case rest == "":
	case rest == "]" && list:
	case len(p.stack) == 1 && !p.h.List && (rest == "}" || rest == ",)" || rest == ")" || rest == "]"):
		// the end of a dict, tuple or call around the model: print({'m': m})
	case strings.HasPrefix(rest, ", ") && list:
		next := rest[2:]
		n := scan.ClassToken(next)
		if n == 0 || next[n:] != "(" {
			return false, false, p.errf(l.Num, "`), Class(` starting the next model of the list", "`"+scan.Clip(l.Text)+"`")
		}
		p.checkIndent(l, p.base, func() string { return "`)` closing " + describe(top.n) })
		if err := p.pop(); err != nil {
			return false, false, err
		}
		root := p.tree.Root
		name := strconv.Itoa(len(root.Children))
		el := p.node()
		*el = Node{Name: name, Path: name, Class: next[:n], Parent: root, Line: l.Num}
		root.Children = append(root.Children, el)
		p.stack = append(p.stack, frame{n: el, depth: 0})
		return false, false, nil
	default:
		return false, false, p.errf(l.Num, "`)` closing "+describe(top.n), "`"+scan.Clip(l.Text)+"`")
	}
	p.checkIndent(l, p.base+2*top.depth, func() string { return "`)` closing " + describe(top.n) })
	if rest == "]" && len(p.stack) != 2 {
		return false, false, p.errf(l.Num, "`)` closing "+describe(top.n), "`)]`")
	}
	if err := p.pop(); err != nil {
		return false, false, err
	}
	if len(p.stack) == 1 && p.h.List {
		if rest != "]" {
			p.always(l.Num, "the list of models ends without `]`; assumed it ends here")
		}
		p.stack = p.stack[:0]
		return true, false, nil
	}
	return len(p.stack) == 0, false, nil
}
func (p *dumpParser) child(l scan.Line, h scan.Child) error {
	top := p.top()
	want := p.base + 2*(top.depth+1)
	// A line cut by a terminal continues at column 0 of the next line.
	for h.Partial {
		nl, ok := p.sc.Peek()
		if !ok || nl.Indent != 0 || want == 0 || nl.Text[0] == '(' || nl.Text[0] == ')' || nl.Marker {
			break
		}
		joined := l.Text + nl.Text
		nh, ok := scan.ParseChild(joined)
		if !ok {
			break
		}
		p.warn(nl.Num, "joined this line to line %d: the line looks cut by a terminal (`%s` + `%s`)", l.Num, scan.Clip(lastWord(l.Text)), scan.Clip(firstWord(nl.Text)))
		p.sc.Pos = nl.Num - 1
		l.Text, h = joined, nh
	}
	if h.BadCount != "" {
		return p.errf(l.Num, "a repeat count equal to the index range, as in `(0-27): 28 x`", "`"+h.BadCount+"`")
	}
	if h.TooBig != "" {
		return p.errf(l.Num, fmt.Sprintf("at most %d modules after expanding repeat groups", p.maxNodes), "`"+scan.Clip(h.TooBig)+"`")
	}
	p.checkIndent(l, want, func() string { return "a child of " + describe(top.n) + " or the `)` closing it" })
	parent := top.n
	n := p.node()
	name := h.Key
	if h.Count > 0 {
		name = strconv.Itoa(h.First)
	}
	*n = Node{Name: name, Path: joinPath(parent.Path, name), Class: h.Class, Parent: parent, Line: l.Num, None: h.None}
	if err := p.budget(l.Num, top.depth+1, len(n.Path), parent); err != nil {
		return err
	}
	if h.Count > 0 {
		n.Repeat = &Repeat{First: h.First, Last: h.Last, Count: h.Count, Line: l.Num}
	}
	if first := p.duplicate(parent, name); first != nil {
		return p.errf(l.Num, "a child name not used before in "+describe(parent)+" (nn.Module children have unique names)",
			"`("+name+")` again (first at line "+strconv.Itoa(first.Line)+")")
	}
	top.sawChild = true
	parent.Children = append(parent.Children, n)
	p.addName(parent, n)
	switch {
	case h.Open:
		p.stack = append(p.stack, frame{n: n, depth: top.depth + 1, template: h.Count > 0})
		return nil
	case h.Leaf:
		if h.Body != "" {
			p.setExtra(n, h.Body)
			if (h.Body == "..." || h.Body == "…") && !p.full(l.Num) {
				p.warn(l.Num, "`%s(...)`: the body of %s was left out of the dump; its children are unknown", h.Class, describe(n))
			}
		}
	case h.Partial:
		if h.Body == "" && !strings.HasSuffix(l.Text, "(") {
			return p.errf(l.Num, "`(` after the class name `"+h.Class+"`", "end of line")
		}
		if err := p.custom(l, n, h); err != nil {
			return err
		}
	}
	if h.Count > 0 {
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
func (p *dumpParser) custom(l scan.Line, n *Node, h scan.Child) error {
	bal := scan.Balance(h.Body) + 1
	extra := []string{h.Body}
	var inner []string
	start := l.Num
	for bal > 0 {
		p.sc.Pos++
		if p.sc.Pos >= p.sc.Len() {
			return p.errf(start, "the `)` that closes `"+h.Class+"(` by balance", "end of input")
		}
		nl, ok := p.sc.Line(p.sc.Pos, true)
		if !ok {
			continue
		}
		bal += scan.Balance(nl.Text)
		t := nl.Text
		if bal == 0 && strings.HasSuffix(t, ")") {
			t = t[:len(t)-1]
		}
		if d := nl.Indent - l.Indent; d > 0 && !nl.Marker { // keep the layout relative to the header
			t = strings.Repeat(" ", d) + t
		}
		extra = append(extra, t)
		if ch, ok := scan.ParseChild(nl.Text); ok {
			inner = append(inner, ch.Key)
		}
	}
	n.Extra, n.Custom = extra, true
	for _, e := range extra {
		n.Fields = append(n.Fields, splitFields(e)...)
	}
	if p.full(start) {
		return nil
	}
	msg := fmt.Sprintf("%s prints a custom repr over lines %d-%d, with module reprs inside its arguments; it is kept as one leaf", describe(n), start, p.sc.Pos+1)
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
	size, paths := 0, 0
	n.Walk(func(m *Node) bool { size++; paths += len(m.Path); return true })
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
		// a member's paths are the first's with another name at n's level
		if err := p.budget(r.Line, 0, paths+size*(len(name)-len(n.Name)), parent); err != nil {
			return err
		}
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
	for k := p.end + 1; k < p.sc.Len() && k <= p.end+3; k++ {
		l, ok := p.sc.Line(k, false)
		if !ok {
			continue
		}
		_, isChild := scan.ParseChild(l.Text)
		if l.Text[0] == '(' && isChild || l.Text == ")" || l.Text == ")]" {
			root := p.tree.Root
			if p.h.List {
				root = root.Children[len(root.Children)-1]
			}
			return nil, p.errf(l.Num, fmt.Sprintf("the end of the dump after line %d closed %s (an opening line missing?)", p.end+1, describe(root)), "`"+scan.Clip(l.Text)+"`")
		}
		break
	}
	if p.mismatches > 0 {
		m := p.mis
		p.always(m.line, "indentation is not 2 spaces per level (here column %d, expected %d; %d such lines); the structure was read from the parentheses", m.got, m.want, p.mismatches)
	}
	p.finalWarnings()
	return p.tree, nil
}
func (p *dumpParser) finalWarnings() {
	if p.dropped > 0 {
		p.tree.Warnings = append(p.tree.Warnings, Warning{Line: p.firstDropped,
			Msg: fmt.Sprintf("%d more warnings from here on were left out (the first %d are shown)", p.dropped, maxWarnings)})
	}
	if p.sc.Blank > 0 {
		p.always(p.sc.FirstBlank, "ignored %d blank lines inside the dump (PyTorch prints none)", p.sc.Blank)
	}
	if p.sc.Skipped > 0 {
		p.always(p.sc.FirstSkip, "skipped %d lines inside the dump that lack its `%s` prefix", p.sc.Skipped, strings.TrimSpace(p.h.Prefix))
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
// input when stop.Num is 0) with nodes still open.
func (p *dumpParser) finishOpen(stop scan.Line) (*Tree, error) {
	last := p.h.Line
	endAt := p.sc.Len()
	if stop.Num > 0 {
		endAt = stop.Num - 1
	}
	for k := endAt - 1; k > p.h.Line; k-- {
		if _, ok := p.sc.Line(k, false); ok {
			last = k
			break
		}
	}
	p.end = last
	found := "end of input"
	if stop.Num > 0 {
		found = "`" + scan.Clip(stop.Text) + "` (line " + strconv.Itoa(stop.Num) + ")"
	}
	if p.mismatches > 0 {
		m := p.mis
		if m.dedent && p.consistent >= 3 {
			return nil, p.errf(m.line, m.expected+" at column "+strconv.Itoa(m.want)+" (lines missing from the dump?)", m.found+" at column "+strconv.Itoa(m.got))
		}
		top := p.top()
		return nil, p.errf(last+1, "`)` closing "+describe(top.n)+" from line "+strconv.Itoa(top.n.Line), found)
	}
	open := 0 // open modules (the synthetic root of a list aside)
	for _, f := range p.stack {
		if f.depth >= 0 {
			open++
		}
	}
	if open > 1 {
		// More than the final ")" is missing: the dump was cut off and
		// whatever followed (more children, more layers) is unknown.
		top := p.top()
		at := last + 1
		if stop.Num > 0 {
			at = stop.Num
		}
		return nil, p.errf(at, fmt.Sprintf("`)` closing %s from line %d (the dump is cut off with %d modules open)", describe(top.n), top.n.Line, open), found)
	}
	last1 := p.top().n // the one module open
	for len(p.stack) > 0 {
		if err := p.pop(); err != nil {
			return nil, err
		}
	}
	what := "the input ends"
	if stop.Num > 0 {
		what = "the dump stops (line " + strconv.Itoa(stop.Num) + " is not part of it)"
	}
	closer := "`)`"
	if p.h.List {
		closer = "`)]`"
	}
	p.always(last+1, "%s without the closing %s of %s from line %d; assumed it ends at line %d", what, closer, describe(last1), last1.Line, last+1)
	p.finalWarnings()
	return p.tree, nil
}
