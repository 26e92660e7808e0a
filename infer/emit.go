package infer

import (
	"fmt"
	"iter"
	"slices"
	"sort"
	"strings"

	"github.com/layermap/layermap/mapping"
	"github.com/layermap/layermap/mapping/resolve"
	"github.com/layermap/layermap/printparse"
	"github.com/layermap/layermap/templates"
)

// dpair is one aligned pair seen from one direction: a keys the YAML.
type dpair struct {
	a, b *printparse.Node
	m    *match
}

// view is the alignment seen from one direction.
type view struct {
	ka, kb *treeIndex // ka: the side whose classes key the YAML
	keys   side       // the side ka is
	al     *alignment
	pairs  []*dpair
	byA    map[*printparse.Node]*dpair
	byB    map[*printparse.Node]*dpair
}

// newView sees the alignment from the draft keyed by side keys.
func newView(al *alignment, keys side) *view {
	v := &view{ka: al.tree(keys), kb: al.tree(keys.other()), keys: keys, al: al, byA: map[*printparse.Node]*dpair{}, byB: map[*printparse.Node]*dpair{}}
	for _, m := range al.pairs {
		p := &dpair{a: m.node(keys), b: m.node(keys.other()), m: m}
		v.pairs = append(v.pairs, p)
		if !m.rootish || p.a.Parent == nil && p.b.Parent == nil {
			v.byA[p.a] = p
			v.byB[p.b] = p
		}
	}
	slices.SortStableFunc(v.pairs, func(x, y *dpair) int { return v.ka.order[x.a] - v.ka.order[y.a] })
	return v
}

// entry is one wanted rename: at anchor (an aligned key-side module), the
// child path key must become value below the anchor's partner.
type entry struct {
	anchor     *printparse.Node
	key, value string
	target     *printparse.Node // the key-side module renamed
	pair       *dpair
	kind       string // "pair", "escape", "template"
	comment    string
	// implicit marks what an instance needs for a key another instance
	// renames (a multi-level key reaching into it): never a line of its
	// own, only a reason to escape.
	implicit bool
	// force writes an identity line (see emit).
	force bool
}

func (e *entry) identity() bool { return e.key == e.value }

// classOf is the class msprobe consults at n (TopLayer at the root).
func classOf(n *printparse.Node) string {
	if n.Parent == nil {
		return mapping.TopLayer
	}
	return n.Class
}

func generic(n *printparse.Node) bool {
	return n.Parent != nil && (genericClasses[n.Class] || n.Class == "")
}

// partnerOf is n's partner; the other root for the root.
func (v *view) partnerOf(n *printparse.Node) *printparse.Node {
	if n.Parent == nil {
		return v.kb.tree.Root
	}
	if p := v.byA[n]; p != nil {
		return p.b
	}
	return nil
}

// anchorOf is the nearest aligned proper ancestor of p.a whose partner is
// a proper ancestor of p.b. When that is a generic container and the pair
// is not an identity below it, the rule moves up to the nearest such
// ancestor that is not generic: a rule keyed by ModuleList or Sequential
// would fire at every list in the model.
func (v *view) anchorOf(p *dpair) *printparse.Node {
	first := true
	for q, qb := range anchors(p.a, p.b, v.alignedPartner) {
		if first && generic(q) && rel(p.a, q) == rel(p.b, qb) {
			return q
		}
		first = false
		if !generic(q) {
			return q
		}
	}
	return nil
}

// alignedPartner is n's aligned partner, or nil.
func (v *view) alignedPartner(n *printparse.Node) *printparse.Node {
	if p := v.byA[n]; p != nil {
		return p.b
	}
	return nil
}

// anchors yields, nearest first, the proper ancestors q of a whose partner
// is a proper ancestor of b, with that partner: the places where a line
// "class of q: rel(a, q): rel(b, partner)" can send a to b.
func anchors(a, b *printparse.Node, partner func(*printparse.Node) *printparse.Node) iter.Seq2[*printparse.Node, *printparse.Node] {
	return func(yield func(*printparse.Node, *printparse.Node) bool) {
		for q := a.Parent; q != nil; q = q.Parent {
			if qb := partner(q); qb != nil && isAncestor(qb, b) && !yield(q, qb) {
				return
			}
		}
	}
}

