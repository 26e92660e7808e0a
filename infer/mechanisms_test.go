package infer

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/layermap/layermap/mapping"
	"github.com/layermap/layermap/mapping/resolve"
	"github.com/layermap/layermap/printparse"
	"github.com/layermap/layermap/printparse/treetest"
)

func loadSynthetic(t *testing.T, name string) (npu, bench *printparse.Tree) {
	t.Helper()
	dir := filepath.Join("testdata", "synthetic", name)
	return treetest.Load(t, filepath.Join(dir, "npu.txt")), treetest.Load(t, filepath.Join(dir, "bench.txt"))
}

// resolved maps every NPU module path to the bench path msprobe's resolver
// sends it to with m ("" when none).
func resolved(m *mapping.Mapping, npu, bench *printparse.Tree) map[string]string {
	out := map[string]string{}
	for _, p := range resolve.New(m).ResolveTree(npu, bench) {
		if p.Bench != nil {
			out[p.NPU.Path] = p.Bench.Path
		} else {
			out[p.NPU.Path] = ""
		}
	}
	return out
}

// TestDenseFirstMoE: one class (TransformerLayer) whose instances differ
// in structure (a dense first layer, MoE layers after it) is a conflict
// resolved like the vision/text one; grouped experts are N:1 with the
// per-expert list and never paired with one expert.
func TestDenseFirstMoE(t *testing.T) {
	npu, bench := loadSynthetic(t, "moe-dense-first")
	r, err := Suggest(npu, bench, Options{Template: TemplateNone})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []struct {
		name  string
		draft Draft
		class string
	}{{"forward", r.Forward, "TransformerLayer"}, {"reverse", r.Reverse, "DeepseekV3DecoderLayer"}} {
		found := false
		for _, c := range d.draft.Conflicts {
			if c.Class == d.class {
				found = true
				if !c.Proven || len(c.Unresolved) > 0 {
					t.Errorf("%s: conflict %s not resolved: %s", d.name, c.Class, c.Resolution)
				}
			}
		}
		if !found {
			t.Errorf("%s: no conflict on %s (dense layer 0 vs MoE layers): %+v", d.name, d.class, d.draft.Conflicts)
		}
		if d.draft.Proven != 1 {
			t.Errorf("%s: proven %.3f, want 1 (sidecar %v)", d.name, d.draft.Proven, d.draft.Sidecar)
		}
	}
	got := resolved(r.Forward.Mapping, npu, bench)
	if b := got["decoder.layers.0.pre_mlp_layernorm"]; b != "" {
		t.Errorf("the dense layer's IdentityOp pre_mlp_layernorm is paired with %s, want nothing", b)
	}
	for _, i := range []string{"1", "2"} {
		if b, want := got["decoder.layers."+i+".pre_mlp_layernorm"], "model.layers."+i+".post_attention_layernorm"; b != want {
			t.Errorf("layer %s pre_mlp_layernorm -> %q, want %q", i, b, want)
		}
	}
	for _, p := range r.Pairs {
		if strings.Contains(p.Bench, ".experts.") {
			t.Errorf("%s is paired with one expert's %s", p.NPU, p.Bench)
		}
		if strings.HasSuffix(p.NPU, "mlp.experts") && (p.Band == BandSure || !strings.Contains(p.Structural, "computes the 4 members")) {
			t.Errorf("grouped experts pair %s <-> %s: band %s, note %q; want check and an N:1 grouped note", p.NPU, p.Bench, p.Band, p.Structural)
		}
		if strings.HasSuffix(p.NPU, "mlp.experts") && (p.Kind != mapping.KindExperts || len(p.BenchParts) != 4 || p.BenchParts[3] != p.Bench+".3") {
			t.Errorf("grouped experts pair %s <-> %s: kind %q, bench parts %v; want experts and the 4 members", p.NPU, p.Bench, p.Kind, p.BenchParts)
		}
	}
	// the sidecars hold the groups, keyed by each draft's side
	for _, sc := range []struct {
		name  string
		pairs []mapping.ModulePair
		npu   bool
	}{{"forward", r.Forward.Sidecar, true}, {"reverse", r.Reverse.Sidecar, false}} {
		n := 0
		for _, p := range sc.pairs {
			if p.Kind != mapping.KindExperts {
				continue
			}
			n++
			whole, parts := p.NPU, p.BenchParts
			if !sc.npu {
				whole, parts = p.Bench, p.NPUParts
			}
			if !strings.HasSuffix(whole, "mlp.experts") || len(parts) != 4 {
				t.Errorf("%s sidecar group %s: want the grouped module against 4 experts", sc.name, p)
			}
		}
		if n != 2 {
			t.Errorf("%s sidecar: %d experts groups, want 2 (MoE layers 1 and 2): %v", sc.name, n, sc.pairs)
		}
	}
	for _, n := range []string{"model.layers.1.mlp.experts.2", "model.layers.2.mlp.experts.0.up_proj"} {
		if why := r.UnmatchedWhy[n]; !strings.Contains(why, "N:1 grouped") {
			t.Errorf("%s: unmatched because %q, want the grouped explanation", n, why)
		}
	}
}

