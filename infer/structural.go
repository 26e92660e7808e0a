package infer

import (
	"fmt"
	"slices"
	"strings"

	"github.com/layermap/layermap/mapping"
	"github.com/layermap/layermap/printparse"
)

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
		for _, fused := range []side{npuSide, benchSide} {
			if notes, gate := fusedGateUp(al, m.node(fused), m.node(fused.other()), fused); notes[npuSide] != "" {
				m.structural = notes
				y := m.node(fused.other())
				m.group = &nGroup{kind: mapping.KindGateUp, one: fused, whole: m.node(fused), members: []*printparse.Node{gate, y}}
				add(groupNote(al, m.a, notes[npuSide]))
				break
			}
		}
	}
	for _, m := range al.pairs {
		if m.rootish || al.npu.infos[m.a].canon != m.a {
			continue
		}
		for _, g := range []side{npuSide, benchSide} {
			if notes := groupedNotes(al, m, g); notes[npuSide] != "" {
				m.structural, m.grouped = notes, true
				m.group = &nGroup{kind: mapping.KindExperts, one: g, whole: m.node(g), members: kids(m.node(g.other()))}
				add(groupNote(al, m.a, notes[npuSide]))
			}
		}
	}
	for _, m := range al.pairs {
		if notes := fusedHead(al, m); notes[npuSide] != "" {
			m.structural = notes
			add(groupNote(al, m.a, notes[npuSide]))
		}
	}
	// a projection that normalises its own output against one that does
	// not: the partner's output is the norm's input
	for _, m := range al.pairs {
		if m.rootish || al.npu.infos[m.a].canon != m.a || m.structural[npuSide] != "" {
			continue
		}
		for _, on := range []side{npuSide, benchSide} {
			x, y := m.node(on), m.node(on.other())
			n := postNorm(x)
			if n == nil || postNorm(y) != nil {
				continue
			}
			for _, keys := range []side{npuSide, benchSide} {
				word := "NPU"
				if on != keys {
					word = "bench"
				}
				m.structural[keys] = fmt.Sprintf("N:1: %s %s applies its %s (%s) to its output: it computes %s and the norm after it, outputs differ", word, x.Name, n.Name, n.Class, y.Name)
			}
			add(groupNote(al, m.a, m.structural[npuSide]))
			break
		}
	}
	// Broadcast notes (and groups) to repeat members.
	for _, m := range al.pairs {
		if m.structural[npuSide] == "" {
			if c := al.byA[al.npu.infos[m.a].canon]; c != nil && c != m {
				m.structural = c.structural
				m.group = c.group.instance(m)
			}
		}
	}
	// unpaired fused q/k/v against split ones
	fusedQKV := func(on side, word string) {
		t := al.tree(on)
		for _, n := range t.nodes {
			if al.matchOf(n, on) != nil || !hasToken(t.infos[n].name, "qkv") {
				continue
			}
			if p := al.alignedAncestor(n, on); p != nil && p.node(on) == n.Parent {
				if q, k, v := splitQKVNodes(p.node(on.other())); q != nil {
					al.qkv = append(al.qkv, &nGroup{kind: mapping.KindQKV, one: on, whole: n, members: []*printparse.Node{q, k, v}, layout: qkvLayout(n)})
					if t.infos[n].canon == n {
						add(fmt.Sprintf("N:1 %s%s fuses %s, %s and %s: no 1:1 partner, left unmatched", word, displayGroup(n), q.Name, k.Name, v.Name))
					}
				}
			}
		}
	}
	fusedQKV(npuSide, "")
	explained := map[*printparse.Node]bool{}
	for _, f := range al.fusedNorms() {
		if f.fused == npuSide {
			explained[f.linear] = true
			add(f.note())
		}
	}
	for _, f := range al.fusedNorms() {
		if f.fused == benchSide {
			explained[f.linear] = true
			add(f.note())
		}
	}
	for _, on := range []side{npuSide, benchSide} {
		t := al.tree(on)
		for _, n := range t.nodes {
			if t.infos[n].canon != n || !isNormLinear(t.infos[n]) || explained[n] {
				continue
			}
			add(fmt.Sprintf("N:1 %s %s (%s) fuses its input norm into the projection: the other side's norm before it has no 1:1 partner, and this module's input is the un-normalised one",
				on, displayGroup(n), n.Class))
		}
	}
	fusedQKV(benchSide, "bench ")
	return notes
}

