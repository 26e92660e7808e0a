package infer

import (
	"math"
	"slices"
	"strings"

	"github.com/layermap/layermap/printparse"
)

// Alignment constants.
const (
	// admit is the least local similarity for two modules to be partners.
	admit = 0.45
	// admitStruct is the least local similarity for two containers to be
	// partners on the strength of their subtrees.
	admitStruct = 0.25
	// admitLeftover is the least local similarity for a pair found across
	// levels after the outside-in walk (output_layer <-> lm_head).
	admitLeftover = 0.6
	// dissolvePenalty is what it costs to look through one module (pair
	// its children instead of itself). It makes the outermost of equally
	// good pairings win, as an expert walking outside-in would choose.
	dissolvePenalty = 0.1
	// maxDissolveDepth bounds how far below an aligned pair the walk looks
	// for partners.
	maxDissolveDepth = 4
	// orderWeight and pathWeight break ties among siblings: same rank
	// among siblings of the same kind, and same relative path (no YAML
	// line needed).
	orderWeight = 0.2
	pathWeight  = 0.15
	// priorBonus is added to the local similarity of a pair a template
	// implies.
	priorBonus = 0.5
	// sizeConflict is what printed sizes that differ take off a
	// candidate's worth when margins are measured.
	sizeConflict = 0.2
	// minorWeight is the share of its worth a pair of minor modules
	// (dropouts, activations, placeholders) adds to a frontier: enough to
	// pair them where they are, too little for them to decide whether a
	// level is looked through (TE's unfused_attention, holding only a
	// softmax and a dropout, must not take legacy Megatron's attention
	// from self_attention).
	minorWeight = 0.25
	// lowScore and lowMargin flag low-confidence pairs.
	lowScore  = 0.55
	lowMargin = 0.08
)

// Limits that keep the alignment near-linear in the number of modules.
const (
	// denseLimit is the largest frontier product solved as a full
	// assignment; larger frontiers get sparse candidate sets.
	denseLimit = 1024
	// bucketLimit is the most modules a name or class token may pick as
	// candidates before it counts as too common to say anything.
	bucketLimit = 16
	// maxSkew bounds how many more levels one side may have looked
	// through than the other on the way from the start pair to a pair:
	// wrappers, engines, PEFT and Transformer Engine levels add a few;
	// without a bound a chain of look-alike modules would weigh every
	// pair of its levels.
	maxSkew = 8
	// crossDiscount is the share of its local similarity a pair across
	// levels adds to a frontier's worth: it needs a longer key, and a
	// structure that pairs its modules only across levels is less likely
	// than one that pairs them where they are.
	crossDiscount = 0.5
	// band is how many positions either side of the diagonal a module of
	// a large frontier always considers (monotone order, as in a banded
	// edit distance).
	band = 2
)

// pairKey keys memo tables by a pair of nodes.
type pairKey struct{ a, b *printparse.Node }

// frontierPair is one pair chosen at a frontier: modules below the two
// canonical parents.
type frontierPair struct {
	x, y   *printparse.Node
	weight float64
}

// edge is a candidate pair of a frontier: fa[i] with fb[j].
type edge struct {
	i, j int
	w    float64
}

// sub is the best alignment below a pair of canonical nodes.
type sub struct {
	total  float64
	pairs  []frontierPair
	fa, fb []*printparse.Node // the final frontiers (below canonical nodes)
	edges  []edge             // the candidate pairs of the final frontiers
	margin []float64          // per pair, see margins
	count  int                // distinct pairs below, all levels, as size counts modules
	done   bool
}

// aligner aligns two trees outside-in.
type aligner struct {
	npu, bench *treeIndex
	locals     map[pairKey]localScore
	subs       map[pairKey]*sub
	priors     map[pairKey]bool // template-implied pairs (actual nodes)
	frees      map[freeKey][]*printparse.Node
	// skew0 is the start pair's NPU depth minus its bench depth.
	skew0 int
}