// TestExtraLevelsDoNotSteal: small extra modules or levels on one side
// (HF's residual Dropouts, TE's core_attention level) never take a
// parent's partner: self_attention pairs with self_attn, no dropout pairs
// across levels, and no pair is wrong-but-sure.
func TestExtraLevelsDoNotSteal(t *testing.T) {
	npu, bench := loadSynthetic(t, "te-extra-levels")
	r, err := Suggest(npu, bench, Options{Template: TemplateNone})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"decoder.layers.0.self_attention":             "model.layers.0.self_attn",
		"decoder.layers.1.self_attention.linear_proj": "model.layers.1.self_attn.o_proj",
		"decoder.layers.1.self_attention.linear_qkv":  "model.layers.1.self_attn.qkv_proj",
		"decoder.layers.0.mlp.linear_fc1":             "model.layers.0.mlp.gate_up_proj",
		"output_layer":                                "lm_head",
	}
	got := resolved(r.Forward.Mapping, npu, bench)
	for n, b := range want {
		if got[n] != b {
			t.Errorf("%s -> %q, want %q", n, got[n], b)
		}
	}
	for _, p := range r.Pairs {
		if strings.Contains(p.NPU, "core_attention") || strings.Contains(p.Bench, "dropout") {
			t.Errorf("%s is paired with %s", p.NPU, p.Bench)
		}
	}
	if b := got["decoder.layers.0.self_attention.core_attention.unfused_attention.attention_dropout"]; b != "" {
		t.Errorf("attention_dropout -> %s, want nothing", b)
	}
}

// TestWrappedPostNorm: wrappers nobody listed (megatron-core's torch FSDP2
// wrapper with FSDP-prefixed classes, a PEFT model and its tuner) are set
// aside or looked through; a norm a projection holds and applies to its
// output pairs with the bench layer's post norm in every layer, and the
// projection's pair says it is N:1; a LoRA adapter pairs as the module it
// adapts.
func TestWrappedPostNorm(t *testing.T) {
	npu, bench := loadSynthetic(t, "wrapped-postnorm")
	r, err := Suggest(npu, bench, Options{Template: TemplateNone})
	if err != nil {
		t.Fatal(err)
	}
	const g, h = "0.module.module", "base_model.model.model"
	want := map[string]string{
		"0.module":                       "base_model.model",
		g:                                h,
		g + ".embedding.word_embeddings": h + ".embed_tokens",
		g + ".decoder.layers":            h + ".layers",
		g + ".decoder.final_layernorm":   h + ".norm",
		g + ".output_layer":              "base_model.model.lm_head",
		g + ".decoder.layers.0.self_attention.linear_proj.post_layernorm": h + ".layers.0.post_attention_layernorm",
		g + ".decoder.layers.2.self_attention.linear_proj.post_layernorm": h + ".layers.2.post_attention_layernorm",
		g + ".decoder.layers.1.mlp.linear_fc2.post_layernorm":             h + ".layers.1.post_feedforward_layernorm",
		g + ".decoder.layers.2.mlp.linear_fc2.post_layernorm":             h + ".layers.2.post_feedforward_layernorm",
		g + ".embedding": "",
		g + ".decoder":   "",
	}
	got := resolved(r.Forward.Mapping, npu, bench)
	for n, b := range want {
		if got[n] != b {
			t.Errorf("forward: %s -> %q, want %q", n, got[n], b)
		}
	}
	rev := resolved(r.Reverse.Mapping, bench, npu)
	for n, b := range want {
		if b != "" && rev[b] != n {
			t.Errorf("reverse: %s -> %q, want %q", b, rev[b], n)
		}
	}
	for _, p := range r.Pairs {
		if strings.HasSuffix(p.NPU, "linear_proj") && p.Band == BandSure {
			t.Errorf("%s <-> %s is sure; its post-norm makes it N:1", p.NPU, p.Bench)
		}
	}
}

