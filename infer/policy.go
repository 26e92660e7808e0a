package infer

import (
	"fmt"
	"slices"
	"strings"

	"github.com/layermap/layermap/mapping"
	"github.com/layermap/layermap/printparse"
	"github.com/layermap/layermap/templates"
)

// templateChoice is the template prior of each draft, indexed by the side
// whose classes key it (m[npuSide] for the forward draft), and what the
// choice needs to tell the user.
type templateChoice struct {
	m [2]*templates.Match
	// auto is set when the templates were detected, not named.
	auto bool
	// dropped explains detected templates the structures contradict.
	dropped []string
	// warnings explains a named template that does not fit the trees.
	warnings []string
}

// chooseTemplates picks the template for each direction: the best
// detected one (choice "" or TemplateAuto), none (TemplateNone), or the
// named one for the forward draft with its detected counterpart for the
// reverse. A named template that does not fit the trees is used all the
// same and said so in warnings.
func chooseTemplates(npu, bench *printparse.Tree, choice string) (*templateChoice, error) {
	tc := &templateChoice{}
	switch choice {
	case "", TemplateAuto:
		tc.auto = true
		if ms := templates.Detect(npu, bench); len(ms) > 0 {
			tc.m[npuSide] = &ms[0]
		}
		if ms := templates.Detect(bench, npu); len(ms) > 0 {
			tc.m[benchSide] = &ms[0]
		}
		return tc, nil
	case TemplateNone:
		return tc, nil
	}
	t, err := templates.Get(choice)
	if err != nil {
		// err lists the known names already (they were printed twice)
		return nil, fmt.Errorf("%w, or %s (pick by class names) or %s", err, TemplateAuto, TemplateNone)
	}
	applied, unapplied := t.Apply(npu, bench)
	tc.m[npuSide] = &templates.Match{Template: t, Applied: applied, Unapplied: unapplied}
	// The reverse direction uses the named template's counterpart when
	// Detect finds one.
	rev := templates.Detect(bench, npu)
	if len(rev) > 0 {
		tc.m[benchSide] = &rev[0]
	}
	if w := fitWarning(t, npu, bench, rev); w != "" {
		tc.warnings = append(tc.warnings, w)
	}
	return tc, nil
}

// fitWarning explains why a template named by the user does not fit the
// two trees (its lines then shape nothing), "" when it fits; rev is what
// Detect finds with the trees swapped.
func fitWarning(t *templates.Template, npu, bench *printparse.Tree, rev []templates.Match) string {
	has := func(ms []templates.Match) bool {
		return slices.ContainsFunc(ms, func(m templates.Match) bool { return m.Template.Name == t.Name })
	}
	fit := templates.Detect(npu, bench)
	if has(fit) {
		return ""
	}
	msg := fmt.Sprintf("--template %s does not fit these trees (fewer than %.0f%% of its lines apply with %s as NPU)", t.Name, 100*templates.MinScore, npu.Source)
	switch {
	case has(rev):
		msg += "; it fits with NPU and BENCH swapped"
	case len(fit) > 0:
		msg += "; --template auto would use " + fit[0].Template.Name
	}
	return msg
}

// dropContradicted drops a detected template whose lines the structures
// contradict more often than not (some other model's, detected by class
// names) and says so, rather than naming it as the draft's prior. It
// reports whether it dropped one: the trees must then be aligned again.
func (tc *templateChoice) dropContradicted(al *alignment) bool {
	if !tc.auto {
		return false
	}
	dropped := false
	for _, s := range []side{npuSide, benchSide} {
		if tm := tc.m[s]; tm != nil && contradicted(tm, al, s) {
			tc.dropped = append(tc.dropped, notUsed(tm, al, s))
			tc.m[s] = nil
			dropped = true
		}
	}
	return dropped
}

// explain lists, for the report, the templates dropped and the template
// lines that did not apply or that the alignment contradicts.
func (tc *templateChoice) explain(al *alignment) []string {
	out := slices.Clone(tc.dropped)
	for _, s := range []side{npuSide, benchSide} {
		if tm := tc.m[s]; tm != nil {
			out = append(out, unapplied(tm, al, s)...)
			out = append(out, contradictions(tm, al, s)...)
		}
	}
	return out
}

// alignWith aligns the two trees with the priors of the chosen templates.
func alignWith(npu, bench *printparse.Tree, tc *templateChoice) *alignment {
	priors := map[pairKey]bool{}
	for _, s := range []side{npuSide, benchSide} {
		if tm := tc.m[s]; tm != nil {
			addPriors(priors, tm, npu, bench, s)
		}
	}
	return align(indexTree(npu), indexTree(bench), priors)
}

// hitNodes looks up a template hit in the alignment's trees: x on side
// keys (the side whose classes key the template), y on the other.
func hitNodes(al *alignment, h templates.Hit, keys side) (x, y *printparse.Node) {
	return al.tree(keys).tree.Lookup(h.NPU), al.tree(keys.other()).tree.Lookup(h.Bench)
}

