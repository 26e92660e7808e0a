// Package infer drafts msprobe's layer_mapping.yaml from two module trees:
// it aligns the NPU-side tree (whose classes key the YAML) with the bench
// side outside-in, emits the renames an expert would write, resolves the
// classes that need different renames in different places, and proves the
// draft by running msprobe's resolver (package mapping) over both trees.
//
// # Alignment
//
// The roots are aligned first. For every aligned pair, the children of both
// are aligned as an assignment problem (Kuhn-Munkres, so that one good pair
// cannot steal another's partner), where any module may be looked through —
// its children take its place — when that pairs more of the subtree: extra
// levels on one side (Float16Module's "module", Megatron's
// "language_model.embedding" against "embedding") become multi-level keys.
// A pair's worth is its local similarity plus the worth of the best
// alignment below it, so structure decides when names do not. Local
// similarity combines name tokens (split at "_", ".", digits and camelCase,
// with a synonym table: attn = attention = self_attn, fc1 = up = h_to_4h,
// norm = layernorm = ln, lm_head = output_layer, visual = image_encoder,
// merger = projector, model = language_model = text_decoder, qkv =
// query_key_value, ...; Levenshtein for near misses), class-name tokens,
// leaf kind, printed shapes, child and repeat counts, and the rank among
// siblings of the same kind. A repeat group ("(0-27): 28 x Layer") is
// aligned once and the result applied to every index. After the walk,
// modules left alone on both sides that are clearly the same module one
// level apart (output_layer inside the language model, lm_head beside it)
// are paired; their rule goes to the nearest ancestor whose partner
// contains the target. Everything is deterministic.
//
// # Emission and conflicts
//
// msprobe keys a rule by the class of the renamed child's parent. For every
// aligned pair, the rule sits at the nearest aligned ancestor (never a
// ModuleList, Sequential or ModuleDict: a rule there would fire at every
// such container) and says "child path: partner path" relative to the two.
// Identity needs no line. When a class's instances need different renames
// (MindSpeed-MM's vision and text TransformerLayer, or MLP in the layers and
// in the projector), the group of instances that would need the most lines
// keeps the class rule and every other instance escapes it through longer
// keys at its nearest aligned ancestor whose class occurs once — one line
// per list index inside a repeat group, identity lines included where the
// class rule would otherwise rename. The draft is then run through
// mapping.Resolver over both trees; every aligned pair it does not reproduce
// goes to the sidecar.
//
// # Sidecar
//
// Pairs no YAML can express are written as a YAML list of module paths,
// the format `layermap compare --pairs FILE` reads:
//
//	# pairs.yaml
//	- npu: 0.module.module.text_decoder.decoder.layers.0.self_attention
//	  bench: module.model.layers.0.self_attn
//
// Paths are full module paths as msprobe names them (list index first for
// a list of models), without the Module./Cell. prefix and class.
package infer

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/layermap/layermap/mapping"
	"github.com/layermap/layermap/printparse"
	"github.com/layermap/layermap/templates"
)

// Template choices of Options.Template besides a template name.
const (
	TemplateAuto = "auto"
	TemplateNone = "none"
)

// Options tunes Suggest.
type Options struct {
	// Template is TemplateAuto (the default when empty: use the best
	// built-in template that applies), TemplateNone, or a template name
	// (see templates.Names).
	Template string
}

// Result is a drafted mapping in both directions with the evidence.
type Result struct {
	// Mapping is keyed by NPU classes (NPU -> bench).
	Mapping *mapping.Mapping
	// Reverse is keyed by bench classes (bench -> NPU), from the same
	// alignment.
	Reverse *mapping.Mapping
	// Pairs are the aligned modules, outside-in (NPU pre-order), repeat
	// groups expanded.
	Pairs []Pair
	// Roots are the roots and the training engines set aside with them
	// (DistributedDataParallel = DeepSpeedEngine): paired, but no YAML line
	// names a root ("" is the root's path).
	Roots []Pair
	// Unmatched lists the modules without a partner; UnmatchedWhy says
	// why, by path (either side): an extra level looked through, a
	// placeholder, a layer index the other side lacks, a fused module.
	Unmatched    Unmatched
	UnmatchedWhy map[string]string
	// Conflicts are the NPU-keyed classes that need different renames in
	// different places, and how the draft resolves them.
	Conflicts []Conflict
	// ReverseConflicts are the same for the reverse mapping.
	ReverseConflicts []Conflict
	// Coverage is the share of NPU modules (root excluded) with a partner.
	Coverage float64
	// Proven is the share of aligned NPU modules that msprobe's resolver,
	// given Mapping, sends to their partner.
	Proven float64
	// ReverseProven is the same for Reverse.
	ReverseProven float64
	// Template names the template used for Mapping ("" for none);
	// ReverseTemplate the one used for Reverse.
	Template, ReverseTemplate string
	// TemplateUnapplied lists the template lines that did not apply to
	// these trees, with the reason.
	TemplateUnapplied []string
	// Sidecar holds the pairs Mapping cannot express; ReverseSidecar the
	// ones Reverse cannot.
	Sidecar, ReverseSidecar []NodePair
	// Unintended lists NPU modules without a partner that the resolver,
	// given Mapping, still pairs with some bench module (ReverseUnintended:
	// the same for Reverse).
	Unintended, ReverseUnintended []NodePair
	// Structural notes fused and split modules (N:1 pairs), never hidden.
	Structural []string
	// NPUSource and BenchSource name the inputs.
	NPUSource, BenchSource string
}

