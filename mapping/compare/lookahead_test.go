package compare

import (
	"errors"
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/layermap/layermap/printparse/msprobe"
	"github.com/layermap/layermap/printparse/testkit"
)

// countingBench is a bench dump.json whose readers count, per entry, the
// reads that build it and those that only count its rows.
type countingBench struct {
	path        string
	mu          sync.Mutex
	reads, rows map[int]int
}

type countingSource struct {
	benchSource
	c *countingBench
}

func (c *countingBench) openBench(cfg *Config) (benchSource, error) {
	src, err := BenchFile(c.path).openBench(cfg)
	return &countingSource{src, c}, err
}

func (s *countingSource) read(i int, fn func(*msprobe.Entry) error) error {
	s.c.mu.Lock()
	s.c.reads[i]++
	s.c.mu.Unlock()
	return s.benchSource.read(i, fn)
}

func (s *countingSource) rows(i int) (int, error) {
	s.c.mu.Lock()
	s.c.rows[i]++
	s.c.mu.Unlock()
	return s.benchSource.rows(i)
}

func (s *countingSource) fork() (benchSource, error) {
	f, err := s.benchSource.fork()
	if err != nil {
		return nil, err
	}
	return &countingSource{f, s.c}, nil
}

// TestLookaheadReadsOnce: the table's join has every bench entry a row
// asks for parsed once, whatever the order the rows ask in, and the rows
// of the others counted, not built; the table is the plain join's.
func TestLookaheadReadsOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// 3000 bench entries; the NPU side asks for two in three of them in
	// a shuffled order (far from file order: a prefetcher reading ahead
	// in file order has to drop most of them before they are asked for)
	// and has entries of its own.
	const n = 3000
	bench := benchAdds(n)
	var npu, keys []string // keys: what the NPU rows may look up
	for i := range n {
		if i%3 != 0 {
			npu = append(npu, fmt.Sprintf(`"Tensor.add.%d.forward": {"output": [%s]}`, i, testkit.Tensor(fmt.Sprintf("Tensor.add.%d.forward.output.0.pt", i))))
			keys = append(keys, fmt.Sprintf("Tensor.add.%d.forward.output.0", i))
		}
		if i%7 == 0 {
			npu = append(npu, fmt.Sprintf(`"Tensor.npu_only.%d.forward": {"output": [%s]}`, i, testkit.Tensor(fmt.Sprintf("Tensor.npu_only.%d.forward.output.0.pt", i))))
			keys = append(keys, fmt.Sprintf("Tensor.npu_only.%d.forward.output.0", i))
		}
	}
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(npu), func(i, j int) { npu[i], npu[j] = npu[j], npu[i] })
	// A data mapping (-dm) sends each of those NPU rows to another bench
	// entry's input row: the lookahead has to look up the mapped keys.
	dm := map[string]string{}
	mapped := map[int]bool{}
	for i := range n {
		if i%3 != 0 {
			m := (7*i + 1) % n
			dm[fmt.Sprintf("Tensor.add.%d.forward.output.0", i)] = fmt.Sprintf("Tensor.add.%d.forward.input.0", m)
			keys = append(keys, fmt.Sprintf("Tensor.add.%d.forward.input.0", m))
			mapped[m] = true
		}
	}
	shuffled := [2]string{testkit.DumpDir(t, dir, "npu", strings.Join(npu, ", ")), testkit.DumpDir(t, dir, "bench", strings.Join(bench, ", "))}
	qw := testkit.Corpus(t, "msprobe/golden/qwen25vl_llamafactory_vs_mindspeed_reverse_template")
	for _, p := range []struct {
		name       string
		npu, bench string
		dm         map[string]string
		asked      func(i int) bool // nil: not checked
	}{
		{"shuffled", shuffled[0], shuffled[1], nil, func(i int) bool { return i%3 != 0 }},
		{"shuffled, data mapping", shuffled[0], shuffled[1], dm, func(i int) bool { return mapped[i] }},
		{"qwen25vl", qw + "/npu/proc12360", qw + "/bench/proc12353", nil, nil},
	} {
		npuSrc := scanSource(filepath.Join(p.npu, "dump.json"))
		benchPath := filepath.Join(p.bench, "dump.json")
		cb := &countingBench{path: benchPath, reads: map[int]int{}, rows: map[int]int{}}
		var got, want markSink
		var tr joinTrace
		gs, err := Compare(npuSrc, cb, Config{Mode: Statistics, DataMapping: DataMappingOf(p.dm), trace: &tr}, &got)
		if err != nil {
			t.Fatal(err)
		}
		ws, err := Compare(npuSrc, BenchFile(benchPath), Config{Mode: Statistics, DataMapping: DataMappingOf(p.dm), simpleBench: true}, &want)
		if err != nil {
			t.Fatal(err)
		}
		if tr.indexedPasses == 0 || tr.fullPasses > 0 {
			t.Fatalf("%s: not the indexed join: %+v", p.name, tr)
		}
		if !reflect.DeepEqual(gs, ws) || !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: the table differs from the plain join's", p.name)
		}
		ix, err := newBenchIndex(BenchFile(benchPath), &Config{}, true)
		if err != nil {
			t.Fatal(err)
		}
		entries := ix.n
		ix.close()
		read, counted := 0, 0
		for i := range entries {
			// The index's 32-bit tags collide now and then (the parse is
			// what tells): the lookahead then reads an entry early, where
			// no row may ask for it, and the join may read it again once
			// its cache let it go.
			reads := cb.reads[i]
			collided := func() bool { // slow: asked only where a check fails
				return p.asked != nil && tagCollision(tr.seed, fmt.Sprintf("Tensor.add.%d.forward", i), keys...)
			}
			if reads == ws.Passes+1 && cb.rows[i] == 0 && collided() {
				reads = ws.Passes
			}
			if reads+cb.rows[i] != ws.Passes {
				t.Errorf("%s: bench entry %d read %d times and counted %d times, want %d in all (once a pass)", p.name, i, cb.reads[i], cb.rows[i], ws.Passes)
			}
			read += cb.reads[i]
			counted += cb.rows[i]
			if p.asked != nil && (reads == ws.Passes) != p.asked(i) && !(reads == ws.Passes && collided()) {
				t.Errorf("%s: bench entry %d read %d times; asked for: %v", p.name, i, cb.reads[i], p.asked(i))
			}
		}
		if read == 0 || counted == 0 || gs.Compared == 0 {
			t.Errorf("%s: %d bench entries, %d reads, %d row counts, %d rows compared: want some of each", p.name, entries, read, counted, gs.Compared)
		}
	}
}

