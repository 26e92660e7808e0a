package compare

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/layermap/layermap/printparse/msprobe"
	"github.com/layermap/layermap/printparse/testkit"
)

// TestPandasParse checks the pandas precise_xstrtod emulation on the
// spec's examples: digits past the 17th (leading zeros after the point
// count) are ignored, so two different texts can parse to one double.
func TestPandasParse(t *testing.T) {
	a, _, ok1 := pandasParse("0.04065797850489616")
	b, _, ok2 := pandasParse("0.040657978504896164")
	if !ok1 || !ok2 || a != b {
		t.Errorf("pandas parses %v and %v; want equal", a, b)
	}
	// quick_start golden Functional.batch_norm.0.forward.input.1: 0.0 vs this value
	d, _ := statDiff(cell{k: cFloat, f: 0}, cell{k: cFloat, f: 0.040657978504896164}, colRead{})
	if d != "-0.0406579785048961" {
		t.Errorf("diff = %s, want -0.0406579785048961", d)
	}
	for _, c := range []struct {
		in    string
		v     float64
		isInt bool
		ok    bool
	}{
		{"24", 24, true, true}, {"-1", -1, true, true}, {"1.0", 1, false, true}, {"1e-06", 1e-6, false, true},
		{"inf", math.Inf(1), false, true}, {"-inf", math.Inf(-1), false, true}, {"abc", 0, false, false},
		{"1.5x", 0, false, false}, {"", 0, false, false}, {" 2 ", 2, true, true},
	} {
		v, isInt, ok := pandasParse(c.in)
		if ok != c.ok || (ok && (v != c.v || isInt != c.isInt)) {
			t.Errorf("pandasParse(%q) = %v %v %v, want %v %v %v", c.in, v, isInt, ok, c.v, c.isInt, c.ok)
		}
	}
}

// TestXstrtodStepwise compares xstrtod with the stepwise transcription of
// precise_xstrtod on the edges of its shortcuts (the 2^53 limit of exact
// accumulation, the eight-digit reads, the 17-digit cap) and on random
// decimal texts.
func TestXstrtodStepwise(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		"9007199254740992", "9007199254740993", "9007199254740994", "90071992547409921", "90071992547409929",
		"99999999999999999", "999999999999999999999", "0.9007199254740993", "0.09007199254740993",
		"0.00000000000000000001234", "12345678.123456789", "1.12345678", "1.1234567", "0.123456781234567812",
		"-0.0", "+1.5", ".5", "5.", "1e", "1e+", "1.5e-320", "1e308", "1e309", "0.1e310", "123456789012345678e-30",
		"1.3220384565547094", "-0.04181459722050355", "2.6880842344752622", "0.052555057858275835", "1.0e-05",
	} {
		sameAsStepwise(t, s)
	}
	rng := rand.New(rand.NewPCG(13, 17))
	digits := func(b []byte, n int) []byte {
		nines := rng.IntN(4) == 0 // runs of nines carry the most
		for range n {
			if nines {
				b = append(b, '9')
			} else {
				b = append(b, byte('0'+rng.IntN(10)))
			}
		}
		return b
	}
	var b []byte
	for range 200000 {
		b = b[:0]
		switch rng.IntN(4) {
		case 0:
			b = append(b, '-')
		case 1:
			b = append(b, '+')
		}
		b = digits(b, rng.IntN(20))
		if rng.IntN(4) != 0 {
			b = append(b, '.')
			b = digits(b, rng.IntN(26))
		}
		if rng.IntN(3) == 0 {
			b = append(b, "eE"[rng.IntN(2)])
			b = append(b, "+-"[rng.IntN(2)])
			b = digits(b, rng.IntN(4))
		}
		sameAsStepwise(t, string(b))
		if t.Failed() {
			return
		}
	}
}

func num(text string, f float64) cell {
	return fromValue(msprobe.Value{Kind: msprobe.Number, Num: f, Text: text})
}

// TestIsIntLiteral checks isIntLiteral against a byte-by-byte reading of
// its definition (digits, a sign first) on every text of up to four
// bytes over digits, signs and their neighbours.
func TestIsIntLiteral(t *testing.T) {
	ref := func(s string) bool {
		if s == "" {
			return false
		}
		for i := 0; i < len(s); i++ {
			c := s[i]
			if (c < '0' || c > '9') && !(i == 0 && (c == '-' || c == '+')) {
				return false
			}
		}
		return true
	}
	alphabet := []byte{'0', '5', '9', '-', '+', '.', 'e', '/', ':', ' ', 0, 0x80, 0xff}
	var walk func(s []byte)
	walk = func(s []byte) {
		if got, want := isIntLiteral(string(s)), ref(string(s)); got != want {
			t.Fatalf("isIntLiteral(%q) = %v, want %v", s, got, want)
		}
		if len(s) == 4 {
			return
		}
		for _, c := range alphabet {
			walk(append(s, c))
		}
	}
	walk(nil)
}

