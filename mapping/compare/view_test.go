package compare

import (
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/layermap/layermap/printparse/msprobe"
	"github.com/layermap/layermap/printparse/testkit"
)

// countView is a ViewSink that counts the rows and writes the count.
type countView struct{ rows, resets int }

func (c *countView) Header([]string) error     { return nil }
func (c *countView) Row([]Cell, RowMark) error { c.rows++; return nil }
func (c *countView) Reset() error              { c.rows = 0; c.resets++; return nil }
func (c *countView) Ext() string               { return ".view" }
func (c *countView) WriteView(w io.Writer, rr *RankReport) error {
	_, err := fmt.Fprintf(w, "%d rows of %d", c.rows, rr.Summary.Rows)
	return err
}

// Options.Views: the view sees every row of the table and its file is
// committed beside the table, with the table's name and time stamp.
func TestViewBesideTable(t *testing.T) {
	dir := t.TempDir()
	n := testkit.Testdata(t, "demo", "dumps", "llamafactory")
	b := testkit.Testdata(t, "demo", "dumps", "mindspeed-mm")
	var v *countView
	rep, err := Run(Options{Target: n, Golden: b, OutDir: dir, Views: ViewFunc(func(npu, bench msprobe.Paths) ViewSink {
		if npu.Dir != n || bench.Dir != b {
			t.Errorf("view of %s and %s, want the rank folders", npu.Dir, bench.Dir)
		}
		v = &countView{}
		return v
	})})
	if err != nil {
		t.Fatal(err)
	}
	files := rep.Ranks[0].Files
	if len(files) != 2 || !strings.HasSuffix(files[1], ".view") || strings.TrimSuffix(files[1], ".view") != strings.TrimSuffix(files[0], ".csv") {
		t.Fatalf("files %v, want the table and the view with the same name", files)
	}
	got, err := os.ReadFile(files[1])
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%d rows of %d", rep.Ranks[0].Summary.Rows, rep.Ranks[0].Summary.Rows)
	if string(got) != want {
		t.Errorf("view file %q, want %q", got, want)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Errorf("output folder holds %d files, want the table and the view", len(ents))
	}
}