// hitHolds reports whether the alignment pairs a template hit's modules.
func hitHolds(al *alignment, h templates.Hit, keys side) bool {
	x, y := hitNodes(al, h, keys)
	m := al.matchOf(x, keys)
	return m != nil && m.node(keys.other()) == y
}

// hitCounts counts a template's hits and those the alignment contradicts
// (the hit's key-side module is paired with another module than the
// hit's); keys is the side whose classes key the template.
func hitCounts(tm *templates.Match, al *alignment, keys side) (bad, total int) {
	for _, a := range tm.Applied {
		for _, h := range a.Hits {
			total++
			if !hitHolds(al, h, keys) {
				bad++
			}
		}
	}
	return bad, total
}

// contradicted reports whether the alignment contradicts more than half of
// a template's hits, its priors notwithstanding.
func contradicted(tm *templates.Match, al *alignment, keys side) bool {
	bad, total := hitCounts(tm, al, keys)
	return total > 0 && 2*bad > total
}

func notUsed(tm *templates.Match, al *alignment, keys side) string {
	bad, total := hitCounts(tm, al, keys)
	dir := ""
	if keys == benchSide {
		dir = " (reverse draft)"
	}
	return fmt.Sprintf("%s%s: not used: its classes occur here, but the structures contradict %d of its %d hits (another model?)",
		tm.Template.Name, dir, bad, total)
}

// addPriors records the module pairs a template keyed by side keys
// implies, as (NPU, bench) pairs.
func addPriors(priors map[pairKey]bool, tm *templates.Match, npu, bench *printparse.Tree, keys side) {
	kt, ot := npu, bench
	if keys == benchSide {
		kt, ot = bench, npu
	}
	for _, a := range tm.Applied {
		for _, h := range a.Hits {
			x, y := kt.Lookup(h.NPU), ot.Lookup(h.Bench)
			if x == nil || y == nil {
				continue
			}
			if keys == benchSide {
				x, y = y, x
			}
			priors[pairKey{x, y}] = true
		}
	}
}

// unapplied explains each template line that never hit: why it does not
// apply, and what the alignment pairs instead where the key exists.
func unapplied(tm *templates.Match, al *alignment, keys side) []string {
	ka := al.tree(keys)
	var out []string
	for _, l := range tm.Unapplied {
		why := "its class does not occur in the " + keys.String() + " tree"
		for _, n := range ka.nodes {
			if !(l.Class == mapping.TopLayer && n.Parent == nil || n.Parent != nil && templates.MatchClass(l.Class, n.Class)) {
				continue
			}
			why = "its key never occurs below " + l.Class
			if strings.Contains(l.Key, templates.IndexPlaceholder) {
				break
			}
			x := n.Lookup(l.Key)
			if x == nil {
				continue
			}
			why = "its target does not exist on the bench side"
			if partner := al.partner(x, keys); partner != nil {
				why += fmt.Sprintf("; %s is paired with %s instead", x.Path, displayPath(partner.Path))
			}
			break
		}
		out = append(out, fmt.Sprintf("%s: %s: %s -> %s (line %d): does not apply: %s", tm.Template.Name, l.Class, l.Key, l.Value, l.Line, why))
	}
	return out
}

// contradictions lists template lines whose hits the alignment rejects.
func contradictions(tm *templates.Match, al *alignment, keys side) []string {
	var out []string
	for _, a := range tm.Applied {
		bad := 0
		var ex string
		for _, h := range a.Hits {
			if hitHolds(al, h, keys) {
				continue
			}
			bad++
			if ex == "" {
				ex = h.NPU + " -> " + h.Bench
			}
		}
		if bad > 0 {
			out = append(out, fmt.Sprintf("%s: %s: %s -> %s (line %d): %d of %d hits contradict the alignment (e.g. %s)",
				tm.Template.Name, a.Line.Class, a.Key, a.Value, a.Line.Line, bad, len(a.Hits), ex))
		}
		// A miss at a module the alignment left without any partner (a
		// layer index the other side does not have) is no fault of the
		// line: no line could pair it.
		var misses []templates.Hit
		for _, h := range a.Misses {
			if x, _ := hitNodes(al, h, keys); al.matchOf(x, keys) != nil {
				misses = append(misses, h)
			}
		}
		if len(misses) > 0 {
			out = append(out, fmt.Sprintf("%s: %s: %s -> %s (line %d): fires at %d place%s without a bench target (e.g. %s -> %s); the draft escapes those places, see conflicts",
				tm.Template.Name, a.Line.Class, a.Key, a.Value, a.Line.Line, len(misses), plural(len(misses), "", "s"), misses[0].NPU, misses[0].Bench))
		}
	}
	return out
}