// displayGroup writes n's path with every repeat-member segment as its
// group's range, or "*" in a list printed without groups
// ("decoder.layers.{1-46}.mlp.experts.*"): the note holds for all.
func displayGroup(n *printparse.Node) string {
	if n.Parent == nil {
		return displayPath(n.Path)
	}
	var segs []string
	for p := n; p != nil && p.Parent != nil; p = p.Parent {
		s := p.Name
		switch {
		case p.Repeat != nil && p.Repeat.Count > 1:
			s = fmt.Sprintf("{%d-%d}", p.Repeat.First, p.Repeat.Last)
		case isRepeatedMember(p):
			s = "*"
		}
		segs = append(segs, s)
	}
	slices.Reverse(segs)
	return strings.Join(segs, ".")
}

func groupNote(al *alignment, n *printparse.Node, note string) string {
	return displayGroup(n) + ": " + note
}

// fusedGateUp checks a Linear pair (x on the fused side, y on the split
// side) for a gated MLP fused on x's side: y is "up" and an unpaired "gate"
// sibling of y exists. It returns the note worded for the draft keyed by
// each side (the NPU and bench roles swap in the reverse draft).
func fusedGateUp(al *alignment, x, y *printparse.Node, fused side) (notes [2]string, gate *printparse.Node) {
	xi, yi := al.tree(fused).infos[x], al.tree(fused.other()).infos[y]
	if !hasToken(xi.name, "up") || !hasToken(yi.name, "up") || y.Parent == nil {
		return notes, nil
	}
	for _, s := range kids(y.Parent) {
		if s == y {
			continue
		}
		si, paired := al.tree(fused.other()).infos[s], al.matchOf(s, fused.other()) != nil
		if !paired && hasToken(si.name, "gate") {
			body := fmt.Sprintf("%s fuses %s and %s (gated MLP); paired with %s as an expert would, outputs differ in shape",
				x.Name, s.Name, y.Name, y.Name)
			return sideNotes(fused, body), s
		}
	}
	return notes, nil
}

// groupedNotes checks a pair whose module on side g computes at once the
// members of a list of look-alikes on the other side (Transformer
// Engine's TEGroupedMLP against a ModuleList of experts): an N:1 group.
func groupedNotes(al *alignment, m *match, g side) (notes [2]string) {
	x, list := m.node(g), m.node(g.other())
	if len(kids(x)) == 0 || allNumeric(x) || !isLookAlikeList(al.tree(g.other()), list) {
		return notes
	}
	ks := kids(list)
	body := fmt.Sprintf("%s (%s) computes the %d members of the other side's %s (%d x %s) at once: no module pairs with one member, and msprobe never dumps the list",
		x.Name, x.Class, len(ks), list.Name, len(ks), ks[0].Class)
	return sideNotes(g, body)
}

// sideNotes words a note on a module of side fused for the draft keyed by
// each side: "N:1: NPU ..." where the fused side keys the draft as -tp.
func sideNotes(fused side, body string) (notes [2]string) {
	notes[npuSide] = "N:1: " + fused.String() + " " + body
	notes[benchSide] = "N:1: " + fused.other().String() + " " + body
	return notes
}

