package templates

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/layermap/layermap/mapping/truth"
	"github.com/layermap/layermap/printparse"
	"github.com/layermap/layermap/printparse/testkit"
	"github.com/layermap/layermap/printparse/treetest"
)

// loadPrint parses a print(model) file of the corpus.
func loadPrint(t testing.TB, rel string) *printparse.Tree {
	t.Helper()
	return treetest.Load(t, testkit.Corpus(t, "prints", rel))
}

const (
	pairANPU   = "mindspeed/qwen2_5_vl_3b-vlmmodel-ddp-list__msprobe-docs-mindspeed-mm-qwen25vl.txt"
	pairABench = "hf/qwen2_5_vl_3b-old-layout-deepspeed__msprobe-docs-llamafactory-qwen25vl.txt"
	newLayout  = "hf/qwen2_5_vl_3b-new-layout-model.visual-model.language_model__inspect-model-script-anon.txt"
	newLayout1 = "hf/qwen2_5_vl_3b-new-layout-1-layer-missing-final-paren__quic-efficient-transformers-test_subfunction_vlm.txt"
	qwen25New  = "hf/qwen2_5_7b_instruct__qwrdxer-blog-qwen2.5-7b-lora-peft.txt"
	qwen2Sdpa  = "hf/qwen2_7b_instruct__retruth-deontic-nlp_models-qwen2-README.txt"
	tinyGPT    = "megatron/tiny_gpt-gptmodel-local-spec-fusedlayernorm__mindspeed-tutorial-anon.txt"
)

// wrap puts t's root under new wrapper levels, outermost first, each
// holding the next as child "module" (the last holds the old root). A
// wrapper class "" with name "list" makes a synthetic list root whose
// child "0" is the next level, as printparse builds for "[DDP(...)]".
func wrap(t *printparse.Tree, classes ...string) *printparse.Tree {
	inner := t.Root
	for i := len(classes) - 1; i >= 0; i-- {
		n := &printparse.Node{Class: classes[i]}
		name := "module"
		if classes[i] == "" {
			name = "0"
		}
		inner.Name = name
		inner.Parent = n
		n.Children = []*printparse.Node{inner}
		inner = n
	}
	inner.Name = ""
	var repath func(n *printparse.Node)
	repath = func(n *printparse.Node) {
		for _, c := range n.Children {
			if n.Path == "" {
				c.Path = c.Name
			} else {
				c.Path = n.Path + "." + c.Name
			}
			repath(c)
		}
	}
	inner.Path = ""
	repath(inner)
	return &printparse.Tree{Source: t.Source, Kind: t.Kind, Root: inner, List: classes[0] == ""}
}

func TestAllTemplates(t *testing.T) {
	ts := All()
	if len(ts) < 10 {
		t.Fatalf("All() = %d templates, want at least the 4 seeds and 6 Qwen2.5 expert templates", len(ts))
	}
	seeds := 0
	for _, tp := range ts {
		if tp.NPUFramework == "" || tp.BenchFramework == "" || tp.Description == "" || tp.Provenance == "" {
			t.Errorf("%s: incomplete header %+v", tp.Name, tp)
		}
		got, err := Get(tp.Name + ".yaml")
		if err != nil || got.Name != tp.Name {
			t.Errorf("Get(%q) = %v, %v", tp.Name, got, err)
		}
		switch tp.Kind {
		case KindSeed:
			seeds++
			want, err := os.ReadFile(testkit.SeedTemplate(t, tp.Name))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(tp.Verbatim(), want) {
				t.Errorf("%s: seed part differs from testdata/seed-templates/%s.yaml", tp.Name, tp.Name)
			}
		case KindExpert:
			if tp.Corrects == "" {
				break // written from conversion tables, not a seed's correction
			}
			if _, err := Get(tp.Corrects); err != nil {
				t.Errorf("%s corrects %q: %v", tp.Name, tp.Corrects, err)
			}
		}
		// Each template re-parses from its own text to the same lines.
		again, err := Parse(tp.File, tp.Text)
		if err != nil || fmt.Sprint(again.Lines) != fmt.Sprint(tp.Lines) {
			t.Errorf("%s: re-parse: %v", tp.Name, err)
		}
	}
	if seeds != 4 {
		t.Errorf("%d seed templates, want 4", seeds)
	}
	if _, err := Get("qwen3"); err == nil || !strings.Contains(err.Error(), "qwen2.5_llamafactory_to_mindspeed-llm") {
		t.Errorf("Get(unknown) error = %v, want the list of known names", err)
	}
}