// TestExtraLevelKeepsItsChildren: a bare GPTModel root (embedding, decoder,
// output_layer) against a ForCausalLM (model, lm_head): LlamaModel "model"
// holds embed_tokens, whose partner word_embeddings lies beside
// TransformerBlock "decoder", so model is an extra level looked through,
// not decoder's partner swallowing embed_tokens (review item 5). Both
// directions, two prints that hold no rotary module beside the decoder
// (that module once made looking through pay by luck). A Float16Module's
// GPTModel, which its parent holds alone, still pairs with "model".
func TestExtraLevelKeepsItsChildren(t *testing.T) {
	load := func(glob string) *printparse.Tree {
		t.Helper()
		m, err := filepath.Glob(filepath.Join("..", "testdata", "corpus", "prints", glob))
		if err != nil || len(m) != 1 {
			t.Fatalf("%s: %v %v", glob, m, err)
		}
		tr, err := printparse.Load(m[0], printparse.Options{Index: -1})
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	for _, c := range []struct{ npu, bench string }{
		{"megatron/mixtral_like-*.txt", "hf/mixtral_8x7b*.txt"},
		{"megatron/tiny_gpt-*.txt", "hf/qwen2_7b_instruct*.txt"},
	} {
		npu, bench := load(c.npu), load(c.bench)
		r, err := Suggest(npu, bench, Options{Template: TemplateNone})
		if err != nil {
			t.Fatal(err)
		}
		fwd := resolved(r.Forward.Mapping, npu, bench)
		rev := resolved(r.Reverse.Mapping, bench, npu)
		for _, w := range []struct {
			got  map[string]string
			from string
			want string
		}{
			{fwd, "embedding.word_embeddings", "model.embed_tokens"},
			{fwd, "decoder.layers.0", "model.layers.0"},
			{fwd, "decoder.final_layernorm", "model.norm"},
			{fwd, "output_layer", "lm_head"},
			{rev, "model.embed_tokens", "embedding.word_embeddings"},
			{rev, "model.layers.1", "decoder.layers.1"},
		} {
			if w.got[w.from] != w.want {
				t.Errorf("%s: %s -> %q, want %q", c.npu, w.from, w.got[w.from], w.want)
			}
		}
		for _, p := range r.Pairs {
			if p.NPU == "decoder" || p.Bench == "model" {
				t.Errorf("%s: %s is paired with %s; want both looked through", c.npu, p.NPU, p.Bench)
			}
		}
		for _, u := range []string{"embedding.word_embeddings", "model.embed_tokens"} {
			if slices.Contains(r.Unmatched.NPU, u) || slices.Contains(r.Unmatched.Bench, u) {
				t.Errorf("%s: %s unmatched: %s", c.npu, u, r.UnmatchedWhy[u])
			}
		}
	}
}

// TestExtraLevelsDoNotStealLegacy drafts a megatron-core TE GPT against
// legacy Megatron-DeepSpeed's GPT-2 (pipeline parts: attention in one
// layer class, MLP in another): TE's unfused_attention, holding only the
// softmax and the dropout legacy's attention holds too, once took
// legacy's attention from self_attention, banded sure on a synonym
// alone. The extra levels are looked through only where the modules that
// decide pair, no pair is sure on names alone, and the unpaired norms say
// which projection applies them, briefly.
func TestExtraLevelsDoNotStealLegacy(t *testing.T) {
	npu, bench := corpusPair{"gpt2",
		"prints/megatron/gpt2_style-gptmodel-te-learned-posemb-extra-repr__megatron-tp-sp-tutorial-anon.txt",
		"prints/megatron/gpt2_legacy-megatron-deepspeed-flops-profiler-extra-repr-elided__deepspeed-docs-tutorials-flops-profiler.txt"}.load(t)
	r, err := Suggest(npu, bench, Options{Template: TemplateNone})
	if err != nil {
		t.Fatal(err)
	}
	const l = "language_model.transformer.layers."
	want := map[string]string{
		"decoder.layers.0.self_attention":                                  l + "0.attention",
		"decoder.layers.0.self_attention.linear_proj":                      l + "0.attention.dense",
		"decoder.layers.0.self_attention.core_attention":                   "",
		"decoder.layers.0.self_attention.core_attention.unfused_attention": "",
		"decoder.layers.1.mlp":                                             l + "1.mlp",
		"decoder.layers.1.mlp.linear_fc2":                                  l + "1.mlp.dense_4h_to_h",
	}
	got := resolved(r.Forward.Mapping, npu, bench)
	for n, b := range want {
		if got[n] != b {
			t.Errorf("%s -> %q, want %q", n, got[n], b)
		}
	}
	checkSureHasStructure(t, r)
	// A fused norm's explanation names the one projection that applies
	// it; the final norm, after every layer, is fused into none of the
	// layers' projections (review item 18: 32 alternatives, 1.5 KB).
	for n, w := range map[string]string{
		l + "0.input_layernorm":          "self_attention.linear_qkv (",
		l + "1.post_attention_layernorm": "mlp.linear_fc1 (",
	} {
		if !strings.Contains(r.UnmatchedWhy[n], w) {
			t.Errorf("%s: %q, want it to name %s", n, r.UnmatchedWhy[n], w)
		}
	}
	if why := r.UnmatchedWhy["language_model.transformer.final_layernorm"]; strings.Contains(why, "fused") {
		t.Errorf("final_layernorm: %q", why)
	}
	for n, why := range r.UnmatchedWhy {
		if len(why) > 300 {
			t.Errorf("%s: a why of %d bytes", n, len(why))
		}
	}
}

// structureCodes are the reason codes of structural evidence: a pair
// banded sure has one (see alignment.support).
var structureCodes = []string{"kind", "shape", "args", "rotary", "kernel", "group", "subtree", "rest-paired", "dumps"}

// checkSureHasStructure fails for a sure pair whose reasons name no
// structural evidence: names, class names and templates never make a pair
// sure.
func checkSureHasStructure(t *testing.T, r *Result) {
	t.Helper()
	for _, p := range r.Pairs {
		if p.Band == BandSure && !slices.ContainsFunc(p.Reasons, func(c string) bool { return slices.Contains(structureCodes, c) }) {
			t.Errorf("%s <-> %s is sure on %v alone", p.NPU, p.Bench, p.Reasons)
		}
	}
}
