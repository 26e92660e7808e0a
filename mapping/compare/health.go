package compare

import (
	"fmt"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/layermap/layermap/mapping"
	"github.com/layermap/layermap/mapping/resolve"
	"github.com/layermap/layermap/mapping/validate"
	"github.com/layermap/layermap/printparse"
	"github.com/layermap/layermap/printparse/msprobe"
)

// Mapping health: before comparing, the layer mapping is checked against
// the two dumps with validate's checks (dead classes and keys, bad
// targets, shadowed rules, conflicts, missing rules), the pairs file's
// entries against the modules the dumps hold, and the rows each rule
// sends to a bench name no entry has are counted. A run with several
// rank pairs reports a finding only when every rank pair has it (with
// pipeline parallelism a rank holds some layers only).

// Finding is one mapping-health problem, positioned in the mapping or
// pairs file.
type Finding struct {
	Pos      string `json:"pos"`
	Severity string `json:"severity"` // error, warning, info
	Code     string `json:"code"`     // validate's LM code, or "pairs"
	Msg      string `json:"msg"`
}

func (f Finding) String() string {
	return fmt.Sprintf("%s: %s %s: %s", f.Pos, f.Severity, f.Code, f.Msg)
}

// Nowhere counts the NPU rows a layer_mapping rule renamed to a bench
// name no bench entry has: the rule fired, the row found no partner. A
// rule is blamed only for the module it names (its key ends the entry's
// module path; an API's: the module it was called in); the rows of a
// module below a renamed one that no rule names (q_proj below
// self_attn -> self_attention, an N:1 part) count under Rule "" instead.
// Rows of N:1 group calls are the fusion's (see Summary.Fused), and Rows
// and Entries count the rows left unmatched and their entries.
type Nowhere struct {
	Pos     string `json:"pos"`
	Rule    string `json:"rule"`
	Entries int    `json:"entries"`
	Rows    int    `json:"rows"`
}

// rankHealth checks a rank pair's inputs: validate's findings, the
// rules that send entries nowhere (entry -> index in nowhere), the pairs
// that name a module this rank pair lacks.
type rankHealth struct {
	findings []Finding
	nowhere  []Nowhere
	entries  *sentNowhere // a mapped compare may send most entries nowhere
}

// checkMapping derives a rank pair's data mapping from m (msprobe's
// generate_data_mapping_by_layer_mapping) and, on the way, its health:
// validate's checks against the two dump folders and the entries a rule
// sends nowhere: one reading of each dump serves both (a second one
// reads the rows where a skim was not enough). read is called once the
// dumps are read, with their entries and their entry names as a skim
// gives them (nil where they could differ), for the N:1 plan. Without
// rows, the rows are left to the table's passes where they can be (see
// resolve.ReadSides).
func checkMapping(m *mapping.Mapping, np, bp msprobe.Paths, rows bool, read func(npu, bench *resolve.Entries, names [2]*msprobe.Names)) (*resolve.DataMap, *rankHealth, error) {
	sides, err := resolve.ReadSides(np.Dir, bp.Dir, rows)
	if err != nil {
		return nil, nil, err
	}
	if sides.RowsRead() {
		// What a reading of the rows left (their parses' garbage, pages
		// the heap grew to) goes back to the system before the mappings
		// are made, rather than adding to their peak. A skim's garbage
		// is small: collected as usual.
		debug.FreeOSMemory()
	}
	npu, bench := sides.Entries()
	var names [2]*msprobe.Names
	names[0], names[1] = sides.EntryNames()
	read(npu, bench, names)
	// validate's checks read the module trees and m only: they run beside
	// the api and data mappings.
	var findings []Finding
	checked := make(chan struct{})
	go func() {
		defer close(checked)
		findings = treeFindings(m, sides)
	}()
	h := &rankHealth{entries: &sentNowhere{}}
	byRule := map[*mapping.Rule]int32{}
	dm, err := sides.DataMapping(m, func(pos int, it *resolve.Item, fired []*mapping.Rule) {
		var rule *mapping.Rule
		for _, f := range fired {
			if f.Class != nil && f.Class.Class != mapping.TopLayer {
				rule = f // the last one: the most specific
			}
		}
		if rule == nil {
			return
		}
		if !namesModule(rule, it) {
			rule = nil // a module below the renamed one: no rule names it
		}
		i, ok := byRule[rule]
		if !ok {
			i = int32(len(h.nowhere))
			byRule[rule] = i
			n := Nowhere{}
			if rule != nil {
				n = Nowhere{Pos: rule.KeyPos.String(), Rule: rule.String()}
			}
			h.nowhere = append(h.nowhere, n)
		}
		h.entries.add(pos, it.Name, i)
	})
	h.entries.done()
	<-checked
	if err != nil {
		return nil, nil, err
	}
	h.findings = findings
	return dm, h, nil
}

