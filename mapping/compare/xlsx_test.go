package compare

import (
	"archive/zip"
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/layermap/layermap/mapping/output"
	"github.com/layermap/layermap/printparse/msprobe"
	"github.com/layermap/layermap/printparse/testkit"
	"github.com/xuri/excelize/v2"
)

// TestXLSX checks the xlsx table: msprobe's header and rows on Sheet1,
// numbers stored as numbers, rows filled by msprobe's highlight rules.
func TestXLSX(t *testing.T) {
	root := filepath.Join(testkit.Corpus(t, "msprobe"), "golden", "synth_statistics")
	out := t.TempDir()
	tm := time.Date(2026, 12, 2, 12, 2, 48, 0, time.Local)
	rep, err := Run(Options{Target: filepath.Join(root, "npu/dump.json"), Golden: filepath.Join(root, "bench/dump.json"),
		OutDir: out, XLSX: true, Stamp: tm})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(out, "compare_result_20261202120248.xlsx")
	if len(rep.Ranks) != 1 || rep.Ranks[0].Files[0] != path {
		t.Fatalf("files %v", rep.Ranks)
	}
	f, rows := sheet1Rows(t, path)
	if len(rows) != 89 || rows[0][0] != "NPU Name" || rows[0][27] != "NPU_Stack_Info" {
		t.Fatalf("%d rows, header %v", len(rows), rows[0])
	}
	fill := func(row int) string { return rowFill(t, f, row) }
	// msprobe's highlight rules: MaxRelativeErr 670 % on an output -> red;
	// NPU min -inf -> red; requires_grad True vs False -> yellow; the
	// relu output (warning by Result, MaxRelativeErr 0) and plain rows stay
	// white.
	for _, c := range []struct {
		row  int
		name string
		fill string
	}{{2, "Functional.linear.0.forward.input.0", ""}, {5, "Functional.linear.0.forward.output.0", "FF0000"},
		{7, "Functional.relu.0.forward.output.0", ""}, {13, "Torch.log.0.forward.output.0", "FF0000"},
		{25, "Functional.dropout.0.forward.input.0", "FFFF00"}} {
		if rows[c.row-1][0] != c.name {
			t.Errorf("row %d is %s, want %s", c.row, rows[c.row-1][0], c.name)
		}
		if got := fill(c.row); got != c.fill {
			t.Errorf("row %d fill %q, want %q", c.row, got, c.fill)
		}
	}
	typ, err := f.GetCellType("Sheet1", "Q2")
	if err != nil || typ != excelize.CellTypeNumber && typ != excelize.CellTypeUnset {
		t.Errorf("NPU max cell type %v (%v)", typ, err)
	}
	if ents, _ := os.ReadDir(out); len(ents) != 1 {
		t.Errorf("output folder holds %d files", len(ents))
	}
}

