package compare

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/layermap/layermap/printparse/msprobe"
)

// dirtyFixture writes one rank folder with the tensors of a
// Functional.npu_grouped_matmul.0.forward entry and returns its paths and
// entry; group (nil for none) is the group_list kwarg.
func dirtyFixture(t *testing.T, dir string, output []any, group *fixTensor) (msprobe.Paths, msprobe.Entry) {
	t.Helper()
	td := filepath.Join(dir, "dump_tensor_data")
	if err := os.MkdirAll(td, 0o755); err != nil {
		t.Fatal(err)
	}
	const name = "Functional.npu_grouped_matmul.0.forward"
	e := msprobe.Entry{Name: name, OpNoNumber: "Functional.npu_grouped_matmul", CallDirection: "0.forward", Direction: "forward"}
	add := func(suffix, state string, ft fixTensor) {
		writePT(t, filepath.Join(td, name+suffix+".pt"), ft)
		e.Items = append(e.Items, msprobe.Item{Name: name + suffix, Entry: name, State: state, Dtype: ft.Dtype,
			Shape: "[4, 2]", RequiresGrad: "False", DataName: name + suffix + ".pt"})
	}
	add(".input.0", "input", fixTensor{Dtype: "torch.float32", Shape: []int{4, 2}, Values: []any{1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0}})
	if group != nil {
		add(".input.group_list", "input", *group)
		e.Items[len(e.Items)-1].Shape = "[2]"
	}
	add(".output.0", "output", fixTensor{Dtype: "torch.float32", Shape: []int{4, 2}, Values: output})
	return msprobe.Paths{Dir: dir, TensorDir: td}, e
}

// TestDirtyValidLen: msprobe zeroes the NPU output rows of an
// npu_grouped_matmul entry from sum(group_list) on before comparing
// (ParseData.get_valid_len_with_postprocess, output_postprocess), so
// garbage the NPU kernel leaves past the valid rows passes against a bench
// that has zeros there; without a group_list the rows are compared whole.
// The bench side (msprobe's "golden" backend) is never cleaned.
func TestDirtyValidLen(t *testing.T) {
	group := &fixTensor{Dtype: "torch.int64", Shape: []int{2}, Values: []any{1.0, 1.0}}
	npuOut := []any{1.0, 2.0, 3.0, 4.0, 9999.0, -9999.0, 5000.0, 7.0}
	benchOut := []any{1.0, 2.0, 3.0, 4.0, 0.0, 0.0, 0.0, 0.0}
	// Uncleaned: cos = sqrt(30)/sqrt(224960081), EucDist = sqrt(224960051),
	// MaxRelativeErr = 9999 / float32 eps (bench 0 there).
	whole := []string{"0.000365180768", "14998.668307553175", "9999.0", "83877691392.0", "0.5", "0.5", "warning"}
	for _, c := range []struct {
		name     string
		npuGroup *fixTensor
		benchOut []any
		want     []string // the output row's six metrics and Result
	}{
		{"cleaned to valid length", group, benchOut,
			[]string{"1.0", "0.0", "0.0", "0.0", "1.0", "1.0", "pass"}},
		{"no group_list: whole rows", nil, benchOut, whole},
		{"float group_list: not cleaned", &fixTensor{Dtype: "torch.float32", Shape: []int{2}, Values: []any{1.0, 1.0}}, benchOut, whole},
		{"bench not cleaned", group, npuOut,
			[]string{"0.000365180768", "14998.668307553175", "9999.0", "1.0", "0.5", "0.5", "warning"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			np, ne := dirtyFixture(t, filepath.Join(t.TempDir(), "npu"), npuOut, c.npuGroup)
			bp, be := dirtyFixture(t, filepath.Join(t.TempDir(), "bench"), c.benchOut, group)
			tc, err := NewTensorFiles(np, bp)
			if err != nil {
				t.Fatal(err)
			}
			var s memSink
			if _, err := Compare(memSource(ne), memSource(be), Config{Mode: Tensor, Tensor: tc}, &s); err != nil {
				t.Fatal(err)
			}
			col := func(h string) int {
				for i, x := range s.header {
					if x == h {
						return i
					}
				}
				t.Fatalf("no column %q in %v", h, s.header)
				return -1
			}
			var out []string
			for _, r := range s.rows {
				if r[0] == "Functional.npu_grouped_matmul.0.forward.output.0" {
					out = r
				}
			}
			if out == nil {
				t.Fatalf("no output row in %v", s.rows)
			}
			var got []string
			for _, h := range []string{"Cosine", "EucDist", "MaxAbsErr", "MaxRelativeErr", "One Thousandth Err Ratio",
				"Five Thousandths Err Ratio", "Result"} {
				got = append(got, out[col(h)])
			}
			for i := range c.want {
				if got[i] != c.want[i] {
					t.Errorf("output row %q, want %q", got, c.want)
					break
				}
			}
		})
	}
}

// TestDirtyGroup: the group row is the named kwarg of an entry whose name
// contains a DirtyDataAPIs API, and nothing for other entries.
func TestDirtyGroup(t *testing.T) {
	rows := func(entry string, suffixes ...string) []*msprobe.Item {
		var out []*msprobe.Item
		for _, s := range suffixes {
			out = append(out, &msprobe.Item{Name: entry + s, Entry: entry, State: "input"})
		}
		return out
	}
	for _, c := range []struct {
		rows []*msprobe.Item
		want string
	}{
		{rows("NPU.npu_grouped_matmul.0.forward", ".input.0", ".input.group_list"), "NPU.npu_grouped_matmul.0.forward.input.group_list"},
		{rows("NPU.npu_dequant_swiglu_quant.1.forward", ".input.group_list", ".input.group_index"), "NPU.npu_dequant_swiglu_quant.1.forward.input.group_index"},
		{rows("NPU.npu_grouped_matmul.0.forward", ".input.0", ".input.1"), ""},
		{rows("Functional.linear.0.forward", ".input.group_list"), ""},
		{nil, ""},
	} {
		got := ""
		if it := DirtyGroup(c.rows); it != nil {
			got = it.Name
		}
		if got != c.want {
			t.Errorf("DirtyGroup(%d rows) = %q, want %q", len(c.rows), got, c.want)
		}
	}
}