// treeFindings are validate's findings of m against the module trees of
// both dumps; none when a dump has no module tree (a dump of APIs only,
// level L1, has nothing for a layer mapping to check).
func treeFindings(m *mapping.Mapping, sides *resolve.Sides) []Finding {
	nt, bt, err1, err2 := sides.Trees()
	if err1 != nil || err2 != nil {
		return nil
	}
	var out []Finding
	rep := validate.Check(m, nil, nt, bt, validate.Options{})
	for _, f := range rep.Findings {
		fd := Finding{Pos: f.Pos.String(), Severity: f.Severity.String(), Code: f.Code, Msg: f.Msg}
		if r := ruleAt(m, f); r != nil && notDumpedRule(r, f, nt, bt) {
			fd.Severity, fd.Msg = "info", "layer not dumped: "+f.Msg+" (the dump holds fewer layers than the mapping names: a scope-limited dump or a smaller model; the rule fires on a dump that holds the layer)"
		}
		out = append(out, fd)
	}
	return out
}

// namesModule tells whether rule's key names the module of an entry: a
// module entry's own path, an API entry's enclosing module, ends with the
// key.
func namesModule(rule *mapping.Rule, it *resolve.Item) bool {
	scope := it.FullScope
	if _, rest, ok := strings.Cut(scope, "."); ok {
		scope = rest // without Module/Cell/TopLayer
	} else {
		scope = ""
	}
	if !strings.HasPrefix(it.Name, "Module.") && !strings.HasPrefix(it.Name, "Cell.") {
		// an API: the module it was called in
		if i := strings.LastIndexByte(scope, '.'); i >= 0 {
			scope = scope[:i]
		} else {
			scope = ""
		}
	}
	return scope == rule.Key || strings.HasSuffix(scope, "."+rule.Key)
}

// ruleAt is the rule a key (LM102) or target (LM103) finding points at.
func ruleAt(m *mapping.Mapping, f validate.Finding) *mapping.Rule {
	if f.Code != "LM102" && f.Code != "LM103" {
		return nil
	}
	for _, c := range m.Classes {
		for _, r := range c.Rules {
			if f.Code == "LM102" && r.KeyPos == f.Pos || f.Code == "LM103" && r.ValuePos == f.Pos {
				return r
			}
		}
	}
	return nil
}

// notDumpedRule tells whether a key or target the dumps lack names a
// layer index the dump does not hold: the same path with another index
// exists (under an instance of the rule's class for a key, anywhere on
// the bench side for a target).
func notDumpedRule(r *mapping.Rule, f validate.Finding, nt, bt *printparse.Tree) bool {
	if f.Code == "LM103" {
		return layerNotDumped(r.Target(), func(p string) bool {
			found := false
			bt.Walk(func(n *printparse.Node) bool {
				found = found || n.Lookup(p) != nil
				return !found
			})
			return found
		})
	}
	found := false
	nt.Walk(func(n *printparse.Node) bool {
		if n.Class == r.Class.Class || r.Class.Class == mapping.TopLayer && n == nt.Root {
			found = found || layerNotDumped(r.Key, func(p string) bool { return n.Lookup(p) != nil })
		}
		return !found
	})
	return found
}

// maxLayerTry bounds the indices layerNotDumped tries in place of one.
const maxLayerTry = 256

