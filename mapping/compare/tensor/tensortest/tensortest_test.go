package tensortest

import (
	"math"
	"testing"

	_ "github.com/layermap/layermap/printparse/testkit" // the -update flag of go test ./... -update
)

// HalfBits against known binary16 encodings, including subnormals, and its
// refusal of values float16 cannot hold.
func TestHalfBits(t *testing.T) {
	tests := []struct {
		v    float64
		want uint16
		bad  bool
	}{
		{v: 0, want: 0},
		{v: math.Copysign(0, -1), want: 0x8000},
		{v: 1, want: 0x3c00},
		{v: -2, want: 0xc000},
		{v: 65504, want: 0x7bff},
		{v: math.Ldexp(1, -14), want: 0x0400},
		{v: math.Ldexp(1, -24), want: 0x0001},
		{v: math.Ldexp(1023, -24), want: 0x03ff},
		{v: math.Inf(1), want: 0x7c00},
		{v: 0.1, bad: true},
		{v: 65536, bad: true},
		{v: math.Ldexp(1, -25), bad: true},
	}
	for _, tc := range tests {
		h, err := HalfBits(tc.v)
		if tc.bad {
			if err == nil {
				t.Errorf("HalfBits(%v) = %#04x, want an error", tc.v, h)
			}
			continue
		}
		if err != nil || h != tc.want {
			t.Errorf("HalfBits(%v) = %#04x, %v; want %#04x", tc.v, h, err, tc.want)
		}
	}
}
