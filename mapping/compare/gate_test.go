package compare

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/layermap/layermap/printparse/testkit"
)

// gateSide is one dump.json of TestCrossFrameworkGate: its header's
// framework ("" for no framework key) and whether its values are
// MindSpore's (mindspore.Tensor, Float32) or torch's (torch.Tensor,
// torch.float32).
type gateSide struct {
	framework string
	ms        bool
}

var (
	ptDump    = gateSide{"pytorch", false}
	msDump    = gateSide{"mindspore", true}
	mtDump    = gateSide{"mindtorch", true} // mindtorch dumps through MindSpore's processor
	bareTorch = gateSide{"", false}
	bareMS    = gateSide{"", true}
)

// gateDtypes are the output dtypes of the entries Tensor.add, Tensor.mul
// and Tensor.sub, NPU then bench, MindSpore's then torch's. add is Int32
// against Int64: only cross_dtype_mapping pairs it. mul is Float32 on both
// sides: the same name within a framework, and across frameworks only
// cross_dtype_mapping pairs it. sub is Float32 against Int32, never paired.
var gateDtypes = [2][2][3]string{
	{{"Int32", "Float32", "Float32"}, {"torch.int32", "torch.float32", "torch.float32"}},
	{{"Int64", "Float32", "Int32"}, {"torch.int64", "torch.float32", "torch.int32"}},
}

// writeGateDump writes dir/dump.json for side s (bench: the bench side's
// dtypes).
func writeGateDump(t *testing.T, dir string, s gateSide, bench bool) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	typ, fam := "mindspore.Tensor", 0
	if !s.ms {
		typ, fam = "torch.Tensor", 1
	}
	side := 0
	if bench {
		side = 1
	}
	var b strings.Builder
	b.WriteString("{\n \"task\": \"statistics\",\n \"level\": \"L1\",\n")
	if s.framework != "" {
		fmt.Fprintf(&b, " \"framework\": %q,\n", s.framework)
	}
	b.WriteString(" \"dump_data_dir\": null,\n \"data\": {")
	for i, op := range [...]string{"add", "mul", "sub"} {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "\n  \"Tensor.%s.0.forward\": {\n   \"output\": [\n    {\n     \"type\": %q,\n     \"dtype\": %q,\n"+
			"     \"shape\": [2],\n     \"Max\": 1.0,\n     \"Min\": 0.0,\n     \"Mean\": 0.5,\n     \"Norm\": 1.0\n    }\n   ]\n  }",
			op, typ, gateDtypes[side][fam][i])
	}
	b.WriteString("\n }\n}\n")
	testkit.WriteFile(t, dir, "dump.json", b.String())
}