type localScore struct {
	score   float64 // with the template bonus: what the alignment uses
	raw     float64 // without it: what the report shows
	reasons []string
	ok      bool
}

func (al *aligner) local(a, b *printparse.Node) localScore {
	k := pairKey{a, b}
	if l, ok := al.locals[k]; ok {
		return l
	}
	ia, ib := al.npu.infos[a], al.bench.infos[b]
	if skew := ia.depth - ib.depth - al.skew0; skew > maxSkew || -skew > maxSkew {
		al.locals[k] = localScore{}
		return localScore{}
	}
	s, r, ok := local(ia, ib)
	raw := s
	if al.priors[k] && !never(ia, ib) {
		s = math.Min(1, s+priorBonus)
		ok = true
		r = append(r, "template")
	}
	l := localScore{s, raw, r, ok && s >= admit}
	al.locals[k] = l
	// raw, not s: a template prior that admits the pair does not stand
	// in for the subtree's evidence, which the report and the bands show
	if ok && raw < admit && raw >= admitStruct && len(kids(a)) > 0 && len(kids(b)) > 0 {
		// Two containers whose names say little are partners when what
		// lies below them aligns: most children of each hold a pair of
		// the alignment below the two (GPTModel "module" and Qwen2Model
		// "model" in a Float16Module / ForCausalLM pair; not
		// TransformerBlock "decoder" and LlamaModel "model", whose
		// embedding lies outside the block).
		ca, cb := al.npu.infos[a].canon, al.bench.infos[b].canon
		if (al.coverage(ca, cb) >= 0.6 || al.wrapsWhole(ca, cb)) && !al.strands(a, b) {
			// worth what share of the modules below aligns
			n := min(al.npu.size[a], al.bench.size[b])
			frac := float64(al.below(ca, cb).count) / float64(max(n, 1))
			sc := admit + 0.4*math.Max(0, frac-0.6)
			l.score, l.raw = math.Max(l.score, sc), math.Max(l.raw, sc)
			l.ok = true
			if !slices.Contains(l.reasons, "children") {
				l.reasons = append(slices.Clip(l.reasons), "children")
			}
			al.locals[k] = l
		}
	}
	return l
}

// Limits of the stranded-child check (see strands).
const (
	// strandScore is the least local similarity at which a stranded
	// child's partner beside the other container is clear.
	strandScore = 0.9
	// strandSiblings bounds the siblings searched: a wide frontier is a
	// list or a flat model, whose containers do not strand children.
	strandSiblings = 16
)

// strands reports whether pairing containers a and b on the strength of
// their subtrees would strand a major child of one of them: a child no
// pair below the two holds whose clear partner lies beside the other
// container (in a sibling's subtree, two levels down). That container
// computes the other's parent then, not the other (LlamaModel "model"
// holds embed_tokens, whose partner is embedding.word_embeddings beside
// TransformerBlock "decoder": model is the GPTModel root's match, an extra
// level here). A container its parent holds alone is exempt: the parent
// is a whole-model wrapper paired above it, so the other container is the
// nearest partner it can have (GPTModel under Float16Module and Qwen2Model
// beside lm_head).
func (al *aligner) strands(a, b *printparse.Node) bool {
	ia, ib := al.npu.infos[a], al.bench.infos[b]
	if ia.member || ib.member || ia.copy || ib.copy {
		return false
	}
	s := al.below(ia.canon, ib.canon)
	// near are the modules in the subtrees of n's siblings, at most two
	// levels below them; nil when n has no siblings or too many.
	near := func(n *printparse.Node) []*printparse.Node {
		sib := siblings(n)
		if len(sib) < 2 || len(sib) > strandSiblings {
			return nil
		}
		var out []*printparse.Node
		for _, c := range sib {
			if c == n {
				continue
			}
			out = append(out, c)
			for _, g := range kids(c) {
				out = append(out, g)
				out = append(out, kids(g)...)
			}
		}
		return out
	}
	// b's stranded children against a's siblings, unless b's parent holds
	// b alone; then the same the other way round.
	for _, on := range []side{benchSide, npuSide} {
		n, other, t := b, a, al.bench
		if on == npuSide {
			n, other, t = a, b, al.npu
		}
		if len(kids(n.Parent)) < 2 {
			continue
		}
		cand := near(other)
		if cand == nil {
			continue
		}
		hit := heldChildren(s, n, on)
		for _, c := range kids(n) {
			if hit[c] || !decides(t.infos[c]) {
				continue
			}
			for _, x := range cand {
				u, v := x, c // NPU first
				if on == npuSide {
					u, v = c, x
				}
				if l := al.local(u, v); l.ok && l.raw >= strandScore {
					return true
				}
			}
		}
	}
	return false
}

