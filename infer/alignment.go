package infer

import (
	"math"
	"slices"

	"github.com/layermap/layermap/printparse"
)

// startPair is where the outside-in walk starts: the roots, after the
// training engines on top of either model (DistributedDataParallel,
// DeepSpeedEngine, FSDP, a PEFT model and its tuner, a list of models, a
// root that holds one module) are set aside. When both sides have engines
// the innermost engines pair (their children are the models); when one
// side has them its model pairs with the other side's root.
func startPair(npu, bench *printparse.Tree) (a, b *printparse.Node) {
	descend := func(t *printparse.Tree) (last *printparse.Node, engines int) {
		n := t.Root
		for {
			k := kids(n)
			// Below the root only engines are walked into. The root is
			// set aside like an engine when it holds the model whole: a
			// list of model chunks (class ""), or one child (a
			// framework's training module).
			engine := n != t.Root || n.Class == "" || len(k) == 1 || isEngine(n.Class)
			if !engine || len(k) != 1 {
				return n, engines
			}
			engines++
			if !engineChild(n, k[0]) {
				return n, engines
			}
			n = k[0]
		}
	}
	a, ea := descend(npu)
	b, eb := descend(bench)
	switch {
	case ea > 0 && eb > 0:
		return a, b
	case ea > 0:
		return kids(a)[0], bench.Root
	case eb > 0:
		return npu.Root, kids(b)[0]
	}
	return npu.Root, bench.Root
}

// match is one aligned pair of actual nodes.
type match struct {
	a, b          *printparse.Node
	score, margin float64
	reasons       []string
	leftover      bool // found across levels after the walk
	rootish       bool // a root or an engine wrapper paired with the other root
	// band is the pair's confidence band and doubts why it is not sure
	// (assignBands); evidence are doubts from outside the structures
	// (dumped shapes and statistics).
	band     string
	doubts   []string
	evidence []doubt
	// confirmed marks a pair whose dumped inputs and outputs agree.
	confirmed bool
	// structural notes an N:1 pair, worded for the draft keyed by each
	// side (the NPU and bench roles swap in the reverse draft).
	structural [2]string
	// grouped marks an N:1 pair of a module and a list of look-alike
	// members it computes at once (structural says so).
	grouped bool
	// group is the N:1 group the pair stands in for (nil for 1:1): the
	// module on one side and the members it computes on the other.
	group *nGroup
	// sizeA and sizeB are the printed sizes of a and b when both print
	// sizes and they differ (validate's LM107).
	sizeA, sizeB []int
}

// alignment is the result of aligning two trees.
type alignment struct {
	npu, bench *treeIndex
	pairs      []*match // outside-in (NPU pre-order)
	byA        map[*printparse.Node]*match
	byB        map[*printparse.Node]*match
	// above marks, per side, the modules with a paired descendant.
	above [2]map[*printparse.Node]bool
	// engines are, per side, the modules set aside at the roots (built
	// on first use).
	engines [2]map[*printparse.Node]bool
	// fused are the fused norms (see fusedNorms), found on first use.
	fused *[]fusedNorm
	// qkv are the fused q/k/v projections without a 1:1 partner, each
	// against the split projections of its aligned parent's partner.
	qkv []*nGroup
	// grouped and kernels memoise groupedBy and hasKernel, per side.
	grouped [2]map[*printparse.Node]*printparse.Node
	kernels [2]int8
}

