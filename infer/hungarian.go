package infer

import (
	"math"
	"slices"
)

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

// componentLimit is the largest connected component of candidate pairs
// (rows x columns) solved exactly; a larger one is matched greedily.
const componentLimit = 4096

// assignSparse solves the maximum-weight assignment of n rows and m
// columns over the candidate pairs edges (sorted by row, then column; a
// missing pair cannot be chosen) and returns the chosen pairs, by row.
// The pairs fall apart into connected components, each solved on its
// own: exactly (hungarian) when small, greedily (heaviest pair first)
// when not. For a dense edge set this is hungarian on the whole matrix.
func assignSparse(n, m int, edges []edge) []edge {
	if len(edges) == 0 {
		return nil
	}
	// union-find over rows 0..n-1 and columns n..n+m-1
	parent := make([]int, n+m)
	for i := range parent {
		parent[i] = i
	}
	var find func(int) int
	find = func(x int) int {
		for parent[x] != x {
			parent[x] = parent[parent[x]]
			x = parent[x]
		}
		return x
	}
	for _, e := range edges {
		if e.w <= 0 {
			continue
		}
		if a, b := find(e.i), find(n+e.j); a != b {
			parent[max(a, b)] = min(a, b)
		}
	}
	comps := map[int][]edge{}
	var roots []int
	for _, e := range edges {
		if e.w <= 0 {
			continue
		}
		r := find(e.i)
		if comps[r] == nil {
			roots = append(roots, r)
		}
		comps[r] = append(comps[r], e)
	}
	var out []edge
	for _, r := range roots {
		out = append(out, solveComponent(comps[r])...)
	}
	slices.SortFunc(out, func(x, y edge) int { return x.i - y.i })
	return out
}

// solveComponent assigns one connected component of candidate pairs.
func solveComponent(es []edge) []edge {
	var rows, cols []int
	ri, ci := map[int]int{}, map[int]int{}
	for _, e := range es {
		if _, ok := ri[e.i]; !ok {
			ri[e.i] = len(rows)
			rows = append(rows, e.i)
		}
		if _, ok := ci[e.j]; !ok {
			ci[e.j] = len(cols)
			cols = append(cols, e.j)
		}
	}
	slices.Sort(rows)
	slices.Sort(cols)
	for k, i := range rows {
		ri[i] = k
	}
	for k, j := range cols {
		ci[j] = k
	}
	if len(rows)*len(cols) > componentLimit {
		return greedy(es)
	}
	w := make([][]float64, len(rows))
	for k := range w {
		w[k] = make([]float64, len(cols))
	}
	for _, e := range es {
		w[ri[e.i]][ci[e.j]] = e.w
	}
	var out []edge
	for k, l := range hungarian(w) {
		if l >= 0 && w[k][l] > 0 {
			out = append(out, edge{rows[k], cols[l], w[k][l]})
		}
	}
	return out
}

// greedy takes the heaviest pairs first (the lower row, then column, on
// a tie), each row and column once.
func greedy(es []edge) []edge {
	es = slices.Clone(es)
	slices.SortStableFunc(es, func(x, y edge) int {
		switch {
		case x.w > y.w:
			return -1
		case x.w < y.w:
			return 1
		case x.i != y.i:
			return x.i - y.i
		}
		return x.j - y.j
	})
	usedR, usedC := map[int]bool{}, map[int]bool{}
	var out []edge
	for _, e := range es {
		if !usedR[e.i] && !usedC[e.j] {
			usedR[e.i], usedC[e.j] = true, true
			out = append(out, e)
		}
	}
	return out
}
