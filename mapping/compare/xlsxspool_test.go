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
// spool's buffers, batches spooled from a row in their middle; a spool
// cut short is an error; and the spool leaves no file in its folder.
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
	b := &xlsxBatch{}
	for _, r := range rows {
		b.add(r.cells, r.color)
	}
	dir := t.TempDir()
	sp, err := newXLSXSpool(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer sp.close()
	var want []row
	for round := range 3 { // several rounds: batches across the reader's buffer boundaries
		from, k := round, 0 // the batch from row round on
		for _, r := range rows[:from] {
			k += len(r.cells)
		}
		if err := sp.add(b, from, k); err != nil {
			t.Fatal(err)
		}
		want = append(want, rows[from:]...)
	}
	n := 0
	same := func(a, b Cell) bool {
		return a.Text == b.Text && a.Num == b.Num && a.Bool == b.Bool && math.Float64bits(a.Val) == math.Float64bits(b.Val)
	}
	err = sp.each(&xlsxBatch{}, func(b *xlsxBatch) error {
		k := 0
		for _, r := range b.rows {
			cells := b.row(nil, k, r)
			k += int(r.cells)
			if n >= len(want) || r.color != want[n].color || !slices.EqualFunc(cells, want[n].cells, same) {
				t.Fatalf("row %d back: %d cells, color %d", n, len(cells), r.color)
			}
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != len(want) {
		t.Fatalf("%d rows back, want %d", n, len(want))
	}
	st, err := sp.f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if err := sp.f.Truncate(st.Size() - 1); err != nil {
		t.Fatal(err)
	}
	if err := sp.each(&xlsxBatch{}, func(*xlsxBatch) error { return nil }); err == nil || !strings.Contains(err.Error(), "unexpected EOF") {
		t.Errorf("a spool cut short read back: %v, want an unexpected EOF", err)
	}
	sp.close()
	if es, _ := os.ReadDir(dir); len(es) != 0 {
		t.Fatalf("the spool left %v", es)
	}
}
