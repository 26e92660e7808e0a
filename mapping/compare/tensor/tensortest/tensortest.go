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
	"io"
	"math"
	"os"
	"strconv"
	"strings"

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

// PT describes a torch.save archive at a lower level than PTBytes: any
// storage bytes, view and record layout, for the reader's tests of
// malformed, hostile and large files.
type PT struct {
	// Class is the storage class, e.g. "FloatStorage".
	Class string
	// Numel is the storage's element count as the pickle declares it.
	Numel int
	// Data is the storage record (it may disagree with Numel).
	Data []byte
	// Offset, Size and Stride are the view; Stride nil means contiguous.
	Offset       int
	Size, Stride []int
	// Deflate compresses the storage record (torch stores it).
	Deflate bool
	// Parameter wraps the tensor in torch._utils._rebuild_parameter.
	Parameter bool
	// Pickle, when set, replaces data.pkl.
	Pickle []byte
}

// ContiguousStride is the row-major stride of shape.
func ContiguousStride(shape []int) []int {
	stride := make([]int, len(shape))
	s := 1
	for k := len(shape) - 1; k >= 0; k-- {
		stride[k] = s
		s *= shape[k]
	}
	return stride
}

// EncodePickle is data.pkl as torch pickles p's tensor (protocol 2,
// og-rek encoding the objects torch pickles).
func (p PT) EncodePickle() ([]byte, error) {
	stride := p.Stride
	if stride == nil {
		stride = ContiguousStride(p.Size)
	}
	tuple := func(xs []int) ogorek.Tuple {
		out := ogorek.Tuple{}
		for _, x := range xs {
			out = append(out, int64(x))
		}
		return out
	}
	hooks := &ogorek.Call{Callable: ogorek.Class{Module: "collections", Name: "OrderedDict"}, Args: ogorek.Tuple{}}
	var obj any = &ogorek.Call{
		Callable: ogorek.Class{Module: "torch._utils", Name: "_rebuild_tensor_v2"},
		Args: ogorek.Tuple{
			&storageRef{class: p.Class, numel: p.Numel},
			int64(p.Offset), tuple(p.Size), tuple(stride), false, hooks,
		},
	}
	if p.Parameter {
		obj = &ogorek.Call{Callable: ogorek.Class{Module: "torch._utils", Name: "_rebuild_parameter"},
			Args: ogorek.Tuple{obj, true, hooks}}
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
	return pkl.Bytes(), nil
}

// Write writes the archive the way torch >= 1.6 lays it out
// (archive/data.pkl, archive/byteorder, archive/data/0, archive/version).
func (p PT) Write(w io.Writer) error {
	pkl := p.Pickle
	if pkl == nil {
		var err error
		if pkl, err = p.EncodePickle(); err != nil {
			return err
		}
	}
	zw := zip.NewWriter(w)
	for _, rec := range []struct {
		name    string
		data    []byte
		deflate bool
	}{
		{"archive/data.pkl", pkl, false},
		{"archive/byteorder", []byte("little"), false},
		{"archive/data/0", p.Data, p.Deflate},
		{"archive/version", []byte("3\n"), false},
	} {
		method := zip.Store
		if rec.deflate {
			method = zip.Deflate
		}
		w, err := zw.CreateHeader(&zip.FileHeader{Name: rec.name, Method: method})
		if err != nil {
			return err
		}
		if _, err := w.Write(rec.data); err != nil {
			return err
		}
	}
	return zw.Close()
}

// Bytes is the archive Write writes.
func (p PT) Bytes() ([]byte, error) {
	var out bytes.Buffer
	err := p.Write(&out)
	return out.Bytes(), err
}

// PTBytes builds a torch.save zip archive of one contiguous tensor the
// way torch >= 1.6 lays it out (archive/data.pkl, archive/data/0,
// archive/version, stored uncompressed), with og-rek pickling the same
// objects torch pickles: _rebuild_tensor_v2(persistent storage, offset,
// size, stride, requires_grad, OrderedDict()).
func PTBytes(dtype string, shape []int, vals []float64) ([]byte, error) {
	class, ok := storageClass[dtype]
	if !ok {
		return nil, fmt.Errorf("no storage class for %s", dtype)
	}
	data, err := StorageBytes(dtype, vals)
	if err != nil {
		return nil, err
	}
	return PT{Class: class, Numel: len(vals), Data: data, Size: shape}.Bytes()
}

// NPYBytes lays out a version 1.0 .npy file as numpy.save does (header
// padded to 64 bytes): descr is the numpy type string ("<f4"), data the
// raw elements.
func NPYBytes(descr string, fortran bool, shape []int, data []byte) []byte {
	dims := make([]string, len(shape))
	for i, d := range shape {
		dims[i] = strconv.Itoa(d)
	}
	tuple := "(" + strings.Join(dims, ", ") + ")"
	if len(shape) == 1 {
		tuple = "(" + dims[0] + ",)"
	}
	order := "False"
	if fortran {
		order = "True"
	}
	h := "{'descr': '" + descr + "', 'fortran_order': " + order + ", 'shape': " + tuple + ", }"
	h += strings.Repeat(" ", (64-(10+len(h)+1)%64)%64) + "\n"
	out := []byte("\x93NUMPY\x01\x00")
	out = append(out, byte(len(h)), byte(len(h)>>8))
	out = append(out, h...)
	return append(out, data...)
}
