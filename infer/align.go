package infer

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/layermap/layermap/printparse"
)

// Weights of the local similarity of two modules. They sum to 1.
const (
	wName   = 0.45
	wClass  = 0.15
	wKind   = 0.25
	wStruct = 0.10
	wShape  = 0.05
)

// Alignment constants.
const (
	// admit is the least local similarity for two modules to be partners.
	admit = 0.38
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
	// lowScore and lowMargin flag low-confidence pairs.
	lowScore  = 0.55
	lowMargin = 0.08
)

// wrapperClasses are modules that wrap a whole model; they are neutral
// against any model class.
var wrapperClasses = map[string]bool{
	"DistributedDataParallel": true, "DeepSpeedEngine": true, "Float16Module": true,
	"FullyShardedDataParallel": true, "OptimizedModule": true, "DataParallel": true,
	"CheckpointWrapper": true, "FSDPCheckpointWrapper": true,
}

// genericClasses are torch containers: they never key a YAML rule, because
// a rule on them would fire at every such container in the model.
var genericClasses = map[string]bool{
	"ModuleList": true, "Sequential": true, "ModuleDict": true, "ParameterList": true, "ParameterDict": true,
}

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

// side is one tree prepared for alignment.
type side struct {
	tree  *printparse.Tree
	infos map[*printparse.Node]*info
	order map[*printparse.Node]int // pre-order position
	nodes []*printparse.Node       // pre-order, root first
	// classCount counts NPU-side modules per class as msprobe types them.
	classCount map[string]int
}

