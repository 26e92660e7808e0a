package compare

import (
	"math"
	"os"
	"slices"
	"strings"
	"testing"
)

// TestXLSXSpool: rows come back from the spool as they went in, in order:
// every kind of cell, empty texts and rows, a text longer than the
// spool's buffers; and the spool leaves no file in its folder.
func TestXLSXSpool(t *testing.T) {
	t.Parallel()
	type row struct {
		cells []Cell
		color Color
	}
	long := strings.Repeat("frame\n", 400_000) // 2.4 MB, past the 1 MB buffers
	rows := []row{
		{[]Cell{txt("Tensor.add.0.forward.input.0"), {Text: "1.5", Num: true, Val: 1.5}, {Text: "True", Bool: true}}, Red},
		{nil, NoColor},
		{[]Cell{txt(""), {Text: "nan", Num: true, Val: math.NaN()}, {Text: " -inf", Num: true, Val: math.Inf(-1)}}, Yellow},
		{[]Cell{txt(long), {Text: "-0.0", Num: true, Val: math.Copysign(0, -1)}}, NoColor},
		{[]Cell{txt("ünïcode ✓"), {Text: "False", Bool: true}}, Red},
	}
	dir := t.TempDir()
	sp, err := newXLSXSpool(dir)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 { // several rounds: rows across the reader's buffer boundaries
		for _, r := range rows {
			if err := sp.add(r.cells, r.color); err != nil {
				t.Fatal(err)
			}
		}
	}
	n := 0
	err = sp.each(func(cells []Cell, color Color) error {
		want := rows[n%len(rows)]
		n++
		same := func(a, b Cell) bool {
			return a.Text == b.Text && a.Num == b.Num && a.Bool == b.Bool && math.Float64bits(a.Val) == math.Float64bits(b.Val)
		}
		if color != want.color || !slices.EqualFunc(cells, want.cells, same) {
			t.Fatalf("row %d: %d cells, color %d; want %d cells, color %d", n-1, len(cells), color, len(want.cells), want.color)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != 3*len(rows) {
		t.Fatalf("%d rows back, want %d", n, 3*len(rows))
	}
	sp.close()
	if es, _ := os.ReadDir(dir); len(es) != 0 {
		t.Fatalf("the spool left %v", es)
	}
}