// TestXLSXAsMsprobe checks every cell of the xlsx table against msprobe's
// own --xlsx of the same pair (openpyxl's workbook): its type (number,
// boolean, text) and its value, numbers to the bit. msprobe colors no
// row (the highlight fills are layermap's, as msprobe -hl did): fills
// are not compared.
func TestXLSXAsMsprobe(t *testing.T) {
	t.Parallel()
	root := filepath.Join(testkit.Corpus(t, "msprobe"), "golden")
	for _, tc := range []struct {
		pair, golden string
		sheetRows    int // msprobe's MAX_EXCEL_LENGTH of the golden (0: its own)
	}{
		{"synth_statistics", "output_xlsx", 0},
		{"synth_md5", "output_xlsx", 0},
		{"synth_statistics", "output_xlsx_sheets20", 20},
		{"synth_statistics", "output_xlsx_sheets88", 88},
	} {
		t.Run(tc.pair+"/"+tc.golden, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(root, tc.pair)
			out := t.TempDir()
			rep, err := Run(Options{Target: filepath.Join(dir, "npu/dump.json"), Golden: filepath.Join(dir, "bench/dump.json"), OutDir: out, XLSX: true,
				sheetRows: tc.sheetRows})
			if err != nil {
				t.Fatal(err)
			}
			want, err := filepath.Glob(filepath.Join(dir, tc.golden, "*.xlsx"))
			if err != nil || len(want) != 1 || len(rep.Ranks) != 1 {
				t.Fatalf("golden %v (%v), ranks %d", want, err, len(rep.Ranks))
			}
			got, err := xlsxCells(rep.Ranks[0].Files[0])
			if err != nil {
				t.Fatal(err)
			}
			exp, err := xlsxCells(want[0])
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(exp) {
				t.Fatalf("%d rows, msprobe's %d", len(got), len(exp))
			}
			for r := range exp {
				if g, w := strings.Join(got[r], " | "), strings.Join(exp[r], " | "); g != w {
					t.Errorf("row %d:\n%s\nmsprobe's\n%s", r+1, g, w)
				}
			}
			g, err := headerStyles(rep.Ranks[0].Files[0])
			if err != nil {
				t.Fatal(err)
			}
			w, err := headerStyles(want[0])
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(g, w) || len(w) == 0 {
				t.Errorf("header styles %q, msprobe's (pandas') %q", g, w)
			}
		})
	}
}

// headerStyles describes the style of each header cell of every sheet of
// the workbook at path: bold, its borders, its alignment.
func headerStyles(path string) ([]string, error) {
	f, err := excelize.OpenFile(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	for _, sheet := range f.GetSheetList() {
		rows, err := f.GetRows(sheet)
		if err != nil || len(rows) == 0 {
			return nil, fmt.Errorf("sheet %s: %v", sheet, err)
		}
		for c := range rows[0] {
			ref, _ := excelize.CoordinatesToCellName(c+1, 1)
			id, err := f.GetCellStyle(sheet, ref)
			if err != nil {
				return nil, err
			}
			st, err := f.GetStyle(id)
			if err != nil {
				return nil, err
			}
			d := fmt.Sprintf("bold=%v", st.Font != nil && st.Font.Bold)
			for _, b := range st.Border {
				d += fmt.Sprintf(" %s=%d", b.Type, b.Style)
			}
			if st.Alignment != nil {
				d += " " + st.Alignment.Horizontal + "/" + st.Alignment.Vertical
			}
			out = append(out, d)
		}
	}
	return out, nil
}

// xlsxCells reads every sheet of the workbook at path, in order, as a
// row "sheet NAME" and then its rows, each cell as its type and value:
// "b:1" a boolean, "s:text" a string, "n:bits" a number (the float64's
// bits: equal numbers written as different decimals match), "-" no cell;
// a row's trailing missing cells are left out.
func xlsxCells(path string) ([][]string, error) {
	f, err := excelize.OpenFile(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out [][]string
	for _, sheet := range f.GetSheetList() {
		rows, err := sheetCells(f, sheet)
		if err != nil {
			return nil, err
		}
		out = append(out, []string{"sheet " + sheet})
		out = append(out, rows...)
	}
	return out, nil
}

// sheetCells reads one sheet's rows as xlsxCells does.
func sheetCells(f *excelize.File, sheet string) ([][]string, error) {
	raw, err := f.GetRows(sheet, excelize.Options{RawCellValue: true})
	if err != nil {
		return nil, err
	}
	out := make([][]string, len(raw))
	for r, row := range raw {
		for c, v := range row {
			ref, _ := excelize.CoordinatesToCellName(c+1, r+1)
			typ, err := f.GetCellType(sheet, ref)
			if err != nil {
				return nil, err
			}
			cell := "s:" + v
			switch typ {
			case excelize.CellTypeBool:
				cell = "b:" + v
			case excelize.CellTypeUnset, excelize.CellTypeNumber:
				if x, err := strconv.ParseFloat(v, 64); err == nil {
					cell = "n:" + strconv.FormatUint(math.Float64bits(x), 16)
				} else if v == "" {
					cell = "-" // no cell (pandas' NaN, None)
				} else {
					cell = "n?" + v
				}
			}
			out[r] = append(out[r], cell)
		}
	}
	return out, nil
}

// sheet1Rows opens the workbook at path (closed when the test ends) and
// reads the rows of its Sheet1.
func sheet1Rows(t *testing.T, path string) (*excelize.File, [][]string) {
	t.Helper()
	f, err := excelize.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	rows, err := f.GetRows("Sheet1")
	if err != nil {
		t.Fatal(err)
	}
	return f, rows
}

// rowFill is the fill color of row's first cell on Sheet1, "" for none.
func rowFill(t *testing.T, f *excelize.File, row int) string {
	t.Helper()
	id, err := f.GetCellStyle("Sheet1", "A"+strconv.Itoa(row))
	if err != nil {
		t.Fatal(err)
	}
	st, err := f.GetStyle(id)
	if err != nil || st == nil || len(st.Fill.Color) == 0 {
		return ""
	}
	return st.Fill.Color[0]
}

// TestOpenpyxlNumberShortcut: the cells whose text has at most 16
// significant digits, which openpyxlNumber leaves as they are, are what
// "%.16g" gives, beside powers of two too; Python's repr of float32 and
// float64 values, powers of two and their neighbours, short decimals.
func TestOpenpyxlNumberShortcut(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 8))
	var vals []float64
	for e := -1074; e <= 1023; e++ {
		p := math.Ldexp(1, e)
		vals = append(vals, p, math.Nextafter(p, 0), math.Nextafter(p, math.Inf(1)), -p)
	}
	for range 200000 {
		vals = append(vals, math.Float64frombits(rng.Uint64()), float64(math.Float32frombits(rng.Uint32())),
			float64(rng.IntN(100000))/math.Pow(10, float64(rng.IntN(12))))
	}
	for _, v := range vals {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		want, _ := strconv.ParseFloat(fmt.Sprintf("%.16g", v), 64)
		for _, text := range []string{string(msprobe.AppendPyFloat(nil, v)), strconv.FormatFloat(v, 'e', -1, 64)} {
			if got := openpyxlNumber(v, text); math.Float64bits(got) != math.Float64bits(want) {
				t.Fatalf("openpyxlNumber(%v, %q) = %v, %%.16g gives %v", v, text, got, want)
			}
		}
	}
}

