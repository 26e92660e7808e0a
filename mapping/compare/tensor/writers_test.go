package tensor

import (
	"bytes"
	"math"
	"os"
	"reflect"
	"strconv"
	"testing"

	"codeberg.org/sbinet/npyio/npy"
	"codeberg.org/sbinet/npyio/npy/float16"
	"github.com/layermap/layermap/mapping/compare/tensor/tensortest"
)

// spec is a tensor as the golden tensors.json describes it.
type spec = tensortest.Spec

func floats(t testing.TB, s spec) []float64 {
	t.Helper()
	out, err := s.Floats()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func readSpecs(t testing.TB, path string) map[string]spec {
	t.Helper()
	m, err := tensortest.ReadSpecs(path)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// halfBits encodes a value exactly representable in binary16, checked
// against the loader's own decoder.
func halfBits(t testing.TB, v float64) uint16 {
	t.Helper()
	h, err := tensortest.HalfBits(v)
	if err != nil {
		t.Fatal(err)
	}
	if back := halfToFloat(h); back != v && !(math.IsNaN(back) && math.IsNaN(v)) {
		t.Fatalf("halfBits(%v) = %#04x decodes to %v", v, h, back)
	}
	return h
}

// storageBytes encodes values in a torch storage's little-endian layout.
func storageBytes(t testing.TB, dtype string, vals []float64) []byte {
	t.Helper()
	b, err := tensortest.StorageBytes(dtype, vals)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// ptBytes builds a torch.save zip archive (tensortest.PTBytes).
func ptBytes(t testing.TB, dtype string, shape []int, vals []float64) []byte {
	t.Helper()
	b, err := tensortest.PTBytes(dtype, shape, vals)
	if err != nil {
		t.Fatal(err)
	}
	return b
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

// readPT decodes a torch.save file held in memory, whole.
func readPT(b []byte) (*Tensor, error) {
	f, err := parsePT(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return nil, err
	}
	f.Path = "mem.pt"
	return f.ReadAll(1 << 24)
}

// readNPY decodes a .npy file held in memory, whole.
func readNPY(b []byte) (*Tensor, error) {
	f, err := parseNPY(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return nil, err
	}
	f.Path = "mem.npy"
	return f.ReadAll(1 << 24)
}
