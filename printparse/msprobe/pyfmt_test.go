package msprobe

import (
	"bufio"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestPyFloatMatchesCPython compares AppendPyFloat with repr() output
// recorded from CPython (testdata/pyfloat.txt: edge cases and random bit
// patterns).
func TestPyFloatMatchesCPython(t *testing.T) {
	f, err := os.Open("testdata/pyfloat.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		bits, want, _ := strings.Cut(line, " ")
		u, err := strconv.ParseUint(bits, 16, 64)
		if err != nil {
			t.Fatal(err)
		}
		v := math.Float64frombits(u)
		if got := PyFloat(v); got != want {
			t.Errorf("PyFloat(%v) = %q, CPython %q", v, got, want)
		}
		n++
	}
	if n < 3000 {
		t.Fatalf("only %d values read", n)
	}
	for v, want := range map[float64]string{math.NaN(): "nan", math.Inf(1): "inf", math.Inf(-1): "-inf"} {
		if got := PyFloat(v); got != want {
			t.Errorf("PyFloat(%v) = %q", v, got)
		}
	}
}

func TestPyReprMatchesCPython(t *testing.T) {
	for _, c := range cpythonPairs(t, "testdata/pyrepr.txt") {
		if got := string(AppendPyRepr(nil, c[0])); got != c[1] {
			t.Errorf("repr(%q) = %s, CPython %s", c[0], got, c[1])
		}
	}
}

// cpythonPairs reads a file of what CPython wrote: after a header line,
// per line a JSON string, a tab and the JSON string CPython made of it.
func cpythonPairs(t *testing.T, file string) [][2]string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var pairs [][2]string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n")[1:] {
		in, out, _ := strings.Cut(line, "\t")
		var p [2]string
		if err := json.Unmarshal([]byte(in), &p[0]); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(out), &p[1]); err != nil {
			t.Fatal(err)
		}
		pairs = append(pairs, p)
	}
	return pairs
}

// TestJSONStringMatchesCPython compares AppendJSONString with json.dumps
// output recorded from CPython (testdata/pyjsonstr.txt: escapes, control
// characters, non-ASCII, astral characters, random mixes).
func TestJSONStringMatchesCPython(t *testing.T) {
	pairs := cpythonPairs(t, "testdata/pyjsonstr.txt")
	if len(pairs) < 50 {
		t.Fatalf("only %d cases read", len(pairs))
	}
	for _, c := range pairs {
		if got := string(AppendJSONString([]byte("x"), c[0])); got != "x"+c[1] {
			t.Errorf("json.dumps(%q) = %s, CPython %s", c[0], got[1:], c[1])
		}
	}
}

// TestJSONStringRoundTrip: on any bytes, AppendJSONString writes
// printable ASCII only, which a JSON decoder reads back as the string with
// each invalid UTF-8 byte as U+FFFD.
func TestJSONStringRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		b := make([]byte, rng.IntN(24))
		for i := range b {
			switch rng.IntN(4) {
			case 0:
				b[i] = byte(rng.IntN(256))
			default:
				b[i] = byte(' ' + rng.IntN(95))
			}
		}
		s := string(b)
		out := AppendJSONString(nil, s)
		for _, c := range out {
			if c < ' ' || c > '~' {
				t.Fatalf("%q written as %q: byte %#x", s, out, c)
			}
		}
		var back string
		if err := json.Unmarshal(out, &back); err != nil || back != string([]rune(s)) {
			t.Fatalf("%q written as %s, read back as %q (%v)", s, out, back, err)
		}
	}
}

