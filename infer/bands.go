package infer

import (
	"fmt"
	"slices"

	"github.com/layermap/layermap/mapping"
	"github.com/layermap/layermap/printparse"
)

// Confidence bands of a pair, as every line, pair and report shows them.
const (
	// BandSure: the structures agree on the pair and nothing speaks
	// against it. On layermap's benchmark no wrong pair is sure.
	BandSure = mapping.BandSure
	// BandCheck: a plausible pair with a doubt (a small margin over the
	// runner-up, a low score, a fused module standing in for several,
	// printed sizes that differ); look at it before trusting its rows.
	BandCheck = mapping.BandCheck
	// BandUnsure: a pair nothing but a prior or a name supports, or one
	// the evidence contradicts (msprobe pairs a placeholder with a real
	// module by name, dumped shapes that cannot match).
	BandUnsure = mapping.BandUnsure
)

// bandRank orders bands from sure to unsure.
func bandRank(b string) int {
	switch b {
	case BandSure:
		return 0
	case BandCheck:
		return 1
	}
	return 2
}

// worse is the less sure of two bands.
func worse(a, b string) string {
	if bandRank(b) > bandRank(a) {
		return b
	}
	return a
}

// doubt is one reason a pair is not sure, with the band it calls for.
type doubt struct {
	band, why string
}

// assignBands gives every aligned pair its band and the doubts behind it.
// A pair is sure only when the structures support it (see support): a
// name, a class name or a template alone never makes a pair sure.
func (r *alignment) assignBands() {
	groups := r.nGroups()
	for _, m := range r.pairs {
		if m.rootish {
			m.band = BandSure
			continue
		}
		var ds []doubt
		sup, code := r.support(m, groups)
		if sup == noSupport && m.confirmed {
			code = "dumps" // the dumped inputs and outputs agree
		}
		if code != "" && !slices.Contains(m.reasons, code) {
			m.reasons = append(slices.Clip(m.reasons), code)
		}
		if m.score < admit {
			ds = append(ds, doubt{BandUnsure, "the template alone pairs them"})
		} else if sup == noSupport && !m.confirmed {
			ds = append(ds, doubt{BandUnsure, "no structural evidence: names only"})
		}
		// what both dumps confirm needs no structural certainty; a
		// container whose subtree pairs beneath it is supported whatever
		// its name says
		if m.score < lowScore && !m.confirmed && sup != subtreeSupport {
			ds = append(ds, doubt{BandCheck, fmt.Sprintf("low score %.2f", round(m.score))})
		}
		if m.margin < lowMargin && !m.confirmed {
			ds = append(ds, doubt{BandCheck, fmt.Sprintf("small margin %.2f over the runner-up", round(m.margin))})
		}
		switch {
		case m.grouped:
			ds = append(ds, doubt{BandCheck, "N:1 grouped, msprobe dumps no list"})
		case m.structural[npuSide] != "":
			ds = append(ds, doubt{BandCheck, "N:1 stand-in, outputs differ"})
		}
		if m.sizeA != nil {
			ds = append(ds, doubt{BandCheck, "printed sizes differ"})
		}
		ds = append(ds, m.evidence...)
		m.band, m.doubts = BandSure, nil
		for _, d := range ds {
			m.band = worse(m.band, d.band)
			m.doubts = append(m.doubts, d.why)
		}
	}
}

// structure is what the two trees say about a pair beyond its names.
type structure int8

const (
	// noSupport: nothing but names (and class names) pair them.
	noSupport structure = iota
	// leafSupport: two leaves of the same kind (both linears, both
	// norms, ...), or printing the same sizes.
	leafSupport
	// subtreeSupport: two containers whose children mostly pair beneath
	// them.
	subtreeSupport
)

// supportShare is the least share of each side's deciding children (see
// decides) that must hold a pair beneath a container pair for its subtree
// to support it.
const supportShare = 0.5

// support is the structural evidence for m. A leaf needs its partner's
// kind (both linears, both norms, both rotary tables, both attention
// kernels), printed sizes or printed arguments, or to be the one deciding child left on both
// sides of a supported parent pair (router and gate beside paired
// experts). A container needs its subtree: at least supportShare of the
// deciding children on both sides paired inside the partner, or in an N:1
// group with modules inside it (TE's unfused_attention, holding only a
// softmax and a dropout, is not supported against legacy Megatron's
// attention, whatever the names say). An N:1 pair (grouped experts, a
// fused stand-in) is supported by the structure that groups it.
//
// code is the reason code that names the evidence ("" when the pair's
// reasons name it already: kind, shape).
func (r *alignment) support(m *match, groups map[*printparse.Node][]*nGroup) (s structure, code string) {
	ia, ib := r.npu.infos[m.a], r.bench.infos[m.b]
	if m.grouped || m.group != nil {
		return leafSupport, "group"
	}
	if ia.nkids == 0 || ib.nkids == 0 {
		switch {
		case len(ia.dims) > 0 && slices.Equal(ia.dims, ib.dims),
			ia.kind == ib.kind && ia.kind != printparse.KindContainer && ia.kind != printparse.KindOther:
			return leafSupport, ""
		case len(m.a.Extra) > 0 && slices.Equal(m.a.Extra, m.b.Extra):
			return leafSupport, "args" // the same printed arguments (FSDPLMHead and Linear)
		case isRotary(ia) && isRotary(ib):
			return leafSupport, "rotary"
		case isAttentionKernel(m.a) && isAttentionKernel(m.b):
			return leafSupport, "kernel"
		case r.lastLeft(m, groups):
			return leafSupport, "rest-paired"
		}
		return noSupport, ""
	}
	if r.subtreeShare(m, npuSide, groups) >= supportShare && r.subtreeShare(m, benchSide, groups) >= supportShare {
		return subtreeSupport, "subtree"
	}
	return noSupport, ""
}

