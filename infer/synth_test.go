package infer

import (
	"fmt"
	"strings"
	"testing"

	"github.com/layermap/layermap/printparse/treetest"
)

// synthMindSpeedLLM prints a MindSpeed-LLM (megatron-core) Qwen2.5-style
// GPT model with n layers, as print(model) shows the model list msprobe is
// given.
func synthMindSpeedLLM(n int) string {
	return fmt.Sprintf(`[DistributedDataParallel(
  (module): Float16Module(
    (module): GPTModel(
      (embedding): LanguageModelEmbedding(
        (word_embeddings): VocabParallelEmbedding()
        (embedding_dropout): Dropout(p=0.0, inplace=False)
      )
      (rotary_pos_emb): RotaryEmbedding()
      (decoder): TransformerBlock(
        (layers): ModuleList(
          (0-%d): %d x TransformerLayer(
            (input_layernorm): RMSNorm()
            (self_attention): SelfAttention(
              (core_attention): DotProductAttention(
                (scale_mask_softmax): FusedScaleMaskSoftmax()
                (attention_dropout): Dropout(p=0.0, inplace=False)
              )
              (linear_proj): RowParallelLinear()
              (linear_qkv): ColumnParallelLinear()
              (q_layernorm): IdentityOp()
              (k_layernorm): IdentityOp()
            )
            (pre_cross_attn_layernorm): IdentityOp()
            (cross_attention): IdentityOp()
            (cross_attn_bda): IdentityFuncOp()
            (pre_mlp_layernorm): RMSNorm()
            (mlp): MLP(
              (linear_fc1): ColumnParallelLinear()
              (linear_fc2): RowParallelLinear()
            )
          )
        )
        (final_layernorm): RMSNorm()
      )
      (output_layer): ColumnParallelLinear()
    )
  )
)]
`, n-1, n)
}

// synthHF prints the LLaMA-Factory side of the same model: a Hugging Face
// Qwen2ForCausalLM under DeepSpeed, with n layers.
func synthHF(n int) string {
	return fmt.Sprintf(`DeepSpeedEngine(
  (module): Qwen2ForCausalLM(
    (model): Qwen2Model(
      (embed_tokens): Embedding(152064, 3584)
      (layers): ModuleList(
        (0-%d): %d x Qwen2DecoderLayer(
          (self_attn): Qwen2Attention(
            (q_proj): Linear(in_features=3584, out_features=3584, bias=True)
            (k_proj): Linear(in_features=3584, out_features=512, bias=True)
            (v_proj): Linear(in_features=3584, out_features=512, bias=True)
            (o_proj): Linear(in_features=3584, out_features=3584, bias=False)
          )
          (mlp): Qwen2MLP(
            (gate_proj): Linear(in_features=3584, out_features=18944, bias=False)
            (up_proj): Linear(in_features=3584, out_features=18944, bias=False)
            (down_proj): Linear(in_features=18944, out_features=3584, bias=False)
            (act_fn): SiLU()
          )
          (input_layernorm): Qwen2RMSNorm((3584,), eps=1e-06)
          (post_attention_layernorm): Qwen2RMSNorm((3584,), eps=1e-06)
        )
      )
      (norm): Qwen2RMSNorm((3584,), eps=1e-06)
      (rotary_emb): Qwen2RotaryEmbedding()
    )
    (lm_head): Linear(in_features=3584, out_features=152064, bias=False)
  )
)
`, n-1, n)
}

