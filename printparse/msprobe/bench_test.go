package msprobe_test

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/layermap/layermap/printparse/msprobe"
	"github.com/layermap/layermap/printparse/msprobe/dumpgen"
)

var (
	benchOnce, benchMD5Once sync.Once
	benchData, benchMD5Data []byte
)

// benchDump is a realistic ~64 MB statistics dump.json, built once.
func benchDump(b *testing.B) []byte {
	benchOnce.Do(func() { benchData = genDump(b, dumpgen.Options{Seed: 1, TargetBytes: 64 << 20}) })
	return benchData
}

// benchMD5Dump is benchDump in md5 mode (summary_mode md5: an md5 in
// every tensor item).
func benchMD5Dump(b *testing.B) []byte {
	benchMD5Once.Do(func() { benchMD5Data = genDump(b, dumpgen.Options{Seed: 1, MD5: true, TargetBytes: 64 << 20}) })
	return benchMD5Data
}

func genDump(b *testing.B, o dumpgen.Options) []byte {
	var buf bytes.Buffer
	if _, err := dumpgen.Write(&buf, o); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

// BenchmarkScan measures Scan throughput (MB/s) and allocations over a
// generated 64 MB dump held in memory.
func BenchmarkScan(b *testing.B) {
	data := benchDump(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	rows := 0
	for i := 0; i < b.N; i++ {
		rows = 0
		if _, err := msprobe.Scan(bytes.NewReader(data), "dump.json", func(e *msprobe.Entry) error {
			rows += len(e.Items)
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(rows), "rows/op")
}

// BenchmarkScanSequential is BenchmarkScan with decoding and flattening
// on one goroutine (as a compare's bench side reads its entries).
func BenchmarkScanSequential(b *testing.B) { benchScanSequential(b, benchDump(b)) }

// BenchmarkScanSequentialMD5 is BenchmarkScanSequential on an md5 mode
// dump.
func BenchmarkScanSequentialMD5(b *testing.B) { benchScanSequential(b, benchMD5Dump(b)) }

func benchScanSequential(b *testing.B, data []byte) {
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := msprobe.ScanSequential(bytes.NewReader(data), "dump.json", func(*msprobe.Entry) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEntryNames measures the skipping path.
func BenchmarkEntryNames(b *testing.B) {
	data := benchDump(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		// Scan with a callback that does nothing is the closest public
		// equivalent over an in-memory reader; EntryNames needs a path.
		if _, err := msprobe.Scan(bytes.NewReader(data), "dump.json", func(*msprobe.Entry) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkScanStream scans a 512 MB dump generated on the fly through a
// pipe (never held in memory) and reports the live heap the scan holds
// (measured after a forced GC every 50,000 entries, minus the heap before
// the scan): it must stay flat however large the file is.
func BenchmarkScanStream(b *testing.B) {
	const size = 512 << 20
	b.SetBytes(size)
	var peak int64
	var ms runtime.MemStats
	for i := 0; i < b.N; i++ {
		runtime.GC()
		runtime.ReadMemStats(&ms)
		base := int64(ms.HeapAlloc)
		pr, pw := io.Pipe()
		go func() {
			_, err := dumpgen.Write(pw, dumpgen.Options{Seed: 2, TargetBytes: size})
			pw.CloseWithError(err)
		}()
		n := 0
		if _, err := msprobe.Scan(pr, "dump.json", func(e *msprobe.Entry) error {
			n++
			if n%50000 == 0 {
				runtime.GC()
				runtime.ReadMemStats(&ms)
				if d := int64(ms.HeapAlloc) - base; d > peak {
					peak = d
				}
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(peak)/(1<<20), "live-heap-MB")
}

// BenchmarkAppendPyFloat formats statistics as a dump holds them: float32
// values of both signs and many magnitudes, widened to float64 (16 or 17
// digits, mostly positional).
func BenchmarkAppendPyFloat(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	v := make([]float64, 4096)
	for i := range v {
		v[i] = float64(float32(r.NormFloat64() * 0.05))
	}
	var buf [32]byte
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		msprobe.AppendPyFloat(buf[:0], v[i&4095])
	}
}

// BenchmarkReadStacks reads a stack.json of the per-entry format (entry
// name -> frames, as older msprobe versions and MindSpore write it):
// 40,000 entries, each one of 50 stacks of 8 frames, about 30 MB.
func BenchmarkReadStacks(b *testing.B) {
	var buf bytes.Buffer
	buf.WriteString("{\n")
	for i := range 40000 {
		if i > 0 {
			buf.WriteString(",\n")
		}
		fmt.Fprintf(&buf, "    \"Tensor.__add__.%d.forward\": [\n", i)
		for f := range 8 {
			if f > 0 {
				buf.WriteString(",\n")
			}
			fmt.Fprintf(&buf, "        \"File /path_to_package/site-packages/mindspore/nn/layer%d/cell.py, line %d, in construct, \\n output = self.block%d(inputs)\"", i%50, 100+f, f)
		}
		buf.WriteString("\n    ]")
	}
	buf.WriteString("\n}\n")
	path := filepath.Join(b.TempDir(), "stack.json")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(buf.Len()))
	b.ReportAllocs()
	for b.Loop() {
		st, err := msprobe.ReadStacks(path)
		if err != nil {
			b.Fatal(err)
		}
		if fr, ok := st.Frames("Tensor.__add__.7.forward"); !ok || len(fr) != 8 {
			b.Fatalf("frames %q", fr)
		}
		st.Release()
	}
}
