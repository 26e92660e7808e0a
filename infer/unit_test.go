package infer

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/layermap/layermap/printparse/treetest"
)

func TestTokenize(t *testing.T) {
	tests := []struct {
		name string
		want []string
	}{
		{"self_attention", []string{"attn"}},
		{"self_attn", []string{"attn"}},
		{"linear_fc1", []string{"up"}},
		{"dense_h_to_4h", []string{"up"}},
		{"dense_4h_to_h", []string{"down"}},
		{"query_key_value", []string{"qkv"}},
		{"lm_head", []string{"head"}},
		{"output_layer", []string{"head"}},
		{"image_encoder", []string{"vision"}},
		{"visual", []string{"vision"}},
		{"projector", []string{"merger"}},
		{"input_layernorm", []string{"norm", "1"}},
		{"norm1", []string{"norm", "1"}},
		{"pre_mlp_layernorm", []string{"norm", "2"}},
		{"post_attention_layernorm", []string{"norm", "2"}},
		{"ln_q", []string{"norm", "q"}},
		{"embed_tokens", []string{"embed"}},
		{"word_embeddings", []string{"embed"}},
		{"o_proj", []string{"proj", "out"}},
		{"linear_proj", []string{"proj", "out"}},
		{"rotary_pos_emb", []string{"rotary"}},
		{"language_model", []string{"lm"}},
		{"text_decoder", []string{"lm"}},
		{"model", []string{"lm"}},
		// Meta's Llama reference code and torchtune
		{"wq", []string{"q", "proj"}},
		{"wqkv", []string{"qkv"}}, // InternLM2's fused projection, as linear_qkv
		{"linear_qkv", []string{"qkv"}},
		{"wo", []string{"proj", "out"}},
		{"output_proj", []string{"proj", "out"}},
		{"feed_forward", []string{"mlp"}},
		{"block_sparse_moe", []string{"mlp"}},
		{"w1", []string{"gate"}},
		{"w2", []string{"down"}},
		{"w3", []string{"up"}},
		{"output", []string{"head"}},
		{"sa_norm", []string{"norm", "1"}},
		{"mlp_norm", []string{"norm", "2"}},
	}
	for _, tc := range tests {
		if got := tokenize(tc.name, nameStop); !slices.Equal(got, tc.want) {
			t.Errorf("tokenize(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
	classes := []struct {
		class string
		want  []string
	}{
		{"Qwen2_5_VLVisionSdpaAttention", []string{"vision", "attn"}},
		{"ColumnParallelLinear", []string{"linear"}},
		{"VocabParallelEmbedding", []string{"embed"}},
		{"Qwen2RMSNorm", []string{"norm"}},
		{"MultimodalProjector", []string{"merger"}},
	}
	for _, tc := range classes {
		if got := tokenize(tc.class, classStop); !slices.Equal(got, tc.want) {
			t.Errorf("class tokenize(%q) = %q, want %q", tc.class, got, tc.want)
		}
	}
}

func TestHungarian(t *testing.T) {
	tests := []struct {
		name string
		w    [][]float64
		want []int
	}{
		// Greedy would give row 0 column 0 (0.9) and leave row 1 alone.
		{"no stealing", [][]float64{{0.9, 0.8}, {0.85, 0}}, []int{1, 0}},
		{"no edge", [][]float64{{0, 0}, {0, 0.5}}, []int{-1, 1}},
		{"wide", [][]float64{{0.1, 0.2, 0.9}}, []int{2}},
		{"tall", [][]float64{{0.3}, {0.7}, {0.2}}, []int{-1, 0, -1}},
		{"ties go low", [][]float64{{1, 1}, {1, 1}}, []int{0, 1}},
		{"empty", nil, nil},
	}
	for _, tc := range tests {
		if got := hungarian(tc.w); !slices.Equal(got, tc.want) {
			t.Errorf("%s: hungarian = %v, want %v", tc.name, got, tc.want)
		}
	}
}

const toyNPU = `Net(
  (vis): VisTower(
    (layers): ModuleList(
      (0-1): 2 x Layer(
        (input_layernorm): RMSNorm()
        (self_attention): Attention(
          (linear_qkv): ColumnParallelLinear()
        )
      )
    )
  )
  (txt): TextTower(
    (layers): ModuleList(
      (0-2): 3 x Layer(
        (input_layernorm): RMSNorm()
        (self_attention): Attention(
          (linear_qkv): ColumnParallelLinear()
        )
      )
    )
  )
)
`

const toyBench = `HFNet(
  (visual): HFVision(
    (blocks): ModuleList(
      (0-1): 2 x HFVisionBlock(
        (norm1): LayerNorm((8,), eps=1e-06, elementwise_affine=True)
        (attn): HFVisionAttention(
          (qkv): Linear(in_features=8, out_features=24, bias=True)
        )
      )
    )
  )
  (txt): HFText(
    (layers): ModuleList(
      (0-2): 3 x HFLayer(
        (input_layernorm): LayerNorm((8,), eps=1e-06, elementwise_affine=True)
        (self_attn): HFAttention(
          (qkv): Linear(in_features=8, out_features=24, bias=True)
        )
      )
    )
  )
)
`

// TestConflictToy: Layer serves two towers that need different renames;
// the text tower (3 layers x 2 lines) keeps the class rule, the vision
// tower (2 x 2) escapes through per-index keys at VisTower, and the
// resolver proves every pair.
func TestConflictToy(t *testing.T) {
	npu := treetest.Parse(t, "npu.txt", toyNPU)
	bench := treetest.Parse(t, "bench.txt", toyBench)
	r, err := Suggest(npu, bench, Options{Template: TemplateNone})
	if err != nil {
		t.Fatal(err)
	}
	got := lines(r.Forward.Mapping)
	want := map[string][]string{
		"TopLayer":  {"vis: visual"},
		"VisTower":  {"layers: blocks", "layers.0.input_layernorm: blocks.0.norm1", "layers.0.self_attention: blocks.0.attn", "layers.1.input_layernorm: blocks.1.norm1", "layers.1.self_attention: blocks.1.attn"},
		"Layer":     {"self_attention: self_attn"},
		"Attention": {"linear_qkv: qkv"},
	}
	for c, ls := range want {
		slices.Sort(ls)
		g := slices.Clone(got[c])
		slices.Sort(g)
		if !slices.Equal(g, ls) {
			t.Errorf("%s: got %q, want %q", c, g, ls)
		}
	}
	if len(got) != len(want) {
		t.Errorf("classes %v, want %v", keys(got), keys(want))
	}
	if len(r.Forward.Conflicts) != 1 || r.Forward.Conflicts[0].Class != "Layer" || !r.Forward.Conflicts[0].Proven {
		t.Fatalf("conflicts %+v, want one proven on Layer", r.Forward.Conflicts)
	}
	c := r.Forward.Conflicts[0]
	if !slices.Equal(c.Keeps, []string{"txt.layers.{0-2}"}) || !slices.Equal(c.Escapes, []string{"vis.layers.{0-1}"}) {
		t.Errorf("keeps %v escapes %v", c.Keeps, c.Escapes)
	}
	if r.Forward.Proven != 1 || r.Reverse.Proven != 1 || len(r.Forward.Sidecar) != 0 {
		t.Errorf("proven %v / %v, sidecar %v", r.Forward.Proven, r.Reverse.Proven, r.Forward.Sidecar)
	}
	var rep bytes.Buffer
	if err := WriteReport(&rep, r, "text"); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"conflicts (1):", "Layer: proven by the resolver", "vis.layers.{0-1} wants {input_layernorm: norm1, self_attention: attn}"} {
		if !strings.Contains(rep.String(), w) {
			t.Errorf("report lacks %q:\n%s", w, rep.String())
		}
	}
}

func keys(m map[string][]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestSeedTemplateCorrected forces the seed MindSpeed-MM template on pair
// A: its wrong line (MMGPTModel output_layer: lm_head, a target that does
// not exist) must not be copied; the draft writes the right line at
// Float16Module and says why the seed line did not apply.
func TestSeedTemplateCorrected(t *testing.T) {
	npu, bench := pairs[0].load(t)
	r, err := Suggest(npu, bench, Options{Template: "qwen2.5-vl_mindspeed-mm_to_llamafactory"})
	if err != nil {
		t.Fatal(err)
	}
	got := lines(r.Forward.Mapping)
	if contains(got["MMGPTModel"], "output_layer: lm_head") {
		t.Error("the seed's wrong line MMGPTModel output_layer: lm_head was copied")
	}
	if !contains(got["Float16Module"], "module.text_decoder.output_layer: lm_head") {
		t.Errorf("Float16Module lacks the corrected line: %v", got["Float16Module"])
	}
	found := false
	for _, u := range r.TemplateUnapplied {
		if strings.Contains(u, "MMGPTModel: output_layer -> lm_head") && strings.Contains(u, "is paired with module.lm_head instead") {
			found = true
		}
	}
	if !found {
		t.Errorf("unapplied lines do not explain output_layer: %q", r.TemplateUnapplied)
	}
	if r.Forward.Template != "qwen2.5-vl_mindspeed-mm_to_llamafactory" || r.Forward.Proven != 1 || len(r.Forward.Conflicts) != 2 {
		t.Errorf("template %q proven %v conflicts %v", r.Forward.Template, r.Forward.Proven, r.Forward.Conflicts)
	}
}

func TestEngineNames(t *testing.T) {
	for _, tc := range []struct {
		class         string
		engine, wraps bool
		unsharded     string
	}{
		{"DistributedDataParallel", true, true, "DistributedDataParallel"},
		{"TorchFullyShardedDataParallel", true, true, "TorchFullyShardedDataParallel"},
		{"FSDPFloat16Module", false, true, "Float16Module"},
		{"FSDPTransformerLayer", false, false, "TransformerLayer"},
		{"FSDP", false, false, "FSDP"},
		{"FSDPtiny", false, false, "FSDPtiny"},
		{"Float16Module", false, true, "Float16Module"},
		{"GPTModel", false, false, "GPTModel"},
	} {
		if got := isEngine(tc.class); got != tc.engine {
			t.Errorf("isEngine(%q) = %v", tc.class, got)
		}
		if got := isWrapper(tc.class); got != tc.wraps {
			t.Errorf("isWrapper(%q) = %v", tc.class, got)
		}
		if got := unsharded(tc.class); got != tc.unsharded {
			t.Errorf("unsharded(%q) = %q", tc.class, got)
		}
	}
}
