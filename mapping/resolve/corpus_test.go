package resolve

import (
	"os"
	"testing"

	"github.com/layermap/layermap/mapping"
	"gopkg.in/yaml.v3"
)

// readPairs loads a flat YAML map (msprobe's api_mapping / data_mapping
// output) as ordered pairs.
func readPairs(t testing.TB, path string) []NamePair {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var out []NamePair
	if len(doc.Content) == 0 {
		return nil
	}
	m := doc.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		out = append(out, NamePair{NPU: m.Content[i].Value, Bench: m.Content[i+1].Value})
	}
	return out
}

// diffPairs reports every line where got and want differ.
func diffPairs(t *testing.T, got, want []NamePair) {
	t.Helper()
	n := max(len(got), len(want))
	bad := 0
	for i := 0; i < n; i++ {
		var g, w NamePair
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			bad++
			if bad <= 15 {
				t.Errorf("line %d:\n  got  %s: %s\n  want %s: %s", i+1, g.NPU, g.Bench, w.NPU, w.Bench)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d lines differ (got %d lines, want %d)", bad, n, len(got), len(want))
	}
}

func mustLoad(t testing.TB, path string) *mapping.Mapping {
	t.Helper()
	m, _, err := mapping.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
