package infer

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/layermap/layermap/printparse"
	"gopkg.in/yaml.v3"

	"github.com/layermap/layermap/mapping"
)

// WriteReport writes r as "text" (for people) or "json" (a document with
// mapping, reverse, pairs, unmatched, conflicts, sidecar and the rest).
func WriteReport(w io.Writer, r *Result, format string) error {
	switch format {
	case "", "text":
		return writeText(w, r)
	case "json":
		return writeJSON(w, r)
	}
	return fmt.Errorf("infer: unknown report format %q (want text or json)", format)
}

type jsonReport struct {
	NPU               string               `json:"npu"`
	Bench             string               `json:"bench"`
	Template          string               `json:"template"`
	ReverseTemplate   string               `json:"reverse_template"`
	Coverage          float64              `json:"coverage"`
	Counts            Counts               `json:"counts"`
	Proven            float64              `json:"proven"`
	ReverseProven     float64              `json:"reverse_proven"`
	Mapping           map[string]any       `json:"mapping"`
	Reverse           map[string]any       `json:"reverse"`
	Roots             []Pair               `json:"roots"`
	Pairs             []Pair               `json:"pairs"`
	Unmatched         Unmatched            `json:"unmatched"`
	UnmatchedWhy      map[string]string    `json:"unmatched_why"`
	Conflicts         []Conflict           `json:"conflicts"`
	ReverseConflicts  []Conflict           `json:"reverse_conflicts"`
	Structural        []string             `json:"structural"`
	TemplateUnapplied []string             `json:"template_unapplied"`
	Sidecar           []mapping.ModulePair `json:"sidecar"`
	ReverseSidecar    []mapping.ModulePair `json:"reverse_sidecar"`
	Unintended        []mapping.ModulePair `json:"unintended"`
	ReverseUnintended []mapping.ModulePair `json:"reverse_unintended"`
	BandPrecision     Calibration          `json:"band_precision"`
}

// mappingObject is the YAML as a JSON object, as msprobe would load it.
func mappingObject(m *mapping.Mapping) (map[string]any, error) {
	out := map[string]any{}
	if m == nil {
		return out, nil
	}
	data, err := m.Marshal()
	if err != nil {
		return nil, err
	}
	var v map[string]map[string]string
	if err := yaml.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("infer: drafted mapping does not load back: %w", err)
	}
	for k, x := range v {
		out[k] = x
	}
	return out, nil
}

