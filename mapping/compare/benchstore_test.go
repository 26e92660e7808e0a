package compare

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/layermap/layermap/mapping/dump"
	"github.com/layermap/layermap/mapping/dump/dumpgen"
)

// genEntries generates a small dump with dumpgen and reads it back.
func genEntries(t *testing.T, o dumpgen.Options) []dump.Entry {
	t.Helper()
	var buf bytes.Buffer
	if _, err := dumpgen.Write(&buf, o); err != nil {
		t.Fatal(err)
	}
	var es []dump.Entry
	if _, err := dump.Scan(&buf, "gen.json", func(e *dump.Entry) error {
		es = append(es, *e)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return es
}

// oddBench reorders and damages a bench side the ways the packed store
// must survive: entries shuffled within a distance and some far away,
// duplicated entries (duplicate keys), rows whose name does not start
// with their entry, string and odd integer statistics, md5s, data names,
// requires_grad values, NONE items.
func oddBench(es []dump.Entry, seed uint64) []dump.Entry {
	rng := rand.New(rand.NewPCG(seed, 1))
	out := make([]dump.Entry, 0, len(es)+len(es)/10)
	for i := range es {
		e := es[i]
		e.Items = append([]dump.Item(nil), e.Items...)
		for j := range e.Items {
			it := &e.Items[j]
			switch rng.IntN(12) {
			case 0:
				it.Name = "odd." + it.Name
			case 1:
				it.Stats[0] = dump.Value{Kind: dump.String, Text: "True"}
			case 2:
				it.Stats[1] = dump.Value{Kind: dump.Number, Num: 0, Text: "-0"}
			case 3:
				it.Stats[2] = dump.Value{Kind: dump.Number, Num: 12345678901234567890, Text: "12345678901234567890"}
			case 4:
				it.Stats[3] = dump.Value{Kind: dump.Number, Num: 5, Text: "+5"}
			case 5:
				it.Stats[0] = dump.Value{Kind: dump.Number, Num: -42, Text: "-42"}
			case 6:
				it.RequiresGrad = [...]string{"", "True", "False"}[rng.IntN(3)]
			case 7:
				it.NoneItem, it.Dtype, it.Shape = true, "", ""
			case 8:
				it.Stats[1] = dump.Value{Kind: dump.Bool, Bool: true}
			}
			it.MD5 = strings.Repeat("ab", 4)
			if rng.IntN(3) == 0 {
				it.DataName = it.Name + ".pt"
			}
		}
		out = append(out, e)
		if rng.IntN(15) == 0 {
			out = append(out, e) // duplicate keys
		}
	}
	for i := range out { // near shuffle
		if j := i + rng.IntN(8); j < len(out) {
			out[i], out[j] = out[j], out[i]
		}
	}
	for k := 0; k < len(out)/20; k++ { // far moves
		i, j := rng.IntN(len(out)), rng.IntN(len(out))
		out[i], out[j] = out[j], out[i]
	}
	return out
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

func (nameMetrics) Metrics(npu, bench *dump.Item) [6]Metric {
	var m [6]Metric
	m[0] = Metric{Value: float64(len(npu.DataName)), IsNum: true}
	if bench != nil {
		m[1] = Metric{Value: float64(len(bench.DataName)), IsNum: true}
		m[2] = Metric{Text: bench.DataName}
	}
	return m
}

// TestComparePackedEqualsPlain: the table and the summary are the same
// with the packed bench store and with the plain one, on generated dumps
// in every mode, with fuzzy match and data mapping, with the bench side in
// file order and shuffled with duplicated keys.
func TestComparePackedEqualsPlain(t *testing.T) {
	npu := genEntries(t, dumpgen.Options{Seed: 5, Layers: 2, Hidden: 64})
	bench := genEntries(t, dumpgen.Options{Seed: 5, Layers: 2, Hidden: 64, Perturb: 0.02, Diverge: 0.5, DivergeLayer: 1})
	odd := oddBench(bench, 11)
	dm := map[string]string{}
	for i, e := range npu {
		if i%7 == 0 && len(e.Items) > 0 && i+1 < len(bench) && len(bench[i+1].Items) > 0 {
			dm[e.Items[0].Name] = bench[i+1].Items[0].Name
		}
	}
	cases := []struct {
		name  string
		bench []dump.Entry
		cfg   Config
	}{
		{"statistics", bench, Config{Mode: Statistics}},
		{"statistics odd", odd, Config{Mode: Statistics}},
		{"md5 odd", odd, Config{Mode: MD5}},
		{"tensor odd", odd, Config{Mode: Tensor, Tensor: nameMetrics{}}},
		{"fuzzy", bench, Config{Mode: Statistics, Fuzzy: true}},
		{"fuzzy odd", odd, Config{Mode: Statistics, Fuzzy: true}},
		{"data mapping odd", odd, Config{Mode: Statistics, DataMapping: dm}},
		{"one worker odd", odd, Config{Mode: Statistics, Workers: 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			run := func(simple bool) (*Summary, *markSink) {
				cfg := c.cfg
				cfg.simpleBench = simple
				var s markSink
				sum, err := Compare(memSource(npu...), memSource(c.bench...), cfg, &s)
				if err != nil {
					t.Fatal(err)
				}
				return sum, &s
			}
			ps, pt := run(false)
			ss, st := run(true)
			if len(st.rows) == 0 || ss.Rows == ss.NPUUnmatched && !c.cfg.Fuzzy {
				t.Fatalf("degenerate case: %d rows, %+v", len(st.rows), ss)
			}
			if !reflect.DeepEqual(ps, ss) {
				t.Errorf("summary: packed %+v\nplain %+v", ps, ss)
			}
			if !reflect.DeepEqual(pt.header, st.header) || len(pt.rows) != len(st.rows) {
				t.Fatalf("table: %d rows packed, %d plain", len(pt.rows), len(st.rows))
			}
			for i := range st.rows {
				if !reflect.DeepEqual(pt.rows[i], st.rows[i]) || pt.marks[i] != st.marks[i] {
					t.Fatalf("row %d:\npacked %q %v\n plain %q %v", i, pt.rows[i], pt.marks[i], st.rows[i], st.marks[i])
				}
			}
		})
	}
}
