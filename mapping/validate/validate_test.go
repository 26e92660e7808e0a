package validate

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/layermap/layermap/mapping"
	"github.com/layermap/layermap/mapping/resolve"
	"github.com/layermap/layermap/printparse"
	"github.com/layermap/layermap/printparse/testkit"
	"github.com/layermap/layermap/printparse/treetest"
)

const (
	mindspeedVL = "prints/mindspeed/qwen2_5_vl_3b-vlmmodel-ddp-list__msprobe-docs-mindspeed-mm-qwen25vl.txt"
	hfVLOld     = "prints/hf/qwen2_5_vl_3b-old-layout-deepspeed__msprobe-docs-llamafactory-qwen25vl.txt"
	hfVLNew     = "prints/hf/qwen2_5_vl_3b-new-layout-model.visual-model.language_model__inspect-model-script-anon.txt"
	seedMS2HF   = "../testdata/seed/qwen2.5-vl_mindspeed-mm_to_llamafactory.yaml"
	seedHF2MS   = "../testdata/seed/qwen2.5-vl_llamafactory_to_mindspeed-mm.yaml"
)

func load(t testing.TB, rel string) *printparse.Tree {
	t.Helper()
	return treetest.Load(t, testkit.Corpus(t, rel))
}

func check(t testing.TB, mapPath, yamlText, npu, bench string, opt Options) *Report {
	t.Helper()
	var m *mapping.Mapping
	var d []mapping.Diagnostic
	var err error
	if yamlText != "" {
		m, d, err = mapping.Parse([]byte(yamlText), "inline.yaml")
	} else {
		m, d, err = mapping.Load(mapPath)
	}
	if err != nil {
		t.Fatal(err)
	}
	return Check(m, d, load(t, npu), load(t, bench), opt)
}

// key renders a finding as "CODE@line" for table comparisons.
func key(f Finding) string { return fmt.Sprintf("%s@%d", f.Code, f.Pos.Line) }

