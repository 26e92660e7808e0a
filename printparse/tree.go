// Package printparse reads model structure dumps — PyTorch print(model)
// text and msprobe dump folders — into one module tree.
package printparse

import (
	"strings"

	"github.com/layermap/layermap/printparse/scan"
)

// Source kinds of a Tree.
const (
	KindPrint   = "print"   // PyTorch print(model) / nn.Module.__repr__ text
	KindMsprobe = "msprobe" // msprobe dump folder (construct.json + dump.json)
)

// Tree is one parsed model structure.
type Tree struct {
	// Source is the file or folder the tree was read from, as given.
	Source string
	// Kind is KindPrint or KindMsprobe.
	Kind string
	// Root is the model passed to msprobe's debugger. Its Name and Path are
	// empty; msprobe's TopLayer rules apply to its children. When the dump
	// was a Python list of models ([DDP(...), ...]) Root is synthetic: its
	// Class is empty, List is true and its children are named "0", "1", ....
	// For msprobe dump folders Root is always synthetic (Class empty).
	Root *Node
	// List reports that the printed dump was a Python list of models.
	List bool
	// Line is the 1-based line of Source where a print(model) dump starts
	// (0 for msprobe folders).
	Line int
	// Warnings lists every repair made while reading a lenient input.
	Warnings []Warning
}

// Warning is one repair the parser made, with the line it concerns.
type Warning struct {
	Line int    // 1-based line in Source, 0 when not tied to a line
	Msg  string // what was assumed
}

// Node is one module.
type Node struct {
	// Name is the path segment: attribute name, list index or ModuleDict
	// key. Empty for the root.
	Name string
	// Path is the dotted path from the root as msprobe names modules
	// ("0.module.decoder.layers.3"); empty for the root.
	Path string
	// Class is the class name as printed ("Qwen2DecoderLayer").
	Class string
	// Extra holds the extra_repr lines as printed, without indentation. A
	// one-line leaf "Linear(in_features=8, out_features=16, bias=True)" has
	// one line "in_features=8, out_features=16, bias=True".
	Extra []string
	// Fields is Extra split into top-level comma-separated fields.
	// Nodes may share their Extra and Fields slices (members of a repeat
	// group, identical leaves): treat them as read-only.
	Fields []Field
	// Children in printed (registration) order.
	Children []*Node
	// Parent is nil for the root.
	Parent *Node
	// Repeat is the repeat group ("(0-27): 28 x Cls(") this node was
	// expanded from; nil when the node was printed on its own. All members
	// of one group share the same *Repeat.
	Repeat *Repeat
	// Line is the 1-based source line where the node starts (0 if unknown).
	Line int
	// None marks a child registered as None, printed "(name): None". It is
	// not a module: msprobe never names it. Its Class is "None".
	None bool
	// Custom marks a leaf whose repr is not nn.Module.__repr__'s and spans
	// lines (module reprs nested in its arguments, as torchode's
	// AutoDiffAdjoint prints). Extra holds its text lines, the first after
	// "Class(", the others with their indentation relative to the node's
	// line, the last without the closing ")".
	Custom bool
	// Params are the module's own parameters with their shapes, as an
	// msprobe dump records them in the first forward call ("weight"
	// [out, in] for a Linear). A dump holds one rank, so tensor-parallel
	// layers show their shard. nil for print(model) trees, which print
	// shapes only through Extra.
	Params []Param
	// Elisions lists the lines an author put in place of omitted text
	// ("...", "...omitted") inside this node's body, in printed order.
	// A node with elisions, or a one-line "Class(...)", has an incomplete
	// subtree; see IsElided.
	Elisions []Elision
}

// Param is one parameter of a module in an msprobe dump.
type Param struct {
	Name  string // "weight", "bias", ...
	Shape []int
}

// ParamShape returns the shape of the parameter called name ("weight"),
// or nil.
func (n *Node) ParamShape(name string) []int {
	for _, p := range n.Params {
		if p.Name == name {
			return p.Shape
		}
	}
	return nil
}