// layerNotDumped tells whether path, which has does not know, names a
// layer index a dump does not hold: replacing one of its numeric
// segments by another index gives a path has knows.
func layerNotDumped(path string, has func(string) bool) bool {
	segs := strings.Split(path, ".")
	for i, seg := range segs {
		n, err := strconv.Atoi(seg)
		if err != nil || n < 0 {
			continue
		}
		for j := 0; j < maxLayerTry; j++ {
			if j == n {
				continue
			}
			segs[i] = strconv.Itoa(j)
			ok := has(strings.Join(segs, "."))
			segs[i] = seg
			if ok {
				return true
			}
		}
	}
	return false
}

// health merges the rank pairs' checks: findings every rank pair has.
func mergeFindings(all [][]Finding) []Finding {
	if len(all) == 0 {
		return nil
	}
	count := map[string]int{}
	for _, fs := range all {
		seen := map[string]bool{}
		for _, f := range fs {
			if k := f.String(); !seen[k] {
				seen[k] = true
				count[k]++
			}
		}
	}
	var out []Finding
	for _, f := range all[0] {
		if count[f.String()] == len(all) {
			out = append(out, f)
			count[f.String()] = 0
		}
	}
	return out
}

// pairFindings lists the pairs that name a module no rank pair's dump
// has (lacking[i] is the count of rank pairs lacking pair i, notDumped[i]
// of those where only layer indices the dump does not hold are missing:
// info, not a warning).
func pairFindings(pairs []mapping.ModulePair, pos []mapping.Pos, lacking, notDumped []int, ranks int) []Finding {
	var out []Finding
	for i, p := range pairs {
		if ranks == 0 || lacking[i] < ranks {
			continue
		}
		if notDumped[i] == lacking[i] {
			out = append(out, Finding{Pos: pos[i].String(), Severity: "info", Code: "pairs",
				Msg: fmt.Sprintf("layer not dumped: pair %s names a layer the dumps do not hold (a scope-limited dump or a smaller model): it pairs nothing here", p)})
			continue
		}
		out = append(out, Finding{Pos: pos[i].String(), Severity: "warning", Code: "pairs",
			Msg: fmt.Sprintf("pair %s names a module without an entry in the dumps: it pairs nothing", p)})
	}
	return out
}

// pairState is what a rank pair's dumps know of a pairs-file entry.
type pairState uint8

const (
	pairKnownState pairState = iota // both sides' modules have entries
	pairLacking                     // a module has none
	pairNotDumped                   // only modules of layers the dumps do not hold have none
)

// lackingState tells a pair some module of which has no entry: not
// dumped when every such module names a layer index the dump does not
// hold (another index of it has entries), lacking otherwise.
func lackingState(p mapping.ModulePair, npuHas, benchHas func(path string) bool) pairState {
	check := func(ms []string, has func(string) bool) bool {
		for _, m := range ms {
			if !has(m) && !layerNotDumped(m, has) {
				return false
			}
		}
		return true
	}
	if check(p.NPUModules(), npuHas) && check(p.BenchModules(), benchHas) {
		return pairNotDumped
	}
	return pairLacking
}

// pairKnown reports whether every module of a pair has calls in the dumps.
func pairKnown(p mapping.ModulePair, npuHas, benchHas func(path string) bool) bool {
	for _, m := range p.NPUModules() {
		if !npuHas(m) {
			return false
		}
	}
	for _, m := range p.BenchModules() {
		if !benchHas(m) {
			return false
		}
	}
	return true
}

// mergeHealth puts the findings every rank pair has into the report,
// then the pairs no rank pair's dumps know.
func (rep *Report) mergeHealth(in inputs) {
	var all [][]Finding
	lacking, notDumped := make([]int, len(in.pairs)), make([]int, len(in.pairs))
	ranks := 0
	for _, r := range rep.Ranks {
		all = append(all, r.health)
		if r.lacking != nil {
			ranks++
			for i, l := range r.lacking {
				if l != pairKnownState {
					lacking[i]++
				}
				if l == pairNotDumped {
					notDumped[i]++
				}
			}
		}
	}
	rep.Health = append(mergeFindings(all), pairFindings(in.pairs, in.pairsPos, lacking, notDumped, ranks)...)
	if rep.Health == nil {
		rep.Health = []Finding{}
	}
}

// healthFailed reports whether a finding is an error or a warning.
func (rep *Report) healthFailed() bool {
	for _, f := range rep.Health {
		if f.Severity == "error" || f.Severity == "warning" {
			return true
		}
	}
	return false
}