// fusedHead checks a pair of heads (both composite, both named as a head:
// lm_head, output_layer) for one side whose head is followed by a separate
// output projection that nothing pairs: NeMo 2's BERT has lm_head (dense,
// layer_norm) and output_layer, while NeMo 1's BertLMHead computes the
// logits itself (its bias is output_layer.bias in bionemo's
// nemo1_to_nemo2_biobert_key_mapping). The pair's inputs agree; its outputs
// do not: the fusing head's output is the projection's.
func fusedHead(al *alignment, m *match) (notes [2]string) {
	a, b := al.npu.infos[m.a], al.bench.infos[m.b]
	if m.rootish || a.nkids == 0 || b.nkids == 0 || !hasToken(a.name, "head") || !hasToken(b.name, "head") {
		return notes
	}
	proj := func(s *treeIndex, n *printparse.Node, paired map[*printparse.Node]*match) *printparse.Node {
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
		return notes
	}
	x, y, z := m.a, m.b, pb // x fuses y and z
	fused := npuSide
	if pa != nil {
		x, y, z = m.b, m.a, pa
		fused = benchSide
	}
	body := fmt.Sprintf("%s (%s) has no output projection while the other side follows %s with %s (%s): "+
		"if %s computes the logits itself (NeMo 1's BertLMHead does), its output pairs with %s's, not %s's",
		x.Name, x.Class, y.Name, z.Name, z.Class, x.Name, z.Name, y.Name)
	return sideNotes(fused, body)
}

// splitQKVNodes finds the separate q, k and v projections among n's
// children (all three, or none).
func splitQKVNodes(n *printparse.Node) (q, k, v *printparse.Node) {
	for _, c := range kids(n) {
		if c.Kind() != printparse.KindLinear {
			continue // q_norm and k_norm are no projections
		}
		switch {
		case strings.HasPrefix(c.Name, "q_") || c.Name == "q" || c.Name == "query":
			q = c
		case strings.HasPrefix(c.Name, "k_") || c.Name == "k" || c.Name == "key":
			k = c
		case strings.HasPrefix(c.Name, "v_") || c.Name == "v" || c.Name == "value":
			v = c
		}
	}
	if q == nil || k == nil || v == nil {
		return nil, nil, nil
	}
	return q, k, v
}

// qkvLayout guesses a fused qkv projection's head layout: Megatron's
// linear_qkv (and GPT-NeoX's query_key_value) interleave q, k and v per
// query group; a plain fused Linear (Qwen2.5-VL's vision qkv, GPT-2's
// c_attn) holds [q; k; v].
func qkvLayout(n *printparse.Node) string {
	if n.Name == "linear_qkv" || n.Name == "query_key_value" || strings.Contains(n.Class, "ParallelLinear") {
		return mapping.LayoutInterleaved
	}
	return mapping.LayoutBlocked
}

// nGroup is an N:1 group: whole, on side one, computes members (the other
// side's modules, in the order whole concatenates their outputs) at once.
type nGroup struct {
	kind    string // mapping.Kind*
	one     side
	whole   *printparse.Node
	members []*printparse.Node
	layout  string // qkv only
}

// instance is g for another instance m of the pair g was found on (a
// repeat member): the members of the same names on m's side.
func (g *nGroup) instance(m *match) *nGroup {
	if g == nil {
		return nil
	}
	out := &nGroup{kind: g.kind, one: g.one, whole: m.node(g.one), layout: g.layout}
	other := m.node(g.one.other())
	switch g.kind {
	case mapping.KindExperts:
		out.members = kids(other)
	default:
		if other.Parent == nil {
			return nil
		}
		for _, x := range g.members {
			c := other.Parent.Child(x.Name)
			if c == nil {
				return nil
			}
			out.members = append(out.members, c)
		}
	}
	return out
}

// modulePair is g as a sidecar group, in the draft keyed by side keys.
func (g *nGroup) modulePair(keys side) mapping.ModulePair {
	parts := make([]string, len(g.members))
	for i, m := range g.members {
		parts[i] = m.Path
	}
	p := mapping.ModulePair{Kind: g.kind, Layout: g.layout}
	if g.one == npuSide {
		p.NPU, p.BenchParts = g.whole.Path, parts
	} else {
		p.NPUParts, p.Bench = parts, g.whole.Path
	}
	if keys == benchSide {
		p = p.Swap()
	}
	return p
}

// groups are the alignment's N:1 groups: the pairs standing in for one,
// and the unpaired fused qkv projections.
func (al *alignment) groups() []*nGroup {
	var out []*nGroup
	for _, m := range al.pairs {
		if m.group != nil {
			out = append(out, m.group)
		}
	}
	return append(out, al.qkv...)
}

func hasToken(ts []string, t string) bool { return slices.Contains(ts, t) }
