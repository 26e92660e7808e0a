package compare

import (
	"reflect"
	"strconv"
	"testing"

	"github.com/layermap/layermap/printparse/msprobe"
	"github.com/layermap/layermap/printparse/msprobe/dumpgen"
)

// stackMap is a Config.Stack in a map.
type stackMap map[string][]string

func (m stackMap) Frames(name string) ([]string, bool) {
	fr, ok := m[name]
	return fr, ok
}

// lineSink keeps the rows given as CSV lines.
type lineSink struct {
	memSink
	lines []string
}

func (l *lineSink) Line(line []byte, _ RowMark) error {
	l.lines = append(l.lines, string(line))
	return nil
}

func (l *lineSink) Reset() error { l.lines = nil; return nil }

// TestLinesEqualCells: the CSV lines rendered for line sinks are the
// cells rendered for cell sinks, CSV-encoded, in every mode, on rows
// with odd values (strings, bools, ints, NaN, infinities, None), with the
// stack column, and with NPU and bench texts that differ or are equal,
// quoted or not.
func TestLinesEqualCells(t *testing.T) {
	npu := genEntries(t, dumpgen.Options{Seed: 5, Layers: 3, Hidden: 64})
	bench := oddBench(genEntries(t, dumpgen.Options{Seed: 5, Layers: 3, Hidden: 64, Perturb: 0.02}), 17)
	for i := range bench {
		for k := range bench[i].Items {
			switch it := &bench[i].Items[k]; (i + k) % 4 {
			case 1:
				it.Shape, it.Dtype = "[2, 3]", "torch.\"x\""
			case 2:
				it.Shape, it.Dtype = "[]", "torch.bfloat16"
			}
		}
	}
	npuOdd := oddBench(npu, 19)
	for i := range npuOdd {
		if i%5 == 0 && len(npuOdd[i].Items) > 0 {
			npuOdd[i].Items[0].Stats[2] = msprobe.Value{Kind: msprobe.String, Text: "a,b\"c"}
		}
	}
	stack := stackMap{}
	for i, e := range npu {
		switch i % 3 {
		case 0:
			stack[e.Name] = []string{"File a.py, line 1, in f, \n x = \"y\"", "File b.py, line 2, in g"}
		case 1:
			stack[e.Name] = []string{}
		}
	}
	for _, cfg := range []Config{{Mode: Statistics}, {Mode: Statistics, Stack: stack}, {Mode: MD5},
		{Mode: Tensor, Tensor: nameMetrics{}, Stack: stack}} {
		for _, n := range [][][]msprobe.Entry{{npu}, {npuOdd}} {
			var cells memSink
			var lines lineSink
			if _, err := Compare(memSource(n[0]...), memSource(bench...), cfg, &cells); err != nil {
				t.Fatal(err)
			}
			if _, err := Compare(memSource(n[0]...), memSource(bench...), cfg, &lines); err != nil {
				t.Fatal(err)
			}
			if len(lines.lines) != len(cells.rows) || len(lines.rows) != 0 {
				t.Fatalf("%d lines, %d rows of cells (%d through Row)", len(lines.lines), len(cells.rows), len(lines.rows))
			}
			for i, r := range cells.rows {
				var want []byte
				for k, c := range r {
					if k > 0 {
						want = append(want, ',')
					}
					want = appendCSVField(want, c)
				}
				want = append(want, '\n')
				if lines.lines[i] != string(want) {
					t.Fatalf("mode %v row %d:\nline  %q\ncells %q", cfg.Mode, i, lines.lines[i], want)
				}
			}
		}
	}
}

// lateStacks is a stackMap read in the background: ready reports false
// for its first calls (the NPU reader then leaves the cells to the join).
type lateStacks struct {
	stackMap
	calls, after int
}

func (l *lateStacks) ready() bool {
	l.calls++ // the NPU reader's goroutine alone asks
	return l.calls > l.after
}

// TestStackCellsLate: the stack column is the same whether stack.json is
// read before the NPU reader needs it, after it is done, or midway (the
// join then sets the cells of the entries read before), and entries with
// no stack or an empty one keep N/A and "[]".
func TestStackCellsLate(t *testing.T) {
	t.Parallel()
	npu := genEntries(t, dumpgen.Options{Seed: 7, Layers: 3, Hidden: 64})
	bench := genEntries(t, dumpgen.Options{Seed: 7, Layers: 3, Hidden: 64, Perturb: 0.02})
	stack := stackMap{}
	for i, e := range npu {
		switch i % 3 {
		case 0:
			stack[e.Name] = []string{"File a.py, line " + strconv.Itoa(i%7) + ", in f", "File b.py, line 2, in g"}
		case 1:
			stack[e.Name] = []string{}
		}
	}
	var want memSink
	if _, err := Compare(memSource(npu...), memSource(bench...), Config{Mode: Statistics, Stack: stack}, &want); err != nil {
		t.Fatal(err)
	}
	if len(want.rows) == 0 {
		t.Fatal("no rows")
	}
	for _, after := range []int{0, 1, len(npu) / 2, len(npu) + 1} {
		var got memSink
		late := &lateStacks{stackMap: stack, after: after}
		if _, err := Compare(memSource(npu...), memSource(bench...), Config{Mode: Statistics, Stack: late}, &got); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got.rows, want.rows) {
			t.Errorf("ready after %d calls: the table differs from the one with stacks read first", after)
		}
	}
}

// TestEntryWithoutKey: an NPU entry whose name has no compare key (no
// forward or backward part) gives no rows, and the rows of the entries
// around it come out once each.
func TestEntryWithoutKey(t *testing.T) {
	t.Parallel()
	a := tensorEntry("Tensor.add.0.forward", ".input.0", ".output.0")
	odd := tensorEntry("Tensor.weird_entry", ".input.0")
	b := tensorEntry("Tensor.mul.0.forward", ".input.0")
	var want, got memSink
	if _, err := Compare(memSource(a, b), memSource(a, b), Config{Mode: Statistics}, &want); err != nil {
		t.Fatal(err)
	}
	if _, err := Compare(memSource(a, odd, b), memSource(a, b), Config{Mode: Statistics}, &got); err != nil {
		t.Fatal(err)
	}
	if len(want.rows) != 3 || !reflect.DeepEqual(got.rows, want.rows) {
		t.Errorf("with an entry without a key: %d rows %q, want %d rows %q", len(got.rows), got.rows, len(want.rows), want.rows)
	}
}
