package compare

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/layermap/layermap/mapping/output"
	"github.com/layermap/layermap/mapping/resolve"
	"github.com/layermap/layermap/printparse/testkit"
)

// TestDataMappingYAML: the derived data mapping is written as yaml.v3
// writes the mapping node (names written directly where they are plain),
// and, for msprobe's own golden, byte for byte as msprobe saved it.
func TestDataMappingYAML(t *testing.T) {
	pairs := []resolve.NamePair{{NPU: "Module.a.b.Linear.forward.0.input.0", Bench: "Module.x.Linear.forward.0.input.0"}, {NPU: "Tensor.add.0.forward.output.0", Bench: "N/A"},
		{NPU: "with space.0", Bench: "x: y"}, {NPU: "true", Bench: "1"}, {NPU: "Cell.a-b/c.0", Bench: "~"}, {NPU: "null", Bench: "Null"}, {NPU: "ü.0", Bench: "a#b"}, {NPU: "-lead", Bench: "y"}, {NPU: "a", Bench: ""}}
	dir := t.TempDir()
	set := output.NewSet()
	f, err := set.Create(dir, output.Name{Prefix: "dm", Suffix: ".yaml"}, resultMode)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeDataMapping(f, eachPair(pairs)); err != nil {
		t.Fatal(err)
	}
	if err := set.Commit(time.Now()); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(filepath.Join(dir, "dm.yaml"))
	n := &yaml.Node{Kind: yaml.MappingNode}
	for _, p := range pairs {
		n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: p.NPU}, &yaml.Node{Kind: yaml.ScalarNode, Value: p.Bench})
	}
	want, _ := yaml.Marshal(n)
	if string(got) != string(want) {
		t.Errorf("data mapping yaml:\n%s\nwant yaml.v3's:\n%s", got, want)
	}
	root := testkit.Corpus(t, "msprobe")
	out := t.TempDir()
	if _, err := Run(Options{Target: filepath.Join(root, "test/msprobe_test/resources/layer_mapping/mindspore/dump.json"),
		Golden: filepath.Join(root, "test/msprobe_test/resources/layer_mapping/pytorch/dump.json"), OutDir: out,
		LayerMappingFile: filepath.Join(root, "test/msprobe_test/resources/layer_mapping/layer_mapping.yaml"),
		Stamp:            time.Date(2026, 12, 2, 12, 3, 52, 0, time.UTC)}); err != nil {
		t.Fatal(err)
	}
	checkSame(t, filepath.Join(out, "data_mapping_20261202120352.yaml"), filepath.Join(root, "golden/layer_mapping_ms_vs_pt/output/data_mapping_20261202120352.yaml"))
}

// eachPair gives pairs as resolve.DataMap.Each gives them, each name
// split in two parts.
func eachPair(pairs []resolve.NamePair) func(func(npu, npuSuffix, bench, benchSuffix string) error) error {
	return func(fn func(npu, npuSuffix, bench, benchSuffix string) error) error {
		for _, p := range pairs {
			n, b := len(p.NPU)/2, len(p.Bench)/2
			if err := fn(p.NPU[:n], p.NPU[n:], p.Bench[:b], p.Bench[b:]); err != nil {
				return err
			}
		}
		return nil
	}
}