// Conflict is a class whose instances need different child renames.
type Conflict struct {
	// Class is the key-side class.
	Class string `json:"class"`
	// Instances are the places the class occurs, with what each needs.
	Instances []ConflictInstance `json:"instances"`
	// Resolution says how the draft resolves it, in words.
	Resolution string `json:"resolution"`
	// Proven reports that msprobe's resolver, run over both trees with the
	// draft, sends every aligned module of the losing instances to its
	// partner.
	Proven bool `json:"proven"`
	// Lines is the number of YAML lines the resolution added.
	Lines int `json:"lines"`
	// Keeps is the group of instances the class rule serves.
	Keeps []string `json:"keeps"`
	// Escapes are the instances served by longer keys at an ancestor.
	Escapes []string `json:"escapes"`
	// Unresolved are instances no YAML line can serve (see the sidecar).
	Unresolved []string `json:"unresolved,omitempty"`

	targets []*printparse.Node // the modules whose pairing the resolution decides
	// alone are the modules without a partner the resolution keeps the
	// class rule from pairing.
	alone []*printparse.Node
}

// ConflictInstance is one place a conflicting class occurs.
type ConflictInstance struct {
	// Path is the key-side module path (a repeat group is written once,
	// "decoder.layers.{0-7}").
	Path string `json:"path"`
	// Wants lists the renames it needs, "key: value" (identity included
	// where another instance renames the same child).
	Wants []string `json:"wants"`
}

// draft is one direction's emitted mapping and what was learned on the way.
type draft struct {
	m          *mapping.Mapping
	entries    []*entry
	conflicts  []Conflict
	sidecar    []mapping.ModulePair
	failures   []string // aligned pairs the resolver does not reproduce
	unintended []mapping.ModulePair
	proven     map[*printparse.Node]bool // aligned key-side nodes the resolver sends right
}

// emit drafts one direction's mapping from the view. tmpl, when not nil,
// gives template lines whose form is kept where they express an aligned
// pair.
func emit(v *view, tmpl *templates.Match, header string) *draft {
	d := &draft{proven: map[*printparse.Node]bool{}}
	var entries []*entry
	for _, p := range v.pairs {
		if p.m.rootish {
			continue
		}
		anc := v.anchorOf(p)
		if anc == nil {
			continue
		}
		ap := v.byA[anc]
		e := &entry{anchor: anc, key: rel(p.a, anc), value: rel(p.b, ap.b), target: p.a, pair: p, kind: "pair"}
		e.comment = pairComment(p.m, v.keys)
		entries = append(entries, e)
	}
	entries, d.conflicts = resolveConflicts(v, entries)
	if tmpl != nil {
		entries = applyTemplateForm(v, tmpl, entries)
	}
	d.entries = entries
	d.m = build(v, entries, header)
	d.prove(v)
	// A pair that needs no rename can still be carried off by a rule of
	// the same class whose key is a prefix of its path (mlp: mlp.experts
	// takes mlp.router along): write its identity line, longer keys win.
	for round := 0; round < 3 && len(d.failures) > 0; round++ {
		byTarget := map[*printparse.Node]*entry{}
		for _, e := range entries {
			byTarget[e.target] = e
		}
		changed := false
		for _, p := range d.failures {
			if e := byTarget[v.ka.tree.Lookup(p)]; e != nil && e.identity() && !e.force {
				e.force = true
				e.comment = withNote(e.comment, "identity written out: a shorter key of this class would rename it; ")
				changed = true
			}
		}
		if !changed {
			break
		}
		d.m = build(v, entries, header)
		d.prove(v)
	}
	d.addGroups(v)
	for i := range d.conflicts {
		c := &d.conflicts[i]
		c.Proven = len(c.Unresolved) == 0
		unintended := map[string]bool{}
		for _, u := range d.unintended {
			unintended[u.NPU] = true
		}
		for _, n := range c.alone {
			if unintended[n.Path] {
				c.Proven = false
			}
		}
		for _, n := range c.targets {
			if !d.proven[n] {
				c.Proven = false
			}
		}
	}
	return d
}

