package tensor

import (
	"bytes"
	"math/rand/v2"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"codeberg.org/sbinet/npyio/npy"
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

// BenchmarkCompare16M compares two 16M-element float32 tensors (64 MiB
// each on disk); ns/element = ns/op / 2^24.
func BenchmarkCompare16M(b *testing.B) {
	const n = 1 << 24
	nt, bt := pairData(n, 1)
	for _, bc := range []struct {
		name string
		opts Options
	}{
		{"workers=1", Options{Workers: 1}},
		{"workers=2", Options{Workers: 2}},
		{"workers=2/blas-threads=2", Options{Workers: 2, BLASThreads: 2}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(2 * 4 * n)
			c0 := cpuTime()
			for b.Loop() {
				Compare(nt, bt, bc.opts)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/element")
			b.ReportMetric(float64((cpuTime()-c0).Nanoseconds())/float64(b.N)/n, "cpu-ns/element")
		})
	}
}

// BenchmarkLoadPT16M reads a 16M-element float32 .pt file.
func BenchmarkLoadPT16M(b *testing.B) {
	const n = 1 << 24
	nt, _ := pairData(n, 2)
	path := filepath.Join(b.TempDir(), "t.pt")
	writeFile(b, path, ptBytes(b, "torch.float32", []int{n}, nt.Data))
	b.SetBytes(4 * n)
	c0 := cpuTime()
	for b.Loop() {
		if _, err := Load(path); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/element")
	b.ReportMetric(float64((cpuTime()-c0).Nanoseconds())/float64(b.N)/n, "cpu-ns/element")
}

// BenchmarkLoadNPY16M reads a 16M-element float32 .npy file.
func BenchmarkLoadNPY16M(b *testing.B) {
	const n = 1 << 24
	nt, _ := pairData(n, 3)
	path := filepath.Join(b.TempDir(), "t.npy")
	f32 := make([]float32, n)
	for i, v := range nt.Data {
		f32[i] = float32(v)
	}
	var buf bytes.Buffer
	if err := npy.Write(&buf, f32); err != nil {
		b.Fatal(err)
	}
	writeFile(b, path, buf.Bytes())
	b.SetBytes(4 * n)
	c0 := cpuTime()
	for b.Loop() {
		if _, err := Load(path); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/element")
	b.ReportMetric(float64((cpuTime()-c0).Nanoseconds())/float64(b.N)/n, "cpu-ns/element")
}
