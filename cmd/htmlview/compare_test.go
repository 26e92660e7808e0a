package htmlview_test

import (
	"strings"
	"testing"

	"github.com/layermap/layermap/cmd/htmlview"
	"github.com/layermap/layermap/printparse/testkit"
)

// The compare view of the demo dumps (a corpus pair) with suggest's draft:
// module pairs from the table, colours by output rows, API rows under the
// module that calls them, the first divergence on both sides.
func TestFromCompare(t *testing.T) {
	n, b := testkit.Testdata(t, "demo", "dumps/llamafactory"), testkit.Testdata(t, "demo", "dumps/mindspeed-mm")
	v, _ := compareView(t, n, b, draft(t, n, b))
	pairs := map[string]string{}
	for _, p := range v.Pairs {
		pairs[p.NPU[0].Path] = p.Bench[0].Path
	}
	for npu, bench := range map[string]string{
		"module.visual.blocks.1.norm2":           "0.module.module.image_encoder.encoder.blocks.layers.1.pre_mlp_layernorm",
		"module.model.layers.0.self_attn.o_proj": "0.module.module.text_decoder.decoder.layers.0.self_attention.linear_proj",
		"":                                       "",
	} {
		if pairs[npu] != bench {
			t.Errorf("%s paired with %q, want %s", npu, pairs[npu], bench)
		}
	}
	if _, ok := pairs["module.model.layers.0.self_attn.q_proj"]; ok {
		t.Error("q_proj has no bench row (linear_qkv fuses it), yet it is paired")
	}
	norm2 := v.NPU.Lookup("module.visual.blocks.1.norm2")
	// the classified first divergence: the patch embedding's projection
	// (inputs agree, weights and outputs do not)
	proj := v.NPU.Lookup("module.visual.patch_embed.proj")
	f := v.Summary.First
	if f == nil || f.NPU != proj || f.Bench == nil || f.Bench.Path != pairs[proj.Path] || f.NPUEntry != "Module.module.visual.patch_embed.proj.Conv3d.forward.0" ||
		len(f.Messages) == 0 || !strings.HasPrefix(f.Messages[0], "forward, root cause: ") {
		t.Fatalf("first divergence %+v, want the root cause %s", f, proj.Path)
	}
	if v.NPU.Result[norm2] != htmlview.Pass || v.NPU.Inner[norm2] != htmlview.Error {
		t.Errorf("norm2: result %d, inner %d; want pass (its outputs agree) and error inside (Tensor.mean)", v.NPU.Result[norm2], v.NPU.Inner[norm2])
	}
	var own, api int
	for _, r := range v.Table.Rows[norm2] {
		if r.API {
			api++
			continue
		}
		own++
		if !strings.HasPrefix(r.Cells[0], "Module.module.visual.blocks.1.norm2.") {
			t.Errorf("row %s listed under norm2", r.Cells[0])
		}
	}
	if own == 0 || api == 0 {
		t.Errorf("norm2 has %d own and %d API rows, want both", own, api)
	}
	for _, h := range v.Table.Header {
		if h == "NPU_Stack_Info" {
			t.Error("the stack column is kept (the table file has it)")
		}
	}
	if v.Bench.Result[f.Bench] != v.NPU.Result[norm2] {
		t.Error("the bench module does not show its NPU partner's result")
	}
}

// A fused pair is drawn N:1: infer pairs linear_fc1 with up_proj and names
// gate_proj in the note; gate_proj joins the pair.
func TestFromSuggestFused(t *testing.T) {
	n, b := testkit.Testdata(t, "demo", "dumps", "llamafactory"), testkit.Testdata(t, "demo", "dumps", "mindspeed-mm")
	v := suggestView(t, n, b)
	var got []string
	for _, p := range v.Pairs {
		if p.Bench[0].Path == "0.module.module.text_decoder.decoder.layers.0.mlp.linear_fc1" {
			for _, a := range p.NPU {
				got = append(got, a.Path)
			}
			if p.Kind != htmlview.Fused {
				t.Errorf("kind %s, want fused", p.Kind)
			}
		}
	}
	if want := "module.model.layers.0.mlp.up_proj module.model.layers.0.mlp.gate_proj"; strings.Join(got, " ") != want {
		t.Errorf("linear_fc1 paired with %v, want %s", got, want)
	}
	if why := v.NPU.Why[v.NPU.Lookup("module.model.layers.0.mlp.gate_proj")]; why != "" {
		t.Errorf("gate_proj is in a pair but still has a why: %q", why)
	}
}
