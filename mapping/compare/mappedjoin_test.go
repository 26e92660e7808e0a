package compare

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/layermap/layermap/mapping"
	"github.com/layermap/layermap/printparse/testkit"
)

// TestFuzzyWithDataMapping: msprobe joins through a data mapping before
// anything else (Match.match_api_infos: a left merge on the NPU rows'
// data_mapping.get(name, name), the dtype gate off), so -fm beside -dm
// pairs no row in order; it only leaves the bench's backward calls
// unrenumbered (ProcessDf: no update_backward_call under -fm; spec §3.2,
// §3.5). Here the NPU relu output is mapped to the bench gelu output,
// which the gelu output row takes too (a left merge keeps both), and the
// NPU's relu.1.backward row finds the bench's row of that name only
// under -fm (without it the bench row's key is renumbered to
// relu.0.backward, and a data-mapped NPU key never is).
func TestFuzzyWithDataMapping(t *testing.T) {
	t.Parallel()
	tensor := func(max string) string {
		return `{"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2], "Max": ` + max + `, "Min": 0.0, "Mean": 0.5, "Norm": 1.0, "requires_grad": false}`
	}
	int64 := `{"type": "torch.Tensor", "dtype": "torch.int64", "shape": [2], "Max": 1, "Min": 0, "Mean": 0.5, "Norm": 1.0, "requires_grad": false}`
	data := `"Functional.relu.0.forward": {"input_args": [` + tensor("1.0") + `], "output": [` + tensor("2.0") + `]}, ` +
		`"Functional.gelu.0.forward": {"input_args": [` + int64 + `], "output": [` + tensor("4.0") + `]}, ` +
		`"Functional.relu.1.backward": {"input": [` + tensor("5.0") + `], "output": [` + tensor("6.0") + `]}`
	benchData := `"Functional.relu.0.forward": {"input_args": [` + tensor("1.0") + `], "output": [` + tensor("2.0") + `]}, ` +
		`"Functional.gelu.0.forward": {"input_args": [` + tensor("3.0") + `], "output": [` + tensor("4.5") + `]}, ` +
		`"Functional.relu.1.backward": {"input": [` + tensor("5.0") + `], "output": [` + tensor("6.5") + `]}`
	dir := t.TempDir()
	npu, bench := testkit.DumpDir(t, dir, "npu", data), testkit.DumpDir(t, dir, "bench", benchData)
	dm := testkit.WriteFile(t, dir, "dm.yaml", "Functional.relu.0.forward.output.0: Functional.gelu.0.forward.output.0\n")
	for _, c := range []struct {
		name  string
		fuzzy bool
		want  [][2]string
	}{
		{"data mapping", false, [][2]string{
			{"Functional.relu.0.forward.input.0", "Functional.relu.0.forward.input.0"},
			{"Functional.relu.0.forward.output.0", "Functional.gelu.0.forward.output.0"},
			{"Functional.gelu.0.forward.input.0", "Functional.gelu.0.forward.input.0"}, // int64 against float32: no dtype gate
			{"Functional.gelu.0.forward.output.0", "Functional.gelu.0.forward.output.0"},
			{"Functional.relu.1.backward.input.0", "N/A"},
			{"Functional.relu.1.backward.output.0", "N/A"},
		}},
		{"data mapping and fuzzy match", true, [][2]string{
			{"Functional.relu.0.forward.input.0", "Functional.relu.0.forward.input.0"},
			{"Functional.relu.0.forward.output.0", "Functional.gelu.0.forward.output.0"},
			{"Functional.gelu.0.forward.input.0", "Functional.gelu.0.forward.input.0"},
			{"Functional.gelu.0.forward.output.0", "Functional.gelu.0.forward.output.0"},
			{"Functional.relu.1.backward.input.0", "Functional.relu.1.backward.input.0"},
			{"Functional.relu.1.backward.output.0", "Functional.relu.1.backward.output.0"},
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var warn strings.Builder
			rep, err := Run(Options{Target: npu, Golden: bench, DataMappingFile: dm, Fuzzy: c.fuzzy, OutDir: t.TempDir(),
				Warnings: &warn, Stamp: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)})
			if err != nil {
				t.Fatal(err)
			}
			wantRowPairs(t, rep.Ranks[0].Files[0], c.want)
			if s := rep.Ranks[0].Summary; s.MatchedBy["fuzzy"] != 0 {
				t.Errorf("matched by %v, want no row by the fuzzy match", s.MatchedBy)
			}
			if got := strings.Contains(warn.String(), "-fm pairs no row in order beside a data mapping"); got != c.fuzzy {
				t.Errorf("warnings %q, want the -fm one: %v", warn.String(), c.fuzzy)
			}
		})
	}
}