// Pair is one aligned pair of modules.
type Pair struct {
	// NPU and Bench are full module paths.
	NPU   string `json:"npu"`
	Bench string `json:"bench"`
	// NPUClass and BenchClass are the printed classes.
	NPUClass   string `json:"npu_class"`
	BenchClass string `json:"bench_class"`
	// Score is the local similarity in [0, 1]; Margin how much better it is
	// than the runner-up (the best other partner of either side).
	Score  float64 `json:"score"`
	Margin float64 `json:"margin"`
	// Reasons are codes: name, synonym, class, kind, shape, children,
	// repeat, template, leftover, root.
	Reasons []string `json:"reasons"`
	// LowConfidence flags a low score or a small margin.
	LowConfidence bool `json:"low_confidence,omitempty"`
	// Structural notes an N:1 pair (fused on one side).
	Structural string `json:"structural,omitempty"`
	// SizesDiffer says the two modules print different sizes (in and
	// out features, embedding count and dimension, normalized shape):
	// "NPU [256 64], bench [4096 1024]". Two runs of one model print the
	// same sizes; a difference means different configurations or a wrong
	// pair.
	SizesDiffer string `json:"sizes_differ,omitempty"`
	// Proven reports that the resolver, given Mapping, pairs them.
	Proven bool `json:"proven"`
}

// Unmatched lists modules without a partner, full paths in printed order.
type Unmatched struct {
	NPU   []string `json:"npu"`
	Bench []string `json:"bench"`
}

// NodePair is one explicit module pair of the sidecar file; the format
// is mapping.ModulePair's (mapping.WritePairs, mapping.ReadPairs).
type NodePair = mapping.ModulePair

