package compare

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/layermap/layermap/printparse/msprobe"
	"github.com/layermap/layermap/printparse/msprobe/dumpgen"
)

// genEntries generates a small dump with dumpgen and reads it back.
func genEntries(t *testing.T, o dumpgen.Options) []msprobe.Entry {
	t.Helper()
	var buf bytes.Buffer
	if _, err := dumpgen.Write(&buf, o); err != nil {
		t.Fatal(err)
	}
	var es []msprobe.Entry
	if _, err := msprobe.Scan(&buf, "gen.json", func(e *msprobe.Entry) error {
		es = append(es, *e)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return es
}

// reorder says how benchVariant reorders a bench side.
type reorder struct {
	near    int  // shuffle each block of near entries
	far     int  // swaps of two random entries, per 100 entries
	dup     int  // one entry in dup is repeated (duplicate keys); 0: none
	drop    int  // one entry in drop is left out (NPU rows unmatched); 0: none
	extra   int  // one entry in extra gets a bench-only twin; 0: none
	damage  bool // odd names and values (see benchVariant)
	reverse bool
}

// benchVariant reorders and damages a bench side the ways the packed
// store and the window must survive: entries shuffled within a distance
// and some far away, duplicated entries (duplicate keys), missing and
// bench-only entries, and (damage) rows whose name does not start with
// their entry, string and odd integer statistics, requires_grad values,
// NONE items; every row gets an md5 and some a data name.
func benchVariant(es []msprobe.Entry, seed uint64, o reorder) []msprobe.Entry {
	rng := rand.New(rand.NewPCG(seed, 1))
	out := make([]msprobe.Entry, 0, len(es)+len(es)/5)
	for i := range es {
		e := es[i]
		e.Items = append([]msprobe.Item(nil), e.Items...)
		for j := range e.Items {
			it := &e.Items[j]
			if o.damage {
				switch rng.IntN(12) {
				case 0:
					it.Name = "odd." + it.Name
				case 1:
					it.Stats[0] = msprobe.Value{Kind: msprobe.String, Text: "True"}
				case 2:
					it.Stats[1] = msprobe.Value{Kind: msprobe.Number, Num: 0, Text: "-0"}
				case 3:
					it.Stats[2] = msprobe.Value{Kind: msprobe.Number, Num: 12345678901234567890, Text: "12345678901234567890"}
				case 4:
					it.Stats[3] = msprobe.Value{Kind: msprobe.Number, Num: 5, Text: "+5"}
				case 5:
					it.Stats[0] = msprobe.Value{Kind: msprobe.Number, Num: -42, Text: "-42"}
				case 6:
					it.RequiresGrad = [...]string{"", "True", "False"}[rng.IntN(3)]
				case 7:
					it.NoneItem, it.Dtype, it.Shape = true, "", ""
				case 8:
					it.Stats[1] = msprobe.Value{Kind: msprobe.Bool, Bool: true}
				}
			}
			it.MD5 = strings.Repeat("ab", 4)
			if rng.IntN(3) == 0 {
				it.DataName = it.Name + ".pt"
			}
		}
		if o.drop > 0 && rng.IntN(o.drop) == 0 {
			continue
		}
		out = append(out, e)
		if o.dup > 0 && rng.IntN(o.dup) == 0 {
			out = append(out, e)
		}
		if o.extra > 0 && rng.IntN(o.extra) == 0 {
			x := e
			x.Name = "Extra." + e.Name
			x.Items = append([]msprobe.Item(nil), e.Items...)
			for j := range x.Items {
				x.Items[j].Name = "Extra." + x.Items[j].Name
				x.Items[j].Entry = x.Name
			}
			out = append(out, x)
		}
	}
	for i := 0; o.near > 1 && i < len(out); i += o.near { // shuffle blocks of near entries
		b := out[i:min(i+o.near, len(out))]
		rng.Shuffle(len(b), func(i, j int) { b[i], b[j] = b[j], b[i] })
	}
	for k := 0; k < len(out)*o.far/100; k++ {
		i, j := rng.IntN(len(out)), rng.IntN(len(out))
		out[i], out[j] = out[j], out[i]
	}
	if o.reverse {
		slices.Reverse(out)
	}
	return out
}

// oddBench is benchVariant with everything at once.
func oddBench(es []msprobe.Entry, seed uint64) []msprobe.Entry {
	return benchVariant(es, seed, reorder{near: 8, far: 5, dup: 15, drop: 20, extra: 20, damage: true})
}

// TestBenchStorePacked: every row the packed store gives back equals the
// row the plain store keeps, and every key finds the same rows.
func TestBenchStorePacked(t *testing.T) {
	es := oddBench(genEntries(t, dumpgen.Options{Seed: 3, Layers: 2, Hidden: 64, Perturb: 0.01}), 9)
	for _, mode := range []Mode{Statistics, MD5, Tensor} {
		for _, renumber := range []bool{true, false} {
			packed, err := collectBench(memSource(es...), &Config{Mode: mode}, renumber)
			if err != nil {
				t.Fatal(err)
			}
			plain, err := collectBench(memSource(es...), &Config{Mode: mode, simpleBench: true}, renumber)
			if err != nil {
				t.Fatal(err)
			}
			if packed.len() != plain.len() || packed.len() == 0 {
				t.Fatalf("%v: %d packed rows, %d plain", mode, packed.len(), plain.len())
			}
			for i := int32(0); i < int32(plain.len()); i++ {
				want, got := plain.row(i), packed.row(i)
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("%v renumber=%v row %d:\n got %+v\nwant %+v", mode, renumber, i, got, want)
				}
				if packed.dtype(i) != want.it.Dtype || packed.key(i) != want.key {
					t.Fatalf("%v row %d: dtype %q key %q", mode, i, packed.dtype(i), packed.key(i))
				}
				if g, w := packed.lookup(want.key), plain.lookup(want.key); !reflect.DeepEqual(append([]int32(nil), g...), w) {
					t.Fatalf("%v lookup %q = %v, want %v", mode, want.key, g, w)
				}
			}
			if got := packed.lookup("no such key"); len(got) != 0 {
				t.Errorf("unknown key found %v", got)
			}
		}
	}
}

type markSink struct {
	memSink
	marks []RowMark
}

func (m *markSink) Row(cells []Cell, mark RowMark) error {
	m.marks = append(m.marks, mark)
	return m.memSink.Row(cells, mark)
}

func (m *markSink) Reset() error { m.marks = nil; return m.memSink.Reset() }

// nameMetrics is a tensor comparer that derives the metrics from the data
// names, so that the test sees the data names that reach it.
type nameMetrics struct{}

func (nameMetrics) Metrics(_ int64, npu, bench, _ *msprobe.Item) ([6]Metric, error) {
	var m [6]Metric
	m[0] = Metric{Value: float64(len(npu.DataName)), IsNum: true}
	if bench != nil {
		m[1] = Metric{Value: float64(len(bench.DataName)), IsNum: true}
		m[2] = Metric{Text: bench.DataName}
	}
	return m, nil
}

// TestComparePackedEqualsPlain: the table and the summary are the same
// with the plain bench store (all rows in a map), the packed store and
// the bench index, on generated dumps in every mode, with fuzzy match
// and data mapping, with the bench side in file order, in near order with
// missing and bench-only entries, reversed, shuffled far, with duplicated
// keys and with odd rows.
func TestComparePackedEqualsPlain(t *testing.T) {
	npu := genEntries(t, dumpgen.Options{Seed: 5, Layers: 8, Hidden: 64})
	bench := genEntries(t, dumpgen.Options{Seed: 5, Layers: 8, Hidden: 64, Perturb: 0.02, Diverge: 0.5, DivergeLayer: 3})
	odd := oddBench(bench, 11)
	dm := map[string]string{}
	for i, e := range npu {
		if i%7 == 0 && len(e.Items) > 0 && i+1 < len(bench) && len(bench[i+1].Items) > 0 {
			dm[e.Items[0].Name] = bench[i+1].Items[0].Name
		}
	}
	near := benchVariant(bench, 12, reorder{near: 6, drop: 25, extra: 25})
	const no, yes = 0, 1
	cases := []struct {
		name   string
		bench  []msprobe.Entry
		cfg    Config
		stream int // the bench side read as a stream (fuzzy match)
	}{
		{"statistics", bench, Config{Mode: Statistics}, no},
		{"statistics small cache", bench, Config{Mode: Statistics, cache: 3}, no},
		{"near order small cache", near, Config{Mode: Statistics, cache: 4}, no},
		{"near order md5", near, Config{Mode: MD5}, no},
		{"near order tensor", near, Config{Mode: Tensor, Tensor: nameMetrics{}}, no},
		{"near order data mapping", near, Config{Mode: Statistics, DataMapping: DataMappingOf(dm), cache: 4}, no},
		{"one worker near", near, Config{Mode: Statistics, Workers: 1}, no},
		{"reversed", benchVariant(bench, 13, reorder{reverse: true}), Config{Mode: Statistics, cache: 8}, no},
		{"far moves", benchVariant(bench, 15, reorder{far: 5}), Config{Mode: Statistics, cache: 8}, no},
		{"duplicates", benchVariant(bench, 14, reorder{dup: 10}), Config{Mode: Statistics, cache: 2}, no},
		{"statistics odd", odd, Config{Mode: Statistics}, no},
		{"statistics odd small cache", odd, Config{Mode: Statistics, cache: 2}, no},
		{"md5 odd", odd, Config{Mode: MD5}, no},
		{"tensor odd", odd, Config{Mode: Tensor, Tensor: nameMetrics{}}, no},
		{"fuzzy", bench, Config{Mode: Statistics, Fuzzy: true}, yes},
		{"fuzzy odd", odd, Config{Mode: Statistics, Fuzzy: true}, yes},
		{"fuzzy near md5", near, Config{Mode: MD5, Fuzzy: true}, yes},
		{"fuzzy tensor odd", odd, Config{Mode: Tensor, Tensor: nameMetrics{}, Fuzzy: true}, yes},
		// a data mapping joins first: -fm only leaves the backward calls unrenumbered
		{"data mapping near, -fm", near, Config{Mode: Statistics, DataMapping: DataMappingOf(dm), Fuzzy: true}, no},
		{"fuzzy bench shorter", bench[:len(bench)/2], Config{Mode: Statistics, Fuzzy: true}, yes},
		{"fuzzy bench longer", benchVariant(bench, 14, reorder{dup: 3}), Config{Mode: Statistics, Fuzzy: true}, yes},
		// the bench queue's older rows packed
		{"fuzzy packed odd", odd, Config{Mode: Statistics, Fuzzy: true, fuzzyPack: 3}, yes},
		{"fuzzy packed near md5", near, Config{Mode: MD5, Fuzzy: true, fuzzyPack: 2}, yes},
		{"fuzzy packed tensor odd", odd, Config{Mode: Tensor, Tensor: nameMetrics{}, Fuzzy: true, fuzzyPack: 5}, yes},
		{"fuzzy packed far", benchVariant(bench, 15, reorder{far: 5, drop: 7}), Config{Mode: Statistics, Fuzzy: true, fuzzyPack: 4}, yes},
		{"data mapping odd", odd, Config{Mode: Statistics, DataMapping: DataMappingOf(dm)}, no},
		{"data mapping odd small cache", odd, Config{Mode: Statistics, DataMapping: DataMappingOf(dm), cache: 1}, no},
		{"one worker odd", odd, Config{Mode: Statistics, Workers: 1}, no},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			run := func(cfg Config) (*Summary, *markSink, joinTrace) {
				var tr joinTrace
				cfg.trace = &tr
				var s markSink
				sum, err := Compare(memSource(npu...), memSource(c.bench...), cfg, &s)
				if err != nil {
					t.Fatal(err)
				}
				return sum, &s, tr
			}
			plain := c.cfg
			plain.simpleBench = true
			ss, st, _ := run(plain)
			if len(st.rows) == 0 || ss.Rows == ss.NPUUnmatched && !c.cfg.fuzzyJoin() {
				t.Fatalf("degenerate case: %d rows, %+v", len(st.rows), ss)
			}
			full := c.cfg
			full.fullBench = true
			for _, v := range []struct {
				name string
				cfg  Config
			}{{"packed", full}, {"indexed", c.cfg}} {
				ps, pt, tr := run(v.cfg)
				if !reflect.DeepEqual(ps, ss) {
					t.Errorf("%s summary: %+v\nplain %+v", v.name, ps, ss)
				}
				if !reflect.DeepEqual(pt.header, st.header) || len(pt.rows) != len(st.rows) {
					t.Fatalf("%s table: %d rows, plain %d", v.name, len(pt.rows), len(st.rows))
				}
				for i := range st.rows {
					if !reflect.DeepEqual(pt.rows[i], st.rows[i]) || pt.marks[i] != st.marks[i] {
						t.Fatalf("%s row %d:\n%q %v\nplain %q %v", v.name, i, pt.rows[i], pt.marks[i], st.rows[i], st.marks[i])
					}
				}
				if v.name == "indexed" && ((tr.streamedPasses > 0) != (c.stream == yes) || tr.fullPasses > 0 || tr.streamedPasses > 0 && tr.indexedPasses > 0) {
					t.Errorf("%s run: %+v, want a streamed pass: %v", v.name, tr, c.stream == yes)
				}
			}
		})
	}
}