func TestCheck(t *testing.T) {
	tests := []struct {
		name       string
		mapPath    string
		yaml       string
		npu, bench string
		opt        Options
		want       []string          // every finding as CODE@line, in report order
		msg        map[string]string // CODE@line -> substring of its message
		coverage   Coverage
		failed     bool
	}{
		{
			// Acceptance: the seed template on the corpus pair. The TransformerLayer
			// conflict (vision rules send the text layers' input_layernorm,
			// self_attention, pre_mlp_layernorm to norm1/attn/norm2) and the lm_head
			// target are the misses msprobe-layer-mapping.md reports from msprobe's
			// own graph compare; the MLP rules would not fit the projector's MLP, which
			// MultimodalProjector's longer keys escape.
			name: "seed MindSpeed-MM to LLaMA-Factory", mapPath: seedMS2HF, npu: mindspeedVL, bench: hfVLOld,
			want: []string{"LM103@39", "LM105@15", "LM108@24"},
			msg: map[string]string{
				"LM103@39": "0.module.module.text_decoder.output_layer -> module.model.lm_head is missing",
				"LM105@15": `"input_layernorm", "self_attention", "pre_mlp_layernorm" fit 0.module.module.image_encoder.encoder.blocks.layers.{0-15} but lead nowhere under 0.module.module.text_decoder.decoder.layers.{0-7}`,
				"LM108@24": `"linear_fc1" would not fit under 0.module.module.image_encoder.projector.encoder`,
			},
			// 429 NPU modules (432 nodes minus the two ModuleLists and the listed
			// model "0", a root msprobe does not dump); 190 have a
			// partner: the golden listing in mapping/testdata/resolve_mindspeed_to_hf.golden
			// has 192 "+" lines, two of them the ModuleLists.
			coverage: Coverage{Matched: 190, Total: 429}, failed: true,
		},
		{
			// No rule is wrong; the text attention's q/k/v and the text MLP have no
			// rules (Qwen2_5_VLSdpaAttention, Qwen2MLP), hinted at the NPU print's lines.
			name: "seed LLaMA-Factory to MindSpeed-MM", mapPath: seedHF2MS, npu: hfVLOld, bench: mindspeedVL,
			want:     []string{"LM110@38", "LM110@39", "LM110@40", "LM110@45", "LM110@46", "LM110@47"},
			msg:      map[string]string{"LM110@46": `module.model.layers.{0-7}.mlp.up_proj (Linear) has no bench partner, and 0.module.module.text_decoder.decoder.layers.{0-7}.mlp, the partner of its parent, has unclaimed linear_fc1, linear_fc2 of the same kind: a rule for "up_proj" under Qwen2MLP may be missing`},
			coverage: Coverage{Matched: 207, Total: 304},
		},
		{
			// Acceptance: a duplicated TransformerLayer key fails with both lines.
			name: "duplicate TransformerLayer", mapPath: "../testdata/seed/dup_transformerlayer.yaml", npu: mindspeedVL, bench: hfVLOld,
			want: []string{"LM001@41", "LM103@39", "LM108@24", "LM105@41", "LM110@41", "LM110@59", "LM110@60"},
			msg:  map[string]string{"LM001@41": `duplicate class "TransformerLayer" (also at line 15): PyYAML keeps only the last block, so the rules at line 15 are lost`},
			// the second block serves the text layers and strands the vision ones
			// (80 renames lost, 24 gained)
			coverage: Coverage{Matched: 134, Total: 429}, failed: true,
		},
		{
			// Acceptance: a typo'd child key is a dead rule at its line.
			name: "typo in child key", mapPath: "../testdata/seed/typo_child.yaml", npu: mindspeedVL, bench: hfVLOld,
			want: []string{"LM102@25", "LM103@39", "LM105@15", "LM108@24", "LM110@24", "LM110@24"},
			msg:  map[string]string{"LM102@25": `child path "linear_fc_1" does not exist under any MLP (25 instances): the rule never fires; did you mean "linear_fc1"?`},
			// the 16 vision and 8 text linear_fc1 lose their partner
			coverage: Coverage{Matched: 166, Total: 429}, failed: true,
		},
		{
			// Version drift: the 4.49 template on a newer transformers print.
			name: "template on new HF layout", mapPath: seedHF2MS, npu: hfVLNew, bench: mindspeedVL,
			want: []string{"LM102@3", "LM101@5", "LM101@21", "LM102@36", "LM102@37", "LM102@38", "LM102@39", "LM106@0"},
			msg: map[string]string{
				"LM101@21": `did you mean "Qwen2_5_VLVisionAttention"?`,
				"LM101@5":  "it is the class of the NPU root, which msprobe calls TopLayer",
				"LM102@3":  `did you mean "model"?`,
			},
			coverage: Coverage{Matched: 0, Total: 872}, failed: true,
		},
		{
			// A built-in template copied with its "{i}" lines: the placeholder is
			// named, not a near miss ("did you mean decoder.layers.0...").
			name: "template placeholder copied", npu: mindspeedVL, bench: hfVLOld,
			yaml:     "TopLayer:\n  0.module: module\nFloat16Module:\n  module.text_decoder: model\nMMGPTModel:\n  decoder.layers.{i}.self_attention: layers.{i}.self_attn\n",
			want:     []string{"LM102@6", "LM110@5"},
			msg:      map[string]string{"LM102@6": `child path "decoder.layers.{i}.self_attention" does not exist under any MMGPTModel (1 instance): the rule never fires; "{i}" is a template placeholder msprobe reads literally: write one line per layer index (layermap suggest --template NAME does it for these trees)`},
			coverage: Coverage{Matched: 2, Total: 429}, failed: true,
		},
		{
			// suggest's draft from the old-layout print (LLaMA-Factory under
			// DeepSpeed ZeRO-3: Qwen2RMSNorm((0,), eps=1e-06)) to the new
			// layout. A (0,) shape is a partitioned weight, not a size: no
			// "pairs Norm sizes [0] onto [1280]" warnings (there were six).
			name: "ZeRO-3 norms", npu: hfVLOld, bench: hfVLNew,
			yaml:     "TopLayer:\n  module.visual: model.visual\n  module.model: model.language_model\n  module.lm_head: lm_head\n",
			want:     nil,
			coverage: Coverage{Matched: 303, Total: 304},
		},
		{
			// The fused linear_qkv against q/k/v: suggest calls it N:1 and
			// leaves it unmatched; LM110 once asked for "a rule for linear_qkv".
			name: "fused qkv is no missing rule", npu: mindspeedVL, bench: hfVLOld,
			yaml: "TopLayer:\n  0.module: module\nFloat16Module:\n  module.text_decoder: model\nMMGPTModel:\n  decoder.layers: layers\nTransformerLayer:\n  self_attention: self_attn\n",
			want: []string{"LM110@59", "LM110@60", "LM110@69", "LM110@70", "LM110@5", "LM110@7"},
			msg: map[string]string{
				"LM110@60": "0.module.module.text_decoder.decoder.layers.{0-7}.self_attention.linear_qkv (ColumnParallelLinear) has no bench partner: it fuses q_proj, k_proj and v_proj of module.model.layers.{0-7}.self_attn (N:1), so no rule can pair it",
				"LM110@59": `a rule for "linear_proj" under Qwen2vlSelfAttention may be missing`,
			},
			coverage: Coverage{Matched: 34, Total: 429},
		},
		{
			// A wrong TopLayer target: the hint names the bench root's children.
			name: "bad TopLayer target", npu: mindspeedVL, bench: hfVLOld,
			yaml:     "TopLayer:\n  0.module: engine\n",
			want:     []string{"LM103@2", "LM106@0"},
			msg:      map[string]string{"LM103@2": `target "engine" does not exist on the bench side: 0.module -> engine is missing; the bench root has module`},
			coverage: Coverage{Matched: 0, Total: 429}, failed: true,
		},
		{
			// The sides swapped: the YAML's classes are the bench side's.
			name: "sides swapped", mapPath: seedMS2HF, npu: hfVLOld, bench: mindspeedVL,
			want: []string{"LM102@3", "LM101@5", "LM101@9", "LM101@15", "LM101@20", "LM101@24", "LM101@28", "LM101@34", "LM106@0"},
			msg: map[string]string{
				"LM101@15": `class "TransformerLayer" occurs nowhere on the NPU side (`,
				"LM101@28": `.txt): its 4 rules never fire; it is a class of the bench side (`,
				"LM101@34": `mindspeed-mm-qwen25vl.txt): are --npu and --bench swapped?`,
			},
			coverage: Coverage{Matched: 0, Total: 304}, failed: true,
		},
		{
			// No TopLayer line: 0.module never becomes module, so every rewritten
			// name misses the bench side, yet no rule is dead and no target's
			// parent exists for LM103 to blame. Zero coverage fails without a gate.
			name: "no TopLayer, nothing pairs", npu: mindspeedVL, bench: hfVLOld,
			yaml: "Float16Module:\n  module.image_encoder: visual\n  module.text_decoder: model\n",
			want: []string{"LM106@0"},
			msg: map[string]string{"LM106@0": "coverage 0/429 (0.0%): no NPU module's rewritten name exists on the bench side, so msprobe would pair no module " +
				"(the outermost NPU module is 0.module, the bench one module: is the TopLayer rule missing or wrong?)"},
			coverage: Coverage{Matched: 0, Total: 429}, failed: true,
		},
		{
			// With a gate, the gate's message alone.
			name: "no TopLayer, gated", npu: mindspeedVL, bench: hfVLOld, opt: Options{MinCoverage: 0.9},
			yaml:     "Float16Module:\n  module.image_encoder: visual\n",
			want:     []string{"LM106@0"},
			msg:      map[string]string{"LM106@0": "coverage 0/429 (0.0%) is below the required 90.0%"},
			coverage: Coverage{Matched: 0, Total: 429}, failed: true,
		},
		{
			name: "shadowed, suspicious, bad target, coverage gate", npu: mindspeedVL, bench: hfVLOld, opt: Options{MinCoverage: 0.5},
			yaml: `TopLayer:
  0.module: module
Float16Module:
  module.image_encoder: visual
VisionModel:
  encoder.patch_embed: patch_embed
  encoder.blocks.layers: blocks
Qwen2VLViT:
  patch_embed: patch_embed
TransformerLayer:
  mlp: mlp
Qwen2vlVitSelfAttention:
  flash_attention_score: core_attention_flash.npu_fusion_attention
MLP:
  linear_fc1: act_fn
  linear_fc2: down
`,
			want: []string{"LM008@9", "LM008@11", "LM102@13", "LM103@16", "LM104@9", "LM107@15", "LM110@5", "LM110@10", "LM110@10", "LM110@10", "LM106@0"},
			msg: map[string]string{
				"LM104@9":  `rule "patch_embed" of Qwen2VLViT never fires: at 0.module.module.image_encoder.encoder the VisionModel key "encoder.patch_embed" (line 6) always wins`,
				"LM107@15": "0.module.module.image_encoder.encoder.blocks.layers.{0-15}.mlp.linear_fc1 -> module.visual.blocks.{0-15}.mlp.act_fn pairs a Linear (ColumnParallelLinear) onto a Activation (SiLU)",
				"LM103@16": `did you mean "down_proj"?`,
				"LM106@0":  "below the required 50.0%",
				// an API name: only a warning on a print(model) tree
				"LM102@13": `if "flash_attention_score" is an API called there, check the mapping against a mix-level dump folder`,
			},
			// TopLayer, image_encoder, patch_embed(.proj), 16 x (layer, mlp, linear_fc1)
			coverage: Coverage{Matched: 52, Total: 429}, failed: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rep := check(t, tc.mapPath, tc.yaml, tc.npu, tc.bench, tc.opt)
			var got []string
			for _, f := range rep.Findings {
				got = append(got, key(f))
			}
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				var b strings.Builder
				for _, f := range rep.Findings {
					b.WriteString("\n  " + f.String())
				}
				t.Errorf("findings %v, want %v%s", got, tc.want, b.String())
			}
			for k, sub := range tc.msg {
				found := false
				for _, f := range rep.Findings {
					if key(f) == k && strings.Contains(f.Msg, sub) {
						found = true
					}
				}
				if !found {
					t.Errorf("no %s with %q", k, sub)
				}
			}
			if rep.Coverage != tc.coverage {
				t.Errorf("coverage %+v, want %+v", rep.Coverage, tc.coverage)
			}
			if rep.Failed(false) != tc.failed {
				t.Errorf("Failed = %v, want %v", rep.Failed(false), tc.failed)
			}
		})
	}
}

