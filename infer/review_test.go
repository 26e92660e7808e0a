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

// TestTemplateMissesNeedAPartner checks that "fires without a bench
// target" is only said of modules that have a partner the line misses: on
// MindSpeed-MM (16 vision, 8 text layers) against the full new-layout 3B
// print (32, 36), the reverse template's lines fire on blocks 16-31 and
// layers 8-35, which have no partner at all, and no line is at fault;
// the seed template on pair A still misses the text layers' norms.
func TestTemplateMissesNeedAPartner(t *testing.T) {
	full := corpusPair{"ms_vs_new3b", pairs[0].npu,
		"prints/hf/qwen2_5_vl_3b-new-layout-model.visual-model.language_model__inspect-model-script-anon.txt"}
	for _, tc := range []struct {
		pair       corpusPair
		template   string
		wantMisses int
	}{
		{full, TemplateAuto, 0},
		{pairs[0], "qwen2.5-vl_mindspeed-mm_to_llamafactory", 3},
	} {
		npu, bench := tc.pair.load(t)
		r, err := Suggest(npu, bench, Options{Template: tc.template})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, l := range r.TemplateUnapplied {
			if strings.Contains(l, "without a bench target") {
				n++
			}
		}
		if n != tc.wantMisses {
			t.Errorf("%s, template %s: %d lines said to fire without a bench target, want %d:\n%s",
				tc.pair.name, tc.template, n, tc.wantMisses, strings.Join(r.TemplateUnapplied, "\n"))
		}
	}
}
