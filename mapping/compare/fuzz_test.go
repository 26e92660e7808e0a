package compare

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/layermap/layermap/printparse/source"
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
