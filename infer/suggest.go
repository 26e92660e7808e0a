// Package infer drafts msprobe's layer_mapping.yaml from two module trees:
// it aligns the NPU-side tree (whose classes key the YAML) with the bench
// side outside-in, emits the renames an expert would write, resolves the
// classes that need different renames in different places, and proves the
// draft by running msprobe's resolver (package resolve) over both trees.
//
// # Alignment
//
// The roots are aligned first. For every aligned pair, the children of both
// are aligned as an assignment problem (Kuhn-Munkres, so that one good pair
// cannot steal another's partner), where any module may be looked through —
// its children take its place — when that pairs more of the subtree: extra
// levels on one side (Float16Module's "module", Megatron's
// "language_model.embedding" against "embedding") become multi-level keys.
// A pair's worth is its local similarity plus the worth of the best
// alignment below it, so structure decides when names do not. Local
// similarity combines name tokens (split at "_", ".", digits and camelCase,
// with a synonym table: attn = attention = self_attn, fc1 = up = h_to_4h,
// norm = layernorm = ln, lm_head = output_layer, visual = image_encoder,
// merger = projector, model = language_model = text_decoder, qkv =
// query_key_value, ...; Levenshtein for near misses), class-name tokens,
// leaf kind, printed shapes, child and repeat counts, and the rank among
// siblings of the same kind. Minor modules (dropouts, activations,
// placeholders) never decide the structure. After the walk, modules left
// alone on both sides that are clearly the same module one level apart
// (output_layer inside the language model, lm_head beside it) are paired;
// their rule goes to the nearest ancestor whose partner contains the
// target. Everything is deterministic.
//
// The cost stays near-linear in the number of modules: list members of one
// structure (a repeat group, printed once or written out as older PyTorch,
// ModuleDict layers and dump folders do) are aligned once through their
// first member and the result applied to all; two lists pair their
// members by index; a large frontier weighs only sparse candidate pairs
// (shared names, classes or rare tokens, and a band around the diagonal)
// and solves each connected component alone.
//
// Structures that no 1:1 pair expresses are found and said: a module that
// computes a whole list of look-alikes at once (grouped experts) is N:1
// with the list and never paired with one member; norms applied inside a
// projection (Transformer Engine) are named with the linear that applies
// them and the placeholder left in their place.
//
// # Confidence
//
// Every pair and every drafted line carries a band: sure, check (a doubt:
// a small margin over the runner-up, a low score, an N:1 stand-in, sizes
// that differ) or unsure (only a template prior or the names pair it,
// dumped shapes cannot match, or msprobe pairs it by name though it has no
// partner). Sure needs structural evidence: a container's children pair
// beneath it, a leaf's partner is of its kind or prints its sizes, or it
// is the one child left beside paired siblings.
// When both inputs are msprobe dump folders, the dumped forward shapes and
// statistics confirm or veto pairs. calibration.go holds each band's
// precision on the labelled benchmark, which the report prints.
//
// # Emission and conflicts
//
// msprobe keys a rule by the class of the renamed child's parent. For every
// aligned pair, the rule sits at the nearest aligned ancestor (never a
// ModuleList, Sequential or ModuleDict: a rule there would fire at every
// such container) and says "child path: partner path" relative to the two.
// Identity needs no line. When a class's instances need different renames
// (MindSpeed-MM's vision and text TransformerLayer, or MLP in the layers and
// in the projector), the group of instances that would need the most lines
// keeps the class rule and every other instance escapes it through longer
// keys at its nearest aligned ancestor whose class occurs once — one line
// per list index inside a repeat group, identity lines included where the
// class rule would otherwise rename; an instance whose module has no
// partner where the class rule would pair it (a dense first layer's
// placeholder norm against the MoE layers' real one) escapes the rule with
// an identity key. The draft is then run through
// resolve.Resolver over both trees; every aligned pair it does not reproduce
// goes to the sidecar.
//
// # Sidecar
//
// Pairs no YAML can express are written as a YAML list of module paths,
// the format `layermap compare --pairs FILE` reads:
//
//	# pairs.yaml
//	- npu: 0.module.module.text_decoder.decoder.layers.0.self_attention
//	  bench: module.model.layers.0.self_attn
//
// Paths are full module paths as msprobe names them (list index first for
// a list of models), without the Module./Cell. prefix and class.
//
// # Manual matches
//
// Manual turns module pairs a user matched by hand (ParseManual reads the
// HTML view's manual_pairs.yaml and msprobe's .vis.config) into lines of a
// mapping at the same anchors the drafter uses, each proven with the
// resolver (it moves no other pair), and sidecar pairs where no line is
// sound.
package infer

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/layermap/layermap/mapping"
	"github.com/layermap/layermap/printparse"
	"github.com/layermap/layermap/templates"
)

