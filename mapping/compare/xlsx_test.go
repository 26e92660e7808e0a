package compare

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/layermap/layermap/mapping/output"
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
	f, rows := sheetRows(t, path)
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

// sheetRows opens the workbook at path (closed when the test ends) and
// reads the rows of its Sheet1.
func sheetRows(t *testing.T, path string) (*excelize.File, [][]string) {
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

// TestXLSXSink: the workbook holds exactly the rows written, in order,
// with their numbers and fills, over many of the writer's batches; a
// Reset with batches under way leaves only what is written after it, and
// a dropped table leaves no file.
func TestXLSXSink(t *testing.T) {
	t.Parallel()
	header := []string{"NPU Name", "Max diff", "Result"}
	row := func(i int) ([]Cell, RowMark) {
		mark := RowMark{Result: "pass"}
		if i%7 == 3 {
			mark = RowMark{Result: "error", Color: Red}
		}
		return []Cell{txt("Tensor.add." + strconv.Itoa(i) + ".forward.input.0"),
			{Text: strconv.Itoa(i) + ".5", Num: true, Val: float64(i) + 0.5}, txt(mark.Result)}, mark
	}
	write := func(t *testing.T, s *XLSXSink, from, to int) {
		for i := from; i < to; i++ {
			cells, mark := row(i)
			if err := s.Row(cells, mark); err != nil {
				t.Fatal(err)
			}
		}
	}
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
			f, rows := sheetRows(t, filepath.Join(dir, "t.xlsx"))
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