// Suggest aligns npu with bench and drafts the mapping in both directions.
func Suggest(npu, bench *printparse.Tree, opts Options) (*Result, error) {
	if npu == nil || bench == nil || npu.Root == nil || bench.Root == nil {
		return nil, errors.New("infer: both trees are needed")
	}
	r := &Result{NPUSource: npu.Source, BenchSource: bench.Source}
	fwd, rev, err := chooseTemplates(npu, bench, opts.Template)
	if err != nil {
		return nil, err
	}
	ns, bs := newSide(npu), newSide(bench)
	al := alignWith(ns, bs, fwd, rev)
	// A template detected by class names whose lines the structures
	// contradict more often than not is some other model's: it is dropped
	// and said so, rather than named as the draft's prior.
	var dropped []string
	if opts.Template == "" || opts.Template == TemplateAuto {
		if fwd != nil && contradicted(fwd, al, false) {
			dropped = append(dropped, notUsed(fwd, al, false))
			fwd = nil
		}
		if rev != nil && contradicted(rev, al, true) {
			dropped = append(dropped, notUsed(rev, al, true))
			rev = nil
		}
		if len(dropped) > 0 {
			ns, bs = newSide(npu), newSide(bench)
			al = alignWith(ns, bs, fwd, rev)
		}
	}
	if fwd != nil {
		r.Template = fwd.Template.Name
	}
	if rev != nil {
		r.ReverseTemplate = rev.Template.Name
	}
	notes := structuralNotes(al)
	for _, m := range al.pairs {
		if da, db := al.npu.infos[m.a].dims, al.bench.infos[m.b].dims; !m.rootish && len(da) > 0 && len(db) > 0 && !slices.Equal(da, db) {
			m.sizeA, m.sizeB = da, db
		}
	}
	r.TemplateUnapplied = dropped
	if fwd != nil {
		r.TemplateUnapplied = append(r.TemplateUnapplied, unapplied(fwd, al, false)...)
		r.TemplateUnapplied = append(r.TemplateUnapplied, contradictions(fwd, al, false)...)
	}
	if rev != nil {
		r.TemplateUnapplied = append(r.TemplateUnapplied, unapplied(rev, al, true)...)
		r.TemplateUnapplied = append(r.TemplateUnapplied, contradictions(rev, al, true)...)
	}
	fv, rv := newView(al, false), newView(al, true)
	fd := emit(fv, fwd, header(npu, bench, fwd, false))
	rd := emit(rv, rev, header(bench, npu, rev, true))
	r.Mapping, r.Reverse = fd.m, rd.m
	r.Conflicts, r.ReverseConflicts = fd.conflicts, rd.conflicts
	r.Sidecar, r.ReverseSidecar = fd.sidecar, rd.sidecar
	r.Unintended, r.ReverseUnintended = fd.unintended, rd.unintended
	r.Structural = notes
	matched := 0
	for _, m := range al.pairs {
		if m.a.Parent == nil || m.b.Parent == nil && m.rootish {
			if m.rootish {
				r.Roots = append(r.Roots, Pair{NPU: m.a.Path, Bench: m.b.Path, NPUClass: rootClassOf(npu, m.a), BenchClass: rootClassOf(bench, m.b),
					Score: 1, Margin: 1, Reasons: []string{"root"}, Proven: true})
			}
			continue
		}
		matched++
		r.Pairs = append(r.Pairs, Pair{
			NPU: m.a.Path, Bench: m.b.Path, NPUClass: m.a.Class, BenchClass: m.b.Class,
			Score: round(m.score), Margin: round(m.margin), Reasons: m.reasons,
			LowConfidence: m.lowConfidence, Structural: m.structuralNote, SizesDiffer: sizesDiffer(m, false), Proven: fd.proven[m.a],
		})
	}
	r.Proven, r.ReverseProven = 1, 1 // nothing to prove
	if matched > 0 {
		r.Proven = float64(len(fd.proven)) / float64(matched)
		r.ReverseProven = float64(len(rd.proven)) / float64(matched)
	}
	r.UnmatchedWhy = map[string]string{}
	for _, n := range ns.nodes[1:] {
		if al.byA[n] == nil {
			r.Unmatched.NPU = append(r.Unmatched.NPU, n.Path)
			r.UnmatchedWhy[n.Path] = al.whyUnmatched(n, true)
		}
	}
	if n := matched + len(r.Unmatched.NPU); n > 0 {
		r.Coverage = float64(matched) / float64(n)
	}
	for _, n := range bs.nodes[1:] {
		if al.byB[n] == nil {
			r.Unmatched.Bench = append(r.Unmatched.Bench, n.Path)
			r.UnmatchedWhy[n.Path] = al.whyUnmatched(n, false)
		}
	}
	return r, nil
}

// partner returns the node n is aligned with: n is on the NPU side when
// npuSide is set, on the bench side otherwise; nil when n is unpaired.
func (al *alignment) partner(n *printparse.Node, npuSide bool) *printparse.Node {
	if npuSide {
		if m := al.byA[n]; m != nil {
			return m.b
		}
	} else if m := al.byB[n]; m != nil {
		return m.a
	}
	return nil
}

