package tensor

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"

	"codeberg.org/sbinet/npyio/npy"
)

// maxNPYHeader is numpy's own limit on the header (np.load's
// max_header_size, numpy >= 1.24): a longer one is refused there too.
const maxNPYHeader = 10000

// parseNPY reads the header of a NumPy .npy file (format versions 1 and
// 2, C or Fortran order, little or big endian, bool, integer or
// float16/32/64 data), as msprobe's np.load does for MindSpore dumps, and
// checks the data it declares against the file's size.
func parseNPY(ra io.ReaderAt, size int64) (t *File, err error) {
	// The npy library trusts the header; check what it would index into
	// first, and turn any panic on malformed input into an error.
	defer func() {
		if p := recover(); p != nil {
			t, err = nil, fmt.Errorf("malformed .npy data: %v", p)
		}
	}()
	r := io.NewSectionReader(ra, 0, size)
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
	if hdrLen > maxNPYHeader {
		return nil, fmt.Errorf("header length %d exceeds numpy's limit of %d bytes", hdrLen, maxNPYHeader)
	}
	if preLen+hdrLen > size {
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
	elem, err := npyFormat(descr)
	if err != nil {
		return nil, err
	}
	shape := append([]int{}, nr.Header.Descr.Shape...)
	if len(shape) > maxDims {
		return nil, fmt.Errorf("expected at most %d dimensions, found %d", maxDims, len(shape))
	}
	avail := size - preLen - hdrLen
	n := int64(1)
	for _, d := range shape {
		if d < 0 {
			return nil, fmt.Errorf("negative dimension in shape %v", shape)
		}
		if d > 0 && n > avail/int64(d) {
			return nil, fmt.Errorf("shape %v needs more data than the file holds", shape)
		}
		n *= int64(d)
	}
	if need := n * int64(elem.size()); need > avail {
		return nil, fmt.Errorf("shape %v of %s needs %d data bytes, file has %d", shape, descr, need, avail)
	}
	// numpy reads exactly the elements the shape asks for; the data is
	// plain fixed-size elements, streamed and decoded here (the library's
	// own path reads through growing buffers and widens float16
	// subnormals wrongly).
	st := storage{elem: elem, numel: int(n), ra: ra, base: preLen + hdrLen}
	stride := make([]int, len(shape))
	s := 1
	if nr.Header.Descr.Fortran {
		for k := range shape {
			stride[k] = s
			s *= shape[k]
		}
	} else {
		for k := len(shape) - 1; k >= 0; k-- {
			stride[k] = s
			s *= shape[k]
		}
	}
	v, err := makeView(0, shape, stride, st.numel)
	if err != nil {
		return nil, err
	}
	return &File{Dtype: elem.dtype(), Source: descr, Shape: shape, st: st, v: v}, nil
}

var npyTypes = map[string]elemType{"f2": tFloat16, "f4": tFloat32, "f8": tFloat64,
	"i1": tInt8, "i2": tInt16, "i4": tInt32, "i8": tInt64,
	"u1": tUint8, "u2": tUint16, "u4": tUint32, "u8": tUint64, "b1": tBool}

// npyFormat maps a simple numpy type string ("<f4", "|b1", ">i8") to
// the element format.
func npyFormat(descr string) (format, error) {
	s := descr
	big := false
	if s != "" && strings.ContainsRune("<>|=", rune(s[0])) {
		big = s[0] == '>'
		s = s[1:]
	}
	if t, ok := npyTypes[s]; ok {
		return format{typ: t, big: big}, nil
	}
	return format{}, fmt.Errorf("expected a bool, integer or float16/32/64 dtype, found %q", descr)
}
