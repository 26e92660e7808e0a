package validate

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/agnivade/levenshtein"
	"github.com/layermap/layermap/mapping/resolve"

	"github.com/layermap/layermap/mapping"
	"github.com/layermap/layermap/printparse"
)

// Finding codes (see the package documentation).
const (
	CodeDeadClass        = "LM101"
	CodeDeadKey          = "LM102"
	CodeBadTarget        = "LM103"
	CodeShadowed         = "LM104"
	CodeConflict         = "LM105"
	CodeCoverage         = "LM106"
	CodeSuspicious       = "LM107"
	CodeConflictResolved = "LM108"
	CodePartialKey       = "LM109"
	CodeMissingRule      = "LM110"
	CodeBandCheck        = "LM111"
	CodeBandUnsure       = "LM112"
	CodeNoPartner        = "LM113"
)

// Check names, in report order.
const (
	CheckLoad       = "load"
	CheckDeadRule   = "dead-rule"
	CheckBadTarget  = "bad-target"
	CheckShadowed   = "shadowed-rule"
	CheckConflict   = "conflict"
	CheckCoverage   = "coverage"
	CheckSuspicious = "suspicious-pair"
	CheckMissing    = "missing-rule"
	CheckBand       = "band"
)

var checkOrder = []string{CheckLoad, CheckDeadRule, CheckBadTarget, CheckShadowed, CheckConflict, CheckSuspicious, CheckMissing, CheckBand, CheckCoverage}

// Finding is one problem, with a stable code and the position it concerns
// (in the mapping file, or in the NPU structure file for suspicious pairs
// that no rule produced).
type Finding struct {
	Code     string
	Check    string
	Severity mapping.Severity
	Pos      mapping.Pos
	Msg      string
	Related  []mapping.Pos
}

// String renders "file:line:col: severity CODE: msg".
func (f Finding) String() string {
	return fmt.Sprintf("%s: %s %s: %s", f.Pos, f.Severity, f.Code, f.Msg)
}

// Coverage is the share of NPU modules whose rewritten name exists on the
// bench side.
type Coverage struct {
	Matched, Total int
}

// Ratio is Matched/Total (1 when there is nothing to match).
func (c Coverage) Ratio() float64 {
	if c.Total == 0 {
		return 1
	}
	return float64(c.Matched) / float64(c.Total)
}

// Group is a set of unmatched nodes collapsed by repeat group.
type Group struct {
	Path  string // "decoder.layers.{0-27}.self_attention"
	Class string // class of the first node
	Count int    // nodes in the group
}

// Report is the result of Check.
type Report struct {
	Mapping, NPU, Bench string
	Findings            []Finding
	Coverage            Coverage
	// UnmatchedNPU are NPU modules without a bench partner; UnmatchedBench
	// are bench modules no NPU module resolves to.
	UnmatchedNPU, UnmatchedBench []Group
	// Pairs are the resolved NPU nodes, in printed order.
	Pairs []resolve.NodePair
	// Bands counts the rules by the confidence band their comment starts
	// with (layermap suggest's drafts); all zero for a hand-written file.
	Bands Bands
	// Entries, when both sides are msprobe dump folders, counts the NPU
	// dump.json entries (modules and APIs) msprobe's api mapping pairs; nil
	// otherwise. Set it with EntryCoverage.
	Entries *Coverage
}

// EntryCoverage counts the NPU dump entries (modules and APIs) that
// msprobe's generate_api_mapping_by_layer_mapping pairs for m and the two
// dump folders.
func EntryCoverage(m *mapping.Mapping, npuDir, benchDir string) (Coverage, error) {
	pairs, err := resolve.GenerateAPIMapping(m, npuDir, benchDir)
	if err != nil {
		return Coverage{}, err
	}
	c := Coverage{Total: len(pairs)}
	for _, p := range pairs {
		if p.Bench != resolve.NA {
			c.Matched++
		}
	}
	return c, nil
}

// Counts returns the number of findings per severity.
func (r *Report) Counts() (errors, warnings, infos int) {
	for _, f := range r.Findings {
		switch f.Severity {
		case mapping.Error:
			errors++
		case mapping.Warning:
			warnings++
		default:
			infos++
		}
	}
	return
}

// Failed reports whether the report should fail a CI run: an error
// finding, a warning when strict.
func (r *Report) Failed(strict bool) bool {
	for _, f := range r.Findings {
		if f.Severity == mapping.Error || (strict && f.Severity == mapping.Warning) {
			return true
		}
	}
	return false
}

// Options tune Check.
type Options struct {
	// MinCoverage adds an LM106 error when coverage is below it (0 = off).
	MinCoverage float64
}

