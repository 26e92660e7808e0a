package compare

import (
	"fmt"

	"github.com/layermap/layermap/printparse/msprobe"
)

// Tensor-parallel shards.
//
// Two runs with different tensor-parallel sizes hold the same tensors in
// different slices: with TP 2 on the NPU side and TP 1 on the bench side,
// NPU ranks 0 and 1 each hold half of a column-parallel projection's
// weight and output, and the bench rank holds all of it. Ranks are laid
// out as Megatron lays them out, TP fastest: rank = replica * TP +
// position. Each rank of the side with the smaller TP is compared with
// the TP/TP' ranks of the other side that hold its slices (the many
// side's first of them names the table); a row whose shapes differ
// between the two sides is compared with the many side's shards of the
// same compare key concatenated along the axis the shapes show (a
// sequence-parallel split along the first axis included). Rows of equal
// shapes (replicated tensors) are compared as they are. Partial sums (a
// row-parallel projection before its all-reduce) have equal shapes and
// are not recognised: msprobe's modules dump after the reduction.

// TPSizes names the tensor-parallel size of each side (compare --tp).
type TPSizes struct{ NPU, Bench int }

// tpPlan is the shards of one rank pair.
type tpPlan struct {
	npuMany  bool
	siblings []msprobe.Paths // the many side's other ranks of the pair, in TP order
	ranks    string          // the many side's ranks, "2-3"
}

// tpFits refuses TP sizes the rank counts do not fit: each side's ranks
// a whole multiple of its TP size, as many replicas on each side. what
// says what the inputs are when they are single ranks.
func tpFits(tp TPSizes, npu, bench int, what string) error {
	few, many, small, large := bench, npu, tp.Bench, tp.NPU
	if tp.Bench > tp.NPU {
		few, many, small, large = npu, bench, tp.NPU, tp.Bench
	}
	if few%small != 0 || many%large != 0 || few/small != many/large {
		return badInput("--tp-size %d,%d: expected rank counts that are whole multiples of the TP sizes with as many replicas on each side, found %d target and %d golden ranks%s",
			tp.NPU, tp.Bench, npu, bench, what)
	}
	return nil
}

// tpSingle refuses --tp-size sizes that differ for two single-rank
// inputs (a dump.json or rank folder each): one rank holds no shards of
// another TP size.
func tpSingle(tp TPSizes, target, golden string) error {
	if tp == (TPSizes{}) || tp.NPU == tp.Bench {
		return nil
	}
	if tp.NPU <= 0 || tp.Bench <= 0 {
		return badInput("--tp-size: expected two positive sizes, found %d,%d", tp.NPU, tp.Bench)
	}
	return tpFits(tp, 1, 1, fmt.Sprintf(" (%s and %s are one rank each: pass the step folders holding the rank folders)", target, golden))
}

// tpRankPairs pairs the rank folders of two step folders whose TP sizes
// differ: each rank of the side with the smaller TP with the first rank
// of its shards on the other side; plans gives each pair's shards.
func tpRankPairs(tp TPSizes, npu, bench []msprobe.RankDir) (pairs []rankPair, plans []*tpPlan, err error) {
	if tp.NPU <= 0 || tp.Bench <= 0 {
		return nil, nil, badInput("--tp-size: expected two positive sizes, found %d,%d", tp.NPU, tp.Bench)
	}
	few, many, small, large, npuMany := bench, npu, tp.Bench, tp.NPU, true
	if tp.Bench > tp.NPU {
		few, many, small, large, npuMany = npu, bench, tp.NPU, tp.Bench, false
	}
	if large%small != 0 {
		return nil, nil, badInput("--tp-size %d,%d: expected one size to divide the other", tp.NPU, tp.Bench)
	}
	k := large / small
	if err := tpFits(tp, len(npu), len(bench), ""); err != nil {
		return nil, nil, err
	}
	for i, r := range few {
		g, pos := i/small, i%small
		first := g*large + pos*k
		shards := many[first : first+k]
		pl := &tpPlan{npuMany: npuMany, ranks: fmt.Sprintf("%d-%d", shards[0].Rank, shards[k-1].Rank)}
		for _, s := range shards[1:] {
			p, err := msprobe.Locate(s.Path)
			if err != nil {
				return nil, nil, asInput(err)
			}
			pl.siblings = append(pl.siblings, p)
		}
		if k == 1 {
			pl = nil
		}
		if npuMany {
			pairs = append(pairs, rankPair{NPU: shards[0], Bench: r})
		} else {
			pairs = append(pairs, rankPair{NPU: r, Bench: shards[0]})
		}
		plans = append(plans, pl)
	}
	return pairs, plans, nil
}

