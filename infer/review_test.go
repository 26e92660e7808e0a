package infer

import (
	"slices"
	"strings"
	"testing"

	"github.com/layermap/layermap/printparse/treetest"
)

// TestStructuralNoteSides checks that the N:1 note on a fused pair names
// the side that fuses, in each draft: on pair A, MindSpeed's linear_fc1 is
// the NPU side of the forward draft and the bench side of the reverse one.
func TestStructuralNoteSides(t *testing.T) {
	npu, bench := pairs[0].load(t)
	r, err := Suggest(npu, bench, Options{Template: TemplateNone})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		marshal   func() ([]byte, error)
		want, bad string
	}{
		{"forward", r.Forward.Mapping.Marshal, "N:1: NPU linear_fc1 fuses gate_proj and up_proj", "N:1: bench linear_fc1"},
		{"reverse", r.Reverse.Mapping.Marshal, "N:1: bench linear_fc1 fuses gate_proj and up_proj", "N:1: NPU linear_fc1"},
	} {
		b, err := tc.marshal()
		if err != nil {
			t.Fatal(err)
		}
		if s := string(b); !strings.Contains(s, tc.want) || strings.Contains(s, tc.bad) {
			t.Errorf("%s draft: want a comment %q and none %q:\n%s", tc.name, tc.want, tc.bad, s)
		}
	}
}

// TestTemplateMissesNeedAPartner checks that "fires without a bench
// target" is only said of modules that have a partner the line misses: on
// MindSpeed-MM (16 vision, 8 text layers) against the full new-layout 3B
// print (32, 36), the reverse template's lines fire on blocks 16-31 and
// layers 8-35, which have no partner at all, and no line is at fault;
// the seed template on pair A still misses the text layers' norms.
func TestTemplateMissesNeedAPartner(t *testing.T) {
	full := corpusPair{"ms_vs_new3b", pairs[0].npu,
		"prints/hf/qwen2_5_vl_3b-new-layout-model.visual-model.language_model__inspect-model-script-anon.txt"}
	for _, tc := range []struct {
		pair       corpusPair
		template   string
		wantMisses int
	}{
		{full, TemplateAuto, 0},
		{pairs[0], "qwen2.5-vl_mindspeed-mm_to_llamafactory", 3},
	} {
		npu, bench := tc.pair.load(t)
		r, err := Suggest(npu, bench, Options{Template: tc.template})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, l := range r.TemplateUnapplied {
			if strings.Contains(l, "without a bench target") {
				n++
			}
		}
		if n != tc.wantMisses {
			t.Errorf("%s, template %s: %d lines said to fire without a bench target, want %d:\n%s",
				tc.pair.name, tc.template, n, tc.wantMisses, strings.Join(r.TemplateUnapplied, "\n"))
		}
	}
}

// TestFusedHead checks pair D's heads: NeMo 1's BertLMHead computes the
// logits itself (bionemo maps its bias to NeMo 2's output_layer.bias), so
// lm_head <-> lm_head is N:1 and output_layer is explained, in both
// directions; pair A's output_layer <-> lm_head is a plain 1:1 pair.
func TestFusedHead(t *testing.T) {
	d := pairs[1]
	for _, tc := range []struct {
		pair      corpusPair
		headNote  string // the note on the lm_head pair, "" for none
		unmatched string // the module the note explains
	}{
		{d, "N:1: NPU lm_head (BertLMHead) has no output projection while the other side follows lm_head with output_layer", "output_layer"},
		{corpusPair{"D_reverse", d.bench, d.npu}, "N:1: bench lm_head (BertLMHead) has no output projection while the other side follows lm_head with output_layer", "output_layer"},
		{pairs[0], "", ""},
	} {
		npu, bench := tc.pair.load(t)
		r, err := Suggest(npu, bench, Options{Template: TemplateNone})
		if err != nil {
			t.Fatal(err)
		}
		var notes []string
		for _, p := range r.Pairs {
			if strings.Contains(p.Structural, "no output projection") {
				notes = append(notes, p.NPU+": "+p.Structural)
			}
		}
		if tc.headNote == "" {
			if len(notes) != 0 {
				t.Errorf("%s: head notes %q, want none", tc.pair.name, notes)
			}
			continue
		}
		if len(notes) != 1 || !strings.Contains(notes[0], "lm_head: "+tc.headNote) {
			t.Errorf("%s: head notes %q, want one on lm_head starting %q", tc.pair.name, notes, tc.headNote)
		}
		if why := r.UnmatchedWhy[tc.unmatched]; !strings.HasPrefix(why, "output projection: the other side's lm_head computes it") {
			t.Errorf("%s: %s unmatched because %q", tc.pair.name, tc.unmatched, why)
		}
	}
}

