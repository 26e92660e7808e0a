package infer

import (
	"strings"
	"testing"
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
		{"forward", r.Mapping.Marshal, "N:1: NPU linear_fc1 fuses gate_proj and up_proj", "N:1: bench linear_fc1"},
		{"reverse", r.Reverse.Marshal, "N:1: bench linear_fc1 fuses gate_proj and up_proj", "N:1: NPU linear_fc1"},
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
