package tensor

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/big"
	"strings"

	ogorek "github.com/kisielk/og-rek"
)

// Budgets of a torch.save archive, checked before anything is buffered.
const (
	// maxPickle bounds data.pkl: torch writes a few hundred bytes for one
	// tensor, and og-rek's decoding of a pickle (a MARK bomb included)
	// stays within a small multiple of its size.
	maxPickle = 64 << 10
	// maxZipDir bounds the bytes archive/zip reads to index the archive
	// (end record search and central directory): torch writes five to ten
	// entries, about a kilobyte.
	maxZipDir = 1 << 20
	// maxDeflateRatio is how far deflate can expand its input (about
	// 1032:1); a compressed record claiming more is refused unread.
	maxDeflateRatio = 1032
	// maxMemStorage bounds a compressed storage decompressed into memory
	// for a strided view (torch never compresses its records; only
	// another writer's archive needs this).
	maxMemStorage = 16 << 20
)

// storageKinds maps torch's legacy storage classes to element types.
var storageKinds = map[string]struct {
	typ   elemType
	torch string
}{
	"FloatStorage":         {tFloat32, "torch.float32"},
	"DoubleStorage":        {tFloat64, "torch.float64"},
	"HalfStorage":          {tFloat16, "torch.float16"},
	"BFloat16Storage":      {tBFloat16, "torch.bfloat16"},
	"Float8_e4m3fnStorage": {tFloat8E4M3, "torch.float8_e4m3fn"},
	"Float8_e5m2Storage":   {tFloat8E5M2, "torch.float8_e5m2"},
	"CharStorage":          {tInt8, "torch.int8"},
	"ByteStorage":          {tUint8, "torch.uint8"},
	"ShortStorage":         {tInt16, "torch.int16"},
	"IntStorage":           {tInt32, "torch.int32"},
	"LongStorage":          {tInt64, "torch.int64"},
	"UInt16Storage":        {tUint16, "torch.uint16"},
	"UInt32Storage":        {tUint32, "torch.uint32"},
	"UInt64Storage":        {tUint64, "torch.uint64"},
	"BoolStorage":          {tBool, "torch.bool"},
}

// ptStorage is one storage record of the archive, checked but not read.
type ptStorage struct {
	storage
	torch string
}