// Template choices of Options.Template besides a template name.
const (
	TemplateAuto = "auto"
	TemplateNone = "none"
)

// Options tunes Suggest.
type Options struct {
	// Template is TemplateAuto (the default when empty: use the best
	// built-in template that applies), TemplateNone, or a template name
	// (see templates.Names).
	Template string
}

// Result is a drafted mapping in both directions with the evidence.
type Result struct {
	// Forward is keyed by NPU classes (NPU -> bench); Reverse by bench
	// classes (bench -> NPU), from the same alignment.
	Forward, Reverse Draft
	// Pairs are the aligned modules, outside-in (NPU pre-order), repeat
	// groups expanded.
	Pairs []Pair
	// Roots are the roots and the training engines set aside with them
	// (DistributedDataParallel = DeepSpeedEngine): paired, but no YAML line
	// names a root ("" is the root's path).
	Roots []Pair
	// Unmatched lists the modules without a partner; UnmatchedWhy says
	// why, by path (either side): an extra level looked through, a
	// placeholder, a layer index the other side lacks, a fused module.
	Unmatched    Unmatched
	UnmatchedWhy map[string]string
	// Coverage is the share of the NPU modules msprobe dumps that have a
	// partner: Counts.NPU.Coverage().
	Coverage float64
	// Counts are the figures every output states (see Counts).
	Counts Counts
	// parts are the N:1 group modules, per side, that Counts counts apart.
	parts [2]map[string]bool
	// TemplateUnapplied lists the template lines that did not apply to
	// these trees, with the reason.
	TemplateUnapplied []string
	// Warnings are things the user asked for that did not work out (a
	// forced template that does not fit these trees), one line each.
	Warnings []string
	// Structural notes fused and split modules (N:1 pairs), never hidden.
	Structural []string
	// NPUSource and BenchSource name the inputs.
	NPUSource, BenchSource string
}

// Draft is one direction's mapping: keyed by the classes of one side (the
// NPU side for Result.Forward, the bench side for Result.Reverse).
type Draft struct {
	// Mapping is the drafted layer_mapping.
	Mapping *mapping.Mapping
	// Template names the template used as a prior ("" for none).
	Template string
	// Conflicts are the key-side classes that need different renames in
	// different places, and how the draft resolves them.
	Conflicts []Conflict
	// Proven is the share of aligned key-side modules that msprobe's
	// resolver, given Mapping, sends to their partner.
	Proven float64
	// Sidecar holds the pairs Mapping cannot express.
	Sidecar []mapping.ModulePair
	// Unintended lists key-side modules without a partner that the
	// resolver, given Mapping, still pairs with some module of the other
	// side.
	Unintended []mapping.ModulePair
}

// Pair is one aligned pair of modules.
type Pair struct {
	// NPU and Bench are full module paths.
	NPU   string `json:"npu"`
	Bench string `json:"bench"`
	// NPUClass and BenchClass are the printed classes.
	NPUClass   string `json:"npu_class"`
	BenchClass string `json:"bench_class"`
	// Score is the local similarity in [0, 1]; Margin how much better it is
	// than the runner-up (the best other partner of either side).
	Score  float64 `json:"score"`
	Margin float64 `json:"margin"`
	// Reasons are codes: name, synonym, class, kind, shape, children,
	// repeat, template, leftover, root, and the structural evidence a
	// sure pair needs beyond kind and shape: subtree (the children pair
	// beneath), rest-paired (the one child left beside paired siblings),
	// args (the same printed arguments), rotary, kernel, group (an N:1
	// structure: grouped experts, a fused stand-in), dumps (both dump
	// folders' inputs and outputs agree).
	Reasons []string `json:"reasons"`
	// Band is the pair's confidence band (BandSure, BandCheck,
	// BandUnsure); Doubts say why it is not sure.
	Band   string   `json:"band"`
	Doubts []string `json:"doubts,omitempty"`
	// Structural notes an N:1 pair (fused on one side).
	Structural string `json:"structural,omitempty"`
	// Kind is the N:1 group the pair stands in for (mapping.KindGateUp,
	// KindExperts, ...; "" for a 1:1 pair); NPUParts or BenchParts lists
	// the group's many side in concatenation order (the stand-in partner
	// among them, or, for experts, the list's members). The drafts'
	// sidecars hold the group.
	Kind       string   `json:"kind,omitempty"`
	NPUParts   []string `json:"npu_parts,omitempty"`
	BenchParts []string `json:"bench_parts,omitempty"`
	// SizesDiffer says the two modules print different sizes (in and
	// out features, embedding count and dimension, normalized shape):
	// "NPU [256 64], bench [4096 1024]". Two runs of one model print the
	// same sizes; a difference means different configurations or a wrong
	// pair.
	SizesDiffer string `json:"sizes_differ,omitempty"`
	// Proven reports that the resolver, given Mapping, pairs them.
	Proven bool `json:"proven"`
}

