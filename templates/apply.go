package templates

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/layermap/layermap/mapping"
	"github.com/layermap/layermap/printparse"
)

// MatchClass reports whether templateClass, a class key of a template,
// names treeClass, a class found in a tree, allowing for the renames that
// transformers and wrappers make between versions:
//
//   - attention implementations: "XSdpaAttention", "XFlashAttention2",
//     "XFlashAttention", "XEagerAttention", "XFlexAttention" and "XAttention"
//     all match ("Qwen2_5_VLVisionSdpaAttention" = "Qwen2_5_VLVisionAttention",
//     "Qwen2SdpaAttention" = "Qwen2Attention", "Qwen2_5_VLSdpaAttention" =
//     "Qwen2_5_VLAttention");
//   - the "FSDP" prefix FSDP2's fully_shard adds ("FSDPQwen2DecoderLayer").
//
// Renames that change what a class means are deliberately not matched:
// "Qwen2_5_VLModel" is the text model up to transformers 4.51 and the
// vision+text wrapper from 4.52 on (the text model became
// "Qwen2_5_VLTextModel"); the layouts have separate templates instead.
func MatchClass(templateClass, treeClass string) bool {
	if templateClass == treeClass {
		return true
	}
	if templateClass == "" || treeClass == "" {
		return false
	}
	return canonicalClass(templateClass) == canonicalClass(treeClass)
}

// attentionImpls are the infixes transformers used for attention
// implementations ("FlashAttention2" before its prefix "FlashAttention").
var attentionImpls = []string{"FlashAttention2", "SdpaAttention", "FlashAttention", "EagerAttention", "FlexAttention"}

func canonicalClass(c string) string {
	if len(c) > 4 && strings.HasPrefix(c, "FSDP") && c[4] >= 'A' && c[4] <= 'Z' {
		c = c[4:]
	}
	for _, impl := range attentionImpls {
		if strings.HasSuffix(c, impl) && len(c) > len(impl) {
			return strings.TrimSuffix(c, impl) + "Attention"
		}
	}
	return c
}

// Hit is one place where a template line renamed an NPU module.
type Hit struct {
	// NPU is the full path of the renamed NPU module (instance path + key).
	NPU string
	// Bench is the full bench path msprobe resolves it to.
	Bench string
}

// AppliedLine is a template line that applies to a pair of trees.
type AppliedLine struct {
	// Line is the template line as written.
	Line Line
	// Key and Value are the line as it applies: IndexPlaceholder replaced
	// by one index, the value cut at its first "(" as msprobe does. An
	// indexed line gives one AppliedLine per index that applies, and a line
	// matched to several tree classes (drift) one per class.
	Key, Value string
	// TreeClass is the NPU class the line was matched to; it differs from
	// Line.Class under version drift (see MatchClass). Empty for TopLayer.
	TreeClass string
	// Hits are the instances where the line fired and the bench path exists.
	Hits []Hit
	// Misses are the instances where the line fired (msprobe would use it)
	// but the bench path does not exist: the item is left unmatched. Misses
	// next to Hits mean that the class is shared by places needing
	// different renames (a conflict).
	Misses []Hit
}

