package compare

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/layermap/layermap/mapping/output"
	"github.com/layermap/layermap/printparse/msprobe"
	"github.com/layermap/layermap/printparse/testkit"
)

// TestDiffAnalyzeGolden: -da writes msprobe's per-rank JSON and the
// search across ranks byte for byte as msprobe did on synth_multirank
// (golden output_diff_analyze/), and no CSV.
func TestDiffAnalyzeGolden(t *testing.T) {
	root := testkit.Corpus(t, "msprobe", "golden", "synth_multirank")
	out := t.TempDir()
	rep, err := Run(Options{Target: filepath.Join(root, "npu", "step0"), Golden: filepath.Join(root, "bench", "step0"), OutDir: out,
		DiffAnalyze: true, Stamp: time.Date(2026, 12, 2, 12, 5, 0, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join(root, "output_diff_analyze")
	for rank, want := range map[string]string{"rank0": "compare_result_rank0_20261202120500.json", "rank1": "compare_result_rank1_20261202120501.json"} {
		var got string
		for _, r := range rep.Ranks {
			if r.Rank == rank {
				got = r.Files[0]
			}
		}
		checkSame(t, got, filepath.Join(golden, want))
	}
	wants, _ := filepath.Glob(filepath.Join(golden, "diff_analyze_*.json"))
	if rep.DiffAnalyze == "" || len(wants) != 1 {
		t.Fatalf("diff_analyze file %q, golden %v", rep.DiffAnalyze, wants)
	}
	checkSame(t, rep.DiffAnalyze, wants[0])
	csvs, _ := filepath.Glob(filepath.Join(out, "*.csv"))
	if len(csvs) != 0 {
		t.Errorf("-da wrote tables %v, want none (msprobe writes the JSON instead)", csvs)
	}
}

// TestDiffAnalyzeParity: -da's files equal msprobe's byte for byte on
// pairs with rows synth_multirank has none of: rows without bench data,
// md5 mode, and P2POp values, which msprobe takes from the row at the
// same position of each side (NaN past its last row); and on the pairs
// differential testing cut down (da_edges): an md5 row of a null item
// without bench data (N/A equals N/A: pass), a diff node without a stack
// (stack_info null), and a module's parameters rows (not in the node's
// inputs). The da_edges pairs are step folders (npu/step0), run through
// msprobe's whole compare: its search across ranks is checked too (the
// others ran its per-rank compare alone, PROVENANCE section C).
func TestDiffAnalyzeParity(t *testing.T) {
	t.Parallel()
	for _, name := range daGoldens {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			root := testkit.Corpus(t, append([]string{"msprobe", "golden"}, strings.Split(name, "/")...)...)
			npu, bench := filepath.Join(root, "npu"), filepath.Join(root, "bench")
			_, err := os.Stat(filepath.Join(npu, "step0"))
			steps := err == nil
			if steps {
				npu, bench = filepath.Join(npu, "step0"), filepath.Join(bench, "step0")
			}
			rep, err := Run(Options{Target: npu, Golden: bench, OutDir: t.TempDir(),
				DiffAnalyze: true, Stamp: time.Date(2026, 12, 6, 14, 4, 0, 0, time.UTC)})
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join(root, "output_diff_analyze")
			wants, _ := filepath.Glob(filepath.Join(golden, "compare_result_*.json"))
			if len(rep.Ranks) != 1 || len(rep.Ranks[0].Files) != 1 || len(wants) != 1 {
				t.Fatalf("ranks %+v, golden %v", rep.Ranks, wants)
			}
			checkSame(t, rep.Ranks[0].Files[0], wants[0])
			if !steps {
				return
			}
			search, _ := filepath.Glob(filepath.Join(golden, "diff_analyze_*.json"))
			switch {
			case len(search) > 1:
				t.Fatalf("golden: %d diff_analyze files, want at most one", len(search))
			case len(search) == 0 && rep.DiffAnalyze != "":
				t.Errorf("diff_analyze %s, msprobe wrote none", rep.DiffAnalyze)
			case len(search) == 1 && rep.DiffAnalyze == "":
				t.Errorf("no diff_analyze, msprobe wrote %s", search[0])
			case len(search) == 1:
				checkSame(t, rep.DiffAnalyze, search[0])
			}
		})
	}
}

func checkSame(t *testing.T, got, want string) {
	t.Helper()
	g, err := os.ReadFile(got)
	if err != nil {
		t.Fatal(err)
	}
	w, err := os.ReadFile(want)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(g, w) {
		gl, wl := strings.Split(string(g), "\n"), strings.Split(string(w), "\n")
		for i := 0; i < len(gl) && i < len(wl); i++ {
			if gl[i] != wl[i] {
				t.Errorf("%s differs from %s at line %d:\n got  %q\n want %q", filepath.Base(got), filepath.Base(want), i+1, gl[i], wl[i])
				return
			}
		}
		t.Errorf("%s: %d lines, golden %s: %d", filepath.Base(got), len(gl), filepath.Base(want), len(wl))
	}
}

// TestDiffAnalyzeMapped: -da through a layer mapping (msprobe's own -da
// ignores mappings): the per-rank JSON pairs the mapped rows, and the
// fused pair that agrees everywhere has no diff to report.
func TestDiffAnalyzeMapped(t *testing.T) {
	root := testkit.Corpus(t, "msprobe", "golden", "qwen25vl_llamafactory_vs_mindspeed_reverse_template")
	out := t.TempDir()
	rep, err := Run(Options{Target: filepath.Join(root, "npu", "proc12360"), Golden: filepath.Join(root, "bench", "proc12353"), OutDir: out,
		LayerMappingFile: filepath.Join(root, "layer_mapping.yaml"), DiffAnalyze: true, Stamp: time.Date(2026, 12, 2, 12, 5, 0, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(rep.Ranks[0].Files[0])
	if err != nil {
		t.Fatal(err)
	}
	mapped := `"Bench Name": "Module.0.module.module.text_decoder.decoder.layers.0.self_attention.linear_proj.RowParallelLinear.forward.0.input.0"`
	if !bytes.Contains(b, []byte(mapped)) {
		t.Errorf("per-rank JSON lacks the mapped row %s", mapped)
	}
	d, err := os.ReadFile(rep.DiffAnalyze)
	if err != nil || !bytes.HasPrefix(d, []byte("{\n  \"rank_0\": [\n    {\n      \"op_name\": ")) {
		t.Errorf("diff_analyze %s: %v\n%.200s", rep.DiffAnalyze, err, d)
	}
	npu, bench, lm := fusedDemo(t)
	rep, err = Run(Options{Target: npu, Golden: bench, OutDir: t.TempDir(), LayerMappingFile: lm, DiffAnalyze: true,
		Stamp: time.Date(2026, 12, 2, 12, 5, 0, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	if rep.DiffAnalyze != "" {
		t.Errorf("the fused pair that agrees everywhere: diff_analyze %s, want none", rep.DiffAnalyze)
	}
	b, _ = os.ReadFile(rep.Ranks[0].Files[0])
	if !bytes.Contains(b, []byte(`"Bench Name": "[Module.module.visual.blocks.0.mlp.gate_proj.Linear.forward.0.output.0 ; Module.module.visual.blocks.0.mlp.up_proj.Linear.forward.0.output.0]"`)) {
		t.Errorf("per-rank JSON lacks the combined fc1 output row")
	}
}

// TestDAPatch: -da's per-rank JSON patched with the no-bench downcast
// equals a line by line reference, whatever the read buffer's size: the
// NPU statistics in the columns asked of the op items whose Bench Name is
// N/A, ints only; the lines that look like them in other places (a
// stack frame, a matched row, the Bench statistics) are copied.
func TestDAPatch(t *testing.T) {
	t.Parallel()
	item := func(bench, max, l2 string) string {
		return "\n            {" +
			"\n                \"NPU Name\": \"Tensor.add.0.forward.input.0\"," +
			"\n                \"Bench Name\": " + bench + "," +
			"\n                \"NPU Dtype\": \"torch.float32\"," +
			"\n                \"Bench Dtype\": \"N/A\"," +
			"\n                \"Max diff\": \"N/A\"," +
			"\n                \"NPU max\": " + max + "," +
			"\n                \"NPU min\": 7," +
			"\n                \"NPU mean\": -2," +
			"\n                \"NPU l2norm\": " + l2 + "," +
			"\n                \"Bench max\": 5," +
			"\n                \"NPU_Stack_Info\": [" +
			"\n                    \"File a.py, line 3, in f, \\n                \\\"NPU max\\\": 4\"" +
			"\n                ]," +
			"\n                \"state\": \"input\"" +
			"\n            }"
	}
	var b strings.Builder
	b.WriteString("{\n    \"Tensor.add.0.forward\": {\n        \"is_same\": false,\n        \"op_items\": [")
	for i := range 40 {
		bench := `"N/A"`
		if i%3 == 0 {
			bench = `"Tensor.add.0.forward.input.0"`
		}
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(item(bench, []string{"24", "1.5", "12345678901234567890", "inf"}[i%4], strconv.Itoa(i)))
	}
	b.WriteString("\n        ]\n    }")
	in := b.String()
	cols := [4]bool{true, false, true, true}
	// The reference: line by line, an op item's state kept.
	var want strings.Builder
	noBench := false
	for _, line := range strings.SplitAfter(in, "\n") {
		key, v, ok := strings.Cut(line, ": ")
		switch {
		case strings.HasPrefix(line, `                "NPU Name": `):
			noBench = false
		case line == `                "Bench Name": "N/A",`+"\n":
			noBench = true
		case noBench && ok && !strings.HasPrefix(key, "                 "):
			for i, k := range []string{"NPU max", "NPU min", "NPU mean", "NPU l2norm"} {
				num := strings.TrimRight(v, ",\n")
				if key == `                "`+k+`"` && cols[i] && isIntLiteral(num) {
					f, _ := strconv.ParseFloat(num, 64)
					line = key + ": " + msprobe.PyFloat(f) + v[len(num):]
				}
			}
		}
		want.WriteString(line)
	}
	if want.String() == in {
		t.Fatal("the reference patches nothing")
	}
	for size := range 700 { // buffers ending at every point of an op item
		var out bytes.Buffer
		if err := daPatch(&out, strings.NewReader(in), cols, size); err != nil {
			t.Fatal(err)
		}
		if out.String() != want.String() {
			t.Errorf("buffer %d: patched JSON differs from the reference", size)
		}
	}
}

// TestDiffAnalyzeLargeEntry: an entry whose JSON outgrows the room -da
// makes entries in (daRoom), handed to the writer as its items are made,
// is written whole, once, between the others.
func TestDiffAnalyzeLargeEntry(t *testing.T) {
	t.Parallel()
	const outputs = 3000
	tensor := func(v float64) string {
		return fmt.Sprintf(`{"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2, 8], "Max": %g, "Min": -1.5, "Mean": 0.25, "Norm": 3.5, "requires_grad": false}`, v)
	}
	entry := func(name string, n int, v float64) string {
		outs := make([]string, n)
		for i := range outs {
			outs[i] = tensor(v + float64(i))
		}
		return fmt.Sprintf("%q: {\"input_args\": [%s], \"input_kwargs\": {}, \"output\": [%s]}", name, tensor(v), strings.Join(outs, ", "))
	}
	dir := t.TempDir()
	for side, v := range map[string]float64{"npu": 1, "bench": 2} {
		data := []string{entry("Functional.linear.0.forward", 1, v), entry("Functional.cat.0.forward", outputs, v), entry("Functional.relu.0.forward", 1, v)}
		if err := os.Mkdir(filepath.Join(dir, side), 0o755); err != nil {
			t.Fatal(err)
		}
		testkit.WriteFile(t, filepath.Join(dir, side), "dump.json", `{"task": "statistics", "level": "L1", "framework": "pytorch", "dump_data_dir": null, "data": {`+strings.Join(data, ", ")+"}}")
	}
	rep, err := Run(Options{Target: filepath.Join(dir, "npu"), Golden: filepath.Join(dir, "bench"), OutDir: filepath.Join(dir, "out"), DiffAnalyze: true})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(rep.Ranks[0].Files[0])
	if err != nil {
		t.Fatal(err)
	}
	if n := len(b); n < 2*daRoom {
		t.Fatalf("the JSON has %d bytes: the large entry does not outgrow the room", n)
	}
	var got map[string]struct {
		OpItems []struct {
			Name string `json:"NPU Name"`
		} `json:"op_items"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	cat := got["Functional.cat.0.forward"].OpItems
	if len(got) != 3 || len(cat) != 1+outputs || cat[0].Name != "Functional.cat.0.forward.input.0" || cat[outputs].Name != "Functional.cat.0.forward.output."+strconv.Itoa(outputs-1) {
		t.Errorf("%d entries, the large one with %d op items", len(got), len(cat))
	}
	if i, j := bytes.Index(b, []byte(`"Functional.cat.0.forward": {`)), bytes.Index(b, []byte(`"Functional.relu.0.forward": {`)); i < 0 || j < i {
		t.Errorf("entries out of order: the large one at %d, the next at %d", i, j)
	}
}

// TestDAIgnored: msprobe's is_same passes over the outputs its ignore
// list names for the API, the third part of the entry name from its end,
// by their index among the entry's outputs.
func TestDAIgnored(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		k    int
		want bool
	}{
		{"Torch.npu_fusion_attention.0.forward", 4, true},
		{"Torch.npu_fusion_attention.0.forward", 5, true},
		{"Torch.npu_fusion_attention.0.forward", 3, false},
		{"NPU.npu_fusion_attention.2.backward", 5, true},
		{"Module.layers.0.attn.npu_fusion_attention.0.forward", 4, true},
		{"Torch.matmul.0.forward", 4, false},
		{"npu_fusion_attention.0.forward", 4, true},
		{"0.forward", 4, false},
	} {
		if got := slices.Contains(daIgnoredOutputs(c.name), c.k); got != c.want {
			t.Errorf("output %d of %s ignored: %v, want %v", c.k, c.name, got, c.want)
		}
	}
}

// TestDiffAnalyzeLayers: through Run, two ranks diverging between the
// same all_reduce calls, rank 1 earlier in the layer: msprobe reports
// rank 1 alone; the same with a broadcast more on rank 1 (its graph
// links the all_reduce calls). Where the all_reduce's process group
// names a rank the run does not compare, msprobe's search fails and
// writes no file: compare neither, and says why.
func TestDiffAnalyzeLayers(t *testing.T) {
	t.Parallel()
	item := func(v float64) string {
		return fmt.Sprintf(`{"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2], "Max": %g, "Min": %g, "Mean": %g, "Norm": %g, "requires_grad": false}`, v, v, v, v)
	}
	entry := func(name string, out float64, kwargs string) string {
		return fmt.Sprintf("%q: {\"input_args\": [%s], \"input_kwargs\": {%s}, \"output\": [%s]}", name, item(1), kwargs, item(out))
	}
	// rank r's table: a diff (the bench output 3, the NPU's 1) at the
	// compute entry diffAt between the two all_reduce calls
	dump := func(side string, diffAt int, broadcast bool, group string) string {
		var data []string
		if broadcast {
			data = append(data, entry("Distributed.broadcast.0.forward", 1, ""))
		}
		kwargs := ""
		if group != "" {
			kwargs = `"group": {"type": "torch.ProcessGroup", "group_ranks": ` + group + `}`
		}
		data = append(data, entry("Distributed.all_reduce.0.forward", 1, kwargs))
		for i, op := range []string{"Torch.add.0.forward", "Torch.mul.0.forward"} {
			out := 1.0
			if i == diffAt && side == "bench" {
				out = 3
			}
			data = append(data, entry(op, out, ""))
		}
		return strings.Join(append(data, entry("Distributed.all_reduce.1.forward", 1, kwargs)), ", ")
	}
	for _, c := range []struct {
		name      string
		broadcast bool
		group     string
		rank, op  string // the node reported ("": no file)
	}{
		{"same collectives", false, "", "rank_1", "Torch.add.0.forward"},
		{"a broadcast more", true, "", "rank_1", "Torch.add.0.forward"},
		{"in a process group", false, "[0, 1]", "rank_1", "Torch.add.0.forward"},
		{"a process group of ranks not compared", false, "[0, 1, 2, 3]", "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			for _, side := range []string{"npu", "bench"} {
				testkit.DumpDir(t, filepath.Join(dir, side, "step0"), "rank0", dump(side, 1, false, c.group))
				testkit.DumpDir(t, filepath.Join(dir, side, "step0"), "rank1", dump(side, 0, c.broadcast, c.group))
			}
			var warnings strings.Builder
			rep, err := Run(Options{Target: filepath.Join(dir, "npu", "step0"), Golden: filepath.Join(dir, "bench", "step0"),
				OutDir: filepath.Join(dir, "out"), DiffAnalyze: true, Warnings: &warnings})
			if err != nil {
				t.Fatal(err)
			}
			if c.rank == "" {
				if rep.DiffAnalyze != "" || !strings.Contains(warnings.String(), "names rank 2, which the run does not compare") {
					t.Errorf("diff_analyze %q, warnings %q; want none, and the warning", rep.DiffAnalyze, warnings.String())
				}
				return
			}
			b, err := os.ReadFile(rep.DiffAnalyze)
			if err != nil {
				t.Fatal(err)
			}
			var got map[string][]struct {
				Op string `json:"op_name"`
			}
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || len(got[c.rank]) != 1 || got[c.rank][0].Op != c.op {
				t.Errorf("diff_analyze %s, want %s's %s alone", b, c.rank, c.op)
			}
			if warnings.Len() != 0 {
				t.Errorf("warnings %q", warnings.String())
			}
		})
	}
}

// TestDiffAnalyzeIgnoredOutputs: is_same passes over
// npu_fusion_attention's outputs 4 and 5 by their index among the entry's
// outputs, its inputs not counted.
func TestDiffAnalyzeIgnoredOutputs(t *testing.T) {
	t.Parallel()
	item := func(v float64) string {
		return fmt.Sprintf(`{"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2], "Max": %g, "Min": %g, "Mean": %g, "Norm": %g, "requires_grad": false}`, v, v, v, v)
	}
	// the bench's output diff is 3 where the NPU's is 1: a relative error of 66%
	entry := func(diff int) string {
		var outs []string
		for i := range 6 {
			v := 1.0
			if i == diff {
				v = 3
			}
			outs = append(outs, item(v))
		}
		return `"Torch.npu_fusion_attention.0.forward": {"input_args": [` + item(1) + ", " + item(1) + `], "input_kwargs": {}, "output": [` +
			strings.Join(outs, ", ") + "]}"
	}
	for _, c := range []struct {
		diff int
		same bool
	}{{4, true}, {5, true}, {3, false}, {1, false}} {
		dir := t.TempDir()
		npu := testkit.DumpDir(t, dir, "npu", entry(-1))
		bench := testkit.DumpDir(t, dir, "bench", entry(c.diff))
		rep, err := Run(Options{Target: npu, Golden: bench, OutDir: filepath.Join(dir, "out"), DiffAnalyze: true})
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(rep.Ranks[0].Files[0])
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]struct {
			Same bool `json:"is_same"`
		}
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		if s := got["Torch.npu_fusion_attention.0.forward"].Same; s != c.same {
			t.Errorf("output %d differs: is_same %v, want %v", c.diff, s, c.same)
		}
	}
}

// TestDiffAnalyzeP2P: through Run, batch_isend_irecv calls whose P2POp
// peers decide the links (their values read by the row's position, as
// the per-rank JSON holds them): rank 1's first call names rank 0 and
// links rank 0's, so that rank 1's diff is a layer after rank 0's; where
// it names no rank (a null peer) msprobe links it to none, and the two
// diffs share a layer.
func TestDiffAnalyzeP2P(t *testing.T) {
	t.Parallel()
	tensor := func(v string) string {
		return `{"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2], "Max": ` + v + `, "Min": 0.5, "Mean": 1.0, "Norm": 2.0, "requires_grad": false}`
	}
	p2p := func(peer string) string {
		return `{"class_type": "torch.distributed.P2POp", "tensor": ` + tensor("1.0") + `, "peer": ` + peer + `, "tag": 0, "group_id": "g0", "op": "isend"}`
	}
	call := func(k, peer string) string {
		// a tensor first: the P2POp's row is not the call's first
		return `"Distributed.batch_isend_irecv.` + k + `.forward": {"input_args": [` + tensor("1.0") + `, [` + p2p(peer) + `]], "input_kwargs": {}, "output": [` + tensor("1.0") + `]}`
	}
	op := func(name, v string) string {
		return `"Torch.` + name + `.0.forward": {"input_args": [` + tensor("1.0") + `], "input_kwargs": {}, "output": [` + tensor(v) + `]}`
	}
	for _, c := range []struct {
		peer string // rank 1's first call's
		want string
	}{
		{"0", "rank_0:Torch.add.0.forward"},
		{"null", "rank_0:Torch.add.0.forward, rank_1:Torch.mul.0.forward"},
		{`"x"`, "rank_0:Torch.add.0.forward, rank_1:Torch.mul.0.forward"},
	} {
		dir := t.TempDir()
		for _, side := range []string{"npu", "bench"} {
			v := "1.0"
			if side == "bench" {
				v = "3.0"
			}
			step := filepath.Join(dir, side, "step0")
			testkit.DumpDir(t, step, "rank0", strings.Join([]string{call("0", "1"), op("add", v), call("1", "1")}, ", "))
			testkit.DumpDir(t, step, "rank1", strings.Join([]string{call("0", c.peer), call("1", "0"), op("mul", v), call("2", "0")}, ", "))
		}
		var warnings strings.Builder
		rep, err := Run(Options{Target: filepath.Join(dir, "npu", "step0"), Golden: filepath.Join(dir, "bench", "step0"),
			OutDir: filepath.Join(dir, "out"), DiffAnalyze: true, Warnings: &warnings})
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(rep.DiffAnalyze)
		if err != nil {
			t.Fatalf("peer %s: %v (warnings %q)", c.peer, err, warnings.String())
		}
		if g := strings.Join(daNodes(b), ", "); g != c.want {
			t.Errorf("peer %s: reported %q, want %q", c.peer, g, c.want)
		}
	}
}

// TestDiffAnalyzeSummary: -da takes the bench counts from its own reading
// of the bench dump.json (daRank.benchTotal), where the compare counts the
// entries no NPU row asked for: the same rows, unmatched rows and md5
// mode, on every golden pair and every rank (P2POp rows, md5 keys,
// entries msprobe skips), with a cache small enough that entries are
// parsed more than once.
func TestDiffAnalyzeSummary(t *testing.T) {
	t.Parallel()
	for _, c := range goldenPairs(t) {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var sums [2][]Summary
			for k, da := range []bool{false, true} {
				o := Options{Target: c.target, Golden: c.golden, OutDir: t.TempDir(), DiffAnalyze: da, cache: 4,
					Stamp: time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)}
				if c.opt != nil {
					c.opt(t, &o)
				}
				rep, err := Run(o)
				if err != nil {
					t.Fatalf("-da %v: %v", da, err)
				}
				for _, r := range rep.Ranks {
					if r.Summary == nil {
						t.Fatalf("-da %v: rank %s without a summary", da, r.Rank)
					}
					sums[k] = append(sums[k], *r.Summary)
				}
			}
			if len(sums[0]) != len(sums[1]) || len(sums[0]) == 0 {
				t.Fatalf("%d ranks, with -da %d", len(sums[0]), len(sums[1]))
			}
			for i, p := range sums[0] {
				d := sums[1][i]
				if p.BenchRows != d.BenchRows || p.BenchUnmatched != d.BenchUnmatched || p.benchMD5 != d.benchMD5 || p.Rows != d.Rows {
					t.Errorf("rank %d: bench rows %d, unmatched %d, md5 %v, rows %d; with -da %d, %d, %v, %d", i,
						p.BenchRows, p.BenchUnmatched, p.benchMD5, p.Rows, d.BenchRows, d.BenchUnmatched, d.benchMD5, d.Rows)
				}
				if p.BenchRows == 0 {
					t.Errorf("rank %d: no bench rows", i)
				}
			}
		})
	}
}

// TestDiffAnalyzeSummaryMD5: an md5 key only in a bench entry no NPU row
// asks for makes the bench side an md5 dump with -da too (which counts
// that entry where the compare would at its end): one side with md5,
// refused alike.
func TestDiffAnalyzeSummaryMD5(t *testing.T) {
	t.Parallel()
	tensor := func(extra string) string {
		return `{"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2], "Max": 1.5, "Min": 0.5, "Mean": 1.0, "Norm": 2.0, "requires_grad": false` + extra + `}`
	}
	dir := t.TempDir()
	relu := `"Functional.relu.0.forward": {"input_args": [` + tensor("") + `], "output": [` + tensor("") + `]}`
	npu := testkit.DumpDir(t, dir, "npu", relu)
	bench := testkit.DumpDir(t, dir, "bench", relu+`, "Functional.gelu.0.forward": {"output": [`+tensor(`, "md5": "0a1b2c3d"`)+`]}`)
	var errs [2]string
	for k, da := range []bool{false, true} {
		_, err := Run(Options{Target: npu, Golden: bench,
			OutDir: t.TempDir(), DiffAnalyze: da, Stamp: time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)})
		if err == nil || !strings.Contains(err.Error(), "expected md5 on both sides or on neither") {
			t.Fatalf("-da %v: %v, want the md5 refusal", da, err)
		}
		errs[k] = err.Error()
	}
	if errs[0] != errs[1] {
		t.Errorf("error %q, with -da %q", errs[0], errs[1])
	}
}

// checkDAByPosition runs -da on the pair opt gives (written into a
// folder of its own) twice: taking the NPU side's P2POp values from the
// table's rows while they are the dump's own, and reading the dump by
// position from the first row: the files must be the same, byte for byte.
func checkDAByPosition(t *testing.T, opt func(dir string) Options) {
	t.Helper()
	var files [2]map[string][]byte
	for k, byPosition := range []bool{false, true} {
		o := opt(t.TempDir())
		o.OutDir, o.DiffAnalyze, o.daByPosition, o.Stamp = t.TempDir(), true, byPosition, time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
		if _, err := Run(o); err != nil {
			t.Fatalf("-da, by position %v: %v", byPosition, err)
		}
		files[k] = testkit.ReadDir(t, o.OutDir)
	}
	if len(files[0]) == 0 || len(files[0]) != len(files[1]) {
		t.Fatalf("%d files, by position %d", len(files[0]), len(files[1]))
	}
	for name, b := range files[0] {
		if !bytes.Equal(b, files[1][name]) {
			t.Errorf("%s differs from the one read by position", name)
		}
	}
}

// TestDiffAnalyzeByPosition: the NPU side's P2POp values taken from the
// table's own rows are those read by position, on every -da golden (P2POp
// rows, md5, several ranks), every parity golden, and a layer mapping
// with an N:1 group (TestFusedKinds adds combined NPU rows).
func TestDiffAnalyzeByPosition(t *testing.T) {
	t.Parallel()
	for _, c := range goldenPairs(t) {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			checkDAByPosition(t, func(string) Options {
				o := Options{Target: c.target, Golden: c.golden}
				if c.opt != nil {
					c.opt(t, &o)
				}
				return o
			})
		})
	}
	t.Run("fused", func(t *testing.T) {
		t.Parallel()
		npu, bench, lm := fusedDemo(t)
		checkDAByPosition(t, func(string) Options { return Options{Target: npu, Golden: bench, LayerMappingFile: lm} })
	})
	// An NPU row whose key matches two bench rows is two table rows: the
	// table's rows after it are no longer the dump's of the same position
	// (P2POp rows after it, and the last rows past the dump's).
	tensor := func(dtype, max string) string {
		return `{"type": "torch.Tensor", "dtype": "torch.` + dtype + `", "shape": [4], "Max": ` + max + `, "Min": -1.0, "Mean": 0.1, "Norm": 2.0, "requires_grad": false}`
	}
	p2p := func(op, peer string) string {
		return `{"class_type": "torch.distributed.P2POp", "tensor": ` + tensor("float32", "1.5") + `, "peer": ` + peer + `, "tag": 0, "group_id": "g0", "op": "` + op + `"}`
	}
	linear := `"Functional.linear.0.forward": {"input_args": [` + tensor("float32", "1.0") + `], "input_kwargs": {}, "output": [` + tensor("float32", "2.0") + `]`
	rest := `"Distributed.batch_isend_irecv.0.forward": {"input_args": [[` + p2p("isend", "1") + `, ` + p2p("irecv", "2") + `]], "input_kwargs": {}, "output": [null]}, ` +
		`"Functional.relu.0.forward": {"input_args": [` + tensor("float32", "3.0") + `], "input_kwargs": {}, "output": [` + tensor("float32", "3.0") + `]}`
	gradList := `"Module.m.Linear.parameters_grad": {"weight": [` + tensor("float32", "0.5") + `, ` + tensor("float32", "0.6") + `]}`
	// A debug.json entry named "": msprobe's -da numbers its rows, the
	// table has none.
	t.Run("a debug entry without a name", func(t *testing.T) {
		t.Parallel()
		body := `{"input_args": [` + tensor("float32", "1.0") + `], "output": [` + tensor("float32", "2.0") + `]}`
		data := `"m.x.0.debug": ` + body + `, "": ` + body + `, "m.p2p.0.debug": {"input_args": [[` + p2p("isend", "1") + `]]}, "m.y.0.debug": ` + body
		checkDAByPosition(t, func(dir string) Options {
			var sides [2]string
			for k, side := range []string{"npu", "bench"} {
				sides[k] = filepath.Join(dir, side)
				if err := os.MkdirAll(sides[k], 0o755); err != nil {
					t.Fatal(err)
				}
				testkit.WriteFile(t, sides[k], msprobe.DebugJSONName, `{"task": "statistics", "level": "mix", "framework": "pytorch", "dump_data_dir": null, "data": {`+data+`}}`)
			}
			return Options{Target: sides[0], Golden: sides[1]}
		})
	})
	for _, c := range []struct{ name, npu, bench string }{
		{"bench input_args and input", linear + "}, " + rest, linear + `, "input": [` + tensor("float32", "1.1") + `]}, ` + rest},
		{"the second match fails the dtype gate", linear + "}, " + rest, linear + `, "input": [` + tensor("int64", "1.1") + `]}, ` + rest},
		{"a parameters_grad list of one name", linear + "}, " + gradList + ", " + rest, linear + "}, " + gradList + ", " + rest},
		{"no fan-out", linear + "}, " + rest, linear + "}, " + rest},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			checkDAByPosition(t, func(dir string) Options {
				return Options{Target: testkit.DumpDir(t, dir, "npu", c.npu), Golden: testkit.DumpDir(t, dir, "bench", c.bench)}
			})
		})
	}
}

