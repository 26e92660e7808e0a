package infer

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/layermap/layermap/printparse"
	"github.com/layermap/layermap/printparse/msprobe"
)

// tensorStat is one dumped tensor of a module's first forward call: its
// shape and statistics (Max, Min, Mean, Norm; NaN when not dumped).
type tensorStat struct {
	shape []int
	stats [4]float64
}

// moduleIO is what a dump holds of one module's first forward call: its
// first tensor input and first tensor output.
type moduleIO struct {
	in, out *tensorStat
}

// dumpEvidence reads the forward inputs and outputs msprobe dumped for each
// module of t (an msprobe dump folder), by module path; nil for a print.
func dumpEvidence(t *printparse.Tree) (map[string]*moduleIO, error) {
	if t.Kind != printparse.KindMsprobe || t.Source == "" {
		return nil, nil
	}
	dir, err := msprobe.FindRankDir(t.Source)
	if err != nil {
		return nil, err
	}
	// Skim the names, then read only each module's first forward entry:
	// a "mix" dump is mostly API entries.
	file := filepath.Join(dir, msprobe.DumpJSONName)
	type member struct {
		index, line int
		off         int64
		path        string
	}
	var offs []int64
	var want []member
	seen := map[string]bool{}
	var ends map[int]int64 // entries whose body is not followed by the next one (a repeated key)
	reset := func() { offs, want, seen, ends = nil, nil, map[string]bool{}, nil }
	if _, err := msprobe.SkimExact(file, reset, func(e *msprobe.SkimEntry) error {
		offs = append(offs, e.Offset)
		if e.End != 0 {
			if ends == nil {
				ends = map[int]int64{}
			}
			ends[e.Index] = e.End
		}
		if !strings.HasPrefix(string(e.Name[:min(len(e.Name), 7)]), "Module.") && !strings.HasPrefix(string(e.Name[:min(len(e.Name), 5)]), "Cell.") {
			return nil
		}
		path, _, dir, ok := msprobe.ModuleEntry(string(e.Name))
		if ok && dir == "forward" && !seen[path] {
			seen[path] = true
			want = append(want, member{e.Index, e.Line, e.Offset, path})
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("reading dumped shapes: %w", err)
	}
	rd, err := msprobe.NewEntryReader(file)
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	out := map[string]*moduleIO{}
	for _, w := range want {
		end := int64(-1)
		if e, ok := ends[w.index]; ok {
			end = e
		} else if w.index+1 < len(offs) {
			end = offs[w.index+1]
		}
		var read func(e *msprobe.Entry) error
		read = func(e *msprobe.Entry) error {
			out[w.path] = entryIO(e)
			return nil
		}
		if err := rd.Read(w.index, w.off, end, w.line, read); err != nil {
			return nil, fmt.Errorf("reading dumped shapes: %w", err)
		}
	}
	return out, nil
}

// entryIO is the first tensor input and output of a module's entry.
func entryIO(e *msprobe.Entry) *moduleIO {
	{
		io := &moduleIO{}
		for i := range e.Items {
			it := &e.Items[i]
			if it.Type != "torch.Tensor" {
				continue
			}
			switch {
			case it.State == msprobe.StateInput && io.in == nil:
				io.in = newTensorStat(it)
			case it.State == msprobe.StateOutput && io.out == nil:
				io.out = newTensorStat(it)
			}
		}
		return io
	}
}

func newTensorStat(it *msprobe.Item) *tensorStat {
	shape, _ := msprobe.ParseShape(it.Shape)
	ts := &tensorStat{shape: shape}
	for k, v := range it.Stats {
		ts.stats[k] = math.NaN()
		if v.Kind == msprobe.Number {
			ts.stats[k] = v.Num
		}
	}
	return ts
}

// shapesAgree compares two dumped shapes as the two frameworks lay them
// out: the same dimensions in any order (Megatron's [seq, batch, hidden]
// against [batch, seq, hidden]), or the same number of elements, with one
// dimension allowed to be a whole multiple of the other's (a tensor-
// parallel shard). ok is false when nothing was dumped to compare.
func shapesAgree(a, b []int) (agree, ok bool) {
	if a == nil || b == nil {
		return false, false
	}
	sa, sb := slices.Clone(a), slices.Clone(b)
	slices.Sort(sa)
	slices.Sort(sb)
	if slices.Equal(sa, sb) {
		return true, true
	}
	na, nb := elems(a), elems(b)
	if na == nb {
		return true, true // flattened or regrouped dimensions
	}
	lo, hi := min(na, nb), max(na, nb)
	if lo > 0 && hi%lo == 0 && len(a) == len(b) {
		// one shard: all dimensions but one agree
		diff := 0
		for i := range sa {
			if sa[i] != sb[i] {
				diff++
			}
		}
		return diff <= 1, true
	}
	return false, true
}

func elems(s []int) int {
	n := 1
	for _, d := range s {
		n *= d
	}
	return n
}

// statsAgree reports whether two dumped tensors of one shape have the
// same statistics within tol: Max, Min and Mean relative to the larger
// magnitude of the two tensors' extremes (a mean near zero has no scale of
// its own), Norm relative to itself. The same batch through a true pair
// of modules agrees. ok is false when a statistic is missing.
func statsAgree(a, b *tensorStat, tol float64) (agree, ok bool) {
	scale := 1e-6
	for k := range a.stats {
		x, y := a.stats[k], b.stats[k]
		if math.IsNaN(x) || math.IsNaN(y) {
			return false, false
		}
		if k < 2 { // Max, Min
			scale = math.Max(scale, math.Max(math.Abs(x), math.Abs(y)))
		}
	}
	for k := range a.stats {
		x, y := a.stats[k], b.stats[k]
		s := scale
		if k == 3 { // Norm
			s = math.Max(math.Max(math.Abs(x), math.Abs(y)), 1e-6)
		}
		if math.Abs(x-y) > tol*s {
			return false, true
		}
	}
	return true, true
}

// weighEvidence confirms or vetoes every aligned pair with what both dumps
// hold: dumped shapes that cannot match make a pair unsure; inputs of one
// shape with the same statistics, and outputs of matching shapes, confirm
// it (a small margin or a low score then no longer counts against it).
func (r *alignment) weighEvidence(npu, bench map[string]*moduleIO) {
	if npu == nil || bench == nil {
		return
	}
	for _, m := range r.pairs {
		if m.rootish {
			continue
		}
		a, b := npu[m.a.Path], bench[m.b.Path]
		if a == nil || b == nil {
			continue
		}
		m.evidence, m.confirmed = weigh(a, b, m.structural[npuSide] != "" || m.grouped)
	}
}

// weigh is weighEvidence for one pair; nOne marks an N:1 pair, whose
// outputs differ by design.
func weigh(a, b *moduleIO, nOne bool) (doubts []doubt, confirmed bool) {
	inAgree, inOK := false, false
	if a.in != nil && b.in != nil {
		inAgree, inOK = shapesAgree(a.in.shape, b.in.shape)
		if inOK && !inAgree {
			doubts = append(doubts, doubt{BandUnsure, fmt.Sprintf("dumped input shapes differ: %v vs %v", a.in.shape, b.in.shape)})
		}
	}
	outAgree, outOK := false, false
	if a.out != nil && b.out != nil && !nOne {
		outAgree, outOK = shapesAgree(a.out.shape, b.out.shape)
		if outOK && !outAgree {
			doubts = append(doubts, doubt{BandUnsure, fmt.Sprintf("dumped output shapes differ: %v vs %v", a.out.shape, b.out.shape)})
		}
	}
	if len(doubts) > 0 || !inOK || !inAgree {
		return doubts, false
	}
	if !slices.Equal(a.in.shape, b.in.shape) {
		return nil, false // sharded or laid out otherwise: statistics differ anyway
	}
	// Statistics only confirm: inputs that differ may be the very
	// divergence the user is hunting, or two runs fed differently.
	if same, ok := statsAgree(a.in, b.in, 0.01); !ok || !same {
		return nil, false
	}
	return nil, !nOne && outOK && outAgree
}
