package compare

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	ogorek "github.com/kisielk/og-rek"
)

// fixTensor is one tensor of a golden tensors.json.
type fixTensor struct {
	Dtype  string `json:"dtype"`
	Shape  []int  `json:"shape"`
	Values []any  `json:"values"`
}

var ptStorage = map[string]string{"torch.float32": "FloatStorage", "torch.float16": "HalfStorage",
	"torch.bfloat16": "BFloat16Storage", "torch.int64": "LongStorage", "torch.bool": "BoolStorage",
	"torch.float64": "DoubleStorage", "torch.int32": "IntStorage"}

// f16 encodes a float16-exact value.
func f16(v float64) uint16 {
	switch {
	case math.IsNaN(v):
		return 0x7e00
	case math.IsInf(v, 1):
		return 0x7c00
	case math.IsInf(v, -1):
		return 0xfc00
	}
	var sign uint16
	if math.Signbit(v) {
		sign, v = 0x8000, -v
	}
	if v == 0 {
		return sign
	}
	frac, exp := math.Frexp(v) // v = frac * 2^exp, frac in [0.5,1)
	e := exp - 1 + 15
	if e <= 0 { // subnormal
		return sign | uint16(math.Round(v/math.Ldexp(1, -24)))
	}
	m := uint16(math.Round((frac*2 - 1) * 1024))
	return sign | uint16(e)<<10 | m
}

type ptRef struct {
	class string
	n     int
}

// writePT writes a tensor as torch.save (zip layout of torch >= 1.6) does.
func writePT(t *testing.T, path string, ft fixTensor) {
	t.Helper()
	vals := make([]float64, len(ft.Values))
	for i, v := range ft.Values {
		switch x := v.(type) {
		case float64:
			vals[i] = x
		case bool:
			if x {
				vals[i] = 1
			}
		case string:
			switch x {
			case "NaN":
				vals[i] = math.NaN()
			case "Infinity":
				vals[i] = math.Inf(1)
			case "-Infinity":
				vals[i] = math.Inf(-1)
			}
		}
	}
	var data bytes.Buffer
	for _, v := range vals {
		switch ft.Dtype {
		case "torch.float32":
			binary.Write(&data, binary.LittleEndian, float32(v))
		case "torch.float64":
			binary.Write(&data, binary.LittleEndian, v)
		case "torch.float16":
			binary.Write(&data, binary.LittleEndian, f16(v))
		case "torch.bfloat16":
			binary.Write(&data, binary.LittleEndian, uint16(math.Float32bits(float32(v))>>16))
		case "torch.int64":
			binary.Write(&data, binary.LittleEndian, int64(v))
		case "torch.int32":
			binary.Write(&data, binary.LittleEndian, int32(v))
		case "torch.bool":
			data.WriteByte(byte(int64(v)))
		default:
			t.Fatalf("dtype %s", ft.Dtype)
		}
	}
	stride := make(ogorek.Tuple, len(ft.Shape))
	shape := make(ogorek.Tuple, len(ft.Shape))
	s := int64(1)
	for k := len(ft.Shape) - 1; k >= 0; k-- {
		stride[k] = s
		shape[k] = int64(ft.Shape[k])
		s *= int64(ft.Shape[k])
	}
	obj := &ogorek.Call{
		Callable: ogorek.Class{Module: "torch._utils", Name: "_rebuild_tensor_v2"},
		Args: ogorek.Tuple{&ptRef{ptStorage[ft.Dtype], len(vals)}, int64(0), shape, stride, false,
			&ogorek.Call{Callable: ogorek.Class{Module: "collections", Name: "OrderedDict"}, Args: ogorek.Tuple{}}},
	}
	var pkl bytes.Buffer
	enc := ogorek.NewEncoderWithConfig(&pkl, &ogorek.EncoderConfig{Protocol: 2,
		PersistentRef: func(o any) *ogorek.Ref {
			r, ok := o.(*ptRef)
			if !ok {
				return nil
			}
			return &ogorek.Ref{Pid: ogorek.Tuple{"storage", ogorek.Class{Module: "torch", Name: r.class}, "0", "cpu", int64(r.n)}}
		}})
	if err := enc.Encode(obj); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	zw := zip.NewWriter(&out)
	for _, f := range []struct {
		name string
		b    []byte
	}{{"archive/data.pkl", pkl.Bytes()}, {"archive/byteorder", []byte("little")},
		{"archive/data/0", data.Bytes()}, {"archive/version", []byte("3\n")}} {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: f.name, Method: zip.Store})
		if err != nil {
			t.Fatal(err)
		}
		w.Write(f.b)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// tensorFixture rebuilds a golden tensor-mode dump folder (dump.json plus
// dump_tensor_data from tensors.json) under dir.
func tensorFixture(t *testing.T, src, dir string) {
	t.Helper()
	copyFile(t, filepath.Join(src, "dump.json"), dir)
	b, err := os.ReadFile(filepath.Join(src, "tensors.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]fixTensor
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	td := filepath.Join(dir, "dump_tensor_data")
	if err := os.MkdirAll(td, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, ft := range m {
		writePT(t, filepath.Join(td, name), ft)
	}
}
