package msprobe

import (
	"strings"
	"testing"
)

func TestParseVisConfig(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"flat, both directions", `{"Module.layers.0.attn.Attention.forward.0": "Module.model.layers.0.self_attn.SelfAttn.forward.0",
 "Module.model.layers.0.self_attn.SelfAttn.forward.0": "Module.layers.0.attn.Attention.forward.0"}`,
			"layers.0.attn -> model.layers.0.self_attn\nmodel.layers.0.self_attn -> layers.0.attn"},
		{"state", `{"run": "r", "manualMatchNodes": {"Module.a.A.forward.0": "Module.b.B.backward.1"}, "npuUnMatchNodes": []}`, "a -> b"},
		{"npuMatchNodes state", `{"npuMatchNodes": {"Module.a.A.forward.0": "Module.b.B.forward.0"}, "benchMatchNodes": {}}`, "a -> b"},
		{"API node kept as written", `{"Functional.linear.0.forward": "Functional.linear.0.forward"}`, "Functional.linear.0.forward -> Functional.linear.0.forward"},
		{"empty", `{}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ms, err := ParseVisConfig([]byte(tc.in), "in")
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range ms {
				got = append(got, m.NPU+" -> "+m.Bench)
			}
			if g := strings.Join(got, "\n"); g != tc.want {
				t.Errorf("got\n%s\nwant\n%s", g, tc.want)
			}
		})
	}
	for _, tc := range []struct{ name, in, want string }{
		{"broken JSON", "{\n\"a\": \n}", "in:3: expected a .vis.config JSON object of NPU node -> bench node, found invalid JSON"},
		{"not an object", "[1]", "in:1: expected a .vis.config JSON object of NPU node -> bench node, found a JSON array"},
		{"not a string", `{"a": 3}`, `in: expected a bench node name (a string) for "a", found 3`},
		{"state not an object", `{"manualMatchNodes": []}`, `in: expected "manualMatchNodes" to be an object of NPU node -> bench node, found a list`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseVisConfig([]byte(tc.in), "in")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func FuzzParseVisConfig(f *testing.F) {
	f.Add([]byte(`{"Module.a.A.forward.0": "Module.b.B.forward.0"}`))
	f.Add([]byte(`{"manualMatchNodes": {"x": "y"}}`))
	f.Add([]byte("\ufeff{\"run\": 1}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ms, err := ParseVisConfig(data, "fuzz")
		if err != nil && ms != nil {
			t.Fatalf("matches and an error: %v", err)
		}
	})
}
