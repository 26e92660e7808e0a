package compare

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/layermap/layermap/mapping/output"
	"github.com/layermap/layermap/printparse/msprobe"
)

// NoBenchCell prints an int cell as Python prints float(int), and any
// other cell as it is; an int past the float range cannot be printed.
func TestNoBenchCell(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		cell, want string
		ok         bool
	}{
		{"24", "24.0", true},
		{"-3", "-3.0", true},
		{"+7", "7.0", true},
		{"0", "0.0", true},
		{"9999999999999999", "1e+16", true},
		{"12345678901234567", "1.2345678901234568e+16", true},
		{"1.5", "1.5", true},
		{"24.0", "24.0", true},
		{"1e+16", "1e+16", true},
		{"nan", "nan", true},
		{"N/A", "N/A", true},
		{"", "", true},
		{"1" + strings.Repeat("0", 400), "", false},
	} {
		got, ok := NoBenchCell([]byte("x"), c.cell)
		if ok != c.ok || ok && string(got) != "x"+c.want {
			t.Errorf("NoBenchCell(%q) = %q, %v; want %q, %v", c.cell, got, ok, "x"+c.want, c.ok)
		}
	}
}

// TestCSVPatch: the no-bench downcast rewrites the int cells of the
// patched columns of the rows whose Bench Name is N/A, as Python prints
// float(int), and copies every other byte: quoted names and stacks (with
// commas, quotes and line breaks) and rows crossing the read buffer's end
// included, whatever its size.
func TestCSVPatch(t *testing.T) {
	t.Parallel()
	const head = "NPU Name,Bench Name,NPU max,NPU min,Stack\n"
	p := csvPatch{bench: 1, cols: []int{2, 3}}
	for _, tc := range []struct {
		name, in, want string
		err            string
	}{
		{"ints of no-bench rows", "a,N/A,24,-5,s\n", "a,N/A,24.0,-5.0,s\n", ""},
		{"zero and big ints", "a,N/A,0,12345678901234567890,s\n", "a,N/A,0.0,1.2345678901234567e+19,s\n", ""},
		{"floats stay", "a,N/A,1.5,1e-05,s\na,N/A, inf,nan,s\n", "a,N/A,1.5,1e-05,s\na,N/A, inf,nan,s\n", ""},
		{"matched rows stay", "a,b,24,5,s\n", "a,b,24,5,s\n", ""},
		{"other columns stay", "a,N/A,1.5,2,7\n", "a,N/A,1.5,2.0,7\n", ""},
		{"quoted cells", "\"a,\"\"x\"\"\",N/A,3,4,\"File x, line 2\n y = \"\"z\"\"\"\n\"q\n,r\",\"N/A,\",3,4,s\n",
			"\"a,\"\"x\"\"\",N/A,3.0,4.0,\"File x, line 2\n y = \"\"z\"\"\"\n\"q\n,r\",\"N/A,\",3,4,s\n", ""},
		{"an int past floats", "a,N/A,1" + strings.Repeat("0", 400) + ",4,s\n", "", errNoPatch.Error()},
		{"a row cut short", "a,N/A,3,4,s", "", "compare: table ends inside a row"},
		{"too few columns", "a,N/A,3\n", "", "compare: table row with fewer than 4 columns"},
	} {
		for size := range 120 { // buffers ending at every point of a row
			t.Run(fmt.Sprintf("%s/buffer %d", tc.name, size), func(t *testing.T) {
				p := p
				p.size = size
				var out bytes.Buffer
				err := p.rewrite(&out, strings.NewReader(head+tc.in))
				if tc.err != "" {
					if err == nil || err.Error() != tc.err {
						t.Fatalf("error %v, want %q", err, tc.err)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if got := out.String(); got != head+tc.want {
					t.Errorf("got\n%q\nwant\n%q", got, head+tc.want)
				}
			})
		}
	}
}

// FuzzCSVPatch: on any table written as the CSV sink writes cells, the
// patch equals its reference: the table read with encoding/csv, the
// cells changed, written again.
func FuzzCSVPatch(f *testing.F) {
	f.Add("a\x00N/A\x0024\x00s\x01b\x00x\x003\x00\"q,\n\"", 3)
	f.Add("n\x00N/A\x00-0\x001e+400\x01\x00N/A\x00\x00", 1)
	f.Fuzz(func(t *testing.T, s string, size int) {
		s = strings.ReplaceAll(s, "\r", "r") // encoding/csv drops \r before \n, in quotes too
		var table []byte
		var rows [][]string
		for _, line := range strings.Split(s, "\x01") {
			cells := strings.Split(line, "\x00")
			if len(cells) < 2 {
				cells = append(cells, "N/A")
			}
			rows = append(rows, cells)
		}
		rows = append([][]string{{"NPU Name", "Bench Name", "NPU max"}}, rows...)
		for _, cells := range rows {
			for i, c := range cells {
				if i > 0 {
					table = append(table, ',')
				}
				table = appendCSVField(table, c)
			}
			table = append(table, '\n')
		}
		want, wantErr := refPatch(t, table)
		p := csvPatch{bench: 1, cols: []int{2}, size: int(uint(size) % 100)}
		var out bytes.Buffer
		err := p.rewrite(&out, bytes.NewReader(table))
		switch {
		case wantErr != nil:
			if err == nil {
				t.Fatalf("no error, want %v", wantErr)
			}
		case err != nil:
			t.Fatalf("%v on %q", err, table)
		case out.String() != want:
			t.Fatalf("patched\n%q\nwant\n%q", out.String(), want)
		}
	})
}

// refPatch is csvPatch{bench: 1, cols: []int{2}} done with encoding/csv:
// an error for a no-bench row with too few cells or an int past floats.
func refPatch(t *testing.T, table []byte) (string, error) {
	r := csv.NewReader(bytes.NewReader(table))
	r.FieldsPerRecord = -1
	recs, err := r.ReadAll()
	if err != nil {
		t.Fatalf("the table does not read back: %v", err)
	}
	var out []byte
	for k, rec := range recs {
		if k > 0 && rec[1] == "N/A" {
			if len(rec) < 3 {
				return "", errors.New("too few cells")
			}
			if isIntLiteral(rec[2]) {
				f, err := strconv.ParseFloat(rec[2], 64)
				if err != nil {
					return "", err
				}
				rec[2] = msprobe.PyFloat(f)
			}
		}
		for i, c := range rec {
			if i > 0 {
				out = append(out, ',')
			}
			out = appendCSVField(out, c)
		}
		out = append(out, '\n')
	}
	return string(out), nil
}

// TestCSVSinkPatch: a table of several parts is patched in each part,
// and the files committed are the patched ones (no temporary left).
func TestCSVSinkPatch(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("a million rows: not in -short")
	}
	header := []string{"NPU Name", "Bench Name", "NPU max", "NPU min"}
	at := time.Date(2026, 12, 6, 10, 30, 0, 0, time.Local)
	stamp := at.Format(output.StampLayout)
	row := func(i int, patched bool) string {
		bench, max := "N/A", strconv.Itoa(i)
		if i%3 == 0 {
			bench = "b"
		} else if patched {
			max += ".0"
		}
		return fmt.Sprintf("t.%d,%s,%s,%d\n", i, bench, max, i)
	}
	n := MaxCSVRows + 5
	dir, es := writeTable(t, func(set *output.Set, dir string) (*CSVSink, error) {
		return NewCSVSink(set, dir, output.Name{Prefix: "t", Suffix: ".csv"})
	}, header, func(t *testing.T, s *CSVSink) {
		for i := range n {
			if err := s.Line([]byte(row(i, false)), RowMark{}); err != nil {
				t.Fatal(err)
			}
		}
		ok, err := s.patchNoBench([4]bool{true})
		if !ok || err != nil {
			t.Fatalf("patchNoBench: %v, %v", ok, err)
		}
	}, true, at)
	if len(es) != 2 {
		t.Fatalf("%d files, want 2 parts", len(es))
	}
	for k, span := range [][2]int{{0, MaxCSVRows}, {MaxCSVRows, n}} {
		var want strings.Builder
		want.WriteString("NPU Name,Bench Name,NPU max,NPU min\n")
		for i := span[0]; i < span[1]; i++ {
			want.WriteString(row(i, true))
		}
		name := fmt.Sprintf("t%s_part_%d.csv", stamp, k+1)
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want.String() {
			t.Errorf("%s: not the patched rows", name)
		}
	}
}