// addGroups puts the alignment's N:1 groups into the sidecar (no
// layer_mapping line expresses one), each in place of the 1:1 pair that
// stands in for it.
func (d *draft) addGroups(v *view) {
	gs := v.al.groups()
	if len(gs) == 0 {
		return
	}
	covered := map[string]bool{}
	var groups []mapping.ModulePair
	for _, g := range gs {
		p := g.modulePair(v.keys)
		for _, n := range p.NPUModules() {
			covered[n] = true
		}
		groups = append(groups, p)
	}
	keep := d.sidecar[:0]
	for _, p := range d.sidecar {
		if !covered[p.NPU] {
			keep = append(keep, p)
		}
	}
	d.sidecar = append(keep, groups...)
}

// withNote inserts note into a line's comment after its band, which
// always comes first.
func withNote(comment, note string) string {
	band, rest, _ := strings.Cut(comment, ": ")
	return band + ": " + note + rest
}

// result is the draft as Result shows it; tm is its template prior.
func (d *draft) result(tm *templates.Match) Draft {
	out := Draft{Mapping: d.m, Conflicts: d.conflicts, Sidecar: d.sidecar, Unintended: d.unintended}
	if tm != nil {
		out.Template = tm.Template.Name
	}
	return out
}

// pairComment is the YAML comment of a pair's line in the draft keyed by
// side keys.
func pairComment(m *match, keys side) string {
	// the same rounded figures as the report's pairs (Pair.Score), so a
	// 0.8949 reads 0.90 in both, not 0.89 here and 0.90 there
	s := fmt.Sprintf("score %.2f margin %.2f: %s", round(m.score), round(m.margin), strings.Join(m.reasons, ","))
	s = mapping.BandLabel(m.band, m.doubts) + ": " + s
	if n := m.structural[keys]; n != "" {
		s += "; " + n
	}
	if d := sizesDiffer(m, keys); d != "" {
		s += "; printed sizes differ: " + d
	}
	return s
}

// applyTemplateForm rewrites entries into the form of template lines that
// express the same pair: the template's anchor and key instead of ours.
func applyTemplateForm(v *view, tm *templates.Match, entries []*entry) []*entry {
	byTarget := map[*printparse.Node]*entry{}
	for _, e := range entries {
		byTarget[e.target] = e
	}
	for _, al := range tm.Applied {
		for _, h := range al.Hits {
			x := v.ka.tree.Lookup(h.NPU)
			if x == nil {
				continue
			}
			e := byTarget[x]
			if e == nil || e.pair == nil || e.pair.b.Path != h.Bench {
				continue
			}
			instPath := strings.TrimSuffix(strings.TrimSuffix(h.NPU, al.Key), ".")
			inst := v.ka.tree.Lookup(instPath)
			if inst == nil || (inst.Parent != nil && v.byA[inst] == nil) {
				continue
			}
			ib := v.kb.tree.Root
			if inst.Parent != nil {
				ib = v.byA[inst].b
			}
			if rel(e.pair.b, ib) != al.Value || !isAncestor(inst, x) {
				continue
			}
			if e.kind == "escape" {
				// An escape keeps its form (the class rule serves other
				// instances); say when the template agrees.
				if note := "template " + tm.Template.Name + "; "; e.anchor == inst && e.key == al.Key && !strings.Contains(e.comment, note) {
					e.comment = withNote(e.comment, note)
				}
				continue
			}
			e.anchor, e.key, e.value = inst, al.Key, al.Value
			if e.kind != "escape" {
				e.kind = "template"
			}
			e.comment = withNote(e.comment, "template "+tm.Template.Name+"; ")
		}
	}
	return entries
}

