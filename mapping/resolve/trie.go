package resolve

import (
	"strings"
	"unsafe"

	"github.com/layermap/layermap/mapping"
	"github.com/layermap/layermap/printparse"
	"github.com/layermap/layermap/printparse/msprobe"
)

// Item states as msprobe names them.
const (
	StateForward    = "forward"
	StateBackward   = "backward"
	StateParamsGrad = "parameters_grad"
)

// Item is one entry placed in a scope trie: a dump.json entry, or a module
// node of a structure tree.
type Item struct {
	// Name is the dump.json key ("Module.module.visual.Qwen2_5_...forward.0",
	// "Tensor.add.0.forward"), or the node path for tree items.
	Name string
	// State is "forward", "backward" or "parameters_grad".
	State string
	// Type is msprobe's type_name: the class for modules, the API name for
	// APIs ("add"), the class for parameter gradients.
	Type string
	// FullScope is msprobe's full_scope ("Module.module.visual.blocks.0",
	// "Module.module.visual.__add__", "TopLayer.__add__"). Its first segment
	// (Cell, Module, TopLayer) is not part of the trie path.
	FullScope string
	// Node is the tree node for tree items, nil for dump items.
	Node *printparse.Node

	ord  int       // position among the same-state items of its node
	node *TrieNode // set when the item is inserted
}

// Scope returns the trie path of the item: FullScope without its first
// segment. The slice is shared: do not modify it.
func (it *Item) Scope() []string {
	if it.node != nil && it.node.scope != nil {
		return it.node.scope
	}
	segs := strings.Split(it.FullScope, ".")
	return segs[1:]
}

// Trie is msprobe's LayerTrie: a scope trie of one side.
type Trie struct {
	Root *TrieNode
	// Source names what the trie was built from.
	Source string

	items []*Item    // in insertion order; nil for a dump trie
	dump  *dumpItems // a dump trie's items (see trieOfDump)
}

// TrieNode is one scope segment.
type TrieNode struct {
	// Segment is the path segment (empty for the root).
	Segment string
	// Type is the type name of the last item ending at this node; otherwise
	// the segment text. The root is TopLayer.
	Type string
	// Typed reports that some item ends at this node (Type is a real type
	// name, not the segment text).
	Typed    bool
	Parent   *TrieNode
	Children []*TrieNode // in creation order
	children map[string]*TrieNode
	items    []stateItems // by state, in order of first insertion (see ItemsOf)

	depth int      // segments below the root
	trie  *Trie    // the trie the node belongs to
	scope []string // the path, once an item is inserted here: their Scope
}

// NewTrie returns a trie with only its TopLayer root.
func NewTrie(source string) *Trie {
	t := &Trie{Root: newTrieNode("", mapping.TopLayer, nil), Source: source}
	t.Root.trie = t
	return t
}

func newTrieNode(seg, typ string, parent *TrieNode) *TrieNode {
	n := &TrieNode{Segment: seg, Type: typ, Parent: parent}
	if parent != nil {
		n.depth, n.trie = parent.depth+1, parent.trie
	}
	return n
}

// Child returns the child called seg, or nil.
func (n *TrieNode) Child(seg string) *TrieNode {
	if n == nil {
		return nil
	}
	return n.children[seg]
}

// Path returns the dotted path of the node from the root.
func (n *TrieNode) Path() string {
	var segs []string
	for p := n; p != nil && p.Parent != nil; p = p.Parent {
		segs = append(segs, p.Segment)
	}
	for i, j := 0, len(segs)-1; i < j; i, j = i+1, j-1 {
		segs[i], segs[j] = segs[j], segs[i]
	}
	return strings.Join(segs, ".")
}

// Walk visits n and its descendants, parents first, in creation order.
func (n *TrieNode) Walk(fn func(*TrieNode)) {
	fn(n)
	for _, c := range n.Children {
		c.Walk(fn)
	}
}