// TestMetaLlamaNames drafts Meta's Llama naming (FSDP1-wrapped reference
// Transformer: wq/wk/wv/wo, feed_forward w1/w2/w3, output) against HF
// Llama-2: every module has its partner, with the lines an expert writes
// (w1 is the gate, w3 the up projection, w2 the down projection).
func TestMetaLlamaNames(t *testing.T) {
	p := corpusPair{"fsdp_llama_vs_hf_llama2",
		"prints/wrapped/llama_tiny-fsdp1-tp-log-prefixed__saforem2-mmm-readme-anon.txt",
		"prints/hf/llama2_7b__timing-script-docstring-anon.txt"}
	npu, bench := p.load(t)
	r, err := Suggest(npu, bench, Options{Template: TemplateNone})
	if err != nil {
		t.Fatal(err)
	}
	got := lines(r.Forward.Mapping)
	want := map[string][]string{
		"TopLayer": {"_fsdp_wrapped_module.tok_embeddings: model.embed_tokens", "_fsdp_wrapped_module.layers: model.layers",
			"_fsdp_wrapped_module.norm: model.norm", "_fsdp_wrapped_module.output: lm_head"},
		"TransformerBlock": {"attention: self_attn", "feed_forward: mlp", "attention_norm: input_layernorm", "ffn_norm: post_attention_layernorm"},
		"Attention":        {"wq: q_proj", "wk: k_proj", "wv: v_proj", "wo: o_proj"},
		"FeedForward":      {"w1: gate_proj", "w2: down_proj", "w3: up_proj"},
	}
	for c, ls := range want {
		g := slices.Clone(got[c])
		slices.Sort(g)
		slices.Sort(ls)
		if !slices.Equal(g, ls) {
			t.Errorf("%s: got %q, want %q", c, g, ls)
		}
	}
	if len(got) != len(want) {
		t.Errorf("classes %v, want %d", keys(got), len(want))
	}
	if r.Coverage != 1 || len(r.Unmatched.NPU) != 0 {
		t.Errorf("coverage %.3f, unmatched NPU %q", r.Coverage, r.Unmatched.NPU)
	}
}

