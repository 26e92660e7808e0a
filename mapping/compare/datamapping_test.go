package compare

import (
	"fmt"
	"maps"
	"strings"
	"testing"
)

// dmPairsSeeds are data mappings as pairs, "key=value" a line.
var dmPairsSeeds = []string{
	"Module.layers.0.mlp.Linear.forward.0.input.0=Module.decoder.layers.0.mlp.RowParallelLinear.forward.0.input.0\n" +
		"Module.layers.1.mlp.Linear.forward.0.input.0=Module.decoder.layers.1.mlp.RowParallelLinear.forward.0.input.0\n" +
		"Tensor.__add__.3.forward.output.0=Tensor.__add__.2.forward.output.0\nTensor.__add__.4.forward.input.1=N/A\n",
	"a=b\na=c\nd=e\na=f\n", // repeated: the last wins
	"a.1.b=x\na.01.b=y\na.1000000000.b=z\na.999999999.b=w\n", // numbers Names keeps in the pattern
	"=\n.=.\na.=b.\n.1.=.2.\n",
	"ü.1.ß=ö.2.é\n",
	// runs: broken, overlapped by later pairs, out of order, at a shift
	"x.0.y=a.0.b\nx.1.y=a.1.b\nx.2.y=a.1.b\nx.3.y=a.2.b\nx.1.y=N/A\nx.0.y=a.5.b\nx.2.y=a.2.b\n",
	"x.3.y=a.4.b\nx.1.y=a.2.b\nx.2.y=a.3.b\nx.0.y=N/A\nx.4.y=N/A\nx.5.y=c\n",
	"x.5.y=a.0.b\nx.6.y=a.1.b\nx.7.y=a.999999999.b\nx.999999999.y=a.0.b\nx.0.y=a.999999999.b\n",
	"N/A=x.1.y\nN/A=x.2.y\nx=a.1.b\nx.1=a.2.b\n",
}

// parsePairs reads "key=value" lines, in order.
func parsePairs(s string) [][2]string {
	var ps [][2]string
	for line := range strings.Lines(s) {
		k, v, _ := strings.Cut(strings.TrimSuffix(line, "\n"), "=")
		ps = append(ps, [2]string{k, v})
	}
	return ps
}

// checkDataMapping fails t where the DataMapping of pairs answers
// otherwise than a map of them: for every name, near misses of it, and
// in All.
func checkDataMapping(t *testing.T, pairs [][2]string) {
	t.Helper()
	want := map[string]string{}
	d := newDataMapping()
	for _, p := range pairs {
		d.add(p[0], p[1])
		want[p[0]] = p[1]
	}
	d.done()
	if d.Len() != len(want) {
		t.Errorf("Len %d, want %d", d.Len(), len(want))
	}
	var asked []string
	for _, p := range pairs {
		asked = append(asked, p[0], p[1], p[0]+".0", p[0]+"0", "0"+p[0], strings.Replace(p[0], "1", "2", 1))
		if len(p[0]) > 0 {
			asked = append(asked, p[0][1:], p[0][:len(p[0])-1])
		}
	}
	for _, s := range asked {
		got, ok := d.Lookup(s)
		w, wok := want[s]
		if got != w || ok != wok {
			t.Errorf("Lookup(%q) = %q, %v; want %q, %v", s, got, ok, w, wok)
		}
		b, ok := d.AppendLookup([]byte("x"), s)
		if string(b) != "x"+w || ok != wok {
			t.Errorf("AppendLookup(x, %q) = %q, %v; want %q, %v", s, b, ok, "x"+w, wok)
		}
	}
	if got := maps.Collect(d.All()); !maps.Equal(got, want) {
		t.Errorf("All: %v, want %v", got, want)
	}
}

func TestDataMapping(t *testing.T) {
	t.Parallel()
	for _, s := range dmPairsSeeds {
		checkDataMapping(t, parsePairs(s))
	}
	var nilMapping *DataMapping
	if _, ok := nilMapping.Lookup("a"); ok || nilMapping.Len() != 0 || DataMappingOf(nil) != nil {
		t.Error("a nil DataMapping maps something")
	}
	if d := DataMappingOf(map[string]string{}); d == nil || d.Len() != 0 {
		t.Error("an empty DataMapping is not empty")
	}
}

// TestDataMappingCompact: pairs as msprobe writes them, every row of a
// dump, take a run a pattern, whatever their number, and a run more
// wherever the bench side's call counts drift from the NPU side's, or
// an NPU name is paired again.
func TestDataMappingCompact(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		what      string
		drift     int // the bench call count is one more from every drift-th call on
		again     bool
		runsAPatt int
	}{
		{"same calls", 0, false, 1},
		{"drifting calls", 50, false, 4},
		{"a call paired again", 0, true, 3},
	} {
		d := newDataMapping()
		want := map[string]string{}
		add := func(npu, bench string) {
			d.add(npu, bench)
			want[npu] = bench
		}
		for call := range 200 {
			bcall := call
			if tc.drift > 0 {
				bcall += call / tc.drift
			}
			for layer := range 36 {
				for _, sfx := range []string{".input.0", ".output.0", ".parameters.weight"} {
					add(fmt.Sprintf("Module.model.layers.%d.mlp.down_proj.Linear.forward.%d%s", layer, call, sfx),
						fmt.Sprintf("Module.decoder.layers.%d.mlp.linear_fc2.RowParallelLinear.forward.%d%s", layer, bcall, sfx))
				}
			}
		}
		if tc.again {
			for layer := range 36 {
				for _, sfx := range []string{".input.0", ".output.0", ".parameters.weight"} {
					add(fmt.Sprintf("Module.model.layers.%d.mlp.down_proj.Linear.forward.100%s", layer, sfx), "N/A")
				}
			}
		}
		d.done()
		if d.Len() != len(want) || d.npu.Len() != 36*3 || len(d.runs) != 36*3*tc.runsAPatt {
			t.Errorf("%s: %d pairs, %d NPU patterns, %d runs; want %d pairs, %d patterns and %d runs", tc.what, d.Len(), d.npu.Len(), len(d.runs), len(want), 36*3, 36*3*tc.runsAPatt)
		}
		for npu, bench := range want {
			if got, ok := d.Lookup(npu); got != bench || !ok {
				t.Fatalf("%s: Lookup(%q) = %q, %v; want %q", tc.what, npu, got, ok, bench)
			}
		}
	}
}

// FuzzDataMapping: a DataMapping answers as a map of its pairs.
func FuzzDataMapping(f *testing.F) {
	for _, s := range dmPairsSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkDataMapping(t, parsePairs(s))
	})
}

// BenchmarkDataMappingLookup looks up every NPU row of a data mapping of
// 100,000 pairs as msprobe writes one, in file order.
func BenchmarkDataMappingLookup(b *testing.B) {
	d := newDataMapping()
	var keys []string
	for i := range 100_000 {
		k := fmt.Sprintf("Module.module.language_model.layers.%d.mlp.down_proj.Linear.forward.%d.input.0", i%36, i/36)
		d.add(k, fmt.Sprintf("Module.0.module.module.text_decoder.decoder.layers.%d.mlp.linear_fc2.RowParallelLinear.forward.%d.input.0", i%36, i/36))
		keys = append(keys, k)
	}
	d.done()
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		for _, k := range keys {
			var ok bool
			if buf, ok = d.AppendLookup(buf[:0], k); !ok {
				b.Fatal(k)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(keys)), "ns/lookup")
}
