package htmlview

import (
	"bytes"
	"encoding/csv"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/layermap/layermap/mapping/compare"
	"github.com/layermap/layermap/printparse/msprobe"
	"github.com/layermap/layermap/printparse/testkit"
)

// entryOf reads a row's entry from its name alone; the entry names of the
// dump (the longest prefix of the row name that names an entry) must give
// the same on every row of the demo pair's and a corpus pair's tables.
func TestEntryOfAgreesWithNames(t *testing.T) {
	for _, pair := range [][2]string{
		{testkit.Testdata(t, "demo", "dumps/llamafactory"), testkit.Testdata(t, "demo", "dumps/mindspeed-mm")},
		{testkit.Corpus(t, "msprobe", "examples", "quick_start", "gpu_dump", "step0", "proc2016"),
			testkit.Corpus(t, "msprobe", "examples", "quick_start", "gpu_dump", "step1", "proc2016")},
	} {
		out := t.TempDir()
		rep, err := compare.Run(compare.Options{Target: pair[0], Golden: pair[1], OutDir: out})
		if err != nil {
			t.Fatal(err)
		}
		var names [2]map[string]bool
		for k, dir := range pair {
			p, err := msprobe.Locate(dir)
			if err != nil {
				t.Fatal(err)
			}
			ns, err := msprobe.EntryNames(p.DumpJSON)
			if err != nil {
				t.Fatal(err)
			}
			names[k] = map[string]bool{}
			for _, n := range ns {
				names[k][n] = true
			}
		}
		byNames := func(k int, row string) string {
			for i := len(row); i > 0; i = strings.LastIndexByte(row[:i], '.') {
				if names[k][row[:i]] {
					return row[:i]
				}
			}
			return ""
		}
		rows := testkit.ReadCSV(t, rep.Ranks[0].Files[0])
		if len(rows) < 100 {
			t.Fatalf("%s: %d rows", filepath.Base(pair[0]), len(rows))
		}
		for _, r := range rows[1:] {
			for k := range 2 {
				if r[k] == "N/A" {
					continue
				}
				if got, want := entryOf(r[k]), byNames(k, r[k]); got != want {
					t.Errorf("row %s: entry %q, the dump's names give %q", r[k], got, want)
				}
			}
		}
	}
}

// sameEntry holds only where entryOf gives the same entry: on consecutive
// rows of corpus tables, and on names built to fool it (a row suffix
// holding a direction, parameters_grad entries, rows of another entry
// that starts alike).
func TestSameEntry(t *testing.T) {
	t.Parallel()
	var names []string
	for _, f := range []string{"golden/synth_statistics/output/compare_result_20261202120248.csv",
		"golden/qwen25vl_llamafactory_vs_mindspeed_reverse_template/output"} {
		p := testkit.Corpus(t, "msprobe", f)
		if !strings.HasSuffix(p, ".csv") {
			ms, err := filepath.Glob(filepath.Join(p, "*.csv"))
			if err != nil || len(ms) == 0 {
				t.Fatalf("%s: no table", p)
			}
			p = ms[0]
		}
		rows := testkit.ReadCSV(t, p)[1:]
		for k := range 2 { // the NPU names, then the bench names, each in table order
			for _, r := range rows {
				names = append(names, r[k])
			}
		}
	}
	names = append(names,
		"Module.a.forward.0.output.0", "Module.a.forward.0.output.forward.0", "Module.a.forward.0.output.forward.0.output.0",
		"Module.a.Linear.parameters_grad", "Module.a.Linear.parameters_grad.weight", "Module.a.Linear.parameters_grad.bias",
		"Functional.linear.0.forward", "Functional.linear.0.forward.input.0", "Functional.linear.0.forward.input.0.1",
		"Functional.linear.0.forward.inputs", "Functional.linear.0.forward.parameters.weight", "Functional.linear.0.forward.kwargs.backward",
		"Functional.linear.0.backward.input.0", "Functional.linear.0.backward.output.0", "Functional.linear.0.backward.output.0.parameters_grad",
		"Tensor.add.1.forward.output.0", "Tensor.add.10.forward.output.0", "Tensor.add.1.forward.debug", "x.debug", "x.debug.y")
	hits := 0
	for i := 1; i < len(names); i++ {
		prev := entryOf(names[i-1])
		if prev != "" && sameEntry(prev, names[i]) {
			hits++
			if got := entryOf(names[i]); got != prev {
				t.Errorf("after %s, %s: sameEntry says %q, entryOf %q", names[i-1], names[i], prev, got)
			}
		}
	}
	if hits < len(names)/4 {
		t.Errorf("sameEntry held on %d of %d rows", hits, len(names))
	}
}