// Elision is a "..." line that stands for lines left out of a dump.
type Elision struct {
	Line   int    // 1-based source line
	Text   string // the line as printed, without indentation ("...")
	Before int    // number of the node's children printed before it
}

// IsElided reports whether part of the node's body was left out of the
// dump by its author: a "..." line inside it, or a one-line "Class(...)".
func (n *Node) IsElided() bool {
	return len(n.Elisions) > 0 || (len(n.Children) == 0 && len(n.Extra) == 1 && scan.IsEllipsis(n.Extra[0]))
}

// Field is one top-level field of an extra_repr: "in_features=8" gives
// Key "in_features", Value "8"; a positional "(3584,)" gives Key "".
type Field struct {
	Key   string
	Value string
}

// Repeat describes a run of identical ModuleList children that PyTorch
// printed once as "(First-Last): Count x Class(".
type Repeat struct {
	First, Last int // first and last index, inclusive
	Count       int // Last-First+1
	Line        int // line of the group header
}

// Walk calls fn for n and every descendant, parents before children, in
// printed order. It stops descending below a node for which fn returns false.
func (n *Node) Walk(fn func(*Node) bool) {
	if !fn(n) {
		return
	}
	for _, c := range n.Children {
		c.Walk(fn)
	}
}

// Child returns the direct child called name, or nil.
func (n *Node) Child(name string) *Node {
	for _, c := range n.Children {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// Lookup returns the descendant at the dotted path relative to n ("" is n
// itself), or nil when there is none.
func (n *Node) Lookup(path string) *Node { return (*ChildIndex)(nil).Lookup(n, path) }

// LookupSegs returns the descendant of n at the path of segments segs (n
// itself for none), or nil when there is none.
func (n *Node) LookupSegs(segs []string) *Node { return (*ChildIndex)(nil).LookupSegs(n, segs) }

// ChildIndex finds children by name through a map for the children of
// wide nodes: Node.Child scans the list, so looking up every layer of a
// list of 24k layers in turn is quadratic. The zero value is ready; a nil
// *ChildIndex scans.
type ChildIndex struct {
	wide map[*Node]map[string]*Node
}

// wideNode is the number of children above which a node is indexed.
const wideNode = 16

// Child returns n.Child(name).
func (x *ChildIndex) Child(n *Node, name string) *Node {
	if x == nil || len(n.Children) <= wideNode {
		return n.Child(name)
	}
	idx := x.wide[n]
	if idx == nil {
		idx = make(map[string]*Node, len(n.Children))
		for _, c := range n.Children {
			if _, ok := idx[c.Name]; !ok { // the first, as Child finds it
				idx[c.Name] = c
			}
		}
		if x.wide == nil {
			x.wide = map[*Node]map[string]*Node{}
		}
		x.wide[n] = idx
	}
	return idx[name]
}

// LookupSegs returns n.LookupSegs(segs); nil for a nil n.
func (x *ChildIndex) LookupSegs(n *Node, segs []string) *Node {
	for _, s := range segs {
		if n == nil {
			return nil
		}
		n = x.Child(n, s)
	}
	return n
}

// Lookup returns n.Lookup(path).
func (x *ChildIndex) Lookup(n *Node, path string) *Node {
	cur := n
	for path != "" && cur != nil {
		seg, rest, dot := strings.Cut(path, ".")
		if dot && rest == "" {
			return nil // a trailing dot names nothing
		}
		path = rest
		cur = x.Child(cur, seg)
	}
	return cur
}

// Depth is the number of levels below the root (the root has depth 0).
func (n *Node) Depth() int {
	d := 0
	for p := n.Parent; p != nil; p = p.Parent {
		d++
	}
	return d
}

// IsLeaf reports whether the node has no children.
func (n *Node) IsLeaf() bool { return len(n.Children) == 0 }

// Lookup returns the node at the dotted path from the root, or nil.
func (t *Tree) Lookup(path string) *Node { return t.Root.Lookup(path) }

// Walk visits every node of the tree, root first.
func (t *Tree) Walk(fn func(*Node) bool) { t.Root.Walk(fn) }