// TestSynthQwen25Text checks the structures-only draft of a MindSpeed-LLM
// vs LLaMA-Factory Qwen2.5 pair against the seed template for it: every
// seed line must come out (the seed has no known-wrong line).
func TestSynthQwen25Text(t *testing.T) {
	npu := treetest.Parse(t, "mindspeed-llm.txt", synthMindSpeedLLM(4))
	bench := treetest.Parse(t, "llamafactory.txt", synthHF(4))
	r, err := Suggest(npu, bench, Options{Template: TemplateNone})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"TopLayer":         {"0.module: module"},
		"Float16Module":    {"module: model", "module.output_layer: lm_head"},
		"GPTModel":         {"embedding.word_embeddings: embed_tokens", "decoder.layers: layers", "decoder.final_layernorm: norm"},
		"TransformerLayer": {"self_attention: self_attn", "pre_mlp_layernorm: post_attention_layernorm"},
		"SelfAttention":    {"linear_proj: o_proj"},
		"MLP":              {"linear_fc1: up_proj", "linear_fc2: down_proj"},
	}
	wantRev := map[string][]string{
		"TopLayer":          {"module: 0.module"},
		"Qwen2ForCausalLM":  {"model: module", "lm_head: module.output_layer"},
		"Qwen2Model":        {"embed_tokens: embedding.word_embeddings", "layers: decoder.layers", "norm: decoder.final_layernorm"},
		"Qwen2DecoderLayer": {"self_attn: self_attention", "post_attention_layernorm: pre_mlp_layernorm"},
		"Qwen2Attention":    {"o_proj: linear_proj"},
		"Qwen2MLP":          {"up_proj: linear_fc1", "down_proj: linear_fc2"},
	}
	for _, d := range []struct {
		name string
		got  map[string][]string
		want map[string][]string
	}{{"forward", lines(r.Forward.Mapping), want}, {"reverse", lines(r.Reverse.Mapping), wantRev}} {
		for c, ls := range d.want {
			for _, l := range ls {
				if !contains(d.got[c], l) {
					t.Errorf("%s: %s: %s missing; got %v", d.name, c, l, d.got)
				}
			}
		}
	}
	if r.Forward.Proven != 1 || r.Reverse.Proven != 1 {
		t.Errorf("proven %v / %v, want 1", r.Forward.Proven, r.Reverse.Proven)
	}
	if len(r.Forward.Conflicts) != 0 {
		t.Errorf("conflicts %v, want none", r.Forward.Conflicts)
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// BenchmarkSuggest60 drafts a 60-layer MindSpeed-LLM vs LLaMA-Factory pair
// (both directions, resolver proof included).
func BenchmarkSuggest60(b *testing.B) {
	npu := treetest.Parse(b, "mindspeed-llm-60.txt", synthMindSpeedLLM(60))
	bench := treetest.Parse(b, "llamafactory-60.txt", synthHF(60))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Suggest(npu, bench, Options{Template: TemplateNone}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSuggestPairA drafts corpus pair A with templates (the default).
func BenchmarkSuggestPairA(b *testing.B) {
	npu, bench := pairs[0].load(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Suggest(npu, bench, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestSynthQwen25TextTemplate: with templates on, the Qwen2.5 MindSpeed-LLM
// template applies to the synthetic pair and the draft stays proven.
func TestSynthQwen25TextTemplate(t *testing.T) {
	npu := treetest.Parse(t, "mindspeed-llm.txt", synthMindSpeedLLM(60))
	bench := treetest.Parse(t, "llamafactory.txt", synthHF(60))
	r, err := Suggest(npu, bench, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(r.Forward.Template, "qwen2.5_mindspeed-llm_to_llamafactory") || !strings.HasPrefix(r.Reverse.Template, "qwen2.5_llamafactory_to_mindspeed-llm") {
		t.Errorf("templates %q / %q", r.Forward.Template, r.Reverse.Template)
	}
	if r.Forward.Proven != 1 || r.Reverse.Proven != 1 || len(r.Forward.Conflicts) != 0 {
		t.Errorf("proven %v / %v conflicts %v", r.Forward.Proven, r.Reverse.Proven, r.Forward.Conflicts)
	}
	got := lines(r.Forward.Mapping)
	if !contains(got["Float16Module"], "module.output_layer: lm_head") || !contains(got["TransformerLayer"], "self_attention: self_attn") {
		t.Errorf("mapping %v", got)
	}
}

// BenchmarkSuggest60Template is BenchmarkSuggest60 with template
// detection on (the default).
func BenchmarkSuggest60Template(b *testing.B) {
	npu := treetest.Parse(b, "mindspeed-llm-60.txt", synthMindSpeedLLM(60))
	bench := treetest.Parse(b, "llamafactory-60.txt", synthHF(60))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Suggest(npu, bench, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
