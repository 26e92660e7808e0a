package compare

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/layermap/layermap/printparse/msprobe"
	"github.com/layermap/layermap/printparse/testkit"
)

// TestDebugJSON: two debug.json files (msprobe's single-point saves) are
// joined on their rows' names as they are (spec §3.2, §8): an entry's
// name is free-form, so any dot-prefix of a row's key may be an entry's
// (model.y.0.debug's rows beside model.y.0.debug.z.debug's); the table
// is debug_compare_result_{ts}.csv. The same rows whatever the bench
// entries' order, and with the whole bench side in memory.
func TestDebugJSON(t *testing.T) {
	t.Parallel()
	tensor := func(max string) string {
		return `{"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2], "Max": ` + max + `, "Min": 0.0, "Mean": 0.5, "Norm": 1.0, "requires_grad": false}`
	}
	npu := map[string]string{
		"model.x.0.debug":         `{"input": [` + tensor("1.0") + `], "output": [` + tensor("2.0") + `]}`,
		"model.y.0.debug":         `[` + tensor("3.0") + `, {"type": "int", "value": 3}]`,
		"model.y.0.debug.z.debug": `[` + tensor("3.5") + `]`,
		"relu.3.backward.debug":   `[` + tensor("4.0") + `]`,
		"npu_only.0.debug":        `[` + tensor("5.0") + `]`,
	}
	bench := map[string]string{
		"model.x.0.debug":         `{"input": [` + tensor("1.0") + `], "output": [` + tensor("2.5") + `]}`,
		"model.y.0.debug":         `[` + tensor("3.0") + `, {"type": "int", "value": 4}]`,
		"model.y.0.debug.z.debug": `[` + tensor("3.25") + `]`,
		"relu.1.backward.debug":   `[` + tensor("4.0") + `]`,
		"bench_only.0.debug":      `[` + tensor("6.0") + `]`,
	}
	npuOrder := []string{"model.x.0.debug", "model.y.0.debug", "model.y.0.debug.z.debug", "relu.3.backward.debug", "npu_only.0.debug"}
	want := [][2]string{
		{"model.x.0.debug.input.0", "model.x.0.debug.input.0"},
		{"model.x.0.debug.output.0", "model.x.0.debug.output.0"},
		{"model.y.0.debug.0", "model.y.0.debug.0"},
		{"model.y.0.debug.1", "model.y.0.debug.1"},
		{"model.y.0.debug.z.debug.0", "model.y.0.debug.z.debug.0"},
		{"relu.3.backward.debug.0", "N/A"},
		{"npu_only.0.debug.0", "N/A"},
	}
	write := func(dir string, entries map[string]string, order []string) string {
		var data []string
		for _, k := range order {
			data = append(data, `"`+k+`": `+entries[k])
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		testkit.WriteFile(t, dir, msprobe.DebugJSONName, `{"task": "statistics", "level": "debug", "framework": "pytorch", "dump_data_dir": null, "data": {`+strings.Join(data, ", ")+`}}`)
		return dir
	}
	dir := t.TempDir()
	np := write(filepath.Join(dir, "npu"), npu, npuOrder)
	for _, c := range []struct {
		name  string
		order []string
		full  bool
	}{
		{"bench in the NPU order", []string{"model.x.0.debug", "model.y.0.debug", "model.y.0.debug.z.debug", "relu.1.backward.debug", "bench_only.0.debug"}, false},
		{"bench in another order", []string{"bench_only.0.debug", "model.y.0.debug.z.debug", "relu.1.backward.debug", "model.y.0.debug", "model.x.0.debug"}, false},
		{"bench in memory", []string{"bench_only.0.debug", "model.y.0.debug.z.debug", "relu.1.backward.debug", "model.y.0.debug", "model.x.0.debug"}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			bp := write(filepath.Join(t.TempDir(), "bench"), bench, c.order)
			rep, err := Run(Options{Target: np, Golden: bp, OutDir: t.TempDir(), fullBench: c.full, Stamp: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)})
			if err != nil {
				t.Fatal(err)
			}
			f := rep.Ranks[0].Files[0]
			if !strings.HasPrefix(filepath.Base(f), "debug_compare_result_") {
				t.Errorf("table %s, want debug_compare_result_*", filepath.Base(f))
			}
			rows := testkit.ReadCSV(t, f)
			if len(rows) != len(want)+1 {
				t.Fatalf("%d rows, want %d:\n%s", len(rows)-1, len(want), dumpCol(rows, 0))
			}
			for i, w := range want {
				if r := rows[i+1]; r[0] != w[0] || r[1] != w[1] {
					t.Errorf("row %d: %s -> %s, want %s -> %s", i+1, r[0], r[1], w[0], w[1])
				}
			}
		})
	}
}
