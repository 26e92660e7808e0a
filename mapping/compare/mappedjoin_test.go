package compare

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
			rows := testkit.ReadCSV(t, rep.Ranks[0].Files[0])
			if len(rows) != len(c.want)+1 {
				t.Fatalf("%d rows, want %d:\n%s", len(rows)-1, len(c.want), dumpCol(rows, 1))
			}
			for i, w := range c.want {
				if r := rows[i+1]; r[0] != w[0] || r[1] != w[1] {
					t.Errorf("row %d: %s -> %s, want %s -> %s", i+1, r[0], r[1], w[0], w[1])
				}
			}
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
// the data mapping saved beside the table included; the run warns that
// -dm is not used. (The Qwen pair's target is PyTorch, whose msprobe
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
			dm := testkit.WriteFile(t, dir, "dm.yaml", rows[1][0]+": "+rows[2][1]+"\n")
			var warn strings.Builder
			opt := Options{Target: filepath.Join(root, c.target), Golden: filepath.Join(root, c.golden), OutDir: t.TempDir(),
				DataMappingFile: dm, Warnings: &warn, Stamp: goldenTime(t, tables[0])}
			c.opt(t, &opt)
			rep, err := Run(opt)
			if err != nil {
				t.Fatal(err)
			}
			wantFiles(t, opt.OutDir, append(tables, yamls...))
			if s := rep.Ranks[0].Summary; s.MatchedBy["data_mapping"] != 0 {
				t.Errorf("matched by %v, want no row by -dm", s.MatchedBy)
			}
			if !strings.Contains(warn.String(), "-dm "+dm+" is not used beside a layer mapping") {
				t.Errorf("warnings %q, want -dm's", warn.String())
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
