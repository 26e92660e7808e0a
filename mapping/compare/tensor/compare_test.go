package tensor

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/layermap/layermap/mapping/compare/tensor/tensortest"
	"github.com/layermap/layermap/printparse/msprobe"
	"github.com/layermap/layermap/printparse/testkit"
)

// metricCols are the six tensor-mode metric columns.
var metricCols = []string{"Cosine", "EucDist", "MaxAbsErr", "MaxRelativeErr", "One Thousandth Err Ratio", "Five Thousandths Err Ratio"}

// goldenDump rebuilds one side of golden/synth_tensor_pt as a rank folder
// whose dump_tensor_data holds every tensor tensors.json describes, as
// .pt files or (ext ".npy") as .npy files.
func goldenDump(t *testing.T, side, ext string) *Folder {
	t.Helper()
	specs := readSpecs(t, filepath.Join(testkit.Corpus(t, "msprobe"), "golden/synth_tensor_pt", side, "tensors.json"))
	dir := filepath.Join(t.TempDir(), side)
	p := msprobe.Paths{Dir: dir, TensorDir: filepath.Join(dir, msprobe.TensorDirName)}
	if err := os.MkdirAll(p.TensorDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, s := range specs {
		vals := floats(t, s)
		if ext == ".pt" {
			writeFile(t, filepath.Join(p.TensorDir, name), ptBytes(t, s.Dtype, s.Shape, vals))
			continue
		}
		np := numpyName(s.Dtype)
		if len(vals) == 0 || np == "float16" {
			// The npy library writes neither float16 nor zero-length
			// dimensions: lay those files out as numpy.save does.
			writeFile(t, filepath.Join(p.TensorDir, strings.TrimSuffix(name, ".pt")+".npy"), rawNPY(t, np, s.Shape, vals))
			continue
		}
		writeFile(t, filepath.Join(p.TensorDir, strings.TrimSuffix(name, ".pt")+".npy"), npyBytes(t, np, s.Shape, vals))
	}
	return NewFolder(p)
}

// rawNPY lays out a .npy file as numpy.save does, for what the npy
// library cannot write (float16, zero-length dimensions).
func rawNPY(t *testing.T, dtype string, shape []int, vals []float64) []byte {
	descr := map[string]string{"float16": "<f2", "float32": "<f4"}[dtype]
	torch := map[string]string{"float16": "torch.float16", "float32": "torch.float32"}[dtype]
	if descr == "" {
		t.Fatalf("rawNPY: no layout for %s", dtype)
	}
	return tensortest.NPYBytes(descr, false, shape, storageBytes(t, torch, vals))
}

// goldenRows reads a golden compare_result CSV: header and rows.
func goldenRows(t *testing.T, path string) ([]string, [][]string) {
	t.Helper()
	recs := testkit.ReadCSV(t, path)
	return recs[0], recs[1:]
}

// parseDataName splits the Data_name cell "['a.pt', 'b.pt']".
func parseDataName(t *testing.T, cell string) (string, string) {
	t.Helper()
	s := strings.TrimSuffix(strings.TrimPrefix(cell, "['"), "']")
	parts := strings.Split(s, "', '")
	if len(parts) != 2 {
		t.Fatalf("unexpected Data_name %q", cell)
	}
	return parts[0], parts[1]
}

// TestGoldenParity reproduces every tensor-mode metric cell of
// golden/synth_tensor_pt (plain and fuzzy-match tables) from tensors
// rebuilt from tensors.json, once as torch .pt files and once as .npy
// files (the MindSpore reader), cell by cell.
func TestGoldenParity(t *testing.T) {
	root := filepath.Join(testkit.Corpus(t, "msprobe"), "golden/synth_tensor_pt")
	csvs, err := filepath.Glob(filepath.Join(root, "output*", "compare_result_*.csv"))
	if err != nil || len(csvs) < 2 {
		t.Fatalf("golden tables: %v %v", csvs, err)
	}
	for _, ext := range []string{".pt", ".npy"} {
		t.Run(ext, func(t *testing.T) {
			npu, bench := goldenDump(t, "npu", ext), goldenDump(t, "bench", ext)
			for _, path := range csvs {
				header, rows := goldenRows(t, path)
				col := map[string]int{}
				for i, h := range header {
					col[h] = i
				}
				cells := 0
				for _, row := range rows {
					nd, bd := parseDataName(t, row[col["Data_name"]])
					if ext == ".npy" {
						nd = strings.Replace(nd, ".pt", ".npy", 1)
						bd = strings.Replace(bd, ".pt", ".npy", 1)
					}
					m, err := CompareDataNames(npu, bench, nd, bd, Options{NPUName: row[col["NPU Name"]], BenchName: row[col["Bench Name"]]})
					if err != nil {
						t.Fatalf("%s: %v", row[0], err)
					}
					got := m.Cells()
					for i, name := range metricCols {
						want := row[col[name]]
						if got[i] != want {
							t.Errorf("%s %s %s: got %q, want %q (%s: %s)", filepath.Base(path), row[0], name, got[i], want, m.Status, m.Message)
						}
						cells++
					}
				}
				if cells < 6*30 {
					t.Fatalf("%s: only %d cells compared", path, cells)
				}
			}
		})
	}
}

func f32s(xs ...float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = float64(float32(x))
	}
	return out
}

