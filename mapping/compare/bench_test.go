package compare

import (
	"bufio"
	"os"
	"path/filepath"
	"runtime"
	"strconv"

	"testing"
	"time"

	"github.com/layermap/layermap/printparse/msprobe"
	"github.com/layermap/layermap/printparse/msprobe/dumpgen"
)

// benchBytes is the size of each generated dump.json: 16 MB by default,
// LAYERMAP_BENCH_BYTES to scale (e.g. 1073741824 for the 1 GB run).
// LAYERMAP_BENCH_DIR keeps the generated pair between runs.
func benchBytes() int64 {
	if s := os.Getenv("LAYERMAP_BENCH_BYTES"); s != "" {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return n
		}
	}
	return 16 << 20
}

func genPair(b *testing.B, dir string, size int64, tensor bool) (string, string, int64) {
	npu := filepath.Join(dir, "npu", "dump.json")
	bench := filepath.Join(dir, "bench", "dump.json")
	st1, e1 := os.Stat(npu)
	st2, e2 := os.Stat(bench)
	if e1 == nil && e2 == nil && st1.Size() >= size && st2.Size() >= size {
		return npu, bench, st1.Size() + st2.Size()
	}
	var total int64
	for _, s := range []struct {
		path    string
		perturb float64
	}{{npu, 0}, {bench, 0.01}} {
		if err := os.MkdirAll(filepath.Dir(s.path), 0o755); err != nil {
			b.Fatal(err)
		}
		f, err := os.Create(s.path)
		if err != nil {
			b.Fatal(err)
		}
		w := bufio.NewWriterSize(f, 1<<20)
		st, err := dumpgen.Write(w, dumpgen.Options{Seed: 7, TargetBytes: size, Perturb: s.perturb, Tensor: tensor})
		if err != nil {
			b.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			b.Fatal(err)
		}
		f.Close()
		total += st.Bytes
	}
	return npu, bench, total
}

// peakHeap samples the heap while fn runs.
func peakHeap(fn func()) uint64 {
	var peak uint64
	done := make(chan struct{})
	go func() {
		var ms runtime.MemStats
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak {
				peak = ms.HeapInuse
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	fn()
	close(done)
	return peak
}

// BenchmarkCompare compares a generated statistics dump pair (a
// transformer dumped at level mix, bench perturbed by 1%) end to end:
// parse both sides, match, diff, judge, write the CSV; "window" is the
// default join (bench side streamed through a window), "full" the whole
// bench side in memory (what a run falls back to).
//
// Figures seen on the 2-core dev machine (shared with other jobs, so
// wall times vary by +-30%). `layermap compare` under /usr/bin/time -v
// (cmd sets GOGC 25), same CSV bytes in every row:
//
//	pair (dump.json sizes)    rows    join                      wall    user   MB/s  peak RSS
//	2 x 268 MB (0.54 GB)      1.02M   before (unpacked store)   6.7 s  10.5 s    80    362 MB
//	                                  packed store (full)       6.4 s   9.9 s    84    167 MB
//	                                  window (default)          7.2 s  11.5 s    75     89 MB
//	2 x 1.07 GB (2.15 GB)     4.09M   before                   35.9 s  43.3 s    60   1395 MB
//	                                  packed store (full)      39.7 s  43.2 s    54    628 MB
//	                                  window (default)         32.6 s  48.7 s    66    255 MB
//
// This benchmark (GOGC 100, peak HeapInuse): 0.54 GB before 7.2 s, 74 MB/s,
// 531 MB; window 6.7 s, 80 MB/s, 114 MB; full 9.8 s, 55 MB/s, 237 MB.
// 2.15 GB window 43-55 s, 39-50 MB/s, 393-415 MB; full 34 s, 63 MB/s,
// 832 MB.
//
// The packed store holds about 98 bytes per bench row (it was 250). The
// window itself is bounded (32k rows, ~3 MB); what still grows with the
// file in the window join is 8-16 bytes per bench row of key hashes, the
// backward call counters (opCounts) and package dump's scanner call-order
// maps (about 70 MB of live heap in the 2.15 GB run). The extra user time
// of the window join is garbage collection: a small heap under GOGC 25 is
// collected more often.
func BenchmarkCompare(b *testing.B) {
	dir := os.Getenv("LAYERMAP_BENCH_DIR")
	if dir == "" {
		dir = b.TempDir()
	}
	npu, bench, total := genPair(b, dir, benchBytes(), false)
	for _, full := range []bool{false, true} {
		name := "window"
		if full {
			name = "full"
		}
		b.Run(name, func(b *testing.B) {
			out := b.TempDir()
			b.SetBytes(total)
			var peak uint64
			var rows int
			for i := 0; i < b.N; i++ {
				p := peakHeap(func() {
					rep, err := Run(Options{Target: npu, Golden: bench, OutDir: out, fullBench: full,
						Now: func() time.Time { return time.Unix(int64(i), 0) }})
					if err != nil {
						b.Fatal(err)
					}
					rows = rep.Ranks[0].Summary.Rows
				})
				if p > peak {
					peak = p
				}
			}
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
			b.ReportMetric(float64(rows), "rows")
		})
	}
}

type discardSink struct{}

func (discardSink) Header([]string) error     { return nil }
func (discardSink) Row([]Cell, RowMark) error { return nil }
func (discardSink) Reset() error              { return nil }

// BenchmarkJoin measures layermap's own work per row (keys, index, join,
// diffs, rules, highlight, rendering) on entries already in memory, so
// that parsing and I/O do not hide it.
func BenchmarkJoin(b *testing.B) {
	dir := b.TempDir()
	npu, bench, _ := genPair(b, dir, 4<<20, false)
	load := func(path string) []msprobe.Entry {
		var es []msprobe.Entry
		if _, err := msprobe.ScanFile(path, func(e *msprobe.Entry) error {
			c := *e
			c.Items = append([]msprobe.Item(nil), e.Items...)
			es = append(es, c)
			return nil
		}); err != nil {
			b.Fatal(err)
		}
		return es
	}
	ne, be := load(npu), load(bench)
	rows := 0
	for _, e := range ne {
		rows += len(e.Items)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Compare(memSource(ne...), memSource(be...), Config{Mode: Statistics}, discardSink{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(rows), "ns/row")
}

// BenchmarkBenchStore reads a generated bench dump into the packed store
// (the full join's memory) and reports its live bytes per row: 98 on the
// 256 MB dump, 148 on the default 16 MB one (fixed chunk sizes weigh
// more); the unpacked store before it held 250 on the 256 MB dump.
func BenchmarkBenchStore(b *testing.B) {
	dir := os.Getenv("LAYERMAP_BENCH_DIR")
	if dir == "" {
		dir = b.TempDir()
	}
	_, bench, _ := genPair(b, dir, benchBytes(), false)
	src := Source(func(yield func(*msprobe.Entry) error) error {
		_, err := msprobe.ScanFile(bench, yield)
		return err
	})
	b.ResetTimer()
	var perRow float64
	for i := 0; i < b.N; i++ {
		var m0, m1 runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m0)
		bs, err := collectBench(src, &Config{Mode: Statistics}, true)
		if err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		runtime.ReadMemStats(&m1)
		perRow = float64(m1.HeapAlloc-m0.HeapAlloc) / float64(bs.len())
		runtime.KeepAlive(bs)
	}
	b.ReportMetric(perRow, "B/row")
}