func writeJSON(w io.Writer, r *Result) error {
	fm, err := mappingObject(r.Forward.Mapping)
	if err != nil {
		return err
	}
	rm, err := mappingObject(r.Reverse.Mapping)
	if err != nil {
		return err
	}
	doc := jsonReport{
		NPU: r.NPUSource, Bench: r.BenchSource, Template: r.Forward.Template, ReverseTemplate: r.Reverse.Template,
		Coverage: round(r.Coverage), Counts: r.Counts, Proven: round(r.Forward.Proven), ReverseProven: round(r.Reverse.Proven),
		Mapping: fm, Reverse: rm, Roots: r.Roots, Pairs: r.Pairs, Unmatched: r.Unmatched, UnmatchedWhy: r.UnmatchedWhy,
		Conflicts: r.Forward.Conflicts, ReverseConflicts: r.Reverse.Conflicts, Structural: r.Structural,
		TemplateUnapplied: r.TemplateUnapplied, Sidecar: r.Forward.Sidecar, ReverseSidecar: r.Reverse.Sidecar,
		Unintended: r.Forward.Unintended, ReverseUnintended: r.Reverse.Unintended,
		BandPrecision: BenchmarkCalibration(),
	}
	nonNil(&doc)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

// nonNil makes empty lists render as [] rather than null.
func nonNil(d *jsonReport) {
	if d.Pairs == nil {
		d.Pairs = []Pair{}
	}
	if d.Roots == nil {
		d.Roots = []Pair{}
	}
	if d.Unmatched.NPU == nil {
		d.Unmatched.NPU = []string{}
	}
	if d.Unmatched.Bench == nil {
		d.Unmatched.Bench = []string{}
	}
	if d.Conflicts == nil {
		d.Conflicts = []Conflict{}
	}
	if d.ReverseConflicts == nil {
		d.ReverseConflicts = []Conflict{}
	}
	for _, l := range []*[]string{&d.Structural, &d.TemplateUnapplied} {
		if *l == nil {
			*l = []string{}
		}
	}
	for _, l := range []*[]mapping.ModulePair{&d.Sidecar, &d.ReverseSidecar, &d.Unintended, &d.ReverseUnintended} {
		if *l == nil {
			*l = []mapping.ModulePair{}
		}
	}
}

func writeText(w io.Writer, r *Result) error {
	b := &strings.Builder{}
	fmt.Fprintf(b, "layermap suggest: NPU %s, bench %s\n", r.NPUSource, r.BenchSource)
	tpl := r.Forward.Template
	if tpl == "" {
		tpl = "none"
	}
	rtpl := r.Reverse.Template
	if rtpl == "" {
		rtpl = "none"
	}
	fmt.Fprintf(b, "template: %s (reverse: %s)\n", tpl, rtpl)
	c := r.Counts
	fmt.Fprintf(b, "coverage: %.1f%% of the NPU modules msprobe dumps have a bench partner (%d of %d)\n", 100*r.Coverage, c.NPU.Paired, c.NPU.Modules)
	fmt.Fprintf(b, "proven: msprobe's resolver with the draft pairs %.1f%% of them (reverse draft: %.1f%%)\n", 100*r.Forward.Proven, 100*r.Reverse.Proven)

	for _, p := range r.Roots {
		fmt.Fprintf(b, "roots: %s (%s) <-> %s (%s): paired by msprobe itself, no YAML line\n", displayPath(p.NPU), p.NPUClass, displayPath(p.Bench), p.BenchClass)
	}
	pairs := collapsePairs(r.Pairs)
	fmt.Fprintf(b, "\npairs (%d%s, repeat groups collapsed to %d lines):\n", len(r.Pairs), containersNote(c.Containers, "pairs"), len(pairs))
	for _, p := range pairs {
		flag := ""
		if p.Band != BandSure {
			flag = "  " + strings.ToUpper(p.Band)
		}
		if !p.Proven {
			flag += "  NOT-PROVEN"
		}
		fmt.Fprintf(b, "  %-60s <-> %-45s score %.2f margin %.2f %s%s\n", p.NPU, p.Bench, p.Score, p.Margin, strings.Join(p.Reasons, ","), flag)
		if p.Structural != "" {
			fmt.Fprintf(b, "      %s\n", p.Structural)
		}
		if p.SizesDiffer != "" {
			fmt.Fprintf(b, "      printed sizes differ: %s\n", p.SizesDiffer)
		}
	}
	fmt.Fprintf(b, "\npairs to look at (bands check and unsure):\n")
	low := 0
	for _, p := range pairs {
		if p.Band != BandSure {
			low++
			fmt.Fprintf(b, "  %s <-> %s: %s\n", p.NPU, p.Bench, mapping.BandLabel(p.Band, p.Doubts))
		}
	}
	if n := len(r.Forward.Unintended) + len(r.Reverse.Unintended); n > 0 {
		low++
		fmt.Fprintf(b, "  and %d %s msprobe makes by name though the alignment left them alone (see unintended, band unsure)\n", n, plural(n, "pair", "pairs"))
	}
	if low == 0 {
		b.WriteString("  none\n")
	}
	fmt.Fprintf(b, "\nstructural (fused/split, N:1):\n")
	writeList(b, r.Structural)
	var sizes []string
	for _, p := range pairs {
		if p.SizesDiffer != "" {
			sizes = append(sizes, p.NPU+" <-> "+p.Bench+": "+p.SizesDiffer)
		}
	}
	fmt.Fprintf(b, "\nprinted sizes that differ (one model in two runs prints the same; different configurations or a wrong pair):\n")
	writeList(b, sizes)
	fmt.Fprintf(b, "\nunmatched NPU modules (%s):\n", unmatchedNote(c.NPU, len(r.Unmatched.NPU)))
	writeList(b, withWhy(r.Unmatched.NPU, r.UnmatchedWhy))
	fmt.Fprintf(b, "\nunmatched bench modules (%s):\n", unmatchedNote(c.Bench, len(r.Unmatched.Bench)))
	writeList(b, withWhy(r.Unmatched.Bench, r.UnmatchedWhy))
	writeConflicts(b, "conflicts", r.Forward.Conflicts)
	writeConflicts(b, "reverse conflicts", r.Reverse.Conflicts)
	fmt.Fprintf(b, "\ntemplate lines that did not apply:\n")
	writeList(b, r.TemplateUnapplied)
	fmt.Fprintf(b, "\nsidecar (pairs no YAML line expresses): %d, reverse: %d\n", len(r.Forward.Sidecar), len(r.Reverse.Sidecar))
	for _, p := range r.Forward.Sidecar {
		fmt.Fprintf(b, "  %s\n", p)
	}
	fmt.Fprintf(b, "\nunintended, band unsure (modules without a partner that the draft still pairs):\n")
	var un []string
	for _, l := range unintendedLines(r.Forward.Unintended, r.UnmatchedWhy) {
		un = append(un, l)
	}
	for _, l := range unintendedLines(r.Reverse.Unintended, r.UnmatchedWhy) {
		un = append(un, "reverse draft: "+l)
	}
	writeList(b, un)
	used := r.Forward.Template
	if r.Reverse.Template != used {
		used = fmt.Sprintf("%s (reverse: %s)", cmp.Or(used, "none"), cmp.Or(r.Reverse.Template, "none"))
	}
	writeCalibration(b, BenchmarkCalibration(), used)
	_, err := io.WriteString(w, b.String())
	return err
}

// unintendedLines words the pairs msprobe makes of modules without a
// partner, repeat members collapsed, with why each has none.
func unintendedLines(pairs []mapping.ModulePair, why map[string]string) []string {
	ps := make([]Pair, len(pairs))
	for i, p := range pairs {
		// Structural and Reasons carry why each module has no partner
		// through the collapsing of repeat members.
		ps[i] = Pair{NPU: p.NPU, Bench: p.Bench, Structural: why[p.NPU], Reasons: []string{why[p.Bench]}}
	}
	var out []string
	for _, p := range collapsePairs(ps) {
		l := p.NPU + " -> " + p.Bench
		if p.Structural != "" {
			l += ": " + p.Structural
		}
		if strings.HasPrefix(p.Structural, "placeholder") || strings.HasPrefix(p.Reasons[0], "placeholder") {
			l += "; one side is a placeholder that msprobe pairs by name: those rows will differ with no precision problem behind them"
		}
		out = append(out, l)
	}
	return out
}

// writeCalibration is the report's footer: what each band meant on the
// benchmark, measured on drafts made without templates (template, the
// drafts' own, is said when they used one). A band with too few distinct
// lines gets its counts, not a precision.
func writeCalibration(b *strings.Builder, c Calibration, template string) {
	fmt.Fprintf(b, "\nconfidence bands, as measured on layermap's labelled benchmark (%d model pairs, %d drafts, structure only: templates %s", c.ModelPairs, c.Drafts, c.Templates)
	if template != "" {
		fmt.Fprintf(b, "; this draft used template %s, a prior the figures do not cover", template)
	}
	b.WriteString("):\n")
	for _, o := range c.Bands {
		switch {
		case o.Pairs == 0:
			fmt.Fprintf(b, "  %-6s  no 1:1 pairs (%d N:1 stand-ins)\n", o.Band, o.StandIn)
		case !o.Measured:
			fmt.Fprintf(b, "  %-6s  not measured: %d of %d pairs right, but from %d distinct %s, too few to state a precision (%d N:1 stand-ins aside)\n",
				o.Band, o.Correct, o.Pairs, o.Lines, plural(o.Lines, "line", "lines"), o.StandIn)
		default:
			fmt.Fprintf(b, "  %-6s  %5.1f%% right (%d of %d pairs, %d distinct lines; %d N:1 stand-ins aside)\n", o.Band, 100*o.Precision, o.Correct, o.Pairs, o.Lines, o.StandIn)
		}
	}
}

func writeList(b *strings.Builder, xs []string) {
	if len(xs) == 0 {
		b.WriteString("  none\n")
		return
	}
	for _, x := range xs {
		fmt.Fprintf(b, "  %s\n", x)
	}
}

func writeConflicts(b *strings.Builder, title string, cs []Conflict) {
	fmt.Fprintf(b, "\n%s (%d):\n", title, len(cs))
	if len(cs) == 0 {
		b.WriteString("  none\n")
	}
	for _, c := range cs {
		proven := "proven by the resolver"
		if !c.Proven {
			proven = "NOT proven"
		}
		fmt.Fprintf(b, "  %s: %s\n", c.Class, proven)
		for _, in := range c.Instances {
			fmt.Fprintf(b, "    %s wants {%s}\n", in.Path, strings.Join(in.Wants, ", "))
		}
		fmt.Fprintf(b, "    resolution: %s\n", c.Resolution)
	}
}

// withWhy writes paths with their reasons, list members collapsed level
// by level, innermost first, where the reasons agree:
// "a.layers.{0-7}.mlp.experts.{0-63}  why".
func withWhy(ps []string, why map[string]string) []string {
	type item struct{ path, why string }
	items := make([]item, len(ps))
	for i, p := range ps {
		items[i] = item{p, why[p]}
	}
	for {
		type grp struct {
			key, why string
			ids      []int
		}
		var order []*grp
		groups := map[string]*grp{}
		for _, it := range items {
			k, id := indexKey(it.path)
			if id < 0 {
				order = append(order, &grp{key: it.path, why: it.why})
				continue
			}
			g := groups[k+"\x00"+it.why]
			if g == nil {
				g = &grp{key: k, why: it.why}
				groups[k+"\x00"+it.why] = g
				order = append(order, g)
			}
			g.ids = append(g.ids, id)
		}
		if len(order) == len(items) {
			break
		}
		items = items[:0]
		for _, g := range order {
			p := g.key
			if g.ids != nil {
				p = strings.Replace(g.key, "{}", printparse.IndexRange(g.ids), 1)
			}
			items = append(items, item{p, g.why})
		}
	}
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.path
		if it.why != "" {
			out[i] = fmt.Sprintf("%-70s %s", it.path, it.why)
		}
	}
	return out
}

