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
	// lowScore and lowMargin flag low-confidence pairs.
	lowScore  = 0.55
	lowMargin = 0.08
)

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
	fa, fb []*printparse.Node // the final frontiers (below canonical nodes)
	margin []float64          // per pair, see margins
	count  int                // pairs below, all levels
	done   bool
}

// aligner aligns two trees outside-in.
type aligner struct {
	npu, bench *treeIndex
	locals     map[pairKey]localScore
	subs       map[pairKey]*sub
	priors     map[pairKey]bool // template-implied pairs (actual nodes)
	frees      map[freeKey][]*printparse.Node
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
	if ok && !l.ok && s >= admitStruct && len(kids(a)) > 0 && len(kids(b)) > 0 {
		// Two containers whose names say little are partners when what
		// lies below them aligns (GPTModel "module" and Qwen2Model
		// "model" in a Float16Module / ForCausalLM pair).
		ca, cb := al.npu.infos[a].canon, al.bench.infos[b].canon
		below := al.below(ca, cb)
		n := min(al.npu.size[a], al.bench.size[b])
		if frac := float64(below.count) / float64(max(n, 1)); frac >= 0.6 {
			l.score = math.Max(l.score, admit+0.4*(frac-0.6))
			l.raw = math.Max(l.raw, l.score)
			l.ok = true
			if !slices.Contains(l.reasons, "children") {
				l.reasons = append(slices.Clip(l.reasons), "children")
			}
			al.locals[k] = l
		}
	}
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
	s.margin = al.margins(a, b, s)
	for _, p := range pairs {
		x, y := a.Lookup(p.a), b.Lookup(p.b)
		if x != nil && y != nil {
			s.count += 1 + al.below(al.npu.infos[x].canon, al.bench.infos[y].canon).count
		}
	}
	return s
}

func canDissolve(x, top *printparse.Node) bool {
	k := kids(x)
	if len(k) == 0 || x.Repeat != nil {
		return false
	}
	// A list's members pair only with another list's members: looking
	// through the list would let layer 10 pair with anything.
	if len(k) > 1 && allNumeric(x) {
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

// wrapperSegments are the child names under which wrappers hold the
// module they wrap (activation checkpointing, FSDP, torch.compile).
var wrapperSegments = map[string]bool{"_checkpoint_wrapped_module": true, "_fsdp_wrapped_module": true, "_orig_mod": true}

// samePath reports whether two relative paths are the same, wrapper
// segments aside: one line at the wrapper's class consumes the segment for
// every instance (FSDPCheckpointWrapper: _checkpoint_wrapped_module.attn),
// nearly as cheap as no line, and far cheaper than pairing each wrapped
// module with a line of its own at every layer index.
func samePath(a, b string) bool {
	if a == b {
		return true
	}
	strip := func(p string) string {
		var out []string
		for _, s := range strings.Split(p, ".") {
			if !wrapperSegments[s] {
				out = append(out, s)
			}
		}
		return strings.Join(out, ".")
	}
	return strip(a) == strip(b)
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
			if samePath(rel(x, pa), rel(y, pb)) {
				v += pathWeight
			}
			w[i][j] = v
		}
	}
	assign := hungarian(w)
	total := -dissolvePenalty * float64(dissolved)
	var pairs []frontierPair
	usedA, usedB := make([]bool, len(fa)), make([]bool, len(fb))
	for i, j := range assign {
		if j < 0 || w[i][j] <= 0 {
			continue
		}
		usedA[i], usedB[j] = true, true
		total += w[i][j]
		pairs = append(pairs, frontierPair{a: rel(fa[i], pa), b: rel(fb[j], pb), weight: w[i][j]})
	}
	total += al.crossCredit(fa, fb, assign, usedA, usedB)
	return total, pairs
}

// crossCredit is what the pairs found across levels after the walk will
// add: a frontier node left without a partner that clearly is a free
// module one or two levels inside the partner of another frontier node
// (lm_head beside "model" and output_layer inside GPTModel). The walk's
// leftover pass makes these pairs; counting them here lets the choice
// between keeping a level and looking through it see them.
func (al *aligner) crossCredit(fa, fb []*printparse.Node, assign []int, usedA, usedB []bool) float64 {
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
	for i, j := range assign {
		if j < 0 || !usedA[i] {
			continue
		}
		ca, cb := al.npu.infos[fa[i]].canon, al.bench.infos[fb[j]].canon
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
			if nameSim(al.npu.infos[x], al.bench.infos[y]) < 0.5 {
				continue
			}
			if l := al.local(x, y); l.ok && l.score >= admitLeftover && l.score > best {
				best, bz = l.score, z
			}
		}
		if bz != nil {
			taken[bz] = true
			credit += best
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
// the alignment below n (on side on) leaves without a partner.
func freeBelow(n *printparse.Node, s *sub, on side) []*printparse.Node {
	matched := map[string]bool{}
	for _, p := range s.pairs {
		if on == npuSide {
			matched[p.a] = true
		} else {
			matched[p.b] = true
		}
	}
	inPair := func(c *printparse.Node) bool {
		r := rel(c, n)
		for m := range matched {
			if r == m || strings.HasPrefix(r, m+".") {
				return true
			}
		}
		return false
	}
	var out []*printparse.Node
	for _, c := range kids(n) {
		if !inPair(c) {
			out = append(out, c)
		}
		for _, g := range kids(c) {
			if !inPair(g) && !inPair(c) {
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
// it scores than the runner-up: the best other partner of either side in
// the final frontiers. Scores count the local similarity and the sibling
// rank (what the assignment saw besides the subtrees). They are computed
// once per canonical pair of parents and hold for every repeat member.
func (al *aligner) margins(a, b *printparse.Node, s *sub) []float64 {
	fa, fb := s.fa, s.fb
	ra, rb := kindRanks(al.npu, fa), kindRanks(al.bench, fb)
	ia, ib := map[string]int{}, map[string]int{}
	for i, n := range fa {
		ia[rel(n, a)] = i
	}
	for j, n := range fb {
		ib[rel(n, b)] = j
	}
	adj := func(i, j int) float64 {
		l := al.local(fa[i], fb[j])
		if !l.ok {
			return 0
		}
		return l.score + orderWeight/2*(1-math.Min(1, math.Abs(ra[i]-rb[j])))
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
	for i := range fa {
		for j := range fb {
			v := adj(i, j)
			push(&rows[i], v, j)
			push(&cols[j], v, i)
		}
	}
	out := make([]float64, len(s.pairs))
	for k, p := range s.pairs {
		i, j := ia[p.a], ib[p.b]
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