func newSide(t *printparse.Tree) *side {
	s := &side{tree: t, infos: map[*printparse.Node]*info{}, order: map[*printparse.Node]int{}, classCount: map[string]int{}}
	var walk func(n, canon *printparse.Node)
	walk = func(n, canon *printparse.Node) {
		if n.None {
			return
		}
		s.order[n] = len(s.nodes)
		s.nodes = append(s.nodes, n)
		in := &info{node: n, canon: canon, kind: n.Kind(), dims: n.Dims(), numeric: isNumber(n.Name)}
		in.name = tokenize(n.Name, nameStop)
		in.class = tokenize(n.Class, classStop)
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
	return s
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

// kindSim compares leaf kinds: -1 means "never partners".
func kindSim(a, b *info) float64 {
	ka, kb := a.kind, b.kind
	if (ka == printparse.KindIdentity) != (kb == printparse.KindIdentity) {
		return -1
	}
	leafA, leafB := a.nkids == 0, b.nkids == 0
	if ka == kb {
		if ka == printparse.KindContainer || ka == printparse.KindOther {
			if leafA != leafB {
				return 0.3
			}
			return 0.8
		}
		return 1
	}
	if leafA != leafB {
		return 0
	}
	if ka == printparse.KindOther || kb == printparse.KindOther {
		return 0.3
	}
	return 0
}

// nameSim compares module names.
func nameSim(a, b *info) float64 {
	if a.node.Name == b.node.Name {
		return 1
	}
	if a.numeric && b.numeric {
		return 0
	}
	if a.numeric || b.numeric {
		return 0.3
	}
	s := tokenSim(a.name, b.name)
	// A module named after the other's class ("encoder: MLP" vs "mlp").
	if x := 0.8 * tokenSim(a.name, b.class); x > s {
		s = x
	}
	if x := 0.8 * tokenSim(a.class, b.name); x > s {
		s = x
	}
	return s
}

// classSim compares class names.
func classSim(a, b *info) float64 {
	if a.node.Class == b.node.Class {
		return 1
	}
	if a.wrapper || b.wrapper {
		return 0.5
	}
	return tokenSim(a.class, b.class)
}

func structSim(a, b *info) float64 {
	if a.repeat > 0 || b.repeat > 0 {
		if a.repeat == b.repeat {
			return 1
		}
		if a.repeat == 0 || b.repeat == 0 {
			return 0.2
		}
		return 0.6
	}
	x, y := a.nkids, b.nkids
	if x == y {
		return 1
	}
	return float64(min(x, y)) / float64(max(x, y))
}

// local is the similarity of two modules on their own, in [0, 1], with
// the reason codes that contributed; ok is false when they may never be
// partners.
func local(a, b *info) (score float64, reasons []string, ok bool) {
	k := kindSim(a, b)
	if k < 0 {
		return 0, nil, false
	}
	n, c, st := nameSim(a, b), classSim(a, b), structSim(a, b)
	if n < 0.2 && !a.numeric && !b.numeric && (a.nkids == 0 || b.nkids == 0) {
		// Two leaves with unrelated names are not partners on kind alone
		// (linear_qkv is not o_proj).
		return 0, nil, false
	}
	total := wName + wClass + wKind + wStruct
	sum := wName*n + wClass*c + wKind*k + wStruct*st
	if len(a.dims) > 0 && len(b.dims) > 0 {
		total += wShape
		if slices.Equal(a.dims, b.dims) {
			sum += wShape
			reasons = append(reasons, "shape")
		}
	}
	score = sum / total
	switch {
	case a.node.Name == b.node.Name:
		reasons = append([]string{"name"}, reasons...)
	case n >= 0.5:
		reasons = append([]string{"synonym"}, reasons...)
	}
	if c >= 0.6 {
		reasons = append(reasons, "class")
	}
	if k >= 1 && a.kind != printparse.KindContainer && a.kind != printparse.KindOther {
		reasons = append(reasons, "kind")
	}
	if a.nkids > 0 && st >= 1 {
		if a.repeat > 0 {
			reasons = append(reasons, "repeat")
		} else {
			reasons = append(reasons, "children")
		}
	}
	return score, reasons, true
}

// pairKey keys memo tables by a pair of nodes.
type pairKey struct{ a, b *printparse.Node }

// frontierPair is one pair chosen at a frontier, relative to the parents.
type frontierPair struct {
	a, b   string // paths relative to the aligned parents
	weight float64
}

// sub is the best alignment below a pair of canonical nodes.
type sub struct {
	total  float64
	pairs  []frontierPair
	fa, fb []*printparse.Node // the final frontiers (canonical nodes)
	done   bool
}

// aligner aligns two trees outside-in.
type aligner struct {
	npu, bench *side
	locals     map[pairKey]localScore
	subs       map[pairKey]*sub
	priors     map[pairKey]bool // template-implied pairs (actual nodes)
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
	s, r, ok := local(al.npu.infos[a], al.bench.infos[b])
	raw := s
	if al.priors[k] {
		s = math.Min(1, s+priorBonus)
		ok = true
		r = append(r, "template")
	}
	l := localScore{s, raw, r, ok && s >= admit}
	al.locals[k] = l
	return l
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

// below aligns the descendants of a pair of canonical nodes.
func (al *aligner) below(a, b *printparse.Node) *sub {
	k := pairKey{a, b}
	if s, ok := al.subs[k]; ok {
		return s
	}
	s := &sub{}
	al.subs[k] = s // guards against cycles; filled below
	fa, fb := kids(a), kids(b)
	if len(fa) == 0 || len(fb) == 0 {
		s.done = true
		return s
	}
	best, pairs := al.evalFrontier(a, b, fa, fb, 0)
	dissolved := 0
	for {
		improved := false
		var bestA, bestB []*printparse.Node
		var bestPairs []frontierPair
		bestTotal := best
		try := func(na, nb []*printparse.Node) {
			t, p := al.evalFrontier(a, b, na, nb, dissolved+1)
			if t > bestTotal+1e-9 {
				bestTotal, bestA, bestB, bestPairs = t, na, nb, p
				improved = true
			}
		}
		for i, x := range fa {
			if canDissolve(x, a) {
				try(replaceAt(fa, i, kids(x)), fb)
			}
		}
		for i, y := range fb {
			if canDissolve(y, b) {
				try(fa, replaceAt(fb, i, kids(y)))
			}
		}
		if !improved {
			break
		}
		fa, fb, best, pairs = bestA, bestB, bestTotal, bestPairs
		dissolved++
	}
	s.total, s.pairs, s.fa, s.fb, s.done = best, pairs, fa, fb, true
	return s
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

func canDissolve(x, top *printparse.Node) bool {
	if len(kids(x)) == 0 || x.Repeat != nil {
		return false
	}
	return x.Depth()-top.Depth() < maxDissolveDepth
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
	return strings.TrimPrefix(n.Path, top.Path+".")
}

// evalFrontier solves the assignment between two frontiers and returns its
// worth and the chosen pairs.
func (al *aligner) evalFrontier(pa, pb *printparse.Node, fa, fb []*printparse.Node, dissolved int) (float64, []frontierPair) {
	ra, rb := kindRanks(al.npu, fa), kindRanks(al.bench, fb)
	w := make([][]float64, len(fa))
	for i, x := range fa {
		w[i] = make([]float64, len(fb))
		for j, y := range fb {
			if !al.local(x, y).ok {
				continue
			}
			v := al.value(x, y)
			if ra[i] == rb[j] {
				v += orderWeight
			} else {
				v += orderWeight * (1 - math.Min(1, math.Abs(ra[i]-rb[j])))
			}
			if rel(x, pa) == rel(y, pb) {
				v += pathWeight
			}
			w[i][j] = v
		}
	}
	assign := hungarian(w)
	total := -dissolvePenalty * float64(dissolved)
	var pairs []frontierPair
	for i, j := range assign {
		if j < 0 || w[i][j] <= 0 {
			continue
		}
		total += w[i][j]
		pairs = append(pairs, frontierPair{a: rel(fa[i], pa), b: rel(fb[j], pb), weight: w[i][j]})
	}
	return total, pairs
}

// kindRanks gives each frontier node its relative position among the
// frontier nodes of the same kind, in [0, 1].
func kindRanks(s *side, f []*printparse.Node) []float64 {
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

// match is one aligned pair of actual nodes.
type match struct {
	a, b           *printparse.Node
	score, margin  float64
	reasons        []string
	leftover       bool // found across levels after the walk
	lowConfidence  bool
	structuralNote string
}

// alignment is the result of aligning two trees.
type alignment struct {
	npu, bench *side
	pairs      []*match // outside-in (NPU pre-order)
	byA        map[*printparse.Node]*match
	byB        map[*printparse.Node]*match
}

// align aligns the two trees outside-in.
func align(npu, bench *side, priors map[pairKey]bool) *alignment {
	al := &aligner{npu: npu, bench: bench, locals: map[pairKey]localScore{}, subs: map[pairKey]*sub{}, priors: priors}
	res := &alignment{npu: npu, bench: bench, byA: map[*printparse.Node]*match{}, byB: map[*printparse.Node]*match{}}
	root := &match{a: npu.tree.Root, b: bench.tree.Root, score: 1, reasons: []string{"root"}}
	res.add(root)
	var expand func(a, b *printparse.Node)
	expand = func(a, b *printparse.Node) {
		s := al.below(npu.infos[a].canon, bench.infos[b].canon)
		for _, p := range s.pairs {
			x, y := a.Lookup(p.a), b.Lookup(p.b)
			if x == nil || y == nil {
				continue
			}
			l := al.local(x, y)
			m := &match{a: x, b: y, score: l.raw, reasons: l.reasons}
			m.margin = al.margin(a, b, s, x, y)
			res.add(m)
			expand(x, y)
		}
	}
	expand(root.a, root.b)
	res.leftovers(al)
	for _, m := range res.pairs {
		m.lowConfidence = m != root && (m.score < lowScore || m.margin < lowMargin)
	}
	slices.SortStableFunc(res.pairs, func(x, y *match) int { return npu.order[x.a] - npu.order[y.a] })
	return res
}

func (r *alignment) add(m *match) {
	r.pairs = append(r.pairs, m)
	r.byA[m.a] = m
	r.byB[m.b] = m
}

// margin is how much better x<->y scores than the runner-up: the best
// other partner of x, or the best other claimant of y, in the final
// frontiers below the aligned parents. Scores count the local similarity
// and the sibling rank (what the assignment saw besides the subtrees).
func (al *aligner) margin(pa, pb *printparse.Node, s *sub, x, y *printparse.Node) float64 {
	ca, cb := al.npu.infos[pa].canon, al.bench.infos[pb].canon
	var fa, fb []*printparse.Node
	for _, n := range s.fa {
		if m := pa.Lookup(rel(n, ca)); m != nil {
			fa = append(fa, m)
		}
	}
	for _, n := range s.fb {
		if m := pb.Lookup(rel(n, cb)); m != nil {
			fb = append(fb, m)
		}
	}
	ra, rb := kindRanks(al.npu, fa), kindRanks(al.bench, fb)
	adj := func(i, j int) float64 {
		l := al.local(fa[i], fb[j])
		if !l.ok {
			return 0
		}
		return l.score + orderWeight/2*(1-math.Min(1, math.Abs(ra[i]-rb[j])))
	}
	xi, yj := slices.Index(fa, x), slices.Index(fb, y)
	if xi < 0 || yj < 0 {
		return al.local(x, y).score
	}
	best := adj(xi, yj)
	runner := 0.0
	for j := range fb {
		if j != yj {
			runner = math.Max(runner, adj(xi, j))
		}
	}
	for i := range fa {
		if i != xi {
			runner = math.Max(runner, adj(i, yj))
		}
	}
	return math.Min(1, best-runner)
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
		if r.byA[n] == nil && r.npu.infos[n].canon == n && !r.covered(n, true) {
			ua = append(ua, n)
		}
	}
	for _, n := range r.bench.nodes {
		if r.byB[n] == nil && r.bench.infos[n].canon == n && !r.covered(n, false) {
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
			l := al.local(x, y)
			if !l.ok || l.score < admitLeftover || nameSim(al.npu.infos[x], al.bench.infos[y]) < 0.5 {
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

// covered reports whether n lies below a pair that is not canonical (a
// repeat member other than the first): those are handled by broadcast.
func (r *alignment) covered(n *printparse.Node, npuSide bool) bool {
	s := r.bench
	if npuSide {
		s = r.npu
	}
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
	s := al.below(r.npu.infos[a].canon, r.bench.infos[b].canon)
	for _, p := range s.pairs {
		x, y := a.Lookup(p.a), b.Lookup(p.b)
		if x == nil || y == nil || r.byA[x] != nil || r.byB[y] != nil {
			continue
		}
		l := al.local(x, y)
		r.add(&match{a: x, b: y, score: l.raw, reasons: l.reasons, margin: al.margin(a, b, s, x, y)})
		r.expandIdentical(al, x, y)
	}
}

// sameRegion reports whether x (NPU) and y (bench) lie in one aligned
// region: the partner of x's nearest aligned ancestor is an ancestor of y,
// or the other way round.
func (r *alignment) sameRegion(x, y *printparse.Node) bool {
	if ax := r.alignedAncestorA(x); ax != nil && isAncestor(ax.b, y) {
		return true
	}
	if by := r.alignedAncestorB(y); by != nil && isAncestor(by.a, x) {
		return true
	}
	return false
}

func (r *alignment) alignedAncestorA(n *printparse.Node) *match {
	for p := n.Parent; p != nil; p = p.Parent {
		if m := r.byA[p]; m != nil {
			return m
		}
	}
	return nil
}

func (r *alignment) alignedAncestorB(n *printparse.Node) *match {
	for p := n.Parent; p != nil; p = p.Parent {
		if m := r.byB[p]; m != nil {
			return m
		}
	}
	return nil
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