// align aligns the two trees outside-in.
func align(npu, bench *treeIndex, priors map[pairKey]bool) *alignment {
	al := &aligner{npu: npu, bench: bench, locals: map[pairKey]localScore{}, subs: map[pairKey]*sub{}, priors: priors, frees: map[freeKey][]*printparse.Node{}}
	res := &alignment{npu: npu, bench: bench, byA: map[*printparse.Node]*match{}, byB: map[*printparse.Node]*match{},
		above: [2]map[*printparse.Node]bool{{}, {}}}
	root := &match{a: npu.tree.Root, b: bench.tree.Root, score: 1, margin: 1, reasons: []string{"root"}, rootish: true}
	res.add(root)
	sa, sb := startPair(npu.tree, bench.tree)
	al.skew0 = npu.infos[sa].depth - bench.infos[sb].depth
	for n := sa; n != npu.tree.Root; n = n.Parent {
		res.add(&match{a: n, b: bench.tree.Root, score: 1, margin: 1, reasons: []string{"root"}, rootish: true})
	}
	for n := sb; n != bench.tree.Root; n = n.Parent {
		m := &match{a: npu.tree.Root, b: n, score: 1, margin: 1, reasons: []string{"root"}, rootish: true}
		res.pairs = append(res.pairs, m)
		res.byB[n] = m
		res.markAbove(n, benchSide)
	}
	res.byA[npu.tree.Root], res.byB[bench.tree.Root] = root, root
	var expand func(a, b *printparse.Node)
	expand = func(a, b *printparse.Node) {
		ca, cb := npu.infos[a].canon, bench.infos[b].canon
		s := al.below(ca, cb)
		for k, p := range s.pairs {
			x, y := npu.instance(a, ca, p.x), bench.instance(b, cb, p.y)
			if x == nil || y == nil {
				continue
			}
			l := al.local(x, y)
			m := &match{a: x, b: y, score: l.raw, reasons: l.reasons}
			m.margin = s.margin[k]
			res.add(m)
			expand(x, y)
		}
	}
	expand(sa, sb)
	res.leftovers(al)
	slices.SortStableFunc(res.pairs, func(x, y *match) int { return npu.order[x.a] - npu.order[y.a] })
	return res
}

// tree is the index of one side.
func (r *alignment) tree(s side) *treeIndex {
	if s == npuSide {
		return r.npu
	}
	return r.bench
}

// matchOf is the pair n (on side s) belongs to, nil when it has none.
func (r *alignment) matchOf(n *printparse.Node, s side) *match {
	if s == npuSide {
		return r.byA[n]
	}
	return r.byB[n]
}

// node is the pair's module on side s.
func (m *match) node(s side) *printparse.Node {
	if s == npuSide {
		return m.a
	}
	return m.b
}

func (r *alignment) add(m *match) {
	r.pairs = append(r.pairs, m)
	r.byA[m.a] = m
	r.byB[m.b] = m
	r.markAbove(m.a, npuSide)
	r.markAbove(m.b, benchSide)
}

// markAbove records that n's ancestors have a paired descendant.
func (r *alignment) markAbove(n *printparse.Node, on side) {
	for p := n.Parent; p != nil && !r.above[on][p]; p = p.Parent {
		r.above[on][p] = true
	}
}

func siblings(n *printparse.Node) []*printparse.Node {
	if n.Parent == nil {
		return nil
	}
	return kids(n.Parent)
}

// leftovers pairs modules the outside-in walk left alone on both sides
// when they are clearly the same module one level apart (Megatron's
// output_layer inside the language model against Hugging Face's lm_head
// beside it). Both must sit in the same aligned region: the partner of the
// nearest aligned ancestor of one is an ancestor of the other. Candidates
// are looked for only in the regions near each module's own.
func (r *alignment) leftovers(al *aligner) {
	var ua, ub []*printparse.Node
	for _, n := range r.npu.nodes {
		if r.byA[n] == nil && r.npu.infos[n].canon == n && !r.covered(n, npuSide) && !r.hasAlignedBelow(n, npuSide) {
			ua = append(ua, n)
		}
	}
	byRegion := map[*match][]int{}
	for _, n := range r.bench.nodes {
		if r.byB[n] == nil && r.bench.infos[n].canon == n && !r.covered(n, benchSide) && !r.hasAlignedBelow(n, benchSide) {
			if m := r.alignedAncestor(n, benchSide); m != nil {
				byRegion[m] = append(byRegion[m], len(ub))
				ub = append(ub, n)
			}
		}
	}
	if len(ua) == 0 || len(ub) == 0 {
		return
	}
	near := map[*match][]*match{}
	var edges []edge
	for i, x := range ua {
		ax := r.alignedAncestor(x, npuSide)
		if ax == nil {
			continue
		}
		regions, ok := near[ax]
		if !ok {
			regions = r.nearRegions(ax)
			near[ax] = regions
		}
		for _, by := range regions {
			for _, j := range byRegion[by] {
				y := ub[j]
				if !r.sameRegion(x, y) || minor(r.npu.infos[x]) || minor(r.bench.infos[y]) || !r.sameListDepth(x, y) {
					continue
				}
				l := al.local(x, y)
				// Across levels, where a module sits says more than its
				// name: the paths decide when they share a word.
				n := nameSim(al.npu.infos[x], al.bench.infos[y])
				ps := r.pathSim(x, y)
				if ps == 0 {
					ps = n
				}
				w := l.score + wName*(ps-n)
				if !l.ok || w < admitLeftover || ps < 0.5 || !r.kinParents(x, y) {
					continue
				}
				edges = append(edges, edge{i, j, w})
			}
		}
	}
	slices.SortFunc(edges, func(p, q edge) int {
		if p.i != q.i {
			return p.i - q.i
		}
		return p.j - q.j
	})
	edges = slices.CompactFunc(edges, func(p, q edge) bool { return p.i == q.i && p.j == q.j })
	rowEdges := map[int][]edge{}
	for _, e := range edges {
		rowEdges[e.i] = append(rowEdges[e.i], e)
	}
	for _, e := range assignSparse(len(ua), len(ub), edges) {
		x, y := ua[e.i], ub[e.j]
		if r.byA[x] != nil || r.byB[y] != nil || !r.sameRegion(x, y) {
			continue // taken by an earlier leftover's subtree
		}
		l := al.local(x, y)
		m := &match{a: x, b: y, score: l.raw, reasons: append(slices.Clip(l.reasons), "leftover"), leftover: true}
		// the runner-up: the row's best other candidate, or nothing
		runner := 0.0
		for _, o := range rowEdges[e.i] {
			if o.j != e.j {
				runner = math.Max(runner, o.w)
			}
		}
		if len(ub) == 1 {
			runner = math.Inf(-1)
		}
		m.margin = math.Min(e.w, e.w-runner)
		r.add(m)
		r.expandIdentical(al, x, y)
		r.broadcast(al, m)
	}
}

