package tensor

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"flag"
	"math"
	"os"
	"reflect"
	"strconv"
	"testing"

	"codeberg.org/sbinet/npyio/npy"
	"codeberg.org/sbinet/npyio/npy/float16"
	ogorek "github.com/kisielk/og-rek"
	"github.com/layermap/layermap/printparse/sharedtest"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// corpusDir finds <module root>/../shared/corpus.
func corpusDir(t testing.TB) string {
	t.Helper()
	return sharedtest.Corpus(t)
}

// spec is a tensor as the golden tensors.json describes it.
type spec struct {
	Dtype  string `json:"dtype"` // torch dtype
	Shape  []int  `json:"shape"`
	Values []any  `json:"values"` // numbers, booleans, "NaN", "Infinity", "-Infinity"
}

func (s spec) floats(t testing.TB) []float64 {
	out := make([]float64, len(s.Values))
	for i, v := range s.Values {
		switch x := v.(type) {
		case float64:
			out[i] = x
		case bool:
			if x {
				out[i] = 1
			}
		case string:
			switch x {
			case "NaN":
				out[i] = math.NaN()
			case "Infinity":
				out[i] = math.Inf(1)
			case "-Infinity":
				out[i] = math.Inf(-1)
			default:
				t.Fatalf("unexpected value %q", x)
			}
		}
	}
	return out
}

func readSpecs(t testing.TB, path string) map[string]spec {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]spec
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return m
}

// torchStorage names the legacy storage class torch.save pickles for a dtype.
var torchStorage = map[string]string{
	"torch.float32": "FloatStorage", "torch.float64": "DoubleStorage", "torch.float16": "HalfStorage",
	"torch.bfloat16": "BFloat16Storage", "torch.int8": "CharStorage", "torch.uint8": "ByteStorage",
	"torch.int16": "ShortStorage", "torch.int32": "IntStorage", "torch.int64": "LongStorage", "torch.bool": "BoolStorage",
}

// halfBits encodes a value exactly representable in binary16.
func halfBits(t testing.TB, v float64) uint16 {
	switch {
	case math.IsNaN(v):
		return 0x7e00
	case math.IsInf(v, 1):
		return 0x7c00
	case math.IsInf(v, -1):
		return 0xfc00
	}
	for h := 0; h < 1<<16; h++ {
		if halfToFloat(uint16(h)) == v && (v != 0 || (h>>15 == 1) == math.Signbit(v)) {
			return uint16(h)
		}
	}
	t.Fatalf("%v is not a float16 value", v)
	return 0
}