// TestXLSXNumbersAsOpenpyxl: a number cell holds the value openpyxl
// writes for msprobe ("%.16g"), not one cut to Excel's 15 digits: the
// statistics of float32 tensors need 16 or 17. The first cases are cells
// of msprobe's own xlsx of the demo pair.
func TestXLSXNumbersAsOpenpyxl(t *testing.T) {
	t.Parallel()
	type pair struct{ in, want float64 }
	cases := []pair{{-1.3884038925170898, -1.38840389251709}, {1.090165138244629, 1.090165138244629},
		{3.2178964614868164, 3.217896461486816}, {-0.0323488749563694, -0.0323488749563694}}
	rng := rand.New(rand.NewPCG(5, 6))
	for _, v := range []float64{0.1, 1.0000000000000002, 5e-324, 1e-300, 1.7976931348623157e308, 123456789012345678} {
		cases = append(cases, pair{v, v})
	}
	for range 200 {
		cases = append(cases, pair{rng.NormFloat64() * math.Pow(10, float64(rng.IntN(40)-20)), 0}, pair{float64(float32(rng.NormFloat64())), 0})
	}
	for i, c := range cases {
		if i >= 4 {
			cases[i].want, _ = strconv.ParseFloat(fmt.Sprintf("%.16g", c.in), 64)
		}
	}
	dir, _ := writeTable(t, func(set *output.Set, dir string) (*XLSXSink, error) {
		return NewXLSXSink(set, dir, output.Name{Prefix: "t", Suffix: ".xlsx"})
	}, []string{"NPU max"}, func(t *testing.T, s *XLSXSink) {
		for _, c := range cases {
			if err := s.Row([]Cell{{Text: strconv.FormatFloat(c.in, 'g', -1, 64), Num: true, Val: c.in}}, RowMark{}); err != nil {
				t.Fatal(err)
			}
		}
	}, true, time.Now())
	f, _ := sheet1Rows(t, filepath.Join(dir, "t.xlsx"))
	for k, c := range cases {
		cell := "A" + strconv.Itoa(k+2)
		raw, err := f.GetCellValue("Sheet1", cell, excelize.Options{RawCellValue: true})
		if err != nil {
			t.Fatal(err)
		}
		if got, err := strconv.ParseFloat(raw, 64); err != nil || math.Float64bits(got) != math.Float64bits(c.want) {
			t.Errorf("%s holds %s for %v, want %v (%v)", cell, raw, c.in, c.want, err)
		}
	}
}

