package printparse

import (
	"bufio"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// RenderOptions controls Render.
type RenderOptions struct {
	// Expand prints every member of a repeat group as its own "(i): ..."
	// line instead of PyTorch's "(a-b): n x ..." form.
	Expand bool
	// Depth limits the levels printed below the root (0 = unlimited); a
	// node at the limit that has children prints as "Class(...)". The
	// models of a list count as roots.
	Depth int
}

// Render writes the tree in print(model) form, repeat groups collapsed as
// PyTorch prints them, so that a clean print(model) input comes back line
// for line, without the log noise around it. Classes that are unknown (an
// msprobe path no entry names) print as "?".
func Render(w io.Writer, t *Tree, o RenderOptions) error {
	r := renderer{w: bufio.NewWriterSize(w, 64<<10), o: o}
	if t.List {
		r.w.WriteByte('[')
		for i, c := range t.Root.Children {
			if i > 0 {
				r.w.WriteString(", ")
			}
			r.repr(c, 0, 0)
		}
		r.w.WriteString("]\n")
	} else {
		r.repr(t.Root, 0, 0)
		r.w.WriteByte('\n')
	}
	return r.w.Flush()
}

type renderer struct {
	w *bufio.Writer
	o RenderOptions
}

const spaces = "                                                                "

func (r *renderer) indent(n int) {
	for n > len(spaces) {
		r.w.WriteString(spaces)
		n -= len(spaces)
	}
	r.w.WriteString(spaces[:n])
}

// repr writes n's repr; its first line continues the current line.
func (r *renderer) repr(n *Node, ind, depth int) {
	if n.None {
		r.w.WriteString("None")
		return
	}
	if n.Class == "" {
		r.w.WriteByte('?')
	} else {
		r.w.WriteString(n.Class)
	}
	if n.Custom && len(n.Children) == 0 {
		r.w.WriteByte('(')
		for i, e := range n.Extra {
			if i > 0 {
				r.w.WriteByte('\n')
				r.indent(ind)
			}
			r.w.WriteString(e)
		}
		r.w.WriteByte(')')
		return
	}
	if len(n.Children) == 0 && len(n.Elisions) == 0 && len(n.Extra) <= 1 {
		r.w.WriteByte('(')
		if len(n.Extra) == 1 {
			r.w.WriteString(n.Extra[0])
		}
		r.w.WriteByte(')')
		return
	}
	if r.o.Depth > 0 && depth >= r.o.Depth {
		r.w.WriteString("(...)")
		return
	}
	r.w.WriteString("(\n")
	for _, e := range n.Extra {
		r.indent(ind + 2)
		r.w.WriteString(e)
		r.w.WriteByte('\n')
	}
	ei := 0
	for i := 0; i < len(n.Children); {
		for ; ei < len(n.Elisions) && n.Elisions[ei].Before <= i; ei++ {
			r.indent(ind + 2)
			r.w.WriteString(n.Elisions[ei].Text)
			r.w.WriteByte('\n')
		}
		c := n.Children[i]
		r.indent(ind + 2)
		r.w.WriteByte('(')
		j := i + 1
		if c.Repeat != nil && !r.o.Expand {
			for j < len(n.Children) && n.Children[j].Repeat == c.Repeat {
				j++
			}
			r.w.WriteString(c.Name)
			r.w.WriteByte('-')
			r.w.WriteString(n.Children[j-1].Name)
			r.w.WriteString("): ")
			r.w.WriteString(strconv.Itoa(j - i))
			r.w.WriteString(" x ")
		} else {
			r.w.WriteString(c.Name)
			r.w.WriteString("): ")
		}
		r.repr(c, ind+2, depth+1)
		r.w.WriteByte('\n')
		i = j
	}
	for ; ei < len(n.Elisions); ei++ {
		r.indent(ind + 2)
		r.w.WriteString(n.Elisions[ei].Text)
		r.w.WriteByte('\n')
	}
	r.indent(ind)
	r.w.WriteByte(')')
}

// WriteWarnings writes the tree's warnings one per line, as
// "source:line: warning: msg" ("source: warning: msg" when no line).
func (t *Tree) WriteWarnings(w io.Writer) error {
	bw := bufio.NewWriter(w)
	for _, x := range t.Warnings {
		bw.WriteString(t.Source)
		if x.Line > 0 {
			bw.WriteByte(':')
			bw.WriteString(strconv.Itoa(x.Line))
		}
		bw.WriteString(": warning: ")
		bw.WriteString(x.Msg)
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// String returns the tree in print(model) form (see Render).
func (t *Tree) String() string {
	var b strings.Builder
	Render(&b, t, RenderOptions{})
	return b.String()
}

// WriteJSON writes the tree as indented JSON with every node field (name,
// path, class, kind, line, extra, fields, dims, repeat, none, custom,
// params, elided, elisions, children), every repeat member listed, and the
// warnings. It streams: memory stays flat on trees of millions of nodes.
func WriteJSON(w io.Writer, t *Tree) error {
	j := &jsonWriter{w: bufio.NewWriterSize(w, 64<<10)}
	j.begin('{')
	j.key("source")
	j.str(t.Source)
	j.key("kind")
	j.str(t.Kind)
	if t.Line != 0 {
		j.key("line")
		j.int(t.Line)
	}
	j.key("list")
	j.bool(t.List)
	j.key("warnings")
	j.begin('[')
	for _, x := range t.Warnings {
		j.elem()
		j.begin('{')
		j.key("line")
		j.int(x.Line)
		j.key("msg")
		j.str(x.Msg)
		j.end('}')
	}
	j.end(']')
	j.key("root")
	if t.Root == nil {
		j.w.WriteString("null")
	} else {
		j.node(t.Root)
	}
	j.end('}')
	j.w.WriteByte('\n')
	return j.w.Flush()
}

// jsonWriter writes JSON laid out as encoding/json's Indent with a
// one-space indent.
type jsonWriter struct {
	w     *bufio.Writer
	first []bool // per open object/array: no member written yet
	buf   []byte
}

func (j *jsonWriter) newline() {
	j.w.WriteByte('\n')
	for range j.first {
		j.w.WriteByte(' ')
	}
}

// elem starts an array element or object member.
func (j *jsonWriter) elem() {
	k := len(j.first) - 1
	if !j.first[k] {
		j.w.WriteByte(',')
	}
	j.first[k] = false
	j.newline()
}

func (j *jsonWriter) begin(c byte) {
	j.w.WriteByte(c)
	j.first = append(j.first, true)
}

func (j *jsonWriter) end(c byte) {
	empty := j.first[len(j.first)-1]
	j.first = j.first[:len(j.first)-1]
	if !empty {
		j.newline()
	}
	j.w.WriteByte(c)
}

func (j *jsonWriter) key(k string) {
	j.elem()
	j.str(k)
	j.w.WriteString(": ")
}

func (j *jsonWriter) int(n int) {
	j.buf = strconv.AppendInt(j.buf[:0], int64(n), 10)
	j.w.Write(j.buf)
}

// ints writes xs as a JSON array.
func (j *jsonWriter) ints(xs []int) {
	j.begin('[')
	for _, x := range xs {
		j.elem()
		j.int(x)
	}
	j.end(']')
}

func (j *jsonWriter) bool(b bool) {
	if b {
		j.w.WriteString("true")
	} else {
		j.w.WriteString("false")
	}
}

const hexDigits = "0123456789abcdef"

// str writes s as a JSON string, escaped as encoding/json escapes it
// (without HTML escaping); invalid UTF-8 becomes U+FFFD.
func (j *jsonWriter) str(s string) {
	w := j.w
	w.WriteByte('"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			w.WriteString(s[start:i])
			switch c {
			case '"', '\\':
				w.WriteByte('\\')
				w.WriteByte(c)
			case '\n':
				w.WriteString(`\n`)
			case '\r':
				w.WriteString(`\r`)
			case '\t':
				w.WriteString(`\t`)
			case '\b':
				w.WriteString(`\b`)
			case '\f':
				w.WriteString(`\f`)
			default:
				w.WriteString(`\u00`)
				w.WriteByte(hexDigits[c>>4])
				w.WriteByte(hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			w.WriteString(s[start:i])
			w.WriteString(`\ufffd`)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			w.WriteString(s[start:i])
			w.WriteString(`\u202`)
			w.WriteByte(hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	w.WriteString(s[start:])
	w.WriteByte('"')
}

func (j *jsonWriter) node(n *Node) {
	j.begin('{')
	j.key("name")
	j.str(n.Name)
	j.key("path")
	j.str(n.Path)
	j.key("class")
	j.str(n.Class)
	j.key("kind")
	j.str(n.Kind())
	j.key("line")
	j.int(n.Line)
	if len(n.Extra) > 0 {
		j.key("extra")
		j.begin('[')
		for _, e := range n.Extra {
			j.elem()
			j.str(e)
		}
		j.end(']')
	}
	if len(n.Fields) > 0 {
		j.key("fields")
		j.begin('[')
		for _, f := range n.Fields {
			j.elem()
			j.begin('{')
			j.key("key")
			j.str(f.Key)
			j.key("value")
			j.str(f.Value)
			j.end('}')
		}
		j.end(']')
	}
	if d := n.Dims(); len(d) > 0 {
		j.key("dims")
		j.ints(d)
	}
	if r := n.Repeat; r != nil {
		j.key("repeat")
		j.begin('{')
		j.key("first")
		j.int(r.First)
		j.key("last")
		j.int(r.Last)
		j.key("count")
		j.int(r.Count)
		j.key("line")
		j.int(r.Line)
		j.end('}')
	}
	if n.None {
		j.key("none")
		j.bool(true)
	}
	if n.Custom {
		j.key("custom")
		j.bool(true)
	}
	if len(n.Params) > 0 {
		j.key("params")
		j.begin('[')
		for _, p := range n.Params {
			j.elem()
			j.begin('{')
			j.key("name")
			j.str(p.Name)
			j.key("shape")
			j.ints(p.Shape)
			j.end('}')
		}
		j.end(']')
	}
	if n.IsElided() {
		j.key("elided")
		j.bool(true)
	}
	if len(n.Elisions) > 0 {
		j.key("elisions")
		j.begin('[')
		for _, e := range n.Elisions {
			j.elem()
			j.begin('{')
			j.key("line")
			j.int(e.Line)
			j.key("text")
			j.str(e.Text)
			j.key("before")
			j.int(e.Before)
			j.end('}')
		}
		j.end(']')
	}
	j.key("children")
	j.begin('[')
	for _, c := range n.Children {
		j.elem()
		j.node(c)
	}
	j.end(']')
	j.end('}')
}
