package htmlview

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"unicode"

	"github.com/layermap/layermap/infer"
	"github.com/layermap/layermap/mapping"
	"github.com/layermap/layermap/printparse"
)

// FromSuggest builds the view of a suggest run: the two trees, every pair
// with its confidence, reasons and kind, why each unmatched module is
// alone, the conflicts and how they were resolved, and the forward draft
// (NPU-keyed) that manual matches extend.
func FromSuggest(npu, bench *printparse.Tree, r *infer.Result) (*View, error) {
	v := &View{
		Title: fmt.Sprintf("layermap suggest: %s vs %s", filepath.Base(npu.Source), filepath.Base(bench.Source)),
		Mode:  ModeSuggest,
		NPU:   NewSide("NPU (-tp, keys the mapping)", npu),
		Bench: NewSide("bench (-gp)", bench),
	}
	for _, p := range r.Roots {
		a, b := v.NPU.Lookup(p.NPU), v.Bench.Lookup(p.Bench)
		if a != nil && b != nil {
			v.Pairs = append(v.Pairs, Pair{NPU: nodes(a), Bench: nodes(b), Kind: Root, Score: p.Score, Margin: p.Margin, Reasons: p.Reasons, Proven: true})
		}
	}
	for _, p := range r.Pairs {
		a, b := v.NPU.Lookup(p.NPU), v.Bench.Lookup(p.Bench)
		if a == nil || b == nil {
			continue // a path the tree does not have: nothing to draw
		}
		q := Pair{NPU: nodes(a), Bench: nodes(b), Kind: OneToOne, Band: Band(p.Band), Score: p.Score, Margin: p.Margin,
			Reasons: p.Reasons, Note: p.Structural, Proven: p.Proven}
		if slices.Contains(p.Reasons, "manual") {
			// suggest --pairs-in (infer.Result.AddManual)
			q = Pair{NPU: q.NPU, Bench: q.Bench, Kind: ByHand, Score: 1, Reasons: p.Reasons, Proven: p.Proven,
				Note: "a manual match the draft's lines make"}
			if !p.Proven {
				q.Note = "a sidecar pair (no sound layer_mapping line)"
			}
			v.Pairs = append(v.Pairs, q)
			continue
		}
		if len(p.Doubts) > 0 {
			q.Note = joinNote(q.Note, "doubts: "+strings.Join(p.Doubts, "; "))
		}
		if p.Structural != "" || p.Kind != "" {
			q.Kind = Fused
		}
		if p.Kind != "" && p.Kind != mapping.KindExperts {
			// the parts of an N:1 group join the pair (an experts
			// list is drawn as the one node it is)
			q.NPU, q.Bench = withParts(v.NPU, q.NPU, p.NPUParts), withParts(v.Bench, q.Bench, p.BenchParts)
		}
		if p.SizesDiffer != "" {
			q.Note = joinNote(q.Note, "printed sizes differ: "+p.SizesDiffer)
		}
		v.Pairs = append(v.Pairs, q)
	}
	paired := map[*printparse.Node]bool{}
	for _, p := range v.Pairs {
		for _, n := range p.NPU {
			paired[n] = true
		}
		for _, n := range p.Bench {
			paired[n] = true
		}
	}
	fusedMembers(v, paired)
	for path, why := range r.UnmatchedWhy {
		for _, s := range []*Side{v.NPU, v.Bench} {
			if n := s.Lookup(path); n != nil && !paired[n] {
				s.Why[n] = why
			}
		}
	}
	for _, c := range r.Forward.Conflicts {
		v.Conflicts = append(v.Conflicts, conflict(c, false))
	}
	for _, c := range r.Reverse.Conflicts {
		v.Conflicts = append(v.Conflicts, conflict(c, true))
	}
	tmpl := r.Forward.Template
	if tmpl == "" {
		tmpl = "none"
	}
	v.Summary.Counts = &r.Counts
	v.Summary.Facts = [][2]string{
		{"coverage", fmt.Sprintf("%.1f%% of the NPU modules msprobe dumps have a bench partner (%d of %d)", 100*r.Coverage, r.Counts.NPU.Paired, r.Counts.NPU.Modules)},
		{"proven", fmt.Sprintf("%.1f%% of the pairs are made by msprobe's resolver with the draft", 100*r.Forward.Proven)},
		{"template", tmpl},
		{"sidecar", fmt.Sprintf("%d pairs no YAML line can express", len(r.Forward.Sidecar))},
	}
	v.Summary.Notes = append(v.Summary.Notes, r.Structural...)
	v.Summary.Notes = append(v.Summary.Notes, r.Warnings...)
	if r.Forward.Mapping != nil {
		text, err := r.Forward.Mapping.Marshal()
		if err != nil {
			return nil, err
		}
		mf, err := NewMappingFile("layer_mapping.yaml", string(text))
		if err != nil {
			return nil, err
		}
		v.Mapping = mf
	}
	return v, nil
}

// withParts adds a group's parts (paths on side s) to a pair's nodes.
func withParts(s *Side, ns []*printparse.Node, parts []string) []*printparse.Node {
	for _, path := range parts {
		if n := s.Lookup(path); n != nil && !slices.Contains(ns, n) {
			ns = append(ns, n)
		}
	}
	return ns
}

// fusedMembers draws an N:1 pair infer gave no parts for as such: infer
// pairs the fused module with one of the modules it fuses and names them
// all in the pair's note; the unpaired siblings the note names join the
// pair.
func fusedMembers(v *View, paired map[*printparse.Node]bool) {
	for i := range v.Pairs {
		p := &v.Pairs[i]
		if p.Kind != Fused || p.Note == "" || len(p.NPU) > 1 || len(p.Bench) > 1 {
			continue
		}
		words := map[string]bool{}
		for _, w := range strings.FieldsFunc(p.Note, func(r rune) bool {
			return !(r == '_' || r == '.' || unicode.IsLetter(r) || unicode.IsDigit(r))
		}) {
			words[w] = true
		}
		join := func(side []*printparse.Node) []*printparse.Node {
			if par := side[0].Parent; par != nil {
				for _, c := range par.Children {
					if !paired[c] && words[c.Name] {
						paired[c] = true
						side = append(side, c)
					}
				}
			}
			return side
		}
		p.NPU, p.Bench = join(p.NPU), join(p.Bench)
	}
}

func nodes(n ...*printparse.Node) []*printparse.Node { return n }

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

func conflict(c infer.Conflict, reverse bool) Conflict {
	out := Conflict{Class: c.Class, Reverse: reverse, Resolution: c.Resolution, Proven: c.Proven}
	for _, in := range c.Instances {
		out.Instances = append(out.Instances, ConflictInstance{Path: in.Path, Wants: in.Wants})
	}
	return out
}