// xlsxTestRow is row i of the xlsx tests' tables: a name, the number
// i+frac and the result, an error filled red where red.
func xlsxTestRow(i int, frac float64, red bool) ([]Cell, RowMark) {
	mark := RowMark{Result: "pass"}
	if red {
		mark = RowMark{Result: "error", Color: Red}
	}
	v := float64(i) + frac
	return []Cell{txt("Tensor.add." + strconv.Itoa(i) + ".forward.input.0"),
		{Text: strconv.FormatFloat(v, 'f', -1, 64), Num: true, Val: v}, txt(mark.Result)}, mark
}

// writeXLSXRows writes rows from to to-1 of row into s.
func writeXLSXRows(t *testing.T, s *XLSXSink, row func(int) ([]Cell, RowMark), from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		cells, mark := row(i)
		if err := s.Row(cells, mark); err != nil {
			t.Fatal(err)
		}
	}
}

// TestXLSXSink: the workbook holds exactly the rows written, in order,
// with their numbers and fills, over many of the writer's batches; a
// Reset with batches under way leaves only what is written after it, and
// a dropped table leaves no file.
func TestXLSXSink(t *testing.T) {
	t.Parallel()
	header := []string{"NPU Name", "Max diff", "Result"}
	row := func(i int) ([]Cell, RowMark) { return xlsxTestRow(i, 0.5, i%7 == 3) }
	write := func(t *testing.T, s *XLSXSink, from, to int) { writeXLSXRows(t, s, row, from, to) }
	for _, tc := range []struct {
		name  string
		write func(t *testing.T, s *XLSXSink)
		want  []int // rows; nil: no file
	}{
		{"batches", func(t *testing.T, s *XLSXSink) { write(t, s, 0, 5*xlsxBatchRows+17) }, span(0, 5*xlsxBatchRows+17)},
		{"reset", func(t *testing.T, s *XLSXSink) {
			write(t, s, 0, 3*xlsxBatchRows+5)
			if err := s.Reset(); err != nil {
				t.Fatal(err)
			}
			if err := s.Header(header); err != nil {
				t.Fatal(err)
			}
			write(t, s, 7, 9+xlsxBatchRows)
		}, span(7, 9+xlsxBatchRows)},
		{"drop", func(t *testing.T, s *XLSXSink) {
			write(t, s, 0, 3*xlsxBatchRows)
			s.Drop()
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir, es := writeTable(t, func(set *output.Set, dir string) (*XLSXSink, error) {
				return NewXLSXSink(set, dir, output.Name{Prefix: "t", Suffix: ".xlsx"})
			}, header, tc.write, tc.want != nil, time.Now())
			if tc.want == nil {
				if len(es) != 0 {
					t.Fatalf("a dropped table left %d files", len(es))
				}
				return
			}
			f, rows := sheet1Rows(t, filepath.Join(dir, "t.xlsx"))
			if len(rows) != len(tc.want)+1 || !slices.Equal(rows[0], header) {
				t.Fatalf("%d rows (header %q), want %d", len(rows), rows[0], len(tc.want)+1)
			}
			for k, i := range tc.want {
				cells, mark := row(i)
				got := rows[k+1]
				if got[0] != cells[0].Text || got[1] != cells[1].Text || got[2] != mark.Result {
					t.Fatalf("row %d = %q, want row %d", k+2, got, i)
				}
				if k%97 == 0 || mark.Color == Red && k%5 == 0 {
					cell := "B" + strconv.Itoa(k+2)
					if typ, err := f.GetCellType("Sheet1", cell); err != nil || typ != excelize.CellTypeNumber && typ != excelize.CellTypeUnset {
						t.Fatalf("%s type %v (%v)", cell, typ, err)
					}
					if red := rowFill(t, f, k+2) == "FF0000"; red != (mark.Color == Red) {
						t.Fatalf("row %d red %v, want %v", k+2, red, mark.Color == Red)
					}
				}
			}
		})
	}
}