// TestJSONPlain8: the eight-byte test agrees with the byte test on every
// byte value at every position, beside plain bytes and random ones.
func TestJSONPlain8(t *testing.T) {
	plain := func(c byte) bool { return c >= ' ' && c <= '~' && c != '"' && c != '\\' }
	check := func(w [8]byte) {
		want := true
		for _, c := range w {
			want = want && plain(c)
		}
		if got := jsonPlain8(load8(string(w[:]))); got != want {
			t.Fatalf("jsonPlain8(%q) = %v, want %v", w[:], got, want)
		}
	}
	for c := range 256 {
		for at := range 8 {
			w := [8]byte{'a', 'a', 'a', 'a', 'a', 'a', 'a', 'a'}
			w[at] = byte(c)
			check(w)
			w = [8]byte{' ', '~', '!', '#', '[', ']', '}', 0x7e}
			w[at] = byte(c)
			check(w)
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 100000 {
		var w [8]byte
		for i := range w {
			w[i] = byte(rng.IntN(256))
			if rng.IntN(3) > 0 {
				w[i] = byte(' ' + rng.IntN(95))
			}
		}
		check(w)
	}
}

// BenchmarkAppendJSONString writes stack frames as -da's JSON does.
func BenchmarkAppendJSONString(b *testing.B) {
	s := "File /usr/lib/python3/dist-packages/torch/nn/modules/module.py, line 1212, in _call_impl, \n result = forward_call(*input, **kwargs)"
	b.SetBytes(int64(len(s)))
	var buf []byte
	for i := 0; i < b.N; i++ {
		buf = AppendJSONString(buf[:0], s)
	}
}

func TestValuePyStr(t *testing.T) {
	tests := []struct {
		v     Value
		want  string
		isInt bool
	}{
		{Value{Kind: Null}, "None", false},
		{Value{Kind: Bool, Bool: true}, "True", false},
		{Value{Kind: Bool}, "False", false},
		{Value{Kind: Number, Num: 3, Text: "3"}, "3", true},
		{Value{Kind: Number, Num: 0, Text: "-0"}, "0", true},
		{Value{Kind: Number, Num: 3, Text: "3.0"}, "3.0", false},
		{Value{Kind: Number, Num: 100000, Text: "1E5"}, "100000.0", false},
		{Value{Kind: Number, Num: 0.04065797850489616, Text: "0.040657978504896164"}, "0.04065797850489616", false},
		{Value{Kind: Number, Num: 1e-6, Text: "0.000001"}, "1e-06", false},
		{Value{Kind: PosInf, Num: math.Inf(1), Text: "1e400"}, "inf", false},
		{Value{Kind: PosInf, Num: math.Inf(1), Text: "Infinity"}, "inf", false},
		{Value{Kind: NegInf, Num: math.Inf(-1), Text: "-Infinity"}, "-inf", false},
		{Value{Kind: NaN, Num: math.NaN(), Text: "NaN"}, "nan", false},
		{Value{Kind: Number, Num: 1e30, Text: "1000000000000000000000000000000"}, "1000000000000000000000000000000", true},
		{Value{Kind: String, Text: "..."}, "...", false},
		{Value{Kind: Composite, Text: "[0, 2, None]"}, "[0, 2, None]", false},
	}
	for _, tt := range tests {
		if got := tt.v.PyStr(); got != tt.want || tt.v.IsInt() != tt.isInt {
			t.Errorf("%+v: PyStr %q IsInt %v, want %q %v", tt.v, got, tt.v.IsInt(), tt.want, tt.isInt)
		}
	}
}

// TestParseNumber checks the fast path against strconv on the CPython
// corpus values (as written by repr) and on edge literals.
func TestParseNumber(t *testing.T) {
	data, err := os.ReadFile("testdata/pyfloat.txt")
	if err != nil {
		t.Fatal(err)
	}
	lits := []string{"0", "-0", "0.0", "-0.0", "1", "123456789012345", "1234567890123456", "0.1", "0.000000000000000000000001",
		"999999999999999.9", "0.4993983507156372", "1e-06", "1E5", "12345678901234567890", "-7.441285561071709e-05", "1.5"}
	for _, line := range strings.Split(string(data), "\n") {
		if _, lit, ok := strings.Cut(line, " "); ok && !strings.HasPrefix(line, "#") {
			lits = append(lits, lit)
		}
	}
	for _, lit := range lits {
		want, _ := strconv.ParseFloat(lit, 64)
		if got := parseNumber([]byte(lit)); math.Float64bits(got) != math.Float64bits(want) {
			t.Errorf("parseNumber(%s) = %v, want %v", lit, got, want)
		}
	}
}

func TestPyFloatCases(t *testing.T) {
	for _, c := range []struct {
		f    float64
		want string
	}{
		{1, "1.0"}, {0, "0.0"}, {math.Copysign(0, -1), "-0.0"}, {1e-5, "1e-05"}, {1.5e-5, "1.5e-05"},
		{0.0001, "0.0001"}, {1e16, "1e+16"}, {1234567890123456, "1234567890123456.0"},
		{0.19999999999999996, "0.19999999999999996"}, {7.441285561071709e-05, "7.441285561071709e-05"},
		{33554432, "33554432.0"}, {1e30, "1e+30"}, {-2.5e-300, "-2.5e-300"}, {5e-324, "5e-324"},
		{math.MaxFloat64, "1.7976931348623157e+308"}, {math.Inf(1), "inf"}, {math.Inf(-1), "-inf"},
		{math.NaN(), "nan"}, {123.456, "123.456"},
	} {
		if got := PyFloat(c.f); got != c.want {
			t.Errorf("PyFloat(%v) = %q, want %q", c.f, got, c.want)
		}
	}
}

func TestPyReprCases(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"a", "'a'"}, {"it's", `"it's"`}, {`a'b"c`, `'a\'b"c'`}, {"x\ny", `'x\ny'`}, {`\`, `'\\'`},
		{"\x01", `'\x01'`}, {"é", "'é'"},
	} {
		if got := string(AppendPyRepr(nil, c.in)); got != c.want {
			t.Errorf("AppendPyRepr(%q) = %s, want %s", c.in, got, c.want)
		}
	}
	if got := PyStrList([]string{"a.pt", "N/A"}); got != "['a.pt', 'N/A']" {
		t.Errorf("PyStrList = %s", got)
	}
	if got := JSONDumps([]string{`error: "x"`, "é"}); got != `["error: \"x\"", "\u00e9"]` {
		t.Errorf("JSONDumps = %s", got)
	}
	if got := JSONDumps(nil); got != "[]" {
		t.Errorf("JSONDumps(nil) = %s", got)
	}
}

func TestPandasCSVFloat(t *testing.T) {
	for _, c := range []struct {
		f    float64
		want string
	}{{math.Inf(1), " inf"}, {math.Inf(-1), " -inf"}, {math.NaN(), ""}, {0.5, "0.5"}, {1e16, "1e+16"}} {
		if got := PandasCSVFloat(c.f); got != c.want {
			t.Errorf("PandasCSVFloat(%v) = %q, want %q", c.f, got, c.want)
		}
	}
}