// lastLeft reports whether m's modules are children of a pair of
// parents paired with each other, supported by their subtree, and the
// only deciding children of either parent without a pair inside the
// other parent.
func (r *alignment) lastLeft(m *match, groups map[*printparse.Node][]*nGroup) bool {
	pa, pb := m.a.Parent, m.b.Parent
	if pa == nil || pb == nil {
		return false
	}
	pm := r.byA[pa]
	if pm == nil || pm.b != pb || pm.rootish {
		return false
	}
	for _, s := range []side{npuSide, benchSide} {
		t, top, other, self := r.tree(s), pm.node(s), pm.node(s.other()), m.node(s)
		for _, c := range kids(top) {
			if c != self && decides(t.infos[c]) && !r.pairedInside(c, s, other, groups) {
				return false
			}
		}
	}
	return true
}

// subtreeShare is the share of the deciding children of m's module on
// side s (all its children when none decides) that are paired inside m's
// other module, or hold such a pair. Attention kernels are left out (the
// other side may compute them in a function), and so are a list's members
// that repeat an earlier member's structure.
func (r *alignment) subtreeShare(m *match, s side, groups map[*printparse.Node][]*nGroup) float64 {
	t := r.tree(s)
	top, other := m.node(s), m.node(s.other())
	cs := kids(top)              // a fresh slice: filtered in place
	if t.infos[top].nmajor > 0 { // else only minor children: they decide
		cs = slices.DeleteFunc(cs, func(c *printparse.Node) bool { return !decides(t.infos[c]) || isAttentionKernel(c) })
	}
	if allNumeric(top) {
		// a list's members of one structure count once: layers the
		// other side does not have are a doubt of their own
		cs = slices.DeleteFunc(cs, func(c *printparse.Node) bool { return t.infos[c].dup })
	}
	if len(cs) == 0 {
		return 0
	}
	hit := 0
	for _, c := range cs {
		if r.pairedInside(c, s, other, groups) {
			hit++
		}
	}
	return float64(hit) / float64(len(cs))
}

// pairedInside reports whether n (on side s) or a module below it is
// paired with a module inside within (on the other side), or is in an N:1
// group with one. Below n, the walk descends only into modules with a
// paired descendant.
func (r *alignment) pairedInside(n *printparse.Node, s side, within *printparse.Node, groups map[*printparse.Node][]*nGroup) bool {
	if p := r.matchOf(n, s); p != nil && !p.rootish {
		return isAncestor(within, p.node(s.other()))
	}
	for _, g := range groups[n] {
		if g.one == s {
			for _, x := range g.members {
				if isAncestor(within, x) {
					return true
				}
			}
		} else if isAncestor(within, g.whole) {
			return true
		}
	}
	if !r.above[s][n] {
		return false
	}
	for _, c := range kids(n) {
		if r.pairedInside(c, s, within, groups) {
			return true
		}
	}
	return false
}

// nGroups indexes the N:1 groups (fused q/k/v without a pair, and the
// groups pairs stand in for) by every module in them.
func (r *alignment) nGroups() map[*printparse.Node][]*nGroup {
	out := map[*printparse.Node][]*nGroup{}
	add := func(g *nGroup) {
		if g == nil || g.whole == nil {
			return
		}
		out[g.whole] = append(out[g.whole], g)
		for _, x := range g.members {
			out[x] = append(out[x], g)
		}
	}
	for _, g := range r.qkv {
		add(g)
	}
	for _, m := range r.pairs {
		add(m.group)
	}
	return out
}

// Calibration is how the confidence bands fared on layermap's labelled
// benchmark: how many of each band's pairs were right.
type Calibration struct {
	// ModelPairs and Drafts count the benchmark's model pairs and the
	// drafts scored (two directions per pair).
	ModelPairs int `json:"model_pairs"`
	Drafts     int `json:"drafts"`
	// Templates is how the drafts were made: "off", structure only.
	Templates string `json:"templates"`
	// Bands are the outcomes per band, sure first.
	Bands []BandOutcome `json:"bands"`
}

// BandOutcome counts the module pairs msprobe's resolver made with the
// benchmark's drafts in one band: right, paired with a module that is not
// the partner, paired though the module has no partner, or paired with an
// acceptable stand-in for an N:1 partner (fused, absorbed, experts).
type BandOutcome struct {
	Band                              string `json:"band"`
	Correct, Wrong, Spurious, StandIn int    `json:"-"`
	// Lines counts the distinct lines behind Correct+Wrong+Spurious: a
	// pair repeated in every layer is one line.
	Lines int `json:"lines"`
	// Precision is Correct over Correct+Wrong+Spurious, -1 with none.
	Precision float64 `json:"precision"`
	Pairs     int     `json:"pairs"`
	// Measured reports whether the band has at least
	// MinCalibrationLines lines: below that, its precision speaks of a
	// handful of pairs repeated per layer, not of the band.
	Measured bool `json:"measured"`
}

// MinCalibrationLines is the fewest distinct lines a band's precision is
// stated on.
const MinCalibrationLines = 20

// BenchmarkCalibration returns the bands' measured precision.
func BenchmarkCalibration() Calibration {
	c := calibration
	c.Templates = "off"
	c.Bands = append([]BandOutcome(nil), c.Bands...)
	for i := range c.Bands {
		b := &c.Bands[i]
		b.Pairs = b.Correct + b.Wrong + b.Spurious
		b.Precision = -1
		if b.Pairs > 0 {
			b.Precision = float64(b.Correct) / float64(b.Pairs)
		}
		b.Measured = b.Lines >= MinCalibrationLines
	}
	return c
}
