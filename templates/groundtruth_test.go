package templates

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/layermap/layermap/mapping/resolve"
	"github.com/layermap/layermap/mapping/truth"
	"gopkg.in/yaml.v3"

	"github.com/layermap/layermap/mapping"
	"github.com/layermap/layermap/printparse"
	"github.com/layermap/layermap/printparse/testkit"
)

// pairA reads the ground truth of corpus pair A (Qwen2.5-VL, MindSpeed-MM
// vs LLaMA-Factory) from the labelled benchmark; dumps selects the pair's
// msprobe dump folders (2 vision + 2 text layers) instead of its prints.
func pairA(t testing.TB, dumps bool) *truth.Pair {
	t.Helper()
	name := "qwen25vl_mindspeed-mm_vs_llamafactory"
	if dumps {
		name = "qwen25vl-2x2-dumps_mindspeed-mm_vs_llamafactory"
	}
	p, err := truth.Read(testkit.Testdata(t, "benchmark", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// standins counts the N:1 modules paired with an acceptable stand-in.
func standins(s *truth.Score) int {
	n := 0
	for _, k := range truth.PartialKinds {
		n += s.N1Standin[k]
	}
	return n
}

// linesMapping is the layer_mapping holding lines.
func linesMapping(lines []Line) *mapping.Mapping {
	m := mapping.New()
	for _, l := range lines {
		m.Add(l.Class, l.Key, l.Value, "")
	}
	return m
}

// resolveLines runs msprobe-exact resolution of lines on the pair.
func resolveLines(lines []Line, npu, bench *printparse.Tree) []resolve.NodePair {
	return resolve.New(linesMapping(lines)).ResolveTree(npu, bench)
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

// TestTemplatesAgainstGroundTruth measures the seed and expert templates
// with the msprobe-exact resolver of package mapping against the labelled
// benchmark (package truth scores every module msprobe would dump). The
// seed reproduces msprobe's worked example on 2 vision + 2 text layers;
// the expert templates pair every true partner and nothing wrongly. The
// stand-ins are the gated MLPs' linear_fc1 paired with up_proj.
func TestTemplatesAgainstGroundTruth(t *testing.T) {
	tests := []struct {
		name, template string
		reverse        bool
		layers         int // 0: the full pair; n: cut to n layers per tower
		correct, total int // 1:1 partners paired, of
		standin        int
		missing        []string // every missed NPU module must contain one of these
	}{
		// 36 + 4 stand-ins + the 2 layer lists (never dumped) = 42 of 45 +
		// 4 + 2 = 51: msprobe's worked example.
		{"seed on msprobe's 2+2 cut", "qwen2.5-vl_mindspeed-mm_to_llamafactory", false, 2, 36, 45, 4,
			[]string{"text_decoder.decoder.layers.", "text_decoder.output_layer"}},
		{"seed", "qwen2.5-vl_mindspeed-mm_to_llamafactory", false, 0, 199 - 33, 199, 24,
			[]string{"text_decoder.decoder.layers.", "text_decoder.output_layer"}},
		{"expert", "qwen2.5-vl_mindspeed-mm_to_llamafactory-expert", false, 0, 199, 199, 24, nil},
		{"expert on the 2+2 cut", "qwen2.5-vl_mindspeed-mm_to_llamafactory-expert", false, 2, 45, 45, 4, nil},
		{"reverse seed", "qwen2.5-vl_llamafactory_to_mindspeed-mm", true, 0, 199 - 8, 199, 16,
			[]string{"mlp.down_proj"}},
		{"reverse expert", "qwen2.5-vl_llamafactory_to_mindspeed-mm-expert", true, 0, 199, 199, 24, nil},
	}
	pair := pairA(t, false)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tp, err := Get(tc.template)
			if err != nil {
				t.Fatal(err)
			}
			ms, hf := msMM(t), hfOld(t)
			if tc.layers > 0 {
				ms, hf = cut(ms, tc.layers), cut(hf, tc.layers)
			}
			labels, err := pair.Labels(ms, hf)
			if err != nil {
				t.Fatal(err)
			}
			npu, bench, verdicts := ms, hf, labels.Forward
			if tc.reverse {
				npu, bench, verdicts = hf, ms, labels.Reverse
			}
			s, err := truth.Evaluate(verdicts, truth.Resolve(linesMapping(tp.Expand(npu)), npu, bench, nil))
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: %d of %d 1:1 partners paired, %d wrong, %d spurious, %d N:1 stand-ins", tp.Name, s.Correct, s.OneToOne, s.Wrong, s.Spurious, standins(s))
			if s.Correct != tc.correct || s.OneToOne != tc.total || standins(s) != tc.standin || s.Wrong+s.Spurious != 0 {
				t.Errorf("%d of %d, %d stand-ins; want %d of %d, %d stand-ins, none wrong\nmissed:\n  %s\nwrong:\n  %s",
					s.Correct, s.OneToOne, standins(s), tc.correct, tc.total, tc.standin,
					strings.Join(s.Misses, "\n  "), strings.Join(s.Errors, "\n  "))
			}
			for _, m := range s.Misses {
				npu, _, _ := strings.Cut(m, " -> ")
				ok := false
				for _, p := range tc.missing {
					ok = ok || strings.Contains(npu, p)
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
// (testdata/corpus/msprobe/golden/qwen25vl_llamafactory_vs_mindspeed_reverse_template,
// the same dumps as the benchmark's qwen25vl-2x2-dumps pair).
// Every module msprobe pairs must be the ground truth's partner (or an N:1
// stand-in), and every true partner msprobe misses must be one the reverse
// seed is known to miss (the text MLP's down_proj: no Qwen2MLP block).
func TestGroundTruthAgainstMsprobe(t *testing.T) {
	pair := pairA(t, true)
	ms, lf, err := pair.Trees()
	if err != nil {
		t.Fatal(err)
	}
	labels, err := pair.Labels(ms, lf)
	if err != nil {
		t.Fatal(err)
	}
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
	paired := map[string]string{} // LLaMA-Factory module -> the MindSpeed-MM module msprobe pairs it with
	for npuName, benchName := range api {
		npu, ok := modulePath(npuName)
		if !ok {
			continue // API items
		}
		if _, ok := labels.Reverse[npu]; !ok {
			t.Errorf("msprobe dumped %s, which the ground truth does not know", npu)
		}
		if bench, ok := modulePath(benchName); ok {
			paired[npu] = bench
		}
	}
	var resolved []truth.Resolved
	for npu := range labels.Reverse {
		resolved = append(resolved, truth.Resolved{NPU: npu, Bench: paired[npu]})
	}
	s, err := truth.Evaluate(labels.Reverse, resolved)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("msprobe with the reverse seed: %d of %d 1:1 partners, %d N:1 stand-ins; missed %v", s.Correct, s.OneToOne, standins(s), s.Misses)
	if len(s.Errors) > 0 {
		t.Errorf("msprobe and the ground truth disagree:\n  %s", strings.Join(s.Errors, "\n  "))
	}
	for _, m := range s.Misses {
		if npu, _, _ := strings.Cut(m, " "); !strings.HasPrefix(npu, "module.model.layers.") || !strings.HasSuffix(npu, ".mlp.down_proj") {
			t.Errorf("msprobe misses true partner %s, which the seed was not known to miss", m)
		}
	}
	if s.OneToOne != 47 || s.Correct != 45 || standins(s) != 2 {
		t.Errorf("%d of %d, %d stand-ins; want 45 of 47 and 2 stand-ins (the vision up_proj)", s.Correct, s.OneToOne, standins(s))
	}
}