// On a dump folder, keys naming API entries (msprobe scopes APIs under
// their module) are checked in msprobe's own trie of the dump.
func TestAPIKeysOnDumpFolder(t *testing.T) {
	g := "msprobe/golden/qwen25vl_llamafactory_vs_mindspeed_reverse_template"
	// Tensor.__mul__.4.forward's construct.json parent is ...blocks.0.attn.qkv.
	rep := check(t, "", "Qwen2_5_VLVisionSdpaAttention:\n  qkv: linear_qkv\n  qkv.__mul__: linear_qkv.__mul__\n  nosuch: y\n",
		g+"/npu/proc12360", g+"/bench/proc12353", Options{})
	var got []string
	for _, f := range rep.Findings {
		got = append(got, key(f)+" "+f.Severity.String())
	}
	// LM106: without a TopLayer line no module pairs at all.
	if want := "LM102@4 error|LM106@0 error"; strings.Join(got, "|") != want {
		t.Errorf("findings %q, want %q", got, want)
	}
}

func TestDuplicateRelatedLines(t *testing.T) {
	rep := check(t, "../testdata/seed/dup_transformerlayer.yaml", "", mindspeedVL, hfVLOld, Options{})
	f := rep.Findings[0]
	if f.Code != mapping.CodeDuplicateClass || f.Pos.Line != 41 || len(f.Related) != 1 || f.Related[0].Line != 15 {
		t.Fatalf("first finding %v %v, want LM001 at 41 related to 15", f, f.Related)
	}
}