// TestXLSXZip64: an entry of the workbook's zip past the zip64 line (4
// GiB; 1000 bytes here) is marked zip64 in its local header, version 45,
// as excelize marks it, and nothing else of the file changes.
func TestXLSXZip64(t *testing.T) {
	t.Parallel()
	write := func(zip64 int64) string {
		dir, _ := writeTable(t, func(set *output.Set, dir string) (*XLSXSink, error) {
			s, err := NewXLSXSink(set, dir, output.Name{Prefix: "t", Suffix: ".xlsx"})
			if s != nil && zip64 > 0 {
				s.zip64 = zip64
			}
			return s, err
		}, []string{"NPU Name", "Max diff"}, func(t *testing.T, s *XLSXSink) {
			for i := range 200 {
				if err := s.Row([]Cell{{Text: fmt.Sprintf("Functional.linear.%d.forward.input.0", i)}, {Text: "0.5", Num: true, Val: 0.5}}, RowMark{}); err != nil {
					t.Fatal(err)
				}
			}
		}, true, time.Now())
		return filepath.Join(dir, "t.xlsx")
	}
	plain, marked := write(0), write(1000)
	a, err := os.ReadFile(plain)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(marked)
	if err != nil {
		t.Fatal(err)
	}
	z, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Clone(a)
	n := 0
	for _, f := range z.File {
		off, err := f.DataOffset()
		if err != nil {
			t.Fatal(err)
		}
		at := off - 30 - int64(len(f.Name))
		if f.UncompressedSize64 > 1000 {
			want[at+4], want[at+5] = 45, 0
			n++
		}
	}
	if n == 0 || !bytes.Equal(b, want) {
		t.Errorf("%d entries past the line; the marked file differs from the plain one other than in their versions", n)
	}
	if _, rows := sheet1Rows(t, marked); len(rows) != 201 {
		t.Errorf("the marked workbook reads as %d rows", len(rows))
	}
}

