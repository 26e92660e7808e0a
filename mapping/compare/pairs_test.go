package compare

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/layermap/layermap/printparse/testkit"
)

// TestPairsQwen pairs a text-decoder MLP projection the layer mapping
// leaves unmatched (LLaMA-Factory down_proj vs MindSpeed linear_fc2): its
// module rows and the Functional.linear call inside it get bench partners.
func TestPairsQwen(t *testing.T) {
	q := filepath.Join(testkit.Corpus(t, "msprobe"), "golden", "qwen25vl_llamafactory_vs_mindspeed_reverse_template")
	pf := filepath.Join(t.TempDir(), "pairs.yaml")
	os.WriteFile(pf, []byte("- npu: module.model.layers.0.mlp.down_proj\n  bench: 0.module.module.text_decoder.decoder.layers.0.mlp.linear_fc2\n"), 0o644)
	out := t.TempDir()
	rep, err := Run(Options{Target: filepath.Join(q, "npu"), Golden: filepath.Join(q, "bench"), OutDir: out,
		DataMappingFile: filepath.Join(q, "output", "data_mapping.yaml"),
		PairsFile:       pf,
		Stamp:           time.Unix(0, 0)})
	if err != nil {
		t.Fatal(err)
	}
	sum := rep.Ranks[0].Summary
	recs := testkit.ReadCSV(t, rep.Ranks[0].Files[0])
	got := map[string]string{}
	for _, r := range recs[1:] {
		got[r[0]] = r[1]
	}
	want := map[string]string{
		"Module.module.model.layers.0.mlp.down_proj.Linear.forward.0.input.0":  "Module.0.module.module.text_decoder.decoder.layers.0.mlp.linear_fc2.RowParallelLinear.forward.0.input.0",
		"Module.module.model.layers.0.mlp.down_proj.Linear.forward.0.output.0": "Module.0.module.module.text_decoder.decoder.layers.0.mlp.linear_fc2.RowParallelLinear.forward.0.output.0",
		// APIs called inside the paired calls, paired by position (construct.json)
		"Tensor.__mul__.27.forward.input.0":  "Tensor.__mul__.24.forward.input.0",
		"Tensor.__add__.27.forward.output.0": "Tensor.__add__.24.forward.output.0",
	}
	for k, v := range want {
		g, ok := got[k]
		if !ok {
			t.Errorf("row %s missing", k)
			continue
		}
		if g != v {
			t.Errorf("%s -> %s, want %s", k, g, v)
		}
	}
	if sum.MatchedBy["pairs"] != 10 {
		t.Errorf("pairs matched %d rows, want 10 (module in/params/out + 2 APIs): %v", sum.MatchedBy["pairs"], sum.MatchedBy)
	}
}

// TestMixDirs: folders holding graph/ and pynative/ are compared per
// common <name>/<step>, into OUT/<name>/<step>, as msprobe's mix_compare
// does: each rank pair's table is the one its dump.json pair gives alone
// (the synth_statistics golden under graph/, synth_md5's under
// pynative/, byte for byte), named per rank; a step without a partner
// is left out.
func TestMixDirs(t *testing.T) {
	g := filepath.Join(testkit.Corpus(t, "msprobe"), "golden")
	root := t.TempDir()
	pairs := []struct{ sub, golden, table string }{
		{"graph/step0", "synth_statistics", "compare_result_20261202120248.csv"},
		{"pynative/step0", "synth_md5", "compare_result_20261202120252.csv"},
	}
	for _, p := range pairs {
		for _, side := range []string{"npu", "bench"} {
			for _, f := range []string{"dump.json", "stack.json"} {
				if src := filepath.Join(g, p.golden, side, f); fileExists(src) {
					copyFile(t, src, filepath.Join(root, side, p.sub, "rank0"))
				}
			}
		}
	}
	copyFile(t, filepath.Join(g, "synth_statistics", "npu", "dump.json"), filepath.Join(root, "npu", "pynative", "step1", "rank0")) // no bench partner
	out := t.TempDir()
	rep, err := Run(Options{Target: filepath.Join(root, "npu"), Golden: filepath.Join(root, "bench"), OutDir: out,
		Stamp: time.Unix(0, 0)})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Ranks) != len(pairs) {
		t.Fatalf("%d tables, want %d", len(rep.Ranks), len(pairs))
	}
	for i, p := range pairs {
		f := rep.Ranks[i].Files[0]
		if filepath.Dir(f) != filepath.Join(out, p.sub) || !strings.HasPrefix(filepath.Base(f), "compare_result_rank0_") {
			t.Errorf("table %d at %s", i, f)
		}
		want, err := os.ReadFile(filepath.Join(g, p.golden, "output", p.table))
		if err != nil {
			t.Fatal(err)
		}
		got, _ := os.ReadFile(f)
		diffCSV(t, p.sub, got, want)
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// TestFuzzyStatisticsGolden: msprobe's -fm on the multirank rank0 files
// (golden output_fuzzy_match_bug_rank0) leaves every row unmatched because
// its fuzzy result frame is misaligned outside tensor mode. The intended
// algorithm pairs every row there, and since the two dumps call the same
// APIs in the same order the table equals the exact-match golden.
func TestFuzzyStatisticsGolden(t *testing.T) {
	mr := filepath.Join(testkit.Corpus(t, "msprobe"), "golden", "synth_multirank")
	out := t.TempDir()
	rep, err := Run(Options{Target: filepath.Join(mr, "npu/step0/rank0/dump.json"), Golden: filepath.Join(mr, "bench/step0/rank0/dump.json"),
		OutDir: out, Fuzzy: true, Stamp: time.Unix(0, 0)})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(rep.Ranks[0].Files[0])
	exact, _ := os.ReadFile(filepath.Join(mr, "output", "compare_result_rank0_20261202120457.csv"))
	diffCSV(t, "fuzzy rank0", got, exact)
	bug, _ := filepath.Glob(filepath.Join(mr, "output_fuzzy_match_bug_rank0", "*.csv"))
	if len(bug) != 1 {
		t.Fatal("bug golden missing")
	}
	b, _ := os.ReadFile(bug[0])
	if strings.Count(string(b), "\n") != strings.Count(string(got), "\n") {
		t.Errorf("row count differs from msprobe's -fm output")
	}
	if s := rep.Ranks[0].Summary; s.MatchedBy["fuzzy"] != s.Rows {
		t.Errorf("fuzzy matched %d of %d rows", s.MatchedBy["fuzzy"], s.Rows)
	}
}
