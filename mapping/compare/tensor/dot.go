package tensor

import "math"

// numpy computes n·b, ‖n‖ and ‖n − b‖ (np.dot, np.linalg.norm) with BLAS
// ddot, whose summation order shows in the last bits of EucDist, which
// msprobe prints unrounded. The golden tables were produced with
// OpenBLAS's x86-64 Haswell/Zen kernel (kernel/x86_64/ddot.c with
// ddot_microk_haswell-2.c): blocks of 16 elements go to 16 running sums
// (four 4-lane AVX2 registers) updated with fused multiply-adds, the sums
// are folded pairwise, then the remaining n mod 16 products are added one
// by one. OpenBLAS splits vectors longer than 10000 elements over its
// threads and adds the per-thread results in order; Options.BLASThreads
// reproduces that split.

// dotAcc accumulates one ddot in OpenBLAS order over a stream of
// products fed in blocks.
type dotAcc struct {
	lanes [16]float64
}

// block adds 16 products x[i]*y[i] lane-wise with fused multiply-adds.
func (a *dotAcc) block(x, y []float64) {
	x = x[:16]
	y = y[:16]
	for j := 0; j < 16; j++ {
		a.lanes[j] = math.FMA(x[j], y[j], a.lanes[j])
	}
}

// fold combines the lanes as the kernel's extract/add/hadd sequence does.
func (a *dotAcc) fold() float64 {
	var r [4][2]float64
	for k := 0; k < 4; k++ {
		l := a.lanes[4*k : 4*k+4]
		r[k][0] = l[0] + l[2]
		r[k][1] = l[1] + l[3]
	}
	p0 := r[0][0] + r[1][0]
	p1 := r[0][1] + r[1][1]
	q0 := r[2][0] + r[3][0]
	q1 := r[2][1] + r[3][1]
	s0 := p0 + q0
	s1 := p1 + q1
	return s0 + s1
}

// ddot is OpenBLAS's single-threaded dot_compute.
func ddot(x, y []float64) float64 {
	n := len(x)
	n1 := n &^ 15
	dot := 0.0
	if n1 > 0 {
		var a dotAcc
		for i := 0; i < n1; i += 16 {
			a.block(x[i:], y[i:])
		}
		dot = a.fold()
	}
	for i := n1; i < n; i++ {
		dot += float64(y[i] * x[i]) // no fused multiply-add here
	}
	return dot
}

// blasChunks splits n elements the way OpenBLAS's level-1 threading
// (blas_level1_thread_with_return_value) does for nthreads threads:
// each thread in turn takes ceil(remaining / threads left).
func blasChunks(n, nthreads int) []int {
	if nthreads <= 1 || n <= 10000 {
		return []int{n}
	}
	var out []int
	rest := n
	for t := nthreads; t > 0 && rest > 0; t-- {
		w := (rest + t - 1) / t
		out = append(out, w)
		rest -= w
	}
	return out
}