// Check validates m (with its load diagnostics) against the NPU and bench
// structures.
func Check(m *mapping.Mapping, diags []mapping.Diagnostic, npu, bench *printparse.Tree, opt Options) *Report {
	c := newChecker(m, npu, bench)
	rep := &Report{Mapping: m.Source, NPU: npu.Source, Bench: bench.Source}
	for _, d := range diags {
		rep.Findings = append(rep.Findings, Finding{Code: d.Code, Check: CheckLoad, Severity: d.Severity, Pos: d.Pos, Msg: d.Msg, Related: d.Related})
	}
	rep.Findings = append(rep.Findings, c.rules()...)
	rep.Findings = append(rep.Findings, c.suspicious()...)
	rep.Findings = append(rep.Findings, c.missing()...)
	var bf []Finding
	rep.Bands, bf = bands(m)
	rep.Findings = append(rep.Findings, bf...)
	rep.Pairs = c.pairs
	rep.Coverage, rep.UnmatchedNPU, rep.UnmatchedBench = c.coverage()
	if opt.MinCoverage > 0 && rep.Coverage.Ratio() < opt.MinCoverage {
		rep.Findings = append(rep.Findings, Finding{Code: CodeCoverage, Check: CheckCoverage, Severity: mapping.Error,
			Pos: mapping.Pos{File: m.Source},
			Msg: fmt.Sprintf("coverage %s is below the required %.1f%%", fmtCoverage(rep.Coverage), 100*opt.MinCoverage)})
	} else if rep.Coverage.Total > 0 && rep.Coverage.Matched == 0 {
		// A mapping that pairs nothing is never what the user meant, gate
		// or no gate: msprobe would compare no module of the run.
		rep.Findings = append(rep.Findings, Finding{Code: CodeCoverage, Check: CheckCoverage, Severity: mapping.Error,
			Pos: mapping.Pos{File: m.Source}, Msg: c.noCoverage(rep.Coverage)})
	}
	sortFindings(rep.Findings)
	return rep
}

func sortFindings(fs []Finding) {
	rank := map[string]int{}
	for i, c := range checkOrder {
		rank[c] = i
	}
	sort.SliceStable(fs, func(i, j int) bool {
		a, b := fs[i], fs[j]
		if rank[a.Check] != rank[b.Check] {
			return rank[a.Check] < rank[b.Check]
		}
		if a.Pos.File != b.Pos.File {
			return a.Pos.File < b.Pos.File
		}
		if a.Pos.Line != b.Pos.Line {
			return a.Pos.Line < b.Pos.Line
		}
		return a.Pos.Col < b.Pos.Col
	})
}

func fmtCoverage(c Coverage) string {
	return fmt.Sprintf("%d/%d (%.1f%%)", c.Matched, c.Total, 100*c.Ratio())
}

// firing is one application of a rule at one NPU node.
type firing struct {
	container, end *resolve.TrieNode
	parentBench    []string // bench path of the container
	bench          []string // bench path after the rule
}

type checker struct {
	m        *mapping.Mapping
	npu      *printparse.Tree
	bench    *printparse.Tree
	r        *resolve.Resolver
	trie     *resolve.Trie
	eff      map[string][]*mapping.Rule
	pairs    []resolve.NodePair
	fired    map[*mapping.Rule][]firing
	benchHas map[string]bool
	byType   map[string][]*resolve.TrieNode
	trieNode map[*printparse.Node]*resolve.TrieNode
	names    map[string]bool
	// dumpTrie is msprobe's own trie of an NPU dump folder (API entries
	// included), built on first use; nil for print trees.
	dumpTrie     *resolve.Trie
	dumpTrieDone bool
}

// apiKey reports whether, on an NPU dump folder, the key exists below an
// instance of class in msprobe's trie of the dump (which holds the API
// entries the module tree leaves out).
func (c *checker) apiKey(class string, keySegs []string) bool {
	if !c.dumpTrieDone {
		c.dumpTrieDone = true
		if c.npu.Kind == printparse.KindMsprobe {
			if t, err := resolve.TrieFromDump(c.npu.Source); err == nil {
				c.dumpTrie = t
			}
		}
	}
	if c.dumpTrie == nil {
		return false
	}
	found := false
	c.dumpTrie.Root.Walk(func(n *resolve.TrieNode) {
		if found || (n.Type != class && !(class == mapping.TopLayer && n == c.dumpTrie.Root)) {
			return
		}
		if descend(n, keySegs) != nil {
			found = true
		}
	})
	return found
}

