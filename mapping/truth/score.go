package truth

import (
	"fmt"
	"sort"

	"github.com/layermap/layermap/mapping"
	"github.com/layermap/layermap/mapping/resolve"
	"github.com/layermap/layermap/printparse"
)

// Confidence bands of a drafted pair.
const (
	Sure   = "sure"
	Check  = "check"
	Unsure = "unsure"
)

// Bands in report order.
var Bands = []string{Sure, Check, Unsure}

// Resolved is what msprobe's resolver makes of a draft for one dumped
// NPU module: the dumped bench module it pairs it with ("" for none) and
// the confidence band the draft gives that pair ("" for a draft without
// bands, such as a template).
type Resolved struct {
	NPU, Bench string
	Band       string
}

// Resolve applies m to the pair of trees the way msprobe does and returns,
// for every NPU module msprobe would dump (resolve.HasDumpEntry), the
// dumped bench module it is paired with ("" when none, or when msprobe
// would not find the target in a dump) and band(npu, bench) (band nil:
// no bands).
func Resolve(m *mapping.Mapping, npu, bench *printparse.Tree, band func(npu, bench string) string) []Resolved {
	var out []Resolved
	for _, p := range resolve.New(m).ResolveTree(npu, bench) {
		if !resolve.HasDumpEntry(npu, p.NPU) {
			continue
		}
		r := Resolved{NPU: p.NPU.Path}
		if p.Bench != nil && resolve.HasDumpEntry(bench, p.Bench) {
			r.Bench = p.Bench.Path
			if band != nil {
				r.Band = band(r.NPU, r.Bench)
			}
		}
		out = append(out, r)
	}
	return out
}

// Outcomes of one NPU module.
const (
	Correct  = "correct"  // 1:1 truth, paired with its partner
	Missed   = "missed"   // 1:1 truth, paired with nothing
	Wrong    = "wrong"    // 1:1 or N:1 truth, paired with a module that is not a partner
	Spurious = "spurious" // no partner, paired with something
	Standin  = "stand-in" // N:1 truth, paired with one of its acceptable partners
	Unpaired = "unpaired" // N:1 truth, paired with nothing
	Alone    = "alone"    // no partner, paired with nothing
)

// Score is the evaluation of one draft in one direction.
type Score struct {
	// OneToOne counts the NPU modules with a 1:1 partner; Correct of them
	// are paired with it.
	OneToOne, Correct int
	// Wrong counts pairs of a module with a partner (1:1 or N:1) to
	// something else; Spurious pairs of a module that has none.
	Wrong, Spurious int
	// N1 counts the NPU modules of each N:1 kind (fused, absorbed,
	// experts); N1Standin those paired with an acceptable stand-in.
	N1, N1Standin map[string]int
	// ByBand counts the paired modules per band and outcome (Correct,
	// Wrong, Spurious, Standin); unbanded pairs are not in it.
	ByBand map[string]map[string]int
	// Errors lists the wrong and spurious pairs, and Misses the missed 1:1
	// partners ("npu -> got (band), want ...").
	Errors, Misses []string
}

// Recall is the share of 1:1 partners paired (1 when there are none).
func (s *Score) Recall() float64 {
	if s.OneToOne == 0 {
		return 1
	}
	return float64(s.Correct) / float64(s.OneToOne)
}

// Precision is correct / (correct + wrong + spurious) among band's pairs
// (stand-ins count neither way); -1 when the band has none of these.
func (s *Score) Precision(band string) float64 {
	b := s.ByBand[band]
	n := b[Correct] + b[Wrong] + b[Spurious]
	if n == 0 {
		return -1
	}
	return float64(b[Correct]) / float64(n)
}

// BadIn counts the wrong and spurious pairs in band.
func (s *Score) BadIn(band string) int { return s.ByBand[band][Wrong] + s.ByBand[band][Spurious] }

// CorrectOutsideSure is the share of correct 1:1 pairs not in the sure band.
func (s *Score) CorrectOutsideSure() float64 {
	if s.Correct == 0 {
		return 0
	}
	return float64(s.Correct-s.ByBand[Sure][Correct]) / float64(s.Correct)
}

// Evaluate scores the resolved pairs of one direction against truth
// (Labels.Forward, or Labels.Reverse for a reverse draft). Every module of
// truth must be in resolved and the other way round.
func Evaluate(truth map[string]Verdict, resolved []Resolved) (*Score, error) {
	s := &Score{N1: map[string]int{}, N1Standin: map[string]int{}, ByBand: map[string]map[string]int{}}
	for _, b := range Bands {
		s.ByBand[b] = map[string]int{}
	}
	seen := map[string]bool{}
	for _, r := range resolved {
		v, ok := truth[r.NPU]
		if !ok {
			return nil, fmt.Errorf("resolved module %s has no ground truth", r.NPU)
		}
		if seen[r.NPU] {
			return nil, fmt.Errorf("module %s resolved twice", r.NPU)
		}
		seen[r.NPU] = true
		if r.Bench != "" && r.Band != "" {
			if _, ok := s.ByBand[r.Band]; !ok {
				return nil, fmt.Errorf("pair %s -> %s: unknown band %q", r.NPU, r.Bench, r.Band)
			}
		}
		o := Outcome(v, r.Bench)
		switch o {
		case Correct:
			s.OneToOne++
			s.Correct++
		case Missed:
			s.OneToOne++
			s.Misses = append(s.Misses, fmt.Sprintf("%s -> nothing, want %s (%s)", r.NPU, v.Accept[0], v.Rule))
		case Wrong:
			if v.Kind == OneToOne {
				s.OneToOne++
			}
			s.Wrong++
		case Spurious:
			s.Spurious++
		}
		if v.Partial() {
			s.N1[v.Kind]++
			if o == Standin {
				s.N1Standin[v.Kind]++
			}
		}
		if r.Bench != "" && r.Band != "" {
			s.ByBand[r.Band][o]++
		}
		if o == Wrong || o == Spurious {
			want := "no partner"
			if len(v.Accept) > 0 {
				want = fmt.Sprintf("%s %v", v.Kind, v.Accept)
				if len(v.Accept) > 3 {
					want = fmt.Sprintf("%s [%s ... %d modules]", v.Kind, v.Accept[0], len(v.Accept))
				}
			}
			s.Errors = append(s.Errors, fmt.Sprintf("%s -> %s (%s), want %s (%s)", r.NPU, r.Bench, r.Band, want, v.Rule))
		}
	}
	if len(seen) != len(truth) {
		var missing []string
		for p := range truth {
			if !seen[p] {
				missing = append(missing, p)
			}
		}
		sort.Strings(missing)
		return nil, fmt.Errorf("%d modules of the ground truth were not resolved, first %s", len(missing), missing[0])
	}
	sort.Strings(s.Errors)
	sort.Strings(s.Misses)
	return s, nil
}

// Outcome classifies pairing a module with verdict v to bench ("" for
// nothing).
func Outcome(v Verdict, bench string) string {
	switch {
	case v.Kind == None && bench == "":
		return Alone
	case v.Kind == None:
		return Spurious
	case bench == "" && v.Kind == OneToOne:
		return Missed
	case bench == "":
		return Unpaired
	case !v.Accepts(bench):
		return Wrong
	case v.Kind == OneToOne:
		return Correct
	}
	return Standin
}