// Apply evaluates every line of t on a pair of trees, the way msprobe's
// resolver uses a layer_mapping.yaml (shared/docs/msprobe-layer-mapping.md):
//
// Every NPU module path is rewritten from the root: at each node reached so
// far, the rules of that node's class (TopLayer at the root; classes
// compared with MatchClass, an exact class name winning over a drifted one)
// whose key equals the next path segments are tried longest first, with the
// identity rename last; the first that matches appends its value and
// consumes its key's segments (the classes of the nodes it jumps over are
// not consulted). A line fires for an NPU module when it is the rule chosen
// for the last step of that module's rewrite, that is at an instance of its
// class whose descendant at Key is that module, not shadowed by a longer key
// of an ancestor. It hits when the rewritten path, the instance's bench
// partner (as the template itself resolves it) followed by Value, exists in
// the bench tree, and misses otherwise.
//
// A line applies when it hits at least once. An indexed line (Key holding
// IndexPlaceholder as a whole path segment) is expanded at each instance for
// every index child of the list at the key's prefix, and each expansion that
// hits is returned as its own AppliedLine; the line is unapplied when no
// expansion hits. Applied lines come in template order (expansions by index);
// unapplied lines are the template lines that never hit: their class is
// absent, their key never occurs, a longer key shadows them everywhere, or
// their target never exists. TopLayer lines are used as written; Adapt fits
// them to trees whose roots lack the wrappers the template assumes.
func (t *Template) Apply(npu, bench *printparse.Tree) (applied []AppliedLine, unapplied []Line) {
	r := newResolver(t, npu)
	type akey struct {
		line       int
		key, class string
	}
	byKey := map[akey]*AppliedLine{}
	var order []akey
	var bl printparse.ChildIndex // a list of 24k layers looked up once per hit was most of a template's time
	r.walk(func(m *printparse.Node, rule *rule, inst *printparse.Node, benchPath func() string) {
		cls := ""
		if inst != npu.Root {
			cls = inst.Class
		}
		k := akey{rule.line, rule.key, cls}
		a := byKey[k]
		if a == nil {
			l := t.Lines[rule.line]
			a = &AppliedLine{Line: l, Key: rule.key, Value: rule.value, TreeClass: cls}
			byKey[k] = a
			order = append(order, k)
		}
		bp := benchPath()
		h := Hit{NPU: m.Path, Bench: bp}
		if bl.Lookup(bench.Root, bp) != nil {
			a.Hits = append(a.Hits, h)
		} else {
			a.Misses = append(a.Misses, h)
		}
	})
	sort.SliceStable(order, func(i, j int) bool {
		if order[i].line != order[j].line {
			return order[i].line < order[j].line
		}
		if order[i].key != order[j].key {
			return indexLess(order[i].key, order[j].key)
		}
		return order[i].class < order[j].class
	})
	hit := make([]bool, len(t.Lines))
	for _, k := range order {
		if a := byKey[k]; len(a.Hits) > 0 {
			applied = append(applied, *a)
			hit[k.line] = true
		}
	}
	for i, l := range t.Lines {
		if !hit[i] {
			unapplied = append(unapplied, l)
		}
	}
	return applied, unapplied
}

// indexLess orders expanded keys by their numeric segments.
func indexLess(a, b string) bool {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) && i < len(bs); i++ {
		if as[i] == bs[i] {
			continue
		}
		if isIndex(as[i]) && isIndex(bs[i]) && len(as[i]) != len(bs[i]) {
			return len(as[i]) < len(bs[i])
		}
		return as[i] < bs[i]
	}
	return len(as) < len(bs)
}

