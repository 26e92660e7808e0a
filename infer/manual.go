package infer

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"

	"github.com/layermap/layermap/mapping"
	"github.com/layermap/layermap/mapping/resolve"
	"github.com/layermap/layermap/printparse"
	"github.com/layermap/layermap/printparse/msprobe"
	"github.com/layermap/layermap/printparse/source"
)

// ReadManual reads a file of manual module pairs (see ParseManual).
func ReadManual(path string) ([]mapping.ModulePair, error) {
	data, err := source.ReadFile(path, source.MaxMappingYAML)
	if err != nil {
		return nil, err // *source.Error: "path: expected ..., found ..."
	}
	return ParseManual(data, path)
}

// ParseManual reads manual module pairs: the manual_pairs.yaml layermap's
// HTML view offers (the sidecar pairs format, mapping.ParsePairs), or
// msprobe's .vis.config (msprobe.ParseVisConfig), told apart by the JSON
// object a .vis.config starts with. Errors are *source.Error.
func ParseManual(data []byte, name string) ([]mapping.ModulePair, error) {
	trim := bytes.TrimLeft(data, " \t\r\n\ufeff")
	if len(trim) == 0 || trim[0] != '{' {
		return mapping.ParsePairs(data, name)
	}
	ms, err := msprobe.ParseVisConfig(data, name)
	if err != nil {
		return nil, err
	}
	out := make([]mapping.ModulePair, len(ms))
	for i, m := range ms {
		out[i] = mapping.ModulePair{NPU: m.NPU, Bench: m.Bench}
	}
	return out, nil
}

// ManualLine is one layer_mapping line that manual pairs need.
type ManualLine struct {
	Class, Key, Value string
	NPU, Bench        string // the pair that asked for it
}

// ManualResult says what became of each manual pair.
type ManualResult struct {
	Lines []ManualLine
	// Sidecar holds the pairs no sound line expresses (compare --pairs).
	Sidecar []mapping.ModulePair
	// Covered are the pairs the mapping already makes.
	Covered []mapping.ModulePair
	// Extended are the pairs a new class rule also makes at the class's
	// other instances (the same module in the other layers).
	Extended []mapping.ModulePair
	// Skipped says, one line each, why a pair was left out.
	Skipped []string
}

// ManualComment is the comment on the lines Manual adds: the user's own
// lines, so no confidence band.
const ManualComment = "manual match"