// benchAdds is n bench entries Tensor.add.K.forward, each with an input
// and an output row.
func benchAdds(n int) []string {
	var bench []string
	for i := range n {
		bench = append(bench, fmt.Sprintf(`"Tensor.add.%d.forward": {"input_args": [%s], "output": [%s]}`, i,
			testkit.Tensor(fmt.Sprintf("Tensor.add.%d.forward.input.0.pt", i)), testkit.Tensor(fmt.Sprintf("Tensor.add.%d.forward.output.0.pt", i))))
	}
	return bench
}

// TestLookaheadBounded: the lookahead parses ahead at most aheadPerEntry
// bench entries for one NPU entry (half a smaller cache), however many
// its rows ask for, and the join's cache stays within its bound while it
// parses the rest itself; NPU entries that look nothing up (a fused
// join's rows) do not let the entries taken ahead pile up.
func TestLookaheadBounded(t *testing.T) {
	t.Parallel()
	const n = 3000
	dir := testkit.DumpDir(t, t.TempDir(), "bench", strings.Join(benchAdds(n), ", "))
	for _, tc := range []struct {
		name       string
		cache      int
		oneEntry   bool // one NPU entry asking for all, else one an entry
		lookups    bool // the join looks the rows up
		most, keep int  // bench entries parsed ahead an NPU entry, in the cache
	}{
		{"one entry", 0, true, true, aheadPerEntry, cacheEntries},
		{"one entry, small cache", 8, true, true, 4, 8},
		{"entries without lookups", 0, false, false, 1, cacheEntries},
		{"entries without lookups, small cache", 8, false, false, 1, 8},
	} {
		ix, err := newBenchIndex(BenchFile(filepath.Join(dir, "dump.json")), &Config{cache: tc.cache}, true)
		if err != nil {
			t.Fatal(err)
		}
		ix.reset(false)
		rows := make([]sideRow, n)
		for i := range rows {
			rows[i].key = fmt.Sprintf("Tensor.add.%d.forward.output.0", i)
		}
		in := make(chan []npuEntry, n)
		if tc.oneEntry {
			in <- []npuEntry{{name: "Module.x.forward.0", rows: rows}}
		} else {
			var batch []npuEntry // batches of 1 to 3 entries
			for i := range rows {
				batch = append(batch, npuEntry{name: fmt.Sprintf("Tensor.add.%d.forward", i), rows: rows[i : i+1]})
				if len(batch) > i%3 || i == len(rows)-1 {
					in <- batch
					batch = nil
				}
			}
		}
		close(in)
		run, most, keep := 0, 0, 0
		npuSeen := 0 // NPU entries handed on so far: an ahead entry is for the next
		for b := range ix.lookAhead(in, nil, func(n *sideRow, _ *[]byte, _ suffixHas) string { return n.key }) {
			for _, e := range b {
				if e.isAhead && !tc.oneEntry && int(e.aheadAt) != npuSeen {
					// Not the entry asked for: the index's 32-bit tags collided
					// (the parse is what tells), which the seed makes rare.
					if !tagCollision(ix.seed, fmt.Sprintf("Tensor.add.%d.forward", e.aheadAt), rows[npuSeen].key) {
						t.Errorf("%s: bench entry %d parsed ahead for NPU entry %d", tc.name, e.aheadAt, npuSeen)
					}
					ix.takeAhead(e.aheadAt, e.ahead)
					keep = max(keep, len(ix.cache))
					continue
				}
				if e.isAhead {
					run++
					most = max(most, run)
					ix.takeAhead(e.aheadAt, e.ahead)
					keep = max(keep, len(ix.cache))
					continue
				}
				run = 0
				npuSeen++
				for r := range e.rows {
					if !tc.lookups {
						break
					}
					refs, err := ix.lookup(e.rows[r].key, nil)
					if err != nil {
						t.Fatal(err)
					}
					if len(refs) != 1 || (tc.oneEntry && refs[0].entry != int32(r)) {
						t.Fatalf("%s: row %d: bench rows %v", tc.name, r, refs)
					}
					ix.match(refs[0])
					keep = max(keep, len(ix.cache))
				}
			}
		}
		if most != tc.most {
			t.Errorf("%s: at most %d bench entries parsed ahead for one NPU entry, want %d", tc.name, most, tc.most)
		}
		if keep > tc.keep {
			t.Errorf("%s: %d bench entries in the cache at once, want at most %d", tc.name, keep, tc.keep)
		}
		var sum Summary
		if err := ix.finish(&sum); err != nil {
			t.Fatal(err)
		}
		matched := n
		if !tc.lookups {
			matched = 0
		}
		if sum.BenchRows != 2*n || sum.BenchUnmatched != 2*n-matched {
			t.Errorf("%s: bench rows %d, unmatched %d; want %d, %d", tc.name, sum.BenchRows, sum.BenchUnmatched, 2*n, 2*n-matched)
		}
		ix.close()
	}
}