// TestPEFTAgainstPlain drafts PEFT LoRA Mistral against plain HF Llama-2:
// a ParameterDict (lora_embedding_A, no forward) once took rotary_emb as
// a low-confidence line; now it pairs with nothing, the LoRA wrappers pair
// with the plain modules (embed_tokens like q_proj), and the adapter
// modules say why they have no partner.
func TestPEFTAgainstPlain(t *testing.T) {
	p := corpusPair{"peft_mistral_vs_hf_llama2",
		"prints/wrapped/mistral_7b-peft-lora-embedding-paramdict-inline__peft-examples-peft_lora_clm_with_additional_tokens-ipynb.txt",
		"prints/hf/llama2_7b__timing-script-docstring-anon.txt"}
	npu, bench := p.load(t)
	r, err := Suggest(npu, bench, Options{Template: TemplateNone})
	if err != nil {
		t.Fatal(err)
	}
	y, err := r.Forward.Mapping.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(y), "lora_embedding") || strings.Contains(string(y), "base_layer") {
		t.Errorf("draft names a PEFT internal:\n%s", y)
	}
	paired := map[string]string{}
	for _, q := range r.Pairs {
		paired[q.NPU] = q.Bench
	}
	for npu, want := range map[string]string{
		"base_model.model.model.embed_tokens":              "model.embed_tokens",
		"base_model.model.model.layers.0.self_attn.q_proj": "model.layers.0.self_attn.q_proj",
		"base_model.model.lm_head":                         "lm_head",
	} {
		if paired[npu] != want {
			t.Errorf("%s paired with %q, want %q", npu, paired[npu], want)
		}
	}
	for path, why := range map[string]string{
		"base_model.model.model.embed_tokens.lora_embedding_A":            "parameters (ParameterDict)",
		"base_model.model.model.embed_tokens.base_layer":                  "PEFT base layer: its wrapper embed_tokens is paired instead",
		"base_model.model.model.layers.0.self_attn.q_proj.lora_A":         "LoRA adapter",
		"base_model.model.model.layers.0.self_attn.q_proj.lora_B.default": "LoRA adapter",
	} {
		if got := r.UnmatchedWhy[path]; !strings.HasPrefix(got, why) {
			t.Errorf("%s unmatched because %q, want %q...", path, got, why)
		}
	}
}

// TestRotaryOnlyPairsRotary checks that a rotary embedding pairs only with
// a rotary embedding: Megatron's learned position_embeddings (tiny GPT,
// local spec) once took HF Qwen2.5's rotary_emb as a (low-confidence)
// line; torchtune's Llama3ScaledRoPE still pairs with rotary_emb.
func TestRotaryOnlyPairsRotary(t *testing.T) {
	for _, tc := range []struct {
		pair         corpusPair
		npu, bench   string // want paired ("" bench: unmatched)
		unmatchedWhy string
	}{
		{corpusPair{"tiny_gpt_vs_qwen25",
			"prints/megatron/tiny_gpt-gptmodel-local-spec-fusedlayernorm__mindspeed-tutorial-anon.txt",
			"prints/hf/qwen2_5_7b_instruct__qwrdxer-blog-qwen2.5-7b-lora-peft.txt"},
			"embedding.position_embeddings", "", "learned position table: the other side encodes positions with rotary embeddings"},
		{corpusPair{"torchtune_vs_hf_llama31",
			"prints/wrapped/llama3_8b-torchtune-fsdp2-checkpointwrapper-lora__torchtune-notes-anon.txt",
			"prints/hf/llama3_1_8b-bnb-4bit-TRAILING-DOUBLE-SPACES__medium-style-blog-md-anon.txt"},
			"layers.0._checkpoint_wrapped_module.attn.pos_embeddings", "model.layers.0.self_attn.rotary_emb", ""},
	} {
		npu, bench := tc.pair.load(t)
		r, err := Suggest(npu, bench, Options{Template: TemplateNone})
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		for _, p := range r.Pairs {
			if p.NPU == tc.npu {
				got = p.Bench
			}
		}
		if got != tc.bench {
			t.Errorf("%s: %s paired with %q, want %q", tc.pair.name, tc.npu, got, tc.bench)
		}
		if tc.unmatchedWhy != "" && !strings.HasPrefix(r.UnmatchedWhy[tc.npu], tc.unmatchedWhy) {
			t.Errorf("%s: %s unmatched because %q, want %q...", tc.pair.name, tc.npu, r.UnmatchedWhy[tc.npu], tc.unmatchedWhy)
		}
	}
}