// Manual turns manual module pairs into layer_mapping lines where a class
// rule is sound, and sidecar pairs where it is not, adding the lines to m.
//
// A line for a pair (a, b) stands where the drafter puts one (anchors):
// at an ancestor P of a that msprobe's resolver, given m, sends to an
// ancestor Q of b, nearest first, whose class may key a rule (TopLayer for
// the root; never a generic container such as ModuleList, nor a class that
// already has the key). The line is "P's class: a relative to P: b
// relative to Q". It is sound when, run through the resolver over both
// trees, it sends a to b, every other module the resolver paired before
// stays paired the same, and every module it now pairs besides a's
// subtree goes to a bench module nothing else resolves to — the same
// module at the class's other instances, as in the other layers.
// Otherwise the next anchor is tried (the root last), and the pair goes to
// the sidecar when none is sound.
//
// Pairs are taken parents first. A pair naming a module neither tree has
// is skipped; a pair written bench -> NPU (as .vis.config also stores the
// reverse link) is read the right way round.
func Manual(npu, bench *printparse.Tree, m *mapping.Mapping, pairs []mapping.ModulePair) *ManualResult {
	out := &ManualResult{}
	order, npuAt, benchAt := map[*printparse.Node]int{}, map[string]*printparse.Node{}, map[string]*printparse.Node{}
	npu.Walk(func(n *printparse.Node) bool { order[n], npuAt[n.Path] = len(order), n; return true })
	bench.Walk(func(n *printparse.Node) bool { benchAt[n.Path] = n; return true })
	type np struct{ a, b *printparse.Node }
	var todo []np
	seen := map[np]bool{}
	for _, p := range pairs {
		a, b := npuAt[p.NPU], benchAt[p.Bench]
		if a == nil || b == nil {
			if ra, rb := npuAt[p.Bench], benchAt[p.NPU]; ra != nil && rb != nil {
				a, b = ra, rb
			}
		}
		switch {
		case a == nil:
			out.Skipped = append(out.Skipped, fmt.Sprintf("%s -> %s: the NPU side has no module %s", p.NPU, p.Bench, p.NPU))
		case b == nil:
			out.Skipped = append(out.Skipped, fmt.Sprintf("%s -> %s: the bench side has no module %s", p.NPU, p.Bench, p.Bench))
		case a == npu.Root || b == bench.Root:
			out.Skipped = append(out.Skipped, fmt.Sprintf("%s -> %s: the roots are paired by msprobe itself", p.NPU, p.Bench))
		case !seen[np{a, b}]:
			seen[np{a, b}] = true
			todo = append(todo, np{a, b})
		}
	}
	slices.SortStableFunc(todo, func(x, y np) int { return cmp.Compare(order[x.a], order[y.a]) })
	res := resolveAll(m, npu, bench)
	for _, p := range todo {
		mp := mapping.ModulePair{NPU: p.a.Path, Bench: p.b.Path}
		if res[p.a] == p.b {
			out.Covered = append(out.Covered, mp)
			continue
		}
		line, after, ext := manualLine(m, npu, bench, res, p.a, p.b)
		if line == nil {
			out.Sidecar = append(out.Sidecar, mp)
			continue
		}
		line.NPU, line.Bench = mp.NPU, mp.Bench
		out.Lines = append(out.Lines, *line)
		out.Extended = append(out.Extended, ext...)
		res = after
	}
	return out
}

// resolveAll returns where msprobe's resolver sends every NPU module, the
// root to the root.
func resolveAll(m *mapping.Mapping, npu, bench *printparse.Tree) map[*printparse.Node]*printparse.Node {
	res := partners(resolve.New(m).ResolveTree(npu, bench))
	res[npu.Root] = bench.Root
	return res
}

// manualLine finds the sound line that sends a to b and adds it to m;
// it returns nil (m unchanged) when there is none.
func manualLine(m *mapping.Mapping, npu, bench *printparse.Tree, res map[*printparse.Node]*printparse.Node, a, b *printparse.Node) (*ManualLine, map[*printparse.Node]*printparse.Node, []mapping.ModulePair) {
	taken := map[[2]string]bool{}
	for _, r := range m.Rules() {
		taken[[2]string{r.Class.Class, r.Key}] = true
	}
	targeted := map[*printparse.Node]bool{}
	for _, t := range res {
		targeted[t] = true
	}
	partner := func(n *printparse.Node) *printparse.Node { return res[n] }
	for p, q := range anchors(a, b, partner) {
		class := classOf(p)
		key, val := rel(a, p), rel(b, q)
		if generic(p) || taken[[2]string{class, key}] {
			continue
		}
		newBlock := m.Lookup(class) == nil
		m.Add(class, key, val, ManualComment)
		after := resolveAll(m, npu, bench)
		if ext, ok := soundLine(res, after, targeted, a, b); ok {
			return &ManualLine{Class: class, Key: key, Value: val}, after, ext
		}
		dropLast(m, class, newBlock)
	}
	return nil, nil, nil
}