// whyUnmatched says in a few words why n has no partner.
func (al *alignment) whyUnmatched(n *printparse.Node, npuSide bool) string {
	s, by := al.bench, al.byB
	if npuSide {
		s, by = al.npu, nil
	}
	in := s.infos[n]
	aligned := func(x *printparse.Node) bool {
		if npuSide {
			return al.byA[x] != nil
		}
		return by[x] != nil
	}
	switch {
	case in.kind == printparse.KindIdentity:
		return "placeholder (" + n.Class + ")"
	case paramContainers[n.Class]:
		return "parameters (" + n.Class + "), no forward: msprobe never dumps it"
	case r0(al, n, npuSide):
		return "engine wrapper, paired with the other root"
	}
	below := false
	for _, c := range kids(n) {
		c.Walk(func(d *printparse.Node) bool {
			if aligned(d) {
				below = true
			}
			return !below
		})
	}
	if below {
		return "extra level: looked through, its children are paired"
	}
	if n.Repeat != nil && n.Parent != nil && aligned(n.Parent) {
		return "layer index the other side does not have"
	}
	for p := n.Parent; p != nil; p = p.Parent {
		if p.Repeat != nil {
			if !aligned(p) {
				return "inside an unpaired layer"
			}
			break
		}
	}
	if p := n.Parent; p != nil {
		pp := al.partner(p, npuSide)
		if pp != nil && splitQKV(p) != "" && strings.Contains(splitQKV(p), n.Name) {
			for _, c := range kids(pp) {
				if strings.Contains(c.Name, "qkv") || strings.Contains(c.Name, "query_key_value") {
					return "split q/k/v: the other side fuses them in " + c.Name + " (see structural)"
				}
			}
		}
		if hasToken(in.name, "head") && in.kind == printparse.KindLinear {
			for _, c := range kids(p) {
				m := al.byB[c]
				if npuSide {
					m = al.byA[c]
				}
				if m != nil && strings.Contains(m.structuralNote, "has no output projection") {
					other := m.a
					if npuSide {
						other = m.b
					}
					return "output projection: the other side's " + other.Name + " computes it itself (see structural)"
				}
			}
		}
		if hasToken(in.name, "gate") {
			for _, c := range kids(p) {
				if m := al.byA[c]; npuSide && m != nil && m.structuralNote != "" {
					return "gated MLP: the other side fuses it into " + m.b.Name + " (see structural)"
				}
				if m := al.byB[c]; !npuSide && m != nil && m.structuralNote != "" {
					return "gated MLP: the other side fuses it into " + m.a.Name + " (see structural)"
				}
			}
		}
	}
	for p := n; p != nil && !aligned(p); p = p.Parent {
		if strings.HasPrefix(strings.ToLower(p.Name), "lora_") {
			return "LoRA adapter: nothing like it on the other side"
		}
	}
	if isRotary(in) {
		// The other side's paired rotary embedding nearest to n: the one
		// whose partner shares the longest path prefix with n (the text
		// model's, not the vision tower's).
		other, by := al.npu, al.byA
		if npuSide {
			other, by = al.bench, al.byB
		}
		var best *printparse.Node
		bestLen := -1
		for _, o := range other.nodes {
			m := by[o]
			if m == nil || !isRotary(other.infos[o]) {
				continue
			}
			mine := m.b // o is NPU, its partner on n's (bench) side
			if npuSide {
				mine = m.a
			}
			if l := commonSegments(mine.Path, n.Path); l > bestLen {
				best, bestLen = o, l
			}
		}
		if best != nil {
			return "rotary embedding: the other side has one at " + best.Path + " (paired there)"
		}
		return "rotary embedding: the other side computes it without a module"
	}
	if why := fusedNorm(al, n, npuSide); why != "" {
		return why
	}
	if in.kind == printparse.KindEmbedding && strings.Contains(n.Name, "position") {
		other := al.npu
		if npuSide {
			other = al.bench
		}
		for _, o := range other.nodes {
			if isRotary(other.infos[o]) {
				return "learned position table: the other side encodes positions with rotary embeddings (" + o.Class + ") instead"
			}
		}
	}
	if n.Name == "base_layer" && n.Parent != nil && aligned(n.Parent) {
		return "PEFT base layer: its wrapper " + n.Parent.Name + " is paired instead (the wrapper's output adds the LoRA update)"
	}
	if isAttentionKernel(n) {
		other := al.npu
		if npuSide {
			other = al.bench
		}
		if !slices.ContainsFunc(other.nodes, isAttentionKernel) {
			return "attention kernel: the other side computes it as a function inside its attention module"
		}
	}
	switch {
	case hasToken(in.name, "qkv"):
		return "fused q/k/v: no 1:1 partner (see structural)"
	case in.kind == printparse.KindDropout:
		return "dropout: no module on the other side"
	case in.kind == printparse.KindActivation:
		return "activation: a function on the other side"
	}
	return "no partner found"
}

// sizesDiffer words a pair's differing printed sizes ("" when they agree
// or one side prints none), NPU first; reverse words it for the reverse
// draft.
func sizesDiffer(m *match, reverse bool) string {
	if m.sizeA == nil {
		return ""
	}
	a, b := m.sizeA, m.sizeB
	if reverse {
		a, b = b, a
	}
	return fmt.Sprintf("NPU %v, bench %v", a, b)
}

// isAttentionKernel reports Megatron's core attention modules (the
// softmax(QK^T)V step: DotProductAttention, TEDotProductAttention and its
// flash/fused/unfused backends, legacy CoreAttention), which transformers
// computes in a function (sdpa, eager) rather than a module.
func isAttentionKernel(n *printparse.Node) bool {
	switch n.Name {
	case "core_attention", "flash_attention", "fused_attention", "unfused_attention", "core_attention_flash":
		return true
	}
	return strings.HasSuffix(n.Class, "DotProductAttention") || n.Class == "CoreAttention" || n.Class == "FlashAttention" || n.Class == "FusedAttention"
}

