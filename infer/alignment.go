package infer

import (
	"math"
	"slices"

	"github.com/layermap/layermap/printparse"
)

// startPair is where the outside-in walk starts: the roots, after the
// training engines on top of either model (DistributedDataParallel,
// DeepSpeedEngine, FSDP, a list of models) are set aside. When both sides
// have engines the innermost engines pair (their children are the models);
// when one side has them its model pairs with the other side's root.
func startPair(npu, bench *printparse.Tree) (a, b *printparse.Node) {
	descend := func(t *printparse.Tree) (last *printparse.Node, engines int) {
		n := t.Root
		for {
			k := kids(n)
			isEngine := (n.Parent == nil && n.Class == "") || engineClasses[n.Class]
			if !isEngine || len(k) != 1 {
				return n, engines
			}
			engines++
			if !engineClasses[k[0].Class] {
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
	// structural notes an N:1 pair, worded for the draft keyed by each
	// side (the NPU and bench roles swap in the reverse draft).
	structural [2]string
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
}

// align aligns the two trees outside-in.
func align(npu, bench *treeIndex, priors map[pairKey]bool) *alignment {
	al := &aligner{npu: npu, bench: bench, locals: map[pairKey]localScore{}, subs: map[pairKey]*sub{}, priors: priors, frees: map[freeKey][]*printparse.Node{}}
	res := &alignment{npu: npu, bench: bench, byA: map[*printparse.Node]*match{}, byB: map[*printparse.Node]*match{}}
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
// nearest aligned ancestor of one is an ancestor of the other.
func (r *alignment) leftovers(al *aligner) {
	var ua, ub []*printparse.Node
	for _, n := range r.npu.nodes {
		if r.byA[n] == nil && r.npu.infos[n].canon == n && !r.covered(n, npuSide) {
			ua = append(ua, n)
		}
	}
	for _, n := range r.bench.nodes {
		if r.byB[n] == nil && r.bench.infos[n].canon == n && !r.covered(n, benchSide) {
			ub = append(ub, n)
		}
	}
	if len(ua) == 0 || len(ub) == 0 {
		return
	}
	w := make([][]float64, len(ua))
	for i, x := range ua {
		w[i] = make([]float64, len(ub))
		for j, y := range ub {
			if !r.sameRegion(x, y) {
				continue
			}
			if minor(r.npu.infos[x]) || minor(r.bench.infos[y]) {
				continue
			}
			l := al.local(x, y)
			if !l.ok || l.score < admitLeftover || nameSim(al.npu.infos[x], al.bench.infos[y]) < 0.5 || !r.kinParents(x, y) {
				continue
			}
			w[i][j] = l.score
		}
	}
	for i, j := range hungarian(w) {
		if j < 0 || w[i][j] <= 0 {
			continue
		}
		x, y := ua[i], ub[j]
		if r.byA[x] != nil || r.byB[y] != nil || !r.sameRegion(x, y) {
			continue // taken by an earlier leftover's subtree
		}
		l := al.local(x, y)
		m := &match{a: x, b: y, score: l.raw, reasons: append(slices.Clip(l.reasons), "leftover"), leftover: true}
		m.margin = w[i][j]
		for j2 := range ub {
			if j2 != j {
				m.margin = math.Min(m.margin, w[i][j]-w[i][j2])
			}
		}
		r.add(m)
		r.expandIdentical(al, x, y)
	}
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
func (r *alignment) hasAlignedBelow(n *printparse.Node, on side) bool {
	found := false
	for _, c := range kids(n) {
		c.Walk(func(d *printparse.Node) bool {
			if found {
				return false
			}
			if r.matchOf(d, on) != nil {
				found = true
				return false
			}
			return true
		})
	}
	return found
}

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
