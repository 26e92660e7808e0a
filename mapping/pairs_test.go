package mapping

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

func TestPairsRoundTrip(t *testing.T) {
	in := []ModulePair{{NPU: "0.module.module.text_decoder.decoder.layers.0.self_attention", Bench: "module.model.layers.0.self_attn"}, {NPU: "a.0", Bench: "b.0"}}
	var b bytes.Buffer
	if err := WritePairs(&b, in); err != nil {
		t.Fatal(err)
	}
	out, err := ParsePairs(b.Bytes(), "pairs.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(in, out) {
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
		{"- npu: a\n  bench: b\n  extra: c\n", "pairs.yaml:3: expected key npu or bench, found \"extra\""},
		{"- npu: [a]\n  bench: b\n", "pairs.yaml:1: expected a module path for npu, found a list"},
		{"- npu: a\n  bench: [\n", "pairs.yaml: yaml:"},
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
		if err != nil || !slices.Equal(back, ps) {
			t.Fatalf("round trip of %v: %v %v", ps, back, err)
		}
	})
}