func TestCompareCases(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	tests := []struct {
		name        string
		npu, bench  *Tensor
		want        [6]string
		status      Status
		msgContains string
	}{
		{"identical", &Tensor{Dtype: "float32", Shape: []int{3}, Data: f32s(1, 2, 3)}, &Tensor{Dtype: "float32", Shape: []int{3}, Data: f32s(1, 2, 3)},
			[6]string{"1.0", "0.0", "0.0", "0.0", "1.0", "1.0"}, StatusOK, ""},
		{"empty npu", &Tensor{Dtype: "float32", Shape: []int{0, 3}, Data: []float64{}}, &Tensor{Dtype: "float32", Shape: []int{2}, Data: f32s(1, 2)},
			[6]string{"unsupported", "unsupported", "unsupported", "unsupported", "unsupported", "unsupported"}, StatusEmpty, "empty data"},
		{"empty bench only", &Tensor{Dtype: "float32", Shape: []int{2}, Data: f32s(1, 2)}, &Tensor{Dtype: "float32", Shape: []int{0}, Data: []float64{}},
			[6]string{"shape unmatched", "shape unmatched", "shape unmatched", "shape unmatched", "shape unmatched", "shape unmatched"}, StatusShapeUnmatch, "Shape"},
		{"inf vs -inf same place", &Tensor{Dtype: "float32", Shape: []int{2}, Data: []float64{inf, 1}}, &Tensor{Dtype: "float32", Shape: []int{2}, Data: []float64{-inf, 1}},
			[6]string{"1.0", "0.0", "0.0", "0.0", "1.0", "1.0"}, StatusOK, ""}, // both zeroed, as msprobe does
		{"nan vs inf", &Tensor{Dtype: "float32", Shape: []int{2}, Data: []float64{nan, 1}}, &Tensor{Dtype: "float32", Shape: []int{2}, Data: []float64{inf, 1}},
			[6]string{"N/A", "N/A", "N/A", "N/A", "N/A", "N/A"}, StatusNaNMismatch, "position of inf or nan"},
		{"0-d nan", &Tensor{Dtype: "float32", Shape: []int{}, Data: []float64{nan}}, &Tensor{Dtype: "float32", Shape: []int{}, Data: []float64{1}},
			[6]string{"unsupported", "unsupported", "Nan", "Nan", "unsupported", "unsupported"}, StatusScalar, "0-d tensor"},
		{"0-d inf vs finite", &Tensor{Dtype: "float64", Shape: []int{}, Data: []float64{inf}}, &Tensor{Dtype: "float64", Shape: []int{}, Data: []float64{1}},
			[6]string{"unsupported", "unsupported", " inf", " inf", "unsupported", "unsupported"}, StatusScalar, ""},
		{"0-d uint8 wraps", &Tensor{Dtype: "uint8", Shape: []int{}, Data: []float64{3}}, &Tensor{Dtype: "uint8", Shape: []int{}, Data: []float64{5}},
			[6]string{"unsupported", "unsupported", "254.0", "0.4", "unsupported", "unsupported"}, StatusScalar, ""},
		{"0-d float16 vs float16", &Tensor{Dtype: "float16", Shape: []int{}, Data: []float64{1.0009765625}}, &Tensor{Dtype: "float16", Shape: []int{}, Data: []float64{1}},
			[6]string{"unsupported", "unsupported", "0.0009765625", "0.0009765625", "unsupported", "unsupported"}, StatusScalar, ""},
		{"0-d bool", &Tensor{Dtype: "bool", Shape: []int{}, Data: []float64{1}}, &Tensor{Dtype: "bool", Shape: []int{}, Data: []float64{0}},
			[6]string{"unsupported", "unsupported", "1.0", "4503599627370496.0", "unsupported", "unsupported"}, StatusScalar, ""},
		{"dtype differs", &Tensor{Dtype: "float16", Shape: []int{2}, Data: []float64{1, 2}}, &Tensor{Dtype: "float32", Shape: []int{2}, Data: f32s(1, 2)},
			[6]string{"1.0", "0.0", "0.0", "0.0", "1.0", "1.0"}, StatusOK, "Dtype of NPU and bench tensor do not match."},
		{"float64 bench zero", &Tensor{Dtype: "float64", Shape: []int{2}, Data: []float64{1, 1}}, &Tensor{Dtype: "float64", Shape: []int{2}, Data: []float64{0, 1}},
			[6]string{"0.707106781187", "1.0", "1.0", "4503599627370496.0", "0.5", "0.5"}, StatusOK, ""},
		{"int64 vs int64", &Tensor{Dtype: "int64", Shape: []int{3}, Data: []float64{1, 2, 3}}, &Tensor{Dtype: "int64", Shape: []int{3}, Data: []float64{1, 2, 6}},
			[6]string{"0.960001451799", "3.0", "3.0", "0.5", "0.666666666667", "0.666666666667"}, StatusOK, ""},
		{"both zero", &Tensor{Dtype: "float32", Shape: []int{2}, Data: []float64{0, 0}}, &Tensor{Dtype: "float32", Shape: []int{2}, Data: []float64{0, 0}},
			[6]string{"1.0", "0.0", "0.0", "0.0", "1.0", "1.0"}, StatusOK, ""},
		{"tiny eucdist exponent", &Tensor{Dtype: "float64", Shape: []int{2}, Data: []float64{1, 1}}, &Tensor{Dtype: "float64", Shape: []int{2}, Data: []float64{1 + 1e-12, 1}},
			[6]string{"1.0", "1.000088900582341e-12", "1e-12", "1e-12", "1.0", "1.0"}, StatusOK, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := append([]float64{}, tt.npu.Data...)
			m := Compare(tt.npu, tt.bench, Options{})
			if m.Cells() != tt.want || m.Status != tt.status {
				t.Errorf("got %q %s, want %q %s", m.Cells(), m.Status, tt.want, tt.status)
			}
			if !strings.Contains(m.Message, tt.msgContains) {
				t.Errorf("message %q lacks %q", m.Message, tt.msgContains)
			}
			for i := range before {
				if before[i] != tt.npu.Data[i] && !math.IsNaN(before[i]) {
					t.Fatal("Compare modified its input")
				}
			}
		})
	}
}

