package tensor

import (
	"archive/zip"
	"bytes"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/layermap/layermap/printparse/testkit"
)

// TestLoadRealFixtures loads files written by real torch and numpy and
// checks dtype, shape and values against testdata/real.golden.
func TestLoadRealFixtures(t *testing.T) {
	files, err := filepath.Glob("testdata/real/*.*")
	if err != nil {
		t.Fatal(err)
	}
	var got strings.Builder
	n := 0
	for _, f := range files {
		ext := filepath.Ext(f)
		if ext != ".pt" && ext != ".npy" {
			continue
		}
		n++
		tn, err := Load(f, 1<<20)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		fmt.Fprintf(&got, "%s\t%s\t%s\t%v\t%s\n", filepath.Base(f), tn.Dtype, tn.Source, tn.Shape, fmtVals(tn.Data))
	}
	if n < 15 {
		t.Fatalf("found only %d fixtures", n)
	}
	testkit.Golden(t, "testdata/real.golden", []byte(got.String()))
}

// TestRealFixtureValues pins a few values independently of the golden file:
// what torch.tensor([1.2, -3.4, 5.6, -7.8], dtype) holds.
func TestRealFixtureValues(t *testing.T) {
	tests := []struct {
		file  string
		dtype string
		want  []float64
	}{
		{"torch_float32.pt", "float32", []float64{float64(float32(1.2)), float64(float32(-3.4)), float64(float32(5.6)), float64(float32(-7.8))}},
		{"torch_float64.pt", "float64", []float64{1.2, -3.4, 5.6, -7.8}},
		{"torch_float16.pt", "float16", []float64{1.2001953125, -3.400390625, 5.6015625, -7.80078125}},
		{"torch_bfloat16.pt", "float32", []float64{1.203125, -3.40625, 5.59375, -7.8125}},
		{"torch_int64.pt", "int64", []float64{1, -2, 3, -4}},
		{"torch_int8.pt", "int8", []float64{1, -2, 3, -4}},
		{"torch_uint8.pt", "uint8", []float64{1, 10, 100, 255}},
		{"torch_bool.pt", "bool", []float64{1, 0, 1, 0}},
		{"numpy_data_float32_2x3_corder.npy", "float32", []float64{0, 1, 2, 3, 4, 5}},
		{"numpy_data_float32_2x3_forder.npy", "float32", []float64{0, 2, 4, 1, 3, 5}},
		{"numpy_data_float64_scalar_corder.npy", "float64", []float64{42}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			tn, err := Load(filepath.Join("testdata/real", tt.file), 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			if tn.Dtype != tt.dtype || !slices.Equal(tn.Data, tt.want) {
				t.Errorf("got %s %v, want %s %v", tn.Dtype, tn.Data, tt.dtype, tt.want)
			}
		})
	}
}

// TestWriterRoundTrip checks the test writers against the loaders for
// every dtype, shape and special value the golden dumps use.
func TestWriterRoundTrip(t *testing.T) {
	vals := []float64{1, -2.5, 0, math.Inf(1), math.Inf(-1), 3.75}
	tests := []struct {
		torch string
		shape []int
		vals  []float64
	}{
		{"torch.float32", []int{2, 3}, vals},
		{"torch.float64", []int{3, 2}, vals},
		{"torch.float16", []int{6}, vals},
		{"torch.bfloat16", []int{1, 6}, vals},
		{"torch.int64", []int{2, 2}, []float64{1, -2, 3, 1 << 40}},
		{"torch.int32", []int{3}, []float64{1, -2, 3}},
		{"torch.bool", []int{3}, []float64{1, 0, 1}},
		{"torch.float32", []int{}, []float64{3.5}},
		{"torch.float32", []int{0, 3}, nil},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.torch, tt.shape), func(t *testing.T) {
			pt, err := readPT(ptBytes(t, tt.torch, tt.shape, tt.vals))
			if err != nil {
				t.Fatal(err)
			}
			check := func(kind string, got *Tensor, dtype string) {
				if got.Dtype != dtype || !slices.Equal(got.Shape, tt.shape) || len(got.Data) != len(tt.vals) {
					t.Fatalf("%s: got %s %v %v", kind, got.Dtype, got.Shape, got.Data)
				}
				for i, v := range tt.vals {
					if got.Data[i] != v && !(math.IsNaN(v) && math.IsNaN(got.Data[i])) {
						t.Errorf("%s: element %d = %v, want %v", kind, i, got.Data[i], v)
					}
				}
			}
			check("pt", pt, numpyName(tt.torch))
			switch np := numpyName(tt.torch); np {
			case "float32", "float64", "int64", "bool":
				// The npy library cannot write a zero-length dimension.
				if tt.torch == "torch.bfloat16" || len(tt.vals) == 0 {
					return
				}
				got, err := readNPY(npyBytes(t, np, tt.shape, tt.vals))
				if err != nil {
					t.Fatal(err)
				}
				check("npy", got, np)
			}
		})
	}
}

