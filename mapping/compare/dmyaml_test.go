package compare

import (
	"bytes"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"gopkg.in/yaml.v3"

	"github.com/layermap/layermap/mapping/resolve"
	"github.com/layermap/layermap/printparse/testkit"
)

// TestDataMappingYAML: the derived data mapping is written as yaml.v3
// writes the mapping node (names written directly where they are plain),
// whatever the two parts each name comes in, and, for msprobe's own
// golden, byte for byte as msprobe saved it.
func TestDataMappingYAML(t *testing.T) {
	long := "Module." + strings.Repeat("a", 990)
	pairs := []resolve.NamePair{{NPU: "Module.a.b.Linear.forward.0.input.0", Bench: "Module.x.Linear.forward.0.input.0"}, {NPU: "Tensor.add.0.forward.output.0", Bench: "N/A"},
		{NPU: "with space.0", Bench: "x: y"}, {NPU: "true", Bench: "1"}, {NPU: "Cell.a-b/c.0", Bench: "~"}, {NPU: "null", Bench: "Null"}, {NPU: "ü.0", Bench: "a#b"}, {NPU: "-lead", Bench: "y"}, {NPU: "a", Bench: ""},
		{NPU: "yes.0", Bench: "Yes"}, {NPU: "nulls", Bench: "offset"}, {NPU: "Tensor.add.0.forward.output.0", Bench: "Tensor.add.0.forward.output.1"},
		{NPU: "Tensor.add.0.forward.output.0", Bench: "1Tensor.add.0.forward.output.0"}, {NPU: "Module.a.b.Linear.forward.0.input.0", Bench: "Module.a b.Linear.forward.0.input.0"},
		{NPU: long + "123", Bench: long + "1234"}, {NPU: long + "1234", Bench: long + "123"},
		// first parts of one length, one plain and one YAML quotes, in turn;
		// suffixes YAML quotes
		{NPU: "Module.layer.0.forward.0", Bench: "Module.layer.0.forward.0"}, {NPU: "Module #ayer.0.forward.0", Bench: "Module.layer.0.forward.0"},
		{NPU: "Module.layer.0.forward.0", Bench: "*odule.layer.0.forward.0"}, {NPU: "Module.layer.0.forward.0", Bench: "Module.layer.0.forward.0"},
		{NPU: "Module.layer.0.forward.0.in: ut.0", Bench: "Module.layer.0.forward.0.input.0"}, {NPU: "Module.layer.0.forward.0.input.0", Bench: "Module.layer.0.forward.0.inp #t.0"},
		{NPU: "12345678", Bench: "Module.layer.0.forward.0"}}
	n := &yaml.Node{Kind: yaml.MappingNode}
	for _, p := range pairs {
		n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: p.NPU}, &yaml.Node{Kind: yaml.ScalarNode, Value: p.Bench})
	}
	want, _ := yaml.Marshal(n)
	for _, split := range []struct {
		name string
		at   func(s string) int
	}{
		{"half", func(s string) int { return len(s) / 2 }},
		{"none first", func(string) int { return 0 }},
		{"one first", func(s string) int { return min(1, len(s)) }},
		{"all first", func(s string) int { return len(s) }},
		{"suffix", func(s string) int { return max(0, len(s)-len(".input.0")) }},
	} {
		t.Run(split.name, func(t *testing.T) {
			var got bytes.Buffer
			if err := writeDataMapping(&got, eachPairAt(pairs, split.at)); err != nil {
				t.Fatal(err)
			}
			if got.String() != string(want) {
				t.Errorf("data mapping yaml:\n%s\nwant yaml.v3's:\n%s", got.String(), want)
			}
		})
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
	return eachPairAt(pairs, func(s string) int { return len(s) / 2 })
}

// eachPairAt is eachPair with each name split where at says. The bench
// names are given in one buffer used again, as DataMap.EntryPairs gives
// them.
func eachPairAt(pairs []resolve.NamePair, at func(string) int) func(func(npu, npuSuffix, bench, benchSuffix string) error) error {
	return func(fn func(npu, npuSuffix, bench, benchSuffix string) error) error {
		var buf []byte
		for _, p := range pairs {
			n, b := at(p.NPU), at(p.Bench)
			buf = append(buf[:0], p.Bench[:b]...)
			bench := unsafe.String(unsafe.SliceData(buf), len(buf))
			if err := fn(p.NPU[:n], p.NPU[n:], bench, p.Bench[b:]); err != nil {
				return err
			}
		}
		return nil
	}
}

// BenchmarkDataMappingWriter writes the pairs of a deferred data map as
// the join does, entry by entry, each row's name in its entry's name
// and a suffix: ns/op is per pair.
func BenchmarkDataMappingWriter(b *testing.B) {
	suffixes := []string{".input.0", ".input.1", ".output.0", ".parameters.weight", ".parameters.bias"}
	var entries [][2]string
	for l := range 32 {
		for _, m := range []string{"self_attn.q_proj.Linear", "mlp.down_proj.Linear", "input_layernorm.Qwen2RMSNorm"} {
			entries = append(entries, [2]string{
				"Module.module.model.layers." + strconv.Itoa(l) + "." + m + ".forward.0",
				"Module.0.module.module.text_decoder.decoder.layers." + strconv.Itoa(l) + "." + m + ".forward.0"})
		}
	}
	w := newDataMappingWriter(io.Discard)
	var buf []byte
	b.ReportAllocs()
	for i := 0; b.Loop(); {
		e := entries[i%len(entries)]
		buf = append(buf[:0], e[1]...) // the bench name in a buffer used again
		bench := unsafe.String(unsafe.SliceData(buf), len(buf))
		for _, s := range suffixes {
			if err := w.pair(e[0], s, bench, s); err != nil {
				b.Fatal(err)
			}
		}
		i++
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(suffixes)), "ns/pair")
}
