package resolve

import (
	"sort"
	"strings"

	"github.com/layermap/layermap/mapping"
	"github.com/layermap/layermap/printparse"
)

// Resolver applies a mapping the way msprobe's convert_scope does.
type Resolver struct {
	m *mapping.Mapping
	// rules[class][first key segment] = candidates, longest key first.
	rules map[string]map[string][]cand
}

type cand struct {
	key    string
	segs   []string // key split on "."
	target string
	tsegs  []string // target split on "."
	level  int
	rule   *mapping.Rule
}

// New prepares m's effective rules (see Mapping.Effective): grouped
// by class and by the first segment of the key, longest key first, file
// order breaking ties (msprobe preprocess_layer_mapping).
func New(m *mapping.Mapping) *Resolver {
	r := &Resolver{m: m, rules: map[string]map[string][]cand{}}
	if m == nil {
		return r
	}
	for class, rules := range m.Effective() {
		byPrefix := map[string][]cand{}
		for _, rl := range rules {
			segs := strings.Split(rl.Key, ".")
			tgt := rl.Target()
			byPrefix[segs[0]] = append(byPrefix[segs[0]], cand{key: rl.Key, segs: segs, target: tgt,
				tsegs: strings.Split(tgt, "."), level: len(segs), rule: rl})
		}
		for _, cs := range byPrefix {
			sort.SliceStable(cs, func(i, j int) bool { return cs[i].level > cs[j].level })
		}
		r.rules[class] = byPrefix
	}
	return r
}

// Mapping returns the mapping the resolver applies.
func (r *Resolver) Mapping() *mapping.Mapping { return r.m }

// ConvertScope rewrites an NPU scope (trie path segments, without the
// leading Cell/Module/TopLayer) into the bench path msprobe looks up, and
// returns the rules that fired, in order. At each step the class of the NPU
// node reached so far selects the rules; a multi-segment key skips the
// classes of the nodes it jumps over. Where the scope leaves the trie, the
// segment text serves as class, as for any untyped node.
func (r *Resolver) ConvertScope(npu *Trie, scope []string) (bench []string, fired []*mapping.Rule) {
	bench = r.run(npu, scope, nil, &fired)
	return bench, fired
}

// Step is one step of ConvertScope.
type Step struct {
	// Start is the index in the scope of the first segment consumed, Level
	// the number of segments consumed.
	Start, Level int
	// Class is the class whose rules were consulted: the type of Container.
	Class string
	// Container is the NPU node the step started from (nil outside the
	// trie); End is the node reached (nil outside the trie).
	Container, End *TrieNode
	// Rule is the rule that fired, nil for the identity.
	Rule *mapping.Rule
	// Bench is the bench path built so far, this step included. Steps
	// share one backing array: copy it before appending or modifying.
	Bench []string
}

// keyMatches reports whether the key equals the next segments of the
// scope joined by "." (msprobe compares the joined strings; a key longer
// than what is left of the scope compares against the shorter rest).
func keyMatches(rest []string, c cand) bool {
	if len(rest) >= c.level {
		for j, s := range c.segs {
			if rest[j] != s {
				return false
			}
		}
		return true
	}
	return strings.Join(rest, ".") == c.key
}

// Steps is ConvertScope with every step recorded.
func (r *Resolver) Steps(npu *Trie, scope []string) []Step {
	steps := make([]Step, 0, len(scope))
	r.run(npu, scope, &steps, nil)
	return steps
}

// run is convert_scope; it records the steps and the fired rules when
// asked to.
func (r *Resolver) run(npu *Trie, scope []string, steps *[]Step, fired *[]*mapping.Rule) []string {
	var cur *TrieNode
	if npu != nil {
		cur = npu.Root
	}
	curType := mapping.TopLayer
	bench := make([]string, 0, len(scope)+2)
	for i := 0; i < len(scope); {
		child := scope[i]
		start, container, class := i, cur, curType
		level := 1
		var rule *mapping.Rule
		for _, c := range r.rules[curType][child] {
			if keyMatches(scope[i:], c) {
				bench = append(bench, c.tsegs...)
				level, rule = c.level, c.rule
				break
			}
		}
		if rule == nil {
			bench = append(bench, child)
		} else if fired != nil {
			*fired = append(*fired, rule)
		}
		for j := 0; j < level && i < len(scope); j++ {
			seg := scope[i]
			cur = cur.Child(seg)
			if cur != nil {
				curType = cur.Type
			} else {
				curType = seg
			}
			i++
		}
		if steps != nil {
			*steps = append(*steps, Step{Start: start, Level: level, Class: class, Container: container, End: cur, Rule: rule, Bench: bench[:len(bench)]})
		}
	}
	return bench
}

// Resolve returns the bench item msprobe pairs with the NPU item it (which
// must be in npu), or nil ("N/A"), and the rules that fired.
func (r *Resolver) Resolve(npu, bench *Trie, it *Item) (*Item, []*mapping.Rule) {
	path, fired := r.ConvertScope(npu, it.Scope())
	idx := -1
	if it.node != nil {
		idx = it.ord // the item's position in its node, as msprobe computes it
	} else if n := npu.Lookup(it.Scope()); n != nil {
		for i, x := range n.Items[it.State] {
			if x == it {
				idx = i
			}
		}
	}
	return bench.Query(path, it.State, idx), fired
}

// NodePair is the bench partner msprobe gives one NPU module node.
type NodePair struct {
	NPU *printparse.Node
	// BenchPath is the rewritten path msprobe looks up on the bench side.
	BenchPath string
	// Bench is the bench node at BenchPath, nil when there is none.
	Bench *printparse.Node
	// Rules lists the rules that fired, outermost first.
	Rules []*mapping.Rule
}

// ResolveTree rewrites the path of every NPU module node (root excluded,
// printed order) and looks the result up in the bench tree.
func (r *Resolver) ResolveTree(npu, bench *printparse.Tree) []NodePair {
	return r.ResolveTrie(TrieFromTree(npu), bench)
}

// ResolveTrie is ResolveTree on a trie already built with TrieFromTree, for
// callers that resolve the same NPU tree with several mappings.
func (r *Resolver) ResolveTrie(npu *Trie, bench *printparse.Tree) []NodePair {
	out := make([]NodePair, 0, len(npu.Items))
	for _, it := range npu.Items {
		var fired []*mapping.Rule
		segs := r.run(npu, it.Scope(), nil, &fired)
		p := NodePair{NPU: it.Node, BenchPath: strings.Join(segs, "."), Rules: fired}
		if bench != nil && bench.Root != nil {
			p.Bench = lookupSegs(bench.Root, segs)
		}
		out = append(out, p)
	}
	return out
}

func lookupSegs(n *printparse.Node, segs []string) *printparse.Node {
	for _, s := range segs {
		if n = n.Child(s); n == nil {
			return nil
		}
	}
	return n
}