// TestUnmatchedExplained checks the reasons given for modules that have no
// partner by design: HF norms that Transformer Engine fuses into the next
// projection (TELayerNormColumnParallelLinear), and HF's per-attention
// rotary_emb where Megatron has one per model (pair A: the text model's,
// not the vision tower's).
func TestUnmatchedExplained(t *testing.T) {
	te := corpusPair{"mcore_te_llama_vs_hf_llama2",
		"prints/megatron/llama_7b_like-gptmodel-te-old-mcore-no-qk-layernorm__finetune-script-comment-anon.txt",
		"prints/hf/llama2_7b__timing-script-docstring-anon.txt"}
	for _, tc := range []struct {
		pair corpusPair
		why  map[string]string // bench path -> reason
	}{
		{te, map[string]string{
			"model.layers.3.input_layernorm":          "norm fused on the other side: self_attention.linear_qkv (TELayerNormColumnParallelLinear)",
			"model.layers.3.post_attention_layernorm": "norm fused on the other side: mlp.linear_fc1 (TELayerNormColumnParallelLinear)",
			"model.layers.3.self_attn.rotary_emb":     "rotary embedding: the other side has one at rotary_pos_emb (paired there)",
		}},
		{pairs[0], map[string]string{
			"module.model.layers.0.self_attn.rotary_emb":                                  "rotary embedding: the other side has one at 0.module.module.text_decoder.rotary_pos_emb (paired there)",
			"0.module.module.text_decoder.decoder.layers.0.self_attention.core_attention": "attention kernel: the other side computes it as a function",
		}},
	} {
		npu, bench := tc.pair.load(t)
		r, err := Suggest(npu, bench, Options{Template: TemplateNone})
		if err != nil {
			t.Fatal(err)
		}
		for path, want := range tc.why {
			if got := r.UnmatchedWhy[path]; !strings.HasPrefix(got, want) {
				t.Errorf("%s: %s unmatched because %q, want %q...", tc.pair.name, path, got, want)
			}
		}
	}
}

// TestUnintendedCollapsed checks the report's "unintended" list on a TE
// Megatron Llama against HF: msprobe pairs the IdentityOp input_layernorm
// with HF's RMSNorm by name in all 32 layers; the report says so once per
// repeat group, and says the rows will differ for no precision reason.
func TestUnintendedCollapsed(t *testing.T) {
	p := corpusPair{"mcore_te_llama_vs_hf_llama2",
		"prints/megatron/llama_7b_like-gptmodel-te-old-mcore-no-qk-layernorm__finetune-script-comment-anon.txt",
		"prints/hf/llama2_7b__timing-script-docstring-anon.txt"}
	npu, bench := p.load(t)
	r, err := Suggest(npu, bench, Options{Template: TemplateNone})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Forward.Unintended) != 32 {
		t.Fatalf("%d unintended pairs, want the 32 input_layernorm placeholders: %v", len(r.Forward.Unintended), r.Forward.Unintended)
	}
	var b strings.Builder
	if err := WriteReport(&b, r, "text"); err != nil {
		t.Fatal(err)
	}
	_, sec, _ := strings.Cut(b.String(), "\nunintended, band unsure (modules without a partner that the draft still pairs):\n")
	sec, _, _ = strings.Cut(sec, "\n\n")
	sec += "\n"
	want := "  decoder.layers.{0-31}.input_layernorm -> model.layers.{0-31}.input_layernorm: placeholder (IdentityOp) of the norm self_attention.linear_qkv (TELayerNormColumnParallelLinear) applies inside the projection (see structural); " +
		"one side is a placeholder that msprobe pairs by name: those rows will differ with no precision problem behind them\n" +
		"  reverse draft: model.layers.{0-31}.input_layernorm -> decoder.layers.{0-31}.input_layernorm: norm fused on the other side"
	if !strings.HasPrefix(sec, want) || strings.Count(sec, "\n") != 2 {
		t.Errorf("unintended section:\n%s\nwant two lines starting:\n%s", sec, want)
	}
}

