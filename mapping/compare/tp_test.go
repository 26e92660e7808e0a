package compare

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/layermap/layermap/printparse/source"
)

// tpGapPair writes step folders of TP 2 (ranks 0 and 1) and TP 1 (rank
// 0), one replica: layers layers of a column-parallel fc1 (split along
// its last axis), a sequence-parallel norm (along the first) and a
// row-parallel fc2 (whole on every rank, so never looked up in the other
// shard). Rank 1 holds besides, after layer gapAt, gap entries of its
// own that no row looks up.
func tpGapPair(t *testing.T, layers, gapAt, gap int) (sharded, single string) {
	t.Helper()
	x := demoLeaves(t, "[2, 8]")
	w := demoLeaves(t, "[8]")
	shard := func(s int) []fxEntry {
		var out []fxEntry
		for l := range layers {
			p := fmt.Sprintf("Module.decoder.layers.%d.", l)
			out = append(out,
				fxEntry{name: p + "mlp.linear_fc1.ColumnParallelLinear.forward.0", in: []*jnode{x[0]},
					out: []*jnode{x[2+2*s]}, params: map[string]*jnode{"weight": w[2*s]}},
				fxEntry{name: p + "pre_mlp_layernorm.RMSNorm.forward.0", in: []*jnode{x[0]}, out: []*jnode{x[3+2*s]}},
				fxEntry{name: p + "mlp.linear_fc2.RowParallelLinear.forward.0", in: []*jnode{x[0]}, out: []*jnode{x[10]}})
		}
		return out
	}
	a, b := shard(0), shard(1)
	whole := make([]fxEntry, len(a))
	for k := range a {
		whole[k] = a[k]
		switch k % 3 {
		case 0:
			whole[k] = fxEntry{name: a[k].name, in: a[k].in, out: []*jnode{joinLeaves(t, 1, false, a[k].out[0], b[k].out[0])},
				params: map[string]*jnode{"weight": joinLeaves(t, 0, false, a[k].params["weight"], b[k].params["weight"])}}
		case 1:
			whole[k] = fxEntry{name: a[k].name, in: a[k].in, out: []*jnode{joinLeaves(t, 0, false, a[k].out[0], b[k].out[0])}}
		}
	}
	var withGap []fxEntry
	for k, e := range b {
		withGap = append(withGap, e)
		if k == 3*gapAt+2 {
			for g := range gap {
				withGap = append(withGap, fxEntry{name: fmt.Sprintf("Module.gap.%d.Extra.forward.0", g), in: []*jnode{x[0]}, out: []*jnode{x[1]}})
			}
		}
	}
	dir := t.TempDir()
	sharded, single = filepath.Join(dir, "tp2", "step0"), filepath.Join(dir, "tp1", "step0")
	writeFixture(t, filepath.Join(sharded, "rank0"), a...)
	writeFixture(t, filepath.Join(sharded, "rank1"), withGap...)
	writeFixture(t, filepath.Join(single, "rank0"), whole...)
	return sharded, single
}

// breakEntry makes the first Max value of entry name in the dump.json at
// path a syntax error, "1.2.3", and returns its line.
func breakEntry(t *testing.T, path, name string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	at := strings.Index(s, `"`+name+`": {`)
	if at < 0 {
		t.Fatalf("%s: no entry %s", path, name)
	}
	const key = `"Max": `
	v := at + strings.Index(s[at:], key) + len(key)
	s = s[:v] + "1.2.3" + s[v+strings.IndexAny(s[v:], ",\n"):]
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return strings.Count(s[:v], "\n") + 1
}

// TestTPCorruptShard: a tensor-parallel shard's dump.json with an entry
// that does not parse fails the compare with an input error naming the
// file's first syntax error, as loading it whole would, whether or not a
// lookup of the join reaches the entry and however far the shard's
// prefetcher got: the same error every run, nothing written. The pair's
// own dumps load before the shards, and every dump before anything is
// checked (inLoadOrder). An error the join meets itself keeps its words
// (the side it names); one that stands for another is the load's.
func TestTPCorruptShard(t *testing.T) {
	t.Parallel()
	const layers, gapAt, gap = 30, 10, 3000
	fc1 := func(l int) string {
		return fmt.Sprintf("Module.decoder.layers.%d.mlp.linear_fc1.ColumnParallelLinear.forward.0", l)
	}
	fc2 := func(l int) string {
		return fmt.Sprintf("Module.decoder.layers.%d.mlp.linear_fc2.RowParallelLinear.forward.0", l)
	}
	gapEntry := func(g int) string { return fmt.Sprintf("Module.gap.%d.Extra.forward.0", g) }
	tests := []struct {
		name   string
		shard  []string // rank 1's entries broken
		single string   // the TP 1 rank's entry broken ("": none)
		header bool     // the TP 1 rank's "data" a list (valid JSON)
		// whether the error is the TP 1 rank's broken entry (else the
		// shard's first), and given with the side of the one met
		ofSingle, side bool
	}{
		{name: "an entry a lookup reaches", shard: []string{fc1(gapAt + 1)}, side: true},
		{name: "an entry past every lookup", shard: []string{fc2(layers - 1)}, side: true},
		{name: "an entry no lookup reaches, just before a lookup", shard: []string{gapEntry(gap - 1)}, side: true},
		{name: "an entry no lookup reaches, where the prefetcher may be", shard: []string{gapEntry(280)}, side: true},
		{name: "an entry no lookup reaches before one a lookup reaches", shard: []string{gapEntry(600), fc1(gapAt + 1)}},
		{name: "the TP 1 rank and a shard", shard: []string{gapEntry(600)}, single: fc2(20), ofSingle: true, side: true},
		{name: "a bad header in the TP 1 rank and a shard", shard: []string{gapEntry(600)}, header: true},
	}
	for _, dir := range []struct {
		name    string
		tp      TPSizes
		npuMany bool
	}{{"NPU TP 2", TPSizes{2, 1}, true}, {"bench TP 2", TPSizes{1, 2}, false}} {
		for _, tc := range tests {
			t.Run(dir.name+", "+tc.name, func(t *testing.T) {
				t.Parallel()
				sharded, single := tpGapPair(t, layers, gapAt, gap)
				file := filepath.Join(sharded, "rank1", "dump.json")
				line := 0
				for _, e := range tc.shard {
					if l := breakEntry(t, file, e); line == 0 {
						line = l
					}
				}
				side := map[bool]string{true: "target", false: "bench"}[dir.npuMany]
				one := filepath.Join(single, "rank0", "dump.json")
				if tc.single != "" {
					l := breakEntry(t, one, tc.single)
					if tc.ofSingle {
						file, line, side = one, l, map[bool]string{true: "bench", false: "target"}[dir.npuMany]
					}
				}
				if tc.header {
					if err := os.WriteFile(one, []byte(`{"task": "statistics", "data": []}`), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				want := fmt.Sprintf("%s:%d: expected ',' or '}', found '.'", file, line)
				if tc.side {
					want = side + ": " + want
				}
				target, golden := sharded, single
				if !dir.npuMany {
					target, golden = single, sharded
				}
				for run := range 3 {
					out := filepath.Join(t.TempDir(), "out")
					_, err := Run(Options{Target: target, Golden: golden, OutDir: out, TP: dir.tp})
					var se *source.Error
					if !errors.As(err, &se) || err.Error() != want {
						t.Fatalf("run %d: %v\nwant the input error %s", run, err, want)
					}
					if got := names(t, out); len(got) != 0 {
						t.Fatalf("run %d: left in the output folder: %v", run, got)
					}
				}
			})
		}
	}
}