// Insert adds it at its scope, creating nodes as needed, and sets the end
// node's type to the item's type (msprobe LayerTrie.insert).
func (t *Trie) Insert(it *Item) *TrieNode {
	n := t.Root
	scope := it.Scope()
	for _, seg := range scope {
		n = n.child(seg)
	}
	if n.scope == nil {
		n.scope = scope
	}
	t.add(n, it)
	return n
}

// child returns the child seg of n, creating it.
func (n *TrieNode) child(seg string) *TrieNode {
	c := n.children[seg]
	if c == nil {
		c = newTrieNode(seg, seg, n)
		if n.children == nil {
			n.children = map[string]*TrieNode{}
		}
		n.children[seg] = c
		n.Children = append(n.Children, c)
	}
	return c
}

// stateItems are a node's items of one state: their positions in the
// trie's insertion order, in that order.
type stateItems struct {
	state string
	pos   []int32
}

// ItemsOf returns the node's items of a state, in insertion order (nil
// when none). A dump trie's items are made on each call (see Trie.Item).
func (n *TrieNode) ItemsOf(state string) []*Item {
	k := n.stateAt(state)
	if k < 0 {
		return nil
	}
	out := make([]*Item, len(n.items[k].pos))
	for i, p := range n.items[k].pos {
		out[i] = n.trie.Item(int(p))
	}
	return out
}

// Len is the number of items in the trie.
func (t *Trie) Len() int {
	if t.dump != nil {
		return len(t.dump.entries)
	}
	return len(t.items)
}

// Item returns the i-th item in insertion order. A dump trie keeps its
// items in a compact form and makes a new Item on each call.
func (t *Trie) Item(i int) *Item {
	if t.dump != nil {
		return t.dump.item(i)
	}
	return t.items[i]
}

// itemIn is Item(i) in *it, made of buf (returned, to be used again):
// it is valid until the next call with buf.
func (t *Trie) itemIn(it *Item, i int, buf []byte) []byte {
	if t.dump == nil {
		*it = *t.items[i]
		return buf
	}
	buf = t.dump.names.Append(buf[:0], i)
	t.dump.fill(it, i, unsafe.String(unsafe.SliceData(buf), len(buf)))
	return buf
}

// Items returns the trie's items in insertion order (see Item); for a
// trie not of a dump the slice is the trie's own: do not modify it.
func (t *Trie) Items() []*Item {
	if t.dump == nil {
		return t.items
	}
	out := make([]*Item, t.Len())
	for i := range out {
		out[i] = t.Item(i)
	}
	return out
}

// release frees a dump trie's items: it is only its names afterwards
// (names, nameAt).
func (t *Trie) release() {
	if d := t.dump; d != nil {
		d.free()
		d.entries = nil
	}
}

// names is a dump trie's item names, in order (nil for another trie).
func (t *Trie) names() *msprobe.Names {
	if t.dump == nil {
		return nil
	}
	return t.dump.names
}

// at is the i-th item's node, state and ordinal, without making it.
func (t *Trie) at(i int) (node *TrieNode, state string, ord int) {
	if d := t.dump; d != nil {
		e := d.entries[i]
		return d.nodes[e.scope], d.states[e.state], int(e.ord)
	}
	it := t.items[i]
	return it.node, it.State, it.ord
}

// nameAt is the i-th item's name.
func (t *Trie) nameAt(i int) string {
	if d := t.dump; d != nil {
		return d.names.At(i)
	}
	return t.items[i].Name
}

// stateAt is where the node keeps its items of a state, or -1. A node has
// items of a few states at most.
func (n *TrieNode) stateAt(state string) int {
	for k := range n.items {
		if n.items[k].state == state {
			return k
		}
	}
	return -1
}

func (t *Trie) add(n *TrieNode, it *Item) {
	it.ord, it.node = n.place(it.State, len(t.items)), n
	n.Type = it.Type
	n.Typed = true
	t.items = append(t.items, it)
}

