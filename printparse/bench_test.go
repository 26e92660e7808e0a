package printparse

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"
)

// moePrint writes a 60-layer MoE print(model) with 128 LoRA-wrapped experts
// per layer. compressed writes it as PyTorch >= 2.0 prints it ("(0-59): 60
// x", "(0-127): 128 x"); otherwise every layer and expert is printed (as
// torch < 2.0 does): 231k lines, 10 MB, 154k nodes.
func moePrint(compressed bool) []byte {
	var b bytes.Buffer
	ind := func(n int) string { return strings.Repeat("  ", n) }
	lora := func(d int, name string, in, out int) {
		fmt.Fprintf(&b, "%s(%s): lora.Linear(\n", ind(d), name)
		fmt.Fprintf(&b, "%s(base_layer): Linear(in_features=%d, out_features=%d, bias=False)\n", ind(d+1), in, out)
		fmt.Fprintf(&b, "%s(lora_A): ModuleDict(\n%s(default): Linear(in_features=%d, out_features=8, bias=False)\n%s)\n", ind(d+1), ind(d+2), in, ind(d+1))
		fmt.Fprintf(&b, "%s(lora_B): ModuleDict(\n%s(default): Linear(in_features=8, out_features=%d, bias=False)\n%s)\n", ind(d+1), ind(d+2), out, ind(d+1))
		fmt.Fprintf(&b, "%s)\n", ind(d))
	}
	expert := func(d int, label string) {
		fmt.Fprintf(&b, "%s(%s): Qwen3MoeMLP(\n", ind(d), label)
		lora(d+1, "gate_proj", 4096, 1536)
		lora(d+1, "up_proj", 4096, 1536)
		lora(d+1, "down_proj", 1536, 4096)
		fmt.Fprintf(&b, "%s(act_fn): SiLU()\n%s)\n", ind(d+1), ind(d))
	}
	layer := func(label string) {
		d := 3
		fmt.Fprintf(&b, "%s(%s): Qwen3MoeDecoderLayer(\n", ind(d), label)
		fmt.Fprintf(&b, "%s(self_attn): Qwen3MoeAttention(\n", ind(d+1))
		for _, p := range []string{"q_proj", "k_proj", "v_proj", "o_proj"} {
			fmt.Fprintf(&b, "%s(%s): Linear(in_features=4096, out_features=4096, bias=False)\n", ind(d+2), p)
		}
		fmt.Fprintf(&b, "%s)\n%s(mlp): Qwen3MoeSparseMoeBlock(\n", ind(d+1), ind(d+1))
		fmt.Fprintf(&b, "%s(gate): Linear(in_features=4096, out_features=128, bias=False)\n%s(experts): ModuleList(\n", ind(d+2), ind(d+2))
		if compressed {
			expert(d+3, "0-127): 128 x Qwen3MoeMLP(\x00")
		} else {
			for e := 0; e < 128; e++ {
				expert(d+3, fmt.Sprint(e))
			}
		}
		fmt.Fprintf(&b, "%s)\n%s)\n", ind(d+2), ind(d+1))
		fmt.Fprintf(&b, "%s(input_layernorm): Qwen3MoeRMSNorm((4096,), eps=1e-06)\n%s)\n", ind(d+1), ind(d))
	}
	b.WriteString("Qwen3MoeForCausalLM(\n  (model): Qwen3MoeModel(\n    (embed_tokens): Embedding(151936, 4096)\n    (layers): ModuleList(\n")
	if compressed {
		layer("0-59): 60 x Qwen3MoeDecoderLayer(\x00")
	} else {
		for l := 0; l < 60; l++ {
			layer(fmt.Sprint(l))
		}
	}
	b.WriteString("    )\n    (norm): Qwen3MoeRMSNorm((4096,), eps=1e-06)\n  )\n  (lm_head): Linear(in_features=4096, out_features=151936, bias=False)\n)\n")
	// "(0-127): 128 x Qwen3MoeMLP(\x00): Qwen3MoeMLP(" -> "(0-127): 128 x Qwen3MoeMLP("
	out := b.Bytes()
	for _, cls := range []string{"Qwen3MoeMLP", "Qwen3MoeDecoderLayer"} {
		out = bytes.ReplaceAll(out, []byte(cls+"(\x00): "+cls+"("), []byte(cls+"("))
	}
	return out
}

func TestMoEPrintShape(t *testing.T) {
	full, comp := moePrint(false), moePrint(true)
	if n := bytes.Count(full, []byte("\n")); n < 100_000 {
		t.Fatalf("expanded print has %d lines, want >= 100k", n)
	}
	a, err := ParseText(full, "full", Options{Index: -1})
	if err != nil {
		t.Fatal(err)
	}
	b, err := ParseText(comp, "comp", Options{Index: -1})
	if err != nil {
		t.Fatal(err)
	}
	var ra, rb bytes.Buffer
	Render(&ra, a, RenderOptions{Expand: true})
	Render(&rb, b, RenderOptions{Expand: true})
	if !bytes.Equal(ra.Bytes(), full) || !bytes.Equal(rb.Bytes(), full) {
		t.Fatalf("expanded renderings differ from the expanded print")
	}
	var rc bytes.Buffer
	Render(&rc, b, RenderOptions{})
	if !bytes.Equal(rc.Bytes(), comp) {
		t.Fatalf("collapsed rendering differs from the compressed print")
	}
	nodes := 0
	b.Walk(func(*Node) bool { nodes++; return true })
	t.Logf("expanded print: %d lines, %d bytes; compressed: %d lines; %d nodes", bytes.Count(full, []byte("\n")), len(full), bytes.Count(comp, []byte("\n")), nodes)
	if got := b.Lookup("model.layers.59.mlp.experts.127.down_proj.lora_B.default"); got == nil || fmt.Sprint(got.Dims()) != "[8 4096]" {
		t.Fatalf("last expert: %+v", got)
	}
}

func benchParse(b *testing.B, data []byte) {
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseText(data, "moe", Options{Index: -1}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseMoEExpanded: 231k lines, every layer and expert printed.
func BenchmarkParseMoEExpanded(b *testing.B) { benchParse(b, moePrint(false)) }

// BenchmarkParseMoECompressed: the same model as PyTorch 2.x prints it,
// expanded to the same 154k nodes.
func BenchmarkParseMoECompressed(b *testing.B) { benchParse(b, moePrint(true)) }

func BenchmarkRenderMoE(b *testing.B) {
	t, err := ParseText(moePrint(true), "moe", Options{Index: -1})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		Render(io.Discard, t, RenderOptions{Expand: true})
	}
}

func BenchmarkWriteJSONMoE(b *testing.B) {
	t, err := ParseText(moePrint(true), "moe", Options{Index: -1})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := WriteJSON(io.Discard, t); err != nil {
			b.Fatal(err)
		}
	}
}
