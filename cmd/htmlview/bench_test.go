package htmlview_test

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/layermap/layermap/cmd/htmlview"
	"github.com/layermap/layermap/cmd/htmlview/htmltest"
	"github.com/layermap/layermap/printparse"
)

// moeTrees are a 60-layer model with 128 experts per layer on both sides:
// a Hugging Face Qwen3-MoE with LoRA-wrapped experts (154k modules) and a
// Megatron one (23k modules), as print(model) prints them (repeat groups
// folded).
func moeTrees(tb testing.TB) (npu, bench *printparse.Tree) {
	var a, b strings.Builder
	ind := func(w *strings.Builder, d int) { w.WriteString(strings.Repeat("  ", d)) }
	line := func(w *strings.Builder, d int, s string) { ind(w, d); w.WriteString(s + "\n") }
	lora := func(d int, name string) {
		line(&a, d, "("+name+"): lora.Linear(")
		line(&a, d+1, "(base_layer): Linear(in_features=4096, out_features=1536, bias=False)")
		line(&a, d+1, "(lora_A): ModuleDict(")
		line(&a, d+2, "(default): Linear(in_features=4096, out_features=8, bias=False)")
		line(&a, d+1, ")")
		line(&a, d+1, "(lora_B): ModuleDict(")
		line(&a, d+2, "(default): Linear(in_features=8, out_features=1536, bias=False)")
		line(&a, d+1, ")")
		line(&a, d, ")")
	}
	line(&a, 0, "Qwen3MoeForCausalLM(")
	line(&a, 1, "(model): Qwen3MoeModel(")
	line(&a, 2, "(embed_tokens): Embedding(151936, 4096)")
	line(&a, 2, "(layers): ModuleList(")
	line(&a, 3, "(0-59): 60 x Qwen3MoeDecoderLayer(")
	line(&a, 4, "(self_attn): Qwen3MoeAttention(")
	for _, p := range []string{"q_proj", "k_proj", "v_proj", "o_proj"} {
		line(&a, 5, "("+p+"): Linear(in_features=4096, out_features=4096, bias=False)")
	}
	line(&a, 4, ")")
	line(&a, 4, "(mlp): Qwen3MoeSparseMoeBlock(")
	line(&a, 5, "(gate): Linear(in_features=4096, out_features=128, bias=False)")
	line(&a, 5, "(experts): ModuleList(")
	line(&a, 6, "(0-127): 128 x Qwen3MoeMLP(")
	for _, p := range []string{"gate_proj", "up_proj", "down_proj"} {
		lora(7, p)
	}
	line(&a, 7, "(act_fn): SiLU()")
	line(&a, 6, ")")
	line(&a, 5, ")")
	line(&a, 4, ")")
	line(&a, 4, "(input_layernorm): Qwen3MoeRMSNorm((4096,), eps=1e-06)")
	line(&a, 3, ")")
	line(&a, 2, ")")
	line(&a, 2, "(norm): Qwen3MoeRMSNorm((4096,), eps=1e-06)")
	line(&a, 1, ")")
	line(&a, 1, "(lm_head): Linear(in_features=4096, out_features=151936, bias=False)")
	line(&a, 0, ")")

	line(&b, 0, "GPTModel(")
	line(&b, 1, "(embedding): LanguageModelEmbedding(")
	line(&b, 2, "(word_embeddings): VocabParallelEmbedding()")
	line(&b, 1, ")")
	line(&b, 1, "(decoder): TransformerBlock(")
	line(&b, 2, "(layers): ModuleList(")
	line(&b, 3, "(0-59): 60 x TransformerLayer(")
	line(&b, 4, "(self_attention): SelfAttention(")
	line(&b, 5, "(linear_qkv): ColumnParallelLinear()")
	line(&b, 5, "(linear_proj): RowParallelLinear()")
	line(&b, 4, ")")
	line(&b, 4, "(mlp): MoELayer(")
	line(&b, 5, "(router): TopKRouter()")
	line(&b, 5, "(experts): SequentialMLP(")
	line(&b, 6, "(local_experts): ModuleList(")
	line(&b, 7, "(0-127): 128 x MLP(")
	line(&b, 8, "(linear_fc1): ColumnParallelLinear()")
	line(&b, 8, "(linear_fc2): RowParallelLinear()")
	line(&b, 7, ")")
	line(&b, 6, ")")
	line(&b, 5, ")")
	line(&b, 4, ")")
	line(&b, 4, "(input_layernorm): RMSNorm()")
	line(&b, 3, ")")
	line(&b, 2, ")")
	line(&b, 2, "(final_layernorm): RMSNorm()")
	line(&b, 1, ")")
	line(&b, 1, "(output_layer): ColumnParallelLinear()")
	line(&b, 0, ")")
	var err error
	opt := printparse.Options{MaxNodes: 1 << 20}
	if npu, err = printparse.ParseText([]byte(a.String()), "qwen3moe-lora.txt", opt); err != nil {
		tb.Fatal(err)
	}
	if bench, err = printparse.ParseText([]byte(b.String()), "megatron-moe.txt", opt); err != nil {
		tb.Fatal(err)
	}
	return npu, bench
}

