package infer

import (
	"fmt"
	"slices"
	"strings"

	"github.com/layermap/layermap/printparse"
)

// partner returns the node n (on side on) is aligned with, nil when n is
// unpaired.
func (al *alignment) partner(n *printparse.Node, on side) *printparse.Node {
	if m := al.matchOf(n, on); m != nil {
		return m.node(on.other())
	}
	return nil
}

// whyUnmatched says in a few words why n (on side on) has no partner.
func (al *alignment) whyUnmatched(n *printparse.Node, on side) string {
	s, other := al.tree(on), al.tree(on.other())
	in := s.infos[n]
	aligned := func(x *printparse.Node) bool { return al.matchOf(x, on) != nil }
	if f, ok := al.fusedNormOf(n, on); ok && f.placeholder == in.canon {
		return fmt.Sprintf("placeholder (%s) of the norm %s (%s) applies inside the projection (see structural)", n.Class, rel(f.linear, f.at), f.linear.Class)
	}
	switch {
	case in.kind == printparse.KindIdentity:
		return "placeholder (" + n.Class + ")"
	case paramContainers[n.Class]:
		return "parameters (" + n.Class + "), no forward: msprobe never dumps it"
	case al.engineAtRoot(n, on):
		return "engine wrapper, paired with the other root"
	}
	if why := al.whyGrouped(n, on); why != "" {
		return why
	}
	if al.hasAlignedBelow(n, on) {
		return "extra level: looked through, its children are paired"
	}
	if (n.Repeat != nil || isRepeatedMember(n)) && aligned(n.Parent) {
		return "layer index the other side does not have"
	}
	for p := n.Parent; p != nil; p = p.Parent {
		if p.Repeat != nil || isRepeatedMember(p) {
			if !aligned(p) {
				return "inside an unpaired layer"
			}
			break
		}
	}
	if p := n.Parent; p != nil {
		pp := al.partner(p, on)
		if q, k, v := splitQKVNodes(p); pp != nil && (n == q || n == k || n == v) {
			for _, c := range kids(pp) {
				if strings.Contains(c.Name, "qkv") || strings.Contains(c.Name, "query_key_value") {
					return "split q/k/v: the other side fuses them in " + c.Name + " (see structural)"
				}
			}
		}
		if hasToken(in.name, "head") && in.kind == printparse.KindLinear {
			for _, c := range kids(p) {
				if m := al.matchOf(c, on); m != nil && strings.Contains(m.structural[npuSide], "has no output projection") {
					return "output projection: the other side's " + m.node(on.other()).Name + " computes it itself (see structural)"
				}
			}
		}
		if hasToken(in.name, "gate") {
			for _, c := range kids(p) {
				if m := al.matchOf(c, on); m != nil && m.structural[npuSide] != "" {
					return "gated MLP: the other side fuses it into " + m.node(on.other()).Name + " (see structural)"
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
		var best *printparse.Node
		bestLen := -1
		for _, o := range other.nodes {
			m := al.matchOf(o, on.other())
			if m == nil || !isRotary(other.infos[o]) {
				continue
			}
			if l := commonSegments(m.node(on).Path, n.Path); l > bestLen {
				best, bestLen = o, l
			}
		}
		if best != nil {
			return "rotary embedding: the other side has one at " + best.Path + " (paired there)"
		}
		return "rotary embedding: the other side computes it without a module"
	}
	if why := fusedNormWhy(al, n, on); why != "" {
		return why
	}
	if in.kind == printparse.KindEmbedding && strings.Contains(n.Name, "position") {
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
		if !al.hasKernel(on.other()) {
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

// fusedNormWhy explains an unpaired norm whose parent's partner applies
// its norms inside the projections (Transformer Engine's
// TELayerNormColumnParallelLinear: input_layernorm in linear_qkv,
// pre_mlp_layernorm in linear_fc1), naming the one projection that
// applies it: the one fusedNorms matched it with; the only norm-applying
// projection in the partner (list members, such as the layers below a
// final norm, left out: they apply their own norms); the one in the same
// place when the parent's unpaired norms and the projections are as many;
// or the first one inside the partner of the module the norm feeds (its
// next sibling). When
// none of these tells, it says so, briefly.
func fusedNormWhy(al *alignment, n *printparse.Node, on side) string {
	s, other := al.tree(on), al.tree(on.other())
	p := n.Parent
	if p == nil || s.infos[n].kind != printparse.KindNorm {
		return ""
	}
	if f, ok := al.fusedNormOf(n, on); ok && f.norm == s.infos[n].canon {
		return fusedNormMsg(f.linear, f.at)
	}
	pp := al.partner(p, on)
	if pp == nil {
		return ""
	}
	fusedIn := func(top *printparse.Node) []*printparse.Node { return normLinearsBelow(other, top, -1) }
	fused := fusedIn(pp)
	if len(fused) == 0 {
		return ""
	}
	one := func(f *printparse.Node) string { return fusedNormMsg(f, pp) }
	if len(fused) == 1 {
		return one(fused[0])
	}
	var norms []*printparse.Node
	for _, c := range kids(p) {
		if al.matchOf(c, on) == nil && s.infos[c].kind == printparse.KindNorm {
			norms = append(norms, c)
		}
	}
	if i := slices.Index(norms, n); len(norms) == len(fused) && i >= 0 {
		return one(fused[i]) // as many norms as projections: in order
	}
	// the module the norm feeds: its next sibling with a partner
	sib := kids(p)
	for i := slices.Index(sib, n) + 1; i > 0 && i < len(sib); i++ {
		if m := al.matchOf(sib[i], on); m != nil && !minor(s.infos[sib[i]]) {
			if in := fusedIn(m.node(on.other())); len(in) > 0 && isAncestor(pp, in[0]) {
				return one(in[0])
			}
			break
		}
	}
	return fmt.Sprintf("norm fused on the other side into one of %s's %d norm-applying projections (%s, see structural); which one cannot be told", displayPath(pp.Path), len(fused), fused[0].Class)
}

// engineAtRoot reports whether n (on side on) is an engine wrapper set
// aside at the roots.
func (al *alignment) engineAtRoot(n *printparse.Node, on side) bool {
	if al.engines[on] == nil {
		al.engines[on] = map[*printparse.Node]bool{}
		for _, m := range al.pairs {
			if m.rootish {
				al.engines[on][m.node(on)] = true
			}
		}
	}
	return al.engines[on][n]
}

// whyGrouped explains n (on side on) when it belongs to a list of
// look-alike members (experts) that the other side computes in one module
// (Transformer Engine's TEGroupedMLP), or to that module: an N:1 group no
// module pair expresses. "" otherwise.
func (al *alignment) whyGrouped(n *printparse.Node, on side) string {
	for p := n; p != nil && p.Parent != nil; p = p.Parent {
		if al.matchOf(p, on) != nil && p != n {
			break
		}
		if g := al.groupedBy(p.Parent, on); g != nil {
			what := fmt.Sprintf("one of %d look-alike members", len(p.Parent.Children))
			if p != n {
				what = "inside one of the look-alike members " + displayGroup(p)
			}
			return fmt.Sprintf("%s: the other side's %s (%s) computes them all at once (N:1 grouped, see structural)", what, displayGroup(g), g.Class)
		}
	}
	if p := n.Parent; p != nil {
		if pp := al.partner(p, on); pp != nil && al.groupedBy(pp, on.other()) != nil {
			return fmt.Sprintf("part of a grouped module: each of the other side's %d members of %s holds its own (N:1 grouped, see structural)", len(pp.Children), displayGroup(pp))
		}
	}
	return ""
}

// groupedBy is the module the other side pairs list (on side on) with when
// list holds look-alike members and that module is no list: it computes
// every member at once. nil otherwise. Memoised.
func (al *alignment) groupedBy(list *printparse.Node, on side) *printparse.Node {
	if list == nil {
		return nil
	}
	if al.grouped[on] == nil {
		al.grouped[on] = map[*printparse.Node]*printparse.Node{}
	}
	if g, ok := al.grouped[on][list]; ok {
		return g
	}
	var g *printparse.Node
	if isLookAlikeList(al.tree(on), list) {
		if p := al.partner(list, on); p != nil && len(p.Children) > 0 && !allNumeric(p) {
			g = p
		}
	}
	al.grouped[on][list] = g
	return g
}

// hasKernel reports whether side on has an attention kernel module
// (isAttentionKernel). Memoised.
func (al *alignment) hasKernel(on side) bool {
	if al.kernels[on] == 0 {
		al.kernels[on] = -1
		if slices.ContainsFunc(al.tree(on).nodes, isAttentionKernel) {
			al.kernels[on] = 1
		}
	}
	return al.kernels[on] > 0
}

// isLookAlikeList reports a list (ModuleList, Sequential) of two or more
// members of one structure: experts, layers.
func isLookAlikeList(t *treeIndex, n *printparse.Node) bool {
	ks := kids(n)
	if len(ks) < 2 || !allNumeric(n) {
		return false
	}
	for _, c := range ks {
		if !t.infos[c].member {
			return false
		}
	}
	return true
}

// fusedNormMsg says that linear, at its path from at, applies the norm.
func fusedNormMsg(linear, at *printparse.Node) string {
	return "norm fused on the other side: " + rel(linear, at) + " (" + linear.Class + ") applies it inside the projection (see structural)"
}
