package compare

import (
	"bytes"
	"errors"
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
// writes the mapping node of its strings (names written directly where
// they are plain; no key here is long enough for PyYAML's explicit keys
// alone, see TestDataMappingLongKeys), whatever the two parts each name
// comes in, and, for msprobe's own golden, byte for byte as msprobe saved
// it.
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
		n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: p.NPU}, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: p.Bench})
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

// failingWriter fails every write after the first n bytes.
type failingWriter struct{ n int }

var errDiskFull = errors.New("disk full")

func (w *failingWriter) Write(p []byte) (int, error) {
	if len(p) > w.n {
		k := w.n
		w.n = 0
		return k, errDiskFull
	}
	w.n -= len(p)
	return len(p), nil
}

// TestDataMappingWriter: the writer that takes pairs on one goroutine and
// writes them on its own writes what writeDataMapping writes, for none,
// one or many batches of pairs (bench names in a buffer used again); a
// failed write is returned by finish, by a pair once the writing
// goroutine has it, and an abandoned writer's goroutine ends.
func TestDataMappingWriter(t *testing.T) {
	t.Parallel()
	var many []resolve.NamePair
	for i := range 40000 {
		many = append(many, resolve.NamePair{NPU: "Module.layers." + strconv.Itoa(i) + ".mlp.MLP.forward.0.input.0", Bench: "Module.decoder.layers." + strconv.Itoa(i) + ".mlp.forward.0.input.0"})
		if i%997 == 0 {
			many = append(many, resolve.NamePair{NPU: "odd: " + strconv.Itoa(i), Bench: "N/A"})
		}
	}
	for _, n := range []int{0, 1, 100, len(many)} {
		pairs := many[:n]
		var want, got bytes.Buffer
		if err := writeDataMapping(&want, eachPair(pairs)); err != nil {
			t.Fatal(err)
		}
		w := newDataMappingWriter(&got)
		if err := eachPair(pairs)(w.pair); err != nil {
			t.Fatal(err)
		}
		if err := w.finish(); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Errorf("%d pairs: the writer's\n%.300s\nwant writeDataMapping's\n%.300s", n, got.String(), want.String())
		}
		if n == len(many) && want.Len() < 4*dataMappingBatch {
			t.Errorf("%d pairs make %d bytes: fewer than four batches", n, want.Len())
		}
	}
	// A write fails: pair says so once the writing goroutine has it, and
	// finish does.
	for _, n := range []int{0, 1000, 3 * dataMappingBatch} {
		w := newDataMappingWriter(&failingWriter{n: n})
		var perr error
		for i := 0; i < len(many) && perr == nil; i++ {
			perr = w.pair(many[i].NPU, "", many[i].Bench, "")
			if perr == nil && i%500 == 0 {
				time.Sleep(time.Millisecond) // let the writing goroutine get to it
			}
		}
		if !errors.Is(perr, errDiskFull) {
			t.Errorf("writes failing after %d bytes: pair gave %v", n, perr)
		}
		if err := w.finish(); !errors.Is(err, errDiskFull) {
			t.Errorf("writes failing after %d bytes: finish gave %v", n, err)
		}
	}
	w := newDataMappingWriter(&failingWriter{n: 0})
	if err := w.finish(); !errors.Is(err, errDiskFull) {
		t.Errorf("no pair, no write: finish gave %v", err)
	}
	// Abandoned after some batches: the writing goroutine ends.
	w = newDataMappingWriter(io.Discard)
	for _, p := range many {
		if err := w.pair(p.NPU, "", p.Bench, ""); err != nil {
			t.Fatal(err)
		}
	}
	w.abandon()
	if w.h.queue != nil {
		t.Error("abandoned: the writing goroutine was not waited for")
	}
}

// BenchmarkDataMappingWriter writes the pairs of a deferred data map as
// the join does, entry by entry, each row's name in its entry's name and
// a suffix: ns/pair is per pair, what the goroutine giving the pairs
// spends ("pair": dataMappingWriter, which writes on a goroutine of its
// own) and what writing them as YAML costs ("yaml": yamlPairs).
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
	for _, c := range []struct {
		name   string
		writer func() (pair func(n, ns, bn, bs string) error, finish func() error)
	}{
		{"pair", func() (func(n, ns, bn, bs string) error, func() error) {
			w := newDataMappingWriter(io.Discard)
			return w.pair, w.finish
		}},
		{"yaml", func() (func(n, ns, bn, bs string) error, func() error) {
			w := newYAMLPairs(io.Discard)
			return w.pair, w.finish
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			pair, finish := c.writer()
			var buf []byte
			b.ReportAllocs()
			for i := 0; b.Loop(); {
				e := entries[i%len(entries)]
				buf = append(buf[:0], e[1]...) // the bench name in a buffer used again
				bench := unsafe.String(unsafe.SliceData(buf), len(buf))
				for _, s := range suffixes {
					if err := pair(e[0], s, bench, s); err != nil {
						b.Fatal(err)
					}
				}
				i++
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(suffixes)), "ns/pair")
			if err := finish(); err != nil {
				b.Fatal(err)
			}
		})
	}
}

// TestDataMappingLongKeys: a plain key of 123 characters or more is
// written as an explicit key, as PyYAML (msprobe's yaml.dump) writes it:
// 128 or more with its tag "!!str". Values stay on the key's line.
func TestDataMappingLongKeys(t *testing.T) {
	t.Parallel()
	for _, n := range []int{8, 121, 122, 123, 128, 129, 500, 1000} {
		key := "Module." + strings.Repeat("a", n-len("Module."))
		val := "Module." + strings.Repeat("b", n-len("Module."))
		want := key + ": " + val + "\n"
		if n >= 123 {
			want = "? " + key + "\n: " + val + "\n"
		}
		for _, split := range []int{0, n / 2, n} {
			var got bytes.Buffer
			pairs := []resolve.NamePair{{NPU: key, Bench: val}}
			if err := writeDataMapping(&got, eachPairAt(pairs, func(s string) int { return min(split, len(s)) })); err != nil {
				t.Fatal(err)
			}
			if got.String() != want {
				t.Errorf("key of %d characters, split at %d: %.60q..., want %.60q...", n, split, got.String(), want)
			}
		}
	}
	// msprobe's own data mapping of the demo dumps, MindSpeed-MM as NPU:
	// its long row names as explicit keys, byte for byte
	demo := filepath.Join("..", "..", "testdata", "demo")
	out := t.TempDir()
	if _, err := Run(Options{Target: filepath.Join(demo, "dumps", "mindspeed-mm", "dump.json"), Golden: filepath.Join(demo, "dumps", "llamafactory", "dump.json"),
		OutDir: out, LayerMappingFile: filepath.Join(demo, "golden", "layer_mapping_mindspeed-mm_to_llamafactory.yaml"),
		Stamp: time.Date(2026, 12, 7, 8, 25, 46, 0, time.UTC)}); err != nil {
		t.Fatal(err)
	}
	checkSame(t, filepath.Join(out, "data_mapping_20261207082546.yaml"), filepath.Join(demo, "golden", "data_mapping_mindspeed-mm_to_llamafactory.yaml"))
}
