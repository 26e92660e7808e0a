package compare

import (
	"github.com/layermap/layermap/printparse/msprobe"
)

// Counts are Result counts.
type Counts struct {
	Pass    int `json:"pass"`
	Warning int `json:"warning"`
	Error   int `json:"error"`
}

func (c *Counts) add(result string) {
	switch result {
	case ResultPass:
		c.Pass++
	case ResultWarning:
		c.Warning++
	case ResultError:
		c.Error++
	}
}

// FusedCounts are the rows an N:1 group kind touched.
type FusedCounts struct {
	// Combined rows were compared with the other side's parts combined.
	Combined int `json:"combined"`
	// Shared rows are inputs the parts share, compared 1:1.
	Shared int `json:"shared_inputs"`
	// InputsOnly rows have no exact combination: not compared.
	InputsOnly int `json:"inputs_only"`
	// Parts are NPU parts' rows, compared in a combined row.
	Parts int `json:"parts"`
}

// tally counts a written group into the summary and follows the first
// divergence.
func (s *Summary) tally(grp []*outRow, cfg *Config) {
	if s.SentNowhere == nil && len(cfg.nowhereRules) > 0 {
		s.SentNowhere = append([]Nowhere(nil), cfg.nowhereRules...)
	}
	// the rule the group's unmatched rows count under, looked up at the
	// first (-1: none; most groups have no unmatched row)
	nowhere, looked := -1, false
	counted := false
	for _, r := range grp {
		s.Rows++
		switch r.result {
		case ResultPass:
			s.Pass++
		case ResultWarning:
			s.Warning++
		case ResultError:
			s.Error++
		}
		f := r.fusedMark()
		if f != nil {
			if s.Fused == nil {
				s.Fused = map[string]*FusedCounts{}
			}
			fc := s.Fused[f.kind]
			if fc == nil {
				fc = &FusedCounts{}
				s.Fused[f.kind] = fc
			}
			switch f.status {
			case fusedCombined:
				fc.Combined++
			case fusedShared:
				fc.Shared++
			case fusedInputsOnly:
				fc.InputsOnly++
			case fusedPart:
				fc.Parts++
			}
		}
		compared := r.bench != nil
		switch {
		case compared:
			s.Compared++
			s.ComparedResults.add(r.result)
			s.matched[r.source]++
		case f == nil:
			s.NPUUnmatched++
			if r.npu.it.Entry != grp[0].npu.it.Entry {
				break
			}
			if !looked {
				looked = true
				if k, ok := cfg.nowhere.rule(grp[0].npu); ok && (cfg.fused == nil || cfg.fused.calls[grp[0].npu.it.Entry] == nil) {
					nowhere = int(k) // (an N:1 group call's rows are the fusion's)
				}
			}
			if nowhere >= 0 {
				s.SentNowhere[nowhere].Rows++
				if !counted {
					counted = true
					s.SentNowhere[nowhere].Entries++
				}
			}
		}
	}
	s.div.add(grp, cfg.Mode)
	if cfg.da != nil {
		cfg.da.add(grp, cfg.Mode, cfg.Stack != nil)
	}
}