// soundLine checks a trial line: a goes to b, nothing else paired before
// moves, and what it newly pairs outside a's subtree goes to bench modules
// nothing else resolves to.
func soundLine(before, after map[*printparse.Node]*printparse.Node, targeted map[*printparse.Node]bool, a, b *printparse.Node) ([]mapping.ModulePair, bool) {
	if after[a] != b {
		return nil, false
	}
	var ext []mapping.ModulePair
	for n, t := range before {
		if after[n] != t && n != a {
			return nil, false
		}
	}
	for n, t := range after {
		if before[n] != nil || n == a || isAncestor(a, n) {
			continue
		}
		if targeted[t] {
			return nil, false
		}
		ext = append(ext, mapping.ModulePair{NPU: n.Path, Bench: t.Path})
	}
	slices.SortFunc(ext, func(x, y mapping.ModulePair) int { return cmp.Compare(x.NPU, y.NPU) })
	return ext, true
}

// dropLast removes the rule Add appended to class, and the block when Add
// created it.
func dropLast(m *mapping.Mapping, class string, newBlock bool) {
	c := m.Lookup(class)
	c.Rules = c.Rules[:len(c.Rules)-1]
	if newBlock {
		m.Classes = slices.DeleteFunc(m.Classes, func(x *mapping.ClassRules) bool { return x == c })
	}
}

// AddManual records what Manual made of manual pairs in r, so that the
// report, --report json and the view say it: every pair a line, a class
// rule's other instances or the sidecar now makes is one of r.Pairs
// (reason "manual", banded sure: the user's own match; proven unless it
// is a sidecar pair), its modules leave
// the unmatched lists, the sidecar pairs join the forward draft's sidecar,
// and Counts and Coverage are recounted.
func (r *Result) AddManual(npu, bench *printparse.Tree, mr *ManualResult) {
	if mr == nil {
		return
	}
	held := [2]map[string]bool{{}, {}}
	for _, p := range r.Pairs {
		held[npuSide][p.NPU], held[benchSide][p.Bench] = true, true
	}
	added := 0
	var npuIx, benchIx printparse.ChildIndex
	add := func(ps []mapping.ModulePair, proven bool) {
		for _, p := range ps {
			a, b := npuIx.Lookup(npu.Root, p.NPU), benchIx.Lookup(bench.Root, p.Bench)
			if a == nil || b == nil || held[npuSide][a.Path] || held[benchSide][b.Path] {
				continue
			}
			held[npuSide][a.Path], held[benchSide][b.Path] = true, true
			r.Pairs = append(r.Pairs, Pair{NPU: a.Path, Bench: b.Path, NPUClass: a.Class, BenchClass: b.Class,
				Score: 1, Margin: 1, Reasons: []string{"manual"}, Band: BandSure, Proven: proven})
			added++
		}
	}
	lines := make([]mapping.ModulePair, len(mr.Lines))
	for i, l := range mr.Lines {
		lines[i] = mapping.ModulePair{NPU: l.NPU, Bench: l.Bench}
	}
	add(lines, true)
	add(mr.Extended, true)
	add(mr.Sidecar, false)
	r.Forward.Sidecar = append(r.Forward.Sidecar, mr.Sidecar...)
	if added == 0 {
		return
	}
	order := map[string]int{}
	npu.Walk(func(n *printparse.Node) bool { order[n.Path] = len(order); return true })
	slices.SortStableFunc(r.Pairs, func(x, y Pair) int { return cmp.Compare(order[x.NPU], order[y.NPU]) })
	var gone []string
	keep := func(paths []string, s side) []string {
		out := paths[:0:0]
		for _, p := range paths {
			if held[s][p] {
				gone = append(gone, p)
				continue
			}
			out = append(out, p)
		}
		return out
	}
	r.Unmatched.NPU, r.Unmatched.Bench = keep(r.Unmatched.NPU, npuSide), keep(r.Unmatched.Bench, benchSide)
	// UnmatchedWhy is keyed by path, both sides in one map
	left := make(map[string]bool, len(r.Unmatched.NPU)+len(r.Unmatched.Bench))
	for _, p := range append(slices.Clip(r.Unmatched.NPU), r.Unmatched.Bench...) {
		left[p] = true
	}
	for _, p := range gone {
		if !left[p] {
			delete(r.UnmatchedWhy, p)
		}
	}
	r.recount(npu, bench)
}
