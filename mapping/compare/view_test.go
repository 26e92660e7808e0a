package compare

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/layermap/layermap/mapping/resolve"
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
	rep, err := Run(Options{Target: n, Golden: b, OutDir: dir, Views: ViewFunc(func(d ViewDumps) ViewSink {
		if d.NPU.Dir != n || d.Bench.Dir != b {
			t.Errorf("view of %s and %s, want the rank folders", d.NPU.Dir, d.Bench.Dir)
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

// skimmingView is a countView that skimmed the dump.json files as
// resolve.SkimEntries does (compare.EntriesView).
type skimmingView struct {
	countView
	entries [2]*resolve.Entries
}

func (v *skimmingView) TakeEntries() (npu, bench *resolve.Entries) {
	npu, bench = v.entries[0], v.entries[1]
	v.entries = [2]*resolve.Entries{}
	return npu, bench
}

// A view's skims of the dump.json files serve compare's indexes (the
// join's, or the N:1 detection's with a data mapping): the bench file is
// not skimmed again, and the table is the same. With a layer mapping the
// view gets both sides' entries as the mapping read them.
func TestViewSharesEntries(t *testing.T) {
	t.Parallel()
	n, b := testkit.Testdata(t, "demo", "dumps", "llamafactory"), testkit.Testdata(t, "demo", "dumps", "mindspeed-mm")
	q := filepath.Join(testkit.Corpus(t, "msprobe"), "golden", "qwen25vl_llamafactory_vs_mindspeed_reverse_template")
	for _, c := range []struct {
		name       string
		npu, bench string
		share      bool
		lm, dm     string
		skims      int
	}{
		{name: "no view entries", npu: n, bench: b, skims: 1},
		{name: "view entries", npu: n, bench: b, share: true},
		{name: "data mapping, no view entries", npu: filepath.Join(q, "npu"), bench: filepath.Join(q, "bench"), dm: filepath.Join(q, "output", "data_mapping.yaml"), skims: 1},
		{name: "data mapping, view entries", npu: filepath.Join(q, "npu"), bench: filepath.Join(q, "bench"), share: true, dm: filepath.Join(q, "output", "data_mapping.yaml")},
		{name: "layer mapping", npu: n, bench: b, share: true, lm: qwenLayerMapping},
	} {
		t.Run(c.name, func(t *testing.T) {
			var tr joinTrace
			var dumps ViewDumps
			dir := t.TempDir()
			opt := Options{Target: c.npu, Golden: c.bench, OutDir: dir, trace: &tr, Stamp: time.Date(2026, 12, 6, 10, 0, 0, 0, time.Local),
				LayerMappingFile: c.lm, DataMappingFile: c.dm,
				Views: ViewFunc(func(d ViewDumps) ViewSink {
					dumps = d
					v := &skimmingView{}
					if c.share {
						for k, p := range []msprobe.Paths{d.NPU, d.Bench} {
							var err error
							if _, v.entries[k], err = resolve.SkimEntries(p.DumpJSON); err != nil || v.entries[k] == nil {
								t.Fatalf("SkimEntries: %v, %v", v.entries[k], err)
							}
						}
					}
					return v
				})}
			if _, err := Run(opt); err != nil {
				t.Fatal(err)
			}
			if tr.skims != c.skims {
				t.Errorf("the bench dump.json skimmed %d times by the indexes, want %d", tr.skims, c.skims)
			}
			if got := dumps.NPUEntries != nil && dumps.BenchEntries != nil; got != (c.lm != "") {
				t.Errorf("the view got the dumps' entries: %v, want %v", got, c.lm != "")
			}
			want := Options{Target: c.npu, Golden: c.bench, OutDir: t.TempDir(), Stamp: opt.Stamp, LayerMappingFile: c.lm, DataMappingFile: c.dm}
			if _, err := Run(want); err != nil {
				t.Fatal(err)
			}
			got, exp := testkit.ReadDir(t, dir), testkit.ReadDir(t, want.OutDir)
			for name, data := range exp {
				if !bytes.Equal(got[name], data) {
					t.Errorf("%s differs from the run without a view", name)
				}
			}
		})
	}
}