// commonSegments counts the leading dotted segments two paths share.
func commonSegments(a, b string) int {
	x, y := strings.Split(a, "."), strings.Split(b, ".")
	n := 0
	for n < len(x) && n < len(y) && x[n] == y[n] {
		n++
	}
	return n
}

// fusedNorm explains an unpaired norm whose parent's partner applies its
// norms inside the projections (Transformer Engine's
// TELayerNormColumnParallelLinear: input_layernorm in linear_qkv,
// pre_mlp_layernorm in linear_fc1): the parent's unpaired norms and the
// partner's fused projections are matched in order.
func fusedNorm(al *alignment, n *printparse.Node, npuSide bool) string {
	s, other := al.bench, al.npu
	if npuSide {
		s, other = al.npu, al.bench
	}
	p := n.Parent
	if p == nil || s.infos[n].kind != printparse.KindNorm {
		return ""
	}
	pp := al.partner(p, npuSide)
	if pp == nil {
		return ""
	}
	var fused []*printparse.Node
	pp.Walk(func(d *printparse.Node) bool {
		if oi := other.infos[d]; oi != nil && oi.kind == printparse.KindLinear && strings.Contains(d.Class, "LayerNorm") {
			fused = append(fused, d)
		}
		return true
	})
	if len(fused) == 0 {
		return ""
	}
	var norms []*printparse.Node
	for _, c := range kids(p) {
		paired := al.byB[c] != nil
		if npuSide {
			paired = al.byA[c] != nil
		}
		if !paired && s.infos[c].kind == printparse.KindNorm {
			norms = append(norms, c)
		}
	}
	if i := slices.Index(norms, n); len(norms) == len(fused) && i >= 0 {
		f := fused[i]
		return "norm fused on the other side: " + strings.TrimPrefix(f.Path, pp.Path+".") + " (" + f.Class + ") applies it inside the projection (see structural)"
	}
	names := make([]string, len(fused))
	for i, f := range fused {
		names[i] = strings.TrimPrefix(f.Path, pp.Path+".")
	}
	return "norm fused on the other side into " + strings.Join(names, " or ") + " (" + fused[0].Class + ", see structural)"
}

// r0 reports whether n is an engine wrapper set aside at the roots.
func r0(al *alignment, n *printparse.Node, npuSide bool) bool {
	for _, m := range al.pairs {
		if m.rootish && (npuSide && m.a == n || !npuSide && m.b == n) {
			return true
		}
	}
	return false
}

func round(x float64) float64 { return float64(int(x*1000+0.5)) / 1000 }

func header(npu, bench *printparse.Tree, tm *templates.Match, reverse bool) string {
	var b strings.Builder
	b.WriteString("Drafted by layermap suggest from two model structures")
	if reverse {
		b.WriteString(" (reverse draft: the suggest run's bench side keys it)")
	}
	b.WriteString(".\n")
	fmt.Fprintf(&b, "NPU side (-tp, its classes key this file): %s (root %s)\n", filepath.Base(npu.Source), rootClass(npu))
	fmt.Fprintf(&b, "bench side (-gp): %s (root %s)\n", filepath.Base(bench.Source), rootClass(bench))
	if tm != nil {
		fmt.Fprintf(&b, "Template prior: %s\n", tm.Template.Name)
	} else {
		b.WriteString("Template prior: none\n")
	}
	b.WriteString("Each line says its alignment score, margin over the runner-up and reasons;\n")
	b.WriteString("LOW CONFIDENCE marks a pair to check by hand. Identity needs no line.")
	return b.String()
}

func rootClassOf(t *printparse.Tree, n *printparse.Node) string {
	if n.Parent == nil {
		return rootClass(t)
	}
	return n.Class
}

func rootClass(t *printparse.Tree) string {
	if t.Root.Class != "" {
		return t.Root.Class
	}
	if t.Kind == printparse.KindMsprobe {
		return "msprobe dump"
	}
	if len(t.Root.Children) > 0 && t.Root.Children[0].Class != "" {
		return "[" + t.Root.Children[0].Class + "]"
	}
	return "list of models"
}