// TestOpCounts: the pointer-free op counter counts like a map, through
// table growth.
func TestOpCounts(t *testing.T) {
	var c opCounts
	want := map[string]int{}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 20000; i++ {
		name := "Module.layers." + strconv.Itoa(rng.IntN(3000)) + ".mlp"
		if i%7 == 0 {
			name = ""
		}
		if got := c.next(name); got != want[name] {
			t.Fatalf("call %d: next(%q) = %d, want %d", i, name, got, want[name])
		}
		want[name]++
	}
}

// failingBench serves the first half of es, then fails as a bench file
// cut short does.
func failingBench(es []msprobe.Entry) Source {
	return func(yield func(*msprobe.Entry) error) error {
		for i := range es[:len(es)/2] {
			e := es[i]
			if err := yield(&e); err != nil {
				return err
			}
		}
		return errors.New("bench.json:7: expected value, found end of file")
	}
}

// TestCompareBenchError: a bench side that fails stops Compare with its
// error in every join (it once hung the whole-bench join).
func TestCompareBenchError(t *testing.T) {
	npu := genEntries(t, dumpgen.Options{Seed: 5, Layers: 2, Hidden: 64})
	bad := failingBench(npu)
	for _, cfg := range []Config{{Mode: Statistics}, {Mode: Statistics, fullBench: true}, {Mode: Statistics, Fuzzy: true},
		{Mode: Statistics}} {
		done := make(chan error, 1)
		go func() {
			_, err := Compare(memSource(npu...), bad, cfg, &memSink{})
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "bench: bench.json:7: expected value") {
				t.Errorf("%+v: error %v", cfg, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%+v: Compare hangs on a bench error", cfg)
		}
	}
}
