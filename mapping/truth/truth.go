// Package truth reads layermap's labelled benchmark (testdata/benchmark):
// pairs of model structures with their ground-truth module pairs, written
// as compact rules, and scores a layer_mapping against them: the one
// scorer of infer's evaluation (eval_test.go, issue 8) and of the tests
// that measure templates and drafts against pair A. Only tests import it.
//
// A pair is a folder holding the two structures (print(model) text or
// msprobe dump folders), PROVENANCE.md and truth.yaml:
//
//	name: llama2-7b_mcore-te_vs_hf
//	npu: npu.txt          # the NPU side (msprobe -tp), keys the mapping
//	bench: bench.txt      # the bench side (-gp)
//	let:                  # path abbreviations, "$L" at the start of a path
//	  L: decoder.layers.<i>
//	  H: model.layers.<i>
//	modules:              # NPU module pattern: its partner(s) and kind
//	  embedding: none
//	  embedding.word_embeddings: model.embed_tokens            # 1:1
//	  $L.self_attention.linear_qkv: {fused: [$H.self_attn.q_proj, $H.self_attn.k_proj, $H.self_attn.v_proj]}
//	  $L.input_layernorm: {absorbed: $H.input_layernorm, into: $L.self_attention.linear_qkv}
//	  $L.mlp.experts: {experts: [$H.mlp.experts.<e>]}
//	  $L.input_norm: {absorbed_by: $C.self_attention.linear_qkv, placeholder: $C.input_layernorm}
//	  $L._checkpoint_wrapped_module: {same: $L}
//	  $L.core_attention_flash: {alt: [$C.core_attention, $C.core_attention.flash_attention]}
//	  $L.self_attention.core_attention.**: none
//	bench_only:           # bench modules no NPU module pairs with
//	  - $H.mlp.act_fn
//
// Patterns are dotted module paths whose segments are literal, "*" (any one
// segment), "<v>" (an integer index bound to the variable v; "<v=3->" and
// "<v=0-2>" restrict it to a range) or, as the last segment, "**" (the path
// so far and everything below it). A variable bound by an NPU pattern is
// substituted in its bench patterns; a variable left free there ("<e>" for
// the experts) stands for every index present in the bench tree.
//
// The loader checks the rules against both trees: every module msprobe
// would dump (HasDumpEntry: never a ModuleList/ModuleDict, never a root)
// on either side gets exactly one verdict, every rule and every bench_only
// entry matches something, every partner exists and is dumped, and no bench
// module is the 1:1 partner of two NPU modules. A rule without "**" beats
// one with; among "**" rules the longest prefix wins; two matching rules
// otherwise are an error.
//
// Kinds: 1:1 (the partner computes the same function of the same input),
// fused (the NPU module computes several bench modules at once: linear_qkv
// = q_proj+k_proj+v_proj, linear_fc1 = gate_proj+up_proj; or one bench module
// and more: a linear that applies a post-norm of its own), absorbed (an NPU
// placeholder, IdentityOp, whose norm the NPU linear "into" applies inside
// it; the bench norm is recorded; "absorbed_by" is the same seen from the
// side with the real norm: the bench linear applies it, the bench
// placeholder stands in its place), experts (a grouped expert module vs the
// per-expert modules), same (a transparent wrapper or wrapped module, such
// as FSDP's checkpoint wrapper, that computes what another NPU module
// computes: that module's partner is its partner too) and none. A 1:1 rule
// may name alternatives ("alt": the first is the partner, the others compute
// the same and are accepted too, such as TE's DotProductAttention and the
// FlashAttention backend it calls). The reverse
// direction (bench as NPU) is derived: a 1:1 pair inverts (a "same" module
// is accepted as well); a part of a fused or experts rule has the N:1
// module as its acceptable partner; the absorbed bench norm has the
// absorbing linear or the placeholder; bench_only has none.
package truth

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/layermap/layermap/mapping/resolve"
	"github.com/layermap/layermap/printparse/source"
	"gopkg.in/yaml.v3"

	"github.com/layermap/layermap/printparse"
)

// Kinds of a Verdict.
const (
	OneToOne = "1:1"
	Fused    = "fused"
	Absorbed = "absorbed"
	Experts  = "experts"
	Same     = "same"
	None     = "none"
)