// coverage is the share of the children of a (and of b, the smaller of
// the two) that hold a pair of the alignment below the canonical pair
// (a, b), minor modules aside.
func (al *aligner) coverage(a, b *printparse.Node) float64 {
	sa, sb := al.shares(a, b)
	return min(sa, sb)
}

// shares are coverage's two shares: of a's children and of b's.
func (al *aligner) shares(a, b *printparse.Node) (float64, float64) {
	s := al.below(a, b)
	share := func(t *treeIndex, n *printparse.Node, on side) float64 {
		all := t.infos[n].nmajor
		if all == 0 {
			return 0
		}
		hit := 0
		for c := range heldChildren(s, n, on) {
			if decides(t.infos[c]) {
				hit++
			}
		}
		return float64(hit) / float64(all)
	}
	return share(al.npu, a, npuSide), share(al.bench, b, benchSide)
}

// heldChildren are the children of n (on side on) that hold a pair of s,
// the alignment below n and its partner.
func heldChildren(s *sub, n *printparse.Node, on side) map[*printparse.Node]bool {
	hit := map[*printparse.Node]bool{}
	for _, p := range s.pairs {
		c := p.x
		if on == benchSide {
			c = p.y
		}
		for c.Parent != nil && c.Parent != n {
			c = c.Parent
		}
		hit[c] = true
	}
	return hit
}

// wrapsWhole reports whether one of a and b is a whole-model wrapper
// (Float16Module) whose one child holds pairs below the two, and at least
// half of the other's children do: the wrapper computes what the other
// module computes, though not every child of the other pairs below the
// two (a ForCausalLM's lm_head pairs with the output layer inside the
// wrapped model, across a level).
func (al *aligner) wrapsWhole(a, b *printparse.Node) bool {
	ia, ib := al.npu.infos[a], al.bench.infos[b]
	wa, wb := ia.wrapper && ia.nkids == 1, ib.wrapper && ib.nkids == 1
	if wa == wb {
		return false
	}
	sa, sb := al.shares(a, b)
	if wb {
		sa, sb = sb, sa
	}
	return sa >= 0.6 && sb >= 0.5
}

// value is what pairing a with b is worth: their local similarity plus the
// best alignment of what lies below them.
func (al *aligner) value(a, b *printparse.Node) float64 {
	l := al.local(a, b)
	if !l.ok {
		return 0
	}
	return l.score + al.below(al.npu.infos[a].canon, al.bench.infos[b].canon).total
}

