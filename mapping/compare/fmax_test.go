package compare

import (
	"math"
	"testing"
)

// TestFmaxFmin checks the inlined fmax and fmin against math.Max and
// math.Min on every pair of special and ordinary values, bit for bit.
func TestFmaxFmin(t *testing.T) {
	nan := math.NaN()
	vals := []float64{0, math.Copysign(0, -1), 1, -1, 0.5, -0.5, 2, math.MaxFloat64, -math.MaxFloat64,
		math.SmallestNonzeroFloat64, -math.SmallestNonzeroFloat64, math.Inf(1), math.Inf(-1), nan,
		-nan, math.Float64frombits(0x7FF0000000000001)}
	for _, x := range vals {
		for _, y := range vals {
			if got, want := fmax(x, y), math.Max(x, y); !sameFloat(got, want) {
				t.Errorf("fmax(%v, %v) = %v (%#x), math.Max %v (%#x)", x, y, got, math.Float64bits(got), want, math.Float64bits(want))
			}
			if got, want := fmin(x, y), math.Min(x, y); !sameFloat(got, want) {
				t.Errorf("fmin(%v, %v) = %v (%#x), math.Min %v (%#x)", x, y, got, math.Float64bits(got), want, math.Float64bits(want))
			}
		}
	}
}

// sameFloat is bit equality, any NaN equal to any NaN.
func sameFloat(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	return math.Float64bits(a) == math.Float64bits(b)
}

// FuzzFmaxFmin compares fmax and fmin with math.Max and math.Min on any
// two bit patterns.
func FuzzFmaxFmin(f *testing.F) {
	f.Add(uint64(0), uint64(1)<<63)
	f.Add(math.Float64bits(math.Inf(1)), math.Float64bits(math.NaN()))
	f.Fuzz(func(t *testing.T, a, b uint64) {
		x, y := math.Float64frombits(a), math.Float64frombits(b)
		if !sameFloat(fmax(x, y), math.Max(x, y)) || !sameFloat(fmin(x, y), math.Min(x, y)) {
			t.Errorf("fmax/fmin(%#x, %#x) differ from math", a, b)
		}
	})
}