// Verdict is one module's ground truth in one direction.
type Verdict struct {
	// Kind is OneToOne, Fused, Absorbed, Experts, Same or None.
	Kind string
	// Accept lists the partner paths in the other tree: the one partner of
	// a 1:1 pair; for the N:1 kinds every module a draft may pair it with
	// as a stand-in (never a true 1:1 pair: outputs differ).
	Accept []string
	// Rule is "truth.yaml:LINE" of the rule that gave the verdict.
	Rule string
}

// Partial reports whether the verdict is one of the N:1 kinds.
func (v Verdict) Partial() bool {
	return v.Kind == Fused || v.Kind == Absorbed || v.Kind == Experts || v.Kind == Same
}

// PartialKinds lists the N:1 kinds in report order.
var PartialKinds = []string{Fused, Absorbed, Experts, Same}

// Accepts reports whether path is one of the verdict's partners.
func (v Verdict) Accepts(path string) bool { return slices.Contains(v.Accept, path) }

// Pair is one benchmark pair.
type Pair struct {
	// Name is the folder name; Dir the folder.
	Name, Dir string
	// Description is truth.yaml's description.
	Description string
	// NPUFile and BenchFile are the structures' file names in Dir.
	NPUFile, BenchFile string
	// Variants lists the generated variants the pair is also scored on
	// (see Variant).
	Variants []string
	// Slow marks a pair whose draft takes seconds with today's aligner:
	// it is scored only without -short.
	Slow    bool
	rules   []rule
	benchOn []pattern
	file    string
}

// Labels are a pair's verdicts for one pair of trees, both directions.
type Labels struct {
	NPU, Bench *printparse.Tree
	// Forward maps every dumped NPU module path to its verdict; Reverse
	// every dumped bench module path.
	Forward, Reverse map[string]Verdict
}

type rule struct {
	npu     pattern
	kind    string
	bench   []pattern // partners (1:1: one; absorbed: the norm)
	into    pattern   // absorbed: the NPU linear; same: the NPU module
	by      bool      // absorbed_by: bench is [the linear, the placeholder]
	line    int
	matched bool
}

// seg is one pattern segment.
type seg struct {
	lit    string // literal text, or "" for the others
	any    bool   // "*"
	rest   bool   // "**"
	v      string // "<v>": variable name
	lo, hi int    // inclusive range of the variable (hi < 0: open)
}

type pattern struct {
	text string
	segs []seg
}

