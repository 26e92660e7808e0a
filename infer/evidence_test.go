package infer

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/layermap/layermap/printparse"
	"github.com/layermap/layermap/printparse/testkit"
)

func TestShapesAgree(t *testing.T) {
	tests := []struct {
		a, b      []int
		agree, ok bool
	}{
		{[]int{2, 8}, []int{2, 8}, true, true},
		{[]int{2048, 4, 4096}, []int{4, 2048, 4096}, true, true}, // Megatron's [s, b, h] vs [b, s, h]
		{[]int{2048, 4, 2048}, []int{4, 2048, 4096}, true, true}, // a tensor-parallel shard
		{[]int{8192, 4096}, []int{4, 2048, 4096}, true, true},    // flattened tokens
		{[]int{4, 2048, 4096}, []int{4, 2048, 11008}, false, true},
		{[]int{4, 64, 2048}, []int{4, 2048, 4096}, false, true}, // two dimensions differ: no shard
		{[]int{4, 2048, 3}, []int{4, 2048, 4096}, false, true},
		{nil, []int{2}, false, false},
	}
	for _, tc := range tests {
		if agree, ok := shapesAgree(tc.a, tc.b); agree != tc.agree || ok != tc.ok {
			t.Errorf("shapesAgree(%v, %v) = %v, %v; want %v, %v", tc.a, tc.b, agree, ok, tc.agree, tc.ok)
		}
	}
}

func TestWeigh(t *testing.T) {
	ts := func(shape []int, s ...float64) *tensorStat {
		x := &tensorStat{shape: shape}
		for k := range x.stats {
			x.stats[k] = math.NaN()
			if k < len(s) {
				x.stats[k] = s[k]
			}
		}
		return x
	}
	h := []int{2, 8}
	tests := []struct {
		name      string
		a, b      *moduleIO
		nOne      bool
		band      string // the worst doubt's band, "" for none
		confirmed bool
	}{
		{"same inputs and outputs", &moduleIO{ts(h, 1, -1, 0, 3), ts(h, 2, -2, 0, 4)}, &moduleIO{ts(h, 1, -1, 0.0001, 3), ts(h, 2.5, -2, 0, 4)}, false, "", true},
		{"inputs differ: no veto", &moduleIO{ts(h, 1, -1, 0, 3), ts(h)}, &moduleIO{ts(h, 9, -9, 1, 30), ts(h)}, false, "", false},
		{"output shapes differ", &moduleIO{ts(h, 1, -1, 0, 3), ts([]int{2, 8})}, &moduleIO{ts(h, 1, -1, 0, 3), ts([]int{2, 3})}, false, BandUnsure, false},
		{"input shapes differ", &moduleIO{ts([]int{2, 5}), nil}, &moduleIO{ts(h), nil}, false, BandUnsure, false},
		{"N:1: outputs differ by design", &moduleIO{ts(h, 1, -1, 0, 3), ts([]int{2, 32})}, &moduleIO{ts(h, 1, -1, 0, 3), ts([]int{2, 11})}, true, "", false},
		{"no statistics", &moduleIO{ts(h), ts(h)}, &moduleIO{ts(h), ts(h)}, false, "", false},
	}
	for _, tc := range tests {
		ds, confirmed := weigh(tc.a, tc.b, tc.nOne)
		band := BandSure
		for _, d := range ds {
			band = worse(band, d.band)
		}
		if band == BandSure {
			band = ""
		}
		if band != tc.band || confirmed != tc.confirmed {
			t.Errorf("%s: band %q confirmed %v (doubts %v), want %q %v", tc.name, band, confirmed, ds, tc.band, tc.confirmed)
		}
	}
}

// copyDump copies an msprobe dump folder, applying edit to its dump.json.
func copyDump(t *testing.T, src string, edit func(string) string) string {
	t.Helper()
	dst := t.TempDir()
	for _, f := range []string{"dump.json", "construct.json", "stack.json"} {
		data, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if f == "dump.json" {
			data = []byte(edit(string(data)))
		}
		if err := os.WriteFile(filepath.Join(dst, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// TestDumpEvidence drafts the demo's two msprobe dump folders: what both
// dumps hold confirms the pairs (none is unsure), and a module whose dumped
// output shape cannot match its partner's makes that pair unsure.
func TestDumpEvidence(t *testing.T) {
	ms, lf := testkit.Testdata(t, "demo", "dumps", "mindspeed-mm"), testkit.Testdata(t, "demo", "dumps", "llamafactory")
	load := func(p string) *printparse.Tree {
		tr, err := printparse.Load(p, printparse.Options{Index: -1})
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	io, err := dumpEvidence(load(lf))
	if err != nil {
		t.Fatal(err)
	}
	if n := io["module.model.norm"]; n == nil || n.out == nil || len(n.out.shape) != 2 || n.out.stats[0] != 2.453127145767212 {
		t.Fatalf("dumped module.model.norm: %+v, want its output [2, 8] with Max 2.453127145767212", n)
	}
	r, err := Suggest(load(ms), load(lf), Options{Template: TemplateNone})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range r.Pairs {
		if p.Band == BandUnsure {
			t.Errorf("%s <-> %s unsure on the real dumps: %v", p.NPU, p.Bench, p.Doubts)
		}
	}
	// The bench norm's output, [2, 8], dumped as [2, 3].
	key := `"Module.module.model.norm.Qwen2RMSNorm.forward.0": {`
	bad := copyDump(t, lf, func(s string) string {
		i := strings.Index(s, key)
		j := i + strings.Index(s[i:], `"output"`)
		k := j + strings.Index(s[j:], "8\n")
		return s[:k] + "3\n" + s[k+2:]
	})
	r, err = Suggest(load(ms), load(bad), Options{Template: TemplateNone})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range r.Pairs {
		if p.Bench == "module.model.norm" {
			found = true
			if p.Band != BandUnsure || !strings.Contains(strings.Join(p.Doubts, ";"), "dumped output shapes differ") {
				t.Errorf("%s <-> %s: band %s %v, want unsure for the dumped output shapes", p.NPU, p.Bench, p.Band, p.Doubts)
			}
		}
	}
	if !found {
		t.Error("module.model.norm is not paired")
	}
}