// TestDAByPositionError: a failed reading of the NPU dump's rows by
// position fails the rank, also after the table is written again.
func TestDAByPositionError(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bench := testkit.DumpDir(t, dir, "bench", `"Functional.relu.0.forward": {"output": [`+testkit.Tensor("x.pt")+`]}`)
	set := output.NewSet()
	f, err := set.Create(dir, output.Name{Prefix: "x", Suffix: ".json"}, resultMode)
	if err != nil {
		t.Fatal(err)
	}
	d := newDARank(f, 0, nil, filepath.Join(dir, "gone", "dump.json"), filepath.Join(bench, "dump.json"))
	if !d.waitP2P() {
		t.Fatalf("the bench dump: %v", d.err)
	}
	d.npuOwn = false
	d.npuOpPeer(0, &outRow{npu: &sideRow{}})
	for pass := range 2 {
		if d.waitP2P() || !strings.Contains(fmt.Sprint(d.err), "-da: the NPU dump's rows") {
			t.Fatalf("pass %d: %v, want the NPU dump's error", pass, d.err)
		}
		d.reset()
	}
	set.Abort()
}

// daGoldens are the -da goldens of corpus/msprobe/golden.
var daGoldens = []string{"da_unmatched", "da_md5", "da_p2p",
	"da_edges/md5_null_unmatched", "da_edges/stack_info_null", "da_edges/parameters_in_input"}

// goldenPairs are the parity goldens and the -da goldens (a step folder
// where the pair has steps), their folders' paths absolute.
func goldenPairs(t *testing.T) []parityCase {
	root := testkit.Corpus(t, "msprobe")
	cases := parityCases(t)
	for _, name := range daGoldens {
		pair := filepath.Join("golden", filepath.FromSlash(name))
		npu, bench := filepath.Join(pair, "npu"), filepath.Join(pair, "bench")
		if _, err := os.Stat(filepath.Join(root, npu, "step0")); err == nil {
			npu, bench = filepath.Join(npu, "step0"), filepath.Join(bench, "step0")
		}
		cases = append(cases, parityCase{name: name, target: npu, golden: bench})
	}
	for i, c := range cases {
		if !filepath.IsAbs(c.target) {
			cases[i].target = filepath.Join(root, c.target)
		}
		if !filepath.IsAbs(c.golden) {
			cases[i].golden = filepath.Join(root, c.golden)
		}
	}
	return cases
}