// TestLoadErrors feeds broken files: each must fail with a message, never panic.
func TestLoadErrors(t *testing.T) {
	good := ptBytes(t, "torch.float32", []int{2, 2}, []float64{1, 2, 3, 4})
	goodNPY := npyBytes(t, "float32", []int{2, 2}, []float64{1, 2, 3, 4})
	rezip := func(edit func(name string, data []byte) []byte) []byte {
		zr, err := zip.NewReader(bytes.NewReader(good), int64(len(good)))
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		zw := zip.NewWriter(&out)
		for _, f := range zr.File {
			data, err := readRecord(f, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			data = edit(f.Name, data)
			if data == nil {
				continue
			}
			w, _ := zw.CreateHeader(&zip.FileHeader{Name: f.Name, Method: zip.Store})
			w.Write(data)
		}
		zw.Close()
		return out.Bytes()
	}
	tests := []struct {
		name, ext string
		data      []byte
		wantErr   string
	}{
		{"not a zip", ".pt", []byte("hello"), "torch.save"},
		{"empty pt", ".pt", nil, "torch.save"},
		{"no data.pkl", ".pt", rezip(func(n string, d []byte) []byte {
			if strings.HasSuffix(n, "data.pkl") {
				return nil
			}
			return d
		}), "data.pkl"},
		{"missing storage", ".pt", rezip(func(n string, d []byte) []byte {
			if strings.HasSuffix(n, "data/0") {
				return nil
			}
			return d
		}), "storage record"},
		{"short storage", ".pt", rezip(func(n string, d []byte) []byte {
			if strings.HasSuffix(n, "data/0") {
				return d[:6]
			}
			return d
		}), "holds 6 bytes"},
		{"foreign global", ".pt", rezip(func(n string, d []byte) []byte {
			if strings.HasSuffix(n, "data.pkl") {
				return bytes.Replace(d, []byte("torch._utils\n_rebuild_tensor_v2"), []byte("os\nsystem"), 1)
			}
			return d
		}), "global os.system"},
		{"truncated pickle", ".pt", rezip(func(n string, d []byte) []byte {
			if strings.HasSuffix(n, "data.pkl") {
				return d[:len(d)/2]
			}
			return d
		}), "unpickling"},
		{"bad magic", ".npy", []byte("\x93NUMPX\x01\x00\x10\x00{}"), "magic"},
		{"huge header", ".npy", append([]byte("\x93NUMPY\x01\x00\xff\xff"), goodNPY[10:]...), "header length"},
		{"truncated data", ".npy", goodNPY[:len(goodNPY)-3], "needs 16 data bytes"},
		{"object dtype", ".npy", bytes.Replace(goodNPY, []byte("'<f4'"), []byte("'|O4'"), 1), "expected a bool, integer or float"},
		{"version 9", ".npy", append([]byte("\x93NUMPY\x09\x00"), goodNPY[8:]...), "version"},
		{"wrong suffix", ".txt", goodNPY, "expected a .pt or .npy"},
	}
	dir := t.TempDir()
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(dir, fmt.Sprintf("f%d%s", i, tt.ext))
			writeFile(t, p, tt.data)
			_, err := Load(p, 1<<20)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Load: error %v, want one containing %q", err, tt.wantErr)
			}
			if !strings.Contains(err.Error(), p) && tt.ext != ".txt" {
				t.Errorf("error %q does not name the file", err)
			}
		})
	}
	if _, err := Load("testdata/real/legacy/torch_float32_legacy.pt", 1<<20); err == nil || !strings.Contains(err.Error(), "legacy") {
		t.Errorf("legacy torch file: error %v, want one naming the legacy format", err)
	}
	if _, err := Load(filepath.Join(dir, "absent.pt"), 1<<20); err == nil {
		t.Error("missing file loaded")
	}
}