// failingSink fails on row n.
type failingSink struct {
	memSink
	n int
}

var errSinkFull = errors.New("sink full")

func (s *failingSink) Row(cells []Cell, mark RowMark) error {
	if s.n--; s.n < 0 {
		return errSinkFull
	}
	return s.memSink.Row(cells, mark)
}

// TestWriterFails: a table whose writer fails midway stops the NPU
// reader, the lookahead and the join, and the compare returns the
// writer's error (under -race: the writer's side and the join both stop
// the NPU reader).
func TestWriterFails(t *testing.T) {
	t.Parallel()
	qw := testkit.Corpus(t, "msprobe/golden/qwen25vl_llamafactory_vs_mindspeed_reverse_template")
	npuSrc := scanSource(qw + "/npu/proc12360/dump.json")
	for _, mode := range []Mode{Statistics, Tensor} {
		for _, n := range []int{0, 10, 200} {
			cfg := Config{Mode: mode}
			if mode == Tensor {
				cfg.Tensor = nameMetrics{}
			}
			_, err := Compare(npuSrc, BenchFile(qw+"/bench/proc12353/dump.json"), cfg, &failingSink{n: n})
			if !errors.Is(err, errSinkFull) {
				t.Errorf("%v, writer failing on row %d: error %v, want %v", mode, n, err, errSinkFull)
			}
		}
	}
}