// storageBytes encodes values in a torch storage's little-endian layout.
func storageBytes(t testing.TB, dtype string, vals []float64) []byte {
	var buf bytes.Buffer
	for _, v := range vals {
		var err error
		switch dtype {
		case "torch.float32":
			if float64(float32(v)) != v && !math.IsNaN(v) {
				t.Fatalf("%v is not a float32 value", v)
			}
			err = binary.Write(&buf, binary.LittleEndian, float32(v))
		case "torch.float64":
			err = binary.Write(&buf, binary.LittleEndian, v)
		case "torch.float16":
			err = binary.Write(&buf, binary.LittleEndian, halfBits(t, v))
		case "torch.bfloat16":
			b := math.Float32bits(float32(v))
			if b&0xffff != 0 {
				t.Fatalf("%v is not a bfloat16 value", v)
			}
			err = binary.Write(&buf, binary.LittleEndian, uint16(b>>16))
		case "torch.int8", "torch.uint8", "torch.bool":
			buf.WriteByte(byte(int64(v)))
		case "torch.int16":
			err = binary.Write(&buf, binary.LittleEndian, int16(v))
		case "torch.int32":
			err = binary.Write(&buf, binary.LittleEndian, int32(v))
		case "torch.int64":
			err = binary.Write(&buf, binary.LittleEndian, int64(v))
		default:
			t.Fatalf("no storage for %s", dtype)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

// storageRef marks the storage object in the pickled tensor.
type storageRef struct {
	class string
	numel int
}

// ptBytes builds a torch.save zip archive the way torch >= 1.6 lays it
// out (archive/data.pkl, archive/data/0, archive/version, stored
// uncompressed), with og-rek pickling the same objects torch pickles:
// _rebuild_tensor_v2(persistent storage, offset, size, stride,
// requires_grad, OrderedDict()).
func ptBytes(t testing.TB, dtype string, shape []int, vals []float64) []byte {
	t.Helper()
	class, ok := torchStorage[dtype]
	if !ok {
		t.Fatalf("no storage class for %s", dtype)
	}
	stride := make([]int, len(shape))
	s := 1
	for k := len(shape) - 1; k >= 0; k-- {
		stride[k] = s
		s *= shape[k]
	}
	tuple := func(xs []int) ogorek.Tuple {
		out := ogorek.Tuple{}
		for _, x := range xs {
			out = append(out, int64(x))
		}
		return out
	}
	obj := &ogorek.Call{
		Callable: ogorek.Class{Module: "torch._utils", Name: "_rebuild_tensor_v2"},
		Args: ogorek.Tuple{
			&storageRef{class: class, numel: len(vals)},
			int64(0), tuple(shape), tuple(stride), false,
			&ogorek.Call{Callable: ogorek.Class{Module: "collections", Name: "OrderedDict"}, Args: ogorek.Tuple{}},
		},
	}
	var pkl bytes.Buffer
	enc := ogorek.NewEncoderWithConfig(&pkl, &ogorek.EncoderConfig{
		Protocol: 2,
		PersistentRef: func(o any) *ogorek.Ref {
			r, ok := o.(*storageRef)
			if !ok {
				return nil
			}
			return &ogorek.Ref{Pid: ogorek.Tuple{"storage", ogorek.Class{Module: "torch", Name: r.class}, "0", "cpu", int64(r.numel)}}
		},
	})
	if err := enc.Encode(obj); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	zw := zip.NewWriter(&out)
	for _, rec := range []struct {
		name string
		data []byte
	}{
		{"archive/data.pkl", pkl.Bytes()},
		{"archive/byteorder", []byte("little")},
		{"archive/data/0", storageBytes(t, dtype, vals)},
		{"archive/version", []byte("3\n")},
	} {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: rec.name, Method: zip.Store})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(rec.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// npyBytes writes a .npy file with the npy library; the shape comes from a
// nested Go array type built for it.
func npyBytes(t testing.TB, dtype string, shape []int, vals []float64) []byte {
	t.Helper()
	var elem reflect.Type
	conv := func(v float64) reflect.Value { return reflect.ValueOf(v) }
	switch dtype {
	case "float32":
		elem, conv = reflect.TypeFor[float32](), func(v float64) reflect.Value { return reflect.ValueOf(float32(v)) }
	case "float64":
		elem = reflect.TypeFor[float64]()
	case "float16":
		elem = reflect.TypeFor[float16.Num]()
		conv = func(v float64) reflect.Value { return reflect.ValueOf(float16.Float16Frombits(halfBits(t, v))) }
	case "int64":
		elem, conv = reflect.TypeFor[int64](), func(v float64) reflect.Value { return reflect.ValueOf(int64(v)) }
	case "bool":
		elem, conv = reflect.TypeFor[bool](), func(v float64) reflect.Value { return reflect.ValueOf(v != 0) }
	default:
		t.Fatalf("npyBytes: no writer for %s", dtype)
	}
	typ := elem
	for k := len(shape) - 1; k >= 0; k-- {
		typ = reflect.ArrayOf(shape[k], typ)
	}
	arr := reflect.New(typ).Elem()
	i := 0
	var fill func(v reflect.Value)
	fill = func(v reflect.Value) {
		if v.Kind() != reflect.Array {
			v.Set(conv(vals[i]))
			i++
			return
		}
		for j := 0; j < v.Len(); j++ {
			fill(v.Index(j))
		}
	}
	fill(arr)
	var buf bytes.Buffer
	if err := npy.Write(&buf, arr.Interface()); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// numpyName maps a torch dtype to the numpy dtype msprobe computes with.
func numpyName(torch string) string {
	switch torch {
	case "torch.bfloat16":
		return "float32"
	case "torch.bool":
		return "bool"
	}
	return torch[len("torch."):]
}

func fmtVals(v []float64) string {
	b := []byte{'['}
	for i, x := range v {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = strconv.AppendFloat(b, x, 'g', -1, 64)
	}
	return string(append(b, ']'))
}

func writeFile(t testing.TB, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