func TestStatDiff(t *testing.T) {
	str := func(s string) cell { return cell{k: cStr, s: s} }
	i64, u64 := colRead{readInt64, readInt64}, colRead{readUint64, readUint64}
	for _, c := range []struct {
		name string
		a, b cell
		rd   colRead
		d, r string
	}{
		{"relu l2norm", num("1.2", 1.2), num("1.0", 1.0), colRead{}, "0.19999999999999996", "19.999999999999996%"},
		{"int scalars", num("0", 0), num("1", 1), colRead{}, "-1.0", "100.0%"},
		{"int column", num("0", 0), num("1", 1), i64, "-1", "100.0%"},
		{"int64 wraps", num("-9223372036854775808", -9223372036854775808), num("1", 1), i64, "9223372036854775807", "9.223372036854776e+20%"},
		{"uint64 column", num("9223372036854775808", 9223372036854775808), num("9223372036854775809", 9223372036854775809), u64,
			"18446744073709551615", "200.0%"},
		{"uint64 beside int64", num("9007199254740993", 9007199254740993), num("18446744073709551615", 18446744073709551615),
			colRead{readInt64, readUint64}, "-1.843773687445481e+19", "99.951171875%"},
		// an int past uint64 is read by xstrtod, which is not correctly rounded
		{"past uint64", num("99999999999999999999", 1e20), num("1", 1), colRead{}, "1.0000000000000002e+20", "1.0000000000000002e+22%"},
		{"wide int64 beside floats", num("9007199254740993", 9007199254740993), num("0.5", 0.5), colRead{npu: readInt64}, "9007199254740992.0", "1.8014398509481984e+18%"},
		{"1 vs 1.0", num("1", 1), num("1.0", 1), colRead{}, "0.0", "0.0%"},
		{"-inf vs -20", cell{k: cFloat, f: math.Inf(-1)}, num("-20.0", -20), colRead{}, "-inf", "-inf"},
		{"inf vs 21", cell{k: cFloat, f: math.Inf(1)}, num("21.0", 21), colRead{}, "inf", "inf"},
		{"bench zero", num("2.0", 2), num("0.0", 0), colRead{}, "2.0", "inf"},
		{"bools", cell{k: cBool, b: true}, cell{k: cBool}, colRead{}, "Diff", "Diff"},
		{"strings", str("sum"), str("mean"), colRead{}, "Diff", "Diff"},
		{"devices", str("npu:0"), str("cuda:0"), colRead{}, "N/A", "N/A"},
		{"nan both", cell{k: cNaN}, cell{k: cNaN}, colRead{}, "0", "0"},
		{"nan vs num", cell{k: cNaN}, num("1.0", 1), colRead{}, "Nan", "Nan"},
		{"unmatched", num("1.0", 1), naCell, colRead{}, "N/A", "N/A"},
		{"None equal", cell{k: cNone}, cell{k: cNone}, colRead{}, "0", "0"},
		{"numeric string", str("1.5"), num("1.0", 1), colRead{}, "0.5", "50.0%"},
		{"string inf", str("Inf"), num("21.0", 21), colRead{}, "inf", "inf"},
		{"string -inf", str("-INF"), num("21.0", 21), colRead{}, "-inf", "-inf"},
		{"string True", str("True"), num("1.0", 1), colRead{}, "Diff", "Diff"},
		{"string N/A", str("N/A"), num("1.0", 1), colRead{}, "N/A", "N/A"},
		// two floats skip classify only when both are finite
		{"float nan vs float", cell{k: cFloat, f: math.NaN()}, num("1.0", 1), colRead{}, "Nan", "Nan"},
		{"float vs float nan", num("1.0", 1), cell{k: cFloat, f: math.NaN()}, colRead{}, "Nan", "Nan"},
		{"float nans", cell{k: cFloat, f: math.NaN()}, cell{k: cFloat, f: math.NaN()}, colRead{}, "Nan", "Nan"},
		{"float vs float inf", num("1.0", 1), cell{k: cFloat, f: math.Inf(1)}, colRead{}, "-inf", "-inf"},
		{"-inf vs inf", cell{k: cFloat, f: math.Inf(-1)}, cell{k: cFloat, f: math.Inf(1)}, colRead{}, "-inf", "-inf"},
		{"inf vs inf", cell{k: cFloat, f: math.Inf(1)}, cell{k: cFloat, f: math.Inf(1)}, colRead{}, "0", "0"},
		{"floats", num("0.5", 0.5), num("0.25", 0.25), colRead{}, "0.25", "100.0%"},
	} {
		d, r := statDiff(c.a, c.b, c.rd)
		if d != c.d || r != c.r {
			t.Errorf("%s: got %s / %s, want %s / %s", c.name, d, r, c.d, c.r)
		}
		if needsQuote(d) || needsQuote(r) {
			t.Errorf("%s: %q / %q would need CSV quoting (render writes diffs plain)", c.name, d, r)
		}
	}
}

// TestIntEqualsFloat: Python's int == float, exact past 2^53 (each case
// checked in Python).
func TestIntEqualsFloat(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		i    string
		f    float64
		want bool
	}{
		{"3", 3, true},
		{"3", 3.5, false},
		{"0", math.Copysign(0, -1), true},
		{"9007199254740992", 9007199254740992, true},
		{"9007199254740993", 9007199254740992, false}, // 2^53+1 rounds to 2^53 as a float
		{"-9223372036854775808", -9223372036854775808, true},
		{"18446744073709551616", 18446744073709551616, true},
		{"100000000000000000000", 1e20, true},
		{"99999999999999999999", 1e20, false},
		{"1", math.NaN(), false},
		{"1", math.Inf(1), false},
	} {
		if got := intEqualsFloat(tc.i, tc.f); got != tc.want {
			t.Errorf("intEqualsFloat(%s, %v) = %v, want %v", tc.i, tc.f, got, tc.want)
		}
	}
}