// resolveConflicts finds classes whose instances need different renames
// and escapes all but one group of instances through longer keys at their
// nearest uniquely-classed aligned ancestor.
func resolveConflicts(v *view, entries []*entry) ([]*entry, []Conflict) {
	classes, byClass := instancesByClass(entries)
	var conflicts []Conflict
	var escapes []*entry
	escaped := map[*entry]bool{}
	for _, c := range classes {
		insts := byClass[c]
		addImplicitWants(v, insts)
		ckeys := conflictingKeys(insts)
		if len(ckeys) == 0 {
			continue
		}
		clusters := clusterInstances(insts, ckeys)
		if len(clusters) < 2 {
			continue
		}
		keep := cheapestKeeper(clusters, ckeys)
		conf := describeConflict(c, clusters, keep, ckeys)
		escapes = append(escapes, escapeClusters(v, &conf, clusters, keep, ckeys, escaped)...)
		conflicts = append(conflicts, conf)
	}
	var kept []*entry
	for _, e := range entries {
		if !escaped[e] && !e.implicit {
			kept = append(kept, e)
		}
	}
	return append(kept, escapes...), conflicts
}

// instance is one anchor of a class and the renames it wants, by key.
type instance struct {
	node *printparse.Node
	want map[string]*entry
}

// cluster is a group of instances whose wants agree on the conflicting
// keys.
type cluster struct {
	want  map[string]string
	insts []*instance
}

func instanceNodes(xs []*instance) []*printparse.Node {
	out := make([]*printparse.Node, len(xs))
	for i, x := range xs {
		out[i] = x.node
	}
	return out
}

// instancesByClass groups the entries by anchor, and the anchors by the
// class msprobe consults there (classes in order of first appearance).
func instancesByClass(entries []*entry) (classes []string, byClass map[string][]*instance) {
	byClass = map[string][]*instance{}
	instOf := map[*printparse.Node]*instance{}
	for _, e := range entries {
		in := instOf[e.anchor]
		if in == nil {
			in = &instance{node: e.anchor, want: map[string]*entry{}}
			instOf[e.anchor] = in
			c := classOf(e.anchor)
			if byClass[c] == nil {
				classes = append(classes, c)
			}
			byClass[c] = append(byClass[c], in)
		}
		in.want[e.key] = e
	}
	return classes, byClass
}

// addImplicitWants records what each instance needs at a key another
// instance renames: a key of one instance reaches into every instance
// that has that path.
func addImplicitWants(v *view, insts []*instance) {
	union := map[string]bool{}
	for _, in := range insts {
		for k, e := range in.want {
			if !e.identity() {
				union[k] = true
			}
		}
	}
	for _, in := range insts {
		ip := v.partnerOf(in.node)
		for k := range union {
			if _, has := in.want[k]; has {
				continue
			}
			n := in.node.Lookup(k)
			if n == nil || v.byA[n] == nil || ip == nil {
				continue
			}
			np := v.byA[n].b
			if !isAncestor(ip, np) {
				continue
			}
			in.want[k] = &entry{anchor: in.node, key: k, value: rel(np, ip), target: n, pair: v.byA[n],
				kind: "pair", comment: pairComment(v.byA[n].m, v.keys), implicit: true}
		}
	}
	addAloneWants(v, insts, union)
}

// addAloneWants records, for an instance whose module at a key another
// instance renames has no partner, that it needs that key left alone
// (identity): the class rule would pair it with whatever the rename finds
// below its partner (a dense layer's IdentityOp pre_mlp_layernorm with the
// real norm the MoE layers' rule names). An identity key the partner does
// not have leaves it unmatched, as it should be; when the partner has it,
// nothing can.
func addAloneWants(v *view, insts []*instance, union map[string]bool) {
	values := map[string][]string{}
	for _, in := range insts {
		for k, e := range in.want {
			if union[k] && !e.identity() && !slices.Contains(values[k], e.value) {
				values[k] = append(values[k], e.value)
			}
		}
	}
	for _, vs := range values {
		slices.Sort(vs)
	}
	for _, in := range insts {
		ip := v.partnerOf(in.node)
		if ip == nil {
			continue
		}
		for k, vs := range values {
			if _, has := in.want[k]; has {
				continue
			}
			n := in.node.Lookup(k)
			if n == nil || v.byA[n] != nil || generic(n) || ip.Lookup(k) != nil {
				continue
			}
			var hit *printparse.Node
			for _, w := range vs {
				if hit = ip.Lookup(w); hit != nil {
					break
				}
			}
			if hit == nil {
				continue
			}
			// no band: the line pairs nothing (mapping.NoPartner), and
			// validate reads its missing target as intended
			why := v.al.whyUnmatched(n, v.keys)
			in.want[k] = &entry{anchor: in.node, key: k, value: k, target: n, kind: "alone", implicit: true,
				comment: fmt.Sprintf("%s: %s; the line keeps the class rule from pairing it with %s (%s)", mapping.NoPartner, why, rel(hit, ip), hit.Class)}
		}
	}
}

