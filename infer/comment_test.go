package infer

import (
	"bytes"
	"regexp"
	"testing"
)

// The YAML comment of a pair prints the same rounded figures as the
// report: a raw 0.8949 once read "score 0.89" in the draft and "score
// 0.90" in the report (Pair.Score is rounded to 3 places first).
func TestPairCommentRounding(t *testing.T) {
	tests := []struct {
		score, margin float64
		want          string
	}{
		{0.8949, 0.5681, "score 0.90 margin 0.57: name"},  // round(0.8949) = 0.895, as the report prints it
		{0.89449, 0.005, "score 0.89 margin 0.01: name"},  // 0.894 stays 0.89
		{0.99951, 0.0004, "score 1.00 margin 0.00: name"}, // 1.000
		{0.7984999, 1, "score 0.80 margin 1.00: name"},    // 0.798 -> 0.80
		{0.1234, 0.9999, "score 0.12 margin 1.00: name"},
	}
	for _, tc := range tests {
		m := &match{score: tc.score, margin: tc.margin, reasons: []string{"name"}, band: BandSure}
		if got := pairComment(m, npuSide); got != "sure: "+tc.want {
			t.Errorf("pairComment(%v, %v) = %q, want %q", tc.score, tc.margin, got, tc.want)
		}
	}
}

// On every corpus pair, each figure a draft's comment prints is one the
// report prints for some pair.
func TestCommentFiguresInReport(t *testing.T) {
	fig := regexp.MustCompile(`score \d\.\d\d margin \d\.\d\d`)
	for _, p := range pairs {
		t.Run(p.name, func(t *testing.T) {
			npu, bench := p.load(t)
			r, err := Suggest(npu, bench, Options{Template: TemplateAuto})
			if err != nil {
				t.Fatal(err)
			}
			var rep bytes.Buffer
			if err := WriteReport(&rep, r, "text"); err != nil {
				t.Fatal(err)
			}
			inReport := map[string]bool{}
			for _, f := range fig.FindAllString(rep.String(), -1) {
				inReport[f] = true
			}
			for _, m := range []interface{ Marshal() ([]byte, error) }{r.Forward.Mapping, r.Reverse.Mapping} {
				y, err := m.Marshal()
				if err != nil {
					t.Fatal(err)
				}
				for _, f := range fig.FindAllString(string(y), -1) {
					if !inReport[f] {
						t.Errorf("draft comment %q is printed for no pair of the report", f)
					}
				}
			}
		})
	}
}
