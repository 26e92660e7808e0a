package infer

import (
	"strconv"
	"strings"

	"github.com/layermap/layermap/mapping/resolve"
	"github.com/layermap/layermap/printparse"
)

// info is what the scorer knows about one module.
type info struct {
	node  *printparse.Node
	canon *printparse.Node // the first of the list members it stands for (see indexTree)
	name  []string
	class []string
	kind  string
	dims  []int
	nkids int
	// nmajor counts the children that decide structure (see decides).
	nmajor int
	// repeat is the count of its children's repeat group (or of its
	// children when all are list members), 0 if none.
	repeat  int
	numeric bool // name is a list index
	wrapper bool
	// wraps marks a module with one child that is a module with children
	// of its own, not a list: a wrapper of that module whatever its class
	// (PEFT's PeftModel and LoraModel, a ForCausalLM holding only its base
	// model, a framework's training module).
	wraps bool
	// adapter marks a module that adapts the module it holds as
	// base_layer (PEFT's lora.Linear, lora.Embedding: base_layer(x) plus
	// the adapter's update). It is aligned as that module, a leaf: what it
	// holds is the adapter's inside.
	adapter bool
	// member marks a list member that has siblings of the same structure
	// (a repeat group, printed as one or written out): it is aligned
	// through its canonical member and never looked through.
	member bool
	// copy marks a module inside a non-canonical member: its alignment
	// is the canonical one's, applied.
	copy bool
	// dup marks a member whose structure an earlier sibling has.
	dup   bool
	depth int // levels below the root
	pos   int // index in its parent's Children
}

// side names one of the two trees: the suggest run's NPU tree (its
// classes key the forward draft) or its bench tree (keying the reverse).
type side int8

const (
	npuSide side = iota
	benchSide
)

// other is the opposite side.
func (s side) other() side { return 1 - s }

// String is "NPU" or "bench", as the report words them.
func (s side) String() string {
	if s == npuSide {
		return "NPU"
	}
	return "bench"
}

// treeIndex is one tree prepared for alignment.
type treeIndex struct {
	tree  *printparse.Tree
	infos map[*printparse.Node]*info
	order map[*printparse.Node]int // pre-order position
	nodes []*printparse.Node       // pre-order, root first
	// size counts the distinct modules below a module: minor modules
	// aside, a list's members of one structure counted once.
	size map[*printparse.Node]int
	// classCount counts NPU-side modules per class as msprobe types them.
	classCount map[string]int
	// resolverTrie is the tree as msprobe's resolver walks it, built once
	// for every draft keyed by this side (see trie).
	resolverTrie *resolve.Trie
}

// trie is the tree as msprobe's resolver walks it.
func (s *treeIndex) trie() *resolve.Trie {
	if s.resolverTrie == nil {
		s.resolverTrie = resolve.TrieFromTree(s.tree)
	}
	return s.resolverTrie
}

// indexTree prepares t for alignment. List members (numeric names) of
// the same structure — a repeat group PyTorch printed once, or layers
// written out one by one (older PyTorch, ModuleDict layers, msprobe dump
// folders) — get the first of them as canon: the aligner aligns a
// repeated structure once and applies the result to every member, so all
// members are paired alike, at a cost that does not grow with their
// number.
func indexTree(t *printparse.Tree) *treeIndex {
	s := &treeIndex{tree: t, infos: map[*printparse.Node]*info{}, order: map[*printparse.Node]int{}, classCount: map[string]int{}, size: map[*printparse.Node]int{}}
	nameTok, classTok := map[string][]string{}, map[string][]string{}
	var walk func(n *printparse.Node, depth, pos int)
	walk = func(n *printparse.Node, depth, pos int) {
		if n.None {
			return
		}
		s.order[n] = len(s.nodes)
		s.nodes = append(s.nodes, n)
		in := &info{node: n, canon: n, kind: n.Kind(), dims: n.Dims(), numeric: isNumber(n.Name), depth: depth, pos: pos}
		in.name = tok(n.Name, nameStop, nameTok)
		in.class = tok(n.Class, classStop, classTok)
		in.wrapper = isWrapper(n.Class)
		for _, c := range n.Children {
			if !c.None {
				in.nkids++
			}
			if c.Repeat != nil && in.repeat < c.Repeat.Count {
				in.repeat = c.Repeat.Count
			}
		}
		if in.repeat == 0 && in.nkids > 1 && allNumeric(n) {
			in.repeat = in.nkids
		}
		if base := n.Child("base_layer"); base != nil && !base.None {
			in.adapter = true
			in.kind, in.dims, in.nkids = base.Kind(), base.Dims(), 0
		}
		s.infos[n] = in
		s.classCount[n.Class]++
		for i, c := range n.Children {
			walk(c, depth+1, i)
		}
	}
	walk(t.Root, 0, 0)
	s.canonicalize()
	for i := len(s.nodes) - 1; i > 0; i-- {
		n := s.nodes[i]
		if decides(s.infos[n]) && !s.infos[n.Parent].adapter {
			s.infos[n.Parent].nmajor++
		}
		if p := s.infos[n.Parent]; p.nkids == 1 && !n.None {
			p.wraps = s.infos[n].nkids > 0 && !allNumeric(n)
		}
		if in := s.infos[n]; !in.dup {
			s.size[n.Parent] += s.size[n]
			if !minor(in) {
				s.size[n.Parent]++
			}
		}
	}
	return s
}

