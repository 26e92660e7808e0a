package compare

import (
	"math"
	"strconv"
	"strings"

	"github.com/layermap/layermap/printparse/msprobe"
)

// pow10tab holds the exact powers of ten pandas' parser multiplies by.
var pow10tab = func() [309]float64 {
	var t [309]float64
	for i := range t {
		// Correctly rounded, like the C literals pandas' table holds.
		t[i], _ = strconv.ParseFloat("1e"+strconv.Itoa(i), 64)
	}
	return t
}()

// pandasParse parses s the way pandas.to_numeric (pandas 1.2 to 3.0)
// parses a string into a float64: with pandas' precise_xstrtod, which
// keeps at most 17 significant digits (leading zeros after the point
// count) and scales once by a power of ten, so it is not always correctly
// rounded. It reports whether the whole string was a number and whether
// it was an integer literal (to_numeric reads a column of such exactly,
// as int64 or uint64: colRead). "inf", "nan" and their variants are
// accepted as pandas accepts them.
func pandasParse(s string) (v float64, isInt, ok bool) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, false, false
	}
	switch strings.ToLower(t) {
	case "inf", "+inf", "infinity", "+infinity":
		return math.Inf(1), false, true
	case "-inf", "-infinity":
		return math.Inf(-1), false, true
	case "nan", "-nan", "+nan":
		return math.NaN(), false, true
	}
	v, end, maybeInt := xstrtod(t)
	if end != len(t) {
		return 0, false, false
	}
	return v, maybeInt, true
}

// xstrtod is pandas' precise_xstrtod (tokenizer.c) for '.' decimals and
// 'e' exponents, no thousands separator. It returns the value, how many
// bytes it consumed and whether the text had neither a point nor an
// exponent.
func xstrtod[T string | []byte](p T) (float64, int, bool) {
	const maxDigits = 17
	i := 0
	neg := false
	if i < len(p) && (p[i] == '-' || p[i] == '+') {
		neg = p[i] == '-'
		i++
	}
	var kept uint64 // the digits pandas accumulates, as an integer
	exponent := 0
	numDigits := 0
	maybeInt := true
	for i < len(p) && p[i]-'0' <= 9 {
		if numDigits < maxDigits {
			kept = kept*10 + uint64(p[i]-'0')
			numDigits++
		} else {
			exponent++
		}
		i++
	}
	if i < len(p) && p[i] == '.' {
		maybeInt = false
		i++
		// At most the digits left to keep, eight at a time; the rest are
		// dropped.
		j := min(len(p), i+maxDigits-numDigits)
		kept, j = msprobe.Digits(p[:j], i, kept)
		numDigits += j - i
		exponent -= j - i // the decimals kept
		for i = j; i < len(p) && p[i]-'0' <= 9; i++ {
		}
	}
	if numDigits == 0 {
		return 0, 0, false
	}
	number := pandasDigits(kept)
	if neg {
		number = -number
	}
	if i < len(p) && (p[i] == 'e' || p[i] == 'E') {
		maybeInt = false
		j := i + 1
		eneg := false
		if j < len(p) && (p[j] == '-' || p[j] == '+') {
			eneg = p[j] == '-'
			j++
		}
		n, nd := 0, 0
		for nd < maxDigits && j < len(p) && p[j]-'0' <= 9 {
			n = n*10 + int(p[j]-'0')
			nd++
			j++
		}
		if nd > 0 {
			if eneg {
				exponent -= n
			} else {
				exponent += n
			}
			i = j
		}
	}
	switch {
	case exponent > 308:
		if number == 0 {
			return 0, i, maybeInt
		}
		return math.Copysign(math.Inf(1), number), i, maybeInt
	case exponent > 0:
		number *= pow10tab[exponent]
	case exponent < -308:
		if exponent < -616 {
			number = 0
		} else {
			number /= pow10tab[-308-exponent]
			number /= pow10tab[308]
		}
	default:
		number /= pow10tab[-exponent]
	}
	return number, i, maybeInt
}

// reprNumber is xstrtod(t) for t, AppendPyFloat(f) of a finite f: f
// where pandasExact says so; for d.ddd… with at least 16 decimals, the
// 17 digits pandas keeps (the integer digit and 16 decimals) read at
// once and divided by 1e16, as xstrtod does.
func reprNumber[T string | []byte](t T, f float64) float64 {
	d := 0 // the first digit
	if len(t) > 0 && t[0] == '-' {
		d = 1
	}
	if len(t)-d >= 18 && t[d+1] == '.' && t[len(t)-4] != 'e' && t[len(t)-5] != 'e' {
		a, b := t[d+2:d+10], t[d+10:d+18]
		kept := uint64(t[d]-'0')*1e16 +
			msprobe.EightDigits(uint64(a[0])|uint64(a[1])<<8|uint64(a[2])<<16|uint64(a[3])<<24|
				uint64(a[4])<<32|uint64(a[5])<<40|uint64(a[6])<<48|uint64(a[7])<<56)*1e8 +
			msprobe.EightDigits(uint64(b[0])|uint64(b[1])<<8|uint64(b[2])<<16|uint64(b[3])<<24|
				uint64(b[4])<<32|uint64(b[5])<<40|uint64(b[6])<<48|uint64(b[7])<<56)
		v := pandasDigits(kept)
		if d == 1 {
			v = -v
		}
		return v / pow10tab[16]
	}
	if pandasExact(t) {
		return f
	}
	v, _, _ := xstrtod(t)
	return v
}

// pandasExact reports whether xstrtod reads t, AppendPyFloat(f) for a
// finite f, as f: when t has no exponent and xstrtod keeps all its
// digits (at most 17, a leading 0 counted) as an integer of at most 2^53
// and divides it by an exact power of ten (at most 17 decimals), one
// correctly rounded division of exact numbers. A first digit below 9
// keeps 16 digits under 2^53 (9007199254740992); 17 digits need a
// leading 0 too.
func pandasExact[T string | []byte](t T) bool {
	d := 0 // the first digit
	if len(t) > 0 && t[0] == '-' {
		d = 1
	}
	n := len(t) - d - 1 // the digits, but for the point
	if n < 1 || n > 17 || t[d]-'0' > 9 || len(t) >= 4 && t[len(t)-4] == 'e' || len(t) >= 5 && t[len(t)-5] == 'e' {
		return false // an exponent ("e-05", "e+100"), inf, nan
	}
	switch {
	case n <= 15:
		return true
	case n == 16:
		return t[d] <= '8'
	}
	return t[d] == '0' && t[d+2] <= '8' // "0.d..."
}

// pandasDigits is the double pandas' parser accumulates from the digits
// of n, one at a time as number = number*10 + digit in double precision.
// While the digits read so far spell an integer of at most 2^53 every
// step is exact, so only the last one or two of at most 17 digits round.
func pandasDigits(n uint64) float64 {
	const exact = 1 << 53
	switch {
	case n <= exact:
		return float64(n)
	case n/10 <= exact:
		return float64(float64(n/10)*10) + float64(n%10) // no FMA: pandas rounds twice
	}
	x := float64(float64(n/100)*10) + float64(n/10%10)
	return float64(x*10) + float64(n%10)
}