// TestMappedGoldensWithFuzzy: the goldens of msprobe's mapped compares
// (-lm, and -dm of the data mapping msprobe derived) hold with -fm too:
// msprobe joins through the data mapping first, and these dumps have no
// backward call for -fm to leave unrenumbered.
func TestMappedGoldensWithFuzzy(t *testing.T) {
	t.Parallel()
	root := testkit.Corpus(t, "msprobe")
	n := 0
	for _, c := range parityCases(t) {
		if c.name != "data_mapping" && !strings.HasPrefix(c.name, "layer_mapping") {
			continue
		}
		n++
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			wantDir := filepath.Join(root, c.want)
			names, _ := filepath.Glob(filepath.Join(wantDir, "*.csv"))
			if len(names) == 0 {
				t.Fatalf("no golden in %s", wantDir)
			}
			opt := Options{Target: filepath.Join(root, c.target), Golden: filepath.Join(root, c.golden), OutDir: t.TempDir(),
				Fuzzy: true, Stamp: goldenTime(t, names[0])}
			c.opt(t, &opt)
			if _, err := Run(opt); err != nil {
				t.Fatal(err)
			}
			wantFiles(t, opt.OutDir, names)
		})
	}
	if n != 3 {
		t.Errorf("%d mapped goldens, want 3", n)
	}
}

// TestLayerMappingReplacesDataMapping: msprobe's MindSpore compare
// replaces a -dm data mapping with the one it derives from -lm
// (ms_compare: config.data_mapping = generate_data_mapping_by_layer_mapping,
// the user's mapping discarded). So the -lm goldens hold beside a -dm
// that maps each golden's first NPU row to its second row's bench row,
// or that msprobe would refuse, the data mapping saved beside the table
// included: -dm is not read, and the run warns so. (The Qwen pair's target is PyTorch, whose msprobe
// compare ignores -lm: layermap applies it there as the MindSpore
// compare does, -dm set aside alike.)
func TestLayerMappingReplacesDataMapping(t *testing.T) {
	t.Parallel()
	root := testkit.Corpus(t, "msprobe")
	n := 0
	for _, c := range parityCases(t) {
		if !strings.HasPrefix(c.name, "layer_mapping") {
			continue
		}
		n++
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			wantDir := filepath.Join(root, c.want)
			tables, _ := filepath.Glob(filepath.Join(wantDir, "*.csv"))
			yamls, _ := filepath.Glob(filepath.Join(wantDir, "data_mapping_*.yaml")) // (not msprobe's generate_data_mapping output)
			if len(tables) != 1 {
				t.Fatalf("goldens %v", tables)
			}
			rows := testkit.ReadCSV(t, tables[0])
			if len(rows) < 3 || rows[1][1] == rows[2][1] {
				t.Fatalf("golden %s: too few rows", tables[0])
			}
			dir := t.TempDir()
			// a -dm msprobe would apply, and one it would refuse: neither
			// is read
			for _, body := range []string{rows[1][0] + ": " + rows[2][1] + "\n", rows[1][0] + ": [a\n"} {
				dm := testkit.WriteFile(t, dir, "dm.yaml", body)
				var warn strings.Builder
				opt := Options{Target: filepath.Join(root, c.target), Golden: filepath.Join(root, c.golden), OutDir: t.TempDir(),
					DataMappingFile: dm, Warnings: &warn, Stamp: goldenTime(t, tables[0])}
				c.opt(t, &opt)
				rep, err := Run(opt)
				if err != nil {
					t.Fatalf("-dm %q: %v", body, err)
				}
				wantFiles(t, opt.OutDir, append(tables, yamls...))
				if s := rep.Ranks[0].Summary; s.MatchedBy["data_mapping"] != 0 {
					t.Errorf("matched by %v, want no row by -dm", s.MatchedBy)
				}
				if !strings.Contains(warn.String(), "-dm "+dm+" is not read beside a layer mapping") {
					t.Errorf("warnings %q, want -dm's", warn.String())
				}
			}
		})
	}
	if n != 2 {
		t.Errorf("%d layer mapping goldens, want 2", n)
	}
}