// ReadDir loads every pair folder under dir (folders holding truth.yaml),
// sorted by name.
func ReadDir(dir string) ([]*Pair, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []*Pair
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, e.Name(), "truth.yaml")); err != nil {
			continue
		}
		p, err := Read(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// Read parses dir/truth.yaml (not the structures: see Pair.Labels).
func Read(dir string) (*Pair, error) {
	file := filepath.Join(dir, "truth.yaml")
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	p := &Pair{Name: filepath.Base(dir), Dir: dir, file: file}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, source.YAMLError(file, b, err)
	}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, &source.Error{File: file, Line: 1, Expected: "a mapping"}
	}
	top := doc.Content[0]
	lets := map[string]string{}
	errf := func(n *yaml.Node, format string, a ...any) error {
		return source.Errorf(file, n.Line, format, a...)
	}
	pat := func(n *yaml.Node) (pattern, error) {
		if n.Kind != yaml.ScalarNode || n.Value == "" {
			return pattern{}, errf(n, "expected a module path pattern")
		}
		s, err := expandLets(n.Value, lets)
		if err != nil {
			return pattern{}, errf(n, "%v", err)
		}
		pt, err := parsePattern(s)
		if err != nil {
			return pattern{}, errf(n, "%v", err)
		}
		return pt, nil
	}
	for i := 0; i+1 < len(top.Content); i += 2 {
		k, v := top.Content[i], top.Content[i+1]
		switch k.Value {
		case "name":
			if v.Value != p.Name {
				return nil, errf(v, "expected name %q (the folder), found %q", p.Name, v.Value)
			}
		case "description":
			p.Description = v.Value
		case "npu":
			p.NPUFile = v.Value
		case "bench":
			p.BenchFile = v.Value
		case "slow":
			p.Slow = v.Value == "true"
		case "variants":
			if err := v.Decode(&p.Variants); err != nil {
				return nil, errf(v, "%v", err)
			}
			for _, x := range p.Variants {
				if err := checkVariant(x); err != nil {
					return nil, errf(v, "%v", err)
				}
			}
		case "let":
			if v.Kind != yaml.MappingNode {
				return nil, errf(v, "expected a mapping of abbreviations")
			}
			for j := 0; j+1 < len(v.Content); j += 2 {
				s, err := expandLets(v.Content[j+1].Value, lets)
				if err != nil {
					return nil, errf(v.Content[j+1], "%v", err)
				}
				lets[v.Content[j].Value] = s
			}
		case "modules":
			if v.Kind != yaml.MappingNode {
				return nil, errf(v, "expected a mapping of NPU module patterns")
			}
			for j := 0; j+1 < len(v.Content); j += 2 {
				kn, vn := v.Content[j], v.Content[j+1]
				r := rule{line: kn.Line}
				var err error
				if r.npu, err = pat(kn); err != nil {
					return nil, err
				}
				switch {
				case vn.Kind == yaml.ScalarNode && vn.Value == None:
					r.kind = None
				case vn.Kind == yaml.ScalarNode:
					r.kind = OneToOne
					b, err := pat(vn)
					if err != nil {
						return nil, err
					}
					r.bench = []pattern{b}
				case vn.Kind == yaml.MappingNode:
					if err := r.readN1(vn, pat, errf); err != nil {
						return nil, err
					}
				default:
					return nil, errf(vn, "expected none, a bench path or {fused|absorbed|experts: ...}")
				}
				if r.kind != None && r.npu.hasRest() {
					return nil, errf(kn, "expected \"**\" only in rules with none")
				}
				p.rules = append(p.rules, r)
			}
		case "bench_only":
			if v.Kind != yaml.SequenceNode {
				return nil, errf(v, "expected a list of bench module patterns")
			}
			for _, n := range v.Content {
				b, err := pat(n)
				if err != nil {
					return nil, err
				}
				p.benchOn = append(p.benchOn, b)
			}
		default:
			return nil, errf(k, "unknown key %q", k.Value)
		}
	}
	if p.NPUFile == "" || p.BenchFile == "" || len(p.rules) == 0 {
		return nil, &source.Error{File: file, Expected: "npu, bench and modules"}
	}
	return p, nil
}

func (r *rule) readN1(vn *yaml.Node, pat func(*yaml.Node) (pattern, error), errf func(*yaml.Node, string, ...any) error) error {
	for j := 0; j+1 < len(vn.Content); j += 2 {
		k, v := vn.Content[j], vn.Content[j+1]
		switch k.Value {
		case Fused, Experts, Absorbed, "absorbed_by", "placeholder", Same, "alt":
			if k.Value == "placeholder" {
				p, err := pat(v)
				if err != nil {
					return err
				}
				r.bench = append(r.bench, p)
				continue
			}
			if r.kind != "" {
				return errf(k, "expected one kind per rule")
			}
			r.kind = k.Value
			if k.Value == Same {
				p, err := pat(v)
				if err != nil {
					return err
				}
				r.into = p
				continue
			}
			if k.Value == "absorbed_by" {
				r.kind, r.by = Absorbed, true
			}
			if k.Value == "alt" {
				r.kind = OneToOne
			}
			items := []*yaml.Node{v}
			if v.Kind == yaml.SequenceNode {
				items = v.Content
			}
			for _, n := range items {
				b, err := pat(n)
				if err != nil {
					return err
				}
				r.bench = append(r.bench, b)
			}
		case "into":
			p, err := pat(v)
			if err != nil {
				return err
			}
			r.into = p
		default:
			return errf(k, "expected fused, absorbed (with into), absorbed_by (with placeholder), experts, same or alt, found %q", k.Value)
		}
	}
	switch {
	case r.kind == "":
		return errf(vn, "expected fused, absorbed, absorbed_by, experts, same or alt")
	case r.kind == Absorbed && r.by && (len(r.bench) != 2 || r.into.text != ""):
		return errf(vn, "expected absorbed_by: the bench linear, and placeholder: the bench placeholder")
	case r.kind == Absorbed && !r.by && (len(r.bench) != 1 || r.into.text == ""):
		return errf(vn, "expected absorbed: one bench norm, and into: the NPU linear")
	case r.kind != Absorbed && r.kind != Same && r.into.text != "":
		return errf(vn, "expected into only with absorbed")
	case r.kind == Fused && len(r.bench) < 1:
		return errf(vn, "expected at least one bench module in a fused rule")
	case r.kind == OneToOne && len(r.bench) < 2:
		return errf(vn, "expected at least two bench modules in an alt rule")
	}
	return nil
}