// TestStatDiffColumns: how pandas reads a statistics column for the
// diff follows from the whole column (to_numeric of its str: int64,
// uint64 or float64), not from the cell. The expected cells were checked
// with pandas 1.5.3: each side's four columns assigned from the rows'
// lists, as msprobe does, then to_numeric(col.astype(str)) and
// msprobe's NUM×NUM rule (diff, then |diff / bench × 100|).
func TestStatDiffColumns(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		npu, bench []string // each row's four statistics, as JSON numbers
		want       []string // each row's Max diff and MaxRelativeErr
	}{
		{"uint64 both", []string{"9223372036854775808", "1"}, []string{"9223372036854775809", "3"},
			[]string{"18446744073709551615", "200.0%", "18446744073709551614", "6.148914691236516e+20%"}},
		// a JSON -0 is Python's int 0, not a negative int beside 2^63
		{"uint64 with -0", []string{"9223372036854775808", "-0"}, []string{"9223372036854775809", "1"},
			[]string{"18446744073709551615", "200.0%", "18446744073709551615", "1.8446744073709552e+21%"}},
		{"int64 beside uint64", []string{"9007199254740993", "2"}, []string{"18446744073709551615", "1"},
			[]string{"-1.843773687445481e+19", "99.951171875%", "1.0", "100.0%"}},
		// both wide: each converted to float64 exactly once, not read by xstrtod
		{"uint64 beside wide int64", []string{"9223372036854775810", "9223372036854775811"}, []string{"-9007199254740992", "9007199254740994"},
			[]string{"9.232379236109517e+18", "102500.0%", "9.214364837600035e+18", "102299.99999999997%"}},
		// object column, read by xstrtod, which is not correctly rounded
		{"past int64 beside a negative", []string{"9223372036854775808", "-1"}, []string{"1", "1"},
			[]string{"9.223372036854778e+18", "9.223372036854778e+20%", "-2.0", "200.0%"}},
		{"past uint64", []string{"18446744073709551616", "5"}, []string{"1", "2"},
			[]string{"1.8446744073709552e+19", "1.8446744073709552e+21%", "3.0", "150.0%"}},
		{"wide int64 both", []string{"9007199254740993", "1"}, []string{"1", "9007199254740993"},
			[]string{"9007199254740992", "9.007199254740992e+17%", "-9007199254740992", "100.0%"}},
		{"wide int64 beside floats", []string{"9007199254740993", "2"}, []string{"0.5", "1.5"},
			[]string{"9007199254740992.0", "1.8014398509481984e+18%", "0.5", "33.33333333333333%"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			for side, vals := range map[string][]string{"npu": tc.npu, "bench": tc.bench} {
				data := make([]string, len(vals))
				for i, v := range vals {
					data[i] = fmt.Sprintf(`"Torch.add.%d.forward": {"input_args": [{"type": "torch.Tensor", "dtype": "torch.int64", "shape": [2], "Max": %s, "Min": %[2]s, "Mean": %[2]s, "Norm": %[2]s}], "input_kwargs": {}, "output": []}`, i, v)
				}
				testkit.DumpDir(t, dir, side, strings.Join(data, ", "))
			}
			rep, err := Run(Options{Target: filepath.Join(dir, "npu"), Golden: filepath.Join(dir, "bench"), OutDir: filepath.Join(dir, "out")})
			if err != nil {
				t.Fatal(err)
			}
			rows := testkit.ReadCSV(t, rep.Ranks[0].Files[0])
			d, r := slices.Index(rows[0], "Max diff"), slices.Index(rows[0], "MaxRelativeErr")
			var got []string
			for _, row := range rows[1:] {
				got = append(got, row[d], row[r])
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("Max diff, MaxRelativeErr by row: %q, want %q", got, tc.want)
			}
		})
	}
}

func TestRenameAPI(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"Functional.relu.2.forward.input.0", "Functional.relu.forward.input.0"},
		{"Module.fc.Linear.forward.0.input.0", "Module.fc.forward.0.input.0"},
		{"Functional.relu.2.backward.output.0", "Functional.relu.backward.output.0"},
		{"Module.fc.Linear.parameters_grad.weight", "Module.fc.Linear.parameters_grad.weight"},
		// the substring rule: "feedforward" holds "forward"
		{"Module.feedforward.Linear.forward.0.input.0", "Module.forward.Linear."},
		{"Module.feedforward.forward.0.input.0", "Module.forward."},
		{"forward", ".forward"},
		{"x.backward.forward.1", "x.forward.1"},
		{"a.b.backward.0.backward.1", "a.backward.0."},
		{"nodirection.0.input.0", "nodirection.0.input.0"},
	} {
		if got := renameAPI(c.in); got != c.want {
			t.Errorf("renameAPI(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestBackwardRenumbering(t *testing.T) {
	k := newKeyNamer(true, false)
	names := []string{"Functional.relu.3.backward", "Functional.relu.2.backward", "Module.fc.Linear.backward.5",
		"Functional.relu.7.forward"}
	want := []string{"Functional.relu.0.backward.input.0", "Functional.relu.1.backward.input.0",
		"Module.fc.Linear.backward.0.input.0", "Functional.relu.7.forward.input.0"}
	for i, n := range names {
		ek, ok := k.entryKey(n)
		if !ok {
			t.Fatalf("%s skipped", n)
		}
		if got := ek.key(n, n+".input.0"); got != want[i] {
			t.Errorf("%s: key %s, want %s", n, got, want[i])
		}
	}
	if _, ok := k.entryKey("Tensor.weird_entry"); ok {
		t.Error("Tensor.weird_entry should be skipped")
	}
}

func TestDtypeGate(t *testing.T) {
	for _, c := range []struct {
		a, b  string
		cross bool
		want  bool
	}{
		{"torch.float16", "torch.float32", false, true}, {"torch.int32", "torch.int64", false, false},
		{"Float16", "BFloat16", false, true}, {"Int32", "torch.int64", true, true},
		{"Int32", "torch.int64", false, false}, {"BFloat16", "torch.bfloat16", true, true},
		{"Float32", "torch.float32", false, false},
	} {
		if got := dtypeMatch(c.a, c.b, c.cross); got != c.want {
			t.Errorf("dtypeMatch(%s, %s, %v) = %v", c.a, c.b, c.cross, got)
		}
	}
}

func TestCSVField(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"a", "a"}, {" inf", " inf"}, {"[2, 3]", `"[2, 3]"`}, {`["x"]`, `"[""x""]"`}, {"a\nb", "\"a\nb\""}, {"", ""},
	} {
		if got := string(appendCSVField(nil, c.in)); got != c.want {
			t.Errorf("csv(%q) = %s, want %s", c.in, got, c.want)
		}
	}
}

