package tensor

import "math"

// halfToFloat decodes IEEE 754 binary16 bits exactly.
func halfToFloat(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	exp := int(h>>10) & 0x1f
	frac := float64(h & 0x3ff)
	switch exp {
	case 0:
		return sign * math.Ldexp(frac, -24)
	case 0x1f:
		if frac != 0 {
			return math.NaN()
		}
		return sign * math.Inf(1)
	}
	return sign * math.Ldexp(1024+frac, exp-25)
}

// bfloat16ToFloat decodes bfloat16 bits (the top half of a float32).
func bfloat16ToFloat(h uint16) float64 {
	return float64(math.Float32frombits(uint32(h) << 16))
}

// float8e4m3fnToFloat decodes torch.float8_e4m3fn (no infinities; S.1111.111 is NaN).
func float8e4m3fnToFloat(b byte) float64 {
	sign := 1.0
	if b&0x80 != 0 {
		sign = -1
	}
	exp := int(b>>3) & 0xf
	frac := float64(b & 7)
	if exp == 0xf && b&7 == 7 {
		return math.NaN()
	}
	if exp == 0 {
		return sign * math.Ldexp(frac, -9)
	}
	return sign * math.Ldexp(8+frac, exp-10)
}

// float8e5m2ToFloat decodes torch.float8_e5m2 (IEEE-like, with infinities).
func float8e5m2ToFloat(b byte) float64 {
	return halfToFloat(uint16(b) << 8)
}

// roundToHalf rounds a float32 to the nearest binary16 value (ties to
// even), as numpy stores the result of a float16 operation.
func roundToHalf(f float32) float64 {
	x := float64(f)
	if math.IsNaN(x) || math.IsInf(x, 0) || x == 0 {
		return x
	}
	a := math.Abs(x)
	if a >= 65520 { // rounds past the largest half (65504)
		return math.Copysign(math.Inf(1), x)
	}
	// Quantum of the binade (subnormal quantum 2^-24 below 2^-14).
	e := math.Ilogb(a)
	if e < -14 {
		e = -14
	}
	q := math.Ldexp(1, e-10)
	return math.Copysign(math.RoundToEven(a/q)*q, x)
}
