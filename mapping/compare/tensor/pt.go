package tensor

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/layermap/layermap/printparse/source"
	"github.com/nlpodyssey/gopickle/pickle"
	"github.com/nlpodyssey/gopickle/types"
)

// maxPickle bounds data.pkl; torch writes a few hundred bytes per tensor.
const maxPickle = 16 << 20

// LoadPT reads a torch.save file holding one tensor (torch.Tensor or
// nn.Parameter), as msprobe's torch.load + detach + numpy() does: bfloat16
// and float8 data become float32, every other dtype keeps its name. Only
// the globals a tensor needs are accepted (like torch.load with
// weights_only=True); anything else is an error.
func LoadPT(path string) (*Tensor, error) {
	f, err := source.Open(path, 0) // regular files only: a FIFO would hang the read
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	zr, err := zip.NewReader(f, st.Size())
	if err != nil {
		var head [14]byte
		if n, _ := f.ReadAt(head[:], 0); n == len(head) && bytes.Equal(head[:], legacyMagic) {
			return nil, fmt.Errorf("%s: legacy (pre-1.6, non-zip) torch.save format is not supported; expected a zip archive", path)
		}
		return nil, fmt.Errorf("%s: expected a torch.save zip archive: %w", path, err)
	}
	t, err := readPTZip(zr, st.Size())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// ReadPT decodes a torch.save zip file held in memory.
func ReadPT(b []byte) (*Tensor, error) {
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return nil, fmt.Errorf("expected a torch.save zip archive: %w", err)
	}
	return readPTZip(zr, int64(len(b)))
}

// ptStorage is one storage record of the archive, decoded lazily.
type ptStorage struct {
	kind  storageKind
	numel int
	raw   []byte
	big   bool // byteorder record says "big"
}

// storageKind describes a torch legacy storage class.
type storageKind struct {
	class string // torch class name, e.g. "FloatStorage"
	torch string // torch dtype, e.g. "torch.float32"
	dtype string // numpy dtype msprobe computes with
	size  int    // element size in bytes
}

var storageKinds = map[string]storageKind{}

func init() {
	for _, k := range []storageKind{
		{"FloatStorage", "torch.float32", "float32", 4},
		{"DoubleStorage", "torch.float64", "float64", 8},
		{"HalfStorage", "torch.float16", "float16", 2},
		{"BFloat16Storage", "torch.bfloat16", "float32", 2},
		{"Float8_e4m3fnStorage", "torch.float8_e4m3fn", "float32", 1},
		{"Float8_e5m2Storage", "torch.float8_e5m2", "float32", 1},
		{"CharStorage", "torch.int8", "int8", 1},
		{"ByteStorage", "torch.uint8", "uint8", 1},
		{"ShortStorage", "torch.int16", "int16", 2},
		{"IntStorage", "torch.int32", "int32", 4},
		{"LongStorage", "torch.int64", "int64", 8},
		{"UInt16Storage", "torch.uint16", "uint16", 2},
		{"UInt32Storage", "torch.uint32", "uint32", 4},
		{"UInt64Storage", "torch.uint64", "uint64", 8},
		{"BoolStorage", "torch.bool", "bool", 1},
	} {
		storageKinds[k.class] = k
	}
}

// element decodes element i of the storage.
func (s *ptStorage) element(i int) float64 {
	b := s.raw[i*s.kind.size:]
	var bo binary.ByteOrder = binary.LittleEndian
	if s.big {
		bo = binary.BigEndian
	}
	switch s.kind.class {
	case "FloatStorage":
		return float64(math.Float32frombits(bo.Uint32(b)))
	case "DoubleStorage":
		return math.Float64frombits(bo.Uint64(b))
	case "HalfStorage":
		return halfToFloat(bo.Uint16(b))
	case "BFloat16Storage":
		return bfloat16ToFloat(bo.Uint16(b))
	case "Float8_e4m3fnStorage":
		return float8e4m3fnToFloat(b[0])
	case "Float8_e5m2Storage":
		return float8e5m2ToFloat(b[0])
	case "CharStorage":
		return float64(int8(b[0]))
	case "ByteStorage":
		return float64(b[0])
	case "ShortStorage":
		return float64(int16(bo.Uint16(b)))
	case "IntStorage":
		return float64(int32(bo.Uint32(b)))
	case "LongStorage":
		return float64(int64(bo.Uint64(b)))
	case "UInt16Storage":
		return float64(bo.Uint16(b))
	case "UInt32Storage":
		return float64(bo.Uint32(b))
	case "UInt64Storage":
		return float64(bo.Uint64(b))
	case "BoolStorage":
		if b[0] != 0 {
			return 1
		}
		return 0
	}
	return math.NaN()
}

