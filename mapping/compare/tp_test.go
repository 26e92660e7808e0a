package compare

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/layermap/layermap/printparse/source"
	"github.com/layermap/layermap/printparse/testkit"
)

// tpLayers returns the entries of layers layers on TP 2 ranks 0 and 1
// and on the TP 1 rank: a column-parallel fc1 (split along its last
// axis), a sequence-parallel norm (along the first) and a row-parallel
// fc2 (whole on every rank, so never looked up in the other shard).
func tpLayers(t *testing.T, layers int) (a, b, whole []fxEntry) {
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
	a, b = shard(0), shard(1)
	whole = make([]fxEntry, len(a))
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
	return a, b, whole
}

// tpGapPair writes step folders of TP 2 (ranks 0 and 1) and TP 1 (rank
// 0), one replica, holding tpLayers' layers. Rank 1 holds besides, after
// layer gapAt, gap entries of its own that no row looks up.
func tpGapPair(t *testing.T, layers, gapAt, gap int) (sharded, single string) {
	t.Helper()
	a, b, whole := tpLayers(t, layers)
	x := demoLeaves(t, "[2, 8]")
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

// TestTPFuzzyEnd: a tensor-parallel side's rows whose shapes differ from
// the other side's are combined from the shards whichever join pairs
// them: by name, or in order under -fm, where msprobe's fuzzy match
// settles a row as the pass goes or only once the NPU side is done (the
// bench side holding entries of its own before the pairs). Every table
// is the one of the dumps without the bench side's own entries, joined
// by name. The shards' entries no lookup read are still checked.
func TestTPFuzzyEnd(t *testing.T) {
	t.Parallel()
	const layers = 2
	a, b, whole := tpLayers(t, layers)
	x := demoLeaves(t, "[2, 8]")
	fc1 := func(l int) string {
		return fmt.Sprintf("Module.decoder.layers.%d.mlp.linear_fc1.ColumnParallelLinear.forward.0", l)
	}
	norm := func(l int) string {
		return fmt.Sprintf("Module.decoder.layers.%d.pre_mlp_layernorm.RMSNorm.forward.0", l)
	}
	fc2 := func(l int) string {
		return fmt.Sprintf("Module.decoder.layers.%d.mlp.linear_fc2.RowParallelLinear.forward.0", l)
	}
	// withExtra is es with n entries of the bench side's own before entry
	// at.
	withExtra := func(es []fxEntry, at, n int) []fxEntry {
		var out []fxEntry
		for k, e := range es {
			if k == at {
				for g := range n {
					out = append(out, fxEntry{name: fmt.Sprintf("Module.extra.%d.Extra.forward.0", g), in: []*jnode{x[0]}, out: []*jnode{x[1]}})
				}
			}
			out = append(out, e)
		}
		return out
	}
	type row struct{ name, npuShape, benchShape, msg string }
	// want is the table's rows, each the same on both sides, the combined
	// ones' message naming the sharded side.
	want := func(side string) []row {
		cat := func(axis int) string {
			return fmt.Sprintf(`["fused: tp, %s row = the shards of ranks 0-1 concatenated along axis %d"]`, side, axis)
		}
		var rows []row
		for l := range layers {
			rows = append(rows,
				row{fc1(l) + ".input.0", "[2, 8]", "[2, 8]", "[]"},
				row{fc1(l) + ".parameters.weight", "[16]", "[16]", cat(0)},
				row{fc1(l) + ".output.0", "[2, 16]", "[2, 16]", cat(1)},
				row{norm(l) + ".input.0", "[2, 8]", "[2, 8]", "[]"},
				row{norm(l) + ".output.0", "[4, 8]", "[4, 8]", cat(0)},
				row{fc2(l) + ".input.0", "[2, 8]", "[2, 8]", "[]"},
				row{fc2(l) + ".output.0", "[2, 8]", "[2, 8]", "[]"})
		}
		return rows
	}
	// Where the bench side's own entries go: the NPU side has 14 rows.
	placements := []struct {
		name  string
		at, n int
	}{
		{name: "in step"}, // every row settled as the pass goes
		{name: "bench ahead from the start", at: 0, n: 8}, // 16 rows: every row settled at the end
		{name: "bench ahead from layer 1", at: 3, n: 3},   // layer 0 as the pass goes, layer 1 but its first row at the end
	}
	for _, dir := range []struct {
		name    string
		tp      TPSizes
		npuMany bool
		side    string // the side its combined rows name
		errSide string // the side a shard's errors name
	}{{"NPU TP 2", TPSizes{2, 1}, true, "NPU", "target"}, {"bench TP 2", TPSizes{1, 2}, false, "bench", "bench"}} {
		// run writes the two step folders, the bench side's ranks with n
		// entries of their own before entry at and rank 1's entries broken
		// ones, and compares them into out. shardErr is the error of the
		// first broken entry.
		run := func(t *testing.T, fuzzy bool, at, n int, broken ...string) (rep *Report, out, shardErr string, err error) {
			t.Helper()
			root := t.TempDir()
			sharded, single := filepath.Join(root, "tp2", "step0"), filepath.Join(root, "tp1", "step0")
			sa, sb, w := a, b, whole
			if dir.npuMany {
				w = withExtra(w, at, n)
			} else {
				sa, sb = withExtra(sa, at, n), withExtra(sb, at, n)
			}
			writeFixture(t, filepath.Join(sharded, "rank0"), sa...)
			shard := filepath.Join(writeFixture(t, filepath.Join(sharded, "rank1"), sb...), "dump.json")
			writeFixture(t, filepath.Join(single, "rank0"), w...)
			line := 0
			for _, e := range broken {
				if l := breakEntry(t, shard, e); line == 0 {
					line = l
				}
			}
			out = filepath.Join(root, "out")
			opt := Options{Target: sharded, Golden: single, TP: dir.tp, Fuzzy: fuzzy, OutDir: out,
				Stamp: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)}
			if !dir.npuMany {
				opt.Target, opt.Golden = single, sharded
			}
			rep, err = Run(opt)
			return rep, out, fmt.Sprintf("%s: %s:%d: expected ',' or '}', found '.'", dir.errSide, shard, line), err
		}
		// table is the table's rows and text.
		table := func(t *testing.T, fuzzy bool, at, n int) ([][]string, string) {
			t.Helper()
			rep, _, _, err := run(t, fuzzy, at, n)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Ranks) != 1 {
				t.Fatalf("%d tables, want 1", len(rep.Ranks))
			}
			f := rep.Ranks[0].Files[0]
			text, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			return testkit.ReadCSV(t, f), string(text)
		}
		t.Run(dir.name, func(t *testing.T) {
			t.Parallel()
			_, ref := table(t, false, 0, 0)
			for _, fuzzy := range []bool{false, true} {
				for _, pl := range placements {
					t.Run(fmt.Sprintf("fuzzy %v, %s", fuzzy, pl.name), func(t *testing.T) {
						rows, text := table(t, fuzzy, pl.at, pl.n)
						wr := want(dir.side)
						if len(rows) != len(wr)+1 {
							t.Fatalf("%d rows, want %d", len(rows)-1, len(wr))
						}
						ns, bs := col(rows, "NPU Tensor Shape"), col(rows, "Bench Tensor Shape")
						d0, d1 := col(rows, "Max diff"), col(rows, "NormRelativeErr")+1
						res, msg := col(rows, "Result"), col(rows, "Err_message")
						for i, w := range wr {
							r := rows[i+1]
							diffs := strings.Join(r[d0:d1], ",")
							if r[0] != w.name || r[1] != w.name || r[ns] != w.npuShape || r[bs] != w.benchShape ||
								diffs != "0,0,0,0,0,0,0,0" || r[res] != "pass" || r[msg] != w.msg {
								t.Errorf("row %d: %s -> %s, %s vs %s, diffs %s, %s %s\nwant the same name, %s vs %s, diffs 0, pass %s",
									i+1, r[0], r[1], r[ns], r[bs], diffs, r[res], r[msg], w.npuShape, w.benchShape, w.msg)
							}
						}
						if d := testkit.DiffLines(ref, text, 4); d != "" {
							t.Errorf("the table differs from the one joined by name:\n%s", d)
						}
					})
				}
			}
			// -fm, every row settled at the end: a shard's broken entry
			// fails the compare, whether those rows look it up or none does.
			for _, c := range []struct {
				name   string
				broken string
			}{
				{"a broken entry the last rows look up", fc1(layers - 1)},
				{"a broken entry no row looks up", fc2(layers - 1)},
			} {
				t.Run("fuzzy, "+c.name, func(t *testing.T) {
					_, out, want, err := run(t, true, placements[1].at, placements[1].n, c.broken)
					var se *source.Error
					if !errors.As(err, &se) || err.Error() != want {
						t.Fatalf("%v\nwant the input error %s", err, want)
					}
					if got := names(t, out); len(got) != 0 {
						t.Fatalf("left in the output folder: %v", got)
					}
				})
			}
		})
	}
}