// parsePT reads a torch.save zip archive holding one tensor (torch.Tensor
// or nn.Parameter), as msprobe's torch.load(weights_only=True) + detach +
// numpy() does: the pickle is decoded with og-rek, which builds Go values
// and never calls anything; only the globals a tensor needs are accepted.
// The storage is checked against its record and read later, lazily.
func parsePT(ra io.ReaderAt, size int64) (t *File, err error) {
	defer func() {
		if p := recover(); p != nil {
			t, err = nil, fmt.Errorf("malformed torch archive: %v", p)
		}
	}()
	dir := &budgetReaderAt{ra: ra, left: maxZipDir}
	zr, err := zip.NewReader(dir, size)
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
		var head [14]byte
		if n, _ := ra.ReadAt(head[:], 0); n == len(head) && bytes.Equal(head[:], legacyMagic) {
			return nil, errors.New("legacy (pre-1.6, non-zip) torch.save format is not supported; expected a zip archive")
		}
		if dir.exceeded {
			return nil, fmt.Errorf("expected a torch.save archive indexed in at most %d bytes, found a larger zip directory", maxZipDir)
		}
		return nil, fmt.Errorf("expected a torch.save zip archive: %w", err)
	}
	dir.indexed = true // the records are read without this budget
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
	data, err := readRecord(pkl, maxPickle)
	if err != nil {
		return nil, fmt.Errorf("data.pkl: %w", err)
	}
	storages := map[string]*ptStorage{}
	load := func(ref ogorek.Ref) (any, error) {
		tu, ok := ref.Pid.(ogorek.Tuple)
		if !ok || len(tu) < 5 {
			return nil, fmt.Errorf("expected a storage reference, found %v", ref.Pid)
		}
		if s, _ := tu[0].(string); s != "storage" {
			return nil, fmt.Errorf("expected a storage reference, found %v", tu[0])
		}
		cls, ok1 := tu[1].(ogorek.Class)
		key, ok2 := tu[2].(string)
		numel, ok3 := toInt(tu[4])
		kind, ok4 := storageKinds[cls.Name]
		if !ok1 || cls.Module != "torch" || !ok4 {
			return nil, fmt.Errorf("expected a plain tensor, found storage class %v", tu[1])
		}
		if !ok2 || !ok3 || numel < 0 {
			return nil, fmt.Errorf("malformed storage reference %v", ref.Pid)
		}
		if s, ok := storages[key]; ok {
			if s.torch != kind.torch || s.numel != numel {
				return nil, fmt.Errorf("storage %s referenced as two different storages", key)
			}
			return s, nil
		}
		rec, ok := records[prefix+"data/"+key]
		if !ok {
			return nil, fmt.Errorf("storage record data/%s is missing", key)
		}
		s := &ptStorage{storage: storage{elem: format{typ: kind.typ, big: bigEndian}, numel: numel}, torch: kind.torch}
		if err := s.attach(rec, ra, size); err != nil {
			return nil, fmt.Errorf("storage data/%s: %w", key, err)
		}
		storages[key] = s
		return s, nil
	}
	dec := ogorek.NewDecoderWithConfig(bytes.NewReader(data), &ogorek.DecoderConfig{PersistentLoad: load, PyDict: true})
	obj, err := dec.Decode()
	if err != nil {
		return nil, fmt.Errorf("unpickling data.pkl: %w", err)
	}
	st, offset, shape, stride, err := rebuild(obj, 0)
	if err != nil {
		return nil, err
	}
	v, err := makeView(offset, shape, stride, st.numel)
	if err != nil {
		return nil, err
	}
	if err := st.prepare(v); err != nil {
		return nil, err
	}
	return &File{Dtype: st.elem.dtype(), Source: st.torch, Shape: shape, st: st.storage, v: v}, nil
}

// attach checks the record against the storage's declared element count
// and the file's size, before any of it is read.
func (s *ptStorage) attach(rec *zip.File, ra io.ReaderAt, fileSize int64) error {
	want := int64(s.numel) * int64(s.elem.size())
	if s.numel > (1<<62)/s.elem.size() {
		return fmt.Errorf("%d %s elements overflow", s.numel, s.torch)
	}
	holds := int64(rec.UncompressedSize64)
	if rec.UncompressedSize64 > 1<<62 || holds < want {
		return fmt.Errorf("holds %d bytes, expected %d for %d %s elements", rec.UncompressedSize64, want, s.numel, s.torch)
	}
	off, err := rec.DataOffset()
	if err != nil {
		return err
	}
	if rec.CompressedSize64 > uint64(fileSize) || off+int64(rec.CompressedSize64) > fileSize {
		return fmt.Errorf("record of %d bytes runs past the end of the file (%d bytes)", rec.CompressedSize64, fileSize)
	}
	switch rec.Method {
	case zip.Store:
		if rec.CompressedSize64 != rec.UncompressedSize64 {
			return fmt.Errorf("stored record claims %d bytes but holds %d", rec.UncompressedSize64, rec.CompressedSize64)
		}
		s.ra, s.base = ra, off
		crc := rec.CRC32
		if holds == want {
			s.crc = &crc
			return nil
		}
		return checkCRC(io.NewSectionReader(ra, off, holds), crc)
	case zip.Deflate:
		if rec.UncompressedSize64/maxDeflateRatio > rec.CompressedSize64+1 {
			return fmt.Errorf("claims %d bytes from %d compressed, more than deflate expands to", rec.UncompressedSize64, rec.CompressedSize64)
		}
		s.seq = rec.Open
		return nil
	}
	return fmt.Errorf("expected a stored or deflated record, found compression method %d", rec.Method)
}