// chooseTemplates picks the template for each direction.
func chooseTemplates(npu, bench *printparse.Tree, choice string) (fwd, rev *templates.Match, err error) {
	switch choice {
	case "", TemplateAuto:
		if ms := templates.Detect(npu, bench); len(ms) > 0 {
			fwd = &ms[0]
		}
		if ms := templates.Detect(bench, npu); len(ms) > 0 {
			rev = &ms[0]
		}
		return fwd, rev, nil
	case TemplateNone:
		return nil, nil, nil
	}
	t, err := templates.Get(choice)
	if err != nil {
		// err lists the known names already (they were printed twice)
		return nil, nil, fmt.Errorf("%w, or %s (pick by class names) or %s", err, TemplateAuto, TemplateNone)
	}
	applied, unapplied := t.Apply(npu, bench)
	fwd = &templates.Match{Template: t, Applied: applied, Unapplied: unapplied}
	// The reverse direction uses the named template's counterpart when
	// Detect finds one.
	if ms := templates.Detect(bench, npu); len(ms) > 0 {
		rev = &ms[0]
	}
	return fwd, rev, nil
}

// alignWith aligns the two sides with the priors of the templates (nil:
// none).
func alignWith(ns, bs *side, fwd, rev *templates.Match) *alignment {
	priors := map[pairKey]bool{}
	if fwd != nil {
		addPriors(priors, fwd, ns.tree, bs.tree, false)
	}
	if rev != nil {
		addPriors(priors, rev, bs.tree, ns.tree, true)
	}
	return align(ns, bs, priors)
}

// hitCounts counts a template's hits and those the alignment contradicts
// (the hit's NPU module is paired with another module than the hit's).
func hitCounts(tm *templates.Match, al *alignment, swap bool) (bad, total int) {
	for _, a := range tm.Applied {
		for _, h := range a.Hits {
			total++
			if swap {
				x, y := al.bench.tree.Lookup(h.NPU), al.npu.tree.Lookup(h.Bench)
				if m := al.byB[x]; m == nil || m.a != y {
					bad++
				}
			} else {
				x, y := al.npu.tree.Lookup(h.NPU), al.bench.tree.Lookup(h.Bench)
				if m := al.byA[x]; m == nil || m.b != y {
					bad++
				}
			}
		}
	}
	return bad, total
}

// contradicted reports whether the alignment contradicts more than half of
// a template's hits, its priors notwithstanding.
func contradicted(tm *templates.Match, al *alignment, swap bool) bool {
	bad, total := hitCounts(tm, al, swap)
	return total > 0 && 2*bad > total
}

func notUsed(tm *templates.Match, al *alignment, swap bool) string {
	bad, total := hitCounts(tm, al, swap)
	dir := ""
	if swap {
		dir = " (reverse draft)"
	}
	return fmt.Sprintf("%s%s: not used: its classes occur here, but the structures contradict %d of its %d hits (another model?)",
		tm.Template.Name, dir, bad, total)
}

// addPriors records the module pairs a template implies.
func addPriors(priors map[pairKey]bool, tm *templates.Match, npu, bench *printparse.Tree, swap bool) {
	for _, a := range tm.Applied {
		for _, h := range a.Hits {
			x, y := npu.Lookup(h.NPU), bench.Lookup(h.Bench)
			if x == nil || y == nil {
				continue
			}
			if swap {
				x, y = y, x
			}
			priors[pairKey{x, y}] = true
		}
	}
}

// unapplied explains each template line that never hit: why it does not
// apply, and what the alignment pairs instead where the key exists.
func unapplied(tm *templates.Match, al *alignment, swap bool) []string {
	ka := al.npu
	if swap {
		ka = al.bench
	}
	var out []string
	for _, l := range tm.Unapplied {
		why := "its class does not occur in the " + map[bool]string{false: "NPU", true: "bench"}[swap] + " tree"
		for _, n := range ka.nodes {
			if !(l.Class == templates.TopLayer && n.Parent == nil || n.Parent != nil && templates.MatchClass(l.Class, n.Class)) {
				continue
			}
			why = "its key never occurs below " + l.Class
			if strings.Contains(l.Key, templates.IndexPlaceholder) {
				break
			}
			x := n.Lookup(l.Key)
			if x == nil {
				continue
			}
			why = "its target does not exist on the bench side"
			if partner := al.partner(x, !swap); partner != nil {
				why += fmt.Sprintf("; %s is paired with %s instead", x.Path, displayPath(partner.Path))
			}
			break
		}
		out = append(out, fmt.Sprintf("%s: %s: %s -> %s (line %d): does not apply: %s", tm.Template.Name, l.Class, l.Key, l.Value, l.Line, why))
	}
	return out
}

