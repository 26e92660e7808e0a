package msprobe

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/layermap/layermap/printparse/source"
	"github.com/layermap/layermap/printparse/testkit"
)

// scanAll returns every item of the dump file, in order, and the header.
func scanAll(t testing.TB, path string) ([]Entry, []Item, Header) {
	t.Helper()
	var entries []Entry
	var items []Item
	h, err := ScanFile(path, func(e *Entry) error {
		entries = append(entries, *e)
		items = append(items, e.Items...)
		return nil
	})
	if err != nil {
		t.Fatalf("scan %s: %v", path, err)
	}
	return entries, items, h
}

// csvStat reports whether our statistic v prints as the golden cell
// does. Tolerated differences, all of them rules of the table writer
// (helper C), not of the reader: NaN prints "Nan", float ±inf gets a
// leading space, a JSON null prints "None", and an int may print with
// ".0" where pandas turned the column block into floats (spec §4.6.2-3).
func csvStat(v Value, cell string) bool {
	s := v.PyStr()
	switch {
	case cell == s:
		return true
	case v.Kind == NaN:
		return cell == "Nan"
	case v.Kind == PosInf || v.Kind == NegInf:
		return cell == " "+s
	case v.IsInt():
		return cell == s+".0"
	}
	return false
}

// TestGoldenNPUColumns checks, for every msprobe golden CSV, that the
// NPU-side rows (name, dtype, shape, requires_grad, statistics or md5,
// data_name) are exactly our flattening of the NPU dump.json, in order.
func TestGoldenNPUColumns(t *testing.T) {
	c := testkit.Corpus(t, "msprobe")
	tests := []struct{ csvGlob, dump string }{
		{"golden/synth_statistics/output/compare_result_*.csv", "golden/synth_statistics/npu/dump.json"},
		{"golden/synth_md5/output/compare_result_*.csv", "golden/synth_md5/npu/dump.json"},
		{"golden/synth_tensor_pt/output/compare_result_*.csv", "golden/synth_tensor_pt/npu/dump.json"},
		{"golden/synth_multirank/output/compare_result_rank0_*.csv", "golden/synth_multirank/npu/step0/rank0/dump.json"},
		{"golden/synth_multirank/output/compare_result_rank1_*.csv", "golden/synth_multirank/npu/step0/rank1/dump.json"},
		{"golden/quick_start_step0_vs_step1_nostack/output/compare_result_*.csv", "examples/quick_start/gpu_dump/step0/proc2016/dump.json"},
		{"golden/qwen25vl_llamafactory_vs_mindspeed_reverse_template/output/compare_result_*.csv",
			"golden/qwen25vl_llamafactory_vs_mindspeed_reverse_template/npu/proc12360/dump.json"},
		{"golden/layer_mapping_ms_vs_pt/output/compare_result_*.csv", "test/msprobe_test/resources/layer_mapping/mindspore/dump.json"},
	}
	benchDumps := map[string]string{
		"golden/synth_statistics/npu/dump.json":                                              "golden/synth_statistics/bench/dump.json",
		"golden/synth_md5/npu/dump.json":                                                     "golden/synth_md5/bench/dump.json",
		"golden/synth_tensor_pt/npu/dump.json":                                               "golden/synth_tensor_pt/bench/dump.json",
		"golden/synth_multirank/npu/step0/rank0/dump.json":                                   "golden/synth_multirank/bench/step0/rank0/dump.json",
		"golden/synth_multirank/npu/step0/rank1/dump.json":                                   "golden/synth_multirank/bench/step0/rank1/dump.json",
		"examples/quick_start/gpu_dump/step0/proc2016/dump.json":                             "examples/quick_start/gpu_dump/step1/proc2016/dump.json",
		"golden/qwen25vl_llamafactory_vs_mindspeed_reverse_template/npu/proc12360/dump.json": "golden/qwen25vl_llamafactory_vs_mindspeed_reverse_template/bench/proc12353/dump.json",
		"test/msprobe_test/resources/layer_mapping/mindspore/dump.json":                      "test/msprobe_test/resources/layer_mapping/pytorch/dump.json",
	}
	for _, tt := range tests {
		t.Run(strings.Split(tt.csvGlob, "/")[1], func(t *testing.T) {
			matches, err := filepath.Glob(filepath.Join(c, tt.csvGlob))
			if err != nil || len(matches) != 1 {
				t.Fatalf("golden %s: %v %v", tt.csvGlob, matches, err)
			}
			rows := testkit.ReadCSV(t, matches[0])
			_, items, _ := scanAll(t, filepath.Join(c, tt.dump))
			header := rows[0]
			col := func(name string) int {
				for i, h := range header {
					if h == name {
						return i
					}
				}
				return -1
			}
			name, dtype, shape, rg := col("NPU Name"), col("NPU Dtype"), col("NPU Tensor Shape"), col("NPU Requires_grad")
			stats := [4]int{col("NPU max"), col("NPU min"), col("NPU mean"), col("NPU l2norm")}
			md5, dataName := col("NPU MD5"), col("Data_name")
			body := rows[1:]
			if len(body) != len(items) {
				t.Errorf("golden has %d rows, we flatten %d items", len(body), len(items))
			}
			bad := 0
			for i := 0; i < len(body) && i < len(items); i++ {
				r, it := body[i], items[i]
				var diffs []string
				check := func(what, got, want string) {
					if got != want {
						diffs = append(diffs, fmt.Sprintf("%s %q, golden %q", what, got, want))
					}
				}
				check("name", it.Name, r[name])
				check("dtype", it.Dtype, r[dtype])
				check("shape", it.Shape, r[shape])
				wantRG := r[rg]
				if wantRG == "N/A" {
					wantRG = ""
				}
				check("requires_grad", it.RequiresGrad, wantRG)
				if stats[0] >= 0 {
					for k, ci := range stats {
						if !csvStat(it.Stats[k], r[ci]) {
							diffs = append(diffs, fmt.Sprintf("stat %d %q (kind %d), golden %q", k, it.Stats[k].PyStr(), it.Stats[k].Kind, r[ci]))
						}
					}
				}
				if md5 >= 0 {
					want := r[md5]
					if it.NoneItem && want == "N/A" {
						want = ""
					}
					check("md5", it.MD5, want)
				}
				if dataName >= 0 {
					// "['npu.pt', 'bench.pt']"
					cell := strings.TrimPrefix(r[dataName], "['")
					check("data_name", it.DataName, cell[:strings.Index(cell, "'")])
				}
				if len(diffs) > 0 {
					bad++
					if bad <= 10 {
						t.Errorf("row %d %s: %s", i+1, r[name], strings.Join(diffs, "; "))
					}
				}
			}
			if bad > 10 {
				t.Errorf("... %d rows differ", bad)
			}

			// Bench side: every matched row's bench columns are one of our
			// bench rows with that name (the dtype gate blanks some rows to
			// N/A; those are skipped).
			_, bitems, _ := scanAll(t, filepath.Join(c, benchDumps[tt.dump]))
			byName := map[string][]Item{}
			for _, it := range bitems {
				byName[it.Name] = append(byName[it.Name], it)
			}
			bname, bdtype, bshape := col("Bench Name"), col("Bench Dtype"), col("Bench Tensor Shape")
			bstats := [4]int{col("Bench max"), col("Bench min"), col("Bench mean"), col("Bench l2norm")}
			checked := 0
			for i, r := range body {
				if r[bname] == "N/A" || r[bdtype] == "N/A" {
					continue
				}
				found := false
				for _, it := range byName[r[bname]] {
					ok := it.Dtype == r[bdtype] && it.Shape == r[bshape]
					for k, ci := range bstats {
						if ci >= 0 && !csvStat(it.Stats[k], r[ci]) {
							ok = false
						}
					}
					found = found || ok
				}
				if !found {
					t.Errorf("row %d: bench %s %s %s: no bench row of ours matches (have %d of that name)", i+1, r[bname], r[bdtype], r[bshape], len(byName[r[bname]]))
				}
				checked++
			}
			if checked == 0 {
				t.Error("no bench row checked")
			}
		})
	}
}

