package compare

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/layermap/layermap/printparse/msprobe"
	"github.com/layermap/layermap/printparse/msprobe/dumpgen"
	"github.com/layermap/layermap/printparse/testkit"
)

// refFuzzy is msprobe's fuzzy match as its source words it
// (Match.process_fuzzy_match, match_op): two queues of row numbers,
// rescanned at every step. It returns, in table order, each NPU row's
// bench row (-1: unmatched, or dropped by the dtype gate) and the bench
// rows matched.
func refFuzzy(npu, bench []sideRow, cross bool) (out [][2]int, matched int) {
	same := func(n, b int) bool { return renameAPI(npu[n].key) == renameAPI(bench[b].key) }
	var nq, bq []int
	for i := range max(len(npu), len(bench)) {
		if i < len(npu) {
			nq = append(nq, i)
		}
		if i < len(bench) {
			bq = append(bq, i)
		}
		if (len(nq) > 0) != (len(bq) > 0) {
			break
		}
		np, bp := -1, -1
		for k, b := range bq[:len(bq)-1] {
			if same(nq[len(nq)-1], b) {
				np, bp = len(nq)-1, k
				break
			}
		}
		if np < 0 && same(nq[len(nq)-1], bq[len(bq)-1]) {
			np, bp = len(nq)-1, len(bq)-1
		}
		for k, n := range nq[:len(nq)-1] {
			if np < 0 && same(n, bq[len(bq)-1]) {
				np, bp = k, len(bq)-1
			}
		}
		if np < 0 {
			continue
		}
		for _, n := range nq[:np] {
			out = append(out, [2]int{n, -1})
		}
		n, b := nq[np], bq[bp]
		if dtypeMatch(npu[n].it.Dtype, bench[b].it.Dtype, cross) {
			out = append(out, [2]int{n, b})
			matched++
		} else {
			out = append(out, [2]int{n, -1})
		}
		nq, bq = nq[np+1:], bq[bp+1:]
	}
	for _, n := range nq {
		out = append(out, [2]int{n, -1})
	}
	return out, matched
}

// sliceRows serves rows for the fuzzy match and spoils each one it
// releases, so that a released row read again shows in the result.
type sliceRows struct {
	rows     []sideRow
	given    int
	released int
	t        *testing.T
}

func (s *sliceRows) next() (*sideRow, error) {
	if s.given == len(s.rows) {
		return nil, nil
	}
	s.given++
	return &s.rows[s.given-1], nil
}

func (s *sliceRows) release(n int) {
	if n < s.released || n > s.given {
		s.t.Fatalf("release(%d) after %d released, %d given", n, s.released, s.given)
	}
	for ; s.released < n; s.released++ {
		s.rows[s.released].key, s.rows[s.released].it.Dtype = "released", "released"
	}
}

func (s *sliceRows) rest() (int, bool, error) { return len(s.rows) - s.given, false, nil }

// fuzzyRows makes n rows whose keys renameAPI maps onto few names (a call
// index dropped), each pad long, with a dtype of two (dtypes' names).
func fuzzyRows(rng *rand.Rand, n, names int, pad string, dtypes [2]string) []sideRow {
	rows := make([]sideRow, n)
	for i := range rows {
		k := rng.IntN(names)
		rows[i].key = fmt.Sprintf("Functional.op%d%s.%d.forward.output.%d", k%5, pad, i, k/5)
		if k == 0 {
			rows[i].key = "no_direction" + pad // renameAPI leaves it
		}
		rows[i].it.Name = rows[i].key
		rows[i].it.Dtype = dtypes[rng.IntN(8)/7]
		rows[i].it.Shape = strconv.Itoa(i) // the row's number, which packing keeps
	}
	return rows
}