// pathSim compares the paths of x (NPU) and y (bench) below the nearest
// pair that holds both: a module found across levels is told apart from
// its look-alikes by where it sits (the norm inside the attention's output
// projection and the HF layer's post_attention_layernorm).
func (r *alignment) pathSim(x, y *printparse.Node) float64 {
	for p := x.Parent; p != nil; p = p.Parent {
		if m := r.byA[p]; m != nil && isAncestor(m.b, y) {
			return tokenSim(pathTokens(rel(x, p)), pathTokens(rel(y, m.b)))
		}
	}
	return 0
}

// broadcast applies a leftover pair found inside the canonical member of
// a list (layer 0) to every member pair of the same two structures, as the
// walk does for the pairs it finds: a repeated class is aligned once and
// paired alike in every instance.
func (r *alignment) broadcast(al *aligner, m *match) {
	member := func(t *treeIndex, n *printparse.Node) *printparse.Node {
		for p := n.Parent; p != nil; p = p.Parent {
			if in := t.infos[p]; in.member && in.canon == p {
				return p
			}
		}
		return nil
	}
	ma, mb := member(r.npu, m.a), member(r.bench, m.b)
	if ma == nil || mb == nil {
		return
	}
	for _, p := range slices.Clone(r.pairs) {
		if p.a == ma || r.npu.infos[p.a].canon != ma || r.bench.infos[p.b].canon != mb {
			continue
		}
		x, y := r.npu.instance(p.a, ma, m.a), r.bench.instance(p.b, mb, m.b)
		if x == nil || y == nil || r.byA[x] != nil || r.byB[y] != nil {
			continue
		}
		c := *m
		c.a, c.b = x, y
		r.add(&c)
		r.expandIdentical(al, x, y)
	}
}

// nearRegions are the pairs whose region a module of ax's region may find
// its partner in: ax itself, the pairs of the two modules above ax's bench
// module, and the pairs of the children and grandchildren of ax's NPU
// module.
func (r *alignment) nearRegions(ax *match) []*match {
	out := []*match{ax}
	for p, i := ax.b.Parent, 0; p != nil && i < 2; p, i = p.Parent, i+1 {
		if m := r.byB[p]; m != nil {
			out = append(out, m)
		}
	}
	for _, c := range kids(ax.a) {
		if m := r.byA[c]; m != nil {
			out = append(out, m)
		}
		for _, g := range kids(c) {
			if m := r.byA[g]; m != nil {
				out = append(out, m)
			}
		}
	}
	return out
}