// memSource serves hand-built entries.
func memSource(entries ...msprobe.Entry) Source {
	return func(yield func(*msprobe.Entry) error) error {
		for i := range entries {
			e := entries[i]
			if err := yield(&e); err != nil {
				return err
			}
		}
		return nil
	}
}

// namesSource serves entries with these names and no rows.
func namesSource(names ...string) Source {
	entries := make([]msprobe.Entry, len(names))
	for i, n := range names {
		entries[i].Name = n
	}
	return memSource(entries...)
}

// scanSource serves the entries of a dump.json, scanned.
func scanSource(path string) Source {
	return func(yield func(*msprobe.Entry) error) error {
		_, err := msprobe.ScanFile(path, yield)
		return err
	}
}

func tensorEntry(name string, rows ...string) msprobe.Entry {
	e := msprobe.Entry{Name: name}
	for _, r := range rows {
		e.Items = append(e.Items, msprobe.Item{Name: name + r, Entry: name, Dtype: "torch.float32", Shape: "[2]",
			RequiresGrad: "False", Stats: [4]msprobe.Value{{Kind: msprobe.Number, Num: 1, Text: "1.0"},
				{Kind: msprobe.Number, Num: 0, Text: "0.0"}, {Kind: msprobe.Number, Num: 0.5, Text: "0.5"},
				{Kind: msprobe.Number, Num: 1, Text: "1.0"}}})
	}
	return e
}

type memSink struct {
	header []string
	rows   [][]string
}

func (m *memSink) Header(c []string) error { m.header = c; return nil }
func (m *memSink) Row(cells []Cell, _ RowMark) error {
	r := make([]string, len(cells))
	for i, c := range cells {
		r[i] = c.Text
	}
	m.rows = append(m.rows, r)
	return nil
}
func (m *memSink) Reset() error { m.rows = nil; return nil }

// TestFuzzyStatistics: in statistics mode msprobe's fuzzy match is broken
// (every row comes out unmatched); ours pairs rows whose names agree
// without call indices, in order.
func TestFuzzyStatistics(t *testing.T) {
	npu := memSource(tensorEntry("Functional.relu.5.forward", ".input.0", ".output.0"),
		tensorEntry("NPU.npu_only.0.forward", ".input.0"),
		tensorEntry("Functional.gelu.3.forward", ".input.0", ".output.0"))
	bench := memSource(tensorEntry("Functional.relu.0.forward", ".input.0", ".output.0"),
		tensorEntry("Functional.gelu.0.forward", ".input.0", ".output.0"))
	var s memSink
	sum, err := Compare(npu, bench, Config{Mode: Statistics, Fuzzy: true}, &s)
	if err != nil {
		t.Fatal(err)
	}
	want := [][2]string{
		{"Functional.relu.5.forward.input.0", "Functional.relu.0.forward.input.0"},
		{"Functional.relu.5.forward.output.0", "Functional.relu.0.forward.output.0"},
		{"NPU.npu_only.0.forward.input.0", "N/A"},
		{"Functional.gelu.3.forward.input.0", "Functional.gelu.0.forward.input.0"},
		{"Functional.gelu.3.forward.output.0", "Functional.gelu.0.forward.output.0"},
	}
	if len(s.rows) != len(want) {
		t.Fatalf("%d rows, want %d: %v", len(s.rows), len(want), s.rows)
	}
	for i, w := range want {
		if s.rows[i][0] != w[0] || s.rows[i][1] != w[1] {
			t.Errorf("row %d: %s -> %s, want %s -> %s", i, s.rows[i][0], s.rows[i][1], w[0], w[1])
		}
	}
	if sum.MatchedBy["fuzzy"] != 4 || sum.NPUUnmatched != 1 {
		t.Errorf("summary %+v", sum)
	}
}

// TestPairs: explicit pairs override names and count as their own source.
func TestPairsOverride(t *testing.T) {
	npu := memSource(tensorEntry("Module.a.X.forward.0", ".input.0", ".output.0"))
	bench := memSource(tensorEntry("Module.b.Y.forward.0", ".input.0", ".output.0"))
	var s memSink
	sum, err := Compare(npu, bench, Config{Mode: Statistics, Pairs: map[string]string{
		"Module.a.X.forward.0.input.0": "Module.b.Y.forward.0.input.0"}}, &s)
	if err != nil {
		t.Fatal(err)
	}
	if s.rows[0][1] != "Module.b.Y.forward.0.input.0" || s.rows[1][1] != "N/A" {
		t.Errorf("rows %v", s.rows)
	}
	if sum.MatchedBy["pairs"] != 1 || sum.BenchUnmatched != 1 {
		t.Errorf("summary %+v", sum)
	}
}

// TestNoBenchDowncast: pandas turns ints into floats in the unmatched rows'
// stat columns when those columns hold only numbers (golden synth_statistics
// Torch.sum.0.forward.output.0 prints 24.0 for 24); one pass finds it and
// the table is rewritten.
func TestNoBenchDowncast(t *testing.T) {
	e1 := tensorEntry("Torch.sum.0.forward", ".output.0")
	for i := range e1.Items[0].Stats {
		e1.Items[0].Stats[i] = msprobe.Value{Kind: msprobe.Number, Num: 24, Text: "24"}
	}
	e2 := tensorEntry("Torch.other.0.forward", ".output.0")
	var s memSink
	if _, err := Compare(memSource(e1, e2), memSource(), Config{Mode: Statistics}, &s); err != nil {
		t.Fatal(err)
	}
	if got := s.rows[0][16]; got != "24.0" {
		t.Errorf("NPU max %q, want 24.0", got)
	}
}

