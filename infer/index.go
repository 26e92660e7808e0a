package infer

import (
	"strconv"
	"strings"

	"github.com/layermap/layermap/printparse"
)

// info is what the scorer knows about one module.
type info struct {
	node    *printparse.Node
	canon   *printparse.Node // first member of its repeat groups
	name    []string
	class   []string
	kind    string
	dims    []int
	nkids   int
	repeat  int  // count of its children's repeat group, 0 if none
	numeric bool // name is a list index
	wrapper bool
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
	size  map[*printparse.Node]int // number of descendants
	// classCount counts NPU-side modules per class as msprobe types them.
	classCount map[string]int
}

func indexTree(t *printparse.Tree) *treeIndex {
	s := &treeIndex{tree: t, infos: map[*printparse.Node]*info{}, order: map[*printparse.Node]int{}, classCount: map[string]int{}, size: map[*printparse.Node]int{}}
	nameTok, classTok := map[string][]string{}, map[string][]string{}
	var walk func(n, canon *printparse.Node)
	walk = func(n, canon *printparse.Node) {
		if n.None {
			return
		}
		s.order[n] = len(s.nodes)
		s.nodes = append(s.nodes, n)
		in := &info{node: n, canon: canon, kind: n.Kind(), dims: n.Dims(), numeric: isNumber(n.Name)}
		in.name = tok(n.Name, nameStop, nameTok)
		in.class = tok(n.Class, classStop, classTok)
		in.wrapper = wrapperClasses[n.Class] || strings.HasPrefix(n.Class, "FSDP") && strings.Contains(n.Class, "Wrapper")
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
		s.infos[n] = in
		s.classCount[n.Class]++
		var first map[*printparse.Repeat]*printparse.Node
		for _, c := range n.Children {
			cc := canonChild(canon, c)
			if c.Repeat != nil {
				if first == nil {
					first = map[*printparse.Repeat]*printparse.Node{}
				}
				if f, ok := first[c.Repeat]; ok {
					cc = f
				} else {
					first[c.Repeat] = cc
				}
			}
			walk(c, cc)
		}
	}
	walk(t.Root, t.Root)
	for i := len(s.nodes) - 1; i > 0; i-- {
		n := s.nodes[i]
		s.size[n.Parent] += s.size[n] + 1
	}
	return s
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

// canonChild is the child of canon that corresponds to c.
func canonChild(canon, c *printparse.Node) *printparse.Node {
	if canon == c.Parent {
		return c
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

// kids are the module children of n.
func kids(n *printparse.Node) []*printparse.Node {
	var out []*printparse.Node
	for _, c := range n.Children {
		if !c.None {
			out = append(out, c)
		}
	}
	return out
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