func TestCompareDataNames(t *testing.T) {
	dir := t.TempDir()
	p := msprobe.Paths{Dir: dir, TensorDir: filepath.Join(dir, msprobe.TensorDirName)}
	os.MkdirAll(p.TensorDir, 0o755)
	writeFile(t, filepath.Join(p.TensorDir, "a.pt"), ptBytes(t, "torch.float32", []int{2}, []float64{1, 2}))
	writeFile(t, filepath.Join(p.TensorDir, "bad.pt"), []byte("not a tensor"))
	tests := []struct {
		npu, bench string
		status     Status
		unsafe     bool
	}{
		{"-1", "-1", StatusNoRealData, false},
		{"a.pt", "-1", StatusNoRealData, false},
		{"a.pt", "N/A", StatusAPIUnmatch, false},
		{"N/A", "N/A", StatusReadNone, false},
		{"a.pt", "a.pt", StatusOK, false},
		{"a.pt", "missing.pt", StatusReadNone, false},
		{"a.pt", "bad.pt", StatusReadNone, false},
		{"../../etc/passwd.pt", "a.pt", StatusReadNone, true},
		{"a.pt", "/abs.pt", StatusReadNone, true},
	}
	for _, tt := range tests {
		m, err := CompareDataNames(NewFolder(p), NewFolder(p), tt.npu, tt.bench, Options{})
		if m.Status != tt.status {
			t.Errorf("%s/%s: status %s, want %s", tt.npu, tt.bench, m.Status, tt.status)
		}
		if tt.unsafe != (err != nil && errors.Is(err, msprobe.ErrUnsafeDataName)) {
			t.Errorf("%s/%s: error %v, unsafe=%v", tt.npu, tt.bench, err, tt.unsafe)
		}
		if m.Status == StatusReadNone && m.Err == nil {
			t.Errorf("%s/%s: read failure without cause", tt.npu, tt.bench)
		}
	}
}