// TestBenchStore: rows come back from the packed store as they went in,
// duplicate keys keep file order, unknown keys find nothing.
func TestBenchStore(t *testing.T) {
	b := newBenchSide(MD5)
	e := tensorEntry("Functional.relu.3.backward", ".input.0", ".output.0")
	e.Items[0].MD5 = "deadbeef"
	e.Items[0].Stats[2] = msprobe.Value{Kind: msprobe.String, Text: "npu:0"}
	e.Items[1].Stats[0] = msprobe.Value{Kind: msprobe.Number, Num: 24, Text: "24"}
	rows := []sideRow{{it: e.Items[0], key: "Functional.relu.0.backward.input.0"}, {it: e.Items[1], key: e.Items[1].Name},
		{it: e.Items[1], key: e.Items[1].Name}}
	entry := b.addEntry(e.Name)
	for i := range rows {
		b.add(&rows[i], entry)
	}
	if got := b.lookup("Functional.relu.0.backward.input.0"); len(got) != 1 || got[0] != 0 {
		t.Errorf("lookup renumbered key: %v", got)
	}
	if got := b.lookup(e.Items[1].Name); len(got) != 2 || got[0] != 1 || got[1] != 2 {
		t.Errorf("lookup duplicate key: %v", got)
	}
	if got := b.lookup("nothing"); len(got) != 0 {
		t.Errorf("lookup unknown key: %v", got)
	}
	r := b.row(0)
	want := e.Items[0]
	want.Stats[0].Text, want.Stats[1].Text, want.Stats[3].Text = "", "", "" // floats keep no text
	if r.it.Name != want.Name || r.it.MD5 != "deadbeef" || r.it.Stats != want.Stats || r.it.Dtype != want.Dtype ||
		r.it.Entry != e.Name || r.key != "Functional.relu.0.backward.input.0" {
		t.Errorf("row 0 = %+v", r)
	}
	if r := b.row(1); r.it.Stats[0].Text != "24" || r.key != e.Items[1].Name {
		t.Errorf("row 1 = %+v", r)
	}
}

func TestHighlightTensor(t *testing.T) {
	mk := func(name string, cos, maxAbs, thousandth float64) *outRow {
		e := tensorEntry("Functional.linear.0.forward", name)
		r := &outRow{npu: &sideRow{it: e.Items[0]}, bench: &sideRow{it: e.Items[0]}}
		r.setCells(&artifacts{})
		r.output = name == ".output.0"
		r.met = [6]Metric{{Value: cos, IsNum: true}, {Value: 1, IsNum: true}, {Value: maxAbs, IsNum: true},
			{Value: 0, IsNum: true}, {Value: thousandth, IsNum: true}, {Value: 1, IsNum: true}}
		return r
	}
	for _, c := range []struct {
		name string
		in   *outRow
		out  *outRow
		want Color
	}{
		{"thousandth collapse", mk(".input.0", 1, 0, 1), mk(".output.0", 1, 0, 0.5), Red},
		{"thousandth drop", mk(".input.0", 1, 0, 0.95), mk(".output.0", 1, 0, 0.8), Yellow},
		{"cosine drop", mk(".input.0", 1, 0, 1), mk(".output.0", 0.85, 0, 1), Yellow},
		{"error grows 10x", mk(".input.0", 1, 2, 1), mk(".output.0", 1, 25, 1), Yellow},
		{"huge error", mk(".input.0", 1, 0, 1), mk(".output.0", 1, 2e10, 1), Red},
		{"fine", mk(".input.0", 1, 0, 1), mk(".output.0", 0.99, 0.001, 0.99), NoColor},
	} {
		highlight(Tensor, []*outRow{c.in, c.out}, &scratch{})
		if c.out.color != c.want || c.in.color != NoColor {
			t.Errorf("%s: output %v input %v, want %v", c.name, c.out.color, c.in.color, c.want)
		}
	}
}

// TestSetKeys: an entry's keys set at once are the keys row by row.
func TestSetKeys(t *testing.T) {
	const name = "Functional.linear.3.backward"
	ren := renumbered(name, "Functional.linear", "3.backward", 120)
	for _, c := range []struct {
		name string
		ek   entryKey
		rows []string
		want []string
	}{
		{"not renumbered", entryKey{prefix: name}, []string{name + ".input.0", "odd"}, []string{name + ".input.0", "odd"}},
		{"renumbered", ren, []string{name + ".input.0", name + ".output.0"},
			[]string{"Functional.linear.120.backward.input.0", "Functional.linear.120.backward.output.0"}},
		{"a row not under the entry's name", ren, []string{name + ".input.0", "x." + name + ".y"},
			[]string{"Functional.linear.120.backward.input.0", "Functional.linear.120.backwardx..y"}},
		{"the name again in a suffix", ren, []string{name + ".input." + name},
			[]string{"Functional.linear.120.backward.input."}},
		{"no rows", ren, nil, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			rows := make([]sideRow, len(c.rows))
			for i, r := range c.rows {
				rows[i].it.Name = r
			}
			c.ek.setKeys(name, rows)
			for i := range rows {
				if rows[i].key != c.want[i] {
					t.Errorf("row %q: key %q, want %q", c.rows[i], rows[i].key, c.want[i])
				}
				if k := c.ek.key(name, c.rows[i]); rows[i].key != k {
					t.Errorf("row %q: key %q, key() %q", c.rows[i], rows[i].key, k)
				}
			}
		})
	}
}

