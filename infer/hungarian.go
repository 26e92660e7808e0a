package infer

import "math"

// hungarian solves the maximum-weight assignment for the weight matrix w
// (rows x columns, weights >= 0, 0 meaning "no edge") and returns, for each
// row, its column or -1. It is the Kuhn-Munkres algorithm with potentials
// (O(n^2 m)); ties go to the lower row and column indices, so the result
// is deterministic.
func hungarian(w [][]float64) []int {
	n := len(w)
	if n == 0 {
		return nil
	}
	m := len(w[0])
	out := make([]int, n)
	for i := range out {
		out[i] = -1
	}
	if m == 0 {
		return out
	}
	if n > m {
		// Solve the transpose so that rows <= columns.
		t := make([][]float64, m)
		for j := range t {
			t[j] = make([]float64, n)
			for i := range n {
				t[j][i] = w[i][j]
			}
		}
		for j, i := range hungarian(t) {
			if i >= 0 {
				out[i] = j
			}
		}
		return out
	}
	// Minimise cost = -w with 1-based arrays (row 0 / column 0 virtual).
	inf := math.Inf(1)
	u := make([]float64, n+1)
	v := make([]float64, m+1)
	p := make([]int, m+1) // p[j]: row assigned to column j
	way := make([]int, m+1)
	minv := make([]float64, m+1)
	used := make([]bool, m+1)
	for i := 1; i <= n; i++ {
		p[0] = i
		j0 := 0
		for j := range minv {
			minv[j] = inf
			used[j] = false
		}
		for {
			used[j0] = true
			i0 := p[j0]
			delta := inf
			j1 := 0
			for j := 1; j <= m; j++ {
				if used[j] {
					continue
				}
				cur := -w[i0-1][j-1] - u[i0] - v[j]
				if cur < minv[j]-1e-12 {
					minv[j] = cur
					way[j] = j0
				}
				if minv[j] < delta-1e-12 {
					delta = minv[j]
					j1 = j
				}
			}
			for j := 0; j <= m; j++ {
				if used[j] {
					u[p[j]] += delta
					v[j] -= delta
				} else {
					minv[j] -= delta
				}
			}
			j0 = j1
			if p[j0] == 0 {
				break
			}
		}
		for {
			j1 := way[j0]
			p[j0] = p[j1]
			j0 = j1
			if j0 == 0 {
				break
			}
		}
	}
	for j := 1; j <= m; j++ {
		if p[j] > 0 && w[p[j]-1][j-1] > 0 {
			out[p[j]-1] = j - 1
		}
	}
	return out
}