// decode fills dst with the elements from index off on, with one loop per
// element type (the hot path of loading a contiguous tensor).
func (s *ptStorage) decode(dst []float64, off int) {
	raw := s.raw[off*s.kind.size:]
	if s.big {
		for i := range dst {
			dst[i] = s.element(off + i)
		}
		return
	}
	le := binary.LittleEndian
	switch s.kind.class {
	case "FloatStorage":
		for i := range dst {
			dst[i] = float64(math.Float32frombits(le.Uint32(raw[4*i:])))
		}
	case "DoubleStorage":
		for i := range dst {
			dst[i] = math.Float64frombits(le.Uint64(raw[8*i:]))
		}
	case "HalfStorage":
		for i := range dst {
			dst[i] = halfToFloat(le.Uint16(raw[2*i:]))
		}
	case "BFloat16Storage":
		for i := range dst {
			dst[i] = float64(math.Float32frombits(uint32(le.Uint16(raw[2*i:])) << 16))
		}
	default:
		for i := range dst {
			dst[i] = s.element(off + i)
		}
	}
}

// storageClass stands for a torch.XxxStorage global in the pickle.
type storageClass struct{ kind storageKind }

// ptTensor is what _rebuild_tensor_v2 yields while unpickling.
type ptTensor struct{ t *Tensor }

// rebuildTensor implements torch._utils._rebuild_tensor_v2(storage,
// storage_offset, size, stride, requires_grad, backward_hooks[, metadata]).
type rebuildTensor struct{}

func (rebuildTensor) Call(args ...any) (any, error) {
	if len(args) < 4 {
		return nil, fmt.Errorf("_rebuild_tensor_v2: expected at least 4 arguments, found %d", len(args))
	}
	st, ok := args[0].(*ptStorage)
	if !ok {
		return nil, fmt.Errorf("_rebuild_tensor_v2: expected a storage, found %T", args[0])
	}
	offset, ok := args[1].(int)
	if !ok || offset < 0 {
		return nil, fmt.Errorf("_rebuild_tensor_v2: expected a storage offset, found %v", args[1])
	}
	size, err := intTuple(args[2])
	if err != nil {
		return nil, fmt.Errorf("_rebuild_tensor_v2 size: %w", err)
	}
	stride, err := intTuple(args[3])
	if err != nil {
		return nil, fmt.Errorf("_rebuild_tensor_v2 stride: %w", err)
	}
	t, err := gather(st, offset, size, stride)
	if err != nil {
		return nil, err
	}
	return &ptTensor{t}, nil
}

// rebuildParameter implements torch._utils._rebuild_parameter(data,
// requires_grad, backward_hooks): the data tensor is what msprobe compares.
type rebuildParameter struct{}

func (rebuildParameter) Call(args ...any) (any, error) {
	if len(args) < 1 {
		return nil, errors.New("_rebuild_parameter: expected a tensor argument")
	}
	if t, ok := args[0].(*ptTensor); ok {
		return t, nil
	}
	return nil, fmt.Errorf("_rebuild_parameter: expected a tensor, found %T", args[0])
}

func intTuple(v any) ([]int, error) {
	tu, ok := v.(*types.Tuple)
	if !ok {
		return nil, fmt.Errorf("expected a tuple of ints, found %T", v)
	}
	out := make([]int, tu.Len())
	for i := range out {
		n, ok := tu.Get(i).(int)
		if !ok {
			return nil, fmt.Errorf("expected a tuple of ints, found %v", tu.Get(i))
		}
		out[i] = n
	}
	return out, nil
}