// place records the item at position pos of the trie among the node's
// items of its state and returns its ordinal there.
func (n *TrieNode) place(state string, pos int) int {
	k := n.stateAt(state)
	if k < 0 {
		k = len(n.items)
		n.items = append(n.items, stateItems{state: state})
	}
	s := &n.items[k]
	s.pos = append(s.pos, int32(pos))
	return len(s.pos) - 1
}

// Lookup returns the node at path (segments below the root), or nil.
func (t *Trie) Lookup(path []string) *TrieNode {
	n := t.Root
	for _, seg := range path {
		if n = n.Child(seg); n == nil {
			return nil
		}
	}
	return n
}

// Query returns the item at path with the given state and ordinal, or nil
// (msprobe LayerTrie.query_data).
func (t *Trie) Query(path []string, state string, index int) *Item {
	return t.Lookup(path).item(state, index)
}

// item returns the node's item of the given state and ordinal, or nil
// (also for a nil node).
func (n *TrieNode) item(state string, index int) *Item {
	if p := n.posOf(state, index); p >= 0 {
		return n.trie.Item(p)
	}
	return nil
}

// posOf is the trie position of the node's item of the given state and
// ordinal, or -1 (also for a nil node).
func (n *TrieNode) posOf(state string, index int) int {
	if n == nil || index < 0 {
		return -1
	}
	if k := n.stateAt(state); k >= 0 && index < len(n.items[k].pos) {
		return int(n.items[k].pos[index])
	}
	return -1
}

// untypedContainers are module classes msprobe never sees in a dump: they
// have no forward, so no dump entry ends at them and their trie node keeps
// the segment text as its type.
var untypedContainers = map[string]bool{
	"ModuleList":    true,
	"ModuleDict":    true,
	"ParameterList": true,
	"ParameterDict": true,
}

// TrieFromTree builds the trie msprobe would build from a dump of the model
// the tree describes, with one forward item per module node (Name = node
// path, Type = class). The root is TopLayer whatever its class. Nodes
// without a dump entry (see HasDumpEntry: ModuleList and the like in print
// trees, classless nodes of msprobe folder trees) keep their segment text
// as type.
func TrieFromTree(t *printparse.Tree) *Trie {
	tr := NewTrie(t.Source)
	if t.Root == nil {
		return tr
	}
	// Items keep no scope of their own (Scope splits FullScope when asked):
	// a copy per node would cost depth squared on a deep tree.
	var walk func(n *printparse.Node, tn *TrieNode)
	walk = func(n *printparse.Node, tn *TrieNode) {
		for _, ch := range n.Children {
			if ch.None {
				continue
			}
			typ := ch.Class
			untyped := !HasDumpEntry(t, ch)
			if untyped {
				typ = ch.Name
			}
			ctn := tn.child(ch.Name)
			tr.add(ctn, &Item{Name: ch.Path, State: StateForward, Type: typ, FullScope: mapping.TopLayer + "." + ch.Path, Node: ch})
			if untyped {
				ctn.Typed = false
			}
			walk(ch, ctn)
		}
	}
	walk(t.Root, tr.Root)
	return tr
}

// NeverDumped reports whether msprobe never dumps modules of this class
// (containers without forward, such as ModuleList): their trie nodes keep
// the segment text as type, and they have no dump entry to pair.
func NeverDumped(class string) bool { return untypedContainers[class] }

// HasDumpEntry reports whether msprobe would have a dump entry for the
// module node n of tree t. For a print(model) tree: any module except the
// root, the models of a printed list ("[DDP(...)]": each is a root msprobe
// hooks below, like the root of a single model), None children and
// containers without forward (NeverDumped). For an msprobe folder tree: a
// node with a class (a node known only as a path segment has none).
func HasDumpEntry(t *printparse.Tree, n *printparse.Node) bool {
	if n == nil || n.Parent == nil || n.None || n.Class == "" {
		return false
	}
	if t != nil && t.Kind == printparse.KindMsprobe {
		return true
	}
	if t != nil && t.List && n.Parent == t.Root {
		return false
	}
	return !NeverDumped(n.Class)
}
