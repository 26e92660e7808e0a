package printparse

import (
	"bufio"
	"encoding/json"
	"io"
	"strconv"
	"strings"
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

// String returns the tree in print(model) form (see Render).
func (t *Tree) String() string {
	var b strings.Builder
	Render(&b, t, RenderOptions{})
	return b.String()
}

type jsonTree struct {
	Source   string        `json:"source"`
	Kind     string        `json:"kind"`
	Line     int           `json:"line,omitempty"`
	List     bool          `json:"list"`
	Warnings []jsonWarning `json:"warnings"`
	Root     *jsonNode     `json:"root"`
}

type jsonWarning struct {
	Line int    `json:"line"`
	Msg  string `json:"msg"`
}

type jsonField struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

type jsonRepeat struct {
	First int `json:"first"`
	Last  int `json:"last"`
	Count int `json:"count"`
	Line  int `json:"line"`
}

type jsonElision struct {
	Line   int    `json:"line"`
	Text   string `json:"text"`
	Before int    `json:"before"`
}

type jsonNode struct {
	Name     string        `json:"name"`
	Path     string        `json:"path"`
	Class    string        `json:"class"`
	Kind     string        `json:"kind"`
	Line     int           `json:"line"`
	Extra    []string      `json:"extra,omitempty"`
	Fields   []jsonField   `json:"fields,omitempty"`
	Dims     []int         `json:"dims,omitempty"`
	Repeat   *jsonRepeat   `json:"repeat,omitempty"`
	None     bool          `json:"none,omitempty"`
	Elided   bool          `json:"elided,omitempty"`
	Elisions []jsonElision `json:"elisions,omitempty"`
	Children []*jsonNode   `json:"children"`
}

func toJSON(n *Node) *jsonNode {
	j := &jsonNode{Name: n.Name, Path: n.Path, Class: n.Class, Kind: n.Kind(), Line: n.Line,
		Extra: n.Extra, Dims: n.Dims(), None: n.None, Elided: n.IsElided(), Children: []*jsonNode{}}
	for _, f := range n.Fields {
		j.Fields = append(j.Fields, jsonField(f))
	}
	if n.Repeat != nil {
		j.Repeat = &jsonRepeat{First: n.Repeat.First, Last: n.Repeat.Last, Count: n.Repeat.Count, Line: n.Repeat.Line}
	}
	for _, e := range n.Elisions {
		j.Elisions = append(j.Elisions, jsonElision(e))
	}
	for _, c := range n.Children {
		j.Children = append(j.Children, toJSON(c))
	}
	return j
}

// WriteJSON writes the tree as indented JSON with every node field
// (name, path, class, kind, line, extra, fields, dims, repeat, children)
// and the warnings, every repeat member listed.
func WriteJSON(w io.Writer, t *Tree) error {
	jt := jsonTree{Source: t.Source, Kind: t.Kind, Line: t.Line, List: t.List, Warnings: []jsonWarning{}}
	for _, x := range t.Warnings {
		jt.Warnings = append(jt.Warnings, jsonWarning(x))
	}
	if t.Root != nil {
		jt.Root = toJSON(t.Root)
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := json.NewEncoder(bw)
	enc.SetIndent("", " ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(jt); err != nil {
		return err
	}
	return bw.Flush()
}