func expandLets(s string, lets map[string]string) (string, error) {
	if !strings.HasPrefix(s, "$") {
		return s, nil
	}
	name, rest, _ := strings.Cut(s[1:], ".")
	v, ok := lets[name]
	if !ok {
		return "", fmt.Errorf("unknown abbreviation $%s", name)
	}
	if rest == "" {
		return v, nil
	}
	return v + "." + rest, nil
}

func parsePattern(s string) (pattern, error) {
	p := pattern{text: s}
	parts := strings.Split(s, ".")
	for i, x := range parts {
		var sg seg
		switch {
		case x == "":
			return p, fmt.Errorf("empty segment in %q", s)
		case x == "**":
			if i != len(parts)-1 {
				return p, fmt.Errorf("\"**\" must be the last segment in %q", s)
			}
			sg.rest = true
		case x == "*":
			sg.any = true
		case strings.HasPrefix(x, "<") && strings.HasSuffix(x, ">"):
			body := x[1 : len(x)-1]
			name, rng, hasRange := strings.Cut(body, "=")
			if name == "" {
				return p, fmt.Errorf("empty variable in %q", s)
			}
			sg.v, sg.lo, sg.hi = name, 0, -1
			if hasRange {
				a, b, ok := strings.Cut(rng, "-")
				lo, err := strconv.Atoi(a)
				if !ok || err != nil {
					return p, fmt.Errorf("bad range %q in %q (want <v=a-b> or <v=a->)", rng, s)
				}
				sg.lo = lo
				if b != "" {
					if sg.hi, err = strconv.Atoi(b); err != nil || sg.hi < lo {
						return p, fmt.Errorf("bad range %q in %q", rng, s)
					}
				}
			}
		case strings.ContainsAny(x, "<>*"):
			return p, fmt.Errorf("segment %q of %q mixes a wildcard with text", x, s)
		default:
			sg.lit = x
		}
		p.segs = append(p.segs, sg)
	}
	return p, nil
}

func (p pattern) hasRest() bool { return len(p.segs) > 0 && p.segs[len(p.segs)-1].rest }

// prefixLen is the number of segments before "**".
func (p pattern) prefixLen() int {
	if p.hasRest() {
		return len(p.segs) - 1
	}
	return len(p.segs)
}

// match matches path segments against p, extending the bindings b (nil
// when p fails).
func (p pattern) match(path []string, b map[string]int) map[string]int {
	n := p.prefixLen()
	if len(path) < n || (!p.hasRest() && len(path) != n) {
		return nil
	}
	out := map[string]int{}
	for k, v := range b {
		out[k] = v
	}
	for i := 0; i < n; i++ {
		sg, x := p.segs[i], path[i]
		switch {
		case sg.lit != "":
			if x != sg.lit {
				return nil
			}
		case sg.any:
		case sg.v != "":
			k, err := strconv.Atoi(x)
			if err != nil || k < 0 || strconv.Itoa(k) != x || k < sg.lo || (sg.hi >= 0 && k > sg.hi) {
				return nil
			}
			if prev, ok := out[sg.v]; ok && prev != k {
				return nil
			}
			out[sg.v] = k
		}
	}
	return out
}

// substitute replaces the bound variables of p; free ones stay.
func (p pattern) substitute(b map[string]int) pattern {
	q := pattern{segs: make([]seg, len(p.segs))}
	var parts []string
	for i, sg := range p.segs {
		if sg.v != "" {
			if k, ok := b[sg.v]; ok {
				sg = seg{lit: strconv.Itoa(k)}
			}
		}
		q.segs[i] = sg
		parts = append(parts, sg.String())
	}
	q.text = strings.Join(parts, ".")
	return q
}