func newChecker(m *mapping.Mapping, npu, bench *printparse.Tree) *checker {
	c := &checker{m: m, npu: npu, bench: bench, r: resolve.New(m), trie: resolve.TrieFromTree(npu),
		eff: m.Effective(), fired: map[*mapping.Rule][]firing{}, benchHas: map[string]bool{},
		byType: map[string][]*resolve.TrieNode{}, trieNode: map[*printparse.Node]*resolve.TrieNode{}}
	c.trie.Root.Walk(func(n *resolve.TrieNode) {
		c.byType[n.Type] = append(c.byType[n.Type], n)
	})
	seen := map[[2]any]bool{}
	for _, it := range c.trie.Items() {
		scope := it.Scope()
		steps := c.r.Steps(c.trie, scope)
		var prev []string
		var fired []*mapping.Rule
		for _, s := range steps {
			if s.Rule != nil {
				fired = append(fired, s.Rule)
				k := [2]any{s.Rule, s.End}
				if !seen[k] {
					seen[k] = true
					c.fired[s.Rule] = append(c.fired[s.Rule], firing{container: s.Container, end: s.End, parentBench: prev, bench: s.Bench})
				}
			}
			prev = s.Bench
		}
		p := resolve.NodePair{NPU: it.Node, Rules: fired}
		if len(steps) > 0 {
			last := steps[len(steps)-1].Bench
			p.BenchPath = strings.Join(last, ".")
			p.Bench = lookup(bench, last)
		}
		c.pairs = append(c.pairs, p)
		c.trieNode[it.Node] = c.trie.Lookup(scope)
	}
	return c
}

func lookup(t *printparse.Tree, segs []string) *printparse.Node {
	if t == nil || t.Root == nil {
		return nil
	}
	return t.Root.LookupSegs(segs)
}

func (c *checker) exists(segs []string) bool {
	k := strings.Join(segs, ".")
	v, ok := c.benchHas[k]
	if !ok {
		v = lookup(c.bench, segs) != nil
		c.benchHas[k] = v
	}
	return v
}

// instances returns the NPU trie nodes whose rules are those of class.
func (c *checker) instances(class string) []*resolve.TrieNode {
	if class == mapping.TopLayer {
		return []*resolve.TrieNode{c.trie.Root}
	}
	return c.byType[class]
}

func descend(n *resolve.TrieNode, segs []string) *resolve.TrieNode {
	for _, s := range segs {
		if n = n.Child(s); n == nil {
			return nil
		}
	}
	return n
}

func segsOf(n *resolve.TrieNode) []string {
	if p := n.Path(); p != "" {
		return strings.Split(p, ".")
	}
	return nil
}

// rules runs the per-class and per-rule checks in file order.
func (c *checker) rules() []Finding {
	var out []Finding
	done := map[string]bool{}
	for _, cls := range c.m.Classes {
		name := cls.Class
		if cls.NotString {
			continue
		}
		if name == "Cell" {
			name = mapping.TopLayer
		}
		rules, ok := c.eff[name]
		if !ok || done[name] {
			continue
		}
		// only the block msprobe keeps is checked
		if len(rules) > 0 && rules[0].Class != cls {
			continue
		}
		done[name] = true
		insts := c.instances(name)
		if len(insts) == 0 {
			out = append(out, c.deadClass(cls, name))
			continue
		}
		out = append(out, c.classRules(cls, name, rules, insts)...)
	}
	return out
}

// benchHasClass reports whether a bench module has the class name.
func (c *checker) benchHasClass(name string) bool {
	found := false
	if c.bench != nil && c.bench.Root != nil {
		c.bench.Root.Walk(func(n *printparse.Node) bool {
			if n.Class == name {
				found = true
			}
			return !found
		})
	}
	return found
}

func (c *checker) deadClass(cls *mapping.ClassRules, name string) Finding {
	msg := fmt.Sprintf("class %q occurs nowhere on the NPU side (%s): its %d rules never fire", name, c.npu.Source, len(cls.Rules))
	var types []string
	for t, ns := range c.byType {
		if len(ns) > 0 && ns[0].Typed {
			types = append(types, t)
		}
	}
	if c.npu.Root != nil && c.npu.Root.Class == name {
		msg += "; it is the class of the NPU root, which msprobe calls TopLayer: put these rules under TopLayer"
	} else if near := nearest(name, types); near != "" {
		msg += fmt.Sprintf("; did you mean %q?", near)
	} else if c.benchHasClass(name) {
		// the YAML is keyed by the other side's classes
		msg += fmt.Sprintf("; it is a class of the bench side (%s): are --npu and --bench swapped?", c.bench.Source)
	}
	return Finding{Code: CodeDeadClass, Check: CheckDeadRule, Severity: mapping.Error, Pos: cls.Pos, Msg: msg}
}