// TestCleanDirty checks msprobe's dirty-data cleaning through Compare:
// NPU rows from the valid length on compare as zeros.
func TestCleanDirty(t *testing.T) {
	npu := &Tensor{Dtype: "float32", Shape: []int{3, 2}, Data: []float64{1, 2, 3, 4, 5, 6}}
	two, neg, big := 2, -5, 9
	tests := []struct {
		name string
		row  string
		n    *int
		want []float64 // the bench equal to the cleaned NPU tensor
	}{
		{"no len", "X.0.forward.output.0", nil, []float64{1, 2, 3, 4, 5, 6}},
		{"input row untouched", "X.0.forward.input.0", &two, []float64{1, 2, 3, 4, 5, 6}},
		{"keep 2 rows", "NPU.npu_grouped_matmul.0.forward.output.0", &two, []float64{1, 2, 3, 4, 0, 0}},
		{"negative keeps none", "X.output.0", &neg, []float64{0, 0, 0, 0, 0, 0}},
		{"beyond keeps all", "X.output.0", &big, []float64{1, 2, 3, 4, 5, 6}},
	}
	for _, tt := range tests {
		bench := &Tensor{Dtype: "float32", Shape: []int{3, 2}, Data: tt.want}
		m := Compare(npu, bench, Options{NPUName: tt.row, NPUValidLen: tt.n})
		if m.EucDist.String() != "0.0" {
			t.Errorf("%s: cleaned NPU differs from %v: %q", tt.name, tt.want, m.Cells())
		}
	}
	if npu.Data[5] != 6 {
		t.Error("Compare modified its input")
	}
	dir := t.TempDir()
	for _, tt := range []struct {
		dtype string
		vals  []float64
		want  int
		ok    bool
	}{
		{"torch.int64", []float64{2, 3, 0}, 5, true},
		{"torch.bool", []float64{1, 1, 0}, 2, true},
		{"torch.int32", []float64{-4, 1}, 0, false},
		{"torch.float32", []float64{2}, 0, false},
	} {
		p := filepath.Join(dir, tt.dtype+".pt")
		writeFile(t, p, ptBytes(t, tt.dtype, []int{len(tt.vals)}, tt.vals))
		f, err := Open(p)
		if err != nil {
			t.Fatal(err)
		}
		n, err := ValidLen(f)
		f.Close()
		if (err == nil) != tt.ok || n != tt.want {
			t.Errorf("ValidLen(%s %v) = %d, %v", tt.dtype, tt.vals, n, err)
		}
	}
}

func equalFloats(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestBLASChunksKeepResults checks that the split into BLAS threads only
// regroups the sums: each chunk gives the same numbers as summing it alone.
func TestBLASChunks(t *testing.T) {
	tests := []struct {
		n, threads int
		want       []int
	}{
		{100, 4, []int{100}},
		{10000, 8, []int{10000}},
		{10001, 2, []int{5001, 5000}},
		{30000, 4, []int{7500, 7500, 7500, 7500}},
		{30001, 3, []int{10001, 10000, 10000}},
	}
	for _, tt := range tests {
		got := blasChunks(tt.n, tt.threads)
		if !equalInts(got, tt.want) {
			t.Errorf("blasChunks(%d, %d) = %v, want %v", tt.n, tt.threads, got, tt.want)
		}
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestChunkingKeepsResults compares large tensor pairs in chunks of
// several sizes, with and without BLAS thread emulation, NaN/inf zeroing
// included: the cells never change.
func TestChunkingKeepsResults(t *testing.T) {
	n, b := pairData(1<<16+7, 1)
	n.Data[5], b.Data[5] = math.Inf(1), math.Inf(-1)
	n.Data[40000], b.Data[40000] = math.NaN(), math.NaN()
	for _, threads := range []int{1, 3} {
		var want [6]string
		for i, chunk := range []int{len(n.Data), 16, 48, 4096, chunkLen} {
			m, err := streamMetrics(&sliceStream{slices.Clone(n.Data)}, &sliceStream{slices.Clone(b.Data)}, len(n.Data), true, threads, chunk)
			if err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				want = m.Cells()
				continue
			}
			if m.Cells() != want {
				t.Errorf("threads %d chunk %d: %q, whole %q", threads, chunk, m.Cells(), want)
			}
		}
	}
}

// TestFusedDotsMatchDdot checks the one-pass sums against the plain
// OpenBLAS-order ddot of each pair, for lengths around the 16-block edge.
func TestFusedDotsMatchDdot(t *testing.T) {
	for _, n := range []int{1, 15, 16, 17, 31, 32, 33, 1000} {
		nt, bt := pairData(n, uint64(n))
		x, y := nt.Data, bt.Data
		d := make([]float64, n)
		for i := range d {
			d[i] = x[i] - y[i]
		}
		var s dotState
		s.add(x, y, n&^15, true)
		if s.sum[0] != ddot(x, y) || s.sum[1] != ddot(x, x) || s.sum[2] != ddot(y, y) || s.sum[3] != ddot(d, d) {
			t.Errorf("n=%d: fused %v, ddot %v %v %v %v", n, s.sum, ddot(x, y), ddot(x, x), ddot(y, y), ddot(d, d))
		}
	}
}