// TestXLSXSheets: a table is cut over sheets as msprobe's save_excel cuts
// it (MaxXLSXRows, here 8 or 7 rows a sheet): Sheet1 below the limit,
// else the fewest sheets part_0, part_1, ... of ceil(rows/sheets) rows
// but the last, each with the header; every row once, in order, numbers
// and fills kept, whether it was written at once or spooled until the
// table's end, after a Reset while spooling too; a dropped table leaves
// no file (TestXLSXSpoolLife: nor an open spool).
func TestXLSXSheets(t *testing.T) {
	t.Parallel()
	header := []string{"NPU Name", "Max diff", "Result"}
	row := func(i int) ([]Cell, RowMark) { return xlsxTestRow(i, 0.25, i%3 == 1) }
	write := func(t *testing.T, s *XLSXSink, from, to int) { writeXLSXRows(t, s, row, from, to) }
	type sheet struct {
		name string
		rows int
	}
	for _, tc := range []struct {
		name   string
		from   int // the first row written after a Reset (-1: none)
		rows   int
		sheets []sheet // nil: dropped, no file
		limit  int     // rows a sheet (0: 8)
	}{
		{"empty", -1, 0, []sheet{{"Sheet1", 0}}, 0},
		{"odd limit, the first row spooled starts a sheet", -1, 8, []sheet{{"part_0", 4}, {"part_1", 4}}, 7},
		{"first half", -1, 4, []sheet{{"Sheet1", 4}}, 0},
		{"spooled, one sheet", -1, 7, []sheet{{"Sheet1", 7}}, 0},
		{"at the limit", -1, 8, []sheet{{"part_0", 8}}, 0},
		{"one past", -1, 9, []sheet{{"part_0", 5}, {"part_1", 4}}, 0},
		{"two full", -1, 16, []sheet{{"part_0", 8}, {"part_1", 8}}, 0},
		{"three", -1, 17, []sheet{{"part_0", 6}, {"part_1", 6}, {"part_2", 5}}, 0},
		{"four", -1, 25, []sheet{{"part_0", 7}, {"part_1", 7}, {"part_2", 7}, {"part_3", 4}}, 0},
		{"over batches", -1, 3*xlsxBatchRows + 1, func() []sheet {
			// 1537 rows: 193 sheets of 8 rows (the last of 1)
			var s []sheet
			for i := range 192 {
				s = append(s, sheet{"part_" + strconv.Itoa(i), 8})
			}
			return append(s, sheet{"part_192", 1})
		}(), 0},
		{"reset while spooling", 40, 9, []sheet{{"part_0", 5}, {"part_1", 4}}, 0},
		{"drop while spooling", -1, 2 * xlsxBatchRows, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			first := 0
			dir, es := writeTable(t, func(set *output.Set, dir string) (*XLSXSink, error) {
				s, err := NewXLSXSink(set, dir, output.Name{Prefix: "t", Suffix: ".xlsx"})
				if s != nil {
					s.max = cmp.Or(tc.limit, 8)
				}
				return s, err
			}, header, func(t *testing.T, s *XLSXSink) {
				if tc.from >= 0 {
					write(t, s, 0, 3*xlsxBatchRows) // spooled, then reset
					if err := s.Reset(); err != nil {
						t.Fatal(err)
					}
					if err := s.Header(header); err != nil {
						t.Fatal(err)
					}
					first = tc.from
				}
				write(t, s, first, first+tc.rows)
				if tc.sheets == nil {
					s.Drop()
				}
			}, tc.sheets != nil, time.Now())
			if tc.sheets == nil {
				if len(es) != 0 {
					t.Fatalf("a dropped table left %v", es)
				}
				return
			}
			if len(es) != 1 || es[0].Name() != "t.xlsx" {
				t.Fatalf("output folder holds %v, want t.xlsx alone", es)
			}
			f, err := excelize.OpenFile(filepath.Join(dir, "t.xlsx"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			var got []sheet
			next := first
			for _, name := range f.GetSheetList() {
				rows, err := f.GetRows(name)
				if err != nil {
					t.Fatal(err)
				}
				if len(rows) == 0 || !slices.Equal(rows[0], header) {
					t.Fatalf("sheet %s starts %q, want the header", name, rows)
				}
				got = append(got, sheet{name, len(rows) - 1})
				for k, r := range rows[1:] {
					cells, mark := row(next)
					if len(r) < 3 || r[0] != cells[0].Text || r[1] != cells[1].Text || r[2] != mark.Result {
						t.Fatalf("sheet %s row %d = %q, want row %d", name, k+2, r, next)
					}
					ref := "B" + strconv.Itoa(k+2)
					if typ, err := f.GetCellType(name, ref); err != nil || typ != excelize.CellTypeNumber && typ != excelize.CellTypeUnset {
						t.Fatalf("sheet %s %s type %v (%v)", name, ref, typ, err)
					}
					id, err := f.GetCellStyle(name, "A"+strconv.Itoa(k+2))
					if err != nil {
						t.Fatal(err)
					}
					st, _ := f.GetStyle(id)
					if red := st != nil && len(st.Fill.Color) > 0 && st.Fill.Color[0] == "FF0000"; red != (mark.Color == Red) {
						t.Fatalf("sheet %s row %d red %v, want %v", name, k+2, red, mark.Color == Red)
					}
					next++
				}
			}
			if !slices.Equal(got, tc.sheets) {
				t.Fatalf("sheets %v, want %v", got, tc.sheets)
			}
			if next != first+tc.rows {
				t.Fatalf("%d rows, want %d", next-first, tc.rows)
			}
		})
	}
}

// TestXLSXSheetsCut: xlsxSheets places every row of tables of 0 to 4*max+3
// rows, limits 1 to 40, where msprobe's save_excel puts it (its slicing
// loop, restated: slice_num sheets of slice_size rows taken in turn); and
// the rows before spoolFrom are always in the first sheet.
func TestXLSXSheetsCut(t *testing.T) {
	t.Parallel()
	for limit := 1; limit <= 40; limit++ {
		for rows := 0; rows <= 4*limit+3; rows++ {
			type place struct {
				name string
				row  int
			}
			var want []place
			if rows < limit {
				for k := range rows {
					want = append(want, place{"Sheet1", k})
				}
			} else {
				num := (rows + limit - 1) / limit
				size := (rows + num - 1) / num
				for i := range num {
					for k := i * size; k < min((i+1)*size, rows); k++ {
						want = append(want, place{"part_" + strconv.Itoa(i), k - i*size})
					}
				}
			}
			x := xlsxSheets{rows: rows, max: limit}
			for k, w := range want {
				sheet, row := x.sheet(k)
				if got := (place{x.name(sheet), row}); got != w {
					t.Fatalf("limit %d, %d rows: row %d goes to %v, msprobe puts it in %v", limit, rows, k, got, w)
				}
				if k < (&XLSXSink{max: limit}).spoolFrom() && w.name != x.name(0) {
					t.Fatalf("limit %d, %d rows: row %d, before spoolFrom, is in %s", limit, rows, k, w.name)
				}
			}
		}
	}
}

// TestXLSXSpoolLife: the spool of a long table is made in the output
// folder, and Finish, Drop and Reset each close it.
func TestXLSXSpoolLife(t *testing.T) {
	t.Parallel()
	for _, end := range []string{"finish", "drop", "reset"} {
		t.Run(end, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			set := output.NewSet()
			defer set.Abort()
			s, err := NewXLSXSink(set, dir, output.Name{Prefix: "t", Suffix: ".xlsx"})
			if err != nil {
				t.Fatal(err)
			}
			s.max = 8
			if err := s.Header([]string{"NPU Name"}); err != nil {
				t.Fatal(err)
			}
			for i := range 9 {
				if err := s.Row([]Cell{txt(strconv.Itoa(i))}, RowMark{}); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.stop(); err != nil { // the writer is done with the rows given
				t.Fatal(err)
			}
			sp := s.spool
			if sp == nil {
				t.Fatal("no spool for rows past spoolFrom")
			}
			if got := filepath.Dir(sp.f.Name()); got != dir {
				t.Fatalf("spool made in %s, want the output folder %s", got, dir)
			}
			switch end {
			case "finish":
				err = s.Finish()
			case "drop":
				s.Drop()
			case "reset":
				err = s.Reset()
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.spool != nil || !errors.Is(sp.f.Close(), os.ErrClosed) {
				t.Fatalf("%s left the spool open", end)
			}
		})
	}
}
