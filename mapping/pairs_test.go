package mapping

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

func TestPairsRoundTrip(t *testing.T) {
	in := []ModulePair{{NPU: "0.module.module.text_decoder.decoder.layers.0.self_attention", Bench: "module.model.layers.0.self_attn"}, {NPU: "a.0", Bench: "b.0"},
		{NPU: "d.mlp.linear_fc1", BenchParts: []string{"m.mlp.gate_proj", "m.mlp.up_proj"}, Kind: KindGateUp},
		{NPUParts: []string{"m.attn.q_proj", "m.attn.k_proj", "m.attn.v_proj"}, Bench: "d.attn.linear_qkv", Kind: KindQKV, Layout: LayoutInterleaved}}
	var b bytes.Buffer
	if err := WritePairs(&b, in); err != nil {
		t.Fatal(err)
	}
	out, err := ParsePairs(b.Bytes(), "pairs.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Errorf("round trip: %v -> %s -> %v", in, b.String(), out)
	}
	b.Reset()
	if err := WritePairs(&b, nil); err != nil {
		t.Fatal(err)
	}
	if got, err := ParsePairs(b.Bytes(), "empty.yaml"); err != nil || len(got) != 0 {
		t.Errorf("empty file: %v, %v", got, err)
	}
}

func TestParsePairsErrors(t *testing.T) {
	bad := []struct{ text, want string }{
		{"npu: a\n", "pairs.yaml:1: expected a list of {npu, bench} pairs, found a map"},
		{"- [a, b]\n", "pairs.yaml:1: expected a {npu: PATH, bench: PATH} map, found a list"},
		{"- npu: a\n", "pairs.yaml:1: expected both npu and bench paths"},
		{"- npu: a\n  bench: b\n  extra: c\n", "pairs.yaml:3: expected key npu, bench, kind or layout, found \"extra\""},
		{"- npu: [a]\n  bench: b\n  kind: qkv\n", "pairs.yaml:1: expected two or more modules in the npu list of a group, found 1"},
		{"- npu: {a: b}\n  bench: b\n", "pairs.yaml:1: expected a module path (or a list of them) for npu, found a map"},
		{"- npu: [a, b]\n  bench: c\n", "pairs.yaml:1: expected a kind (gate_up, qkv, experts, fused) for a group of modules"},
		{"- npu: [a, b]\n  bench: [c, d]\n  kind: fused\n", "pairs.yaml:1: expected one module on one side of a group, found lists on both"},
		{"- npu: a\n  bench: c\n  kind: fused\n", "pairs.yaml:1: expected a list of modules on one side of a fused group, found one module on each"},
		{"- npu: a\n  bench: [c, d]\n  kind: split\n", "pairs.yaml:3: expected kind gate_up, qkv, experts, fused, found \"split\""},
		{"- npu: a\n  bench: [c, d]\n  kind: fused\n  layout: blocked\n", "pairs.yaml:1: expected layout only in a qkv group"},
		{"- npu: [a, b]\n  bench: c\n  kind: fused\n- npu: b\n  bench: d\n", "pairs.yaml:4: expected each npu path once, found \"b\" again (first at line 1)"},
		{"- npu: a\n  bench: [\n", "pairs.yaml:2: invalid YAML: did not find expected node content"},
		{"- npu: a\n  bench: b\n- npu: a\n  bench: c\n", "pairs.yaml:3: expected each npu path once, found \"a\" again (first at line 1)"},
	}
	for _, tc := range bad {
		_, err := ParsePairs([]byte(tc.text), "pairs.yaml")
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("ParsePairs(%q) = %v, want one line containing %q", tc.text, err, tc.want)
		}
	}
}

func FuzzParsePairs(f *testing.F) {
	f.Add([]byte("- npu: a.b\n  bench: c\n"))
	f.Add([]byte("[]"))
	f.Add([]byte("- {npu: x, bench: y}\n- npu: z\n"))
	f.Add([]byte("- npu: a\n  bench: [b, c]\n  kind: qkv\n  layout: blocked\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ps, err := ParsePairs(data, "f.yaml")
		if err != nil {
			return
		}
		var b bytes.Buffer
		if err := WritePairs(&b, ps); err != nil {
			t.Fatal(err)
		}
		back, err := ParsePairs(b.Bytes(), "f.yaml")
		if err != nil || !reflect.DeepEqual(back, ps) {
			t.Fatalf("round trip of %v: %v %v", ps, back, err)
		}
	})
}