// TestFuzzyMatchReference: the fuzzy match pairs rows as msprobe's own
// rescanning queues do, whichever side is longer, and keeps no more than
// its queues: the positions it indexes are exactly the queued rows', and
// every bench row before the bench queue's head has been released.
func TestFuzzyMatchReference(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 13))
	torch, ms := [2]string{"torch.float32", "torch.int64"}, [2]string{"Float32", "Int64"}
	for trial := range 600 {
		nn, nb, names := rng.IntN(60), rng.IntN(60), 1+rng.IntN(30)
		cfg := &Config{Mode: Statistics, fuzzyPack: -1}
		if trial%3 == 0 { // the bench queue's older rows packed
			cfg.fuzzyPack = 1 + rng.IntN(6)
		}
		pad, npuDtypes := "", torch
		switch trial % 4 {
		case 1: // long names: their blocks fill while rows are queued
			pad = "." + strings.Repeat("x", 3000)
		case 3: // MindSpore against PyTorch: dtypes compared by kind
			npuDtypes, cfg.CrossFramework = ms, true
		}
		npu := fuzzyRows(rng, nn, names, pad, npuDtypes)
		bench := fuzzyRows(rng, nb, names, pad, torch)
		want, wantMatched := refFuzzy(npu, bench, cfg.CrossFramework)

		src := &sliceRows{rows: slices.Clone(bench), t: t}
		m := newFuzzyMatcher(src, cfg)
		if cfg.fuzzyPack > 0 && trial%2 == 0 {
			m.genRows = 1 + rng.IntN(4) // many generations, let go as the queue moves
		}
		var got [][2]int
		num := func(r *sideRow) int {
			i, err := strconv.Atoi(r.it.Shape)
			if err != nil {
				t.Fatalf("trial %d: row %q numbered %q", trial, r.key, r.it.Shape)
			}
			return i
		}
		emit := func(n, b *sideRow, s MatchSource) error {
			bi := -1
			if b != nil {
				if s != ByFuzzy || b.key == "released" {
					t.Fatalf("trial %d: bench row %q emitted as %v", trial, b.key, s)
				}
				bi = num(b)
			}
			got = append(got, [2]int{num(n), bi})
			return nil
		}
		check := func() {
			for _, q := range []*fuzzyQueue{&m.npu, &m.b} {
				keys, next := q.keys[q.head:], q.next[q.head:]
				n := 0
				for k, r := range q.at {
					if r.key != k {
						t.Fatalf("trial %d: name %q holds %q", trial, k, r.key)
					}
					p, last := r.first, -1
					for ; p >= 0; p = next[p-q.base] {
						if p < q.base || p >= q.base+len(keys) || keys[p-q.base] != k || p <= last {
							t.Fatalf("trial %d: name %q at %d after %d, queue [%d, %d)", trial, k, p, last, q.base, q.base+len(keys))
						}
						last = p
						n++
					}
					if last != r.last {
						t.Fatalf("trial %d: name %q ends at %d, its last is %d", trial, k, last, r.last)
					}
				}
				if n != len(keys) || q.len() != len(keys) || len(next) != len(keys) {
					t.Fatalf("trial %d: %d positions listed, %d queued", trial, n, len(keys))
				}
				if q.head > q.len() {
					t.Fatalf("trial %d: %d rows dropped before %d queued", trial, q.head, q.len())
				}
				for _, r := range q.rows[:q.head] {
					if r != nil {
						t.Fatalf("trial %d: a dropped row is still held", trial)
					}
				}
			}
			if want := max(m.b.base, m.packedEnd); src.released != want {
				t.Fatalf("trial %d: %d bench rows released, the queue starts at %d, %d are packed", trial, src.released, m.b.base, m.packedEnd)
			}
			if m.packAfter > 0 && m.b.base+m.b.len()-max(m.packedEnd, m.b.base) > m.packAfter {
				t.Fatalf("trial %d: %d bench rows queued unpacked, more than %d", trial, m.b.base+m.b.len()-max(m.packedEnd, m.b.base), m.packAfter)
			}
			for i := range m.b.len() {
				if r := m.b.row(i); (r == nil) != (m.b.base+i < m.packedEnd) {
					t.Fatalf("trial %d: bench row %d held %v, %d packed", trial, m.b.base+i, r != nil, m.packedEnd)
				}
			}
		}
		for i := range npu {
			if err := m.push(&npu[i], emit); err != nil {
				t.Fatal(err)
			}
			check()
		}
		var sum Summary
		if err := m.finish(emit, &sum); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("trial %d (%d NPU, %d bench rows):\ngot  %v\nwant %v", trial, nn, nb, got, want)
		}
		if sum.BenchRows != nb || sum.BenchUnmatched != nb-wantMatched {
			t.Errorf("trial %d: bench rows %d, unmatched %d; want %d, %d", trial, sum.BenchRows, sum.BenchUnmatched, nb, nb-wantMatched)
		}
		if src.released != src.given {
			t.Errorf("trial %d: %d of the %d bench rows queued released at the end", trial, src.released, src.given)
		}
	}
}

