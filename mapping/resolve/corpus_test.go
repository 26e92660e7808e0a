package resolve

import (
	"os"
	"strings"
	"testing"

	"github.com/layermap/layermap/mapping"
	"github.com/layermap/layermap/printparse/testkit"
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
	lines := func(ps []NamePair) string {
		var b strings.Builder
		for _, p := range ps {
			b.WriteString(p.NPU + ": " + p.Bench + "\n")
		}
		return b.String()
	}
	if d := testkit.DiffLines(lines(want), lines(got), 15); d != "" {
		t.Error(d)
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
