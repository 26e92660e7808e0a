package infer_test

// Acceptance tests of issue 3 on corpus pair A (Qwen2.5-VL, MindSpeed-MM vs
// LLaMA-Factory, testdata/corpus/prints):
//
//   (a) TestAcceptanceSeedLines: with --template none the draft reproduces at
//       least 90% of the seed template's lines exactly, in both directions,
//       and flags the TransformerLayer and MLP conflicts; with templates
//       (auto), 100%.
//   (b) TestAcceptanceGroundTruth: the default draft (templates on), applied
//       by package mapping's msprobe-exact resolver, pairs every NPU module
//       that has a true partner in testdata/groundtruth and none wrongly.
//       TestAcceptanceMsprobeDumps does the same on real msprobe dump folders.
//
// Counting the seed's lines. A seed line counts as reproduced when the draft
// holds the same class, key and value (as msprobe applies the draft: the
// effective rules of mapping.Mapping.Effective). The seed has one known-wrong
// line, MMGPTModel "output_layer: lm_head": it resolves to model.lm_head,
// which does not exist, because lm_head is a sibling of model on the bench
// side. It counts as reproduced-corrected when the draft has the right line
// instead, Float16Module "module.text_decoder.output_layer: lm_head", and
// the wrong line itself is absent; reproducing the wrong line counts as a
// miss. The seed's TransformerLayer block serves the vision tower only; a
// draft that resolves the vision/text conflict by keeping the class rule for
// the vision tower (16 layers, the group needing more lines) reproduces it
// exactly, and the text layers' escape lines are extra lines, which are not
// counted against the draft. The reverse seed has no wrong line (it lacks
// Qwen2MLP, which a draft may add).

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/layermap/layermap/mapping/resolve"
	"gopkg.in/yaml.v3"

	"github.com/layermap/layermap/infer"
	"github.com/layermap/layermap/mapping"
	"github.com/layermap/layermap/printparse"
	"github.com/layermap/layermap/printparse/testkit"
	"github.com/layermap/layermap/templates"
)

const (
	pairANPU   = "mindspeed/qwen2_5_vl_3b-vlmmodel-ddp-list__msprobe-docs-mindspeed-mm-qwen25vl.txt"
	pairABench = "hf/qwen2_5_vl_3b-old-layout-deepspeed__msprobe-docs-llamafactory-qwen25vl.txt"
	seedFwd    = "qwen2.5-vl_mindspeed-mm_to_llamafactory"
	seedRev    = "qwen2.5-vl_llamafactory_to_mindspeed-mm"
)

func loadPair(t testing.TB) (npu, bench *printparse.Tree) {
	t.Helper()
	load := func(rel string) *printparse.Tree {
		p := testkit.Corpus(t, "prints", rel)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatalf("corpus missing: %v", err)
		}
		tr, err := printparse.ParseText(b, p, printparse.Options{Index: -1})
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	return load(pairANPU), load(pairABench)
}

func suggest(t testing.TB, npu, bench *printparse.Tree, tmpl string) *infer.Result {
	t.Helper()
	r, err := infer.Suggest(npu, bench, infer.Options{Template: tmpl})
	if err != nil {
		t.Fatalf("Suggest(template %q): %v", tmpl, err)
	}
	if r.Forward.Mapping == nil || r.Reverse.Mapping == nil {
		t.Fatalf("Suggest(template %q): Mapping or Reverse missing", tmpl)
	}
	return r
}

type ruleKey struct{ class, key, value string }

func effective(m *mapping.Mapping) map[ruleKey]bool {
	out := map[ruleKey]bool{}
	for class, rules := range m.Effective() {
		for _, r := range rules {
			out[ruleKey{class, r.Key, r.Value}] = true
		}
	}
	return out
}

// knownWrong maps each known-wrong seed line to the line that corrects it.
var knownWrong = map[ruleKey]ruleKey{
	{"MMGPTModel", "output_layer", "lm_head"}: {"Float16Module", "module.text_decoder.output_layer", "lm_head"},
}

// reproduction counts how many of a seed's lines a draft reproduces.
type reproduction struct {
	total, exact, corrected int
	missing                 []string
}

func (r reproduction) share() float64 { return float64(r.exact+r.corrected) / float64(r.total) }

func (r reproduction) String() string {
	return fmt.Sprintf("%d of %d seed lines (%.1f%%: %d exact, %d reproduced-corrected)",
		r.exact+r.corrected, r.total, 100*r.share(), r.exact, r.corrected)
}

