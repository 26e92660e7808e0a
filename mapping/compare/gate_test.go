package compare

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/layermap/layermap/printparse/testkit"
)

// TestCrossFrameworkGate: the dtype gate of a MindSpore dump against a
// PyTorch one compares dtypes by kind (msprobe's ms_compare sets
// cross_frame for a PyTorch bench, and gen_dtype_condition maps both
// sides through cross_dtype_mapping first: spec §3.3): Int32 passes
// torch.int64 and Float32 torch.float32, Float32 fails torch.int64 (its
// row looks unmatched). Between two PyTorch dumps the same dtype names
// are compared as they are, and Int32 fails torch.int64.
func TestCrossFrameworkGate(t *testing.T) {
	t.Parallel()
	tensor := func(dtype string) string {
		return `{"type": "` + map[bool]string{true: "mindspore.Tensor", false: "torch.Tensor"}[!strings.HasPrefix(dtype, "torch.")] +
			`", "dtype": "` + dtype + `", "shape": [2], "Max": 1.0, "Min": 0.0, "Mean": 0.5, "Norm": 1.0, "requires_grad": false}`
	}
	dump := func(dir, framework, in, out, mulOut string) string {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		testkit.WriteFile(t, dir, "dump.json", `{"task": "statistics", "level": "L1", "framework": "`+framework+`", "dump_data_dir": null, "data": {`+
			`"Tensor.add.0.forward": {"input_args": [`+tensor(in)+`], "output": [`+tensor(out)+`]}, `+
			`"Tensor.mul.0.forward": {"output": [`+tensor(mulOut)+`]}}}`)
		return dir
	}
	dir := t.TempDir()
	bench := dump(filepath.Join(dir, "bench"), "pytorch", "torch.int64", "torch.float32", "torch.int64")
	for _, c := range []struct {
		framework string
		want      []string // each row's Bench Name
	}{
		{"mindspore", []string{"Tensor.add.0.forward.input.0", "Tensor.add.0.forward.output.0", "N/A"}},
		{"pytorch", []string{"N/A", "N/A", "N/A"}},
	} {
		t.Run(c.framework, func(t *testing.T) {
			t.Parallel()
			npu := dump(filepath.Join(t.TempDir(), "npu"), c.framework, "Int32", "Float32", "Float32")
			rep, err := Run(Options{Target: npu, Golden: bench, OutDir: t.TempDir(), Stamp: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)})
			if err != nil {
				t.Fatal(err)
			}
			rows := testkit.ReadCSV(t, rep.Ranks[0].Files[0])
			if len(rows) != len(c.want)+1 {
				t.Fatalf("%d rows, want %d", len(rows)-1, len(c.want))
			}
			for i, w := range c.want {
				if rows[i+1][1] != w {
					t.Errorf("%s: bench %s, want %s", rows[i+1][0], rows[i+1][1], w)
				}
			}
		})
	}
}