// contradictions lists template lines whose hits the alignment rejects.
func contradictions(tm *templates.Match, al *alignment, swap bool) []string {
	var out []string
	for _, a := range tm.Applied {
		bad := 0
		var ex string
		for _, h := range a.Hits {
			var x, y *printparse.Node
			if swap {
				x, y = al.bench.tree.Lookup(h.NPU), al.npu.tree.Lookup(h.Bench)
				if m := al.byB[x]; m != nil && m.a == y {
					continue
				}
			} else {
				x, y = al.npu.tree.Lookup(h.NPU), al.bench.tree.Lookup(h.Bench)
				if m := al.byA[x]; m != nil && m.b == y {
					continue
				}
			}
			bad++
			if ex == "" {
				ex = h.NPU + " -> " + h.Bench
			}
		}
		if bad > 0 {
			out = append(out, fmt.Sprintf("%s: %s: %s -> %s (line %d): %d of %d hits contradict the alignment (e.g. %s)",
				tm.Template.Name, a.Line.Class, a.Key, a.Value, a.Line.Line, bad, len(a.Hits), ex))
		}
		// A miss at a module the alignment left without any partner (a
		// layer index the other side does not have) is no fault of the
		// line: no line could pair it.
		var misses []templates.Hit
		for _, h := range a.Misses {
			if swap && al.byB[al.bench.tree.Lookup(h.NPU)] != nil || !swap && al.byA[al.npu.tree.Lookup(h.NPU)] != nil {
				misses = append(misses, h)
			}
		}
		if len(misses) > 0 {
			out = append(out, fmt.Sprintf("%s: %s: %s -> %s (line %d): fires at %d place%s without a bench target (e.g. %s -> %s); the draft escapes those places, see conflicts",
				tm.Template.Name, a.Line.Class, a.Key, a.Value, a.Line.Line, len(misses), plural(len(misses), "", "s"), misses[0].NPU, misses[0].Bench))
		}
	}
	return out
}

// structuralNotes flags fused/split modules: a pair whose bench side has
// an unpaired sibling that the NPU module also computes (Megatron's
// linear_fc1 = gate_proj + up_proj), and unpaired fused modules against
// split ones (linear_qkv against q_proj, k_proj, v_proj).
func structuralNotes(al *alignment) []string {
	var notes []string
	seen := map[string]bool{}
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			notes = append(notes, s)
		}
	}
	for _, m := range al.pairs {
		a, b := al.npu.infos[m.a], al.bench.infos[m.b]
		if a.nkids > 0 || b.nkids > 0 || a.canon != m.a {
			continue
		}
		if n, rev := fusedGateUp(al, m.a, m.b, false); n != "" {
			m.structuralNote, m.structuralRev = n, rev
			add(groupNote(al, m.a, n))
		} else if n, rev := fusedGateUp(al, m.b, m.a, true); n != "" {
			m.structuralNote, m.structuralRev = n, rev
			add(groupNote(al, m.a, n))
		}
	}
	for _, m := range al.pairs {
		if n, rev := fusedHead(al, m); n != "" {
			m.structuralNote, m.structuralRev = n, rev
			add(groupNote(al, m.a, n))
		}
	}
	// Broadcast notes to repeat members.
	for _, m := range al.pairs {
		if m.structuralNote == "" {
			if c := al.byA[al.npu.infos[m.a].canon]; c != nil && c != m {
				m.structuralNote, m.structuralRev = c.structuralNote, c.structuralRev
			}
		}
	}
	for _, n := range al.npu.nodes {
		if al.byA[n] != nil || al.npu.infos[n].canon != n || !hasToken(al.npu.infos[n].name, "qkv") {
			continue
		}
		if p := al.alignedAncestorA(n); p != nil && p.a == n.Parent {
			if split := splitQKV(p.b); split != "" {
				add(fmt.Sprintf("N:1 %s fuses %s: no 1:1 partner, left unmatched", displayGroup(n), split))
			}
		}
	}
	for _, sd := range []struct {
		s    *side
		word string
	}{{al.npu, "NPU"}, {al.bench, "bench"}} {
		for _, n := range sd.s.nodes {
			if sd.s.infos[n].canon != n || sd.s.infos[n].kind != printparse.KindLinear || !strings.Contains(n.Class, "LayerNorm") {
				continue
			}
			add(fmt.Sprintf("N:1 %s %s (%s) fuses its input norm into the projection: the other side's norm before it has no 1:1 partner, and this module's input is the un-normalised one",
				sd.word, displayGroup(n), n.Class))
		}
	}
	for _, n := range al.bench.nodes {
		if al.byB[n] != nil || al.bench.infos[n].canon != n || !hasToken(al.bench.infos[n].name, "qkv") {
			continue
		}
		if p := al.alignedAncestorB(n); p != nil && p.b == n.Parent {
			if split := splitQKV(p.a); split != "" {
				add(fmt.Sprintf("N:1 bench %s fuses %s: no 1:1 partner, left unmatched", displayGroup(n), split))
			}
		}
	}
	return notes
}

