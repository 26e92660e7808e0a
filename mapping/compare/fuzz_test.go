package compare

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/layermap/layermap/printparse/msprobe"
	"github.com/layermap/layermap/printparse/source"
)

// FuzzPandasParse: the pandas parser never panics, equals the stepwise
// transcription of precise_xstrtod, accepts what Python's float() accepts
// in decimal form, and agrees with correct rounding when the digits fit
// in 15 and the exponent is small (one exact scaling).
func FuzzPandasParse(f *testing.F) {
	for _, s := range []string{"0.040657978504896164", "1e-06", "24", "-1.5", "inf", "nan", "1e400", "0." + "1234567890123456789", "abc", "", "9007199254740993", "0.09007199254740993e3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sameAsStepwise(t, s)
		v, _, ok := pandasParse(s)
		if !ok {
			return
		}
		digits, exp := 0, 0
		for _, c := range s {
			if c >= '0' && c <= '9' {
				digits++
			}
			if c == 'e' || c == 'E' {
				exp = 1
			}
		}
		if digits <= 15 && exp == 0 && len(s) <= 16 {
			want, err := strconv.ParseFloat(s, 64)
			if err == nil && want != v && !(want != want && v != v) {
				t.Errorf("pandasParse(%q) = %v, correctly rounded %v", s, v, want)
			}
		}
	})
}

// fuzzReprs fuzzes check with finite floats, from seeds, and their reprs.
func fuzzReprs(f *testing.F, seeds []float64, check func(t *testing.T, x float64, s string)) {
	for _, v := range seeds {
		f.Add(math.Float64bits(v))
	}
	f.Fuzz(func(t *testing.T, bits uint64) {
		x := math.Float64frombits(bits)
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return
		}
		check(t, x, msprobe.PyFloat(x))
	})
}

// FuzzPandasExact: where pandasExact says so, xstrtod reads the repr of
// a float as that float.
func FuzzPandasExact(f *testing.F) {
	fuzzReprs(f, []float64{0.5638511759507265, 0.9007199254740993, 8.999999999999999, 9.007199254740993,
		0.8999999999999999, 9.784428001659021, 0.9616436223739121, -0.0039335784044209, 5, 1e-05, 1e16, 0, 123.456},
		func(t *testing.T, x float64, s string) {
			if !pandasExact(s) || !pandasExact([]byte(s)) {
				return
			}
			if got, end, _ := xstrtod(s); end != len(s) || math.Float64bits(got) != math.Float64bits(x) {
				t.Fatalf("pandasExact(%q), but xstrtod reads %v (%d bytes)", s, got, end)
			}
		})
}

// FuzzReprNumber: reprNumber reads the repr of any finite float as xstrtod
// does.
func FuzzReprNumber(f *testing.F) {
	fuzzReprs(f, []float64{0.0012850761413574219, -9.007199254740993, 9.999999999999998, 0.9999999999999999,
		1.2345678901234567e-05, 123.45678901234568, 5e-324, 0.5}, checkReprNumber)
}

// FuzzLoadPairs: any file content gives pairs or a one-line error naming
// the file, never a panic.
func FuzzLoadPairs(f *testing.F) {
	f.Add("- npu: a.b\n  bench: c.d\n")
	f.Add("[]")
	f.Add("npu: x")
	f.Add("- npu: [1]\n")
	f.Fuzz(func(t *testing.T, s string) {
		p := filepath.Join(t.TempDir(), "pairs.yaml")
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		ps, err := LoadPairs(p)
		if err != nil {
			return
		}
		for _, x := range ps {
			if x.NPU == "" || x.Bench == "" {
				t.Errorf("empty pair %+v accepted", x)
			}
		}
		if _, err := LoadDataMapping(p); err != nil && err.Error() == "" {
			t.Error("empty error")
		}
	})
}

