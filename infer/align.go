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

// wrapperClasses are modules that wrap a whole model; they are neutral
// against any model class.
var wrapperClasses = map[string]bool{
	"DistributedDataParallel": true, "DeepSpeedEngine": true, "Float16Module": true,
	"FullyShardedDataParallel": true, "OptimizedModule": true, "DataParallel": true,
	"CheckpointWrapper": true, "FSDPCheckpointWrapper": true,
}

// engineClasses are the training engines msprobe may be handed: they wrap
// the model once at the top and have no counterpart worth a YAML line
// (DeepSpeedEngine on one side is DistributedDataParallel on the other).
var engineClasses = map[string]bool{
	"DistributedDataParallel": true, "DeepSpeedEngine": true, "FullyShardedDataParallel": true, "DataParallel": true,
}

// genericClasses are torch containers: they never key a YAML rule, because
// a rule on them would fire at every such container in the model.
var genericClasses = map[string]bool{
	"ModuleList": true, "Sequential": true, "ModuleDict": true, "ParameterList": true, "ParameterDict": true,
}

// paramContainers hold parameters, not modules (PEFT's lora_embedding_A):
// they have no forward, so they never appear in a dump and pair with
// nothing.
var paramContainers = map[string]bool{"ParameterDict": true, "ParameterList": true}

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

// kindSim compares leaf kinds: -1 means "never partners".
func kindSim(a, b *info) float64 {
	ka, kb := a.kind, b.kind
	if (ka == printparse.KindIdentity) != (kb == printparse.KindIdentity) {
		return -1
	}
	if paramContainers[a.node.Class] != paramContainers[b.node.Class] {
		return -1 // parameters, no forward: never a module's partner
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
	if isRotary(a) != isRotary(b) {
		// A rotary embedding computes cos/sin tables; it is not a learned
		// position table nor anything else (position_embeddings is not
		// Qwen2RotaryEmbedding).
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

// isRotary reports whether a module is a rotary position embedding, by
// its name or class (rotary_pos_emb, Qwen2RotaryEmbedding, Llama3ScaledRoPE).
func isRotary(in *info) bool {
	for _, s := range []string{in.node.Name, in.node.Class} {
		if s = strings.ToLower(s); strings.Contains(s, "rotary") || strings.Contains(s, "rope") {
			return true
		}
	}
	return false
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
	lowConfidence bool
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
		s := al.below(npu.infos[a].canon, bench.infos[b].canon)
		for k, p := range s.pairs {
			x, y := a.Lookup(p.a), b.Lookup(p.b)
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
	for _, m := range res.pairs {
		m.lowConfidence = !m.rootish && (m.score < lowScore || m.margin < lowMargin)
	}
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
	s := al.below(r.npu.infos[a].canon, r.bench.infos[b].canon)
	for k, p := range s.pairs {
		x, y := a.Lookup(p.a), b.Lookup(p.b)
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