// TestLookaheadBadBody: a bench entry whose body the skim leaves unchecked
// fails the compare with the error reading the whole bench side gives,
// whether an NPU row asks for it (the lookahead drops its error and the
// join meets it) or none does (finish meets it counting its rows).
func TestLookaheadBadBody(t *testing.T) {
	t.Parallel()
	bad := `"Tensor.add.%d.forward": {"output": [{"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2], "Max": 1.}]}`
	for _, asked := range []bool{true, false} {
		bench := benchAdds(300)
		bench[200] = fmt.Sprintf(bad, 200)
		var npu []string
		for i := range 300 {
			if i == 200 && !asked {
				continue
			}
			npu = append(npu, fmt.Sprintf(`"Tensor.add.%d.forward": {"output": [%s]}`, i, testkit.Tensor(fmt.Sprintf("Tensor.add.%d.forward.output.0.pt", i))))
		}
		dir := t.TempDir()
		np := testkit.DumpDir(t, dir, "npu", strings.Join(npu, ", "))
		bp := filepath.Join(testkit.DumpDir(t, dir, "bench", strings.Join(bench, ", ")), "dump.json")
		npuSrc := scanSource(filepath.Join(np, "dump.json"))
		var tr joinTrace
		_, got := Compare(npuSrc, BenchFile(bp), Config{Mode: Statistics, trace: &tr}, &memSink{})
		_, want := Compare(npuSrc, BenchFile(bp), Config{Mode: Statistics, simpleBench: true}, &memSink{})
		if got == nil || want == nil || got.Error() != want.Error() || tr.indexedPasses == 0 {
			t.Errorf("asked for %v: error %v, want %v (reading the whole bench side)", asked, got, want)
		}
	}
}

