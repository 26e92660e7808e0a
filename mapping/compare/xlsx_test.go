package compare

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

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
	f, err := excelize.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := f.GetRows("Sheet1")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 89 || rows[0][0] != "NPU Name" || rows[0][27] != "NPU_Stack_Info" {
		t.Fatalf("%d rows, header %v", len(rows), rows[0])
	}
	fill := func(row int) string {
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