// indexKey replaces the last numeric segment of p by "{}".
func indexKey(p string) (string, int) {
	segs := strings.Split(p, ".")
	for i := len(segs) - 1; i >= 0; i-- {
		if isNumber(segs[i]) && i > 0 {
			var id int
			fmt.Sscan(segs[i], &id)
			segs[i] = "{}"
			return strings.Join(segs, "."), id
		}
	}
	return p, -1
}

// collapsePairs merges pairs that differ only in one shared list index.
func collapsePairs(ps []Pair) []Pair {
	var out []Pair
	idx := map[string]int{}
	ids := map[string][]int{}
	for _, p := range ps {
		ka, ia := indexKey(p.NPU)
		kb, ib := indexKey(p.Bench)
		if ia < 0 || ia != ib {
			out = append(out, p)
			continue
		}
		// Members whose notes differ keep lines of their own (merger.mlp.2
		// prints other sizes than merger.mlp.0).
		k := ka + "\x00" + kb + "\x00" + p.SizesDiffer + "\x00" + p.Structural
		if j, ok := idx[k]; ok {
			ids[k] = append(ids[k], ia)
			q := &out[j]
			q.Band = worse(q.Band, p.Band)
			for _, d := range p.Doubts {
				if !slices.Contains(q.Doubts, d) {
					q.Doubts = append(slices.Clip(q.Doubts), d)
				}
			}
			q.Proven = q.Proven && p.Proven
			q.Score = min(q.Score, p.Score)
			q.Margin = min(q.Margin, p.Margin)
			continue
		}
		idx[k] = len(out)
		ids[k] = []int{ia}
		out = append(out, p)
	}
	for k, j := range idx {
		if len(ids[k]) > 1 {
			f := strings.Split(k, "\x00")
			ka, kb := f[0], f[1]
			r := printparse.IndexRange(ids[k])
			out[j].NPU = strings.Replace(ka, "{}", r, 1)
			out[j].Bench = strings.Replace(kb, "{}", r, 1)
		}
	}
	return out
}

// containersNote says how many of n things (pairs, modules) are containers
// msprobe never dumps: YAML lines need their pairs, no row compares them.
func containersNote(k int, what string) string {
	if k == 0 {
		return ""
	}
	return fmt.Sprintf(": %d of them %s of containers msprobe never dumps", k, what)
}

// unmatchedNote heads an unmatched list of listed modules with the side's
// counts: the modules msprobe dumps, the N:1 parts among them, and the
// containers it never dumps the list also names.
func unmatchedNote(c SideCounts, listed int) string {
	s := fmt.Sprintf("%d of the %d modules msprobe dumps", c.Unmatched, c.Modules)
	if c.Parts > 0 {
		s += fmt.Sprintf(", %d of them N:1 parts compared through their group", c.Parts)
	}
	if k := listed - c.Unmatched; k > 0 {
		s += fmt.Sprintf("; and %d containers msprobe never dumps", k)
	}
	return s
}