// TestCrossFrameworkGate: msprobe's dtype gate (acc_compare.py
// Match.gen_dtype_condition) maps both dtypes through cross_dtype_mapping
// only when cross_frame is set, which only the MindSpore comparator does,
// for a mindspore or mindtorch target (core/compare/utils.py
// get_compare_framework; in a step folder the first NPU rank's framework
// picks the comparator of every rank: compare_distributed_inner), against
// a bench detect_framework_by_dump_json takes for PyTorch: its header's
// framework when pytorch or mindspore, else its first typed value
// (mindspore/compare/ms_compare.py, mindspore/compare/utils.py
// check_cross_framework). Each case lists, per rank, the entries whose
// output row pairs (the others' Bench Name is N/A). The step-folder
// cases are the pairs msprobe refuses as two files (get_compare_framework
// takes a pytorch target only with a pytorch bench, and no mindtorch
// bench), and the mixed step folders. Each rank whose two frameworks'
// rows cannot pair gets a warning saying so.
func TestCrossFrameworkGate(t *testing.T) {
	t.Parallel()
	const (
		cross = "add mul" // dtypes compared by kind
		same  = "mul"     // by name, one framework's names
		none  = ""        // by name, two frameworks' names
	)
	for _, c := range []struct {
		name       string
		npu, bench []gateSide // one per rank; two files when one rank
		step       bool
		want       []string
	}{
		{"pytorch-pytorch", []gateSide{ptDump}, []gateSide{ptDump}, false, []string{same}},
		{"unnamed-pytorch", []gateSide{bareTorch}, []gateSide{ptDump}, false, []string{same}},
		{"pytorch-unnamed", []gateSide{ptDump}, []gateSide{bareTorch}, false, []string{same}},
		{"pytorch-mindspore", []gateSide{ptDump}, []gateSide{msDump}, true, []string{none}},
		{"pytorch-mindtorch", []gateSide{ptDump}, []gateSide{mtDump}, true, []string{none}},
		{"unnamed-mindspore", []gateSide{bareTorch}, []gateSide{msDump}, true, []string{none}},
		{"unnamed-ms-pytorch", []gateSide{bareMS}, []gateSide{ptDump}, false, []string{none}},
		{"pytorch-mindtorch-torch-values", []gateSide{ptDump}, []gateSide{{"mindtorch", false}}, true, []string{same}},
		{"mindspore-pytorch", []gateSide{msDump}, []gateSide{ptDump}, false, []string{cross}},
		{"mindspore-mindspore", []gateSide{msDump}, []gateSide{msDump}, false, []string{same}},
		{"mindspore-unnamed-torch", []gateSide{msDump}, []gateSide{bareTorch}, false, []string{cross}},
		{"mindspore-unnamed-mindspore", []gateSide{msDump}, []gateSide{bareMS}, false, []string{same}},
		{"mindspore-mindtorch", []gateSide{msDump}, []gateSide{mtDump}, true, []string{same}},
		{"mindspore-mindtorch-torch-values", []gateSide{msDump}, []gateSide{{"mindtorch", false}}, true, []string{cross}},
		{"mindtorch-pytorch", []gateSide{mtDump}, []gateSide{ptDump}, false, []string{cross}},
		{"mindtorch-mindspore", []gateSide{mtDump}, []gateSide{msDump}, false, []string{same}},
		{"mindtorch-unnamed-torch", []gateSide{mtDump}, []gateSide{bareTorch}, false, []string{cross}},
		{"mindtorch-unnamed-mindspore", []gateSide{mtDump}, []gateSide{bareMS}, false, []string{same}},
		// msprobe refuses it; a MindSpore bench: no flag
		{"mindtorch-mindtorch", []gateSide{mtDump}, []gateSide{mtDump}, false, []string{same}},
		{"step-mindspore-first", []gateSide{msDump, ptDump}, []gateSide{ptDump, ptDump}, true, []string{cross, cross}},
		{"step-pytorch-first", []gateSide{ptDump, msDump}, []gateSide{ptDump, ptDump}, true, []string{same, none}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			target, golden := filepath.Join(dir, "npu"), filepath.Join(dir, "bench")
			for i := range c.npu {
				rank := ""
				if c.step {
					rank = fmt.Sprintf("rank%d", i)
				}
				writeGateDump(t, filepath.Join(target, rank), c.npu[i], false)
				writeGateDump(t, filepath.Join(golden, rank), c.bench[i], true)
			}
			if !c.step {
				target, golden = filepath.Join(target, "dump.json"), filepath.Join(golden, "dump.json")
			}
			var warn strings.Builder
			rep, err := Run(Options{Target: target, Golden: golden, OutDir: t.TempDir(), Stamp: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC), Warnings: &warn})
			if err != nil {
				t.Fatal(err)
			}
			// each rank whose frameworks' rows cannot pair is warned of
			nothing := 0
			for _, w := range c.want {
				if w == none {
					nothing++
				}
			}
			if got := strings.Count(warn.String(), "so their tensor rows do not pair"); got != nothing {
				t.Errorf("%d warnings of rows that cannot pair, want %d:\n%s", got, nothing, warn.String())
			}
			for _, l := range strings.Split(strings.TrimSpace(warn.String()), "\n") {
				if l != "" && !strings.Contains(l, " holds pytorch values, ") && !strings.Contains(l, " holds mindspore values, ") {
					t.Errorf("warning %q does not say what the target holds", l)
				}
			}
			if len(rep.Ranks) != len(c.want) {
				t.Fatalf("%d tables, want %d", len(rep.Ranks), len(c.want))
			}
			for r, want := range c.want {
				rows := testkit.ReadCSV(t, rep.Ranks[r].Files[0])
				if len(rows) != 4 {
					t.Fatalf("rank %d: %d rows, want 3", r, len(rows)-1)
				}
				var paired []string
				for _, row := range rows[1:] {
					switch row[1] {
					case row[0]:
						paired = append(paired, strings.Split(row[0], ".")[1])
					case "N/A":
					default:
						t.Errorf("rank %d: %s paired with %s", r, row[0], row[1])
					}
				}
				if got := strings.Join(paired, " "); got != want {
					t.Errorf("rank %d: rows paired: %q, want %q", r, got, want)
				}
			}
		})
	}
}