func reproduce(t testing.TB, seed string, draft *mapping.Mapping) reproduction {
	t.Helper()
	tp, err := templates.Get(seed)
	if err != nil {
		t.Fatal(err)
	}
	have := effective(draft)
	var r reproduction
	for _, l := range tp.Lines {
		r.total++
		k := ruleKey{l.Class, l.Key, l.Value}
		fix, wrong := knownWrong[k]
		switch {
		case wrong && have[fix] && !have[k]:
			r.corrected++
		case wrong:
			r.missing = append(r.missing, fmt.Sprintf("%s: %s: %s (known wrong; want %s: %s: %s instead)", l.Class, l.Key, l.Value, fix.class, fix.key, fix.value))
		case have[k]:
			r.exact++
		default:
			r.missing = append(r.missing, fmt.Sprintf("%s: %s: %s", l.Class, l.Key, l.Value))
		}
	}
	return r
}

func TestAcceptanceSeedLines(t *testing.T) {
	npu, bench := loadPair(t)
	tests := []struct {
		template string
		min      float64
	}{
		{infer.TemplateNone, 0.9},
		{infer.TemplateAuto, 1.0},
	}
	for _, tc := range tests {
		t.Run("template "+tc.template, func(t *testing.T) {
			r := suggest(t, npu, bench, tc.template)
			rev := suggest(t, bench, npu, tc.template)
			for _, d := range []struct {
				dir, seed string
				draft     *mapping.Mapping
			}{
				{"MindSpeed-MM -> LLaMA-Factory (Result.Forward.Mapping)", seedFwd, r.Forward.Mapping},
				{"LLaMA-Factory -> MindSpeed-MM (Result.Reverse.Mapping)", seedRev, r.Reverse.Mapping},
				{"LLaMA-Factory -> MindSpeed-MM (Suggest(hf, mindspeed).Forward.Mapping)", seedRev, rev.Forward.Mapping},
			} {
				got := reproduce(t, d.seed, d.draft)
				t.Logf("%s: %v", d.dir, got)
				if len(got.missing) > 0 {
					t.Logf("  not reproduced:\n  %s", strings.Join(got.missing, "\n  "))
				}
				if got.share() < tc.min {
					t.Errorf("%s: %v, want at least %.0f%%; not reproduced:\n  %s",
						d.dir, got, 100*tc.min, strings.Join(got.missing, "\n  "))
				}
			}
			flagged := map[string]bool{}
			for _, c := range r.Forward.Conflicts {
				flagged[c.Class] = true
			}
			for _, want := range []string{"TransformerLayer", "MLP"} {
				if !flagged[want] {
					t.Errorf("conflict on %s not flagged; conflicts: %v", want, classes(r.Forward.Conflicts))
				}
			}
		})
	}
}

func classes(cs []infer.Conflict) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Class)
	}
	return out
}

// groundTruth is testdata/groundtruth/qwen25vl_mindspeed-mm_vs_llamafactory.yaml
// (format and reasoning in its header).
type groundTruth struct {
	Modules map[string]struct {
		Bench   string `yaml:"bench"`
		Kind    string `yaml:"kind"`
		Partial string `yaml:"partial"`
	} `yaml:"modules"`
	BenchOnly []string `yaml:"bench_only"`
}

// verdict is an NPU module's true partner ("none" when it has none) and the
// N:1 stand-in it may be paired with without being wrong.
type verdict struct{ bench, partial, kind string }

func loadGroundTruth(t testing.TB) (forward, reverse map[string]verdict) {
	t.Helper()
	p := testkit.Testdata(t, "groundtruth", "qwen25vl_mindspeed-mm_vs_llamafactory.yaml")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var gt groundTruth
	if err := yaml.Unmarshal(b, &gt); err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	forward, reverse = map[string]verdict{}, map[string]verdict{}
	for npu, e := range gt.Modules {
		forward[npu] = verdict{e.Bench, e.Partial, e.Kind}
		switch {
		case e.Kind == "root": // the bench root is not a module to pair
		case e.Bench != "none":
			reverse[e.Bench] = verdict{bench: npu, kind: e.Kind}
		case e.Partial != "":
			reverse[e.Partial] = verdict{bench: "none", partial: npu}
		}
	}
	for _, b := range gt.BenchOnly {
		reverse[b] = verdict{bench: "none"}
	}
	return forward, reverse
}

// tally compares resolved pairs with the ground truth.
type tally struct {
	truePartners, paired, partial int
	missed, wrong                 []string
}

func (s tally) String() string {
	return fmt.Sprintf("%d of %d true partners paired (%.1f%%), %d wrong, %d partial N:1 pairs (tolerated)",
		s.paired, s.truePartners, 100*float64(s.paired)/float64(s.truePartners), len(s.wrong), s.partial)
}