// wantFiles checks that dir holds, under each golden file's name, its
// bytes.
func wantFiles(t *testing.T, dir string, goldens []string) {
	t.Helper()
	for _, f := range goldens {
		want, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(dir, filepath.Base(f)))
		if err != nil {
			t.Fatalf("%s not written: %v", filepath.Base(f), err)
		}
		diffCSV(t, filepath.Base(f), got, want)
	}
}

// TestFuzzyWithPairs: pairs are an explicit mapping, joined through
// first as a data mapping is, so beside them -fm pairs no row in order
// either: it only leaves backward calls unrenumbered. Here the NPU's
// relu backward calls come in the other order than the bench's: with
// renumbering (no -fm) the first of each side pair up, under -fm the
// calls of the same name; the fuzzy match alone pairs them in order and
// leaves the paired modules, whose names differ, unmatched.
func TestFuzzyWithPairs(t *testing.T) {
	t.Parallel()
	tensor := func(max string) string {
		return `{"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2], "Max": ` + max + `, "Min": 0.0, "Mean": 0.5, "Norm": 1.0, "requires_grad": false}`
	}
	entries := func(module, first, second string) string {
		return `"Module.` + module + `.forward.0": {"input_args": [` + tensor("1.0") + `], "output": [` + tensor("2.0") + `]}, ` +
			`"Functional.relu.` + first + `.backward": {"input": [` + tensor("3.0") + `], "output": [` + tensor("4.0") + `]}, ` +
			`"Functional.relu.` + second + `.backward": {"input": [` + tensor("5.0") + `], "output": [` + tensor("6.0") + `]}`
	}
	dir := t.TempDir()
	npu, bench := testkit.DumpDir(t, dir, "npu", entries("a.A", "1", "0")), testkit.DumpDir(t, dir, "bench", entries("b.B", "0", "1"))
	pairs := testkit.WriteFile(t, dir, "pairs.yaml", "- npu: a\n  bench: b\n")
	dm := testkit.WriteFile(t, dir, "dm.yaml", "{}\n")
	for _, c := range []struct {
		name      string
		pairs, dm string
		fuzzy     bool
		want      [][2]string
		matchedBy map[string]int
		warning   string
	}{
		{"pairs", pairs, "", false, [][2]string{
			{"Module.a.A.forward.0.input.0", "Module.b.B.forward.0.input.0"},
			{"Module.a.A.forward.0.output.0", "Module.b.B.forward.0.output.0"},
			{"Functional.relu.1.backward.input.0", "Functional.relu.0.backward.input.0"}, // both renumbered to relu.0
			{"Functional.relu.1.backward.output.0", "Functional.relu.0.backward.output.0"},
			{"Functional.relu.0.backward.input.0", "Functional.relu.1.backward.input.0"},
			{"Functional.relu.0.backward.output.0", "Functional.relu.1.backward.output.0"},
		}, map[string]int{"name": 4, "pairs": 2}, ""},
		{"pairs and fuzzy match", pairs, "", true, [][2]string{
			{"Module.a.A.forward.0.input.0", "Module.b.B.forward.0.input.0"},
			{"Module.a.A.forward.0.output.0", "Module.b.B.forward.0.output.0"},
			{"Functional.relu.1.backward.input.0", "Functional.relu.1.backward.input.0"},
			{"Functional.relu.1.backward.output.0", "Functional.relu.1.backward.output.0"},
			{"Functional.relu.0.backward.input.0", "Functional.relu.0.backward.input.0"},
			{"Functional.relu.0.backward.output.0", "Functional.relu.0.backward.output.0"},
		}, map[string]int{"name": 4, "pairs": 2},
			"layermap: warning: -fm pairs no row in order beside --pairs: the pairs are joined through first, as msprobe joins through a data mapping, and -fm only leaves backward calls unrenumbered\n"},
		// a data mapping beside the pairs: unmapped rows keep their names
		{"pairs, data mapping and fuzzy match", pairs, dm, true, [][2]string{
			{"Module.a.A.forward.0.input.0", "Module.b.B.forward.0.input.0"},
			{"Module.a.A.forward.0.output.0", "Module.b.B.forward.0.output.0"},
			{"Functional.relu.1.backward.input.0", "Functional.relu.1.backward.input.0"},
			{"Functional.relu.1.backward.output.0", "Functional.relu.1.backward.output.0"},
			{"Functional.relu.0.backward.input.0", "Functional.relu.0.backward.input.0"},
			{"Functional.relu.0.backward.output.0", "Functional.relu.0.backward.output.0"},
		}, map[string]int{"name": 4, "data_mapping": 0, "pairs": 2},
			"layermap: warning: -fm pairs no row in order beside a data mapping and --pairs: both are joined through first, as msprobe joins through a data mapping, and -fm only leaves backward calls unrenumbered\n"},
		{"fuzzy match", "", "", true, [][2]string{
			{"Module.a.A.forward.0.input.0", "N/A"},
			{"Module.a.A.forward.0.output.0", "N/A"},
			{"Functional.relu.1.backward.input.0", "Functional.relu.0.backward.input.0"},
			{"Functional.relu.1.backward.output.0", "Functional.relu.0.backward.output.0"},
			{"Functional.relu.0.backward.input.0", "Functional.relu.1.backward.input.0"},
			{"Functional.relu.0.backward.output.0", "Functional.relu.1.backward.output.0"},
		}, map[string]int{"fuzzy": 4}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var warn strings.Builder
			rep, err := Run(Options{Target: npu, Golden: bench, PairsFile: c.pairs, DataMappingFile: c.dm, Fuzzy: c.fuzzy, OutDir: t.TempDir(),
				Warnings: &warn, Stamp: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)})
			if err != nil {
				t.Fatal(err)
			}
			wantRowPairs(t, rep.Ranks[0].Files[0], c.want)
			if s := rep.Ranks[0].Summary; !reflect.DeepEqual(s.MatchedBy, c.matchedBy) {
				t.Errorf("matched by %v, want %v", s.MatchedBy, c.matchedBy)
			}
			if warn.String() != c.warning {
				t.Errorf("warnings %q, want %q", warn.String(), c.warning)
			}
		})
	}
}