// conflictingKeys are the keys whose wanted value differs between
// instances, sorted.
func conflictingKeys(insts []*instance) []string {
	values := map[string]map[string]bool{}
	for _, in := range insts {
		for k, e := range in.want {
			if values[k] == nil {
				values[k] = map[string]bool{}
			}
			values[k][e.value] = true
		}
	}
	var ckeys []string
	for k, vs := range values {
		if len(vs) > 1 {
			ckeys = append(ckeys, k)
		}
	}
	sort.Strings(ckeys)
	return ckeys
}

// clusterInstances groups instances with compatible wants on the
// conflicting keys, first fit in instance order.
func clusterInstances(insts []*instance, ckeys []string) []*cluster {
	var clusters []*cluster
	for _, in := range insts {
		var home *cluster
		for _, cl := range clusters {
			if cl.admits(in, ckeys) {
				home = cl
				break
			}
		}
		if home == nil {
			home = &cluster{want: map[string]string{}}
			clusters = append(clusters, home)
		}
		for _, k := range ckeys {
			if e, has := in.want[k]; has {
				home.want[k] = e.value
			}
		}
		home.insts = append(home.insts, in)
	}
	return clusters
}

// admits reports whether in wants nothing the cluster contradicts.
func (cl *cluster) admits(in *instance, ckeys []string) bool {
	for _, k := range ckeys {
		e, has := in.want[k]
		if w, has2 := cl.want[k]; has && has2 && w != e.value {
			return false
		}
	}
	return true
}

// ruleFor is the value cl's class rule gives key k: its want, or identity.
func (cl *cluster) ruleFor(k string) string {
	if w, ok := cl.want[k]; ok {
		return w
	}
	return k
}

// escapeLines counts the escape lines in needs when cl keeps the class
// rule.
func escapeLines(in *instance, cl *cluster, ckeys []string) int {
	n := 0
	for _, k := range ckeys {
		if e, has := in.want[k]; has && cl.ruleFor(k) != e.value {
			n++
		}
	}
	return n
}

// cheapestKeeper picks the cluster that keeps the class rule: the one that
// leaves the fewest escape lines to the others (the larger on a tie).
func cheapestKeeper(clusters []*cluster, ckeys []string) int {
	best, bestCost := -1, 0
	for i, cl := range clusters {
		cost := 0
		for j, o := range clusters {
			if j != i {
				for _, in := range o.insts {
					cost += escapeLines(in, cl, ckeys)
				}
			}
		}
		if best < 0 || cost < bestCost || cost == bestCost && len(cl.insts) > len(clusters[best].insts) {
			best, bestCost = i, cost
		}
	}
	return best
}

// describeConflict lists a conflicting class's instances and what each
// wants; keep is the cluster that keeps the class rule.
func describeConflict(class string, clusters []*cluster, keep int, ckeys []string) Conflict {
	conf := Conflict{Class: class}
	for _, cl := range clusters {
		for _, g := range groupPaths(instanceNodes(cl.insts)) {
			ci := ConflictInstance{Path: g}
			for _, k := range ckeys {
				if w, ok := cl.want[k]; ok {
					ci.Wants = append(ci.Wants, k+": "+w)
				}
			}
			conf.Instances = append(conf.Instances, ci)
		}
	}
	conf.Keeps = groupPaths(instanceNodes(clusters[keep].insts))
	for _, cl := range clusters {
		for _, in := range cl.insts {
			for _, e := range in.want {
				if e.pair == nil {
					conf.alone = append(conf.alone, e.target)
				} else {
					conf.targets = append(conf.targets, e.target)
				}
			}
		}
	}
	return conf
}