func TestPlainYAML(t *testing.T) {
	for _, c := range []struct {
		s    string
		want bool
	}{
		{"Module.layers.0.mlp.forward.0", true}, {"a_b", true}, {"y_", true}, {"Offs", true}, {"nulls", true},
		{"", false}, {"1abc", false}, {"a b", false}, {"a:b", false},
		{"y", false}, {"N", false}, {"Yes", false}, {"no", false}, {"ON", false}, {"off", false},
		{"True", false}, {"FALSE", false}, {"Null", false},
	} {
		if got := plainYAML(c.s); got != c.want {
			t.Errorf("plainYAML(%q) = %v, want %v", c.s, got, c.want)
		}
		if got := plainYAML([]byte(c.s)); got != c.want {
			t.Errorf("plainYAML([]byte(%q)) = %v, want %v", c.s, got, c.want)
		}
	}
}

// TestFastStats: a statistic fastStats marks gets from its literal
// (setStat) the cell (kind, repr and number) withRepr and number work out
// from its float, for floats as json.dump writes them across the range
// (pandas reading some back as another float); literals that are not the
// repr (or not a float) are not marked.
func TestFastStats(t *testing.T) {
	t.Parallel()
	// values reads the texts as the Max of the items of a dump (Scan sets
	// Repr).
	values := func(texts []string) []msprobe.Value {
		var b strings.Builder
		b.WriteString(`{"task": "statistics", "level": "L1", "dump_data_dir": null, "data": {"A.0.forward": {"input_args": [`)
		for k, text := range texts {
			if k > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, `{"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2], "Max": %s}`, text)
		}
		b.WriteString("]}}}")
		var vs []msprobe.Value
		if _, err := msprobe.Scan(strings.NewReader(b.String()), "d.json", func(e *msprobe.Entry) error {
			for _, it := range e.Items {
				vs = append(vs, it.Stats[0])
			}
			return nil
		}); err != nil || len(vs) != len(texts) {
			t.Fatalf("%d values of %d, %v", len(vs), len(texts), err)
		}
		return vs
	}
	value := func(text string) msprobe.Value {
		if _, err := strconv.ParseFloat(text, 64); err == nil && text[0] != '+' {
			return values([]string{text})[0]
		}
		f, _ := strconv.ParseFloat(text, 64) // not JSON: the float it holds
		return msprobe.Value{Kind: msprobe.Number, Num: f, Text: text}
	}
	// check compares the cells of v as statistic i, returning whether the
	// literal was taken as the repr and whether pandas reads the cell's
	// repr back as its float.
	check := func(v msprobe.Value, i int) (repr, num bool) {
		s := &sideRow{}
		s.it.Stats[i] = v
		s.fast = fastStats(&s.it)
		var fast cell
		fast.setStat(s, i, false)
		slow := fromValue(v).withRepr()
		if got := statKind(s, i); got != kindOf(v) {
			t.Errorf("%q: statKind %v, want %v", v.Text, got, kindOf(v))
		}
		// a float's s is its literal when that is its repr (setStat)
		if fast.k != slow.k || math.Float64bits(fast.f) != math.Float64bits(slow.f) || fast.k != cFloat && fast.s != slow.s {
			t.Errorf("%q: cell %v %v %q, want %v %v %q", v.Text, fast.k, fast.f, fast.s, slow.k, slow.f, slow.s)
		}
		if got, want := string(fast.appendStr(nil)), string(slow.appendStr(nil)); got != want {
			t.Errorf("%q: repr %q, want %q", v.Text, got, want)
		}
		if got, want := string(fast.appendCSV(nil)), string(slow.appendCSV(nil)); got != want || fast.str() != slow.str() {
			t.Errorf("%q: CSV %q and str %q, want %q and %q", v.Text, got, fast.str(), want, slow.str())
		}
		if got, want := number(&fast), number(&slow); math.Float64bits(got) != math.Float64bits(want) {
			t.Errorf("%q: number %v, want %v", v.Text, got, want)
		}
		return s.fast&(1<<i) != 0, math.Float64bits(number(&fast)) == math.Float64bits(v.Num)
	}
	for _, c := range []struct {
		text      string
		repr, num bool
	}{
		{"1.3220384565547094", true, true}, {"1e-05", true, true}, {"1.5e+300", true, true},
		{"2.5", true, true}, {"123456789012345.6", true, true},
		// pandas drops digits past the 17th, leading zeros included
		{"-0.04181459722050355", true, false},
		{"1.50", false, false}, {"1.0E-5", false, false}, {"1E-05", false, false}, {"1.5E+300", false, false}, {"1e-5", false, false}, {"0.1000000000000000055", false, false},
		{"+2.5", false, false}, {"2", false, false}, {"-3", false, false}, {"1e999", false, false},
	} {
		if repr, num := check(value(c.text), 3); repr != c.repr || repr && num != c.num {
			t.Errorf("%q: repr and number taken %v %v, want %v %v", c.text, repr, num, c.repr, c.num)
		}
	}
	for _, v := range []msprobe.Value{{Kind: msprobe.NaN, Num: math.NaN()}, {Kind: msprobe.PosInf, Num: math.Inf(1)},
		{Kind: msprobe.String, Text: "1.5"}, {Kind: msprobe.Null}, {Kind: msprobe.Bool, Bool: true}} {
		if repr, _ := check(v, 0); repr {
			t.Errorf("%+v taken", v)
		}
	}
	// Random floats, of float32 and float64 bits, written as Python's
	// repr writes them.
	rng := rand.New(rand.NewPCG(1, 2))
	taken, nums, n := 0, 0, 0
	var texts []string
	for range 200000 {
		f := math.Float64frombits(rng.Uint64())
		if rng.IntN(2) == 0 {
			f = float64(math.Float32frombits(rng.Uint32()))
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		texts = append(texts, string(msprobe.AppendPyFloat(nil, f)))
	}
	for k, v := range values(texts) {
		n++
		repr, num := check(v, k%4)
		if repr {
			taken++
		}
		if num {
			nums++
		}
	}
	if taken != n || nums < n/2 {
		t.Errorf("of %d reprs, %d taken, %d with their numbers", n, taken, nums)
	}
}