func isIndex(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// rule is one template line as it applies at one NPU node.
type rule struct {
	line  int      // index into Template.Lines
	key   string   // expanded key
	segs  []string // key split on "."
	value string   // expanded value, cut at "("
}

// resolver rewrites NPU paths with a template's rules.
type resolver struct {
	t     *Template
	root  *printparse.Node
	rules map[*printparse.Node][]rule
	// byClass caches, per tree class, the lines that apply to it and, when
	// none is indexed (the rules then do not depend on the node), its rules.
	byClass map[string]classLines
}

type classLines struct {
	lines []int
	rules []rule // nil when a line is indexed
}

func newResolver(t *Template, npu *printparse.Tree) *resolver {
	return &resolver{t: t, root: npu.Root, rules: map[*printparse.Node][]rule{}, byClass: map[string]classLines{}}
}

// rulesAt returns the rules that apply at node n, longest key first.
func (r *resolver) rulesAt(n *printparse.Node) []rule {
	class := mapping.TopLayer
	if n != r.root {
		class = n.Class
	}
	cl, ok := r.byClass[class]
	if !ok {
		cl.lines = r.linesFor(class, n == r.root)
		if !slices.ContainsFunc(cl.lines, func(i int) bool { return r.t.Lines[i].Indexed() }) {
			cl.rules = r.rulesFor(cl.lines, n)
		}
		r.byClass[class] = cl
	}
	if cl.rules != nil {
		return cl.rules
	}
	rs, ok := r.rules[n]
	if !ok {
		rs = r.rulesFor(cl.lines, n)
		r.rules[n] = rs
	}
	return rs
}

// linesFor lists the lines of a class (exact class names, or else the
// drifted ones; TopLayer's at the root).
func (r *resolver) linesFor(class string, root bool) []int {
	var exact, drift []int
	for i, l := range r.t.Lines {
		switch {
		case root:
			if l.Class == mapping.TopLayer {
				exact = append(exact, i)
			}
		case l.Class == mapping.TopLayer:
		case l.Class == class:
			exact = append(exact, i)
		case MatchClass(l.Class, class):
			drift = append(drift, i)
		}
	}
	if len(exact) == 0 {
		return drift
	}
	return exact
}

// rulesFor expands lines at node n, longest key first.
func (r *resolver) rulesFor(lines []int, n *printparse.Node) []rule {
	rs := []rule{}
	seen := map[string]bool{}
	for _, i := range lines {
		l := r.t.Lines[i]
		for _, kv := range expand(l, n) {
			if seen[kv[0]] {
				continue // first of two drifted blocks wins
			}
			seen[kv[0]] = true
			v, _, _ := strings.Cut(kv[1], "(")
			rs = append(rs, rule{line: i, key: kv[0], segs: strings.Split(kv[0], "."), value: v})
		}
	}
	sort.SliceStable(rs, func(i, j int) bool { return len(rs[i].segs) > len(rs[j].segs) })
	return rs
}

// expand returns the (key, value) pairs line l stands for at node n.
func expand(l Line, n *printparse.Node) [][2]string {
	if !l.Indexed() {
		return [][2]string{{l.Key, l.Value}}
	}
	prefix, _, _ := strings.Cut(l.Key, IndexPlaceholder)
	list := n.Lookup(strings.TrimSuffix(prefix, "."))
	if list == nil {
		return nil
	}
	var out [][2]string
	for _, c := range list.Children {
		if isIndex(c.Name) {
			out = append(out, [2]string{
				strings.Replace(l.Key, IndexPlaceholder, c.Name, 1),
				strings.Replace(l.Value, IndexPlaceholder, c.Name, 1),
			})
		}
	}
	return out
}

// step is one step of a path's rewrite: from the node at depth start, a
// rule (nil: the identity) consumed n segments and appended value.
type step struct {
	start, n int
	rule     *rule
	value    string
}

// walk rewrites the path of every NPU module below the root, parents
// first, and calls fn for each module whose last rewrite step used a rule:
// the rule, the node the rule belongs to, and the bench path (built on
// demand). The rewrite is msprobe's, from the root: at each node reached,
// the longest rule of its class whose key equals the next segments, else
// the identity (see Apply). A child's rewrite is its parent's with only
// the last steps redone (those a key of maxKey segments could reach past
// the parent's end), so a deep tree costs its size, not depth squared.
func (r *resolver) walk(fn func(m *printparse.Node, last *rule, inst *printparse.Node, benchPath func() string)) {
	maxKey := 1
	for _, l := range r.t.Lines {
		maxKey = max(maxKey, strings.Count(l.Key, ".")+1)
	}
	var path []*printparse.Node // path[i]: the node at depth i (path[0] is the root)
	var steps []step
	var visit func(m *printparse.Node)
	visit = func(m *printparse.Node) {
		d := len(path) // m's depth: its path segments are the names of path[1:] and m
		path = append(path, m)
		// keep the parent's steps that start before d-maxKey: no key
		// reaches past the parent's end from there
		k := len(steps)
		for k > 0 && steps[k-1].start > d-1-maxKey {
			k--
		}
		saved := append([]step(nil), steps[k:]...)
		steps = steps[:k]
		i := 0
		if k > 0 {
			i = steps[k-1].start + steps[k-1].n
		}
		for i < d {
			rs := r.rulesAt(path[i])
			st := step{start: i, n: 1, value: path[i+1].Name}
			for j := range rs {
				if n := len(rs[j].segs); n <= d-i && namesAre(path[i+1:i+1+n], rs[j].segs) {
					st.n, st.rule, st.value = n, &rs[j], rs[j].value
					break
				}
			}
			steps = append(steps, st)
			i += st.n
		}
		if d > 0 {
			if last := steps[len(steps)-1]; last.rule != nil {
				fn(m, last.rule, path[last.start], func() string {
					var b strings.Builder
					for i, s := range steps {
						if i > 0 {
							b.WriteByte('.')
						}
						b.WriteString(s.value)
					}
					return b.String()
				})
			}
		}
		for _, c := range m.Children {
			visit(c)
		}
		steps = append(steps[:k], saved...)
		path = path[:d]
	}
	visit(r.root)
}

// namesAre reports whether the nodes are named segs.
func namesAre(ns []*printparse.Node, segs []string) bool {
	for i, s := range segs {
		if ns[i].Name != s {
			return false
		}
	}
	return true
}

// ClassMatch is one template class and a tree class it was matched to.
type ClassMatch struct {
	Template, Tree string
	// Exact is false when the names differ (version drift, see MatchClass).
	Exact bool
}

// Match is one template that applies to a pair of trees.
type Match struct {
	Template *Template
	// Score is the share of the template's lines that apply (an indexed
	// line counts once), in [0, 1].
	Score float64
	// Misses is the number of instances where an applied line fired
	// without a bench target (see AppliedLine.Misses).
	Misses int
	// Fit is how much of the trees the template explains: the NPU modules
	// its lines pair with a bench module (hits) less the places where a
	// line fires without one (misses). A family's template explains the
	// structure a generic one leaves alone (experts, routers, shared
	// experts, q/k norms) and fits better, though a smaller share of its
	// lines may apply.
	Fit int
	// Applied and Unapplied are Template.Apply's results.
	Applied   []AppliedLine
	Unapplied []Line
	// Classes are the class correspondences the applied lines used, in
	// template order: every template class with the tree classes it
	// matched, drifted ones marked.
	Classes []ClassMatch
}

// MinScore is the least Score for which Detect reports a template.
const MinScore = 0.5

// Detect returns the built-in templates that apply to the pair (npu keys
// the YAML), best first: best Fit (the template that explains most of the
// trees: Mixtral's over Llama's on a Mixtral pair, whose experts and router
// only the first pairs), then highest Score, then fewest misses, then most
// applied lines (a family's template before a generic one whose lines it
// contains), then expert templates before seeds, then by name; finally an expert template moves
// ahead of the seed it corrects when it applies every line the seed applies
// (at least as many hits, no more misses). Each template is also tried
// fitted to the trees' roots (see Adapt); when that scores better, the
// Match holds the adapted template. A template is reported when at
// least MinScore of its lines apply and at least one applied line is keyed
// by a class other than TopLayer.
func Detect(npu, bench *printparse.Tree) []Match {
	var out []Match
	for _, t := range All() {
		m, ok := evaluate(t, npu, bench)
		if a := t.Adapt(npu, bench); a != t {
			if ma, aok := evaluate(a, npu, bench); aok && ma.Score > m.Score {
				m, ok = ma, aok
			}
		}
		if ok && m.Score >= MinScore {
			out = append(out, m)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Fit != b.Fit {
			return a.Fit > b.Fit
		}
		if a.Score != b.Score {
			return a.Score > b.Score
		}
		if a.Misses != b.Misses {
			return a.Misses < b.Misses
		}
		if len(a.Applied) != len(b.Applied) {
			return len(a.Applied) > len(b.Applied) // the more specific template
		}
		if a.Template.Kind != b.Template.Kind {
			return a.Template.Kind == KindExpert
		}
		return a.Template.Name < b.Template.Name
	})
	// An expert template that applies every line its seed applies is the
	// better choice even when it has lines (such as a rotary embedding
	// pair) that these trees lack: move it ahead of the seed.
	for i := 0; i < len(out); i++ {
		if out[i].Template.Kind != KindSeed {
			continue
		}
		for j := i + 1; j < len(out); j++ {
			if out[j].Template.Corrects == out[i].Template.Name && covers(out[j], out[i]) {
				e := out[j]
				copy(out[i+1:j+1], out[i:j])
				out[i] = e
				break
			}
		}
	}
	return out
}

// covers reports whether every line applied in m is applied in e too, with
// at least as many hits and no more misses.
func covers(e, m Match) bool {
	type k struct{ class, key, value string }
	have := map[k]AppliedLine{}
	for _, a := range e.Applied {
		have[k{a.Line.Class, a.Key, a.Value}] = a
	}
	for _, a := range m.Applied {
		b, ok := have[k{a.Line.Class, a.Key, a.Value}]
		if !ok || len(b.Hits) < len(a.Hits) || len(b.Misses) > len(a.Misses) {
			return false
		}
	}
	return true
}

// Expand returns t's lines as msprobe needs them for the NPU tree npu:
// every indexed line written out for the indices present (at every instance
// of its class, as Apply expands it), and a line whose class matches tree
// classes only by drift (see MatchClass) renamed to each of those classes,
// because msprobe compares class names exactly. Lines come in template
// order, expansions by index. Lines whose class the tree lacks are returned
// unchanged, whether they apply or not; an indexed line with no index in
// the tree is dropped.
func (t *Template) Expand(npu *printparse.Tree) []Line {
	r := newResolver(t, npu)
	var out []Line
	for i, l := range t.Lines {
		seen := map[Line]bool{}
		var exp []Line
		npu.Root.Walk(func(n *printparse.Node) bool {
			for _, rl := range r.rulesAt(n) {
				if rl.line != i {
					continue
				}
				cls := l.Class
				if n != npu.Root {
					cls = n.Class
				}
				e := Line{Class: cls, Key: rl.key, Value: l.Value, Line: l.Line}
				if l.Indexed() {
					e.Value = expandValue(l, rl.key)
				}
				if !seen[e] {
					seen[e] = true
					exp = append(exp, e)
				}
			}
			return true
		})
		if len(exp) == 0 && !l.Indexed() {
			exp = append(exp, l)
		}
		sort.SliceStable(exp, func(i, j int) bool {
			if exp[i].Class != exp[j].Class {
				return exp[i].Class < exp[j].Class
			}
			return indexLess(exp[i].Key, exp[j].Key)
		})
		out = append(out, exp...)
	}
	return out
}

// expandValue returns l's value with the index that key (an expansion of
// l.Key) holds in place of IndexPlaceholder.
func expandValue(l Line, key string) string {
	ks, es := strings.Split(l.Key, "."), strings.Split(key, ".")
	for i, seg := range ks {
		if seg == IndexPlaceholder && i < len(es) {
			return strings.Replace(l.Value, IndexPlaceholder, es[i], 1)
		}
	}
	return l.Value
}

// Adapt returns t fitted to the roots of a pair of trees, or t itself when
// it fits already. The TopLayer lines of a template assume how the models
// were handed to msprobe (MindSpeed's list "0.module", LLaMA-Factory's
// DeepSpeedEngine "module"). When a TopLayer line "A: B" names a wrapper
// that a tree lacks, the lines of the class found below it are folded into
// TopLayer, which is how msprobe's YAML expresses a pair with a root:
//
//   - bench side bare (B does not exist, A does): every line "K: V" of the
//     class of the NPU module at A becomes "TopLayer: A.K: V" (the module
//     at A then pairs with the bench root, which no rule can name);
//   - NPU side bare (A does not exist, the template has lines for the NPU
//     root's class): every line "K: V" of that class becomes
//     "TopLayer: K: B.V" (just "K: V" when B is missing too).
//
// The folded class's own lines are dropped when the class occurs only
// there. The result's Adapted says what was done; its Text is t's, unchanged.
func (t *Template) Adapt(npu, bench *printparse.Tree) *Template {
	var top []Line
	for _, l := range t.Lines {
		if l.Class == mapping.TopLayer {
			top = append(top, l)
		}
	}
	if len(top) != 1 || top[0].Indexed() {
		return t // fold only the usual single wrapper rule
	}
	a, b := top[0].Key, top[0].Value
	npuAt := npu.Lookup(a)
	benchBare := bench.Lookup(b) == nil
	var class, prefixK, prefixV, what string
	switch {
	case npuAt != nil && benchBare:
		class, prefixK = npuAt.Class, a+"."
		what = fmt.Sprintf("bench tree has no %q: %s lines folded into TopLayer under %q", b, class, a)
	case npuAt == nil && npu.Root.Class != "":
		class = npu.Root.Class
		if !benchBare {
			prefixV = b + "."
		}
		what = fmt.Sprintf("NPU tree has no %q (its root is %s): %s lines folded into TopLayer", a, class, class)
	default:
		return t
	}
	var folded, rest []Line
	for _, l := range t.Lines {
		switch {
		case l.Class == mapping.TopLayer:
		case MatchClass(l.Class, class):
			folded = append(folded, Line{Class: mapping.TopLayer, Key: prefixK + l.Key, Value: prefixV + l.Value, Line: l.Line})
			rest = append(rest, l)
		default:
			rest = append(rest, l)
		}
	}
	if len(folded) == 0 {
		return t
	}
	instances := 0
	npu.Root.Walk(func(n *printparse.Node) bool {
		if n != npu.Root && MatchClass(class, n.Class) {
			instances++
		}
		return true
	})
	if instances <= 1 {
		kept := rest[:0:0]
		for _, l := range rest {
			if !MatchClass(l.Class, class) {
				kept = append(kept, l)
			}
		}
		rest = kept
	}
	c := *t
	c.Lines = append(folded, rest...)
	c.Adapted = what
	return &c
}

// evaluate applies t and scores it; ok reports whether an applied line is
// keyed by a class other than TopLayer.
func evaluate(t *Template, npu, bench *printparse.Tree) (m Match, ok bool) {
	applied, unapplied := t.Apply(npu, bench)
	m = Match{Template: t, Applied: applied, Unapplied: unapplied}
	m.Score = float64(len(t.Lines)-len(unapplied)) / float64(len(t.Lines))
	seen := map[[2]string]bool{}
	for _, a := range applied {
		m.Misses += len(a.Misses)
		m.Fit += len(a.Hits) - len(a.Misses)
		if a.Line.Class == mapping.TopLayer {
			continue
		}
		ok = true
		k := [2]string{a.Line.Class, a.TreeClass}
		if !seen[k] {
			seen[k] = true
			m.Classes = append(m.Classes, ClassMatch{Template: a.Line.Class, Tree: a.TreeClass, Exact: a.Line.Class == a.TreeClass})
		}
	}
	return m, ok
}