// escapeClusters writes, for every instance outside the keeping cluster,
// the longer keys at its escape anchor that override the class rule,
// marks the entries they replace in escaped, and completes conf's
// resolution.
func escapeClusters(v *view, conf *Conflict, clusters []*cluster, keep int, ckeys []string, escaped map[*entry]bool) []*entry {
	var out []*entry
	win := clusters[keep]
	var escNodes, unresolved []*printparse.Node
	for i, cl := range clusters {
		if i == keep {
			continue
		}
		for _, in := range cl.insts {
			esc := escapeAnchor(v, in.node)
			if esc == nil {
				unresolved = append(unresolved, in.node)
			} else {
				escNodes = append(escNodes, in.node)
			}
			for _, k := range ckeys {
				e, has := in.want[k]
				if !has {
					continue
				}
				w := win.ruleFor(k)
				if w == e.value {
					continue
				}
				escaped[e] = true
				if esc == nil {
					continue
				}
				ep := v.byA[esc]
				ib := v.partnerOf(in.node)
				ne := &entry{
					anchor: esc, target: e.target, pair: e.pair, kind: "escape",
					key:   joinPath(rel(in.node, esc), e.key),
					value: joinPath(rel(ib, ep.b), e.value),
				}
				band, rest, _ := strings.Cut(e.comment, ": ")
				ne.comment = fmt.Sprintf("%s: escapes %s rule %s: %s (%s)", band, conf.Class, k, w, rest)
				out = append(out, ne)
				conf.Lines++
			}
		}
	}
	conf.Escapes = groupPaths(escNodes)
	conf.Unresolved = groupPaths(unresolved)
	conf.Resolution = fmt.Sprintf("class rule %s serves %s; %s escape%s through %d longer key%s at %s",
		conf.Class, strings.Join(conf.Keeps, ", "), strings.Join(conf.Escapes, ", "), plural(len(conf.Escapes), "", "s"),
		conf.Lines, plural(conf.Lines, "", "s"), strings.Join(escapeClasses(v, escNodes), ", "))
	if len(unresolved) > 0 {
		conf.Resolution += fmt.Sprintf("; %s cannot be expressed in YAML (no uniquely-classed aligned ancestor): see the sidecar", strings.Join(conf.Unresolved, ", "))
	}
	return out
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func joinPath(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "." + b
}

func escapeClasses(v *view, ns []*printparse.Node) []string {
	var out []string
	seen := map[string]bool{}
	for _, n := range ns {
		if e := escapeAnchor(v, n); e != nil && !seen[classOf(e)] {
			seen[classOf(e)] = true
			out = append(out, classOf(e))
		}
	}
	return out
}

// escapeAnchor is the nearest aligned proper ancestor of n whose class
// occurs once in the key-side tree (so a rule there fires only here).
func escapeAnchor(v *view, n *printparse.Node) *printparse.Node {
	for q := n.Parent; q != nil; q = q.Parent {
		if v.byA[q] == nil || generic(q) {
			continue
		}
		if q.Parent == nil || v.ka.classCount[q.Class] == 1 {
			return q
		}
	}
	return nil
}

// groupPaths writes node paths with repeat members collapsed:
// "decoder.layers.{0-7}".
func groupPaths(ns []*printparse.Node) []string {
	var out []string
	idx := map[string]int{}
	type grp struct {
		prefix, suffix string
		ids            []int
	}
	var groups []*grp
	for _, n := range ns {
		p, s, i := splitIndex(n)
		if i < 0 {
			out = append(out, displayPath(n.Path))
			continue
		}
		k := p + "\x00" + s
		if j, ok := idx[k]; ok {
			groups[j].ids = append(groups[j].ids, i)
			continue
		}
		idx[k] = len(groups)
		groups = append(groups, &grp{prefix: p, suffix: s, ids: []int{i}})
		out = append(out, "\x00"+k)
	}
	for i, o := range out {
		if strings.HasPrefix(o, "\x00") {
			g := groups[idx[o[1:]]]
			out[i] = g.prefix + printparse.IndexRange(g.ids) + g.suffix
		}
	}
	return out
}

func displayPath(p string) string {
	if p == "" {
		return "(root)"
	}
	return p
}

// splitIndex splits a node path at its innermost repeat-member segment.
func splitIndex(n *printparse.Node) (prefix, suffix string, index int) {
	var segs []string
	for p := n; p != nil && p.Parent != nil; p = p.Parent {
		if p.Repeat != nil || isRepeatedMember(p) {
			prefix = strings.TrimSuffix(p.Path, p.Name)
			suffix = strings.Join(segs, "")
			return prefix, suffix, indexOf(p)
		}
		segs = append([]string{"." + p.Name}, segs...)
	}
	return "", "", -1
}

// isRepeatedMember reports one of a repeat group: printed as one, or,
// in a list printed without groups, a member with a sibling of its class.
func isRepeatedMember(n *printparse.Node) bool {
	if n.Repeat != nil {
		return true
	}
	if !isListMember(n) {
		return false
	}
	same := false
	for _, c := range n.Parent.Children {
		if c.Repeat != nil {
			return false
		}
		same = same || c != n && c.Class == n.Class
	}
	return same
}

// build turns entries into a mapping, outside-in: classes in the order
// their first anchor appears, lines in the order of the module they
// rename; identity lines only where an escape needs them.
func build(v *view, entries []*entry, header string) *mapping.Mapping {
	m := mapping.New()
	m.Header = header
	type line struct {
		class, key, value string
		order             int
		classOrder        int
		comment           string
	}
	seen := map[[3]string]bool{}
	firstClass := map[string]int{}
	var lines []line
	for _, e := range entries {
		if e.identity() && e.kind != "escape" && !e.force {
			continue
		}
		c := classOf(e.anchor)
		k := [3]string{c, e.key, e.value}
		if seen[k] {
			continue
		}
		seen[k] = true
		o := v.ka.order[e.anchor]
		if f, ok := firstClass[c]; !ok || o < f {
			firstClass[c] = o
		}
		lines = append(lines, line{class: c, key: e.key, value: e.value, order: v.ka.order[e.target], comment: e.comment})
	}
	for i := range lines {
		lines[i].classOrder = firstClass[lines[i].class]
	}
	sort.SliceStable(lines, func(i, j int) bool {
		if lines[i].classOrder != lines[j].classOrder {
			return lines[i].classOrder < lines[j].classOrder
		}
		return lines[i].order < lines[j].order
	})
	for _, l := range lines {
		m.Add(l.class, l.key, l.value, l.comment)
	}
	return m
}

// prove runs msprobe's resolver over both trees with the drafted mapping
// and records which aligned pairs it reproduces; pairs it cannot go to the
// sidecar.
func (d *draft) prove(v *view) {
	d.proven, d.failures, d.sidecar, d.unintended = map[*printparse.Node]bool{}, nil, nil, nil
	res := resolve.New(d.m).ResolveTrie(v.ka.trie(), v.kb.tree)
	got := partners(res)
	for _, p := range v.pairs {
		if p.m.rootish {
			continue
		}
		if got[p.a] == p.b {
			d.proven[p.a] = true
			continue
		}
		d.failures = append(d.failures, p.a.Path)
		d.sidecar = append(d.sidecar, mapping.ModulePair{NPU: p.a.Path, Bench: p.b.Path})
	}
	for _, np := range res {
		if np.Bench == nil || v.byA[np.NPU] != nil {
			continue
		}
		d.unintended = append(d.unintended, mapping.ModulePair{NPU: np.NPU.Path, Bench: np.Bench.Path})
	}
}

// partners maps each module the resolver pairs to its partner.
func partners(res []resolve.NodePair) map[*printparse.Node]*printparse.Node {
	got := make(map[*printparse.Node]*printparse.Node, len(res))
	for _, np := range res {
		if np.Bench != nil {
			got[np.NPU] = np.Bench
		}
	}
	return got
}