// TestMixtralMoE drafts a megatron-core Mixtral-like MoE print against HF
// Mixtral: the MoE block (mlp <-> block_sparse_moe) is a confident pair and
// the experts' fused linear_fc1 pairs with w3 (up), its gate w1 named.
func TestMixtralMoE(t *testing.T) {
	p := corpusPair{"mcore_mixtral_vs_hf_mixtral",
		"prints/megatron/mixtral_like-moe-LOOKALIKE-custom-repr-with-comments__mbridge-memory_estimator-README.txt",
		"prints/hf/mixtral_8x7b__keras-hub-models-mixtral-README.txt"}
	npu, bench := p.load(t)
	r, err := Suggest(npu, bench, Options{Template: TemplateNone})
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]Pair{}
	for _, q := range r.Pairs {
		found[q.NPU] = q
	}
	moe := found["decoder.layers.0.mlp"]
	if moe.Bench != "model.layers.0.block_sparse_moe" || moe.Band != BandSure {
		t.Errorf("decoder.layers.0.mlp: %+v, want a confident pair with model.layers.0.block_sparse_moe", moe)
	}
	fc1 := found["decoder.layers.0.mlp.experts.local_experts.0.linear_fc1"]
	if fc1.Bench != "model.layers.0.block_sparse_moe.experts.0.w3" || !strings.Contains(fc1.Structural, "fuses w1 and w3") {
		t.Errorf("expert linear_fc1: %+v, want w3 with an N:1 note naming w1", fc1)
	}
}