func TestSqueeze(t *testing.T) {
	tests := []struct{ in, want []int }{
		{[]int{1}, []int{}},
		{[]int{1, 3}, []int{3}},
		{[]int{2, 1, 3, 1}, []int{2, 3}},
		{[]int{}, []int{}},
		{[]int{0, 1}, []int{0}},
	}
	for _, tt := range tests {
		got := (&Tensor{Shape: tt.in}).Squeeze().Shape
		if !slices.Equal(got, tt.want) {
			t.Errorf("Squeeze(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestFloatBits(t *testing.T) {
	tests := []struct {
		name string
		got  float64
		want float64
	}{
		{"half 1", halfToFloat(0x3c00), 1},
		{"half min subnormal", halfToFloat(0x0001), math.Ldexp(1, -24)},
		{"half max subnormal", halfToFloat(0x03ff), 1023 * math.Ldexp(1, -24)},
		{"half max", halfToFloat(0x7bff), 65504},
		{"half -2", halfToFloat(0xc000), -2},
		{"bf16 1", bfloat16ToFloat(0x3f80), 1},
		{"e4m3 448", float8e4m3fnToFloat(0x7e), 448},
		{"e4m3 min subnormal", float8e4m3fnToFloat(0x01), math.Ldexp(1, -9)},
		{"e5m2 57344", float8e5m2ToFloat(0x7b), 57344},
		{"round half ties even", roundToHalf(1 + 1.0/2048), 1},
		{"round half up", roundToHalf(1 + 3.0/2048), 1 + 2.0/1024},
		{"round half subnormal", roundToHalf(float32(math.Ldexp(3, -25))), math.Ldexp(2, -24)},
		{"round half overflow", roundToHalf(65520), math.Inf(1)},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, tt.got, tt.want)
		}
	}
	if !math.IsNaN(halfToFloat(0x7e00)) || !math.IsNaN(float8e4m3fnToFloat(0x7f)) {
		t.Error("NaN patterns not decoded as NaN")
	}
}

// TestCompareRealFixtures runs the whole file path (load, squeeze,
// compare) on pairs of files written by real torch and numpy; the cells
// are pinned in testdata/real_compare.golden (-update to rewrite, review
// the diff).
func TestCompareRealFixtures(t *testing.T) {
	pairs := [][2]string{
		{"torch_float32.pt", "torch_float32.pt"},
		{"torch_float16.pt", "torch_float32.pt"},
		{"torch_bfloat16.pt", "torch_float32.pt"},
		{"torch_float32.pt", "torch_float64.pt"},
		{"torch_int64.pt", "torch_int8.pt"},
		{"torch_bool.pt", "torch_uint8.pt"},
		{"numpy_data_float32_2x3_corder.npy", "numpy_data_float32_2x3_forder.npy"},
		{"numpy_data_int16_6x1_corder.npy", "numpy_data_float32_2x3_corder.npy"},
		{"numpy_data_float64_scalar_corder.npy", "numpy_data_int64_1x1_corder.npy"},
		{"numpy_nans_inf.npy", "numpy_nans_inf.npy"},
		{"numpy_data_float32_2x3_corder.npy", "torch_float32.pt"},
	}
	var got strings.Builder
	for _, p := range pairs {
		m := CompareFiles(filepath.Join("testdata/real", p[0]), filepath.Join("testdata/real", p[1]), Options{})
		if m.Status == StatusReadNone {
			t.Fatalf("%v: %v", p, m.Err)
		}
		fmt.Fprintf(&got, "%s vs %s\t%s\t%q\n", p[0], p[1], m.Status, m.Cells())
	}
	testkit.Golden(t, "testdata/real_compare.golden", []byte(got.String()))
}