// FuzzReadCompareJSON: any compare.json gives the three paths or a
// positioned error (a line inside the file), never a panic; a file
// holding more than one JSON value is refused.
func FuzzReadCompareJSON(f *testing.F) {
	f.Add("{\"npu_path\": \"a/dump.json\", \"bench_path\": \"b\", \"stack_path\": \"s\", \"is_print_compare_log\": true}\n")
	f.Add("{\"npu_path\": \"a\", \"bench_path\": \"b\"} {}")
	f.Add("{\"NPU_PATH\": \"a\", \"bench_path\": \"b\"}")
	f.Add("{\"npu_path\": \"\xff\", \"bench_path\": \"b\"}")
	f.Add("[]")
	f.Fuzz(func(t *testing.T, s string) {
		p := filepath.Join(t.TempDir(), "compare.json")
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		_, _, _, err := ReadCompareJSON(p)
		if err == nil {
			var v any
			dec := json.NewDecoder(strings.NewReader(s))
			if dec.Decode(&v) != nil || dec.More() || !utf8.ValidString(s) {
				t.Fatalf("accepted %q", s)
			}
			return
		}
		var se *source.Error
		if !errors.As(err, &se) || se.File != p || se.Line < 0 || se.Line > strings.Count(s, "\n")+1 {
			t.Fatalf("error without its place: %v", err)
		}
	})
}

// FuzzLoadDataMapping: any -dm file gives a map or an error naming it.
func FuzzLoadDataMapping(f *testing.F) {
	f.Add("a.input.0: b.input.0\na.output.0: b.output.0\n")
	f.Add("a: b\na: c\n")
	f.Add("- a\n")
	f.Add("a: [1]\n")
	f.Fuzz(func(t *testing.T, s string) {
		p := filepath.Join(t.TempDir(), "dm.yaml")
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadDataMapping(p); err != nil && !strings.Contains(err.Error(), p) {
			t.Fatalf("error without the file: %v", err)
		}
	})
}

// sameAsStepwise fails t where xstrtod(s) differs from the stepwise
// reference in value bits, bytes consumed or integer-ness.
func sameAsStepwise(t *testing.T, s string) {
	t.Helper()
	v, n, isInt := xstrtod(s)
	w, m, wInt := xstrtodStepwise(s)
	if math.Float64bits(v) != math.Float64bits(w) || n != m || isInt != wInt {
		t.Errorf("xstrtod(%q) = %v (%#x) %d %v, stepwise %v (%#x) %d %v", s, v, math.Float64bits(v), n, isInt, w, math.Float64bits(w), m, wInt)
	}
}

// xstrtodStepwise is pandas' precise_xstrtod as tokenizer.c writes it:
// every digit accumulated in double precision, one rounding per step. It
// is the reference xstrtod must equal bit for bit.
func xstrtodStepwise[T string | []byte](p T) (float64, int, bool) {
	const maxDigits = 17
	i := 0
	neg := false
	if i < len(p) && (p[i] == '-' || p[i] == '+') {
		neg = p[i] == '-'
		i++
	}
	number := 0.0
	exponent := 0
	numDigits := 0
	numDecimals := 0
	maybeInt := true
	isDigit := func(j int) bool { return j < len(p) && p[j] >= '0' && p[j] <= '9' }
	for isDigit(i) {
		if numDigits < maxDigits {
			number = float64(number*10) + float64(p[i]-'0') // no FMA: pandas rounds twice
			numDigits++
		} else {
			exponent++
		}
		i++
	}
	if i < len(p) && p[i] == '.' {
		maybeInt = false
		i++
		for numDigits < maxDigits && isDigit(i) {
			number = float64(number*10) + float64(p[i]-'0') // no FMA: pandas rounds twice
			i++
			numDigits++
			numDecimals++
		}
		if numDigits >= maxDigits {
			for isDigit(i) {
				i++
			}
		}
		exponent -= numDecimals
	}
	if numDigits == 0 {
		return 0, 0, false
	}
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
		for nd < maxDigits && isDigit(j) {
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