// tpJoin looks up the shards of a pass: an index over each sibling rank's
// dump.json, keyed as the bench side is.
type tpJoin struct {
	p    *tpPlan
	cfg  *Config
	ix   []*benchIndex
	refs []rowRef
}

func (p *tpPlan) join(cfg *Config) (*tpJoin, error) {
	t := &tpJoin{p: p, cfg: cfg}
	side := "bench" // the side its errors name
	if p.npuMany {
		side = "target"
	}
	for _, s := range p.siblings {
		ix, err := newSideIndex(side, BenchFile(s.DumpJSON), cfg, !cfg.Fuzzy, false, nil)
		if err != nil {
			t.close()
			return nil, fmt.Errorf("tensor-parallel shard %s: %w", s.DumpJSON, err)
		}
		ix.reset(true)
		t.ix = append(t.ix, ix)
	}
	return t, nil
}

// finish checks the siblings' entries no lookup read, as the bench
// side's are (benchIndex.finish), and closes their indexes: a sibling's
// dump.json is read whole, whichever of its rows the table asks for. The
// error is the first sibling's first in file order.
func (t *tpJoin) finish() error {
	defer t.close()
	for _, ix := range t.ix {
		if _, _, err := ix.countUnread(); err != nil {
			return err
		}
	}
	return nil
}

func (t *tpJoin) close() {
	for _, ix := range t.ix {
		ix.close()
	}
	t.ix = nil
}

// shards returns the row of key in every sibling rank (nil when one has
// none).
func (t *tpJoin) shards(key string) ([]*msprobe.Item, error) {
	out := make([]*msprobe.Item, 0, len(t.ix))
	for _, ix := range t.ix {
		var err error
		if t.refs, err = ix.lookup(key, t.refs); err != nil {
			return nil, err
		}
		if len(t.refs) == 0 {
			return nil, nil
		}
		_, r := ix.row(t.refs[0])
		it := r.it
		out = append(out, &it)
	}
	return out, nil
}

// emit wraps a row's emit: a row whose two sides' shapes differ is
// compared with the many side's shards combined, when the shapes show
// how they combine.
func (t *tpJoin) emit(emit rowEmit) rowEmit {
	return func(n, b *sideRow, src MatchSource) error {
		if b == nil || b.it.Shape == n.it.Shape {
			return emit(n, b, src)
		}
		one, key := n, b.key
		if t.p.npuMany {
			one, key = b, n.key
		}
		sh, err := t.shards(key)
		if err != nil || sh == nil {
			return err2(err, emit(n, b, src))
		}
		host := &b.it
		if t.p.npuMany {
			host = &n.it
		}
		parts := append([]*msprobe.Item{host}, sh...)
		_, _, dir := msprobe.SplitName(n.it.Entry)
		c := decide(kindTP, roleOf(&n.it, dir), &one.it, parts)
		if c.how != howConcat || t.cfg.Mode == MD5 {
			return emit(n, b, src)
		}
		it, ok := combinedItem(c, parts, host.Name, t.cfg.Mode != Tensor)
		if !ok {
			return emit(n, b, src)
		}
		it.DataName = host.DataName
		side := "bench"
		if t.p.npuMany {
			side = "NPU"
		}
		how := fmt.Sprintf("concatenated along axis %d", c.axis)
		f := &fusedRow{kind: kindTP, status: fusedCombined, comb: c, npuSide: t.p.npuMany,
			msg: fmt.Sprintf("fused: tp, %s row = the shards of ranks %s %s", side, t.p.ranks, how)}
		if t.cfg.Mode == Tensor {
			for i, p := range parts {
				f.parts = append(f.parts, *p)
				if i > 0 {
					f.rankDirs = append(f.rankDirs, t.p.siblings[i-1])
				}
			}
		}
		if t.p.npuMany {
			nn := *n
			nn.it, nn.fused = it, f
			return emit(&nn, b, src)
		}
		nb := *b
		nb.it, nb.fused = it, f
		return emit(n, &nb, src)
	}
}

// err2 is a if set, else b.
func err2(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// String names the many side's ranks of a pair ("NPU ranks 0-1").
func (p *tpPlan) String() string {
	side := "bench"
	if p.npuMany {
		side = "NPU"
	}
	return side + " ranks " + p.ranks
}