// FuzzSplitCSV: on any line encoding/csv reads as one record (quoted
// fields with commas, doubled quotes and line breaks, empty fields, no
// carriage return), splitCSV gives its fields, all of them or the first
// n.
func FuzzSplitCSV(f *testing.F) {
	for _, s := range []string{"a,b,c\n", `x,"[1, 2]","say ""hi""",,end` + "\n", "Module.a.b.forward.0.output.0,N/A,torch.float32\n",
		`"multi` + "\n" + `line",12345678901234567890,"a,b"`, ",,,,,,,,,,,,,,,,,\n"} {
		f.Add(s, 3)
	}
	f.Fuzz(func(t *testing.T, line string, n int) {
		if strings.ContainsRune(line, '\r') || strings.HasPrefix(line, "\n") {
			return // encoding/csv reads \r\n inside quotes as \n, and skips empty lines; compare writes neither
		}
		r := csv.NewReader(strings.NewReader(line))
		r.FieldsPerRecord = -1
		want, err := r.Read()
		if err != nil {
			return
		}
		if _, err := r.Read(); err != io.EOF {
			return // not one record
		}
		n = min(max(n, 0), len(want)+1)
		fs, _ := splitCSV([]byte(line), nil, nil, n)
		var got []string
		for _, f := range fs {
			got = append(got, string(f))
		}
		if !slices.Equal(got, want[:min(n, len(want))]) {
			t.Errorf("splitCSV(%q, %d) = %q, want %q", line, n, got, want[:min(n, len(want))])
		}
	})
}

// splitCSV reads the lines compare writes as encoding/csv does.
func TestSplitCSV(t *testing.T) {
	for _, line := range []string{
		"a,b,c\n",
		"a,,c\r\n",
		",\n",
		"\n",
		`Module.x.forward.0.input.0,"[1, 2]","say ""hi""",end` + "\n",
		`"multi` + "\n" + `line","",x` + "\n",
		`"a,b"`,
	} {
		want, err := csv.NewReader(strings.NewReader(line)).Read()
		if err != nil {
			want = []string{""} // an empty line: one empty field
		}
		fs, _ := splitCSV([]byte(line), nil, nil, len(want)+1)
		var got []string
		for _, f := range fs {
			got = append(got, string(f))
		}
		if !slices.Equal(got, want) {
			t.Errorf("splitCSV(%q) = %q, want %q", line, got, want)
		}
		// the first fields only
		for n := range want {
			fs, _ := splitCSV([]byte(line), nil, nil, n)
			var got []string
			for _, f := range fs {
				got = append(got, string(f))
			}
			if !slices.Equal(got, want[:n]) {
				t.Errorf("splitCSV(%q, %d) = %q, want %q", line, n, got, want[:n])
			}
		}
	}
	// the fields of one line survive unquoting into the shared buffer
	fs, buf := splitCSV([]byte(`"a""",b,"c,d"`), nil, make([]byte, 0, 1), 3)
	if got := string(bytes.Join(fs, []byte("|"))); got != `a"|b|c,d` || cap(buf) < 1 {
		t.Errorf("fields %q", got)
	}
}