// below aligns the descendants of a pair of canonical nodes. Two lists
// pair their members by index; any other frontier is an assignment
// problem in which a module may be looked through (its children take its
// place) when that pairs more of the subtree.
func (al *aligner) below(a, b *printparse.Node) *sub {
	k := pairKey{a, b}
	if s, ok := al.subs[k]; ok {
		return s
	}
	s := &sub{}
	al.subs[k] = s // guards against cycles; filled below
	fa, fb := kids(a), kids(b)
	if al.npu.infos[a].adapter || al.bench.infos[b].adapter {
		fa, fb = nil, nil // aligned as the module it adapts, a leaf
	}
	if len(fa) == 0 || len(fb) == 0 {
		s.done = true
		return s
	}
	// One module under each: a wrapper of one module against a module
	// with children of its own is looked through (see wrapsAgainst), as
	// often as it takes (a PEFT model holding a LoraModel holding a
	// ForCausalLM holding the model).
	for len(fa) == 1 && len(fb) == 1 {
		x, y := al.npu.infos[fa[0]], al.bench.infos[fb[0]]
		switch {
		case wrapsAgainst(x, y) && al.canDissolve(al.npu, fa[0], a):
			fa = kids(fa[0])
			continue
		case wrapsAgainst(y, x) && al.canDissolve(al.bench, fb[0], b):
			fb = kids(fb[0])
			continue
		}
		break
	}
	var best float64
	var pairs []frontierPair
	var edges []edge
	if t, p, e, ok := al.byIndex(a, b, fa, fb); ok {
		best, pairs, edges = t, p, e
	} else {
		best, pairs, edges = al.evalFrontier(a, b, fa, fb, 0)
		fa, fb, best, pairs, edges = al.dissolve(a, b, fa, fb, best, pairs, edges)
	}
	s.total, s.pairs, s.fa, s.fb, s.edges, s.done = best, pairs, fa, fb, edges, true
	s.margin = al.margins(a, b, s)
	for _, p := range pairs {
		if xi := al.npu.infos[p.x]; !xi.dup {
			s.count += al.below(xi.canon, al.bench.infos[p.y].canon).count
			if !minor(xi) {
				s.count++
			}
		}
	}
	return s
}

// dissolve improves a frontier's assignment by looking through modules,
// one at a time, best first, while that pays. A large frontier only looks
// through modules its assignment leaves alone.
func (al *aligner) dissolve(a, b *printparse.Node, fa, fb []*printparse.Node, best float64, pairs []frontierPair, edges []edge) ([]*printparse.Node, []*printparse.Node, float64, []frontierPair, []edge) {
	for dissolved := 0; ; dissolved++ {
		improved := false
		var bestA, bestB []*printparse.Node
		var bestPairs []frontierPair
		var bestEdges []edge
		bestTotal := best
		try := func(na, nb []*printparse.Node) {
			t, p, e := al.evalFrontier(a, b, na, nb, dissolved+1)
			if t > bestTotal+1e-9 {
				bestTotal, bestA, bestB, bestPairs, bestEdges = t, na, nb, p, e
				improved = true
			}
		}
		large := len(fa)*len(fb) > denseLimit
		var usedA, usedB map[*printparse.Node]bool
		if large {
			usedA, usedB = map[*printparse.Node]bool{}, map[*printparse.Node]bool{}
			for _, p := range pairs {
				usedA[p.x], usedB[p.y] = true, true
			}
		}
		// A whole-model wrapper facing one module it wraps whole is its
		// partner (msprobe's Float16Module convention), not looked
		// through.
		if len(fa) == 1 && len(fb) == 1 && al.wrapsWhole(fa[0], fb[0]) {
			return fa, fb, best, pairs, edges
		}
		for i, x := range fa {
			if !usedA[x] && al.canDissolve(al.npu, x, a) {
				try(replaceAt(fa, i, kids(x)), fb)
			}
		}
		for i, y := range fb {
			if !usedB[y] && al.canDissolve(al.bench, y, b) {
				try(fa, replaceAt(fb, i, kids(y)))
			}
		}
		// Looking through both modules of a pair at once: two extra
		// levels, one on each side, that only pay together (TransformerBlock
		// "decoder" and LlamaModel "model", each holding what the other's
		// siblings hold).
		if !large {
			for _, p := range pairs {
				i, j := slices.Index(fa, p.x), slices.Index(fb, p.y)
				if al.canDissolve(al.npu, p.x, a) && al.canDissolve(al.bench, p.y, b) {
					t, pp, e := al.evalFrontier(a, b, replaceAt(fa, i, kids(p.x)), replaceAt(fb, j, kids(p.y)), dissolved+2)
					if t > bestTotal+1e-9 {
						bestTotal, bestA, bestB, bestPairs, bestEdges = t, replaceAt(fa, i, kids(p.x)), replaceAt(fb, j, kids(p.y)), pp, e
						improved = true
					}
				}
			}
		}
		if !improved {
			return fa, fb, best, pairs, edges
		}
		fa, fb, best, pairs, edges = bestA, bestB, bestTotal, bestPairs, bestEdges
	}
}