// TestFastStatsWhereDecoded: the rows decoded off the join's goroutine
// (the NPU stream, a parser of goAhead's) carry fastStats; the join's own
// parser leaves the cells to be worked out.
func TestFastStatsWhereDecoded(t *testing.T) {
	t.Parallel()
	path := testkit.Testdata(t, "demo", "dumps", "mindspeed-mm", "dump.json")
	// check checks rows, and tells whether one has a float statistic
	check := func(where string, rows []sideRow, want bool) (some bool) {
		t.Helper()
		for i := range rows {
			r := &rows[i]
			wantFast := uint8(0)
			if want {
				wantFast = fastStats(&r.it)
			}
			if r.fast != wantFast {
				t.Errorf("%s: row %s fast %#x, want %#x", where, r.it.Name, r.fast, wantFast)
			}
			some = some || fastStats(&r.it) != 0
		}
		return some
	}
	ix, err := newBenchIndex(BenchFile(path), &Config{}, true)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.close()
	own, err := ix.parse(0)
	if err != nil {
		t.Fatal(err)
	}
	if !check("the join's parser", own.rows, false) {
		t.Error("entry 0 has no float statistic to check")
	}
	var md5 bool
	done := make(chan struct{})
	if !ix.goAhead(&md5, func() { close(done) }, func(p *entryParser) {
		ahead, err := p.parse(0)
		if err != nil {
			t.Error(err)
			return
		}
		if !check("goAhead's parser", ahead.rows, true) {
			t.Error("entry 0 has no float statistic to check")
		}
	}) {
		t.Fatal("the bench side could not be forked")
	}
	<-done

	npu := Source(func(yield func(*msprobe.Entry) error) error {
		_, err := msprobe.ScanFile(path, yield)
		return err
	})
	ch, errc, ready, stop := sideStream(npu, &Config{}, true, nil, &rowsPool{}, nil)
	ready()
	some := false
	for b := range ch {
		for _, e := range b {
			some = check("the NPU stream", e.rows, true) || some
		}
	}
	stop()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if !some {
		t.Error("the NPU stream: no row with a float statistic to check")
	}
}

// TestMarkOutputs: markOutputs marks the rows whose NPU name holds
// ".output.", searched from where it could start past the entry's name,
// as a search of the whole name would: a match in the entry's name, across
// its end, after it, in a name not starting with it, in short names.
func TestMarkOutputs(t *testing.T) {
	for _, tc := range []struct {
		entry string
		names []string
	}{
		{"Module.layers.0.MLP.forward.0", []string{"Module.layers.0.MLP.forward.0.input.0", "Module.layers.0.MLP.forward.0.output.0",
			"Module.layers.0.MLP.forward.0.output", "Module.layers.0.MLP.forward.0.outputs.0", "Other.output.0", "Other.input.0"}},
		{"Module.output.Linear.forward.0", []string{"Module.output.Linear.forward.0.input.0", "Module.output.Linear.forward.0.output.0"}},
		{"Tensor.x.output", []string{"Tensor.x.output.0", "Tensor.x.output", "Tensor.x.outputx.0", "Tensor.x.output.output."}},
		{"Tensor.x.outpu", []string{"Tensor.x.outpu.t.", "Tensor.x.outpu", "Tensor.x.outpuoutput."}},
		{"a.", []string{"a.output.", "a.input.0", ".output.", "output."}},
		{"", []string{".output.", "x", ""}},
		{"..output", []string{"..output.", "..output"}},
	} {
		var grp []*outRow
		for _, n := range tc.names {
			grp = append(grp, &outRow{npu: &sideRow{it: msprobe.Item{Entry: tc.entry, Name: n}}})
		}
		markOutputs(grp)
		for _, r := range grp {
			if want := strings.Contains(r.npu.it.Name, ".output."); r.output != want {
				t.Errorf("entry %q, name %q: output %v, want %v", tc.entry, r.npu.it.Name, r.output, want)
			}
		}
	}
}

// TestRulesInfNaN checks the InfNan rule on both sides of rules' shortcut
// for four finite float cells.
func TestRulesInfNaN(t *testing.T) {
	fl := func(f float64) cell { return cell{k: cFloat, f: f} }
	one, inf, nan := fl(1), fl(math.Inf(1)), fl(math.NaN())
	for _, c := range []struct {
		name string
		n, b [2]cell
		want bool
	}{
		{"finite", [2]cell{one, fl(-1)}, [2]cell{one, one}, false},
		{"npu max inf", [2]cell{inf, one}, [2]cell{one, one}, true},
		{"npu min -inf", [2]cell{one, fl(math.Inf(-1))}, [2]cell{one, one}, true},
		{"npu min nan", [2]cell{one, nan}, [2]cell{one, one}, true},
		{"npu Nan text", [2]cell{{k: cNaN}, one}, [2]cell{one, one}, true},
		{"npu inf string", [2]cell{{k: cStr, s: " INF"}, one}, [2]cell{one, one}, true},
		{"npu int", [2]cell{{k: cInt, s: "3", f: 3}, one}, [2]cell{one, one}, false},
		{"bench inf too", [2]cell{inf, one}, [2]cell{inf, one}, false},
		{"bench nan only", [2]cell{one, one}, [2]cell{one, nan}, false},
		{"no bench", [2]cell{inf, one}, [2]cell{naCell, naCell}, true},
	} {
		r := &outRow{npu: &sideRow{it: msprobe.Item{Name: "Functional.relu.0.forward.output.0"}}, bench: &sideRow{}, output: true}
		r.ncell[0], r.ncell[1], r.bcell[0], r.bcell[1] = c.n[0], c.n[1], c.b[0], c.b[1]
		rules(Statistics, []*outRow{r}, &scratch{})
		if got := slices.Contains(r.msgs, msgInfNaN); got != c.want {
			t.Errorf("%s: InfNan %v, want %v (msgs %q)", c.name, got, c.want, r.msgs)
		}
	}
}

