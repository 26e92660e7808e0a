package compare

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/layermap/layermap/mapping"
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

// TestPairsBackward: a pair maps the k-th forward and the k-th backward
// call of the NPU module (file order) to the k-th of the bench module's,
// the APIs called in them too, with and without -fm. msprobe keys the
// bench rows of backward calls by their renumbered names unless -fm is
// given (update_backward_call, spec §3.2), so a pair names the bench row
// by that key, as a data mapping's values are compared with it. Here the
// bench module b.B numbers its backward calls 3 and 2 (their keys 0 and
// 1: the raw names find no row), d.D numbers them 1 and 0 (the raw names
// find each other's rows), and so do the N:1 groups' modules, the many
// on either side (compared through the plan, which keys them alike). The
// unpaired gelu backward call is matched by its renumbered name, which
// -fm and a data mapping (whose NPU keys are the raw names) leave
// unmatched.
func TestPairsBackward(t *testing.T) {
	t.Parallel()
	tensor := func(size int, max float64) string {
		return fmt.Sprintf(`{"type": "torch.Tensor", "dtype": "torch.float32", "shape": [%d], "Max": %g, "Min": 0.0, "Mean": 0.5, "Norm": 1.0, "requires_grad": false}`, size, max)
	}
	var stat float64
	entry := func(name string, size int) string { // a call's input and output, each its own statistics
		in := "input_args"
		if strings.Contains(name, ".backward") {
			in = "input"
		}
		stat++
		return fmt.Sprintf(`%q: {%q: [%s], "output": [%s]}`, name, in, tensor(size, stat), tensor(size, stat+0.5))
	}
	dump := func(dir, side string, entries []string, construct map[string]string) string {
		var b strings.Builder
		for i, e := range entries {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(e)
		}
		d := testkit.DumpDir(t, dir, side, b.String())
		c, err := json.Marshal(construct)
		if err != nil {
			t.Fatal(err)
		}
		testkit.WriteFile(t, d, "construct.json", string(c))
		return d
	}
	dir := t.TempDir()
	npu := dump(dir, "npu", []string{
		entry("Functional.gelu.0.forward", 2),
		entry("Module.a.A.forward.0", 2), entry("Functional.relu.0.forward", 2),
		entry("Module.a.A.forward.1", 2), entry("Functional.relu.1.forward", 2),
		entry("Module.c.C.forward.0", 2), entry("Module.c.C.forward.1", 2),
		entry("Module.f.F.forward.0", 4), entry("Module.f.F.forward.1", 4),
		entry("Module.h.q1.E.forward.0", 2), entry("Module.h.q2.E.forward.0", 2),
		entry("Module.h.q1.E.forward.1", 2), entry("Module.h.q2.E.forward.1", 2),
		entry("Module.h.q2.E.backward.1", 2), entry("Module.h.q1.E.backward.1", 2),
		entry("Module.h.q2.E.backward.0", 2), entry("Module.h.q1.E.backward.0", 2),
		entry("Module.f.F.backward.1", 4), entry("Module.f.F.backward.0", 4),
		entry("Module.c.C.backward.1", 2), entry("Module.c.C.backward.0", 2),
		entry("Module.a.A.backward.1", 2), entry("Functional.relu.1.backward", 2),
		entry("Module.a.A.backward.0", 2), entry("Functional.relu.0.backward", 2),
		entry("Functional.gelu.1.backward", 2),
	}, map[string]string{
		"Functional.relu.0.forward": "Module.a.A.forward.0", "Functional.relu.1.forward": "Module.a.A.forward.1",
		"Functional.relu.1.backward": "Module.a.A.backward.1", "Functional.relu.0.backward": "Module.a.A.backward.0",
	})
	bench := dump(dir, "bench", []string{
		entry("Functional.gelu.0.forward", 2),
		entry("Module.b.B.forward.0", 2), entry("Functional.relu.0.forward", 2),
		entry("Module.b.B.forward.1", 2), entry("Functional.relu.1.forward", 2),
		entry("Module.d.D.forward.0", 2), entry("Module.d.D.forward.1", 2),
		entry("Module.g.p1.E.forward.0", 2), entry("Module.g.p2.E.forward.0", 2),
		entry("Module.g.p1.E.forward.1", 2), entry("Module.g.p2.E.forward.1", 2),
		entry("Module.k.K.forward.0", 4), entry("Module.k.K.forward.1", 4),
		entry("Module.k.K.backward.1", 4), entry("Module.k.K.backward.0", 4),
		entry("Module.g.p2.E.backward.1", 2), entry("Module.g.p1.E.backward.1", 2),
		entry("Module.g.p2.E.backward.0", 2), entry("Module.g.p1.E.backward.0", 2),
		entry("Module.d.D.backward.1", 2), entry("Module.d.D.backward.0", 2),
		entry("Module.b.B.backward.3", 2), entry("Functional.relu.3.backward", 2),
		entry("Module.b.B.backward.2", 2), entry("Functional.relu.2.backward", 2),
		entry("Functional.gelu.5.backward", 2),
	}, map[string]string{
		"Functional.relu.0.forward": "Module.b.B.forward.0", "Functional.relu.1.forward": "Module.b.B.forward.1",
		"Functional.relu.3.backward": "Module.b.B.backward.3", "Functional.relu.2.backward": "Module.b.B.backward.2",
	})
	pairs := writePairs(t, dir,
		mapping.ModulePair{NPU: "a", Bench: "b"},
		mapping.ModulePair{NPU: "c", Bench: "d"},
		mapping.ModulePair{NPU: "f", BenchParts: []string{"g.p1", "g.p2"}, Kind: mapping.KindExperts},
		mapping.ModulePair{NPUParts: []string{"h.q1", "h.q2"}, Bench: "k", Kind: mapping.KindExperts})
	dm := testkit.WriteFile(t, dir, "dm.yaml", "{}\n")

	// the table's rows, NPU name -> bench name, in order
	var want [][2]string
	call := func(npu, bench string) { // bench "": no partner
		for _, s := range []string{".input.0", ".output.0"} {
			b := "N/A"
			if bench != "" {
				b = bench + s
			}
			want = append(want, [2]string{npu + s, b})
		}
	}
	group := func(npu, p1, p2 string) { // bench parts: one row of both
		for _, s := range []string{".input.0", ".output.0"} {
			want = append(want, [2]string{npu + s, "[" + p1 + s + " ; " + p2 + s + "]"})
		}
	}
	npuGroup := func(first, second, q1, q2, bench string) { // NPU parts: theirs, then the combined rows
		call(first, "")
		call(second, "")
		for _, s := range []string{".input.0", ".output.0"} {
			want = append(want, [2]string{"[" + q1 + s + " ; " + q2 + s + "]", bench + s})
		}
	}
	call("Functional.gelu.0.forward", "Functional.gelu.0.forward")
	call("Module.a.A.forward.0", "Module.b.B.forward.0")
	call("Functional.relu.0.forward", "Functional.relu.0.forward")
	call("Module.a.A.forward.1", "Module.b.B.forward.1")
	call("Functional.relu.1.forward", "Functional.relu.1.forward")
	call("Module.c.C.forward.0", "Module.d.D.forward.0")
	call("Module.c.C.forward.1", "Module.d.D.forward.1")
	group("Module.f.F.forward.0", "Module.g.p1.E.forward.0", "Module.g.p2.E.forward.0")
	group("Module.f.F.forward.1", "Module.g.p1.E.forward.1", "Module.g.p2.E.forward.1")
	for _, k := range []string{"forward.0", "forward.1", "backward.1", "backward.0"} {
		q1, q2 := "Module.h.q1.E."+k, "Module.h.q2.E."+k
		first, second := q1, q2
		if strings.HasPrefix(k, "backward") {
			first, second = q2, q1
		}
		npuGroup(first, second, q1, q2, "Module.k.K."+k)
	}
	group("Module.f.F.backward.1", "Module.g.p1.E.backward.1", "Module.g.p2.E.backward.1")
	group("Module.f.F.backward.0", "Module.g.p1.E.backward.0", "Module.g.p2.E.backward.0")
	call("Module.c.C.backward.1", "Module.d.D.backward.1")
	call("Module.c.C.backward.0", "Module.d.D.backward.0")
	call("Module.a.A.backward.1", "Module.b.B.backward.3")
	call("Functional.relu.1.backward", "Functional.relu.3.backward")
	call("Module.a.A.backward.0", "Module.b.B.backward.2")
	call("Functional.relu.0.backward", "Functional.relu.2.backward")
	for _, c := range []struct {
		name      string
		dm        string
		fuzzy     bool
		gelu      string // the unpaired gelu backward call's partner ("": none)
		matchedBy map[string]int
	}{
		{"pairs", "", false, "Functional.gelu.5.backward", map[string]int{"name": 4, "pairs": 24, "group": 16}},
		{"pairs and fuzzy match", "", true, "", map[string]int{"name": 2, "pairs": 24, "group": 16}},
		{"pairs and data mapping", dm, false, "", map[string]int{"name": 2, "data_mapping": 0, "pairs": 24, "group": 16}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			rep, err := Run(Options{Target: npu, Golden: bench, PairsFile: pairs, DataMappingFile: c.dm, Fuzzy: c.fuzzy, OutDir: t.TempDir(),
				Stamp: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)})
			if err != nil {
				t.Fatal(err)
			}
			want := slices.Clip(want)
			for _, s := range []string{".input.0", ".output.0"} {
				gelu := "N/A"
				if c.gelu != "" {
					gelu = c.gelu + s
				}
				want = append(want, [2]string{"Functional.gelu.1.backward" + s, gelu})
			}
			wantRowPairs(t, rep.Ranks[0].Files[0], want)
			if s := rep.Ranks[0].Summary; !reflect.DeepEqual(s.MatchedBy, c.matchedBy) {
				t.Errorf("matched by %v, want %v", s.MatchedBy, c.matchedBy)
			}
		})
	}
}