// Unmatched lists modules without a partner, full paths in printed order.
type Unmatched struct {
	NPU   []string `json:"npu"`
	Bench []string `json:"bench"`
}

// Suggest aligns npu with bench and drafts the mapping in both directions.
func Suggest(npu, bench *printparse.Tree, opts Options) (*Result, error) {
	if npu == nil || bench == nil || npu.Root == nil || bench.Root == nil {
		return nil, errors.New("infer: both trees are needed")
	}
	r := &Result{NPUSource: npu.Source, BenchSource: bench.Source}
	tc, err := chooseTemplates(npu, bench, opts.Template)
	if err != nil {
		return nil, err
	}
	al := alignWith(npu, bench, tc)
	if tc.dropContradicted(al) {
		al = alignWith(npu, bench, tc)
	}
	r.Warnings = tc.warnings
	notes := structuralNotes(al)
	for _, m := range al.pairs {
		if da, db := al.npu.infos[m.a].dims, al.bench.infos[m.b].dims; !m.rootish && len(da) > 0 && len(db) > 0 && !slices.Equal(da, db) {
			m.sizeA, m.sizeB = da, db
		}
	}
	if npu.Kind == printparse.KindMsprobe && bench.Kind == printparse.KindMsprobe {
		var eb map[string]*moduleIO
		var errB error
		done := make(chan struct{})
		go func() {
			eb, errB = dumpEvidence(bench)
			close(done)
		}()
		ea, err := dumpEvidence(npu)
		<-done
		if err = errors.Join(err, errB); err == nil {
			al.weighEvidence(ea, eb)
		} else {
			r.Warnings = append(r.Warnings, "no dumped shapes weighed: "+err.Error())
		}
	}
	al.assignBands()
	r.TemplateUnapplied = tc.explain(al)
	drafts := [2]*draft{}
	for _, s := range []side{npuSide, benchSide} {
		drafts[s] = emit(newView(al, s), tc.m[s], header(al.tree(s).tree, al.tree(s.other()).tree, tc.m[s], s))
	}
	r.Forward, r.Reverse = drafts[npuSide].result(tc.m[npuSide]), drafts[benchSide].result(tc.m[benchSide])
	defer func() {
		for _, d := range []*Draft{&r.Forward, &r.Reverse} {
			d.Mapping.Header += draftNotes(al, d.Unintended, r.UnmatchedWhy)
		}
	}()
	r.Structural = notes
	matched := 0 // pairs below the roots
	for _, m := range al.pairs {
		if m.a.Parent == nil || m.b.Parent == nil && m.rootish {
			if m.rootish {
				r.Roots = append(r.Roots, Pair{NPU: m.a.Path, Bench: m.b.Path, NPUClass: rootClassOf(npu, m.a), BenchClass: rootClassOf(bench, m.b),
					Score: 1, Margin: 1, Reasons: []string{"root"}, Band: BandSure, Proven: true})
			}
			continue
		}
		matched++
		var kind string
		var parts [2][]string
		if g := m.group; g != nil {
			kind = g.kind
			for _, x := range g.members {
				parts[g.one.other()] = append(parts[g.one.other()], x.Path)
			}
		}
		r.Pairs = append(r.Pairs, Pair{Kind: kind, NPUParts: parts[npuSide], BenchParts: parts[benchSide],
			NPU: m.a.Path, Bench: m.b.Path, NPUClass: m.a.Class, BenchClass: m.b.Class,
			Score: round(m.score), Margin: round(m.margin), Reasons: m.reasons,
			Band: m.band, Doubts: m.doubts, Structural: m.structural[npuSide], SizesDiffer: sizesDiffer(m, npuSide),
			Proven: drafts[npuSide].proven[m.a],
		})
	}
	r.Forward.Proven, r.Reverse.Proven = 1, 1 // nothing to prove
	if matched > 0 {
		r.Forward.Proven = float64(len(drafts[npuSide].proven)) / float64(matched)
		r.Reverse.Proven = float64(len(drafts[benchSide].proven)) / float64(matched)
	}
	r.UnmatchedWhy = map[string]string{}
	for _, n := range al.npu.nodes[1:] {
		if al.byA[n] == nil {
			r.Unmatched.NPU = append(r.Unmatched.NPU, n.Path)
			r.UnmatchedWhy[n.Path] = al.whyUnmatched(n, npuSide)
		}
	}
	for _, n := range al.bench.nodes[1:] {
		if al.byB[n] == nil {
			r.Unmatched.Bench = append(r.Unmatched.Bench, n.Path)
			r.UnmatchedWhy[n.Path] = al.whyUnmatched(n, benchSide)
		}
	}
	r.parts = al.groupParts()
	r.recount(npu, bench)
	return r, nil
}

