package tensor

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"codeberg.org/sbinet/npyio/npy"
	"github.com/layermap/layermap/printparse/source"
)

// maxNPYHeader bounds the header length a .npy file may claim; numpy
// writes a few hundred bytes.
const maxNPYHeader = 1 << 20

// LoadNPY reads a NumPy .npy file (format versions 1 and 2, C or Fortran
// order, little or big endian) holding bool, integer or float16/32/64
// data, as msprobe's np.load does for MindSpore dumps.
func LoadNPY(path string) (*Tensor, error) {
	f, err := source.Open(path, 0) // regular files only: a FIFO would hang the read
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	t, err := readNPY(bufio.NewReaderSize(f, 1<<20), st.Size())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// ReadNPY decodes a .npy file held in memory.
func ReadNPY(b []byte) (*Tensor, error) {
	return readNPY(bytes.NewReader(b), int64(len(b)))
}

func readNPY(r io.Reader, size int64) (t *Tensor, err error) {
	// The npy library trusts the header; check what it would index into
	// first, and turn any panic on malformed input into an error.
	defer func() {
		if p := recover(); p != nil {
			t, err = nil, fmt.Errorf("malformed .npy data: %v", p)
		}
	}()
	var pre [12]byte
	if _, err := io.ReadFull(r, pre[:10]); err != nil {
		return nil, fmt.Errorf("expected a .npy header, found %d bytes", size)
	}
	if !bytes.Equal(pre[:6], npy.Magic[:]) {
		return nil, errors.New("expected the .npy magic \\x93NUMPY, found other bytes")
	}
	var hdrLen, preLen int64
	switch pre[6] {
	case 1:
		hdrLen, preLen = int64(binary.LittleEndian.Uint16(pre[8:10])), 10
	case 2:
		if _, err := io.ReadFull(r, pre[10:12]); err != nil {
			return nil, errors.New("expected a .npy version 2 header length, found end of file")
		}
		hdrLen, preLen = int64(binary.LittleEndian.Uint32(pre[8:12])), 12
	default:
		return nil, fmt.Errorf("expected .npy format version 1 or 2, found %d", pre[6])
	}
	if hdrLen > maxNPYHeader || preLen+hdrLen > size {
		return nil, fmt.Errorf("header length %d exceeds the file (%d bytes)", hdrLen, size)
	}
	hdr := make([]byte, hdrLen)
	if _, err := io.ReadFull(r, hdr); err != nil {
		return nil, fmt.Errorf("reading header: %w", err)
	}
	if bytes.LastIndexByte(hdr, '\n') < 0 || !bytes.Contains(hdr, []byte("}")) {
		return nil, errors.New("expected a header dictionary ending in a newline")
	}
	// Hand the validated header to the library and let it parse it.
	head := append(append([]byte{}, pre[:preLen]...), hdr...)
	nr, err := npy.NewReader(bytes.NewReader(head))
	if err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	descr := strings.Trim(nr.Header.Descr.Type, "'\" ")
	dtype, esize, err := npyDtype(descr)
	if err != nil {
		return nil, err
	}
	shape := append([]int{}, nr.Header.Descr.Shape...)
	n := int64(1)
	for _, d := range shape {
		if d < 0 {
			return nil, fmt.Errorf("negative dimension in shape %v", shape)
		}
		if d > 0 && n > (size+1)/int64(d) {
			return nil, fmt.Errorf("shape %v needs more data than the file holds", shape)
		}
		n *= int64(d)
	}
	need := n * int64(esize)
	if need > size-preLen-hdrLen {
		return nil, fmt.Errorf("shape %v of %s needs %d data bytes, file has %d", shape, descr, need, size-preLen-hdrLen)
	}
	// numpy reads exactly the elements the shape asks for. The library
	// parsed the header; the data is plain fixed-size elements, decoded
	// here in one typed loop (the library's own path reads through growing
	// buffers and widens float16 subnormals wrongly).
	raw := make([]byte, need)
	if _, err := io.ReadFull(r, raw); err != nil {
		return nil, fmt.Errorf("reading %s data: %w", descr, err)
	}
	var bo binary.ByteOrder = binary.LittleEndian
	if descr[0] == '>' {
		bo = binary.BigEndian
	}
	data := decodeNPY(raw, dtype, esize, bo)
	if nr.Header.Descr.Fortran && len(shape) > 1 {
		data = fortranToC(data, shape)
	}
	return &Tensor{Dtype: dtype, Source: descr, Shape: shape, Data: data}, nil
}

// npyDtype maps a simple numpy type string ("<f4", "|b1", ">i8") to the
// dtype name and element size.
func npyDtype(descr string) (string, int, error) {
	s := descr
	if s != "" && strings.ContainsRune("<>|=", rune(s[0])) {
		s = s[1:]
	}
	if len(s) >= 2 {
		size, err := strconv.Atoi(s[1:])
		if err == nil {
			name := ""
			switch s[0] {
			case 'f':
				if size == 2 || size == 4 || size == 8 {
					name = "float" + strconv.Itoa(8*size)
				}
			case 'i':
				if size == 1 || size == 2 || size == 4 || size == 8 {
					name = "int" + strconv.Itoa(8*size)
				}
			case 'u':
				if size == 1 || size == 2 || size == 4 || size == 8 {
					name = "uint" + strconv.Itoa(8*size)
				}
			case 'b':
				if size == 1 {
					name = "bool"
				}
			}
			if name != "" {
				return name, size, nil
			}
		}
	}
	return "", 0, fmt.Errorf("expected a bool, integer or float16/32/64 dtype, found %q", descr)
}

// decodeNPY widens raw elements of dtype to float64.
func decodeNPY(raw []byte, dtype string, esize int, bo binary.ByteOrder) []float64 {
	out := make([]float64, len(raw)/esize)
	switch dtype {
	case "float32":
		for i := range out {
			out[i] = float64(math.Float32frombits(bo.Uint32(raw[4*i:])))
		}
	case "float64":
		for i := range out {
			out[i] = math.Float64frombits(bo.Uint64(raw[8*i:]))
		}
	case "float16":
		for i := range out {
			out[i] = halfToFloat(bo.Uint16(raw[2*i:]))
		}
	case "bool":
		for i, b := range raw {
			if b != 0 {
				out[i] = 1
			}
		}
	case "int8":
		for i, b := range raw {
			out[i] = float64(int8(b))
		}
	case "uint8":
		for i, b := range raw {
			out[i] = float64(b)
		}
	case "int16":
		for i := range out {
			out[i] = float64(int16(bo.Uint16(raw[2*i:])))
		}
	case "uint16":
		for i := range out {
			out[i] = float64(bo.Uint16(raw[2*i:]))
		}
	case "int32":
		for i := range out {
			out[i] = float64(int32(bo.Uint32(raw[4*i:])))
		}
	case "uint32":
		for i := range out {
			out[i] = float64(bo.Uint32(raw[4*i:]))
		}
	case "int64":
		for i := range out {
			out[i] = float64(int64(bo.Uint64(raw[8*i:])))
		}
	case "uint64":
		for i := range out {
			out[i] = float64(bo.Uint64(raw[8*i:]))
		}
	}
	return out
}

// fortranToC reorders column-major data into row-major order.
func fortranToC(data []float64, shape []int) []float64 {
	out := make([]float64, len(data))
	nd := len(shape)
	idx := make([]int, nd)
	// Walk the Fortran-ordered source; compute each element's C offset.
	cstride := make([]int, nd)
	s := 1
	for k := nd - 1; k >= 0; k-- {
		cstride[k] = s
		s *= shape[k]
	}
	for _, v := range data {
		off := 0
		for k := 0; k < nd; k++ {
			off += idx[k] * cstride[k]
		}
		out[off] = v
		for k := 0; k < nd; k++ { // first index varies fastest
			idx[k]++
			if idx[k] < shape[k] {
				break
			}
			idx[k] = 0
		}
	}
	return out
}
