// Package tensortest builds tensor files for tests: torch.save archives
// (.pt, the zip layout of torch >= 1.6) and the tensor descriptions of the
// golden tensors.json files, so that the tensor loader's tests and the
// comparator's parity tests write their fixtures with one implementation.
package tensortest

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"

	ogorek "github.com/kisielk/og-rek"
)

// Spec is one tensor as a golden tensors.json describes it.
type Spec struct {
	Dtype  string `json:"dtype"` // torch dtype, e.g. "torch.float32"
	Shape  []int  `json:"shape"`
	Values []any  `json:"values"` // numbers, booleans, "NaN", "Infinity", "-Infinity"
}

// Floats returns the values as float64 (booleans as 0/1).
func (s Spec) Floats() ([]float64, error) {
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
				return nil, fmt.Errorf("value %d: unexpected %q", i, x)
			}
		default:
			return nil, fmt.Errorf("value %d: unexpected %T", i, v)
		}
	}
	return out, nil
}

// ReadSpecs reads a tensors.json: data_name -> Spec.
func ReadSpecs(path string) (map[string]Spec, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var m map[string]Spec
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// storageClass names the legacy storage class torch.save pickles per dtype.
var storageClass = map[string]string{
	"torch.float32": "FloatStorage", "torch.float64": "DoubleStorage", "torch.float16": "HalfStorage",
	"torch.bfloat16": "BFloat16Storage", "torch.int8": "CharStorage", "torch.uint8": "ByteStorage",
	"torch.int16": "ShortStorage", "torch.int32": "IntStorage", "torch.int64": "LongStorage", "torch.bool": "BoolStorage",
}

// HalfBits encodes v in IEEE binary16; v must be exactly representable.
func HalfBits(v float64) (uint16, error) {
	switch {
	case math.IsNaN(v):
		return 0x7e00, nil
	case math.IsInf(v, 1):
		return 0x7c00, nil
	case math.IsInf(v, -1):
		return 0xfc00, nil
	}
	var sign uint16
	a := v
	if math.Signbit(v) {
		sign, a = 0x8000, -v
	}
	var h uint16
	var back float64
	if frac, exp := math.Frexp(a); a == 0 {
		h = sign
	} else if e := exp - 1 + 15; e <= 0 { // subnormal: a = m * 2^-24
		m := math.Round(math.Ldexp(a, 24))
		h, back = sign|uint16(m), math.Ldexp(m, -24)
	} else {
		m := math.Round((frac*2 - 1) * 1024)
		h, back = sign|uint16(e)<<10|uint16(m), math.Ldexp(1024+m, e-25)
		if e >= 0x1f {
			return 0, fmt.Errorf("%v is out of the float16 range", v)
		}
	}
	if back != a {
		return 0, fmt.Errorf("%v is not a float16 value", v)
	}
	return h, nil
}

// StorageBytes encodes values in a torch storage's little-endian layout;
// a value the dtype cannot hold exactly is an error.
func StorageBytes(dtype string, vals []float64) ([]byte, error) {
	var buf bytes.Buffer
	for _, v := range vals {
		var err error
		switch dtype {
		case "torch.float32":
			if float64(float32(v)) != v && !math.IsNaN(v) {
				return nil, fmt.Errorf("%v is not a float32 value", v)
			}
			err = binary.Write(&buf, binary.LittleEndian, float32(v))
		case "torch.float64":
			err = binary.Write(&buf, binary.LittleEndian, v)
		case "torch.float16":
			var h uint16
			if h, err = HalfBits(v); err == nil {
				err = binary.Write(&buf, binary.LittleEndian, h)
			}
		case "torch.bfloat16":
			b := math.Float32bits(float32(v))
			if b&0xffff != 0 {
				return nil, fmt.Errorf("%v is not a bfloat16 value", v)
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
			return nil, fmt.Errorf("no storage for %s", dtype)
		}
		if err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), nil
}

// storageRef marks the storage object in the pickled tensor.
type storageRef struct {
	class string
	numel int
}

// PTBytes builds a torch.save zip archive the way torch >= 1.6 lays it out
// (archive/data.pkl, archive/data/0, archive/version, stored uncompressed),
// with og-rek pickling the same objects torch pickles:
// _rebuild_tensor_v2(persistent storage, offset, size, stride,
// requires_grad, OrderedDict()).
func PTBytes(dtype string, shape []int, vals []float64) ([]byte, error) {
	class, ok := storageClass[dtype]
	if !ok {
		return nil, fmt.Errorf("no storage class for %s", dtype)
	}
	data, err := StorageBytes(dtype, vals)
	if err != nil {
		return nil, err
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
		return nil, err
	}
	var out bytes.Buffer
	zw := zip.NewWriter(&out)
	for _, rec := range []struct {
		name string
		data []byte
	}{
		{"archive/data.pkl", pkl.Bytes()},
		{"archive/byteorder", []byte("little")},
		{"archive/data/0", data},
		{"archive/version", []byte("3\n")},
	} {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: rec.name, Method: zip.Store})
		if err != nil {
			return nil, err
		}
		if _, err := w.Write(rec.data); err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}
