package templates

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/layermap/layermap/printparse/testkit"
)

var (
	// commitRef is a source pinned to a commit: "@ 06ecb208" or "stored version 86533129".
	commitRef = regexp.MustCompile(`(@|stored version) [0-9a-f]{8}`)
	// provenBy names the benchmark pairs a template is proven on.
	provenBy = regexp.MustCompile(`Proven by testdata/benchmark \(([^)]*)\)`)
	pairName = regexp.MustCompile(`[a-z0-9][a-z0-9._-]+_vs_[a-z0-9._-]+`)
)

// TestTemplateProvenance: every expert template written from conversion
// tables (no seed to correct) cites its sources at a commit and names the
// benchmark pairs that prove it (infer's TestEval checks it drafts one).
func TestTemplateProvenance(t *testing.T) {
	n := 0
	for _, tp := range All() {
		if tp.Kind != KindExpert || tp.Corrects != "" {
			continue
		}
		n++
		prov := strings.ReplaceAll(tp.Provenance, "\n", " ")
		if !commitRef.MatchString(prov) {
			t.Errorf("%s: provenance cites no source at a commit", tp.Name)
		}
		m := provenBy.FindStringSubmatch(prov)
		if m == nil {
			t.Errorf("%s: provenance names no benchmark pair (\"Proven by testdata/benchmark (PAIR, ...)\")", tp.Name)
			continue
		}
		pairs := pairName.FindAllString(m[1], -1)
		if len(pairs) == 0 {
			t.Errorf("%s: no pair name in %q", tp.Name, m[1])
		}
		for _, p := range pairs {
			if _, err := os.Stat(testkit.Testdata(t, "benchmark", p, "truth.yaml")); err != nil {
				t.Errorf("%s: proven by %s: %v", tp.Name, p, err)
			}
		}
	}
	if n < 16 {
		t.Errorf("%d templates written from conversion tables, want the 16 of issue 8 (8 families, both directions)", n)
	}
}