// canonicalize sets every module's canon, outside-in: a list member
// stands for the first sibling of the same structure, any other module
// for the corresponding child of its parent's canon.
func (s *treeIndex) canonicalize() {
	sig := s.signatures()
	for _, n := range s.nodes[1:] {
		in, p := s.infos[n], s.infos[n.Parent]
		in.canon = canonChild(p.canon, n, in.pos)
		in.copy = p.copy || p.canon != n.Parent
	}
	// Members: numeric siblings of one signature (printed repeat groups
	// share theirs).
	for _, n := range s.nodes {
		if s.infos[n].nkids < 2 || !allNumeric(n) {
			continue
		}
		first := map[int]*printparse.Node{}
		count := map[int]int{}
		for _, c := range n.Children {
			if !c.None {
				count[sig[c]]++
			}
		}
		for _, c := range n.Children {
			if c.None || count[sig[c]] < 2 {
				continue
			}
			ci := s.infos[c]
			ci.member = true
			f, ok := first[sig[c]]
			if !ok {
				first[sig[c]] = c
				continue
			}
			ci.copy, ci.dup = true, true
			s.recanon(c, s.infos[f].canon)
		}
	}
}

// recanon makes canon the canon of n and the corresponding modules of
// canon's subtree the canons of n's descendants.
func (s *treeIndex) recanon(n, canon *printparse.Node) {
	in := s.infos[n]
	in.canon = canon
	for i, c := range n.Children {
		if ci := s.infos[c]; ci != nil {
			ci.copy = true
			s.recanon(c, canonChild(canon, c, i))
		}
	}
}

// signatures gives every module an id of its structure below it (class,
// printed fields, parameter shapes, children's names and structures):
// two modules with one id print the same repr.
func (s *treeIndex) signatures() map[*printparse.Node]int {
	ids := map[string]int{}
	sig := make(map[*printparse.Node]int, len(s.nodes))
	var b strings.Builder
	for i := len(s.nodes) - 1; i >= 0; i-- {
		n := s.nodes[i]
		b.Reset()
		b.WriteString(n.Class)
		for _, e := range n.Extra {
			b.WriteString("\x00")
			b.WriteString(e)
		}
		for _, p := range n.Params {
			b.WriteString("\x01")
			b.WriteString(p.Name)
			for _, d := range p.Shape {
				b.WriteByte(',')
				b.WriteString(strconv.Itoa(d))
			}
		}
		for _, c := range n.Children {
			b.WriteString("\x02")
			b.WriteString(c.Name)
			b.WriteByte('=')
			if c.None {
				b.WriteString("None")
			} else {
				b.WriteString(strconv.Itoa(sig[c]))
			}
		}
		k := b.String()
		id, ok := ids[k]
		if !ok {
			id = len(ids)
			ids[k] = id
		}
		sig[n] = id
	}
	return sig
}

// tok memoises tokenize: large models repeat the same names thousands of
// times.
func tok(s string, stop map[string]bool, memo map[string][]string) []string {
	if t, ok := memo[s]; ok {
		return t
	}
	t := tokenize(s, stop)
	memo[s] = t
	return t
}

// canonChild is the child of canon that corresponds to c, the child at
// position pos of a module canon stands for.
func canonChild(canon, c *printparse.Node, pos int) *printparse.Node {
	if canon == c.Parent {
		return c
	}
	if pos < len(canon.Children) && canon.Children[pos].Name == c.Name {
		return canon.Children[pos]
	}
	if x := canon.Child(c.Name); x != nil {
		return x
	}
	return c
}

func allNumeric(n *printparse.Node) bool {
	for _, c := range n.Children {
		if !isNumber(c.Name) {
			return false
		}
	}
	return true
}

// isAncestor reports whether a is a proper ancestor of n.
func isAncestor(a, n *printparse.Node) bool {
	for p := n.Parent; p != nil; p = p.Parent {
		if p == a {
			return true
		}
	}
	return false
}

// indexOf returns the list index of a repeat member, -1 otherwise.
func indexOf(n *printparse.Node) int {
	if i, err := strconv.Atoi(n.Name); err == nil {
		return i
	}
	return -1
}

// instance is the module of inst's subtree at the place x has in the
// subtree of canon (inst's canon, an ancestor of x): x itself when inst is
// canonical; nil when inst's subtree has no such module.
func (s *treeIndex) instance(inst, canon, x *printparse.Node) *printparse.Node {
	if inst == canon {
		return x
	}
	var path []*printparse.Node
	for n := x; n != canon; n = n.Parent {
		path = append(path, n)
	}
	n := inst
	for k := len(path) - 1; k >= 0; k-- {
		c := canonChild(n, path[k], s.infos[path[k]].pos)
		if c == path[k] || c.Name != path[k].Name {
			return nil
		}
		n = c
	}
	return n
}