// FuzzIndexedJoin: whatever the two dumps' entries and orders, a data
// mapping and the cache's size, the indexed join (the lookahead, the
// cache's evictions, the join's own parses) writes the table and the
// summary the whole-bench join writes.
func FuzzIndexedJoin(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7}, []byte{7, 6, 5, 4, 3, 2, 1, 0}, uint8(0), false)
	f.Add([]byte{1, 1, 40, 41, 80, 81, 120, 200}, []byte{200, 120, 81, 80, 41, 40, 1}, uint8(1), true)
	f.Add([]byte{3, 9, 27, 81, 243}, []byte{243, 3, 243, 81, 9}, uint8(3), true)
	f.Fuzz(func(t *testing.T, bench, npu []byte, cache uint8, mapped bool) {
		if len(bench) > 200 || len(npu) > 200 {
			return
		}
		// a byte b is entry b%50 of an op (b/50: add, mul, backward add,
		// backward mul, or for b >= 200 one whose row the NPU side names
		// by another data name)
		name := func(b byte) string {
			k := min(int(b)/50, 4)
			op := [...]string{"add", "mul", "add", "mul", "sub"}[k]
			dir := [...]string{"forward", "forward", "backward", "backward", "forward"}[k]
			return fmt.Sprintf("Tensor.%s.%d.%s", op, b%50, dir)
		}
		entry := func(b byte, rows ...string) string {
			n := name(b)
			var items []string
			for _, r := range rows {
				dn := n + "." + r + ".pt"
				if b >= 200 && r == "output.0" {
					dn = "X.odd.0.forward.output.0.pt" // named otherwise: an odd entry
				}
				items = append(items, testkit.Tensor(dn))
			}
			in, out := "input_args", "output"
			if strings.HasSuffix(n, "backward") {
				in, out = "input", "output"
			}
			body := fmt.Sprintf(`%q: {%q: [%s]`, n, in, items[0])
			if len(items) > 1 {
				body += fmt.Sprintf(`, %q: [%s]`, out, items[1])
			}
			return body + "}"
		}
		var bs, ns []string
		seen := map[string]bool{}
		for _, b := range bench {
			if !seen["b"+name(b)] {
				seen["b"+name(b)] = true
				bs = append(bs, entry(b, "input.0", "output.0"))
			}
		}
		dm := map[string]string{}
		for k, b := range npu {
			if seen["n"+name(b)] {
				continue
			}
			seen["n"+name(b)] = true
			ns = append(ns, entry(b, "input.0", "output.0"))
			if mapped && k%2 == 0 && len(bench) > 0 {
				other := name(bench[k%len(bench)])
				dm[name(b)+".output.0"] = other + ".input.0"
			}
		}
		if len(bs) == 0 || len(ns) == 0 {
			return
		}
		dir := t.TempDir()
		np := filepath.Join(testkit.DumpDir(t, dir, "npu", strings.Join(ns, ", ")), "dump.json")
		bp := filepath.Join(testkit.DumpDir(t, dir, "bench", strings.Join(bs, ", ")), "dump.json")
		npuSrc := scanSource(np)
		cfg := Config{Mode: Statistics, cache: int(cache % 4)}
		if mapped {
			cfg.DataMapping = DataMappingOf(dm)
		}
		var got, want markSink
		var tr joinTrace
		indexed := cfg
		indexed.trace = &tr
		gs, gerr := Compare(npuSrc, BenchFile(bp), indexed, &got)
		plain := cfg
		plain.simpleBench = true
		ws, werr := Compare(npuSrc, BenchFile(bp), plain, &want)
		if (gerr == nil) != (werr == nil) || (gerr != nil && gerr.Error() != werr.Error()) {
			t.Fatalf("indexed join: error %v; whole-bench join: %v", gerr, werr)
		}
		if gerr != nil {
			return
		}
		if tr.indexedPasses == 0 {
			t.Fatalf("not the indexed join: %+v", tr)
		}
		if !reflect.DeepEqual(gs, ws) {
			t.Fatalf("summary %+v\nwhole-bench join's %+v", gs, ws)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("the table differs from the whole-bench join's")
		}
	})
}

// TestPrefetchOf: a prefetcher of a list of entries (the N:1 detection's
// first calls) parses those and no other, each once, and lookups in the
// list's order take them from it; entries off the list are parsed by the
// lookup, as without a prefetcher.
func TestPrefetchOf(t *testing.T) {
	t.Parallel()
	const n = 900
	path := filepath.Join(testkit.DumpDir(t, t.TempDir(), "bench", strings.Join(benchAdds(n), ", ")), "dump.json")
	cb := &countingBench{path: path, reads: map[int]int{}, rows: map[int]int{}}
	ix, err := newBenchIndex(cb, &Config{}, true)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.close()
	ix.reset(false)
	var list []int32
	for i := int32(0); i < n; i += 7 {
		list = append(list, i)
	}
	ix.prefetchOf(list)
	if ix.pf == nil {
		t.Fatal("no prefetcher")
	}
	off := map[int32]bool{5: true, 299: true, 894: true} // asked for, not on the list
	for _, i := range list {
		for _, want := range []int32{i, i + 5} {
			if want >= n || want != i && !off[want] {
				continue
			}
			e, err := ix.entry(want)
			if err != nil {
				t.Fatal(err)
			}
			if name := fmt.Sprintf("Tensor.add.%d.forward", want); e == nil || e.name != name {
				t.Fatalf("entry %d: %v, want %s", want, e, name)
			}
		}
	}
	ix.stopPrefetch()
	cb.mu.Lock()
	defer cb.mu.Unlock()
	for i := range n {
		want := 0
		if i%7 == 0 || off[int32(i)] {
			want = 1
		}
		if cb.reads[i] != want {
			t.Errorf("entry %d parsed %d times, want %d", i, cb.reads[i], want)
		}
	}
}