// gather reads the strided view (offset, size, stride) of st in row-major
// order, checking every index against the storage.
func gather(st *ptStorage, offset int, size, stride []int) (*Tensor, error) {
	if len(size) != len(stride) {
		return nil, fmt.Errorf("size %v and stride %v differ in rank", size, stride)
	}
	n := 1
	for _, d := range size {
		if d < 0 {
			return nil, fmt.Errorf("negative size %v", size)
		}
		if d > 0 && n > (1<<40)/d {
			return nil, fmt.Errorf("size %v is too large", size)
		}
		n *= d
	}
	t := &Tensor{Dtype: st.kind.dtype, Source: st.kind.torch, Shape: append([]int{}, size...)}
	if n == 0 {
		t.Data = []float64{}
		return t, nil
	}
	maxOff := offset
	for k, d := range size {
		if stride[k] < 0 {
			return nil, fmt.Errorf("negative stride %v", stride)
		}
		if stride[k] > 0 && (d-1) > (st.numel+1)/stride[k] {
			return nil, fmt.Errorf("size %v stride %v reach past the storage of %d elements", size, stride, st.numel)
		}
		maxOff += (d - 1) * stride[k]
	}
	if maxOff >= st.numel {
		return nil, fmt.Errorf("size %v stride %v offset %d reach past the storage of %d elements", size, stride, offset, st.numel)
	}
	if n > st.numel && n > 1<<28 { // only broadcast (stride-0) views exceed the storage
		return nil, fmt.Errorf("view of %d elements over a storage of %d", n, st.numel)
	}
	t.Data = make([]float64, n)
	contiguous := true
	want := 1
	for k := len(size) - 1; k >= 0; k-- {
		if size[k] != 1 && stride[k] != want {
			contiguous = false
			break
		}
		want *= size[k]
	}
	if contiguous {
		st.decode(t.Data, offset)
		return t, nil
	}
	idx := make([]int, len(size))
	for i := range t.Data {
		off := offset
		for k, j := range idx {
			off += j * stride[k]
		}
		t.Data[i] = st.element(off)
		for k := len(idx) - 1; k >= 0; k-- {
			idx[k]++
			if idx[k] < size[k] {
				break
			}
			idx[k] = 0
		}
	}
	return t, nil
}