// classify names the first divergences once the table is written (see
// divergence.go): construct.json parents and stack frames locate them.
// The tracker is dropped once done (Summary values compare equal). The
// rules that left no row unmatched leave SentNowhere.
func (s *Summary) classify(construct, benchConstruct string, frames StackFrames) error {
	defer func() { s.div = divergences{} }()
	kept := s.SentNowhere[:0]
	for _, n := range s.SentNowhere {
		if n.Rows > 0 {
			kept = append(kept, n)
		}
	}
	if s.SentNowhere = kept; len(kept) == 0 {
		s.SentNowhere = nil
	}
	if len(s.div.cands) == 0 {
		return nil
	}
	parent, benchParent := map[string]string{}, map[string]string{}
	// the bench side's parents are read beside the NPU side's rounds
	benchDone := make(chan error, 1)
	go func() {
		if benchConstruct == "" {
			benchDone <- nil
			return
		}
		want := map[string]bool{}
		for _, cs := range s.div.cands {
			for _, c := range cs {
				want[c.bench] = true
			}
		}
		var err error
		benchParent, err = msprobe.ReadParents(benchConstruct, want)
		benchDone <- err
	}()
	if construct != "" {
		// the candidates' parents, then theirs while no compared module
		// encloses them (a few rounds over the file at most)
		want := map[string]bool{}
		for _, cs := range s.div.cands {
			for _, c := range cs {
				want[c.npu] = true
			}
		}
		// (the file is read once; later rounds read the values they need)
		var pr *msprobe.ParentReader
		defer func() { pr.Release() }()
		for round := 0; round < 3 && len(want) > 0; round++ {
			var got map[string]string
			var err error
			if pr == nil {
				got, pr, err = msprobe.ReadParentsKeeping(construct, want)
			} else {
				got, err = pr.Parents(want)
			}
			if err != nil {
				<-benchDone
				return err
			}
			next := map[string]bool{}
			for e, p := range got {
				parent[e] = p
				if p != "" && !s.div.modOut.has(s.div.modKey(p)) {
					if _, known := parent[p]; !known {
						next[p] = true
					}
				}
			}
			want = next
		}
	}
	if err := <-benchDone; err != nil {
		return err
	}
	s.Divergences = s.div.classify(parent, benchParent, frames)
	s.First = firstOf(s.Divergences)
	return nil
}

// fusedMark is the fusion's mark on a row (either side), or nil.
func (r *outRow) fusedMark() *fusedRow {
	if r.npu.fused != nil {
		return r.npu.fused
	}
	if r.bench != nil {
		return r.bench.fused
	}
	return nil
}

// fusedNote appends the fusion's Err_message line to a judged row.
func (r *outRow) fusedNote() {
	if f := r.fusedMark(); f != nil {
		r.msgs = append(r.msgs, f.msg)
	}
}

// tensorMetrics computes a row's tensor metrics: a combined row's from its
// parts' files (the comparer must combine), any other row's as the
// comparer does.
func tensorMetrics(tc TensorComparer, at int64, r *outRow, bench, group *msprobe.Item) ([6]Metric, error) {
	f := r.fusedMark()
	if f == nil || f.status != fusedCombined {
		return tc.Metrics(at, &r.npu.it, bench, group)
	}
	cc, ok := tc.(CombinedComparer)
	if !ok {
		return naMetrics(), nil
	}
	one := func(it *msprobe.Item) []TensorPart { return []TensorPart{{Item: *it}} }
	npu, benchParts := one(&r.npu.it), one(bench)
	parts := make([]TensorPart, len(f.parts))
	for i, it := range f.parts {
		parts[i].Item = it
		if i > 0 && i-1 < len(f.rankDirs) {
			parts[i].Rank = &f.rankDirs[i-1]
		}
	}
	if f.npuSide {
		npu = parts
	} else {
		benchParts = parts
	}
	how := Combination{Axis: f.comb.axis, Stack: f.comb.stack, Sum: f.comb.how == howSum}
	return cc.CombinedMetrics(at, npu, benchParts, how, r.npu.it.Name, bench.Name)
}

// TensorPart is one tensor of a combined row: a row's item and, for
// another rank's shard, that rank's files (nil: the row's side's own).
type TensorPart struct {
	Item msprobe.Item
	Rank *msprobe.Paths
}

// Combination says how a combined row's parts make one tensor:
// concatenated along Axis (stack: along a new leading axis) or summed.
type Combination struct {
	Axis       int
	Stack, Sum bool
}

// CombinedComparer is a TensorComparer that also compares rows whose
// one side is several tensors combined by how (the other side is one);
// at is the row's place in the table, as for Metrics.
type CombinedComparer interface {
	CombinedMetrics(at int64, npu, bench []TensorPart, how Combination, npuName, benchName string) ([6]Metric, error)
}

// naMetrics are the cells of a row whose metrics cannot be computed.
func naMetrics() [6]Metric {
	var m [6]Metric
	for i := range m {
		m[i] = Metric{Text: "N/A"}
	}
	return m
}