// nearest returns the candidate closest to s by Levenshtein distance when
// it is close enough to be a likely typo or version drift.
func nearest(s string, cands []string) string {
	sort.Strings(cands)
	best, bestD := "", -1
	for _, c := range cands {
		if c == s {
			continue
		}
		d := levenshtein.ComputeDistance(strings.ToLower(s), strings.ToLower(c))
		if bestD < 0 || d < bestD {
			best, bestD = c, d
		}
	}
	if bestD >= 0 && bestD <= max(2, len(s)/3) {
		return best
	}
	// a unique candidate that contains s ("down" -> "down_proj")
	found := ""
	for _, c := range cands {
		if s != "" && strings.Contains(c, s) {
			if found != "" {
				return ""
			}
			found = c
		}
	}
	return found
}

// classRules checks the rules of one live class.
func (c *checker) classRules(cls *mapping.ClassRules, name string, rules []*mapping.Rule, insts []*resolve.TrieNode) []Finding {
	var out []Finding
	type mixed struct {
		rule      *mapping.Rule
		good, bad []*resolve.TrieNode
		badFire   firing
	}
	var conflicts []mixed
	var resolved []string
	var resolvedPos []mapping.Pos
	for _, rl := range rules {
		keySegs := strings.Split(rl.Key, ".")
		var present, absent []*resolve.TrieNode
		for _, in := range insts {
			if descend(in, keySegs) != nil {
				present = append(present, in)
			} else {
				absent = append(absent, in)
			}
		}
		if len(present) == 0 {
			if c.apiKey(name, keySegs) {
				continue // names API entries of the dump: checked by the entry coverage
			}
			out = append(out, c.deadKey(rl, name, insts))
			continue
		}
		fires := c.fired[rl]
		if len(fires) == 0 {
			out = append(out, c.shadowed(rl, name, present[0]))
			continue
		}
		if len(absent) > 0 {
			out = append(out, Finding{Code: CodePartialKey, Check: CheckConflict, Severity: mapping.Warning, Pos: rl.KeyPos,
				Msg: fmt.Sprintf("%q exists under %s but not under %s, all of class %s", rl.Key,
					collapseTrie(present), collapseTrie(absent), name)})
		}
		var good, bad []*resolve.TrieNode
		var badFire firing
		firedAt := map[*resolve.TrieNode]bool{}
		for _, f := range fires {
			firedAt[f.container] = true
			switch {
			case c.exists(f.bench):
				good = append(good, f.container)
			case c.exists(f.parentBench):
				if len(bad) == 0 {
					badFire = f
				}
				bad = append(bad, f.container)
			}
		}
		good, bad = uniq(good), uniq(bad)
		switch {
		case mapping.IsNoPartner(rl.Comment):
			out = append(out, c.noPartner(rl, good, bad, badFire))
			continue
		case len(bad) > 0 && len(good) == 0:
			out = append(out, c.badTarget(rl, badFire))
		case len(bad) > 0:
			conflicts = append(conflicts, mixed{rule: rl, good: good, bad: bad, badFire: badFire})
		}
		// instances where the key exists but an ancestor's longer key
		// escapes the rule: would the rule have fit there?
		if len(good) > 0 {
			var escaped []*resolve.TrieNode
			var hyp0 []string
			by := ""
			for _, in := range present {
				if firedAt[in] {
					continue
				}
				inBench := c.benchOf(in)
				if inBench == nil || !c.exists(inBench) {
					continue
				}
				hyp := append(append([]string{}, inBench...), strings.Split(rl.Target(), ".")...)
				if c.exists(hyp) {
					continue
				}
				if actual := c.benchOf(descend(in, keySegs)); actual != nil && c.exists(actual) {
					if len(escaped) == 0 {
						hyp0, by = hyp, c.escaper(in, keySegs)
					}
					escaped = append(escaped, in)
				}
			}
			if len(escaped) > 0 {
				more := ""
				if len(escaped) > 1 {
					more = fmt.Sprintf(" and %d like it", len(escaped)-1)
				}
				resolved = append(resolved, fmt.Sprintf("%q would not fit under %s (%s does not exist), escaped there by %s%s",
					rl.Key, collapseTrie(escaped), strings.Join(hyp0, "."), by, more))
				resolvedPos = append(resolvedPos, rl.KeyPos)
			}
		}
	}
	if len(conflicts) > 0 {
		var keys []string
		var good, bad []*resolve.TrieNode
		var related []mapping.Pos
		for _, x := range conflicts {
			keys = append(keys, x.rule.Key)
			good = append(good, x.good...)
			bad = append(bad, x.bad...)
			related = append(related, x.rule.KeyPos)
		}
		good, bad = uniq(good), uniq(bad)
		f0 := conflicts[0].badFire
		msg := fmt.Sprintf("class %s is shared by instances that need different child maps: %s fit%s %s but lead nowhere under %s",
			name, quoteList(keys), plural(len(keys), "s", ""), collapseTrie(good), collapseTrie(bad))
		if kids := c.benchChildren(f0.parentBench); kids != "" {
			msg += fmt.Sprintf(" (bench %s has %s)", strings.Join(f0.parentBench, "."), kids)
		}
		if hint := c.escapeHint(bad[0], conflicts[0].rule); hint != "" {
			msg += "; one YAML entry cannot serve both: " + hint
		}
		out = append(out, Finding{Code: CodeConflict, Check: CheckConflict, Severity: mapping.Error, Pos: cls.Pos, Msg: msg, Related: related})
	}
	if len(resolved) > 0 {
		out = append(out, Finding{Code: CodeConflictResolved, Check: CheckConflict, Severity: mapping.Info, Pos: cls.Pos,
			Msg:     fmt.Sprintf("class %s is shared by instances that need different child maps, resolved by longer keys: %s", name, strings.Join(uniqStrings(resolved), "; ")),
			Related: resolvedPos})
	}
	return out
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func quoteList(keys []string) string {
	q := make([]string, len(keys))
	for i, k := range keys {
		q[i] = fmt.Sprintf("%q", k)
	}
	return strings.Join(q, ", ")
}

func joinPath(segs []string, rest string) string {
	if len(segs) == 0 {
		return rest
	}
	return strings.Join(segs, ".") + "." + rest
}

func uniq(ns []*resolve.TrieNode) []*resolve.TrieNode {
	seen := map[*resolve.TrieNode]bool{}
	var out []*resolve.TrieNode
	for _, n := range ns {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

func uniqStrings(ss []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// benchOf is the bench path the NPU trie node resolves to.
func (c *checker) benchOf(n *resolve.TrieNode) []string {
	if n == nil {
		return nil
	}
	if n == c.trie.Root {
		return []string{}
	}
	b, _ := c.r.ConvertScope(c.trie, segsOf(n))
	return b
}

// escaper names the rule that consumes the segment after in on the path
// in + keySegs.
func (c *checker) escaper(in *resolve.TrieNode, keySegs []string) string {
	scope := append(segsOf(in), keySegs...)
	idx := len(scope) - len(keySegs)
	for _, s := range c.r.Steps(c.trie, scope) {
		if s.Start <= idx && idx < s.Start+s.Level && s.Rule != nil {
			return fmt.Sprintf("the %s key %q (line %d)", s.Rule.Class.Class, s.Rule.Key, s.Rule.KeyPos.Line)
		}
	}
	return "a longer key"
}

// escapeHint suggests a key at the nearest container on the resolution
// path of in whose class is unique on the NPU side: such a key consumes the
// levels below it and so escapes the shared class's rule.
func (c *checker) escapeHint(in *resolve.TrieNode, rl *mapping.Rule) string {
	steps := c.r.Steps(c.trie, segsOf(in))
	for i := len(steps) - 1; i >= 0; i-- {
		a := steps[i].Container
		if a == nil || a == c.trie.Root || !a.Typed || len(c.byType[a.Type]) != 1 {
			continue
		}
		rel := strings.TrimPrefix(in.Path(), a.Path()+".")
		return fmt.Sprintf("give the other instances keys under their unique ancestor class, e.g. %s: %s.%s (one per layer index)", a.Type, rel, rl.Key)
	}
	return ""
}

func (c *checker) benchChildren(segs []string) string {
	n := lookup(c.bench, segs)
	if n == nil || len(n.Children) == 0 {
		return ""
	}
	var names []string
	for _, ch := range n.Children {
		if ch.None {
			continue
		}
		names = append(names, ch.Name)
	}
	if len(names) > 8 {
		names = append(names[:8], "...")
	}
	return strings.Join(names, ", ")
}

func (c *checker) deadKey(rl *mapping.Rule, class string, insts []*resolve.TrieNode) Finding {
	keySegs := strings.Split(rl.Key, ".")
	var cands []string
	seen := map[string]bool{}
	for _, in := range insts {
		collectPaths(in, "", len(keySegs), func(p string) {
			if !seen[p] {
				seen[p] = true
				cands = append(cands, p)
			}
		})
	}
	where := fmt.Sprintf("under any %s", class)
	if class == mapping.TopLayer {
		where = "below the NPU root"
	}
	msg := fmt.Sprintf("child path %q does not exist %s (%d instance%s): the rule never fires", rl.Key, where, len(insts), plural(len(insts), "", "s"))
	sev := mapping.Error
	if strings.Contains(rl.Key, "{i}") {
		// a line of a built-in template ('layermap templates --show'),
		// copied as is: msprobe reads "{i}" literally
		msg += "; \"{i}\" is a template placeholder msprobe reads literally: write one line per layer index (layermap suggest --template NAME does it for these trees)"
	} else if near := nearest(rl.Key, cands); near != "" {
		msg += fmt.Sprintf("; did you mean %q?", near)
	} else {
		if kids := childNames(insts[0]); kids != "" {
			msg += "; children are " + kids
		}
		// Only the last segment is missing: it may name an API called
		// there (msprobe scopes APIs under their module), which a module
		// structure does not show.
		last := keySegs[len(keySegs)-1]
		for _, in := range insts {
			if c.dumpTrie != nil {
				msg += "; it is no API entry of the dump either"
				break // API entries were checked in the dump itself
			}
			if c.segNames()[last] {
				break // a module of that name exists elsewhere: a misplaced module
			}
			if descend(in, keySegs[:len(keySegs)-1]) != nil {
				sev = mapping.Warning
				msg += fmt.Sprintf("; if %q is an API called there, check the mapping against a mix-level dump folder, which has API entries", keySegs[len(keySegs)-1])
				break
			}
		}
	}
	return Finding{Code: CodeDeadKey, Check: CheckDeadRule, Severity: sev, Pos: rl.KeyPos, Msg: msg}
}

// segNames is the set of all NPU module names.
func (c *checker) segNames() map[string]bool {
	if c.names == nil {
		c.names = map[string]bool{}
		c.trie.Root.Walk(func(n *resolve.TrieNode) { c.names[n.Segment] = true })
	}
	return c.names
}

func collectPaths(n *resolve.TrieNode, prefix string, depth int, fn func(string)) {
	if depth == 0 {
		return
	}
	for _, ch := range n.Children {
		p := ch.Segment
		if prefix != "" {
			p = prefix + "." + p
		}
		fn(p)
		collectPaths(ch, p, depth-1, fn)
	}
}

func childNames(n *resolve.TrieNode) string {
	var names []string
	for _, ch := range n.Children {
		names = append(names, ch.Segment)
	}
	if len(names) > 10 {
		names = append(names[:10], "...")
	}
	return strings.Join(names, ", ")
}

func (c *checker) shadowed(rl *mapping.Rule, class string, in *resolve.TrieNode) Finding {
	by := c.escaper(in, strings.Split(rl.Key, "."))
	return Finding{Code: CodeShadowed, Check: CheckShadowed, Severity: mapping.Warning, Pos: rl.KeyPos,
		Msg: fmt.Sprintf("rule %q of %s never fires: at %s %s always wins", rl.Key, class, displayPath(in), by)}
}

func displayPath(n *resolve.TrieNode) string {
	if p := n.Path(); p != "" {
		return p
	}
	return "the root"
}

// noPartner checks a line drafted to pair nothing (mapping.NoPartner):
// info where its target is missing on the bench side, as intended; a
// warning where it exists, since the line then pairs what it says has no
// partner.
func (c *checker) noPartner(rl *mapping.Rule, good, bad []*resolve.TrieNode, f firing) Finding {
	if len(good) > 0 {
		return Finding{Code: CodeNoPartner, Check: CheckBadTarget, Severity: mapping.Warning, Pos: rl.ValuePos,
			Msg: fmt.Sprintf("%s says no partner, but target %q exists on the bench side under %s: the line pairs them", rl, rl.Target(), collapseTrie(good))}
	}
	msg := fmt.Sprintf("%s pairs nothing on purpose: target %q does not exist on the bench side", rl, rl.Target())
	if len(bad) > 0 {
		msg += fmt.Sprintf(", so msprobe leaves %s unmatched", joinPath(segsOf(f.container), rl.Key))
	}
	return Finding{Code: CodeNoPartner, Check: CheckBadTarget, Severity: mapping.Info, Pos: rl.ValuePos, Msg: msg}
}

func (c *checker) badTarget(rl *mapping.Rule, f firing) Finding {
	msg := fmt.Sprintf("target %q does not exist on the bench side: %s -> %s is missing", rl.Target(),
		joinPath(segsOf(f.container), rl.Key), strings.Join(f.bench, "."))
	if n := lookup(c.bench, f.parentBench); n != nil {
		var names []string
		for _, ch := range n.Children {
			names = append(names, ch.Name)
		}
		tail := f.bench[len(f.parentBench):]
		if near := nearest(strings.Join(tail, "."), names); near != "" {
			msg += fmt.Sprintf("; did you mean %q?", near)
		} else if kids := c.benchChildren(f.parentBench); kids != "" {
			where := "bench " + strings.Join(f.parentBench, ".")
			if len(f.parentBench) == 0 {
				where = "the bench root" // was "bench the root has ..."
			}
			msg += fmt.Sprintf("; %s has %s", where, kids)
		}
	}
	return Finding{Code: CodeBadTarget, Check: CheckBadTarget, Severity: mapping.Error, Pos: rl.ValuePos, Msg: msg}
}

// leafKinds are the printparse kinds whose disagreement makes a pair
// suspicious.
var leafKinds = map[string]bool{
	printparse.KindLinear: true, printparse.KindNorm: true, printparse.KindEmbedding: true,
	printparse.KindConv: true, printparse.KindDropout: true, printparse.KindIdentity: true,
	printparse.KindActivation: true,
}

// suspicious reports resolved pairs whose kinds or sizes disagree, one
// finding per repeat group.
func (c *checker) suspicious() []Finding {
	type key struct{ npu, bench, why string }
	groups := map[key][]resolve.NodePair{}
	var order []key
	for _, p := range c.pairs {
		if p.Bench == nil || p.NPU == nil {
			continue
		}
		nk, bk := p.NPU.Kind(), p.Bench.Kind()
		why := ""
		switch {
		case leafKinds[nk] && leafKinds[bk] && nk != bk:
			why = fmt.Sprintf("a %s (%s) onto a %s (%s)", nk, p.NPU.Class, bk, p.Bench.Class)
		default:
			nd, bd := p.NPU.Dims(), p.Bench.Dims()
			if nd != nil && bd != nil && nk == bk && !slices.Equal(nd, bd) {
				why = fmt.Sprintf("%s sizes %v onto %v", nk, nd, bd)
			}
		}
		if why == "" {
			continue
		}
		k := key{groupPath(p.NPU), groupPath(p.Bench), why}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], p)
	}
	var out []Finding
	for _, k := range order {
		ps := groups[k]
		var npuNodes, benchNodes []*printparse.Node
		for _, p := range ps {
			npuNodes = append(npuNodes, p.NPU)
			benchNodes = append(benchNodes, p.Bench)
		}
		p := ps[0]
		pos := mapping.Pos{File: c.npu.Source, Line: p.NPU.Line}
		if len(p.Rules) > 0 {
			pos = p.Rules[len(p.Rules)-1].KeyPos
		}
		out = append(out, Finding{Code: CodeSuspicious, Check: CheckSuspicious, Severity: mapping.Warning, Pos: pos,
			Msg: fmt.Sprintf("%s -> %s pairs %s", collapse(npuNodes)[0].Path, collapse(benchNodes)[0].Path, k.why)})
	}
	return out
}

func (c *checker) coverage() (Coverage, []Group, []Group) {
	var cov Coverage
	var unNPU []*printparse.Node
	hit := map[*printparse.Node]bool{}
	for _, p := range c.pairs {
		if p.NPU == nil || !resolve.HasDumpEntry(c.npu, p.NPU) {
			continue
		}
		cov.Total++
		if p.Bench != nil {
			cov.Matched++
			hit[p.Bench] = true
		} else {
			unNPU = append(unNPU, p.NPU)
		}
	}
	var unBench []*printparse.Node
	if c.bench != nil && c.bench.Root != nil {
		c.bench.Root.Walk(func(n *printparse.Node) bool {
			if n.None {
				return false
			}
			if resolve.HasDumpEntry(c.bench, n) && !hit[n] {
				unBench = append(unBench, n)
			}
			return true
		})
	}
	return cov, collapse(unNPU), collapse(unBench)
}

// noCoverage explains a mapping under which no NPU module finds its bench
// partner, naming the outermost modules of both sides: a missing or wrong
// TopLayer rule is the usual cause.
func (c *checker) noCoverage(cov Coverage) string {
	msg := fmt.Sprintf("coverage %s: no NPU module's rewritten name exists on the bench side, so msprobe would pair no module", fmtCoverage(cov))
	var npuTop, benchTop string
	for _, p := range c.pairs {
		if p.NPU != nil && resolve.HasDumpEntry(c.npu, p.NPU) {
			npuTop = p.NPU.Path
			break
		}
	}
	if c.bench != nil && c.bench.Root != nil {
		c.bench.Root.Walk(func(n *printparse.Node) bool {
			if benchTop == "" && !n.None && resolve.HasDumpEntry(c.bench, n) {
				benchTop = n.Path
			}
			return benchTop == ""
		})
	}
	if npuTop != "" && benchTop != "" {
		msg += fmt.Sprintf(" (the outermost NPU module is %s, the bench one %s: is the TopLayer rule missing or wrong?)", npuTop, benchTop)
	}
	return msg
}

// missing hints at rules to add: an NPU module without a partner whose
// parent has one, where the parent's partner has children of the same kind
// that no NPU module claims.
func (c *checker) missing() []Finding {
	hit := map[*printparse.Node]bool{}
	byNode := map[*printparse.Node]*resolve.NodePair{}
	for i := range c.pairs {
		p := &c.pairs[i]
		byNode[p.NPU] = p
		if p.Bench != nil {
			hit[p.Bench] = true
		}
	}
	type group struct {
		nodes []*printparse.Node
		cands []string
		class string
	}
	var order []string
	groups := map[string]*group{}
	for _, p := range c.pairs {
		n := p.NPU
		if p.Bench != nil || !resolve.HasDumpEntry(c.npu, n) || n.Parent == nil {
			continue
		}
		pp := byNode[n.Parent]
		if pp == nil || pp.Bench == nil {
			continue
		}
		if c.hasRuleFor(c.trieNode[n.Parent].Type, n.Name) {
			continue // a rule exists and does not fit: reported as bad target or conflict
		}
		kind := n.Kind()
		var cands []string
		for _, ch := range pp.Bench.Children {
			if hit[ch] || !resolve.HasDumpEntry(c.bench, ch) || ch.Kind() != kind {
				continue
			}
			cands = append(cands, ch.Name)
		}
		if len(cands) == 0 {
			continue
		}
		k := groupPath(n) + " " + strings.Join(cands, ",")
		g := groups[k]
		if g == nil {
			g = &group{cands: cands, class: c.trieNode[n.Parent].Type}
			groups[k] = g
			order = append(order, k)
		}
		g.nodes = append(g.nodes, n)
	}
	var out []Finding
	for _, k := range order {
		g := groups[k]
		n := g.nodes[0]
		pos := mapping.Pos{File: c.npu.Source, Line: n.Line}
		if rs := c.eff[g.class]; len(rs) > 0 {
			pos = rs[0].Class.Pos // the block msprobe keeps
		} else if cls := c.m.Lookup(g.class); cls != nil {
			pos = cls.Pos
		}
		var parents []*printparse.Node
		for _, x := range g.nodes {
			parents = append(parents, byNode[x.Parent].Bench)
		}
		msg := fmt.Sprintf("%s (%s) has no bench partner, and %s, the partner of its parent, has unclaimed %s of the same kind: a rule for %q under %s may be missing",
			collapse(g.nodes)[0].Path, n.Class, collapse(parents)[0].Path, strings.Join(g.cands, ", "), n.Name, g.class)
		if split := fusedQKV(n.Name, g.cands); split != "" {
			// what suggest reports as N:1: a rule would pair it with one
			// third of itself
			msg = fmt.Sprintf("%s (%s) has no bench partner: it fuses %s of %s (N:1), so no rule can pair it; a rule mapping it onto one of them would compare a third of its output",
				collapse(g.nodes)[0].Path, n.Class, split, collapse(parents)[0].Path)
		}
		out = append(out, Finding{Code: CodeMissingRule, Check: CheckMissing, Severity: mapping.Info, Pos: pos, Msg: msg})
	}
	return out
}

// fusedQKV returns the separate query, key and value projections among
// cands ("q_proj, k_proj and v_proj") when name is a fused one
// (linear_qkv, qkv, query_key_value), "" otherwise.
func fusedQKV(name string, cands []string) string {
	n := strings.ToLower(name)
	if !strings.Contains(n, "qkv") && !(strings.Contains(n, "query") && strings.Contains(n, "key") && strings.Contains(n, "value")) {
		return ""
	}
	var q, k, v string
	for _, c := range cands {
		switch {
		case strings.HasPrefix(c, "q_") || c == "q" || c == "query":
			q = c
		case strings.HasPrefix(c, "k_") || c == "k" || c == "key":
			k = c
		case strings.HasPrefix(c, "v_") || c == "v" || c == "value":
			v = c
		}
	}
	if q == "" || k == "" || v == "" {
		return ""
	}
	return q + ", " + k + " and " + v
}

// hasRuleFor reports whether class has an effective rule whose key starts
// with the child segment.
func (c *checker) hasRuleFor(class, child string) bool {
	for _, r := range c.eff[class] {
		if r.Key == child || strings.HasPrefix(r.Key, child+".") {
			return true
		}
	}
	return false
}