// moeView pairs the two MoE trees as an expert would: layer by layer,
// expert by expert, gate_proj and up_proj fused into linear_fc1 (N:1).
func moeView(tb testing.TB) *htmlview.View {
	npu, bench := moeTrees(tb)
	v := &htmlview.View{Title: "60 layers x 128 experts", Mode: htmlview.ModeSuggest,
		NPU: htmlview.NewSide("NPU", npu), Bench: htmlview.NewSide("bench", bench)}
	pair := func(a, b string, more ...string) {
		p := htmlview.Pair{Kind: htmlview.OneToOne, Band: htmlview.Sure, Score: 0.9, Margin: 0.5, Reasons: []string{"synonym", "class"}, Proven: true}
		p.NPU = append(p.NPU, v.NPU.Lookup(a))
		for _, m := range more {
			p.NPU = append(p.NPU, v.NPU.Lookup(m))
			p.Kind, p.Band, p.Note = htmlview.Fused, htmlview.Check, "linear_fc1 fuses gate_proj and up_proj"
		}
		p.Bench = append(p.Bench, v.Bench.Lookup(b))
		if p.NPU[0] == nil || p.Bench[0] == nil {
			tb.Fatalf("no module %s or %s", a, b)
		}
		v.Pairs = append(v.Pairs, p)
	}
	pair("", "")
	pair("model", "decoder")
	pair("model.layers", "decoder.layers")
	pair("lm_head", "output_layer")
	for l := 0; l < 60; l++ {
		a, b := fmt.Sprintf("model.layers.%d", l), fmt.Sprintf("decoder.layers.%d", l)
		pair(a, b)
		pair(a+".self_attn", b+".self_attention")
		pair(a+".self_attn.o_proj", b+".self_attention.linear_proj")
		pair(a+".mlp", b+".mlp")
		pair(a+".mlp.gate", b+".mlp.router")
		pair(a+".mlp.experts", b+".mlp.experts.local_experts")
		for e := 0; e < 128; e++ {
			x, y := fmt.Sprintf("%s.mlp.experts.%d", a, e), fmt.Sprintf("%s.mlp.experts.local_experts.%d", b, e)
			pair(x, y)
			pair(x+".up_proj", y+".linear_fc1", x+".gate_proj")
			pair(x+".down_proj", y+".linear_fc2")
		}
	}
	return v
}

func countNodes(t *printparse.Tree) int {
	n := 0
	t.Walk(func(*printparse.Node) bool { n++; return true })
	return n
}

// BenchmarkWrite100k: the Go side of the 100k-module page (size in MB).
func BenchmarkWrite100k(b *testing.B) {
	v := moeView(b)
	var buf bytes.Buffer
	for b.Loop() {
		buf.Reset()
		if err := htmlview.Write(&buf, v); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(buf.Len())/1e6, "MB")
	b.ReportMetric(float64(countNodes(v.NPU.Tree)+countNodes(v.Bench.Tree)), "modules")
}

// BenchmarkFirstPaint100k opens the 100k-module page in headless Chromium
// from file:// and reports the time from navigation to the first
// contentful paint (the search box's placeholder), to the end of the
// view's first render ("lm-ready") and to the frame that shows the trees
// ("lm-painted", the time to first paint reported), and how long opening
// one module deep in the tree (layer 59, expert 127) takes.
func BenchmarkFirstPaint100k(b *testing.B) {
	if htmltest.ChromiumPath() == "" {
		b.Skip("no Chromium: install Debian's chromium to run the browser benchmarks")
	}
	v := moeView(b)
	path := writePage(b, v)
	st, _ := os.Stat(path)
	type times struct{ FCP, Start, Parsed, Sides, Ready, Painted, Reveal float64 }
	var sum times
	for b.Loop() {
		p := htmltest.Open(b, path)
		htmltest.Poll(b, p, `performance.getEntriesByName('lm-painted').length > 0`)
		t := htmltest.Eval[times](b, p, `(() => {
			const fcp = performance.getEntriesByName('first-contentful-paint')[0];
			const m = (n) => performance.getEntriesByName(n)[0].startTime;
			const t0 = performance.now();
			layermapView.reveal(0, layermapView.lookup(0, 'model.layers.59.mlp.experts.127.down_proj.lora_B.default'));
			return {FCP: fcp ? fcp.startTime : -1, Start: m('lm-start'), Parsed: m('lm-parsed'), Sides: m('lm-sides'), Ready: m('lm-ready'), Painted: m('lm-painted'), Reveal: performance.now() - t0};
		})()`)
		p.CheckClean(b)
		if os.Getenv("LM_STAGES") != "" {
			b.Logf("%+v", t)
		}
		sum.FCP += t.FCP
		sum.Ready += t.Ready
		sum.Painted += t.Painted
		sum.Reveal += t.Reveal
	}
	n := float64(b.N)
	b.ReportMetric(float64(st.Size())/1e6, "MB")
	b.ReportMetric(sum.FCP/n, "ms-fcp")
	b.ReportMetric(sum.Painted/n, "ms-first-paint")
	b.ReportMetric(sum.Ready/n, "ms-ready")
	b.ReportMetric(sum.Reveal/n, "ms-reveal")
}

func TestMoEShape(t *testing.T) {
	if testing.Short() {
		t.Skip("builds 177k modules")
	}
	npu, bench := moeTrees(t)
	if n, m := countNodes(npu), countNodes(bench); n < 100_000 || m < 20_000 {
		t.Fatalf("%d NPU and %d bench modules, want a 100k-module model", n, m)
	}
}