func score(t testing.TB, truth map[string]verdict, pairs []resolve.NodePair) tally {
	t.Helper()
	var s tally
	seen := 0
	for _, p := range pairs {
		v, ok := truth[p.NPU.Path]
		if !ok {
			t.Fatalf("ground truth has no entry for NPU module %s (%s): update testdata/groundtruth", p.NPU.Path, p.NPU.Class)
		}
		seen++
		got := ""
		if p.Bench != nil {
			got = p.BenchPath
		}
		switch {
		case v.kind == "root":
		case v.bench != "none":
			s.truePartners++
			switch {
			case p.Bench != nil && got == v.bench:
				s.paired++
			case p.Bench != nil:
				s.wrong = append(s.wrong, fmt.Sprintf("%s -> %s, want %s", p.NPU.Path, got, v.bench))
			default:
				s.missed = append(s.missed, fmt.Sprintf("%s -> %s (no such bench module), want %s", p.NPU.Path, p.BenchPath, v.bench))
			}
		case p.Bench != nil && v.partial != "" && got == v.partial:
			s.partial++
		case p.Bench != nil:
			s.wrong = append(s.wrong, fmt.Sprintf("%s -> %s, want no partner", p.NPU.Path, got))
		}
	}
	if seen != len(truth) {
		t.Fatalf("resolver returned %d NPU modules, ground truth has %d", seen, len(truth))
	}
	return s
}

func TestAcceptanceGroundTruth(t *testing.T) {
	ms, hf := loadPair(t)
	forward, reverse := loadGroundTruth(t)
	tests := []struct {
		name     string
		template string
		required bool // issue 3 requires 100% and none wrong
	}{
		{"default draft", "", true},
		{"template none", infer.TemplateNone, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := suggest(t, ms, hf, tc.template)
			for _, d := range []struct {
				dir        string
				npu, bench *printparse.Tree
				m          *mapping.Mapping
				truth      map[string]verdict
			}{
				{"MindSpeed-MM -> LLaMA-Factory", ms, hf, r.Forward.Mapping, forward},
				{"LLaMA-Factory -> MindSpeed-MM (reverse)", hf, ms, r.Reverse.Mapping, reverse},
			} {
				s := score(t, d.truth, resolve.New(d.m).ResolveTree(d.npu, d.bench))
				t.Logf("%s, templates %q / %q: %v", d.dir, r.Forward.Template, r.Reverse.Template, s)
				if s.paired == s.truePartners && len(s.wrong) == 0 {
					continue
				}
				sort.Strings(s.missed)
				sort.Strings(s.wrong)
				msg := fmt.Sprintf("%s: %v\nmissed (%d):\n  %s\nwrong (%d):\n  %s", d.dir, s,
					len(s.missed), strings.Join(s.missed, "\n  "), len(s.wrong), strings.Join(s.wrong, "\n  "))
				if tc.required {
					t.Error(msg)
				} else {
					t.Log(msg)
				}
			}
		})
	}
}

// TestAcceptanceMsprobeDumps runs the same check on real msprobe dump
// folders of the two structures (2 vision + 2 text layers,
// testdata/corpus/msprobe/golden/qwen25vl_llamafactory_vs_mindspeed_reverse_template),
// read by printparse.Load: the default draft, applied by the resolver, pairs
// every dumped module that has a true partner and none wrongly, both ways.
func TestAcceptanceMsprobeDumps(t *testing.T) {
	dir := testkit.Corpus(t, "msprobe", "golden", "qwen25vl_llamafactory_vs_mindspeed_reverse_template")
	load := func(rel string) *printparse.Tree {
		tr, err := printparse.Load(filepath.Join(dir, rel), printparse.Options{Index: -1})
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	lf, ms := load("npu/proc12360"), load("bench/proc12353")
	forward, reverse := loadGroundTruth(t)
	r := suggest(t, ms, lf, infer.TemplateAuto)
	for _, d := range []struct {
		dir        string
		npu, bench *printparse.Tree
		m          *mapping.Mapping
		truth      map[string]verdict
	}{
		{"MindSpeed-MM -> LLaMA-Factory", ms, lf, r.Forward.Mapping, forward},
		{"LLaMA-Factory -> MindSpeed-MM (reverse)", lf, ms, r.Reverse.Mapping, reverse},
	} {
		pairs := resolve.New(d.m).ResolveTree(d.npu, d.bench)
		dumped := map[string]verdict{}
		for _, p := range pairs {
			v, ok := d.truth[p.NPU.Path]
			if !ok {
				t.Fatalf("%s: dumped module %s (%s) has no ground-truth entry", d.dir, p.NPU.Path, p.NPU.Class)
			}
			dumped[p.NPU.Path] = v
		}
		s := score(t, dumped, pairs)
		t.Logf("%s, templates %q / %q: %v", d.dir, r.Forward.Template, r.Reverse.Template, s)
		if s.paired != s.truePartners || len(s.wrong) != 0 || s.truePartners != 47 {
			t.Errorf("%s: %v (want 47 of 47)\nmissed:\n  %s\nwrong:\n  %s", d.dir, s,
				strings.Join(s.missed, "\n  "), strings.Join(s.wrong, "\n  "))
		}
	}
}