// TestPrefetchErrors: a prefetcher, of a list or of every entry (a
// tensor-parallel sibling's), reports no error of its own: an entry it
// fails on and no lookup asks for fails no lookup, one a lookup asks for
// gives the error the lookup gives without a prefetcher, and the entries
// after it are parsed by their lookups.
func TestPrefetchErrors(t *testing.T) {
	t.Parallel()
	bench := benchAdds(40)
	bench[21] = `"Tensor.add.21.forward": {"input_args": [{"type": "torch.Tensor", "Max": tru}]}`
	path := filepath.Join(testkit.DumpDir(t, t.TempDir(), "bench", strings.Join(bench, ", ")), "dump.json")
	open := func() *benchIndex {
		ix, err := newBenchIndex(BenchFile(path), &Config{}, true)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(ix.close)
		ix.reset(false)
		return ix
	}
	_, want := open().entry(21)
	if want == nil {
		t.Fatal("entry 21 parsed without error")
	}
	tests := []struct {
		name string
		list []int32 // nil: every entry
		ask  []int32
	}{
		{"list, 21 not asked for", []int32{3, 21, 30, 35}, []int32{3, 30, 35}},
		{"list, 21 asked for", []int32{3, 21, 30, 35}, []int32{3, 21, 30}},
		{"every entry, 21 not asked for", nil, []int32{3, 30, 35}},
		{"every entry, 21 asked for", nil, []int32{3, 21, 30}},
		{"every entry, after 21 only", nil, []int32{22, 39}},
	}
	for _, tc := range tests {
		ix := open()
		if tc.list != nil {
			ix.prefetchOf(tc.list)
		} else {
			ix.reset(true)
		}
		if ix.pf == nil {
			t.Fatalf("%s: no prefetcher", tc.name)
		}
		if tc.list == nil {
			<-ix.pf.done // it stopped at entry 21
		}
		for _, i := range tc.ask {
			e, err := ix.entry(i)
			switch {
			case i == 21 && (err == nil || err.Error() != want.Error()):
				t.Errorf("%s: entry 21: %v, want %v", tc.name, err, want)
			case i != 21 && (err != nil || e == nil):
				t.Errorf("%s: entry %d: %v, %v", tc.name, i, e, err)
			}
		}
		ix.stopPrefetch()
	}
}

// tagCollision reports whether a candidate prefix of one of keys has the
// bench index's tag (seed) of an entry's key prefix, when it is not that
// prefix: the index then gives the entry for the key.
func tagCollision(seed maphash.Seed, prefix string, keys ...string) bool {
	tag := func(s string) uint64 { return maphash.String(seed, s) &^ (1<<32 - 1) }
	want := tag(prefix)
	for _, key := range keys {
		for _, end := range candidates(nil, key, false) {
			if key[:end] != prefix && tag(key[:end]) == want {
				return true
			}
		}
	}
	return false
}