// recount sets Counts and Coverage from Pairs.
func (r *Result) recount(npu, bench *printparse.Tree) {
	r.Counts = count(npu, bench, r.Pairs, r.Roots, r.parts)
	r.Coverage = r.Counts.NPU.Coverage()
}

// draftNotes are the draft header's last lines: what no line can say.
// Norms one side applies inside a projection have no partner; modules
// without a partner that msprobe still pairs by name are unsure.
func draftNotes(al *alignment, unintended []mapping.ModulePair, why map[string]string) string {
	var b strings.Builder
	if fs := al.fusedNorms(); len(fs) > 0 {
		b.WriteString("\n\nNorms applied inside a projection (no line pairs them; the projection's input is the un-normalised one):")
		for _, f := range fs {
			fmt.Fprintf(&b, "\n  %s (%s) applies %s (%s)", displayGroup(f.linear), f.linear.Class, displayGroup(f.norm), f.norm.Class)
			if f.placeholder != nil {
				fmt.Fprintf(&b, "; %s (%s) is its placeholder", displayGroup(f.placeholder), f.placeholder.Class)
			}
		}
	}
	if ls := unintendedLines(unintended, why); len(ls) > 0 {
		b.WriteString("\n\nUNSURE, msprobe pairs these by name though they have no partner (no line can stop it):")
		for _, l := range ls {
			b.WriteString("\n  " + l)
		}
	}
	return b.String()
}

// sizesDiffer words a pair's differing printed sizes ("" when they agree
// or one side prints none) for the draft keyed by side keys: its sizes
// first, worded "NPU" (the draft's -tp side), the other side's as "bench".
func sizesDiffer(m *match, keys side) string {
	if m.sizeA == nil {
		return ""
	}
	a, b := m.sizeA, m.sizeB
	if keys == benchSide {
		a, b = b, a
	}
	return fmt.Sprintf("NPU %v, bench %v", a, b)
}

func round(x float64) float64 { return float64(int(x*1000+0.5)) / 1000 }

// header is the comment on top of the draft keyed by side keys, whose
// tree is npu (the draft's -tp side).
func header(npu, bench *printparse.Tree, tm *templates.Match, keys side) string {
	var b strings.Builder
	b.WriteString("Drafted by layermap suggest from two model structures")
	if keys == benchSide {
		b.WriteString(" (reverse draft: the suggest run's bench side keys it)")
	}
	b.WriteString(".\n")
	fmt.Fprintf(&b, "NPU side (-tp, its classes key this file): %s (root %s)\n", filepath.Base(npu.Source), rootClass(npu))
	fmt.Fprintf(&b, "bench side (-gp): %s (root %s)\n", filepath.Base(bench.Source), rootClass(bench))
	if tm != nil {
		fmt.Fprintf(&b, "Template prior: %s\n", tm.Template.Name)
	} else {
		b.WriteString("Template prior: none\n")
	}
	b.WriteString("Each line says its alignment score, margin over the runner-up and reasons;\n")
	b.WriteString("each starts with its confidence band: sure (the structures agree: children, kind\n")
	b.WriteString("or sizes), CHECK (look before trusting its rows) or UNSURE (nothing but a prior or\n")
	b.WriteString("a name supports it). A line starting \"no partner:\" pairs nothing on purpose: msprobe\n")
	b.WriteString("leaves a module whose target is missing unmatched. Identity needs no line.")
	return b.String()
}

func rootClassOf(t *printparse.Tree, n *printparse.Node) string {
	if n.Parent == nil {
		return rootClass(t)
	}
	return n.Class
}

func rootClass(t *printparse.Tree) string {
	if t.Root.Class != "" {
		return t.Root.Class
	}
	if t.Kind == printparse.KindMsprobe {
		return "msprobe dump"
	}
	if len(t.Root.Children) > 0 && t.Root.Children[0].Class != "" {
		return "[" + t.Root.Children[0].Class + "]"
	}
	return "list of models"
}
