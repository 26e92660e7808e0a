package infer

import (
	"slices"
	"strings"
	"testing"

	"github.com/layermap/layermap/mapping/validate"
)

// TestSizesAgreeWithValidate checks that the pairs the report says print
// different sizes are exactly those validate warns about (LM107, sizes)
// on the same draft, over every golden pair: the Qwen2.5-VL 3B vs 7B and
// the Qwen2-VL 7B vs 2B pairs have some (different configurations), the
// rest none.
func TestSizesAgreeWithValidate(t *testing.T) {
	for _, p := range pairs {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			npu, bench := p.load(t)
			r, err := Suggest(npu, bench, Options{Template: TemplateAuto})
			if err != nil {
				t.Fatal(err)
			}
			var ours []string
			for _, q := range collapsePairs(r.Pairs) {
				if q.SizesDiffer != "" {
					ours = append(ours, q.NPU+" -> "+q.Bench)
				}
			}
			var theirs []string
			for _, f := range validate.Check(r.Forward.Mapping, nil, npu, bench, validate.Options{}).Findings {
				if f.Code == validate.CodeSuspicious && strings.Contains(f.Msg, " sizes ") {
					pair, _, _ := strings.Cut(f.Msg, " pairs ")
					theirs = append(theirs, pair)
				}
			}
			slices.Sort(ours)
			slices.Sort(theirs)
			if !slices.Equal(ours, theirs) {
				t.Errorf("report's differing sizes:\n  %s\nvalidate's LM107:\n  %s", strings.Join(ours, "\n  "), strings.Join(theirs, "\n  "))
			}
		})
	}
}