// readPTZip decodes an opened archive of size bytes.
func readPTZip(zr *zip.Reader, size int64) (t *Tensor, err error) {
	defer func() {
		if p := recover(); p != nil {
			t, err = nil, fmt.Errorf("malformed torch pickle: %v", p)
		}
	}()
	var pkl *zip.File
	for _, f := range zr.File {
		if f.Name == "data.pkl" || strings.HasSuffix(f.Name, "/data.pkl") {
			pkl = f
			break
		}
	}
	if pkl == nil {
		return nil, errors.New("expected a torch.save archive with data.pkl, found none")
	}
	prefix := strings.TrimSuffix(pkl.Name, "data.pkl")
	records := make(map[string]*zip.File, len(zr.File))
	for _, f := range zr.File {
		records[f.Name] = f
	}
	if _, ok := records[prefix+"constants.pkl"]; ok {
		return nil, errors.New("expected a saved tensor, found a TorchScript archive")
	}
	bigEndian := false
	if f, ok := records[prefix+"byteorder"]; ok {
		b, err := readRecord(f, 16)
		if err != nil {
			return nil, fmt.Errorf("byteorder: %w", err)
		}
		switch strings.TrimSpace(string(b)) {
		case "little":
		case "big":
			bigEndian = true
		default:
			return nil, fmt.Errorf("expected byteorder little or big, found %q", b)
		}
	}
	// Reading the record whole makes archive/zip verify its CRC before a
	// single opcode runs.
	data, err := readRecord(pkl, maxPickle)
	if err != nil {
		return nil, fmt.Errorf("data.pkl: %w", err)
	}
	storages := map[string]*ptStorage{}
	u := pickle.NewUnpickler(bytes.NewReader(data))
	u.FindClass = func(module, name string) (any, error) {
		switch module + "." + name {
		case "torch._utils._rebuild_tensor_v2":
			return rebuildTensor{}, nil
		case "torch._utils._rebuild_parameter":
			return rebuildParameter{}, nil
		}
		if module == "torch" {
			if k, ok := storageKinds[name]; ok {
				return storageClass{k}, nil
			}
		}
		return nil, fmt.Errorf("expected a plain tensor, found global %s.%s", module, name)
	}
	u.PersistentLoad = func(id any) (any, error) {
		tu, ok := id.(*types.Tuple)
		if !ok || tu.Len() < 5 {
			return nil, fmt.Errorf("expected a storage reference, found %v", id)
		}
		if s, _ := tu.Get(0).(string); s != "storage" {
			return nil, fmt.Errorf("expected a storage reference, found %v", tu.Get(0))
		}
		cls, ok1 := tu.Get(1).(storageClass)
		key, ok2 := tu.Get(2).(string)
		numel, ok3 := tu.Get(4).(int)
		if !ok1 || !ok2 || !ok3 || numel < 0 {
			return nil, fmt.Errorf("malformed storage reference %v", id)
		}
		if s, ok := storages[key]; ok {
			return s, nil
		}
		rec, ok := records[prefix+"data/"+key]
		if !ok {
			return nil, fmt.Errorf("storage record data/%s is missing", key)
		}
		want := int64(numel) * int64(cls.kind.size)
		if numel > 0 && want/int64(numel) != int64(cls.kind.size) {
			return nil, fmt.Errorf("storage data/%s: size overflow", key)
		}
		var raw []byte
		if rec.Method == zip.Store && rec.UncompressedSize64 == uint64(want) && want <= size {
			// The usual layout: read straight into a buffer of the right size
			// (bounded by the archive, whatever the headers claim).
			raw, err = readExact(rec, want)
		} else {
			raw, err = readRecord(rec, want)
		}
		if err != nil {
			return nil, fmt.Errorf("storage data/%s: %w", key, err)
		}
		if int64(len(raw)) < want {
			return nil, fmt.Errorf("storage data/%s holds %d bytes, expected %d for %d %s elements", key, len(raw), want, numel, cls.kind.torch)
		}
		s := &ptStorage{kind: cls.kind, numel: numel, raw: raw, big: bigEndian}
		storages[key] = s
		return s, nil
	}
	obj, err := u.Load()
	if err != nil {
		return nil, fmt.Errorf("unpickling data.pkl: %w", err)
	}
	pt, ok := obj.(*ptTensor)
	if !ok {
		return nil, fmt.Errorf("expected a single tensor, found %T", obj)
	}
	return pt.t, nil
}

// readExact reads a record of exactly n bytes (CRC checked at the end).
func readExact(f *zip.File, n int64) ([]byte, error) {
	rc, err := f.Open()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b := make([]byte, n)
	if _, err := io.ReadFull(rc, b); err != nil {
		return nil, err
	}
	var one [1]byte
	if _, err := rc.Read(one[:]); err != nil && err != io.EOF {
		return nil, err
	}
	return b, nil
}

// readRecord reads at most limit bytes of an archive member (growing the
// buffer as data arrives, never trusting the declared size).
func readRecord(f *zip.File, limit int64) ([]byte, error) {
	rc, err := f.Open()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, limit))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) == limit {
		// Drain to let archive/zip check the CRC of a complete record.
		var one [1]byte
		if n, err := rc.Read(one[:]); n > 0 && limit == maxPickle {
			return nil, fmt.Errorf("record exceeds %d bytes", limit)
		} else if err != nil && err != io.EOF {
			return nil, err
		}
	}
	return b, nil
}

// legacyMagic starts a pre-1.6 torch.save file (a pickled long).
var legacyMagic = []byte("\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19")