func displayGroup(n *printparse.Node) string {
	g := groupPaths([]*printparse.Node{n})
	p, s, i := splitIndex(n)
	if i >= 0 && n.Parent != nil {
		return p + "*" + s
	}
	return g[0]
}

func groupNote(al *alignment, n *printparse.Node, note string) string {
	return displayGroup(n) + ": " + note
}

// fusedGateUp checks a Linear pair (x on the fused side, y on the split
// side) for a gated MLP fused on x's side: y is "up" and an unpaired "gate"
// sibling of y exists. It returns the note worded for the forward draft
// and for the reverse one (where the NPU and bench roles swap).
func fusedGateUp(al *alignment, x, y *printparse.Node, reverse bool) (fwd, rev string) {
	var xi, yi *info
	if reverse {
		xi, yi = al.bench.infos[x], al.npu.infos[y]
	} else {
		xi, yi = al.npu.infos[x], al.bench.infos[y]
	}
	if !hasToken(xi.name, "up") || !hasToken(yi.name, "up") || y.Parent == nil {
		return "", ""
	}
	for _, s := range kids(y.Parent) {
		if s == y {
			continue
		}
		var si *info
		var paired bool
		if reverse {
			si, paired = al.npu.infos[s], al.byA[s] != nil
		} else {
			si, paired = al.bench.infos[s], al.byB[s] != nil
		}
		if !paired && hasToken(si.name, "gate") {
			side, other := "NPU", "bench"
			if reverse {
				side, other = other, side
			}
			body := fmt.Sprintf("%s fuses %s and %s (gated MLP); paired with %s as an expert would, outputs differ in shape",
				x.Name, s.Name, y.Name, y.Name)
			return "N:1: " + side + " " + body, "N:1: " + other + " " + body
		}
	}
	return "", ""
}

// fusedHead checks a pair of heads (both composite, both named as a head:
// lm_head, output_layer) for one side whose head is followed by a separate
// output projection that nothing pairs: NeMo 2's BERT has lm_head (dense,
// layer_norm) and output_layer, while NeMo 1's BertLMHead computes the
// logits itself (its bias is output_layer.bias in bionemo's
// nemo1_to_nemo2_biobert_key_mapping). The pair's inputs agree; its outputs
// do not: the fusing head's output is the projection's.
func fusedHead(al *alignment, m *match) (fwd, rev string) {
	a, b := al.npu.infos[m.a], al.bench.infos[m.b]
	if m.rootish || a.nkids == 0 || b.nkids == 0 || !hasToken(a.name, "head") || !hasToken(b.name, "head") {
		return "", ""
	}
	proj := func(s *side, n *printparse.Node, paired map[*printparse.Node]*match) *printparse.Node {
		if n.Parent == nil {
			return nil
		}
		for _, c := range kids(n.Parent) {
			if ci := s.infos[c]; c != n && paired[c] == nil && ci.nkids == 0 && ci.kind == printparse.KindLinear && hasToken(ci.name, "head") {
				return c
			}
		}
		return nil
	}
	pa, pb := proj(al.npu, m.a, al.byA), proj(al.bench, m.b, al.byB)
	if (pa == nil) == (pb == nil) {
		return "", ""
	}
	x, y, z := m.a, m.b, pb // x fuses y and z
	side, other := "NPU", "bench"
	if pa != nil {
		x, y, z = m.b, m.a, pa
		side, other = other, side
	}
	body := fmt.Sprintf("%s (%s) has no output projection while the other side follows %s with %s (%s): "+
		"if %s computes the logits itself (NeMo 1's BertLMHead does), its output pairs with %s's, not %s's",
		x.Name, x.Class, y.Name, z.Name, z.Class, x.Name, z.Name, y.Name)
	return "N:1: " + side + " " + body, "N:1: " + other + " " + body
}

// splitQKV reports the separate q/k/v projections among n's children.
func splitQKV(n *printparse.Node) string {
	var q, k, v string
	for _, c := range kids(n) {
		switch {
		case strings.HasPrefix(c.Name, "q_") || c.Name == "q" || c.Name == "query":
			q = c.Name
		case strings.HasPrefix(c.Name, "k_") || c.Name == "k" || c.Name == "key":
			k = c.Name
		case strings.HasPrefix(c.Name, "v_") || c.Name == "v" || c.Name == "value":
			v = c.Name
		}
	}
	if q != "" && k != "" && v != "" {
		return q + ", " + k + " and " + v
	}
	return ""
}

func hasToken(ts []string, t string) bool { return slices.Contains(ts, t) }