// TestFuzzyWithPairsQwen: on the real Qwen2.5-VL pair, pairs beside -fm
// are joined through as they are without it: a down_proj paired 1:1 with
// MindSpeed's linear_fc2 (left unmatched by the fuzzy match, which
// ignored the pairs), and N:1 groups, compared through the plan whatever
// the join. The dumps hold no backward call, so the table is the one
// without -fm, byte for byte, and the summary counts the pairs.
func TestFuzzyWithPairsQwen(t *testing.T) {
	t.Parallel()
	demo := testkit.Testdata(t, "demo", "dumps")
	const (
		npuMLP   = "module.model.layers.0.mlp."
		benchMLP = "0.module.module.text_decoder.decoder.layers.0.mlp."
		down     = "Module." + npuMLP + "down_proj.Linear.forward.0."
		fc2      = "Module." + benchMLP + "linear_fc2.RowParallelLinear.forward.0."
		gate     = "Module." + npuMLP + "gate_proj.Linear.forward.0."
		fc1      = "Module." + benchMLP + "linear_fc1.ColumnParallelLinear.forward.0."
	)
	downPair := mapping.ModulePair{NPU: npuMLP + "down_proj", Bench: benchMLP + "linear_fc2"}
	gateUp := mapping.ModulePair{NPUParts: []string{npuMLP + "gate_proj", npuMLP + "up_proj"}, Bench: benchMLP + "linear_fc1", Kind: mapping.KindGateUp}
	// NPU row -> its bench row and Err_message
	pairedRows := map[string][2]string{
		down + "input.0":                    {fc2 + "input.0", "[]"},
		down + "parameters.weight":          {fc2 + "parameters.weight", "[]"},
		down + "output.0":                   {fc2 + "output.0", "[]"},
		"Tensor.__mul__.27.forward.input.0": {"Tensor.__mul__.24.forward.input.0", "[]"}, // called inside the paired calls
	}
	groupRows := map[string][2]string{
		gate + "input.0": {fc1 + "input.0", `["fused: gate_up, an input the 2 NPU parts share, compared with the bench module's"]`},
		// the demo's shapes make no combination
		gate + "output.0": {"N/A", `["fused: inputs only (gate_up: shapes [2, 8] and 1 more part cannot make [2, 8])"]`},
	}
	for _, c := range []struct {
		name      string
		pairs     []mapping.ModulePair
		want      []map[string][2]string
		matchedBy map[string]int
	}{
		{"1:1 pair", []mapping.ModulePair{downPair}, []map[string][2]string{pairedRows}, map[string]int{"name": 319, "pairs": 10}},
		{"1:1 pair and group", []mapping.ModulePair{downPair, gateUp}, []map[string][2]string{pairedRows, groupRows},
			map[string]int{"name": 308, "pairs": 10, "group": 10}},
		{"group", []mapping.ModulePair{gateUp}, []map[string][2]string{groupRows}, map[string]int{"name": 314, "pairs": 0, "group": 10}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			pairs := writePairs(t, t.TempDir(), c.pairs...)
			var tables [2][]byte
			for i, fuzzy := range []bool{false, true} {
				var warn strings.Builder
				rep, err := Run(Options{Target: filepath.Join(demo, "llamafactory"), Golden: filepath.Join(demo, "mindspeed-mm"),
					PairsFile: pairs, Fuzzy: fuzzy, OutDir: t.TempDir(), Warnings: &warn, Stamp: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)})
				if err != nil {
					t.Fatal(err)
				}
				rows := testkit.ReadCSV(t, rep.Ranks[0].Files[0])
				msg := col(rows, "Err_message")
				got := map[string][2]string{}
				for _, r := range rows[1:] {
					got[r[0]] = [2]string{r[1], r[msg]}
				}
				for _, want := range c.want {
					for n, w := range want {
						if got[n] != w {
							t.Errorf("-fm %v: %s -> %q, want %q", fuzzy, n, got[n], w)
						}
					}
				}
				// (-fm, set aside, is not counted)
				if s := rep.Ranks[0].Summary; !reflect.DeepEqual(s.MatchedBy, c.matchedBy) {
					t.Errorf("-fm %v: matched by %v, want %v", fuzzy, s.MatchedBy, c.matchedBy)
				}
				if got := strings.Contains(warn.String(), "-fm pairs no row in order beside --pairs"); got != fuzzy {
					t.Errorf("-fm %v: warnings %q", fuzzy, warn.String())
				}
				if tables[i], err = os.ReadFile(rep.Ranks[0].Files[0]); err != nil {
					t.Fatal(err)
				}
			}
			diffCSV(t, "-fm", tables[1], tables[0])
		})
	}
}

// wantRowPairs checks that the table at path has the rows want, in
// order: each an NPU name and its bench name.
func wantRowPairs(t *testing.T, path string, want [][2]string) {
	t.Helper()
	rows := testkit.ReadCSV(t, path)
	if len(rows) != len(want)+1 {
		t.Fatalf("%d rows, want %d:\n%s", len(rows)-1, len(want), dumpCol(rows, 1))
	}
	for i, w := range want {
		if r := rows[i+1]; r[0] != w[0] || r[1] != w[1] {
			t.Errorf("row %d: %s -> %s, want %s -> %s", i+1, r[0], r[1], w[0], w[1])
		}
	}
}