// TestReprNumber checks the fast paths of reprNumber against xstrtod on
// reprs: sixteen decimals or more (kept above and below 2^53, rounded twice, negative,
// a leading 0, a 9 before the digits pandas drops), exponents, and the
// shorter reprs pandasExact takes.
func TestReprNumber(t *testing.T) {
	for _, f := range []float64{0.0012850761413574219, -0.0012850761413574219, 1.2345678901234567,
		-9.007199254740993, 9.007199254740993, 9.999999999999998, 0.9999999999999999, 0.09999999999999999,
		0.9007199254740993, 0.8999999999999999, 1.0000000000000002, -0.00018309447129257023,
		0.0009765625000000002, 3.3306690738754696e-16, 1.2345678901234567e-05, 1.2345678901234567e+100,
		5e-324, 123.45678901234568, 12.345678901234567, 0.5, 1e16, 4503599627370497.5, -2.5,
		3.0977600523181534, -3.6080345313143702} { // the last two: pandasDigits rounds twice
		checkReprNumber(t, f, msprobe.PyFloat(f))
	}
}

// checkReprNumber fails t unless reprNumber reads s, the repr of x, as
// xstrtod does.
func checkReprNumber(t *testing.T, x float64, s string) {
	t.Helper()
	want, _, _ := xstrtod(s)
	if got := reprNumber(s, x); math.Float64bits(got) != math.Float64bits(want) {
		t.Fatalf("reprNumber(%q) = %v, xstrtod %v", s, got, want)
	}
	if got := reprNumber([]byte(s), x); math.Float64bits(got) != math.Float64bits(want) {
		t.Fatalf("reprNumber([]byte(%q)) = %v, xstrtod %v", s, got, want)
	}
}

// TestFloatColumns: the columns whose ints print as floats, as pandas
// 1.5.3 gives them for df[["Max", "Min", "Mean", "Norm"]] = rows (each
// case checked there; B is 2**63, past int64).
func TestFloatColumns(t *testing.T) {
	t.Parallel()
	var (
		ints   = colFacts{num: true, int: true}
		mixed  = colFacts{num: true, int: true, float: true}
		floats = colFacts{num: true, float: true}
		text   = colFacts{}
		ubig   = colFacts{num: true, int: true, ubig: true}
	)
	for _, tc := range []struct {
		name string
		cols [4]colFacts
		want [4]bool
	}{
		// [[1, 2, 3, 4], [5, 6, 7, 8.5]]: one float64 column makes the
		// array float64: every int prints as a float.
		{"all numbers, one float column", [4]colFacts{ints, ints, ints, mixed}, [4]bool{true, true, true, true}},
		// [[1, 2, 3, 4], [5, 6, 7, 8]]: int64 throughout.
		{"all ints", [4]colFacts{ints, ints, ints, ints}, [4]bool{}},
		// [[151643, 0, "x", None], [2.5, 3, 1, None]]: object array,
		// Max float64 (151643.0), Min int64 (0).
		{"a float column beside object ones", [4]colFacts{mixed, ints, {int: true}, text}, [4]bool{true, false, false, false}},
		// [[5, True, "x", 1], [6, 2.5, "x", 2.5]]: a bool makes Min
		// object; Norm float64 (1.0).
		{"a bool in a column", [4]colFacts{ints, {int: true, float: true}, text, mixed}, [4]bool{false, false, false, true}},
		// no ints: nothing to print otherwise
		{"floats only", [4]colFacts{floats, floats, floats, floats}, [4]bool{}},
		// [[B, 1, 2, 3], [5, 1, 2, 3]]: uint64 beside int64 makes the
		// array float64 (9.223372036854776e+18, 1.0).
		{"uint64 beside int64", [4]colFacts{ubig, ints, ints, ints}, [4]bool{true, true, true, true}},
		// [[B, B, B, B], [5, 5, 5, 5]]: uint64 throughout.
		{"all uint64", [4]colFacts{ubig, ubig, ubig, ubig}, [4]bool{}},
		// [[B, 1.5, 1.5, 1.5], [-1, 2.5, 2.5, 2.5]]: a negative int
		// beside B keeps Max object (B and -1 as they are).
		{"uint64 with a negative int", [4]colFacts{{num: true, int: true, ubig: true, neg: true}, floats, floats, floats}, [4]bool{}},
		// [[B, "x"...], [1.5, "x"...], [3, "x"...]]: float64 Max.
		{"uint64 with a float", [4]colFacts{{num: true, int: true, ubig: true, float: true}, text, text, text}, [4]bool{true, false, false, false}},
		// [[2**64, 1, 0.5, 0.5], [1.5, 2.5, 0.5, 0.5]]: Max object
		// (18446744073709551616), Min float64 (1.0).
		{"past uint64", [4]colFacts{{num: true, int: true, huge: true, float: true}, mixed, floats, floats}, [4]bool{false, true, false, false}},
	} {
		if got := floatColumns(tc.cols); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
