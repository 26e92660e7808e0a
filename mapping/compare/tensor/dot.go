package tensor

import "math"

// numpy computes n·b, ‖n‖ and ‖n − b‖ (np.dot, np.linalg.norm) with BLAS
// ddot, whose summation order shows in the last bits of EucDist, which
// msprobe prints unrounded. This package follows OpenBLAS's x86-64
// Haswell/Zen kernel, what numpy's OpenBLAS runs on AVX2 machines
// (kernel/x86_64/ddot.c with ddot_microk_haswell-2.c): blocks of 16
// elements go to 16 running sums (four 4-lane AVX2 registers) updated with
// fused multiply-adds, the sums are folded pairwise, then the remaining
// n mod 16 products are added one by one. OpenBLAS splits vectors longer
// than 10000 elements over its threads and adds the per-thread results to
// 0.0 in order; Options.BLASThreads reproduces that split. The golden
// tables (at most 32 elements per tensor) agree with this order but agree
// with plain sequential summation too, so they cannot confirm it; another
// BLAS (reference BLAS, the AVX-512 kernel) can differ in the last ulp of
// EucDist.

// dotAcc accumulates one ddot in OpenBLAS order over a stream of
// products fed in blocks.
type dotAcc struct {
	lanes [16]float64
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

// dotState accumulates, for one BLAS thread's share of the elements, the
// four dot products the metrics need (n·b, n·n, b·b, (n−b)·(n−b)), each
// in the order its own ddot call would sum it, fed chunk by chunk.
type dotState struct {
	acc [4]dotAcc
	sum [4]float64 // set by the share's last chunk
}

// add feeds one chunk: its first lanes elements (a multiple of 16) go to
// the 16 running sums; when last is set the sums are folded and the
// remaining elements (the share's n mod 16) added one by one, as the
// kernel's C tail loop does. It returns max |n−b| over the chunk, and ok
// false when an inf or NaN was met (the state is then not valid).
func (s *dotState) add(n, b []float64, lanes int, last bool) (maxAbs float64, ok bool) {
	nonFinite := false
	// Local copies: the compiler keeps them out of s's memory.
	anb, ann, abb, add := s.acc[0], s.acc[1], s.acc[2], s.acc[3]
	for i := 0; i < lanes; i += 16 {
		x := n[i : i+16 : i+16]
		y := b[i : i+16 : i+16]
		for j := range 16 {
			xj, yj := x[j], y[j]
			if xj-xj != 0 || yj-yj != 0 { // inf or NaN
				nonFinite = true
			}
			d := xj - yj
			if a := math.Abs(d); a > maxAbs {
				maxAbs = a
			}
			anb.lanes[j] = math.FMA(xj, yj, anb.lanes[j])
			ann.lanes[j] = math.FMA(xj, xj, ann.lanes[j])
			abb.lanes[j] = math.FMA(yj, yj, abb.lanes[j])
			add.lanes[j] = math.FMA(d, d, add.lanes[j])
		}
	}
	s.acc = [4]dotAcc{anb, ann, abb, add}
	if !last {
		return maxAbs, !nonFinite
	}
	for k := range s.acc {
		s.sum[k] = s.acc[k].fold()
	}
	for i := lanes; i < len(n); i++ {
		xj, yj := n[i], b[i]
		if xj-xj != 0 || yj-yj != 0 {
			nonFinite = true
		}
		d := xj - yj
		if a := math.Abs(d); a > maxAbs {
			maxAbs = a
		}
		// One rounding per product, as the C tail loop does.
		s.sum[0] += float64(yj * xj)
		s.sum[1] += float64(xj * xj)
		s.sum[2] += float64(yj * yj)
		s.sum[3] += float64(d * d)
	}
	return maxAbs, !nonFinite
}