// TestBenchStream: the streamed bench side gives the rows forEachRow
// gives, in order, keeps the entries of the rows not released (and no
// other), and counts the rest and the md5s.
func TestBenchStream(t *testing.T) {
	t.Parallel()
	es := genEntries(t, dumpgen.Options{Seed: 3, Layers: 3, Hidden: 64})
	es = append(es, msprobe.Entry{Name: "Tensor.odd"}) // no compare key: no rows
	var want []sideRow
	cfg := &Config{Mode: Statistics}
	if err := forEachRow(memSource(es...), cfg, false, nil, nil, func(_ *msprobe.Entry, rows []sideRow) error {
		want = append(want, rows...)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(want) < 100 {
		t.Fatalf("%d rows", len(want))
	}
	for _, md5 := range []bool{false, true} {
		src := slices.Clone(es)
		src[len(src)/2].HasMD5 = md5
		s := newBenchStream(memSource(src...), cfg)
		rng := rand.New(rand.NewPCG(1, 2))
		var got []*sideRow
		released := 0
		stop := len(want) * 2 / 3
		for len(got) < stop {
			r, err := s.next()
			if err != nil || r == nil {
				t.Fatalf("row %d: %v, %v", len(got), r, err)
			}
			got = append(got, r)
			if rng.IntN(4) == 0 {
				released += rng.IntN(len(got) - released + 1)
				s.release(released)
			}
			for i := released; i < len(got); i++ {
				if got[i].key != want[i].key || got[i].it.Name != want[i].it.Name || got[i].it.Stats != want[i].it.Stats {
					t.Fatalf("row %d, %d released: %q, want %q", i, released, got[i].key, want[i].key)
				}
			}
			// the entries held: those of the rows given and not released
			first, held := 0, s.held[s.heldAt:]
			for i, h := range held {
				if h.end <= released || i > 0 && h.end <= held[i-1].end || h.end > len(got) && i < len(held)-1 {
					t.Fatalf("%d given, %d released: held %v", len(got), released, held)
				}
				if i == 0 {
					first = h.end - len(h.buf.rows)
				}
			}
			if s.heldAt > len(held) {
				t.Fatalf("%d entries recycled before the %d held", s.heldAt, len(held))
			}
			if len(held) == 0 && released < len(got) || len(held) > 0 && first > released {
				t.Fatalf("%d given, %d released: the first held entry starts at row %d", len(got), released, first)
			}
		}
		rest, gotMD5, err := s.rest()
		if err != nil || rest != len(want)-stop || gotMD5 != md5 {
			t.Errorf("md5 %v: rest %d, md5 %v, %v; want %d", md5, rest, gotMD5, err, len(want)-stop)
		}
		if held := len(s.held) - s.heldAt; held != 0 {
			t.Errorf("md5 %v: %d entries held after the last row", md5, held)
		}
	}
}

// TestFuzzyStreamStops: a fuzzy compare whose writer fails midway, or
// whose bench side fails, returns that error and leaves no goroutine of
// the bench stream behind.
func TestFuzzyStreamStops(t *testing.T) {
	npu := genEntries(t, dumpgen.Options{Seed: 5, Layers: 4, Hidden: 64})
	bad := failingBench(npu)
	before := runtime.NumGoroutine()
	for _, n := range []int{0, 10, 200} {
		_, err := Compare(memSource(npu...), memSource(npu...), Config{Mode: Statistics, Fuzzy: true}, &failingSink{n: n})
		if !errors.Is(err, errSinkFull) {
			t.Errorf("writer failing on row %d: error %v, want %v", n, err, errSinkFull)
		}
	}
	if _, err := Compare(memSource(npu...), bad, Config{Mode: Statistics, Fuzzy: true}, &memSink{}); err == nil || err.Error() != "bench: bench.json:7: expected value, found end of file" {
		t.Errorf("bench failing: error %v", err)
	}
	testkit.NoGoroutineLeft(t, before)
}

// TestBenchStreamHeaderMD5: the bench file's md5 counts for the summary
// when only an entry msprobe skips carries it (no entry the stream gives
// has one).
func TestBenchStreamHeaderMD5(t *testing.T) {
	t.Parallel()
	leaf := `{"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2], "Max": 1.0, "Min": 0.0, "Mean": 0.5, "Norm": 1.0, "requires_grad": false%s}`
	dump := `{"task": "statistics", "level": "L1", "dump_data_dir": null, "data": {
"Tensor.weird_entry": {"input_args": [` + fmt.Sprintf(leaf, `, "md5": "0000abcd"`) + `]},
"Tensor.add.0.forward": {"input_args": [` + fmt.Sprintf(leaf, "") + `], "output": [` + fmt.Sprintf(leaf, "") + `]}}}`
	path := filepath.Join(t.TempDir(), "dump.json")
	if err := os.WriteFile(path, []byte(dump), 0o644); err != nil {
		t.Fatal(err)
	}
	s := newBenchStream(BenchFile(path), &Config{Mode: Statistics})
	rows, md5, err := s.rest()
	if err != nil || rows != 2 || !md5 {
		t.Errorf("rest: %d rows, md5 %v, %v; want 2 rows and the header's md5", rows, md5, err)
	}
}

// TestStoreKeepsCompositeText: a statistic msprobe keeps as its raw list
// comes back from the packed store with its text, so that the joins that
// read rows from the store (the fuzzy match's packed queue, the whole
// bench side) find no divergence between two equal dumps.
func TestStoreKeepsCompositeText(t *testing.T) {
	t.Parallel()
	leaf := `{"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2], "Max": 1.0, "Min": 0.0, "Mean": 0.5, "Norm": 1.0, "requires_grad": false}`
	entry := func(name string) string {
		return fmt.Sprintf(`%q: {"input_args": [%s], "output": [%s, {"type": "int", "value": [1, 2, null]}]}`, name, leaf, leaf)
	}
	scanned := func(names []string) []msprobe.Entry {
		parts := make([]string, len(names))
		for i, n := range names {
			parts[i] = entry(n)
		}
		var es []msprobe.Entry
		src := `{"task": "statistics", "level": "L1", "dump_data_dir": null, "data": {` + strings.Join(parts, ", ") + `}}`
		if _, err := msprobe.Scan(strings.NewReader(src), "dump.json", func(e *msprobe.Entry) error {
			es = append(es, *e)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return es
	}
	var npuNames, benchNames []string
	for i := range 6 {
		npuNames = append(npuNames, fmt.Sprintf("Functional.other%d.0.forward", i))
	}
	for i := range 6 {
		npuNames = append(npuNames, fmt.Sprintf("Functional.op%d.0.forward", i))
		benchNames = append(benchNames, fmt.Sprintf("Functional.op%d.0.forward", i))
	}
	npu, bench := scanned(npuNames), scanned(benchNames)
	if k := bench[0].Items[2].Stats[0].Kind; k != msprobe.Composite {
		t.Fatalf("the list statistic is %v, want Composite", k)
	}
	for _, cfg := range []Config{
		{Mode: Statistics},
		{Mode: Statistics, fullBench: true},
		{Mode: Statistics, simpleBench: true},
		{Mode: Statistics, Fuzzy: true, fuzzyPack: -1},
		{Mode: Statistics, Fuzzy: true, fuzzyPack: 2},
		{Mode: Statistics, Fuzzy: true, fullBench: true},
	} {
		sum, err := Compare(memSource(npu...), memSource(bench...), cfg, &memSink{})
		if err != nil {
			t.Fatal(err)
		}
		if sum.First != nil || len(sum.Divergences) != 0 {
			t.Errorf("fuzzy %v, pack %d, full %v, simple %v: divergences %v, first %+v; want none",
				cfg.Fuzzy, cfg.fuzzyPack, cfg.fullBench, cfg.simpleBench, len(sum.Divergences), sum.First)
		}
	}
}