// byIndex pairs the members of two lists (ModuleList, Sequential) by
// index, the way msprobe names them, when every shared index pairs
// modules that may be partners; ok is false otherwise (the frontier is
// then an assignment problem).
func (al *aligner) byIndex(a, b *printparse.Node, fa, fb []*printparse.Node) (total float64, pairs []frontierPair, edges []edge, ok bool) {
	if !allNumeric(a) || !allNumeric(b) {
		return 0, nil, nil, false
	}
	at := map[string]int{}
	for j, y := range fb {
		at[y.Name] = j
	}
	ra, rb := kindRanks(al.npu, fa), kindRanks(al.bench, fb)
	for i, x := range fa {
		j, has := at[x.Name]
		if !has {
			continue
		}
		if !al.local(x, fb[j]).ok {
			return 0, nil, nil, false
		}
		w := al.weight(a, b, x, fb[j], ra[i], rb[j])
		total += w
		pairs = append(pairs, frontierPair{x: x, y: fb[j], weight: w})
		// the runners-up a member's margin is measured against: its
		// neighbours in the other list
		for _, d := range []int{-1, 0, 1} {
			if j2 := j + d; j2 >= 0 && j2 < len(fb) {
				edges = append(edges, edge{i, j2, 0})
			}
			if i2 := i + d; d != 0 && i2 >= 0 && i2 < len(fa) {
				edges = append(edges, edge{i2, j, 0})
			}
		}
	}
	if len(pairs) == 0 {
		return 0, nil, nil, false
	}
	return total, pairs, edges, true
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

// canDissolve reports whether x, on the frontier below top, may be
// looked through.
func (al *aligner) canDissolve(t *treeIndex, x, top *printparse.Node) bool {
	xi := t.infos[x]
	if xi.nkids == 0 || xi.member || x.Repeat != nil {
		return false
	}
	// A list's members pair only with another list's members: looking
	// through the list would let layer 10 pair with anything.
	if xi.nkids > 1 && allNumeric(x) {
		return false
	}
	return xi.depth-t.infos[top].depth < maxDissolveDepth
}

func replaceAt(s []*printparse.Node, i int, with []*printparse.Node) []*printparse.Node {
	out := make([]*printparse.Node, 0, len(s)+len(with)-1)
	out = append(out, s[:i]...)
	out = append(out, with...)
	return append(out, s[i+1:]...)
}

// rel is the dotted path of n below top.
func rel(n, top *printparse.Node) string {
	if top.Path == "" {
		return n.Path
	}
	if p := n.Path; len(p) > len(top.Path) && p[len(top.Path)] == '.' && strings.HasPrefix(p, top.Path) {
		return p[len(top.Path)+1:]
	}
	return n.Path
}

// wrapperSegments are the child names under which wrappers hold the
// module they wrap (activation checkpointing, FSDP, torch.compile).
var wrapperSegments = map[string]bool{"_checkpoint_wrapped_module": true, "_fsdp_wrapped_module": true, "_orig_mod": true}

// samePath reports whether x below pa and y below pb have the same
// relative path, wrapper segments aside: one line at the wrapper's class
// consumes the segment for every instance (FSDPCheckpointWrapper:
// _checkpoint_wrapped_module.attn), nearly as cheap as no line, and far
// cheaper than pairing each wrapped module with a line of its own at every
// layer index.
func samePath(x, pa, y, pb *printparse.Node) bool {
	for {
		for x != pa && wrapperSegments[x.Name] {
			x = x.Parent
		}
		for y != pb && wrapperSegments[y.Name] {
			y = y.Parent
		}
		if x == pa || y == pb {
			return x == pa && y == pb
		}
		if x.Name != y.Name {
			return false
		}
		x, y = x.Parent, y.Parent
	}
}

// weight is what pairing frontier modules x (below pa) and y (below pb)
// adds to the frontier's worth: their value, the agreement of their ranks
// among frontier modules of their kind, and the same relative path.
func (al *aligner) weight(pa, pb, x, y *printparse.Node, rx, ry float64) float64 {
	v := al.value(x, y)
	if rx == ry {
		v += orderWeight
	} else {
		v += orderWeight * (1 - math.Min(1, math.Abs(rx-ry)))
	}
	if samePath(x, pa, y, pb) {
		v += pathWeight
	}
	if minor(al.npu.infos[x]) && minor(al.bench.infos[y]) {
		v *= minorWeight
	}
	return v
}

// evalFrontier solves the assignment between two frontiers and returns its
// worth, the chosen pairs and the candidate pairs it weighed.
func (al *aligner) evalFrontier(pa, pb *printparse.Node, fa, fb []*printparse.Node, dissolved int) (float64, []frontierPair, []edge) {
	ra, rb := kindRanks(al.npu, fa), kindRanks(al.bench, fb)
	var edges []edge
	for _, e := range al.candidates(fa, fb) {
		if !al.local(fa[e.i], fb[e.j]).ok || al.memberDepth(al.npu, fa[e.i], pa) != al.memberDepth(al.bench, fb[e.j], pb) {
			continue
		}
		e.w = al.weight(pa, pb, fa[e.i], fb[e.j], ra[e.i], rb[e.j])
		edges = append(edges, e)
	}
	assign := assignSparse(len(fa), len(fb), edges)
	total := -dissolvePenalty * float64(dissolved)
	var pairs []frontierPair
	usedA, usedB := make([]bool, len(fa)), make([]bool, len(fb))
	for _, e := range assign {
		usedA[e.i], usedB[e.j] = true, true
		total += e.w
		pairs = append(pairs, frontierPair{x: fa[e.i], y: fb[e.j], weight: e.w})
	}
	total += al.crossCredit(fa, fb, assign, usedA, usedB)
	return total, pairs, edges
}

// memberDepth counts the look-alike list members that hold modules (layers,
// experts; not a Sequential's leaves) from n up to top (top excluded): a
// module pairs only with one as many members deep, never one of many
// look-alikes with a module that has none (a projector's MLP with the
// first of a list of mergers).
func (al *aligner) memberDepth(t *treeIndex, n, top *printparse.Node) int {
	d := 0
	for p := n; p != nil && p != top; p = p.Parent {
		if in := t.infos[p]; in.member && in.nkids > 0 {
			d++
		}
	}
	return d
}

// candidates lists the pairs of two frontiers worth weighing: all of them
// when the frontiers are small; otherwise the pairs that share a name, a
// class, or a name or class token rare enough to say something, and the
// pairs near the diagonal (modules in the same order on both sides).
func (al *aligner) candidates(fa, fb []*printparse.Node) []edge {
	var out []edge
	if len(fa)*len(fb) <= denseLimit {
		out = make([]edge, 0, len(fa)*len(fb))
		for i := range fa {
			for j := range fb {
				out = append(out, edge{i, j, 0})
			}
		}
		return out
	}
	buckets := map[string][]int{}
	keys := func(t *treeIndex, n *printparse.Node) []string {
		in := t.infos[n]
		ks := []string{"n" + n.Name, "c" + n.Class}
		for _, x := range in.name {
			ks = append(ks, "t"+x)
		}
		for _, x := range in.class {
			ks = append(ks, "k"+x)
		}
		return ks
	}
	for j, y := range fb {
		for _, k := range keys(al.bench, y) {
			buckets[k] = append(buckets[k], j)
		}
	}
	seen := map[[2]int]bool{}
	add := func(i, j int) {
		if !seen[[2]int{i, j}] {
			seen[[2]int{i, j}] = true
			out = append(out, edge{i, j, 0})
		}
	}
	for i, x := range fa {
		for _, k := range keys(al.npu, x) {
			if js := buckets[k]; len(js) <= bucketLimit {
				for _, j := range js {
					add(i, j)
				}
			}
		}
		d := i * len(fb) / len(fa)
		for j := max(0, d-band); j <= min(len(fb)-1, d+band); j++ {
			add(i, j)
		}
	}
	slices.SortFunc(out, func(x, y edge) int {
		if x.i != y.i {
			return x.i - y.i
		}
		return x.j - y.j
	})
	return out
}

// crossCredit is what the pairs found across levels after the walk will
// add: a frontier node left without a partner that clearly is a free
// module one or two levels inside the partner of another frontier node
// (lm_head beside "model" and output_layer inside GPTModel). The walk's
// leftover pass makes these pairs; counting them here lets the choice
// between keeping a level and looking through it see them.
func (al *aligner) crossCredit(fa, fb []*printparse.Node, assign []edge, usedA, usedB []bool) float64 {
	var ua, ub []*printparse.Node
	for i, x := range fa {
		if !usedA[i] {
			ua = append(ua, x)
		}
	}
	for j, y := range fb {
		if !usedB[j] {
			ub = append(ub, y)
		}
	}
	if len(ua) == 0 && len(ub) == 0 {
		return 0
	}
	var candA, candB []*printparse.Node // free modules inside the chosen pairs
	for _, e := range assign {
		ca, cb := al.npu.infos[fa[e.i]].canon, al.bench.infos[fb[e.j]].canon
		sub := al.below(ca, cb)
		if len(ub) > 0 {
			candA = append(candA, al.free(sub, ca, npuSide)...)
		}
		if len(ua) > 0 {
			candB = append(candB, al.free(sub, cb, benchSide)...)
		}
	}
	credit := 0.0
	taken := map[*printparse.Node]bool{}
	pick := func(lonely *printparse.Node, cands []*printparse.Node, lonelySide side) {
		best := 0.0
		var bz *printparse.Node
		for _, z := range cands {
			if taken[z] {
				continue
			}
			x, y := z, lonely
			if lonelySide == npuSide {
				x, y = lonely, z
			}
			if minor(al.npu.infos[x]) || minor(al.bench.infos[y]) {
				continue
			}
			if nameSim(al.npu.infos[x], al.bench.infos[y]) < 0.5 {
				continue
			}
			if l := al.local(x, y); l.ok && l.score >= admitLeftover && l.score > best {
				best, bz = l.score, z
			}
		}
		if bz != nil {
			taken[bz] = true
			credit += crossDiscount * best
		}
	}
	if len(candA) > 0 {
		for _, y := range ub {
			pick(y, candA, benchSide)
		}
	}
	if len(candB) > 0 {
		for _, x := range ua {
			pick(x, candB, npuSide)
		}
	}
	return credit
}

type freeKey struct {
	s    *sub
	side side
}

// free memoises freeBelow.
func (al *aligner) free(s *sub, n *printparse.Node, on side) []*printparse.Node {
	k := freeKey{s, on}
	if f, ok := al.frees[k]; ok {
		return f
	}
	f := freeBelow(n, s, on)
	al.frees[k] = f
	return f
}

// freeBelow lists the children and grandchildren of n (canonical) that
// the alignment below n (on side on) leaves without a partner. List
// members and what they hold are left out: one of many look-alikes is
// never clearly the module one level apart.
func freeBelow(n *printparse.Node, s *sub, on side) []*printparse.Node {
	matched := map[*printparse.Node]bool{}
	for _, p := range s.pairs {
		if on == npuSide {
			matched[p.x] = true
		} else {
			matched[p.y] = true
		}
	}
	inPair := func(c *printparse.Node) bool {
		for p := c; p != n && p != nil; p = p.Parent {
			if matched[p] {
				return true
			}
		}
		return false
	}
	var out []*printparse.Node
	for _, c := range kids(n) {
		if inPair(c) || isNumber(c.Name) {
			continue
		}
		out = append(out, c)
		for _, g := range kids(c) {
			if !isNumber(g.Name) && !inPair(g) {
				out = append(out, g)
			}
		}
	}
	return out
}

// kindRanks gives each frontier node its relative position among the
// frontier nodes of the same kind, in [0, 1].
func kindRanks(s *treeIndex, f []*printparse.Node) []float64 {
	count := map[string]int{}
	for _, n := range f {
		count[s.infos[n].kind]++
	}
	seen := map[string]int{}
	out := make([]float64, len(f))
	for i, n := range f {
		k := s.infos[n].kind
		if count[k] > 1 {
			out[i] = float64(seen[k]) / float64(count[k]-1)
		}
		seen[k]++
	}
	return out
}

// margins computes, for each pair chosen at a frontier, how much better
// it scores than the runner-up: the best other partner of either side
// among the frontier's candidate pairs. Scores count the local similarity
// and the sibling rank (what the assignment saw besides the subtrees).
// They are computed once per canonical pair of parents and hold for every
// repeat member.
func (al *aligner) margins(a, b *printparse.Node, s *sub) []float64 {
	fa, fb := s.fa, s.fb
	ra, rb := kindRanks(al.npu, fa), kindRanks(al.bench, fb)
	adj := func(i, j int) float64 {
		l := al.local(fa[i], fb[j])
		if !l.ok {
			return 0
		}
		return l.score + orderWeight/2*(1-math.Min(1, math.Abs(ra[i]-rb[j])))
	}
	// rival is a candidate's worth as a runner-up. Printed sizes that
	// differ make a pair doubtful on their own (see assignBands): such a
	// candidate is a weak runner-up (kv_b_proj is not the runner-up of the
	// projection sized like kv_a_proj_with_mqa).
	rival := func(i, j int) float64 {
		v := adj(i, j)
		if da, db := al.npu.infos[fa[i]].dims, al.bench.infos[fb[j]].dims; len(da) > 0 && len(db) > 0 && !slices.Equal(da, db) {
			v -= sizeConflict
		}
		return v
	}
	// Row and column maxima, with the argmax, so that each pair's
	// runner-up is found in O(1).
	type top2 struct {
		best, second float64
		arg          int
	}
	rows := make([]top2, len(fa))
	cols := make([]top2, len(fb))
	for i := range rows {
		rows[i].arg = -1
	}
	for j := range cols {
		cols[j].arg = -1
	}
	push := func(t *top2, v float64, k int) {
		switch {
		case v > t.best:
			t.second, t.best, t.arg = t.best, v, k
		case v > t.second:
			t.second = v
		}
	}
	index := func(f []*printparse.Node) map[*printparse.Node]int {
		m := make(map[*printparse.Node]int, len(f))
		for i, n := range f {
			m[n] = i
		}
		return m
	}
	ia, ib := index(fa), index(fb)
	if len(fa)*len(fb) <= denseLimit {
		for i := range fa {
			for j := range fb {
				v := rival(i, j)
				push(&rows[i], v, j)
				push(&cols[j], v, i)
			}
		}
	} else {
		for _, e := range s.edges {
			v := rival(e.i, e.j)
			push(&rows[e.i], v, e.j)
			push(&cols[e.j], v, e.i)
		}
	}
	out := make([]float64, len(s.pairs))
	for k, p := range s.pairs {
		i, j := ia[p.x], ib[p.y]
		best := adj(i, j)
		runner := rows[i].best
		if rows[i].arg == j {
			runner = rows[i].second
		}
		c := cols[j].best
		if cols[j].arg == i {
			c = cols[j].second
		}
		out[k] = math.Min(1, best-math.Max(runner, c))
	}
	return out
}
