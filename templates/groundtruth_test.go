package templates

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/layermap/layermap/mapping/resolve"
	"gopkg.in/yaml.v3"

	"github.com/layermap/layermap/mapping"
	"github.com/layermap/layermap/printparse"
	"github.com/layermap/layermap/printparse/testkit"
)

// groundTruth is testdata/groundtruth/qwen25vl_mindspeed-mm_vs_llamafactory.yaml.
type groundTruth struct {
	Modules map[string]struct {
		Bench   string `yaml:"bench"`
		Kind    string `yaml:"kind"`
		Partial string `yaml:"partial"`
	} `yaml:"modules"`
	BenchOnly []string `yaml:"bench_only"`
}

const none = "none"

func loadGroundTruth(t testing.TB) *groundTruth {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "..", "testdata", "groundtruth", "qwen25vl_mindspeed-mm_vs_llamafactory.yaml")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var gt groundTruth
	if err := yaml.Unmarshal(b, &gt); err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	return &gt
}

// verdict maps an NPU path to its true partner ("none" when it has none),
// and the N:1 stand-in a tool may pair it with without being wrong.
type verdict struct{ bench, partial, kind string }

// forward and reverse return the ground truth keyed by the NPU side of each
// direction: forward has MindSpeed-MM as NPU, reverse LLaMA-Factory.
func (gt *groundTruth) forward() map[string]verdict {
	out := map[string]verdict{}
	for npu, e := range gt.Modules {
		out[npu] = verdict{e.Bench, e.Partial, e.Kind}
	}
	return out
}

func (gt *groundTruth) reverse() map[string]verdict {
	out := map[string]verdict{}
	for npu, e := range gt.Modules {
		switch {
		case e.Kind == "root":
			// The bench root is the tree root: not a module to pair.
		case e.Bench != none:
			out[e.Bench] = verdict{bench: npu, kind: e.Kind}
		case e.Partial != "":
			out[e.Partial] = verdict{bench: none, partial: npu}
		}
	}
	for _, b := range gt.BenchOnly {
		out[b] = verdict{bench: none}
	}
	return out
}

// tally is how a set of resolved node pairs compares to the ground truth.
type tally struct {
	truePartners, paired, partial, roots int
	missed, wrong                        []string
}

func (s tally) String() string {
	return fmt.Sprintf("%d of %d true partners paired, %d wrong, %d partial (tolerated)", s.paired, s.truePartners, len(s.wrong), s.partial)
}