// TestCorpusScan scans every dump.json of the corpus and compares a
// summary (and, for small files, every row) with testdata/corpus.golden.
// Regenerate with -update and review the diff.
func TestCorpusScan(t *testing.T) {
	c := testkit.Corpus(t, "msprobe")
	var files []string
	err := filepath.WalkDir(c, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && (d.Name() == "dump.json" || strings.HasPrefix(d.Name(), "test_") && strings.HasSuffix(d.Name(), ".json") ||
			strings.HasSuffix(d.Name(), "_no_framework.json") || d.Name() == "dump_no_pt_no_ms.json") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	var b strings.Builder
	for _, p := range files {
		rel, _ := filepath.Rel(c, p)
		var entries, items int
		var rows strings.Builder
		h, err := ScanFile(p, func(e *Entry) error {
			entries++
			items += len(e.Items)
			fmt.Fprintf(&rows, "  entry %d %s line=%d split=%s|%s|%s fwd=%d bwd=%d md5=%v\n", e.Index, e.Name, e.Line,
				e.OpNoNumber, e.CallDirection, e.Direction, e.ForwardCallOrder, e.BackwardCallOrder, e.HasMD5)
			for _, it := range e.Items {
				fmt.Fprintf(&rows, "    %s\n", formatItem(it))
			}
			return nil
		})
		if err != nil {
			var de *source.Error
			if !errors.As(err, &de) {
				t.Errorf("%s: error without line: %v", rel, err)
			}
			fmt.Fprintf(&b, "%s: error: %s\n", rel, strings.TrimPrefix(err.Error(), c+"/"))
			continue
		}
		sum := sha256.Sum256([]byte(rows.String()))
		fmt.Fprintf(&b, "%s: task=%s level=%s framework=%s missing=%v entries=%d kept=%d items=%d md5=%v skipped=%q rows=%x\n",
			rel, h.Task, h.Level, h.Framework, h.FrameworkMissing, h.Entries, entries, items, h.MD5, h.Skipped, sum[:8])
		if items < 200 {
			b.WriteString(rows.String())
		}
	}
	testkit.Golden(t, filepath.Join("testdata", "corpus.golden"), []byte(b.String()))
}

func formatItem(it Item) string {
	var st [4]string
	for k, v := range it.Stats {
		st[k] = fmt.Sprintf("%d:%s", v.Kind, v.PyStr())
	}
	s := fmt.Sprintf("%s [%s] dtype=%s shape=%s rg=%q stats=%s md5=%s data=%s type=%s line=%d",
		it.Name, it.State, it.Dtype, it.Shape, it.RequiresGrad, strings.Join(st[:], ","), it.MD5, it.DataName, it.Type, it.Line)
	if it.NoneItem {
		s += " NONE"
	}
	if it.P2P {
		s += fmt.Sprintf(" p2p op=%s peer=%s", it.Op, it.Peer)
	}
	return s
}

// scanString scans src as a dump.json named name.
func scanString(name, src string) ([]Entry, Header, error) {
	var es []Entry
	h, err := Scan(strings.NewReader(src), name, func(e *Entry) error {
		es = append(es, *e)
		return nil
	})
	return es, h, err
}

var _ = io.EOF