func (s seg) String() string {
	switch {
	case s.lit != "":
		return s.lit
	case s.any:
		return "*"
	case s.rest:
		return "**"
	}
	return "<" + s.v + ">"
}

func (p pattern) literal() bool {
	for _, sg := range p.segs {
		if sg.lit == "" {
			return false
		}
	}
	return true
}

// dumped lists the module nodes msprobe would dump, by path.
type dumped struct {
	t     *printparse.Tree
	paths []string
	segs  [][]string
	set   map[string]bool // dumped paths
}

func newDumped(t *printparse.Tree) *dumped {
	d := &dumped{t: t, set: map[string]bool{}}
	t.Walk(func(n *printparse.Node) bool {
		if resolve.HasDumpEntry(t, n) {
			d.paths = append(d.paths, n.Path)
			d.segs = append(d.segs, strings.Split(n.Path, "."))
			d.set[n.Path] = true
		}
		return true
	})
	return d
}

// find returns the dumped paths p matches (with bindings b), in printed
// order, walking only the subtrees the pattern's segments allow.
func (d *dumped) find(p pattern, b map[string]int) []string {
	q := p.substitute(b)
	if q.literal() {
		if d.set[q.text] {
			return []string{q.text}
		}
		return nil
	}
	var out []string
	var walk func(n *printparse.Node, i int)
	walk = func(n *printparse.Node, i int) {
		if i == len(q.segs) {
			if d.set[n.Path] {
				out = append(out, n.Path)
			}
			return
		}
		sg := q.segs[i]
		if sg.rest {
			n.Walk(func(m *printparse.Node) bool {
				if d.set[m.Path] && m.Path != "" {
					out = append(out, m.Path)
				}
				return true
			})
			return
		}
		if sg.lit != "" {
			if c := n.Child(sg.lit); c != nil {
				walk(c, i+1)
			}
			return
		}
		for _, c := range n.Children {
			if (pattern{segs: []seg{sg}}).match([]string{c.Name}, nil) != nil {
				walk(c, i+1)
			}
		}
	}
	walk(d.t.Root, 0)
	return out
}

