package tensor

import "math"

// The reference, one-product-at-a-time form of OpenBLAS's ddot that the
// fused pass in dots must reproduce bit for bit.

// block adds 16 products x[i]*y[i] lane-wise with fused multiply-adds.
func (a *dotAcc) block(x, y []float64) {
	x = x[:16]
	y = y[:16]
	for j := 0; j < 16; j++ {
		a.lanes[j] = math.FMA(x[j], y[j], a.lanes[j])
	}
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
