package compare

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// FuzzPandasParse: the pandas parser never panics, accepts what Python's
// float() accepts in decimal form, and agrees with correct rounding when
// the digits fit in 15 and the exponent is small (one exact scaling).
func FuzzPandasParse(f *testing.F) {
	for _, s := range []string{"0.040657978504896164", "1e-06", "24", "-1.5", "inf", "nan", "1e400", "0." + "1234567890123456789", "abc", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
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