// score compares resolver output with the ground truth of that direction.
func score(t testing.TB, truth map[string]verdict, pairs []resolve.NodePair) tally {
	t.Helper()
	var s tally
	seen := map[string]bool{}
	for _, p := range pairs {
		seen[p.NPU.Path] = true
		v, ok := truth[p.NPU.Path]
		if !ok {
			t.Fatalf("ground truth has no entry for NPU module %s", p.NPU.Path)
		}
		got := ""
		if p.Bench != nil {
			got = p.BenchPath
		}
		switch {
		case v.kind == "root":
			s.roots++
		case v.bench != none:
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
	if len(seen) != len(truth) {
		var extra []string
		for k := range truth {
			if !seen[k] {
				extra = append(extra, k)
			}
		}
		sort.Strings(extra)
		t.Fatalf("ground truth lists %d modules the tree lacks: %v", len(extra), extra)
	}
	return s
}

// resolveLines runs msprobe-exact resolution of lines on the pair.
func resolveLines(lines []Line, npu, bench *printparse.Tree) []resolve.NodePair {
	m := mapping.New()
	for _, l := range lines {
		m.Add(l.Class, l.Key, l.Value, "")
	}
	return resolve.New(m).ResolveTree(npu, bench)
}

// cut keeps the first n layers of every ModuleList, the way
// msprobe's worked example cut both models to 2 vision and 2 text layers.
func cut(tr *printparse.Tree, n int) *printparse.Tree {
	tr.Walk(func(x *printparse.Node) bool {
		var kept []*printparse.Node
		for _, c := range x.Children {
			if x.Class != "ModuleList" || !isIndex(c.Name) || len(kept) < n {
				kept = append(kept, c)
			}
		}
		x.Children = kept
		return true
	})
	return tr
}

func restrict(truth map[string]verdict, tr *printparse.Tree) map[string]verdict {
	out := map[string]verdict{}
	tr.Walk(func(n *printparse.Node) bool {
		if n != tr.Root {
			out[n.Path] = truth[n.Path]
		}
		return true
	})
	return out
}

// TestGroundTruthConsistent checks the hand-written ground truth against
// the two trees: every NPU module has exactly one entry, every named bench
// module exists and is named once, and every bench module is accounted for.
func TestGroundTruthConsistent(t *testing.T) {
	gt := loadGroundTruth(t)
	ms, hf := msMM(t), hfOld(t)
	npuCount := 0
	ms.Walk(func(n *printparse.Node) bool {
		if n != ms.Root {
			npuCount++
			if _, ok := gt.Modules[n.Path]; !ok {
				t.Errorf("no entry for NPU module %s (%s)", n.Path, n.Class)
			}
		}
		return true
	})
	if len(gt.Modules) != npuCount {
		t.Errorf("%d entries for %d NPU modules", len(gt.Modules), npuCount)
	}
	named := map[string]string{}
	counts := map[string]int{}
	name := func(b, by string) {
		if hf.Lookup(b) == nil {
			t.Errorf("%s: bench module %q does not exist", by, b)
		}
		if prev, dup := named[b]; dup {
			t.Errorf("bench module %q named by %s and %s", b, prev, by)
		}
		named[b] = by
	}
	for npu, e := range gt.Modules {
		switch {
		case e.Kind == "root":
			counts["root"]++
			name(e.Bench, npu)
		case e.Bench != none:
			counts["true"]++
			name(e.Bench, npu)
		default:
			counts["none"]++
			if e.Partial != "" {
				counts["partial"]++
				name(e.Partial, npu)
			}
		}
	}
	for _, b := range gt.BenchOnly {
		name(b, "bench_only")
	}
	hf.Walk(func(n *printparse.Node) bool {
		if _, ok := named[n.Path]; !ok {
			t.Errorf("bench module %s (%s) neither paired nor in bench_only", n.Path, n.Class)
		}
		return true
	})
	want := map[string]int{"true": 201, "root": 1, "none": 230, "partial": 24}
	if fmt.Sprint(counts) != fmt.Sprint(want) {
		t.Errorf("counts %v, want %v as the file's header says", counts, want)
	}
}

// TestTemplatesAgainstGroundTruth measures the seed and expert templates
// with the msprobe-exact resolver of package mapping. The seed reproduces
// msprobe's worked example (42 of 51 pairs on 2 vision + 2 text layers);
// the expert templates pair every true partner and nothing wrongly.
func TestTemplatesAgainstGroundTruth(t *testing.T) {
	gt := loadGroundTruth(t)
	tests := []struct {
		name, template string
		reverse        bool
		layers         int // 0: the full pair; n: cut to n layers per tower
		paired, total  int
		partial        int
		missPrefixes   []string // every miss must contain one of these
	}{
		// 38 + 4 partial = 42 of 47 + 4 = 51: msprobe's worked example.
		{"seed on msprobe's 2+2 cut", "qwen2.5-vl_mindspeed-mm_to_llamafactory", false, 2, 38, 47, 4,
			[]string{"text_decoder.decoder.layers.", "text_decoder.output_layer"}},
		{"seed", "qwen2.5-vl_mindspeed-mm_to_llamafactory", false, 0, 201 - 33, 201, 24,
			[]string{"text_decoder.decoder.layers.", "text_decoder.output_layer"}},
		{"expert", "qwen2.5-vl_mindspeed-mm_to_llamafactory-expert", false, 0, 201, 201, 24, nil},
		{"expert on the 2+2 cut", "qwen2.5-vl_mindspeed-mm_to_llamafactory-expert", false, 2, 47, 47, 4, nil},
		{"reverse seed", "qwen2.5-vl_llamafactory_to_mindspeed-mm", true, 0, 201 - 8, 201, 16,
			[]string{"mlp.down_proj"}},
		{"reverse expert", "qwen2.5-vl_llamafactory_to_mindspeed-mm-expert", true, 0, 201, 201, 24, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tp, err := Get(tc.template)
			if err != nil {
				t.Fatal(err)
			}
			npu, bench, truth := msMM(t), hfOld(t), gt.forward()
			if tc.reverse {
				npu, bench, truth = bench, npu, gt.reverse()
			}
			if tc.layers > 0 {
				npu, bench = cut(npu, tc.layers), cut(bench, tc.layers)
				truth = restrict(truth, npu)
			}
			s := score(t, truth, resolveLines(tp.Expand(npu), npu, bench))
			t.Logf("%s: %v", tp.Name, s)
			if s.paired != tc.paired || s.truePartners != tc.total || s.partial != tc.partial || len(s.wrong) != 0 {
				t.Errorf("%v; want %d of %d, 0 wrong, %d partial\nmissed:\n  %s\nwrong:\n  %s", s, tc.paired, tc.total, tc.partial,
					strings.Join(s.missed, "\n  "), strings.Join(s.wrong, "\n  "))
			}
			for _, m := range s.missed {
				ok := false
				for _, p := range tc.missPrefixes {
					ok = ok || strings.Contains(m, p)
				}
				if !ok {
					t.Errorf("unexpected miss %s", m)
				}
			}
		})
	}
}

// TestApplyAgreesWithResolver cross-checks Apply's rewriting with package
// mapping's msprobe-exact resolver: every hit and miss Apply reports must be
// the bench path the resolver gives that NPU module.
func TestApplyAgreesWithResolver(t *testing.T) {
	for _, tc := range applyCases() {
		t.Run(tc.golden, func(t *testing.T) {
			npu, bench := tc.npu(t), tc.bench(t)
			tp := tc.get(t, npu, bench)
			want := map[string]string{}
			for _, p := range resolveLines(tp.Expand(npu), npu, bench) {
				want[p.NPU.Path] = p.BenchPath
			}
			applied, _ := tp.Apply(npu, bench)
			n := 0
			for _, a := range applied {
				for _, h := range append(append([]Hit(nil), a.Hits...), a.Misses...) {
					n++
					if want[h.NPU] != h.Bench {
						t.Errorf("%s: Apply says %s -> %s, resolver %s", a.Line, h.NPU, h.Bench, want[h.NPU])
					}
				}
			}
			if n == 0 {
				t.Fatal("nothing applied")
			}
		})
	}
}

// TestTemplatesLoadInMapping checks that every template is a layer_mapping
// msprobe accepts as written: package mapping's PyYAML-faithful loader reads
// the same lines and reports nothing.
func TestTemplatesLoadInMapping(t *testing.T) {
	for _, tp := range All() {
		m, diags, err := mapping.Parse(tp.Text, tp.File)
		if err != nil {
			t.Errorf("%s: %v", tp.Name, err)
			continue
		}
		for _, d := range diags {
			t.Errorf("%s: %v", tp.Name, d)
		}
		var got []string
		for _, r := range m.Rules() {
			got = append(got, fmt.Sprintf("%s: %s -> %s", r.Class.Class, r.Key, r.Value))
		}
		var want []string
		for _, l := range tp.Lines {
			want = append(want, l.String())
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s: mapping reads\n%s\nwant\n%s", tp.Name, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

// TestGroundTruthAgainstMsprobe checks the ground truth against msprobe's
// own output: real msprobe dumps of the two structures (2 vision + 2 text
// layers, LLaMA-Factory as NPU) and the api_mapping msprobe computed with the
// seed's LLaMA-Factory -> MindSpeed-MM template
// (testdata/corpus/msprobe/golden/qwen25vl_llamafactory_vs_mindspeed_reverse_template).
// Every module msprobe pairs must be the ground truth's partner (or its
// partial stand-in), and every true partner msprobe misses must be one the
// reverse seed is known to miss (the text MLP's down_proj: no Qwen2MLP block).
func TestGroundTruthAgainstMsprobe(t *testing.T) {
	truth := loadGroundTruth(t).reverse()
	b, err := os.ReadFile(testkit.Corpus(t, "msprobe", "golden", "qwen25vl_llamafactory_vs_mindspeed_reverse_template", "output", "api_mapping.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var api map[string]string
	if err := yaml.Unmarshal(b, &api); err != nil {
		t.Fatal(err)
	}
	// modulePath turns "Module.a.b.Class.forward.0" into "a.b".
	modulePath := func(name string) (string, bool) {
		segs := strings.Split(name, ".")
		if len(segs) < 5 || segs[0] != "Module" || segs[len(segs)-2] != "forward" {
			return "", false
		}
		return strings.Join(segs[1:len(segs)-3], "."), true
	}
	var s tally
	for npuName, benchName := range api {
		npu, ok := modulePath(npuName)
		if !ok {
			continue // API items
		}
		v, ok := truth[npu]
		if !ok {
			t.Errorf("msprobe dumped %s, which the ground truth does not know", npu)
			continue
		}
		bench, paired := modulePath(benchName)
		switch {
		case v.bench != none:
			s.truePartners++
			switch {
			case paired && bench == v.bench:
				s.paired++
			case paired:
				s.wrong = append(s.wrong, fmt.Sprintf("%s: msprobe %s, ground truth %s", npu, bench, v.bench))
			default:
				s.missed = append(s.missed, npu)
			}
		case paired && bench == v.partial:
			s.partial++
		case paired:
			s.wrong = append(s.wrong, fmt.Sprintf("%s: msprobe pairs it with %s, ground truth: no partner", npu, bench))
		}
	}
	sort.Strings(s.missed)
	t.Logf("msprobe with the reverse seed: %v; missed %v", s, s.missed)
	if len(s.wrong) > 0 {
		t.Errorf("msprobe and the ground truth disagree:\n  %s", strings.Join(s.wrong, "\n  "))
	}
	for _, m := range s.missed {
		if !strings.HasPrefix(m, "module.model.layers.") || !strings.HasSuffix(m, ".mlp.down_proj") {
			t.Errorf("msprobe misses true partner %s, which the seed was not known to miss", m)
		}
	}
	if s.truePartners != 47 || s.paired != 45 || s.partial != 2 {
		t.Errorf("%v; want 45 of 47 and 2 partial (the vision up_proj)", s)
	}
}