func TestParseErrors(t *testing.T) {
	const head = "# name: x\n# kind: expert\n# npu: A\n# bench: B\n# description: d\n# provenance: p\n"
	tests := []struct {
		name, text, want string
	}{
		{"no header", "TopLayer:\n  a: b\n", `t.yaml:1: expected header key "name", found none`},
		{"bad header key", "# nam: x\nTopLayer:\n  a: b\n", `t.yaml:1: expected a header line "# key: value"`},
		{"repeated header key", "# name: x\n# name: y\n", `t.yaml:2: expected header key "name" once`},
		{"bad kind", strings.Replace(head, "expert", "draft", 1) + "A:\n  a: b\n", `t.yaml:1: expected kind seed or expert, found "draft"`},
		{"seed without marker", strings.Replace(head, "expert", "seed", 1) + "A:\n  a: b\n", `expected the line "# --- verbatim seed below ---"`},
		{"not a mapping", head + "- a\n", "t.yaml:7:1: expected a map of class names to maps of child paths, found a list"},
		{"empty", head, "t.yaml:1:1: expected a map of class names to maps of child paths, found an empty document"},
		{"class not a string", head + "1:\n  a: b\n", `t.yaml:7:1: LM009: class key 1 loads as a YAML 1.1 int`},
		{"null block", head + "A:\n", `t.yaml:7:3: expected a map of child paths under "A", found null`},
		{"duplicate class", head + "A:\n  a: b\nA:\n  c: d\n", `t.yaml:9:1: LM001: duplicate class "A" (also at line 7)`},
		{"duplicate key", head + "A:\n  a: b\n  a: c\n", `t.yaml:9:3: LM002: duplicate key "a" under "A" (also at line 8)`},
		{"empty value", head + "A:\n  a: ''\n", `t.yaml:8:6: LM004: empty bench path for "a"`},
		{"list value", head + "A:\n  a: [b]\n", `t.yaml:8:6: expected a bench path (string) for "a", found a list`},
		{"placeholder in key only", head + "A:\n  l.{i}.a: l.0.b\n", "t.yaml:8: expected {i} once as a whole path segment"},
		{"placeholder inside a segment", head + "A:\n  l.x{i}: l.{i}\n", "t.yaml:8: expected {i} once as a whole path segment"},
		{"bad yaml", head + "A:\n  a: [b\n", "t.yaml:8: invalid YAML: did not find expected ',' or ']' (a '[' here is not closed, or a ',' is missing between its items)"},
		{"same key twice, same value", head + "A:\n  a: b\n  a: b\n", `t.yaml:9:3: LM002:`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("t.yaml", []byte(tc.text))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestMatchClass(t *testing.T) {
	tests := []struct {
		tmpl, tree string
		want       bool
	}{
		{"Qwen2_5_VLVisionSdpaAttention", "Qwen2_5_VLVisionSdpaAttention", true},
		{"Qwen2_5_VLVisionSdpaAttention", "Qwen2_5_VLVisionAttention", true},
		{"Qwen2_5_VLVisionAttention", "Qwen2_5_VLVisionFlashAttention2", true},
		{"Qwen2Attention", "Qwen2SdpaAttention", true},
		{"Qwen2Attention", "Qwen2FlashAttention2", true},
		{"Qwen2_5_VLAttention", "Qwen2_5_VLSdpaAttention", true},
		{"LlamaAttention", "LlamaEagerAttention", true},
		{"Qwen2DecoderLayer", "FSDPQwen2DecoderLayer", true},
		{"Qwen2Attention", "Qwen2_5_VLAttention", false},
		{"Qwen2_5_VLVisionAttention", "Qwen2_5_VLAttention", false},
		{"Qwen2_5_VLModel", "Qwen2_5_VLTextModel", false},
		{"SelfAttention", "Qwen2vlSelfAttention", false},
		{"SdpaAttention", "Attention", false},
		{"FSDP", "", false},
		{"", "", true},
		{"MLP", "Qwen2MLP", false},
	}
	for _, tc := range tests {
		if got := MatchClass(tc.tmpl, tc.tree); got != tc.want {
			t.Errorf("MatchClass(%q, %q) = %v, want %v", tc.tmpl, tc.tree, got, tc.want)
		}
	}
}

// applyCase is one template evaluated on one pair of trees.
type applyCase struct {
	golden   string
	template string
	npu      func(t testing.TB) *printparse.Tree
	bench    func(t testing.TB) *printparse.Tree
	adapt    bool // fit the template to the roots first (Adapt)
}

// get returns the case's template, adapted when the case says so.
func (tc applyCase) get(t testing.TB, npu, bench *printparse.Tree) *Template {
	t.Helper()
	tp, err := Get(tc.template)
	if err != nil {
		t.Fatal(err)
	}
	if tc.adapt {
		a := tp.Adapt(npu, bench)
		if a == tp || a.Adapted == "" {
			t.Fatalf("%s: Adapt changed nothing", tp.Name)
		}
		return a
	}
	return tp
}

func treeOf(rel string, wrappers ...string) func(t testing.TB) *printparse.Tree {
	return func(t testing.TB) *printparse.Tree {
		tr := loadPrint(t, rel)
		if len(wrappers) > 0 {
			tr = wrap(tr, wrappers...)
		}
		return tr
	}
}

// dumpOf loads a folder of the msprobe corpus.
func dumpOf(rel ...string) func(t testing.TB) *printparse.Tree {
	return func(t testing.TB) *printparse.Tree {
		tr, err := printparse.Load(testkit.Corpus(t, append([]string{"msprobe"}, rel...)...), printparse.Options{Index: -1})
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
}

var (
	dumpDir    = []string{"golden", "qwen25vl_llamafactory_vs_mindspeed_reverse_template"}
	dumpLF     = dumpOf(append(dumpDir, "npu", "proc12360")...)
	dumpMS     = dumpOf(append(dumpDir, "bench", "proc12353")...)
	msMM       = treeOf(pairANPU)
	hfOld      = treeOf(pairABench)
	hfNew      = treeOf(newLayout, "DeepSpeedEngine")
	hfNewBare  = treeOf(newLayout)
	hfNew1     = treeOf(newLayout1, "DeepSpeedEngine")
	hfQwen25   = treeOf(qwen25New, "DeepSpeedEngine")
	hfQwen2    = treeOf(qwen2Sdpa, "DeepSpeedEngine")
	msLLMShape = treeOf(tinyGPT, "", "DistributedDataParallel", "Float16Module")
)

func applyCases() []applyCase {
	var out []applyCase
	for _, tp := range All() {
		n := tp.Name
		switch {
		case strings.HasPrefix(n, "qwen2.5-vl_mindspeed-mm_to_"):
			out = append(out,
				applyCase{n + "__pairA", n, msMM, hfOld, false},
				applyCase{n + "__new-layout", n, msMM, hfNew, false},
				applyCase{n + "__new-layout-bare-adapted", n, msMM, hfNewBare, true},
				applyCase{n + "__msprobe-dumps", n, dumpMS, dumpLF, false})
		case strings.HasPrefix(n, "qwen2.5-vl_llamafactory_to_"):
			out = append(out,
				applyCase{n + "__pairA", n, hfOld, msMM, false},
				applyCase{n + "__new-layout", n, hfNew, msMM, false},
				applyCase{n + "__new-layout-1-layer", n, hfNew1, msMM, false},
				applyCase{n + "__new-layout-bare-adapted", n, hfNewBare, msMM, true},
				applyCase{n + "__msprobe-dumps", n, dumpLF, dumpMS, false})
		case strings.HasPrefix(n, "qwen2.5_mindspeed-llm_to_"):
			out = append(out, applyCase{n + "__tiny-gpt-vs-qwen2.5", n, msLLMShape, hfQwen25, false})
		case strings.HasPrefix(n, "qwen2.5_llamafactory_to_"):
			out = append(out,
				applyCase{n + "__qwen2.5-vs-tiny-gpt", n, hfQwen25, msLLMShape, false},
				applyCase{n + "__qwen2-sdpa-vs-tiny-gpt", n, hfQwen2, msLLMShape, false})
		}
	}
	return out
}

// renderApply writes Apply's result in a stable, reviewable form.
func renderApply(tp *Template, applied []AppliedLine, unapplied []Line) string {
	var b strings.Builder
	fmt.Fprintf(&b, "template %s (%s)\n", tp.Name, tp.Direction())
	if tp.Adapted != "" {
		fmt.Fprintf(&b, "adapted: %s\n", tp.Adapted)
	}
	fmt.Fprintf(&b, "applied %d (indexed lines expanded), unapplied %d of %d lines\n", len(applied), len(unapplied), len(tp.Lines))
	for _, a := range applied {
		drift := ""
		if a.TreeClass != "" && a.TreeClass != a.Line.Class {
			drift = " [tree class " + a.TreeClass + "]"
		}
		fmt.Fprintf(&b, "+ line %d %s: %s -> %s%s: %d hit(s), %d miss(es)\n", a.Line.Line, a.Line.Class, a.Key, a.Value, drift, len(a.Hits), len(a.Misses))
		fmt.Fprintf(&b, "    e.g. %s -> %s\n", a.Hits[0].NPU, a.Hits[0].Bench)
		for i, m := range a.Misses {
			if i == 3 {
				fmt.Fprintf(&b, "    ... %d more misses\n", len(a.Misses)-3)
				break
			}
			fmt.Fprintf(&b, "    miss %s -> %s (no such bench module)\n", m.NPU, m.Bench)
		}
	}
	for _, l := range unapplied {
		fmt.Fprintf(&b, "- line %d %s\n", l.Line, l)
	}
	return b.String()
}

func TestApplyGolden(t *testing.T) {
	for _, tc := range applyCases() {
		t.Run(tc.golden, func(t *testing.T) {
			npu, bench := tc.npu(t), tc.bench(t)
			tp := tc.get(t, npu, bench)
			applied, unapplied := tp.Apply(npu, bench)
			got := renderApply(tp, applied, unapplied)
			path := filepath.Join("testdata", "apply", tc.golden+".golden")
			testkit.Golden(t, path, []byte(got))
		})
	}
}

// TestApplyPairA pins the facts the goldens show on the pair the seed
// templates were written for.
func TestApplyPairA(t *testing.T) {
	ms, hf := msMM(t), hfOld(t)
	seed, _ := Get("qwen2.5-vl_mindspeed-mm_to_llamafactory")
	applied, unapplied := seed.Apply(ms, hf)
	if len(unapplied) != 1 || unapplied[0].Class != "MMGPTModel" || unapplied[0].Key != "output_layer" {
		t.Errorf("seed: unapplied = %v, want only the wrong MMGPTModel output_layer line", unapplied)
	}
	conflicts := map[string]int{}
	for _, a := range applied {
		if len(a.Misses) > 0 {
			conflicts[a.Line.Class+"."+a.Key] = len(a.Misses)
		}
	}
	want := map[string]int{"TransformerLayer.input_layernorm": 8, "TransformerLayer.self_attention": 8, "TransformerLayer.pre_mlp_layernorm": 8}
	if fmt.Sprint(conflicts) != fmt.Sprint(want) {
		t.Errorf("seed: lines that miss in some places = %v, want %v (the text layers under the vision TransformerLayer rule)", conflicts, want)
	}

	expert, _ := Get("qwen2.5-vl_mindspeed-mm_to_llamafactory-expert")
	applied, unapplied = expert.Apply(ms, hf)
	if len(unapplied) != 0 {
		t.Errorf("expert: unapplied = %v, want none", unapplied)
	}
	indexed := 0
	for _, a := range applied {
		if len(a.Misses) > 0 {
			t.Errorf("expert: %s -> %s misses %v", a.Key, a.Value, a.Misses)
		}
		if a.Line.Indexed() {
			indexed++
		}
	}
	if indexed != 3*8 {
		t.Errorf("expert: %d expanded text-layer lines, want 3 per layer x 8 layers", indexed)
	}

	rev, _ := Get("qwen2.5-vl_llamafactory_to_mindspeed-mm-expert")
	if _, unapplied := rev.Apply(hf, ms); len(unapplied) != 0 {
		t.Errorf("reverse expert: unapplied = %v, want none", unapplied)
	}
}

func TestDetect(t *testing.T) {
	tests := []struct {
		name       string
		npu, bench func(testing.TB) *printparse.Tree
		best       string
		drift      []string // "template=tree" class correspondences expected among the best match's
	}{
		{"pair A", msMM, hfOld, "qwen2.5-vl_mindspeed-mm_to_llamafactory-expert", nil},
		{"msprobe dumps", dumpMS, dumpLF, "qwen2.5-vl_mindspeed-mm_to_llamafactory-expert", nil},
		{"msprobe dumps reversed", dumpLF, dumpMS, "qwen2.5-vl_llamafactory_to_mindspeed-mm-expert", nil},
		{"pair A reversed", hfOld, msMM, "qwen2.5-vl_llamafactory_to_mindspeed-mm-expert", nil},
		{"new layout", msMM, hfNew, "qwen2.5-vl_mindspeed-mm_to_llamafactory-expert-new-layout", nil},
		{"new layout reversed", hfNew, msMM, "qwen2.5-vl_llamafactory_to_mindspeed-mm-expert-new-layout", nil},
		{"bare new layout", msMM, hfNewBare, "qwen2.5-vl_mindspeed-mm_to_llamafactory-expert-new-layout", nil},
		{"bare new layout reversed", hfNewBare, msMM, "qwen2.5-vl_llamafactory_to_mindspeed-mm-expert-new-layout", nil},
		{"bare old layout 7B reversed", treeOf("hf/qwen2_5_vl_7b-old-layout__acproject-duorou-docs-qwen2.5vl_graph.txt"), msMM, "qwen2.5-vl_llamafactory_to_mindspeed-mm-expert", nil},
		{"qwen2.5 text reversed", hfQwen25, msLLMShape, "qwen2.5_llamafactory_to_mindspeed-llm-expert", nil},
		{"qwen2 sdpa reversed", hfQwen2, msLLMShape, "qwen2.5_llamafactory_to_mindspeed-llm-expert", []string{"Qwen2Attention=Qwen2SdpaAttention"}},
		{"text model forward", msLLMShape, hfQwen25, "qwen2.5_mindspeed-llm_to_llamafactory-expert", nil},
		{"unrelated", treeOf(tinyGPT), treeOf(qwen25New), "", nil},
		// a MoE model: the family's template explains its experts and
		// router, the dense Llama one does not (review item 12)
		{"moe draft vs mixtral", treeOf("wrapped/moe_draft-ddp-float16-gptmodel-te-srun-rank-prefix-wrapped-lines__swiss-ai-notes-anon.txt"), treeOf("hf/mixtral_8x7b__keras-hub-models-mixtral-README.txt"), "mixtral_megatron-core_to_transformers", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ms := Detect(tc.npu(t), tc.bench(t))
			if tc.best == "" {
				if len(ms) != 0 {
					t.Fatalf("Detect = %s first, want nothing", ms[0].Template.Name)
				}
				return
			}
			if len(ms) == 0 || ms[0].Template.Name != tc.best {
				var names []string
				for _, m := range ms {
					names = append(names, fmt.Sprintf("%s(%.2f)", m.Template.Name, m.Score))
				}
				t.Fatalf("Detect = %v, want %s first", names, tc.best)
			}
			for i := 1; i < len(ms); i++ {
				if ms[i].Fit > ms[i-1].Fit && ms[i-1].Template.Corrects != ms[i].Template.Name {
					t.Errorf("not best first: %s fit %d after %d", ms[i].Template.Name, ms[i].Fit, ms[i-1].Fit)
				}
			}
			got := map[string]bool{}
			for _, c := range ms[0].Classes {
				if !c.Exact {
					got[c.Template+"="+c.Tree] = true
				}
			}
			for _, d := range tc.drift {
				if !got[d] {
					t.Errorf("drift %s not reported; got %v", d, ms[0].Classes)
				}
			}
		})
	}
}

// familyOf is the model family a template is for: its name up to the
// first "_" (qwen3-moe_megatron-core_to_transformers is qwen3-moe).
func familyOf(name string) string {
	f, _, _ := strings.Cut(name, "_")
	return f
}

// benchmarkFamilies are the families Detect must pick on the labelled
// benchmark's pairs, forward (NPU keys) and reverse: "a|b" accepts either,
// "" means no template (the pair's family has none, or its lines do not
// fit: the draft is structure-only). Every benchmark pair has a row.
var benchmarkFamilies = map[string][2]string{
	"chatglm2-6b_mindspeed-llm_vs_hf-peft-lora":       {"", ""},
	"deepseek-v2-lite_mcore-te-fsdp2_vs_hf-v5":        {"", ""},
	"deepseek-v3_mcore-te_vs_hf":                      {"deepseek-v3", "deepseek-v3"},
	"gemma2-2b_mcore-te-bridge_vs_hf":                 {"qwen2.5|llama", ""}, // no Gemma template: a dense one
	"geneformer_nemo1-legacy_vs_nemo2-mcore":          {"", ""},
	"glm4.5-air_mcore-te_vs_hf":                       {"glm4.5", "glm4.5"},
	"glm4.5_mindspeed-llm_vs_hf":                      {"glm4.5", "glm4.5"},
	"internlm2-7b_mindspeed-llm_vs_hf-remote":         {"", ""},
	"llama2-7b_mcore-te_vs_hf":                        {"", ""}, // bare roots: the TopLayer and Float16Module lines find nothing
	"llama3-8b_legacy-megatron_vs_mcore-te":           {"", ""},
	"llama3-8b_torchtune-fsdp2-lora_vs_hf":            {"", ""},
	"llama3.1-8b_mcore-te_vs_hf-bnb4bit":              {"qwen2.5|llama", "llama"}, // qwen2.5's extra line is the fc1 stand-in
	"mistral-7b_mindspeed-llm_vs_hf-peft-lora":        {"", ""},
	"mixtral-8x7b_mindspeed-llm_vs_hf":                {"mixtral", "mixtral"},
	"phi3.5-mini_mcore-te_vs_hf":                      {"llama", ""},
	"qwen1.5-moe-a2.7b_mcore-te-mbridge_vs_hf":        {"", ""},
	"qwen2.5-7b_mindspeed-llm_vs_llamafactory":        {"qwen2.5", "qwen2.5"},
	"qwen25vl-2x2-dumps_mindspeed-mm_vs_llamafactory": {"qwen2.5-vl", "qwen2.5-vl"},
	"qwen25vl-3b_mindspeed-mm_vs_hf-new-layout":       {"qwen2.5-vl", "qwen2.5-vl"},
	"qwen25vl_mindspeed-mm_vs_llamafactory":           {"qwen2.5-vl", "qwen2.5-vl"},
	"qwen2vl-2b_mindspeed-mm_vs_hf-new-layout":        {"qwen2-vl", "qwen2-vl"},
	"qwen3-235b-a22b_mindspeed-llm_vs_hf":             {"qwen3-moe", "qwen3-moe"},
	"qwen3-30b-a3b_mcore-te_vs_hf":                    {"qwen3-moe", "qwen3-moe"},
	"qwen3-8b_mindspeed-llm_vs_hf":                    {"qwen3", "qwen3"},
	"qwen3vl-2b_mindspeed-mm_vs_hf":                   {"qwen3-vl", "qwen3-vl"},
	"starcoder2-3b_nemo2-te_vs_hf":                    {"", ""},
}

// TestDetectBenchmarkFamilies: on every pair of the labelled benchmark, in
// both directions, Detect picks the pair's family, MoE pairs included
// (Mixtral, Qwen3-MoE and GLM-4.5 over the dense templates whose lines all
// apply but leave the experts and the router alone). Slow pairs only
// without -short.
func TestDetectBenchmarkFamilies(t *testing.T) {
	pairs, err := truth.ReadDir(testkit.Testdata(t, "benchmark"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pairs {
		want, ok := benchmarkFamilies[p.Name]
		if !ok {
			t.Errorf("%s: no expected family in benchmarkFamilies", p.Name)
			continue
		}
		if p.Slow && testing.Short() {
			continue
		}
		load := func(f string) *printparse.Tree {
			tr, err := printparse.Load(filepath.Join(p.Dir, f), printparse.Options{Index: -1})
			if err != nil {
				t.Fatal(err)
			}
			return tr
		}
		npu, bench := load(p.NPUFile), load(p.BenchFile)
		for i, dir := range [][2]*printparse.Tree{{npu, bench}, {bench, npu}} {
			got := ""
			if ms := Detect(dir[0], dir[1]); len(ms) > 0 {
				got = familyOf(ms[0].Template.Name)
			}
			if !slices.Contains(strings.Split(want[i], "|"), got) {
				t.Errorf("%s %s: Detect picks family %q, want %q", p.Name, []string{"forward", "reverse"}[i], got, want[i])
			}
		}
	}
}

func BenchmarkDetectPairA(b *testing.B) {
	ms, hf := msMM(b), hfOld(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		Detect(ms, hf)
	}
}

// BenchmarkDetect60Layers runs Detect on pair A grown to 60 text layers and
// 32 vision blocks on both sides.
func BenchmarkDetect60Layers(b *testing.B) {
	grow := func(rel string) *printparse.Tree {
		p := testkit.Corpus(b, "prints", rel)
		data, err := os.ReadFile(p)
		if err != nil {
			b.Fatal(err)
		}
		text := strings.NewReplacer("(0-7): 8 x", "(0-59): 60 x", "(0-15): 16 x", "(0-31): 32 x").Replace(string(data))
		tr, err := printparse.ParseText([]byte(text), p, printparse.Options{Index: -1})
		if err != nil {
			b.Fatal(err)
		}
		return tr
	}
	ms, hf := grow(pairANPU), grow(pairABench)
	if n := len(ms.Lookup("0.module.module.text_decoder.decoder.layers").Children); n != 60 {
		b.Fatalf("%d text layers, want 60", n)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if ms := Detect(ms, hf); len(ms) == 0 {
			b.Fatal("nothing detected")
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, tp := range All() {
		f.Add(tp.Text)
	}
	f.Add([]byte("# name: x\n# kind: expert\n# npu: A\n# bench: B\n# description: d\n# provenance: p\nA:\n  l.{i}.a: l.{i}.b\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tp, err := Parse("fuzz.yaml", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.yaml") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if len(tp.Lines) == 0 || tp.Name == "" {
			t.Fatalf("accepted a template without lines or name: %+v", tp)
		}
		for _, l := range tp.Lines {
			if l.Class == "" || l.Key == "" || l.Value == "" || l.Line < 1 {
				t.Fatalf("bad line %+v", l)
			}
		}
	})
}
