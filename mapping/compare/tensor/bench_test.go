package tensor

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/layermap/layermap/mapping/compare/tensor/tensortest"
)

// cpuTime is the process's user+system CPU time: on a shared machine it
// measures the work where wall time measures the neighbours too.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// pairData is an NPU/bench float32 pair of n elements: bench values, and
// NPU values off by about noise·10⁻³ relative, with some exact zeros.
func pairData(n int, seed uint64) (*Tensor, *Tensor) {
	r := rand.New(rand.NewPCG(seed, 7))
	nv, bv := make([]float64, n), make([]float64, n)
	for i := range nv {
		b := float32(r.NormFloat64())
		if i%97 == 0 {
			b = 0
		}
		bv[i] = float64(b)
		nv[i] = float64(b * float32(1+2e-3*r.NormFloat64()))
	}
	shape := []int{n}
	return &Tensor{Dtype: "float32", Shape: shape, Data: nv}, &Tensor{Dtype: "float32", Shape: shape, Data: bv}
}

// f32Bytes is the float32 storage of vals.
func f32Bytes(vals []float64) []byte {
	out := make([]byte, 4*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(float32(v)))
	}
	return out
}

// report adds per-element wall and CPU time.
func report(b *testing.B, n int, c0 time.Duration) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/element")
	b.ReportMetric(float64((cpuTime()-c0).Nanoseconds())/float64(b.N)/float64(n), "cpu-ns/element")
}

// BenchmarkCompare16M compares two 16M-element float32 tensors held in
// memory: the metric kernels alone.
func BenchmarkCompare16M(b *testing.B) {
	const n = 1 << 24
	nt, bt := pairData(n, 1)
	for _, bc := range []struct {
		name string
		opts Options
	}{
		{"blas-threads=1", Options{}},
		{"blas-threads=2", Options{BLASThreads: 2}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(2 * 4 * n)
			b.ReportAllocs()
			c0 := cpuTime()
			for b.Loop() {
				Compare(nt, bt, bc.opts)
			}
			report(b, n, c0)
		})
	}
}

// writePT writes a generated archive to dir/name.
func writePT(b *testing.B, dir, name string, p tensortest.PT) string {
	path := filepath.Join(dir, name)
	fh, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := p.Write(fh); err != nil {
		b.Fatal(err)
	}
	if err := fh.Close(); err != nil {
		b.Fatal(err)
	}
	return path
}

// BenchmarkCompareFiles streams two generated float32 tensor files
// through the metrics: MB/s counts both files' data; B/op is what one
// comparison allocates, whatever the tensors' sizes. "transposed" reads
// the bench through a column-major view whose storage fits the block
// cache; "transposed-uncached" is the worst case, a transpose whose rows
// touch more blocks than the cache holds (one storage read per element).
func BenchmarkCompareFiles(b *testing.B) {
	dir := b.TempDir()
	pair := func(tag string, rows, cols int, transposed, npy bool) (string, string) {
		n := rows * cols
		nt, bt := pairData(n, uint64(n))
		var npu string
		if npy {
			npu = filepath.Join(dir, tag+"n.npy")
			if err := os.WriteFile(npu, tensortest.NPYBytes("<f4", false, []int{rows, cols}, f32Bytes(nt.Data)), 0o644); err != nil {
				b.Fatal(err)
			}
		} else {
			npu = writePT(b, dir, tag+"n.pt", tensortest.PT{Class: "FloatStorage", Numel: n, Data: f32Bytes(nt.Data), Size: []int{rows, cols}})
		}
		if !transposed {
			return npu, writePT(b, dir, tag+"b.pt", tensortest.PT{Class: "FloatStorage", Numel: n, Data: f32Bytes(bt.Data), Size: []int{rows, cols}})
		}
		tr := make([]float64, n)
		for i := 0; i < rows; i++ {
			for j := 0; j < cols; j++ {
				tr[j*rows+i] = bt.Data[i*cols+j]
			}
		}
		return npu, writePT(b, dir, tag+"b.pt", tensortest.PT{Class: "FloatStorage", Numel: n, Data: f32Bytes(tr), Size: []int{rows, cols}, Stride: []int{1, rows}})
	}
	for _, bc := range []struct {
		name            string
		rows, cols      int
		transposed, npy bool
	}{
		{"pt-pt-32M", 1 << 12, 1 << 13, false, false},
		{"npy-pt-32M", 1 << 12, 1 << 13, false, true},
		{"transposed-4M", 1 << 10, 1 << 12, true, false},
		{"transposed-uncached-16M", 1 << 11, 1 << 13, true, false},
	} {
		b.Run(bc.name, func(b *testing.B) {
			npu, bench := pair(bc.name, bc.rows, bc.cols, bc.transposed, bc.npy)
			n := bc.rows * bc.cols
			b.SetBytes(2 * 4 * int64(n))
			b.ReportAllocs()
			b.ResetTimer()
			c0 := cpuTime()
			for b.Loop() {
				if m := CompareFiles(npu, bench, Options{}); m.Status != StatusOK {
					b.Fatal(m.Status, m.Err)
				}
			}
			report(b, n, c0)
			os.Remove(npu)
			os.Remove(bench)
		})
	}
}

// BenchmarkBroadcast compares two files of a few hundred bytes whose
// stride-0 views claim 2^28 and 2^31 elements: time grows with the claim,
// memory (B/op) does not.
func BenchmarkBroadcast(b *testing.B) {
	for _, log2 := range []int{28, 31} {
		b.Run(fmt.Sprintf("2^%d", log2), func(b *testing.B) {
			dir := b.TempDir()
			paths := make([]string, 2)
			for i, v := range []float64{1.5, 1.25} {
				paths[i] = writePT(b, dir, fmt.Sprintf("%d.pt", i), tensortest.PT{Class: "FloatStorage", Numel: 1, Data: f32Bytes([]float64{v}),
					Size: []int{1 << (log2 - 15), 1 << 15}, Stride: []int{0, 0}})
			}
			b.ReportAllocs()
			c0 := cpuTime()
			for b.Loop() {
				if m := CompareFiles(paths[0], paths[1], Options{}); m.Status != StatusOK {
					b.Fatal(m.Status, m.Err)
				}
			}
			report(b, 1<<log2, c0)
		})
	}
}
