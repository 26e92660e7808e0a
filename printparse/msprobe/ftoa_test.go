package msprobe

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// refPyFloat is repr(f) through strconv's shortest 'e' digits laid out
// again: the reference AppendPyFloat is checked against.
func refPyFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case f == 0 && math.Signbit(f):
		return "-0.0"
	case f == 0:
		return "0.0"
	}
	a := math.Abs(f)
	if a < 1e-4 || a >= 1e16 {
		return strconv.FormatFloat(f, 'e', -1, 64)
	}
	s := strconv.FormatFloat(a, 'e', -1, 64)
	n := len(s)
	exp, _ := strconv.Atoi(s[n-3:])
	digits := s[:1]
	if n > 5 {
		digits += s[2 : n-4]
	}
	out := ""
	if f < 0 {
		out = "-"
	}
	switch decpt := exp + 1; {
	case decpt <= 0:
		out += "0." + "0000"[:-decpt] + digits
	case decpt >= len(digits):
		out += digits + "0000000000000000"[:decpt-len(digits)] + ".0"
	default:
		out += digits[:decpt] + "." + digits[decpt:]
	}
	return out
}

func checkPyFloat(t *testing.T, f float64) {
	t.Helper()
	if got, want := PyFloat(f), refPyFloat(f); got != want {
		t.Fatalf("PyFloat(%#x) = %q, want %q", math.Float64bits(f), got, want)
	}
}

// TestPyFloatShortest checks the Dragonbox port against strconv's digits
// on random bit patterns, random magnitudes around the layout switches,
// every power of two (the asymmetric case), integers and subnormals.
func TestPyFloatShortest(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	n := 300000
	if testing.Short() {
		n = 30000
	}
	for k := 0; k < n; k++ {
		checkPyFloat(t, math.Float64frombits(r.Uint64()))
		checkPyFloat(t, r.NormFloat64()*math.Pow(10, float64(r.IntN(44)-22)))
		checkPyFloat(t, float64(float32(r.NormFloat64())))
		checkPyFloat(t, float64(r.Int64N(1<<54)))
		checkPyFloat(t, math.Float64frombits(r.Uint64N(1<<53))) // subnormals and the smallest normals
	}
	for e := -1100; e <= 1024; e++ {
		p := math.Ldexp(1, e)
		checkPyFloat(t, p)
		checkPyFloat(t, math.Nextafter(p, 0))
		checkPyFloat(t, math.Nextafter(p, math.Inf(1)))
	}
	for q := -325; q <= 308; q++ {
		p, _ := strconv.ParseFloat("1e"+strconv.Itoa(q), 64)
		checkPyFloat(t, p)
		checkPyFloat(t, -math.Nextafter(p, 0))
		checkPyFloat(t, math.Nextafter(p, math.Inf(1)))
	}
	for _, f := range []float64{5e-324, math.MaxFloat64, 1e16, 9999999999999998, 1e-4, 0.00009999999999999999, 0.1, 0.3, 2.0 / 3} {
		checkPyFloat(t, f)
	}
}

// TestPow10Table checks entries of the powers-of-ten table against
// strconv's (pow10tab.go) and exactness where 10^q fits 128 bits.
func TestPow10Table(t *testing.T) {
	for _, c := range []struct {
		q      int
		hi, lo uint64
	}{
		{-348, 0xfa8fd5a0081c0288, 0x1732c869cd60e453},
		{-347, 0x9c99e58405118195, 0x0e7fbd42205c8eb4},
		{-327, 0xd43bf0effdc0ba48, 0x0212bd1b2566def2},
		{0, 1 << 63, 0},
		{1, 0xa000000000000000, 0},
		{27, 0xcecb8f27f4200f3a, 0},
	} {
		if got := pow10x128[c.q-minPow10]; got != [2]uint64{c.hi, c.lo} {
			t.Errorf("10^%d: %#x, want %#x %#x", c.q, got, c.hi, c.lo)
		}
	}
}

// FuzzPyFloatShortest: AppendPyFloat's digits are strconv's shortest.
func FuzzPyFloatShortest(f *testing.F) {
	for _, v := range []float64{1, 0.1, 1e-5, 1e16, 5e-324, math.MaxFloat64, 0.3} {
		f.Add(math.Float64bits(v))
	}
	f.Fuzz(func(t *testing.T, b uint64) { checkPyFloat(t, math.Float64frombits(b)) })
}

// TestAppendDigits checks the block writer against strconv around every
// power of ten and on random values.
func TestAppendDigits(t *testing.T) {
	check := func(x uint64) {
		var buf [20]byte
		i := appendDigits(&buf, x)
		if got, want := string(buf[i:]), strconv.FormatUint(x, 10); got != want {
			t.Fatalf("appendDigits(%d) = %q", x, got)
		}
	}
	for p := uint64(1); p < 1e19; p *= 10 {
		check(p - 1)
		check(p)
		check(p + 1)
	}
	check(math.MaxUint64)
	r := rand.New(rand.NewPCG(7, 8))
	for range 100000 {
		check(r.Uint64() >> r.IntN(64))
	}
}