// sameListDepth reports whether x and y lie as many list members deep
// below their nearest aligned ancestors: a module never pairs with
// something inside one member of a list of look-alikes on the other side
// (a grouped-experts module with expert 0's projection).
func (r *alignment) sameListDepth(x, y *printparse.Node) bool {
	depth := func(n *printparse.Node, on side) int {
		d := 0
		for p := n; p != nil && r.matchOf(p, on) == nil; p = p.Parent {
			if in := r.tree(on).infos[p]; in.member && in.nkids > 0 {
				d++
			}
		}
		return d
	}
	return depth(x, npuSide) == depth(y, benchSide)
}

// isListMember reports whether n is a member of a list (ModuleList,
// Sequential: all siblings named by index).
func isListMember(n *printparse.Node) bool {
	return n.Parent != nil && isNumber(n.Name) && allNumeric(n.Parent)
}

// kinParents reports whether a leftover pair's parents allow it: when
// neither parent has a partner, they must look alike (name or class), or
// any two same-named leaves of two unrelated modules would pair
// (shared_experts.linear_fc1 with expert 0's linear_fc1).
func (r *alignment) kinParents(x, y *printparse.Node) bool {
	px, py := x.Parent, y.Parent
	if px == nil || py == nil || r.byA[px] != nil || r.byB[py] != nil {
		return true
	}
	a, b := r.npu.infos[px], r.bench.infos[py]
	return nameSim(a, b) >= 0.5 || classSim(a, b) >= 0.6
}

// covered reports whether n lies below a pair that is not canonical (a
// repeat member other than the first): those are handled by broadcast.
func (r *alignment) covered(n *printparse.Node, on side) bool {
	s := r.tree(on)
	for p := n; p != nil; p = p.Parent {
		if s.infos[p] != nil && s.infos[p].canon != p {
			return true
		}
	}
	return false
}

// expandIdentical aligns the subtrees below a leftover pair the same way
// the walk does.
func (r *alignment) expandIdentical(al *aligner, a, b *printparse.Node) {
	ca, cb := r.npu.infos[a].canon, r.bench.infos[b].canon
	s := al.below(ca, cb)
	for k, p := range s.pairs {
		x, y := r.npu.instance(a, ca, p.x), r.bench.instance(b, cb, p.y)
		if x == nil || y == nil || r.byA[x] != nil || r.byB[y] != nil {
			continue
		}
		l := al.local(x, y)
		r.add(&match{a: x, b: y, score: l.raw, reasons: l.reasons, margin: s.margin[k]})
		r.expandIdentical(al, x, y)
	}
}

// sameRegion reports whether x (NPU) and y (bench), both without a
// partner, are one level apart in an aligned region, so that a multi-level
// key can pair them without breaking the pairs around them: the partner of
// x's nearest aligned ancestor is y's nearest aligned ancestor or a child
// or grandchild of it, and that ancestor's partner is an ancestor of x
// (lm_head beside "model", output_layer inside the text decoder), or the
// same the other way round. Neither may have aligned modules below it.
func (r *alignment) sameRegion(x, y *printparse.Node) bool {
	if r.hasAlignedBelow(x, npuSide) || r.hasAlignedBelow(y, benchSide) {
		return false
	}
	ax, by := r.alignedAncestor(x, npuSide), r.alignedAncestor(y, benchSide)
	if ax == nil || by == nil {
		return false
	}
	near := func(n, top *printparse.Node) bool {
		for i, p := 0, n; p != nil && i <= 2; i, p = i+1, p.Parent {
			if p == top {
				return true
			}
		}
		return false
	}
	// x's region is at or below y's: y's region partner contains x.
	if (by.a == ax.a || isAncestor(by.a, x)) && near(ax.b, by.b) {
		return true
	}
	// y's region is at or below x's.
	return (ax.b == by.b || isAncestor(ax.b, y)) && near(by.a, ax.a)
}

// hasAlignedBelow reports whether some descendant of n (on side on) has a
// partner.
func (r *alignment) hasAlignedBelow(n *printparse.Node, on side) bool { return r.above[on][n] }

// alignedAncestor is the pair of n's nearest aligned proper ancestor (n
// on side on), nil when none is aligned.
func (r *alignment) alignedAncestor(n *printparse.Node, on side) *match {
	for p := n.Parent; p != nil; p = p.Parent {
		if m := r.matchOf(p, on); m != nil {
			return m
		}
	}
	return nil
}
