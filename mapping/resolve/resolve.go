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
	return benchItem(npu, bench, it, path), fired
}

// benchItem returns the bench item at path for the NPU item it: the one at
// its position among the same-state items of its node.
func benchItem(npu, bench *Trie, it *Item, path []string) *Item {
	return bench.Query(path, it.State, npuOrdinal(npu, it))
}

// npuOrdinal is the position of it among the same-state items of its
// node, as msprobe computes it (-1 when it is not in npu).
func npuOrdinal(npu *Trie, it *Item) int {
	idx := -1
	if it.node != nil {
		idx = it.ord
	} else if n := npu.Lookup(it.Scope()); n != nil {
		for i, x := range n.ItemsOf(it.State) {
			if x == it {
				idx = i
			}
		}
	}
	return idx
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
//
// Items come parents first, so each rewrite starts from the previous one:
// only the steps a key could reach past the common prefix are redone (a
// key of k segments reaches k segments on), and the bench node of each
// step is kept with it. A deep or wide tree costs its size, not depth
// squared or children squared.
func (r *Resolver) ResolveTrie(npu *Trie, bench *printparse.Tree) []NodePair {
	out := make([]NodePair, 0, npu.Len())
	maxKey := 1
	for _, byPrefix := range r.rules {
		for _, cs := range byPrefix {
			for _, c := range cs {
				maxKey = max(maxKey, c.level)
			}
		}
	}
	var benchRoot *printparse.Node
	if bench != nil {
		benchRoot = bench.Root
	}
	w := trieWalk{r: r, maxKey: maxKey, bench: benchRoot}
	for _, it := range npu.Items() {
		if it.node == nil || it.node.trie != npu {
			// not placed in this trie: the plain rewrite
			var fired []*mapping.Rule
			segs := r.run(npu, it.Scope(), nil, &fired)
			p := NodePair{NPU: it.Node, BenchPath: strings.Join(segs, "."), Rules: fired}
			if benchRoot != nil {
				p.Bench = benchRoot.LookupSegs(segs)
			}
			out = append(out, p)
			continue
		}
		w.moveTo(it.node)
		out = append(out, w.pair(it))
	}
	return out
}

// trieWalk rewrites the paths of trie nodes visited parents first,
// keeping the path and the steps of the last node.
type trieWalk struct {
	r      *Resolver
	maxKey int
	bench  *printparse.Node // bench root, nil for none
	path   []*TrieNode      // path[i]: the node at depth i (path[0] the root)
	steps  []walkStep
	index  printparse.ChildIndex // children of wide bench nodes
}

// walkStep is one step of convert_scope: from depth start, n segments
// consumed, the bench segments appended, the rule (nil: identity) and
// the bench node reached (nil: none).
type walkStep struct {
	start, n int
	bench    []string
	rule     *mapping.Rule
	node     *printparse.Node
}

// moveTo makes n the current node: the path is cut to the deepest
// ancestor of n it holds, then extended, and the steps that may change
// are redone.
func (w *trieWalk) moveTo(n *TrieNode) {
	var add []*TrieNode
	x := n
	for x != nil && !(x.depth < len(w.path) && w.path[x.depth] == x) {
		add = append(add, x)
		x = x.Parent
	}
	common := len(w.path)
	if x != nil {
		common = x.depth + 1
	}
	w.path = w.path[:common]
	for i := len(add) - 1; i >= 0; i-- {
		w.path = append(w.path, add[i])
	}
	// the segments of the common prefix are path[1:common]: steps wholly
	// within it, and no key of theirs reaching past it, are kept
	k := len(w.steps)
	for k > 0 && w.steps[k-1].start+w.maxKey > common-1 {
		k--
	}
	w.steps = w.steps[:k]
	d := len(w.path) - 1 // segments of n's scope
	i := 0
	if k > 0 {
		i = w.steps[k-1].start + w.steps[k-1].n
	}
	for i < d {
		cur := w.path[i]
		curType := cur.Type
		st := walkStep{start: i, n: 1}
		seg := w.path[i+1].Segment
		for _, c := range w.r.rules[curType][seg] {
			if c.level <= d-i && w.keyAt(c.segs, i+1) || c.level > d-i && w.joinedIs(c.key, i+1, d+1) {
				st.n, st.bench, st.rule = c.level, c.tsegs, c.rule
				break
			}
		}
		if st.rule == nil {
			st.bench = []string{seg}
		}
		from := w.bench
		if k := len(w.steps); k > 0 {
			from = w.steps[k-1].node
		}
		st.node = w.index.LookupSegs(from, st.bench)
		w.steps = append(w.steps, st)
		i += st.n
	}
}

// joinedIs reports whether the segments of path[from:to] joined by "."
// equal key (keyMatches for a key longer than the rest of the scope: it can
// match only when a segment holds a dot).
func (w *trieWalk) joinedIs(key string, from, to int) bool {
	segs := make([]string, 0, to-from)
	for _, n := range w.path[from:to] {
		segs = append(segs, n.Segment)
	}
	return strings.Join(segs, ".") == key
}

func (w *trieWalk) keyAt(segs []string, at int) bool {
	for j, s := range segs {
		if w.path[at+j].Segment != s {
			return false
		}
	}
	return true
}

// pair is the NodePair of item it at the current node.
func (w *trieWalk) pair(it *Item) NodePair {
	size, fired := 0, 0
	for _, s := range w.steps {
		size += len(s.bench)
		if s.rule != nil {
			fired++
		}
	}
	var b strings.Builder
	b.Grow(size * 8)
	var rules []*mapping.Rule
	if fired > 0 {
		rules = make([]*mapping.Rule, 0, fired)
	}
	for i, s := range w.steps {
		for j, seg := range s.bench {
			if i > 0 || j > 0 {
				b.WriteByte('.')
			}
			b.WriteString(seg)
		}
		if s.rule != nil {
			rules = append(rules, s.rule)
		}
	}
	p := NodePair{NPU: it.Node, BenchPath: b.String(), Rules: rules}
	if w.bench != nil {
		p.Bench = w.bench
		if len(w.steps) > 0 {
			p.Bench = w.steps[len(w.steps)-1].node
		}
	}
	return p
}
