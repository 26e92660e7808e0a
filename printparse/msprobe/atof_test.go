package msprobe

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// checkParseNumber fails t when parseNumber and strconv disagree on lit.
func checkParseNumber(t *testing.T, lit string) {
	t.Helper()
	want, _ := strconv.ParseFloat(lit, 64)
	if got := parseNumber([]byte(lit)); math.Float64bits(got) != math.Float64bits(want) {
		t.Fatalf("parseNumber(%s) = %v (%#x), want %v (%#x)", lit, got, math.Float64bits(got), want, math.Float64bits(want))
	}
	// The fast path's reading, the literal ending the buffer's words anywhere.
	for _, pad := range []string{",", ",      ", ",              "} {
		f := flatter{b: []byte(lit + pad)}
		var n fnum
		if !f.num(&n) || string(n.lit) != lit || f.i != len(lit) {
			t.Fatalf("flatter.num(%s): %v, lit %q", lit, f.i, n.lit)
		}
		if got := n.value(); math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("flatter.num(%s) = %v (%#x), want %v (%#x)", lit, got, math.Float64bits(got), want, math.Float64bits(want))
		}
	}
}

// TestParseNumberRandom checks parseNumber against strconv on random
// doubles printed shortest, with 15 to 19 digits and in every JSON layout,
// on random digit strings with exponents (halfway cases, long mantissas,
// subnormals, overflow) and on the powers of ten of the table's range.
func TestParseNumberRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	n := 200000
	if testing.Short() {
		n = 20000
	}
	for k := 0; k < n; k++ {
		f := math.Float64frombits(r.Uint64())
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		checkParseNumber(t, strconv.FormatFloat(f, 'e', -1, 64))
		checkParseNumber(t, strconv.FormatFloat(f, 'e', 14+r.IntN(6), 64))
		g := r.NormFloat64() * math.Pow(10, float64(r.IntN(40)-20))
		checkParseNumber(t, strconv.FormatFloat(g, 'f', -1, 64))
		checkParseNumber(t, strconv.FormatFloat(g, 'g', 17, 64))
		// Digits and an exponent at random.
		var sb strings.Builder
		if r.IntN(2) == 0 {
			sb.WriteByte('-')
		}
		sb.WriteString(strconv.Itoa(1 + r.IntN(9)))
		if d := r.IntN(22); d > 0 {
			sb.WriteByte('.')
			for range d {
				sb.WriteByte(byte('0' + r.IntN(10)))
			}
		}
		sb.WriteString("e" + strconv.Itoa(r.IntN(700)-350))
		checkParseNumber(t, sb.String())
	}
	for q := -360; q <= 360; q++ {
		checkParseNumber(t, "1e"+strconv.Itoa(q))
		checkParseNumber(t, "9.999999999999999e"+strconv.Itoa(q))
	}
	for _, lit := range []string{"9007199254740993", "9007199254740992", "9007199254740994.5",
		"2.2250738585072011e-308", "2.2250738585072014e-308", "4.9406564584124654e-324", "2.4703282292062327e-324",
		"1.7976931348623157e308", "1.7976931348623159e308", "0.1e-400", "18446744073709551615", "18446744073709551616",
		"1000000000000000000000", "0.00000000000000000000000000000000001", "-0e10", "0e-400", "1E+2", "123.456E-7"} {
		checkParseNumber(t, lit)
	}
}

// FuzzParseNumber: parseNumber agrees with strconv on every JSON number
// literal.
func FuzzParseNumber(f *testing.F) {
	for _, s := range []string{"0", "-0.0", "1.5", "1e-06", "0.4993983507156372", "9007199254740993", "2.2250738585072011e-308"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		lx := newLexer(strings.NewReader(s), "x")
		if c, ok := lx.peek(); !ok || (c != '-' && (c < '0' || c > '9')) {
			return
		}
		lit, kind, err := lx.readNumber(nil)
		if err != nil || kind == numNegInf {
			return
		}
		checkParseNumber(t, string(lit))
	})
}
