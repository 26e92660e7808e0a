package truth

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/layermap/layermap/printparse"
	_ "github.com/layermap/layermap/printparse/testkit" // the one -update flag of go test ./...
)

const npuText = `GPTModel(
  (embedding): LanguageModelEmbedding(
    (word_embeddings): VocabParallelEmbedding()
  )
  (decoder): TransformerBlock(
    (layers): ModuleList(
      (0-2): 3 x TransformerLayer(
        (input_layernorm): IdentityOp()
        (self_attention): SelfAttention(
          (core_attention): TEDotProductAttention(
            (flash_attention): FlashAttention()
          )
          (linear_qkv): TELayerNormColumnParallelLinear()
        )
        (mlp): MoELayer(
          (experts): TEGroupedMLP(
            (linear_fc1): TEColumnParallelGroupedLinear()
          )
        )
      )
    )
  )
  (output_layer): ColumnParallelLinear()
)
`

const benchText = `LlamaForCausalLM(
  (model): LlamaModel(
    (embed_tokens): Embedding(32000, 4096)
    (layers): ModuleList(
      (0-2): 3 x LlamaDecoderLayer(
        (self_attn): LlamaAttention(
          (q_proj): Linear(in_features=4096, out_features=4096, bias=False)
          (k_proj): Linear(in_features=4096, out_features=4096, bias=False)
        )
        (mlp): MoeBlock(
          (experts): ModuleList(
            (0-3): 4 x Expert(
              (up): Linear(in_features=4096, out_features=8, bias=False)
              (act): SiLU()
            )
          )
        )
        (input_layernorm): LlamaRMSNorm((4096,), eps=1e-05)
      )
    )
  )
  (lm_head): Linear(in_features=4096, out_features=32000, bias=False)
)
`

const goodTruth = `name: p
npu: npu.txt
bench: bench.txt
variants: [explicit, moduledict, cut:2]
let:
  L: decoder.layers.<i>
  H: model.layers.<i>
modules:
  embedding: none
  embedding.word_embeddings: model.embed_tokens
  decoder: none
  $L: $H
  $L.input_layernorm: {absorbed: $H.input_layernorm, into: $L.self_attention.linear_qkv}
  $L.self_attention: $H.self_attn
  $L.self_attention.core_attention.**: none
  $L.self_attention.linear_qkv: {fused: [$H.self_attn.q_proj, $H.self_attn.k_proj]}
  $L.mlp: $H.mlp
  $L.mlp.experts: {experts: $H.mlp.experts.<e>}
  $L.mlp.experts.linear_fc1: {experts: [$H.mlp.experts.<e>.up]}
  output_layer: lm_head
bench_only:
  - model
  - $H.mlp.experts.*.act
`

func writePair(t *testing.T, truth string) *Pair {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "p")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"npu.txt": npuText, "bench.txt": benchText, "truth.yaml": truth} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func labels(t *testing.T, p *Pair, variant string) (*Labels, error) {
	t.Helper()
	npu, bench, err := p.Trees()
	if err != nil {
		t.Fatal(err)
	}
	if variant != "" {
		if npu, bench, err = Variant(npu, bench, variant); err != nil {
			t.Fatal(err)
		}
	}
	return p.Labels(npu, bench)
}