// prepare makes the storage readable for view v: a strided view over a
// compressed record needs random access, so a small record is
// decompressed into memory and a large one refused; a stored record
// whose CRC no contiguous stream of the whole record checks is checked
// now.
func (s *ptStorage) prepare(v view) error {
	if v.numel == 0 {
		s.crc = nil
		return nil
	}
	whole := v.contiguous() && v.offset == 0 && v.numel == s.numel
	if s.ra != nil {
		if s.crc != nil && !whole {
			crc := *s.crc
			s.crc = nil
			return checkCRC(io.NewSectionReader(s.ra, s.base, s.bytes()), crc)
		}
		return nil
	}
	if v.contiguous() {
		return nil
	}
	if s.bytes() > maxMemStorage {
		return fmt.Errorf("a strided view over a compressed storage of %d bytes (more than %d): expected torch's uncompressed records", s.bytes(), maxMemStorage)
	}
	rc, err := s.seq()
	if err != nil {
		return err
	}
	defer rc.Close()
	b := make([]byte, s.bytes())
	if _, err := io.ReadFull(rc, b); err != nil {
		return fmt.Errorf("reading the storage: %w", noEOF(err))
	}
	if _, err := io.Copy(io.Discard, rc); err != nil {
		return fmt.Errorf("reading the storage: %w", err)
	}
	s.ra, s.base = bytes.NewReader(b), 0
	return nil
}

// checkCRC reads r through and compares its CRC-32 with want.
func checkCRC(r io.Reader, want uint32) error {
	h := crc32.NewIEEE()
	if _, err := io.CopyBuffer(h, r, make([]byte, readBuf)); err != nil {
		return fmt.Errorf("reading the storage: %w", err)
	}
	if got := h.Sum32(); got != want {
		return fmt.Errorf("storage record fails its CRC-32 check (%08x, expected %08x)", got, want)
	}
	return nil
}

// rebuild interprets the unpickled object: torch._utils._rebuild_tensor_v2
// (storage, storage_offset, size, stride, requires_grad, backward_hooks[,
// metadata]), possibly wrapped in torch._utils._rebuild_parameter(data,
// requires_grad, backward_hooks), whose data is what msprobe compares.
func rebuild(obj any, depth int) (st *ptStorage, offset int, size, stride []int, err error) {
	c, ok := obj.(ogorek.Call)
	if !ok {
		return nil, 0, nil, nil, fmt.Errorf("expected a single tensor, found %s", pyKind(obj))
	}
	args := c.Args
	switch name := c.Callable.Module + "." + c.Callable.Name; name {
	case "torch._utils._rebuild_tensor_v2":
		if len(args) < 4 {
			return nil, 0, nil, nil, fmt.Errorf("_rebuild_tensor_v2: expected at least 4 arguments, found %d", len(args))
		}
		if st, ok = args[0].(*ptStorage); !ok {
			return nil, 0, nil, nil, fmt.Errorf("_rebuild_tensor_v2: expected a storage, found %s", pyKind(args[0]))
		}
		if offset, ok = toInt(args[1]); !ok || offset < 0 {
			return nil, 0, nil, nil, fmt.Errorf("_rebuild_tensor_v2: expected a storage offset, found %v", args[1])
		}
		if size, err = intTuple(args[2]); err != nil {
			return nil, 0, nil, nil, fmt.Errorf("_rebuild_tensor_v2 size: %w", err)
		}
		if stride, err = intTuple(args[3]); err != nil {
			return nil, 0, nil, nil, fmt.Errorf("_rebuild_tensor_v2 stride: %w", err)
		}
		for _, a := range args[4:] {
			if err := plainData(a, 0); err != nil {
				return nil, 0, nil, nil, err
			}
		}
		return st, offset, size, stride, nil
	case "torch._utils._rebuild_parameter":
		if depth > 0 || len(args) < 1 {
			return nil, 0, nil, nil, errors.New("_rebuild_parameter: expected a tensor argument")
		}
		for _, a := range args[1:] {
			if err := plainData(a, 0); err != nil {
				return nil, 0, nil, nil, err
			}
		}
		return rebuild(args[0], depth+1)
	default:
		return nil, 0, nil, nil, fmt.Errorf("expected a plain tensor, found global %s", name)
	}
}