func TestStrict(t *testing.T) {
	rep := &Report{Findings: []Finding{{Severity: mapping.Warning}}}
	if rep.Failed(false) || !rep.Failed(true) {
		t.Error("a warning must fail only with strict")
	}
	rep = &Report{Findings: []Finding{{Severity: mapping.Info}}}
	if rep.Failed(true) {
		t.Error("info never fails")
	}
}

func TestRenderIndices(t *testing.T) {
	tests := []struct {
		in   []string
		want string
	}{
		{[]string{"3"}, "3"},
		{[]string{"0", "1", "2", "3"}, "{0-3}"},
		{[]string{"0", "2", "5", "6", "7"}, "{0,2,5-7}"},
		{[]string{"2", "1", "1"}, "{1-2}"},
		{[]string{"a", "b"}, "{a,b}"},
	}
	for _, tc := range tests {
		if got := renderIndices(tc.in); got != tc.want {
			t.Errorf("renderIndices(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// Golden outputs of the acceptance case, corpus and testdata paths made
// relative so that they do not depend on the checkout.
func TestOutputGolden(t *testing.T) {
	goldenReports(t, check(t, seedMS2HF, "", mindspeedVL, hfVLOld, Options{}), "seed_ms2hf")
}

// goldenReports checks rep in the three formats against
// testdata/NAME.{txt,json,github}.golden.
func goldenReports(t *testing.T, rep *Report, name string) {
	root := testkit.Corpus(t)
	for _, f := range []struct {
		ext   string
		write func(*bytes.Buffer) error
	}{
		{"txt", func(b *bytes.Buffer) error { return rep.WriteText(b) }},
		{"json", func(b *bytes.Buffer) error { return rep.WriteJSON(b) }},
		{"github", func(b *bytes.Buffer) error { return rep.WriteGitHub(b) }},
	} {
		t.Run(name+"."+f.ext, func(t *testing.T) {
			var b bytes.Buffer
			if err := f.write(&b); err != nil {
				t.Fatal(err)
			}
			got := strings.ReplaceAll(b.String(), root+string(filepath.Separator), "<corpus>/")
			testkit.Golden(t, filepath.Join("testdata", name+"."+f.ext+".golden"), []byte(got))
		})
	}
}

// Every print pair of the corpus goes through Check without panicking, and
// the identity mapping's coverage is consistent with the resolver.
func TestCheckCorpusPrints(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(testkit.Corpus(t, "prints"), "*", "*.txt"))
	if err != nil || len(files) < 10 {
		t.Fatalf("corpus prints: %d files, %v", len(files), err)
	}
	var trees []*printparse.Tree
	for _, f := range files {
		tr, err := printparse.Load(f, printparse.Options{Index: -1})
		if err != nil {
			continue // multi-dump or unrecoverable inputs are printparse's concern
		}
		trees = append(trees, tr)
	}
	empty, _, _ := mapping.Parse([]byte("{}\n"), "empty.yaml")
	for _, tr := range trees {
		rep := Check(empty, nil, tr, tr, Options{})
		// Against itself with no rules every module maps onto itself.
		if rep.Coverage.Matched != rep.Coverage.Total || len(rep.UnmatchedBench) != 0 {
			t.Errorf("%s against itself: coverage %+v, %d unmatched bench groups", filepath.Base(tr.Source), rep.Coverage, len(rep.UnmatchedBench))
		}
	}
}

func BenchmarkCheckSeed(b *testing.B) {
	m, d, err := mapping.Load(seedMS2HF)
	if err != nil {
		b.Fatal(err)
	}
	npu, bench := load(b, mindspeedVL), load(b, hfVLOld)
	b.ReportAllocs()
	for b.Loop() {
		Check(m, d, npu, bench, Options{})
	}
}

// On msprobe dump folders, the tree resolver pairs exactly the module
// entries msprobe's own generate_api_mapping_by_layer_mapping pairs
// (golden/.../output/api_mapping.yaml, PROVENANCE.md), to the same bench
// module.
func TestDumpFolderPairsMatchMsprobe(t *testing.T) {
	g := testkit.Corpus(t, "msprobe/golden/qwen25vl_llamafactory_vs_mindspeed_reverse_template")
	rep := check(t, g+"/layer_mapping.yaml", "", "msprobe/golden/qwen25vl_llamafactory_vs_mindspeed_reverse_template/npu/proc12360",
		"msprobe/golden/qwen25vl_llamafactory_vs_mindspeed_reverse_template/bench/proc12353", Options{})
	data, err := os.ReadFile(g + "/output/api_mapping.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{} // npu module path -> bench module path or ""
	matched := 0
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		npu, bench, _ := strings.Cut(l, ": ")
		if !strings.HasPrefix(npu, "Module.") {
			continue
		}
		path := func(name string) string { p := strings.Split(name, "."); return strings.Join(p[1:len(p)-3], ".") }
		want[path(npu)] = ""
		if bench != resolve.NA {
			want[path(npu)] = path(bench)
			matched++
		}
	}
	if rep.Coverage.Matched != matched || rep.Coverage.Total != len(want) {
		t.Errorf("coverage %+v, msprobe pairs %d of %d module entries", rep.Coverage, matched, len(want))
	}
	for _, p := range rep.Pairs {
		w, ok := want[p.NPU.Path]
		if !ok {
			continue
		}
		got := ""
		if p.Bench != nil {
			got = p.Bench.Path
		}
		if got != w {
			t.Errorf("%s -> %q, msprobe %q", p.NPU.Path, got, w)
		}
	}
}

// The band each drafted line's comment starts with: CHECK and UNSURE lines
// become LM111/LM112 findings at the line, sure lines are counted only,
// hand-written comments are no band; in all three formats.
func TestBands(t *testing.T) {
	const draft = `TopLayer:
  0.module: module  # sure: score 0.95 margin 0.56: name,class,children

Float16Module:
  module.image_encoder: visual  # CHECK (small margin 0.05 over the runner-up): score 0.80 margin 0.05: name
  module.text_decoder: model  # UNSURE (the template alone pairs them): score 0.10 margin 0.00: template

MMGPTModel:
  embedding.word_embeddings: embed_tokens  # check later: written by hand
  decoder.layers: layers
`
	rep := check(t, "", draft, mindspeedVL, hfVLOld, Options{})
	var got []string
	for _, f := range rep.Findings {
		if f.Check == CheckBand {
			got = append(got, key(f)+" "+f.Severity.String()+" "+f.Msg)
		}
	}
	want := []string{
		"LM111@5 info Float16Module: module.image_encoder -> visual drafted as CHECK (small margin 0.05 over the runner-up): look at its rows before trusting them",
		"LM112@6 warning Float16Module: module.text_decoder -> model drafted as UNSURE (the template alone pairs them): nothing but a prior or a name supports it; once reviewed, edit the word",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("band findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if rep.Bands != (Bands{Sure: 1, Check: 1, Unsure: 1}) {
		t.Errorf("bands %+v", rep.Bands)
	}
	if rep.Failed(false) || !rep.Failed(true) {
		t.Errorf("an UNSURE line must fail with --strict only (failed %v, strict %v)", rep.Failed(false), rep.Failed(true))
	}
	goldenReports(t, rep, "bands")
}

// TestNoPartner: a drafted line that pairs nothing on purpose ("no
// partner:") is info where its target is missing on the bench side, as
// intended, and a warning where the target exists; without the marker the
// missing target is an error (LM103).
func TestNoPartner(t *testing.T) {
	const draft = `TopLayer:
  0.module: module

Float16Module:
  module.image_encoder: visual
  module.text_decoder: model

MMGPTModel:
  decoder.layers.0.pre_mlp_layernorm: layers.0.pre_mlp_layernorm  # no partner: placeholder
  decoder.layers.1.pre_mlp_layernorm: layers.1.post_attention_layernorm  # no partner: but it has one
  decoder.layers.2.pre_mlp_layernorm: layers.2.pre_mlp_layernorm  # sure: score 1.00 margin 1.00: name
`
	rep := check(t, "", draft, mindspeedVL, hfVLOld, Options{})
	got := map[string]string{}
	for _, f := range rep.Findings {
		if f.Code == CodeNoPartner || f.Code == CodeBadTarget {
			got[key(f)] = f.Severity.String()
		}
	}
	want := map[string]string{"LM113@9": "info", "LM113@10": "warning", "LM103@11": "error"}
	if !maps.Equal(got, want) {
		t.Errorf("findings %v, want %v", got, want)
	}
	if rep.Bands != (Bands{Sure: 1}) {
		t.Errorf("bands %+v: a no-partner line has none", rep.Bands)
	}
}