func TestLabels(t *testing.T) {
	p := writePair(t, goodTruth)
	l, err := labels(t, p, "")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path    string
		reverse bool
		kind    string
		accept  []string
	}{
		{"embedding", false, None, nil},
		{"embedding.word_embeddings", false, OneToOne, []string{"model.embed_tokens"}},
		{"decoder.layers.2", false, OneToOne, []string{"model.layers.2"}},
		{"decoder.layers.1.self_attention.core_attention", false, None, nil},
		{"decoder.layers.1.self_attention.core_attention.flash_attention", false, None, nil},
		{"decoder.layers.0.input_layernorm", false, Absorbed, []string{"model.layers.0.input_layernorm"}},
		{"decoder.layers.0.self_attention.linear_qkv", false, Fused, []string{"model.layers.0.self_attn.q_proj", "model.layers.0.self_attn.k_proj"}},
		{"decoder.layers.1.mlp.experts", false, Experts, []string{"model.layers.1.mlp.experts.0", "model.layers.1.mlp.experts.1", "model.layers.1.mlp.experts.2", "model.layers.1.mlp.experts.3"}},
		{"model.layers.1.mlp.experts.3.up", true, Experts, []string{"decoder.layers.1.mlp.experts.linear_fc1"}},
		{"model.layers.0.input_layernorm", true, Absorbed, []string{"decoder.layers.0.self_attention.linear_qkv", "decoder.layers.0.input_layernorm"}},
		{"model.layers.0.self_attn.k_proj", true, Fused, []string{"decoder.layers.0.self_attention.linear_qkv"}},
		{"lm_head", true, OneToOne, []string{"output_layer"}},
		{"model", true, None, nil},
		{"model.layers.2.mlp.experts.0.act", true, None, nil},
	}
	for _, tc := range tests {
		m := l.Forward
		if tc.reverse {
			m = l.Reverse
		}
		v, ok := m[tc.path]
		if !ok {
			t.Errorf("%s: no verdict", tc.path)
			continue
		}
		if v.Kind != tc.kind || !slices.Equal(v.Accept, tc.accept) {
			t.Errorf("%s: got %s %v, want %s %v", tc.path, v.Kind, v.Accept, tc.kind, tc.accept)
		}
	}
	// ModuleLists are never dumped: no verdict, on either side.
	for _, p := range []string{"decoder.layers", "model.layers.0.mlp.experts"} {
		if _, ok := l.Forward[p]; ok {
			t.Errorf("container %s has a verdict", p)
		}
		if _, ok := l.Reverse[p]; ok {
			t.Errorf("container %s has a verdict", p)
		}
	}
	// Every variant is labelled by the same rules.
	for _, v := range p.Variants {
		lv, err := labels(t, p, v)
		if err != nil {
			t.Fatalf("variant %s: %v", v, err)
		}
		want := len(l.Forward)
		if strings.HasPrefix(v, "cut") {
			want = len(l.Forward) - 9 // layer 2: the layer and 8 modules below it
		}
		if len(lv.Forward) != want {
			t.Errorf("variant %s: %d NPU verdicts, want %d", v, len(lv.Forward), want)
		}
	}
}