// TestLookupAfterEviction: a bench entry the cache let go, its memory
// reused for another entry, is parsed again when a lookup asks for it,
// though row gave it last; so is one of the pass before.
func TestLookupAfterEviction(t *testing.T) {
	t.Parallel()
	path := filepath.Join(testkit.DumpDir(t, t.TempDir(), "bench", strings.Join(benchAdds(4), ", ")), "dump.json")
	ix, err := newBenchIndex(BenchFile(path), &Config{cache: 1}, true)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.close()
	ix.reset(false)
	for _, step := range []struct {
		entry int32
		row   bool // the join reads the bench row
	}{{0, true}, {1, false}, {2, false}, {0, true}, {3, false}, {1, false}, {0, true}, {0, true}} {
		key := fmt.Sprintf("Tensor.add.%d.forward.output.0", step.entry)
		refs, err := ix.lookup(key, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(refs) != 1 || refs[0].entry != step.entry {
			t.Fatalf("%s: bench rows %v, want one of entry %d", key, refs, step.entry)
		}
		if !step.row {
			continue
		}
		if _, r := ix.row(refs[0]); r.it.Name != key {
			t.Fatalf("%s: bench row %s", key, r.it.Name)
		}
		ix.match(refs[0])
	}
	// a new pass reads it again
	ix.reset(false)
	refs, err := ix.lookup("Tensor.add.0.forward.output.0", nil)
	if err != nil || len(refs) != 1 {
		t.Fatalf("second pass: bench rows %v, %v", refs, err)
	}
	ix.match(refs[0])
	var sum Summary
	if err := ix.finish(&sum); err != nil {
		t.Fatal(err)
	}
	if sum.BenchRows != 8 || sum.BenchUnmatched != 7 {
		t.Errorf("second pass: bench rows %d, unmatched %d; want 8, 7", sum.BenchRows, sum.BenchUnmatched)
	}
}

// TestLookaheadNone: the lookahead marks a row's key prefix as missing
// from the table (keyHashes.none, the join then skips the probe) exactly
// when the table has nothing under its hash, rows sharing prefixes (found
// again among the last looked up) and not among them.
func TestLookaheadNone(t *testing.T) {
	src := namesSource("Tensor.add.0.forward", "Module.output.Linear.forward.0", "Tensor.add.2.forward")
	ix, err := newBenchIndex(src, &Config{}, false)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.close()
	var keys []string
	for i := range 8 { // then a prefix found takes the place of one missing
		keys = append(keys, fmt.Sprintf("Tensor.sub.%d.forward.input.0", i))
	}
	keys = append(keys, "Tensor.add.0.forward.input.0", "Tensor.add.0.forward.output.0")
	for _, k := range []string{"Tensor.add.0.forward.input.0", "Tensor.add.1.forward.input.0", "Tensor.add.0.forward.output.0",
		"Tensor.add.1.forward.output.0", "Module.output.Linear.forward.0.input.0", "Module.output.Other.forward.0.input.0",
		"Tensor.add.2.forward.input.0", "Tensor.add.3.forward.input.0"} {
		keys = append(keys, k)
		for i := range 9 { // more prefixes than the lookahead remembers in between
			keys = append(keys, fmt.Sprintf("Tensor.mul.%d.forward.input.0", i))
		}
		keys = append(keys, k)
	}
	rows := make([]sideRow, len(keys))
	for i, k := range keys {
		rows[i].key = k
	}
	la := &lookahead{ix: ix, key: func(n *sideRow, _ *[]byte, _ suffixHas) string { return n.key }, most: 1 << 20,
		out: make(chan []npuEntry, len(keys)), stop: make(chan struct{}), parsed: make(bitset, (ix.n+63)/64)}
	var freeTaken func()
	la.taken, freeTaken = newTakenBits(ix.n)
	defer freeTaken()
	la.p = ix.newParser(ix.src)
	if !la.entry(rows) {
		t.Fatal("lookahead stopped")
	}
	la.drop()
	for len(la.out) > 0 {
		for _, e := range <-la.out {
			if e.ahead != nil {
				ix.spare.put(e.ahead)
			}
		}
	}
	marked := 0
	for _, r := range rows {
		kh := r.ahead
		if kh.n == 0 {
			t.Fatalf("%s: not hashed ahead", r.key)
		}
		for c := range int(kh.n) - 1 {
			empty := true
			ix.index.find(uint32(kh.h[c]>>32), func(uint32) bool { empty = false; return false })
			if none := kh.none>>c&1 != 0; none != empty {
				t.Errorf("%s, prefix %s: marked missing %v, table empty %v", r.key, r.key[:kh.ends[c]], none, empty)
			}
			if empty {
				marked++
			}
		}
	}
	if marked == 0 {
		t.Error("no prefix missing")
	}
}