// plainData accepts what may sit beside a tensor's storage in the pickle
// (requires_grad, an empty OrderedDict of hooks, metadata): plain values,
// containers of them and collections.OrderedDict calls; any other global
// is refused, as torch.load(weights_only=True) refuses it.
func plainData(v any, depth int) error {
	if depth > 32 {
		return errors.New("expected a plain tensor, found data nested more than 32 deep")
	}
	switch x := v.(type) {
	case ogorek.Call:
		if x.Callable.Module+"."+x.Callable.Name != "collections.OrderedDict" {
			return fmt.Errorf("expected a plain tensor, found global %s.%s", x.Callable.Module, x.Callable.Name)
		}
		return plainData(x.Args, depth+1)
	case ogorek.Class:
		return fmt.Errorf("expected a plain tensor, found global %s.%s", x.Module, x.Name)
	case ogorek.Ref:
		return errors.New("expected a plain tensor, found an unresolved persistent reference")
	case ogorek.Tuple:
		for _, e := range x {
			if err := plainData(e, depth+1); err != nil {
				return err
			}
		}
	case []any:
		for _, e := range x {
			if err := plainData(e, depth+1); err != nil {
				return err
			}
		}
	case ogorek.Dict:
		var err error
		x.Iter()(func(k, e any) bool {
			if err = plainData(k, depth+1); err == nil {
				err = plainData(e, depth+1)
			}
			return err == nil
		})
		return err
	}
	return nil
}

// pyKind names a decoded value's kind for messages.
func pyKind(v any) string {
	switch x := v.(type) {
	case ogorek.Call:
		return "a call to " + x.Callable.Module + "." + x.Callable.Name
	case ogorek.Tuple:
		return "a tuple"
	case []any:
		return "a list"
	case ogorek.Dict:
		return "a dict"
	case ogorek.None:
		return "None"
	case *ptStorage:
		return "a bare storage"
	}
	return fmt.Sprintf("%T", v)
}

// toInt converts a pickled integer.
func toInt(v any) (int, bool) {
	switch x := v.(type) {
	case int64:
		return int(x), true
	case *big.Int:
		if x.IsInt64() {
			return int(x.Int64()), true
		}
	}
	return 0, false
}

func intTuple(v any) ([]int, error) {
	tu, ok := v.(ogorek.Tuple)
	if !ok {
		return nil, fmt.Errorf("expected a tuple of ints, found %s", pyKind(v))
	}
	if len(tu) > maxDims {
		return nil, fmt.Errorf("expected at most %d dimensions, found %d", maxDims, len(tu))
	}
	out := make([]int, len(tu))
	for i, e := range tu {
		n, ok := toInt(e)
		if !ok {
			return nil, fmt.Errorf("expected a tuple of ints, found %v", e)
		}
		out[i] = n
	}
	return out, nil
}

// readRecord reads a small archive member whole, refusing one of more
// than limit bytes (whatever its header claims); reading to the end makes
// archive/zip check its CRC.
func readRecord(f *zip.File, limit int64) ([]byte, error) {
	rc, err := f.Open()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("record exceeds %d bytes", limit)
	}
	return b, nil
}

// budgetReaderAt fails once more than left bytes have been read, so that
// indexing an archive cannot buffer an arbitrarily large directory.
type budgetReaderAt struct {
	ra       io.ReaderAt
	left     int64
	exceeded bool
	indexed  bool // the budget no longer applies
}

func (b *budgetReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if b.indexed {
		return b.ra.ReadAt(p, off)
	}
	b.left -= int64(len(p))
	if b.left < 0 {
		b.exceeded = true
		return 0, errors.New("zip directory budget exceeded")
	}
	return b.ra.ReadAt(p, off)
}

// legacyMagic starts a pre-1.6 torch.save file (a pickled long).
var legacyMagic = []byte("\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19")