func TestLabelErrors(t *testing.T) {
	tests := []struct {
		name, old, new, want string
	}{
		{"uncovered NPU module", "  output_layer: lm_head\n", "", "output_layer (ColumnParallelLinear) matches no rule"},
		{"uncovered bench module", "  - model\n", "", "bench module model (LlamaModel) is nobody's partner"},
		{"dead rule", "  decoder: none\n", "  decoder: none\n  decoder.final_layernorm: model.norm\n", "matches no dumped NPU module"},
		{"missing partner", "output_layer: lm_head", "output_layer: model.lm_head", "no dumped bench module model.lm_head"},
		{"container partner", "  $L.mlp: $H.mlp\n", "  $L.mlp: $H.mlp.experts\n", "no dumped bench module model.layers.0.mlp.experts"},
		{"two partners", "embedding.word_embeddings: model.embed_tokens", "embedding.word_embeddings: lm_head", "bench lm_head is the partner of"},
		{"ambiguous", "  decoder: none\n", "  decoder: none\n  $L.mlp.*: none\n", "matches two rules"},
		{"bench_only partner", "  - model\n", "  - model\n  - lm_head\n", "bench_only lm_head: lm_head is already a partner"},
		{"range", "  $L: $H\n", "  decoder.layers.<i=0-1>: $H\n", "NPU module decoder.layers.2 (TransformerLayer) matches no rule"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			text := strings.Replace(goodTruth, tc.old, tc.new, 1)
			if text == goodTruth {
				t.Fatalf("replacement %q not found", tc.old)
			}
			_, err := labels(t, writePair(t, text), "")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestReadErrors(t *testing.T) {
	tests := []struct{ text, want string }{
		{"name: q\nnpu: a\nbench: b\nmodules:\n  a: b\n", `expected name "p"`},
		{"name: p\nnpu: a\nbench: b\nmodules:\n  $X.a: b\n", "unknown abbreviation $X"},
		{"name: p\nnpu: a\nbench: b\nmodules:\n  a.**.b: none\n", `"**" must be the last segment`},
		{"name: p\nnpu: a\nbench: b\nmodules:\n  a.**: b\n", `"**" only in rules with none`},
		{"name: p\nnpu: a\nbench: b\nmodules:\n  a: {fused: []}\n", "at least one bench module"},
		{"name: p\nnpu: a\nbench: b\nmodules:\n  a: {alt: [b]}\n", "at least two bench modules"},
		{"name: p\nnpu: a\nbench: b\nmodules:\n  a: {absorbed: b}\n", "into: the NPU linear"},
		{"name: p\nnpu: a\nbench: b\nmodules:\n  a.<i=3-1>: b\n", "bad range"},
		{"name: p\nnpu: a\nbench: b\nmodules:\n  a.x<i>: b\n", "mixes a wildcard"},
		{"name: p\nnpu: a\nbench: b\nvariants: [flat]\nmodules:\n  a: b\n", "unknown variant"},
		{"name: p\nnpu: a\nbench: b\nbogus: 1\nmodules:\n  a: b\n", `unknown key "bogus"`},
	}
	for _, tc := range tests {
		dir := filepath.Join(t.TempDir(), "p")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "truth.yaml"), []byte(tc.text), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Read(dir)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want an error containing %q", tc.text, err, tc.want)
		}
	}
}

func TestEvaluate(t *testing.T) {
	truth := map[string]Verdict{
		"a":     {Kind: OneToOne, Accept: []string{"A"}},
		"b":     {Kind: OneToOne, Accept: []string{"B"}},
		"c":     {Kind: OneToOne, Accept: []string{"C"}},
		"d":     {Kind: None},
		"e":     {Kind: None},
		"qkv":   {Kind: Fused, Accept: []string{"q", "k"}},
		"norm":  {Kind: Absorbed, Accept: []string{"N"}},
		"group": {Kind: Experts, Accept: []string{"x0", "x1"}},
	}
	resolved := []Resolved{
		{"a", "A", Sure}, {"b", "C", Sure}, {"c", "", ""}, {"d", "D", Check}, {"e", "", ""},
		{"qkv", "k", Check}, {"norm", "", ""}, {"group", "y", Unsure},
	}
	s, err := Evaluate(truth, resolved)
	if err != nil {
		t.Fatal(err)
	}
	if s.OneToOne != 3 || s.Correct != 1 || s.Wrong != 2 || s.Spurious != 1 {
		t.Errorf("1:1 %d correct %d wrong %d spurious %d, want 3 1 2 1", s.OneToOne, s.Correct, s.Wrong, s.Spurious)
	}
	if s.N1[Fused] != 1 || s.N1Standin[Fused] != 1 || s.N1[Absorbed] != 1 || s.N1Standin[Absorbed] != 0 || s.N1[Experts] != 1 {
		t.Errorf("N:1 %v stand-ins %v", s.N1, s.N1Standin)
	}
	if s.Precision(Sure) != 0.5 || s.BadIn(Sure) != 1 || s.BadIn(Check) != 1 || s.ByBand[Check][Standin] != 1 || s.Precision(Unsure) != 0 {
		t.Errorf("bands %v", s.ByBand)
	}
	if len(s.Misses) != 1 || len(s.Errors) != 3 {
		t.Errorf("misses %v errors %v", s.Misses, s.Errors)
	}
	if _, err := Evaluate(truth, resolved[:3]); err == nil {
		t.Error("a partial resolution was accepted")
	}
	if _, err := Evaluate(truth, append(resolved, Resolved{"zz", "", ""})); err == nil {
		t.Error("an unknown module was accepted")
	}
}

func TestVariantTrees(t *testing.T) {
	p := writePair(t, goodTruth)
	npu, bench, err := p.Trees()
	if err != nil {
		t.Fatal(err)
	}
	count := func(tr *printparse.Tree) (n int) {
		tr.Walk(func(*printparse.Node) bool { n++; return true })
		return n
	}
	for _, tc := range []struct {
		variant     string
		npu, bench  int
		repeat, cls string
	}{
		{"explicit", count(npu), count(bench), "", "ModuleList"},
		{"moduledict", count(npu), count(bench), "", "ModuleDict"},
		{"cut:2", count(npu) - 9, count(bench) - 31, "(0-1): 2 x", "ModuleList"}, // a layer and 2 experts x 3 nodes of each kept layer
	} {
		n, b, err := Variant(npu, bench, tc.variant)
		if err != nil {
			t.Fatal(err)
		}
		if count(n) != tc.npu || count(b) != tc.bench {
			t.Errorf("%s: %d and %d nodes, want %d and %d", tc.variant, count(n), count(b), tc.npu, tc.bench)
		}
		if got := b.Lookup("model.layers").Class; got != tc.cls {
			t.Errorf("%s: layers are %s, want %s", tc.variant, got, tc.cls)
		}
		text := b.String()
		if tc.repeat == "" && strings.Contains(text, " x ") {
			t.Errorf("%s: repeat groups left:\n%s", tc.variant, text)
		}
		if tc.repeat != "" && !strings.Contains(text, tc.repeat) {
			t.Errorf("%s: no %q in\n%s", tc.variant, tc.repeat, text)
		}
	}
}

// TestSameAndAbsorbedBy covers the rules written from the side with the
// real norm (absorbed_by) and transparent wrappers (same).
func TestSameAndAbsorbedBy(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "p")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"npu.txt": `Decoder(
  (layers): ModuleList(
    (0-1): 2 x CheckpointWrapper(
      (_checkpoint_wrapped_module): Layer(
        (norm): RMSNorm()
        (qkv): Linear(in_features=8, out_features=24, bias=False)
      )
    )
  )
)
`,
		"bench.txt": `GPTModel(
  (layers): ModuleList(
    (0-1): 2 x TransformerLayer(
      (input_layernorm): IdentityOp()
      (linear_qkv): TELayerNormColumnParallelLinear()
    )
  )
)
`,
		"truth.yaml": `name: p
npu: npu.txt
bench: bench.txt
modules:
  layers.<i>: layers.<i>
  layers.<i>._checkpoint_wrapped_module: {same: layers.<i>}
  layers.<i>._checkpoint_wrapped_module.norm: {absorbed_by: layers.<i>.linear_qkv, placeholder: layers.<i>.input_layernorm}
  layers.<i>._checkpoint_wrapped_module.qkv: layers.<i>.linear_qkv
`,
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	l, err := labels(t, p, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		m      map[string]Verdict
		path   string
		kind   string
		accept []string
	}{
		{l.Forward, "layers.1._checkpoint_wrapped_module", Same, []string{"layers.1"}},
		{l.Forward, "layers.1._checkpoint_wrapped_module.norm", Absorbed, []string{"layers.1.linear_qkv", "layers.1.input_layernorm"}},
		{l.Reverse, "layers.1", OneToOne, []string{"layers.1", "layers.1._checkpoint_wrapped_module"}},
		{l.Reverse, "layers.1.input_layernorm", Absorbed, []string{"layers.1._checkpoint_wrapped_module.norm"}},
		{l.Reverse, "layers.1.linear_qkv", OneToOne, []string{"layers.1._checkpoint_wrapped_module.qkv"}},
	} {
		v := tc.m[tc.path]
		if v.Kind != tc.kind || !slices.Equal(v.Accept, tc.accept) {
			t.Errorf("%s: got %s %v, want %s %v", tc.path, v.Kind, v.Accept, tc.kind, tc.accept)
		}
	}
}
