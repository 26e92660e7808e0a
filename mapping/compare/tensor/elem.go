package tensor

import (
	"encoding/binary"
	"math"
)

// elemType is a stored element type of a tensor file.
type elemType uint8

const (
	tFloat16 elemType = iota
	tBFloat16
	tFloat32
	tFloat64
	tFloat8E4M3
	tFloat8E5M2
	tInt8
	tUint8
	tInt16
	tUint16
	tInt32
	tUint32
	tInt64
	tUint64
	tBool
)

var elemSizes = [...]int{2, 2, 4, 8, 1, 1, 1, 1, 2, 2, 4, 4, 8, 8, 1}

// computeDtype is the numpy dtype msprobe computes with: torch bfloat16
// and float8 tensors are widened to float32 before numpy sees them.
var computeDtypes = [...]string{"float16", "float32", "float32", "float64", "float32", "float32",
	"int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "bool"}

// format is how elements are laid out in a file: type and byte order.
type format struct {
	typ elemType
	big bool
}

func (f format) size() int     { return elemSizes[f.typ] }
func (f format) dtype() string { return computeDtypes[f.typ] }
func (f format) order() binary.ByteOrder {
	if f.big {
		return binary.BigEndian
	}
	return binary.LittleEndian
}

// decode widens the elements in raw (len(dst) of them) to float64,
// exactly (64-bit integers beyond 2^53 round as numpy's astype(float)).
func (f format) decode(dst []float64, raw []byte) {
	raw = raw[:len(dst)*f.size()]
	if !f.big {
		decodeLE(dst, raw, f.typ)
		return
	}
	bo := binary.BigEndian
	for i := range dst {
		b := raw[i*f.size():]
		switch f.typ {
		case tFloat16:
			dst[i] = halfToFloat(bo.Uint16(b))
		case tBFloat16:
			dst[i] = bfloat16ToFloat(bo.Uint16(b))
		case tFloat32:
			dst[i] = float64(math.Float32frombits(bo.Uint32(b)))
		case tFloat64:
			dst[i] = math.Float64frombits(bo.Uint64(b))
		case tInt16:
			dst[i] = float64(int16(bo.Uint16(b)))
		case tUint16:
			dst[i] = float64(bo.Uint16(b))
		case tInt32:
			dst[i] = float64(int32(bo.Uint32(b)))
		case tUint32:
			dst[i] = float64(bo.Uint32(b))
		case tInt64:
			dst[i] = float64(int64(bo.Uint64(b)))
		case tUint64:
			dst[i] = float64(bo.Uint64(b))
		default: // one-byte types have no byte order
			decodeLE(dst[i:i+1], b[:1], f.typ)
		}
	}
}

// decodeLE is decode for little-endian data, one loop per type (the hot
// path of streaming a tensor).
func decodeLE(dst []float64, raw []byte, t elemType) {
	le := binary.LittleEndian
	switch t {
	case tFloat32:
		for i := range dst {
			dst[i] = float64(math.Float32frombits(le.Uint32(raw[4*i:])))
		}
	case tFloat64:
		for i := range dst {
			dst[i] = math.Float64frombits(le.Uint64(raw[8*i:]))
		}
	case tFloat16:
		for i := range dst {
			dst[i] = halfToFloat(le.Uint16(raw[2*i:]))
		}
	case tBFloat16:
		for i := range dst {
			dst[i] = float64(math.Float32frombits(uint32(le.Uint16(raw[2*i:])) << 16))
		}
	case tFloat8E4M3:
		for i, b := range raw {
			dst[i] = float8e4m3fnToFloat(b)
		}
	case tFloat8E5M2:
		for i, b := range raw {
			dst[i] = float8e5m2ToFloat(b)
		}
	case tInt8:
		for i, b := range raw {
			dst[i] = float64(int8(b))
		}
	case tUint8:
		for i, b := range raw {
			dst[i] = float64(b)
		}
	case tBool:
		for i, b := range raw {
			dst[i] = 0
			if b != 0 {
				dst[i] = 1
			}
		}
	case tInt16:
		for i := range dst {
			dst[i] = float64(int16(le.Uint16(raw[2*i:])))
		}
	case tUint16:
		for i := range dst {
			dst[i] = float64(le.Uint16(raw[2*i:]))
		}
	case tInt32:
		for i := range dst {
			dst[i] = float64(int32(le.Uint32(raw[4*i:])))
		}
	case tUint32:
		for i := range dst {
			dst[i] = float64(le.Uint32(raw[4*i:]))
		}
	case tInt64:
		for i := range dst {
			dst[i] = float64(int64(le.Uint64(raw[8*i:])))
		}
	case tUint64:
		for i := range dst {
			dst[i] = float64(le.Uint64(raw[8*i:]))
		}
	}
}