// Labels expands the rules over a pair of trees (the pair's own files, or a
// variant of them) and checks them (see the package comment).
func (p *Pair) Labels(npu, bench *printparse.Tree) (*Labels, error) {
	nd, bd := newDumped(npu), newDumped(bench)
	l := &Labels{NPU: npu, Bench: bench, Forward: map[string]Verdict{}, Reverse: map[string]Verdict{}}
	rules := make([]rule, len(p.rules))
	copy(rules, p.rules)
	var errs []string
	fail := func(format string, a ...any) {
		if len(errs) < 20 {
			errs = append(errs, fmt.Sprintf(format, a...))
		}
	}
	where := func(r *rule) string { return fmt.Sprintf("%s:%d", p.file, r.line) }
	type rev struct {
		kind   string
		accept []string
		rule   string
	}
	reverse := map[string]*rev{}
	var sames [][2]string // a "same" module and the module it computes the same as
	addRev := func(bpath, kind, npath, at string) {
		x := reverse[bpath]
		switch {
		case x == nil:
			reverse[bpath] = &rev{kind: kind, accept: []string{npath}, rule: at}
		case kind == Same && x.kind == OneToOne:
			x.accept = append(x.accept, npath) // an alternative partner of a 1:1
		case kind == OneToOne && x.kind == Same:
			x.kind, x.accept, x.rule = OneToOne, append([]string{npath}, x.accept...), at
		case kind == OneToOne || x.kind == OneToOne:
			fail("%s: bench %s is the partner of %s and of %s (%s)", at, bpath, x.accept[0], npath, x.rule)
		case kind != x.kind:
			fail("%s: bench %s is %s for %s and %s for %s (%s)", at, bpath, kind, npath, x.kind, x.accept[0], x.rule)
		default:
			if !slices.Contains(x.accept, npath) {
				x.accept = append(x.accept, npath)
			}
		}
	}
	for i, path := range nd.paths {
		segs := nd.segs[i]
		var best *rule
		var bind map[string]int
		ambiguous := ""
		for j := range rules {
			r := &rules[j]
			b := r.npu.match(segs, nil)
			if b == nil {
				continue
			}
			switch {
			case best == nil:
				best, bind = r, b
			case !r.npu.hasRest() && best.npu.hasRest(),
				r.npu.hasRest() && best.npu.hasRest() && r.npu.prefixLen() > best.npu.prefixLen():
				best, bind, ambiguous = r, b, ""
			case r.npu.hasRest() == best.npu.hasRest() && r.npu.prefixLen() == best.npu.prefixLen():
				ambiguous = fmt.Sprintf("%s:%d and line %d", p.file, best.line, r.line)
			}
		}
		if best == nil {
			fail("%s: NPU module %s (%s) matches no rule", p.file, path, npu.Lookup(path).Class)
			continue
		}
		if ambiguous != "" {
			fail("%s: NPU module %s matches two rules", ambiguous, path)
			continue
		}
		best.matched = true
		at := where(best)
		v := Verdict{Kind: best.kind, Rule: fmt.Sprintf("truth.yaml:%d", best.line)}
		for _, bp := range best.bench {
			got := bd.find(bp, bind)
			if len(got) == 0 {
				fail("%s: %s: no dumped bench module %s", at, path, bp.substitute(bind).text)
			}
			if best.kind == OneToOne && len(got) > 1 {
				fail("%s: %s: %s names %d bench modules, a 1:1 rule wants one", at, path, bp.text, len(got))
			}
			v.Accept = append(v.Accept, got...)
		}
		switch best.kind {
		case OneToOne:
			for i, b := range v.Accept {
				if i == 0 {
					addRev(b, OneToOne, path, at)
				} else {
					addRev(b, Same, path, at) // an alternative: accepted, not required
				}
			}
		case Fused, Experts:
			for _, b := range v.Accept {
				addRev(b, best.kind, path, at)
			}
		case Same:
			same := nd.find(best.into, bind)
			if len(same) != 1 {
				fail("%s: %s: same %s names %d NPU modules, want one", at, path, best.into.substitute(bind).text, len(same))
				continue
			}
			sames = append(sames, [2]string{path, same[0]})
		case Absorbed:
			if best.by {
				addRev(v.Accept[len(v.Accept)-1], Absorbed, path, at)
				break
			}
			into := nd.find(best.into, bind)
			if len(into) != 1 {
				fail("%s: %s: into %s names %d NPU modules, want one", at, path, best.into.substitute(bind).text, len(into))
				continue
			}
			for _, b := range v.Accept {
				addRev(b, Absorbed, into[0], at)
				addRev(b, Absorbed, path, at)
			}
		}
		l.Forward[path] = v
	}
	for _, x := range sames {
		v, other := l.Forward[x[0]], l.Forward[x[1]]
		if other.Kind != OneToOne {
			fail("%s: %s is the same as %s, which has no 1:1 partner (%s)", v.Rule, x[0], x[1], other.Kind)
			continue
		}
		v.Accept = other.Accept
		l.Forward[x[0]] = v
		reverse[other.Accept[0]].accept = append(reverse[other.Accept[0]].accept, x[0])
	}
	for j := range rules {
		if !rules[j].matched {
			fail("%s: rule %s matches no dumped NPU module", where(&rules[j]), rules[j].npu.text)
		}
	}
	for _, bp := range p.benchOn {
		got := bd.find(bp, nil)
		if len(got) == 0 {
			fail("%s: bench_only %s matches no dumped bench module", p.file, bp.text)
		}
		for _, b := range got {
			if x := reverse[b]; x != nil {
				fail("%s: bench_only %s: %s is already a partner (%s)", p.file, bp.text, b, x.rule)
				continue
			}
			reverse[b] = &rev{kind: None, rule: "truth.yaml bench_only"}
		}
	}
	for _, b := range bd.paths {
		x := reverse[b]
		if x == nil {
			fail("%s: bench module %s (%s) is nobody's partner and not in bench_only", p.file, b, bench.Lookup(b).Class)
			continue
		}
		l.Reverse[b] = Verdict{Kind: x.kind, Accept: x.accept, Rule: x.rule}
	}
	if len(errs) > 0 {
		sort.Strings(errs)
		return nil, fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return l, nil
}
