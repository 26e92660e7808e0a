package compare

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/layermap/layermap/printparse/msprobe"
	"github.com/layermap/layermap/printparse/msprobe/dumpgen"
)

// refFuzzy is msprobe's fuzzy match as its source words it
// (Match.process_fuzzy_match, match_op): two queues of row numbers,
// rescanned at every step. It returns, in table order, each NPU row's
// bench row (-1: unmatched, or dropped by the dtype gate) and the bench
// rows matched.
func refFuzzy(npu, bench []sideRow, cfg *Config) (out [][2]int, matched int) {
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
		if dtypeMatch(npu[n].it.Dtype, bench[b].it.Dtype, cfg.CrossFramework) {
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
// index dropped), with a dtype of two.
func fuzzyRows(rng *rand.Rand, n, names int) []sideRow {
	rows := make([]sideRow, n)
	dtypes := []string{"torch.float32", "torch.int64"}
	for i := range rows {
		k := rng.IntN(names)
		rows[i].key = fmt.Sprintf("Functional.op%d.%d.forward.output.%d", k%5, rng.IntN(9), k/5)
		if k == 0 {
			rows[i].key = "no_direction" // renameAPI leaves it
		}
		rows[i].it.Dtype = dtypes[rng.IntN(8)/7]
		rows[i].num = int32(i)
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
	for trial := range 400 {
		nn, nb, names := rng.IntN(60), rng.IntN(60), 1+rng.IntN(30)
		npu := fuzzyRows(rng, nn, names)
		bench := fuzzyRows(rng, nb, names)
		cfg := &Config{Mode: Statistics}
		want, wantMatched := refFuzzy(npu, bench, cfg)

		src := &sliceRows{rows: slices.Clone(bench), t: t}
		m := newFuzzyMatcher(src, cfg)
		var got [][2]int
		emit := func(n, b *sideRow, s MatchSource) error {
			bi := -1
			if b != nil {
				if s != ByFuzzy || b.key == "released" {
					t.Fatalf("trial %d: bench row %q emitted as %v", trial, b.key, s)
				}
				bi = int(b.num)
			}
			got = append(got, [2]int{int(n.num), bi})
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
			if src.released != m.b.base {
				t.Fatalf("trial %d: %d bench rows released, the queue starts at %d", trial, src.released, m.b.base)
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
			first := 0
			for i, h := range s.held {
				if h.end <= released || i > 0 && h.end <= s.held[i-1].end || h.end > len(got) && i < len(s.held)-1 {
					t.Fatalf("%d given, %d released: held %v", len(got), released, s.held)
				}
				if i == 0 {
					first = h.end - len(h.buf.rows)
				}
			}
			if len(s.held) == 0 && released < len(got) || len(s.held) > 0 && first > released {
				t.Fatalf("%d given, %d released: the first held entry starts at row %d", len(got), released, first)
			}
		}
		rest, gotMD5, err := s.rest()
		if err != nil || rest != len(want)-stop || gotMD5 != md5 {
			t.Errorf("md5 %v: rest %d, md5 %v, %v; want %d", md5, rest, gotMD5, err, len(want)-stop)
		}
	}
}

// TestFuzzyStreamStops: a fuzzy compare whose writer fails midway, or
// whose bench side fails, returns that error and leaves no goroutine of
// the bench stream behind.
func TestFuzzyStreamStops(t *testing.T) {
	npu := genEntries(t, dumpgen.Options{Seed: 5, Layers: 4, Hidden: 64})
	bad := func(yield func(*msprobe.Entry) error) error {
		for i := range npu[:len(npu)/2] {
			e := npu[i]
			if err := yield(&e); err != nil {
				return err
			}
		}
		return errors.New("bench.json:7: expected value, found end of file")
	}
	before := runtime.NumGoroutine()
	for _, n := range []int{0, 10, 200} {
		_, err := Compare(memSource(npu...), memSource(npu...), Config{Mode: Statistics, Fuzzy: true}, &failingSink{n: n})
		if !errors.Is(err, errSinkFull) {
			t.Errorf("writer failing on row %d: error %v, want %v", n, err, errSinkFull)
		}
	}
	if _, err := Compare(memSource(npu...), Source(bad), Config{Mode: Statistics, Fuzzy: true}, &memSink{}); err == nil || err.Error() != "bench: bench.json:7: expected value, found end of file" {
		t.Errorf("bench failing: error %v", err)
	}
	for range 100 {
		if runtime.NumGoroutine() <= before {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Errorf("%d goroutines after the compares, %d before", runtime.NumGoroutine(), before)
}
