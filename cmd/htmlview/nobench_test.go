package htmlview_test

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/layermap/layermap/cmd/htmlview"
	"github.com/layermap/layermap/mapping/compare"
	"github.com/layermap/layermap/printparse/testkit"
)

// writtenAgain is a CompareSink without PatchNoBench: compare writes the
// table again when the no-bench downcast applies.
type writtenAgain struct{ s *htmlview.CompareSink }

func (w writtenAgain) Header(cols []string) error                         { return w.s.Header(cols) }
func (w writtenAgain) Row(c []compare.Cell, m compare.RowMark) error      { return w.s.Row(c, m) }
func (w writtenAgain) Line(line []byte, m compare.RowMark) error          { return w.s.Line(line, m) }
func (w writtenAgain) Reset() error                                       { return w.s.Reset() }
func (w writtenAgain) Ext() string                                        { return w.s.Ext() }
func (w writtenAgain) WriteView(o io.Writer, r *compare.RankReport) error { return w.s.WriteView(o, r) }

// noBenchPair is a dump pair whose rows without bench data hold int
// statistics (an int input the bench side lacks, int tensors of NPU-only
// API calls), among module rows that pass and rows that differ.
func noBenchPair(t *testing.T) (npu, bench string) {
	dir := t.TempDir()
	tensor := func(dtype, max, mean string) string {
		return `{"type": "torch.Tensor", "dtype": "` + dtype + `", "shape": [4], "Max": ` + max + `, "Min": 0.0, "Mean": ` + mean + `, "Norm": 2.5, "requires_grad": false}`
	}
	flag := `"input_kwargs": {"inplace": {"type": "bool", "value": false}}` // not a number: no float block
	var n, b []string
	for i := range 60 {
		out := fmt.Sprint(1.5 + float64(i%7)/4)
		name := fmt.Sprintf(`"Module.layers.%d.Linear.forward.0"`, i)
		n = append(n, name+`: {"input_args": [`+tensor("torch.float32", "1.5", "0.75")+fmt.Sprintf(`, {"type": "int", "value": %d}`, 700001+i)+
			`], `+flag+`, "output": [`+tensor("torch.float32", out, "0.5")+`]}`)
		if i%5 == 0 {
			out = fmt.Sprint(9.5 + float64(i))
		}
		b = append(b, name+`: {"input_args": [`+tensor("torch.float32", "1.5", "0.75")+`], `+flag+`, "output": [`+tensor("torch.float32", out, "0.5")+`]}`)
		if i%3 == 0 {
			n = append(n, fmt.Sprintf(`"Torch.argmax.%d.forward": {"input_args": [`, i)+tensor("torch.float32", "2.0", "1.0")+
				`], "output": [`+tensor("torch.int64", fmt.Sprint(800001+i), "3.25")+`]}`)
		}
	}
	return testkit.DumpDir(t, dir, "npu", strings.Join(n, ", ")), testkit.DumpDir(t, dir, "bench", strings.Join(b, ", "))
}

// The page of a table the no-bench downcast changes is the same whether
// compare patches it or writes the table again, the page cut to its
// budget or not: its rows are counted as the downcast prints them either
// way.
func TestNoBenchPatchedPage(t *testing.T) {
	t.Parallel()
	n, b := noBenchPair(t)
	root := testkit.Corpus(t, "msprobe", "golden/synth_statistics")
	pairs := []struct {
		name, npu, bench string
		cut              int    // a budget that leaves rows out
		want             string // on each page: a patched cell
	}{
		{"synthetic", n, b, 40_000, `"[78]000[0-9][0-9]\.0"`},
		{"synth_statistics", filepath.Join(root, "npu"), filepath.Join(root, "bench"), 12_000, `"24\.0"`},
	}
	for _, p := range pairs {
		for _, xlsx := range []bool{false, true} {
			for _, budget := range []int{0, p.cut} {
				name := fmt.Sprintf("%s/xlsx=%v/budget=%d", p.name, xlsx, budget)
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					var files [2]map[string][]byte
					var passes [2]int
					var cut bool
					for k, again := range []bool{false, true} {
						dir := t.TempDir()
						opt := compare.Options{Target: p.npu, Golden: p.bench, OutDir: dir, XLSX: xlsx,
							Stamp: time.Date(2026, 12, 6, 10, 0, 0, 0, time.Local)}
						var sink *htmlview.CompareSink
						opt.Views = compare.ViewFunc(func(d compare.ViewDumps) compare.ViewSink {
							sink = htmlview.NewCompareSink(d, nil)
							if budget > 0 {
								sink.Budget = budget
							}
							if again {
								return writtenAgain{sink}
							}
							return sink
						})
						rep, err := compare.Run(opt)
						if err != nil {
							t.Fatal(err)
						}
						rr := rep.Ranks[0]
						passes[k] = rr.Summary.Passes
						v, err := sink.View(&rr)
						if err != nil {
							t.Fatal(err)
						}
						cut = v.Table.Total != nil
						files[k] = testkit.ReadDir(t, dir)
					}
					if passes[0] != 1 || passes[1] != 2 {
						t.Errorf("%d passes patched, %d written again; want 1 and 2", passes[0], passes[1])
					}
					if cut != (budget > 0) {
						t.Errorf("rows left out: %v, with a budget of %d", cut, budget)
					}
					if len(files[0]) != 2 || len(files[0]) != len(files[1]) {
						t.Fatalf("%d files patched, %d written again", len(files[0]), len(files[1]))
					}
					for f, data := range files[1] {
						if !bytes.Equal(files[0][f], data) {
							t.Errorf("%s patched differs from %s written again", f, f)
						}
						if strings.HasSuffix(f, ".html") && !regexp.MustCompile(p.want).Match(data) {
							t.Errorf("%s: no %s", f, p.want)
						}
					}
				})
			}
		}
	}
}
