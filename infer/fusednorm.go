package infer

import (
	"fmt"
	"math"
	"strings"

	"github.com/layermap/layermap/printparse"
)

// fusedNorm is a norm one side applies inside a projection (Transformer
// Engine's TELayerNormColumnParallelLinear: input_layernorm inside
// linear_qkv, the pre-MLP norm inside linear_fc1) and the other side as a
// module of its own. No pair expresses it: the norm has no partner, the
// linear's input is the un-normalised one, and the fused side often
// leaves a placeholder (IdentityOp) where the norm was, which msprobe
// pairs with the real norm by name.
type fusedNorm struct {
	fused       side             // the side whose linear applies the norm
	at          *printparse.Node // the module on side fused the linear is below
	linear      *printparse.Node // on side fused
	norm        *printparse.Node // on the other side, unpaired
	placeholder *printparse.Node // on side fused, nil when none is left
}

// isNormLinear reports a projection that applies its input norm itself: a
// norm-named linear class without a norm module of its own (one with a
// norm child applies that norm after the projection: postNorm).
func isNormLinear(in *info) bool {
	return in.kind == printparse.KindLinear && strings.Contains(in.node.Class, "LayerNorm") && postNorm(in.node) == nil
}

// postNorm is the norm module a projection holds and applies to its own
// output (Megatron-Bridge's TERowParallelLinearLayerNorm.post_layernorm),
// nil when it holds none.
func postNorm(n *printparse.Node) *printparse.Node {
	if n.Kind() != printparse.KindLinear {
		return nil
	}
	for _, c := range kids(n) {
		if c.Kind() == printparse.KindNorm {
			return c
		}
	}
	return nil
}

// fusedNorms finds the fused norms of every aligned pair of canonical
// modules: the unpaired norms among one module's children and the
// norm-applying projections below its partner (at most three levels
// down), matched in order when they are as many; each norm's placeholder
// is the partner's identity child whose name is most like the norm's.
// Computed once.
func (al *alignment) fusedNorms() []fusedNorm {
	if al.fused != nil {
		return *al.fused
	}
	var out []fusedNorm
	for _, m := range al.pairs {
		if m.rootish || al.npu.infos[m.a].canon != m.a {
			continue
		}
		for _, fused := range []side{npuSide, benchSide} {
			out = append(out, al.fusedAt(m, fused)...)
		}
	}
	al.fused = &out
	return out
}

// fusedAt is fusedNorms for one pair, the linears on side fused.
func (al *alignment) fusedAt(m *match, fused side) []fusedNorm {
	x, y := m.node(fused), m.node(fused.other())
	ft, ot := al.tree(fused), al.tree(fused.other())
	var norms []*printparse.Node
	for _, c := range kids(y) {
		if al.matchOf(c, fused.other()) == nil && ot.infos[c].kind == printparse.KindNorm {
			norms = append(norms, c)
		}
	}
	if len(norms) == 0 {
		return nil
	}
	linears := normLinearsBelow(ft, x, 3)
	if len(linears) != len(norms) {
		return nil
	}
	var holders []*printparse.Node
	for _, c := range kids(x) {
		if in := ft.infos[c]; in.kind == printparse.KindIdentity && hasToken(in.name, "norm") {
			holders = append(holders, c)
		}
	}
	out := make([]fusedNorm, len(norms))
	used := map[*printparse.Node]bool{}
	for i, n := range norms {
		out[i] = fusedNorm{fused: fused, at: x, linear: ft.infos[linears[i]].canon, norm: ot.infos[n].canon}
		best := 0.5
		for _, h := range holders {
			a, b := ft.infos[h], ot.infos[n]
			if fused == benchSide {
				a, b = b, a
			}
			// the own names' words count too: pre_mlp_layernorm is the
			// placeholder of pre_feedforward_layernorm, though the phrase
			// table reads it as Llama's post_attention_layernorm
			s := math.Max(nameSim(a, b), tokenSim(pathTokens(a.node.Name), pathTokens(b.node.Name)))
			if !used[h] && s >= best {
				best, out[i].placeholder = s, h
			}
		}
		if h := out[i].placeholder; h != nil {
			used[h] = true
			out[i].placeholder = ft.infos[h].canon
		}
	}
	return out
}

// fusedNormOf finds the fused norm n (on side on) is the norm, linear or
// placeholder of, by canonical module.
func (al *alignment) fusedNormOf(n *printparse.Node, on side) (fusedNorm, bool) {
	c := al.tree(on).infos[n].canon
	for _, f := range al.fusedNorms() {
		if f.fused == on && (f.linear == c || f.placeholder == c) || f.fused != on && f.norm == c {
			return f, true
		}
	}
	return fusedNorm{}, false
}

// note words a fused norm for the structural list, keyed by the fused
// side's wording of the draft keyed by side keys.
func (f fusedNorm) note() string {
	s := fmt.Sprintf("N:1 %s %s (%s) applies the other side's %s (%s) inside the projection: that norm has no 1:1 partner, and this module's input is the un-normalised one",
		f.fused, displayGroup(f.linear), f.linear.Class, displayGroup(f.norm), f.norm.Class)
	if f.placeholder != nil {
		s += fmt.Sprintf("; %s (%s) is the placeholder left in its place", displayGroup(f.placeholder), f.placeholder.Class)
	}
	return s
}

// normLinearsBelow returns the linears with a norm fused in (isNormLinear)
// at or below top, at most maxDepth levels down (maxDepth < 0: any
// depth), not looking into list members below top.
func normLinearsBelow(t *treeIndex, top *printparse.Node, maxDepth int) []*printparse.Node {
	if t.infos[top] == nil {
		return nil
	}
	var out []*printparse.Node
	d0 := t.infos[top].depth
	top.Walk(func(d *printparse.Node) bool {
		in := t.infos[d]
		if in == nil || maxDepth >= 0 && in.depth-d0 > maxDepth || d != top && isListMember(d) {
			return false
		}
		if isNormLinear(in) {
			out = append(out, d)
		}
		return true
	})
	return out
}