// TestContradictedTemplateDropped checks that auto-detection stays out
// when a template's classes occur but the structures contradict it: a
// NeMo 2 GPT (Float16Module, GPTModel, TransformerLayer, MLP: MindSpeed-LLM
// class names) against Qwen2.5-VL once drafted with the Qwen2.5 text
// template as its prior while contradicting 44 of its 46 hits. Named
// explicitly, the template is still used.
func TestContradictedTemplateDropped(t *testing.T) {
	p := corpusPair{"nemo2_gpt_vs_qwen25vl",
		"prints/nemo/gpt_small-nemo2-gptmodel-float16-local-linear__nemo-run-log-anon.txt",
		"prints/hf/qwen2_5_vl_3b-old-layout-deepspeed__msprobe-docs-llamafactory-qwen25vl.txt"}
	npu, bench := p.load(t)
	r, err := Suggest(npu, bench, Options{Template: TemplateAuto})
	if err != nil {
		t.Fatal(err)
	}
	if r.Forward.Template != "" || len(r.TemplateUnapplied) == 0 ||
		!strings.HasPrefix(r.TemplateUnapplied[0], "qwen2.5_mindspeed-llm_to_llamafactory-expert: not used: its classes occur here, but the structures contradict") {
		t.Errorf("template %q, notes %q: want none, and the detected one said not used", r.Forward.Template, r.TemplateUnapplied)
	}
	b, err := r.Forward.Mapping.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "# Template prior: none") {
		t.Errorf("header names a prior:\n%s", b)
	}
	r, err = Suggest(npu, bench, Options{Template: "qwen2.5_mindspeed-llm_to_llamafactory-expert"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Forward.Template != "qwen2.5_mindspeed-llm_to_llamafactory-expert" {
		t.Errorf("named template dropped: %q", r.Forward.Template)
	}
}

// qwen3TinyHF is the transformers Qwen3ForCausalLM print of the model in
// the XTuner FSDP2 dump of the corpus (hidden 512, 32 heads of 128, 8 KV
// heads, intermediate 12288, 3 layers), written by hand after the
// transformers Qwen3 layout: the same model on the plain HF side.
const qwen3TinyHF = `Qwen3ForCausalLM(
  (model): Qwen3Model(
    (embed_tokens): Embedding(151936, 512, padding_idx=151645)
    (layers): ModuleList(
      (0-2): 3 x Qwen3DecoderLayer(
        (self_attn): Qwen3Attention(
          (q_proj): Linear(in_features=512, out_features=4096, bias=False)
          (k_proj): Linear(in_features=512, out_features=1024, bias=False)
          (v_proj): Linear(in_features=512, out_features=1024, bias=False)
          (o_proj): Linear(in_features=4096, out_features=512, bias=False)
          (q_norm): Qwen3RMSNorm((128,), eps=1e-06)
          (k_norm): Qwen3RMSNorm((128,), eps=1e-06)
        )
        (mlp): Qwen3MLP(
          (gate_proj): Linear(in_features=512, out_features=12288, bias=False)
          (up_proj): Linear(in_features=512, out_features=12288, bias=False)
          (down_proj): Linear(in_features=12288, out_features=512, bias=False)
          (act_fn): SiLU()
        )
        (input_layernorm): Qwen3RMSNorm((512,), eps=1e-06)
        (post_attention_layernorm): Qwen3RMSNorm((512,), eps=1e-06)
      )
    )
    (norm): Qwen3RMSNorm((512,), eps=1e-06)
    (rotary_emb): Qwen3RotaryEmbedding()
  )
  (lm_head): Linear(in_features=512, out_features=151936, bias=False)
)
`

// TestCheckpointWrapperClassLines drafts XTuner's FSDP2 Qwen3 (layers a
// ModuleDict; layers 0 and 1 under FSDPCheckpointWrapper, layer 2 not)
// against the same model in transformers: the wrappers pair with the
// decoder layers and one FSDPCheckpointWrapper block consumes the
// _checkpoint_wrapped_module level, as an expert writes it, instead of a
// low-confidence TopLayer line per layer index pairing the wrapped module.
func TestCheckpointWrapperClassLines(t *testing.T) {
	npu, _ := corpusPair{"xtuner", "prints/wrapped/qwen3_tiny-xtuner-v1-fsdp2-moduledict-layers-uncompressed-log-prefixed__xtuner-docs-anon.txt", pairs[0].bench}.load(t)
	bench := treetest.Parse(t, "qwen3_tiny_hf.txt", qwen3TinyHF)
	r, err := Suggest(npu, bench, Options{Template: TemplateNone})
	if err != nil {
		t.Fatal(err)
	}
	got := lines(r.Forward.Mapping)
	want := map[string][]string{
		"TopLayer": {"embed_tokens: model.embed_tokens", "layers: model.layers", "norm: model.norm", "rotary_emb: model.rotary_emb"},
		"FSDPCheckpointWrapper": {"_checkpoint_wrapped_module.input_layernorm: input_layernorm", "_checkpoint_wrapped_module.mlp: mlp",
			"_checkpoint_wrapped_module.post_attention_layernorm: post_attention_layernorm", "_checkpoint_wrapped_module.self_attn: self_attn"},
	}
	for c, ls := range want {
		g := slices.Clone(got[c])
		slices.Sort(g)
		if !slices.Equal(g, ls) {
			t.Errorf("%s: got %q, want %q", c, g, ls)
		}
	}
	if len(got) != len(want) {
		t.Errorf("classes %v, want %d", keys(got), len(want))
	}
	for _, p := range r.Pairs {
		if p.Band != BandSure {
			t.Errorf("pair %s <-> %s is %s, want sure", p.NPU, p.Bench, p.Band)
		}
	}
	if len(r.Forward.Unintended) != 0 || r.Coverage < 0.95 {
		t.Errorf("unintended %v, coverage %.3f", r.Forward.Unintended, r.Coverage)
	}
}

// TestLeftoverNeedsKinParents drafts a swiss-ai Megatron MoE (routed
// TEGroupedMLP experts plus shared_experts) against a Mixtral-like one (no
// shared experts): shared_experts.linear_fc1 once took routed expert 0's
// linear_fc1 as a score-1.00 leftover line because the two leaves share a
// name; two unpaired parents that look nothing alike now forbid it.
func TestLeftoverNeedsKinParents(t *testing.T) {
	p := corpusPair{"swiss_moe_vs_mixtral_like",
		"prints/wrapped/moe_draft-ddp-float16-gptmodel-te-srun-rank-prefix-wrapped-lines__swiss-ai-notes-anon.txt",
		"prints/megatron/mixtral_like-moe-LOOKALIKE-custom-repr-with-comments__mbridge-memory_estimator-README.txt"}
	npu, bench := p.load(t)
	r, err := Suggest(npu, bench, Options{Template: TemplateNone})
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range r.Pairs {
		if strings.Contains(q.NPU, "shared_experts") {
			t.Errorf("%s paired with %s (score %.2f): the other model has no shared experts", q.NPU, q.Bench, q.Score)
		}
	}
}
