// Parts of this file are adapted from Go's internal/strconv (ftoadbox.go):
// Copyright 2025 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style license that can be
// found at https://go.dev/LICENSE.

package msprobe

import (
	"encoding/binary"
	"math"
	"math/bits"
)

// Shortest decimal digits of a float64 by the Dragonbox algorithm (Junekey
// Jeon, 2020), ported from Go's internal/strconv (ftoadbox.go, BSD
// licence) so that AppendPyFloat can lay the digits out as Python's repr
// does without formatting them twice: strconv spends most of its time
// writing the digits it found.

// shortestDecimal returns the shortest digits that round-trip to f (f
// finite and not zero; the closest of them to f, ties to even) as an
// integer and the decimal exponent: |f| == digits * 10^exp10 once parsed.
func shortestDecimal(f float64) (digits uint64, exp10 int) {
	b := math.Float64bits(f)
	exp := int(b>>52) & 0x7FF
	mant := b & (1<<52 - 1)
	denorm := exp == 0
	if denorm {
		exp++
	} else {
		mant |= 1 << 52
	}
	return dbox64(mant, exp-1023-52, denorm)
}

type u128 struct{ hi, lo uint64 }

// dbox64 is Go's dboxFtoa64 returning the digits and their exponent.
func dbox64(mant uint64, exp int, denorm bool) (uint64, int) {
	if mant == 1<<52 && !denorm {
		// Algorithm 5.6: a power of two, the interval is asymmetric.
		k0 := -mulLog10x2MinusLog10x4Over3(exp)
		φ, β := dboxPow(k0, exp)
		xi, zi := dboxRange(φ, β)
		if exp != 2 && exp != 3 {
			xi++
		}
		q := zi / 10
		if xi <= q*10 {
			q, zeros := trimZeros(q)
			return q, -k0 + 1 + zeros
		}
		yru := dboxRoundUp(φ, β)
		if exp == -77 && yru%2 != 0 {
			yru--
		} else if yru < xi {
			yru++
		}
		return yru, -k0
	}
	const (
		κ     = 2
		p10κ  = 100
		p10κ1 = p10κ * 10
	)
	// Algorithm 5.2.
	k0 := -mulLog10x2(exp)
	φ, β := dboxPow(κ+k0, exp)
	zi, exact := dboxMulPow(uint64(mant*2+1)<<β, φ)
	s, r := zi/p10κ1, uint32(zi%p10κ1)
	δi := uint32(φ.hi >> (64 - 1 - β))
	if r < δi {
		if r != 0 || !exact || mant%2 == 0 {
			s, zeros := trimZeros(s)
			return s, -k0 + 1 + zeros
		}
		s--
		r = p10κ * 10
	} else if r == δi {
		parity, exact := dboxParity(uint64(mant*2-1), φ, β)
		if parity || (exact && mant%2 == 0) {
			s, zeros := trimZeros(s)
			return s, -k0 + 1 + zeros
		}
	}
	// Algorithm 5.4.
	D := r + p10κ/2 - δi/2
	t, ρ := D/p10κ, D%p10κ
	yru := 10*s + uint64(t)
	if ρ == 0 {
		parity, exact := dboxParity(mant*2, φ, β)
		if parity != ((D-p10κ/2)%2 != 0) || exact && yru%2 != 0 {
			yru--
		}
	}
	return yru, -k0
}

// dboxPow is φ̃k (10^k's 128-bit mantissa, rounded up unless exact) and β.
func dboxPow(k, e int) (u128, int) {
	p := pow10x128[k-minPow10]
	φ := u128{p[0], p[1]}
	if k < 0 || k > 55 {
		φ.lo++
	}
	return φ, e + 1 + mulLog2x10(k) - 1
}

func dboxMulPow(u uint64, φ u128) (uint64, bool) {
	hi, lo := bits.Mul64(u, φ.hi)
	t, _ := bits.Mul64(u, φ.lo)
	lo, c := bits.Add64(lo, t, 0)
	return hi + c, lo == 0
}

func dboxParity(mant2 uint64, φ u128, β int) (parity, isInt bool) {
	high := mant2 * φ.hi
	hlHi, hlLo := bits.Mul64(mant2, φ.lo)
	rHi, rLo := high+hlHi, hlLo
	parity = (rHi>>(64-β))&1 != 0
	isInt = (rHi<<β)|(rLo>>(64-β)) == 0
	return
}

func dboxRange(φ u128, β int) (left, right uint64) {
	left = (φ.hi - (φ.hi >> (52 + 2))) >> (64 - 52 - 1 - β)
	right = (φ.hi + (φ.hi >> (52 + 1))) >> (64 - 52 - 1 - β)
	return
}

func dboxRoundUp(φ u128, β int) uint64 {
	return (φ.hi>>(128/2-52-2-β) + 1) / 2
}

// mulLog10x2 is ⌊x·log10(2)⌋ for |x| <= 1600.
func mulLog10x2(x int) int { return (x * 78913) >> 18 }

// mulLog2x10 is ⌊x·log2(10)⌋ for |x| <= 500.
func mulLog2x10(x int) int { return (x * 108853) >> 15 }

// mulLog10x2MinusLog10x4Over3 is ⌊e·log10(2) - log10(4/3)⌋.
func mulLog10x2MinusLog10x4Over3(e int) int { return (e*631305 - 261663) >> 21 }

// trimZeros removes the trailing decimal zeros of x and counts them.
func trimZeros(x uint64) (uint64, int) {
	const (
		div1e8m  = 0xc767074b22e90e21
		div1e8le = math.MaxUint64 / 100000000
		div1e4m  = 0xd288ce703afb7e91
		div1e4le = math.MaxUint64 / 10000
		div1e2m  = 0x8f5c28f5c28f5c29
		div1e2le = math.MaxUint64 / 100
		div1e1m  = 0xcccccccccccccccd
		div1e1le = math.MaxUint64 / 10
	)
	p := 0
	for d := bits.RotateLeft64(x*div1e8m, -8); d <= div1e8le; d = bits.RotateLeft64(x*div1e8m, -8) {
		x = d
		p += 8
	}
	if d := bits.RotateLeft64(x*div1e4m, -4); d <= div1e4le {
		x = d
		p += 4
	}
	if d := bits.RotateLeft64(x*div1e2m, -2); d <= div1e2le {
		x = d
		p += 2
	}
	if d := bits.RotateLeft64(x*div1e1m, -1); d <= div1e1le {
		x = d
		p++
	}
	return x, p
}

const digitPairs = "00010203040506070809101112131415161718192021222324252627282930313233343536373839" +
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879" +
	"8081828384858687888990919293949596979899"

// appendDigits writes x in decimal at the end of buf and returns where
// the digits start: blocks of eight digits, each made at once in a word
// (eightDigitsSWAR).
func appendDigits(buf *[20]byte, x uint64) int {
	const ascii = 0x3030303030303030
	le := binary.LittleEndian
	if x < 1e8 {
		w := eightDigitsSWAR(uint32(x))
		le.PutUint64(buf[12:], w|ascii)
		return 12 + bits.TrailingZeros64(w|1<<63)/8 // x == 0 keeps one digit
	}
	hi := x / 1e8
	le.PutUint64(buf[12:], eightDigitsSWAR(uint32(x-hi*1e8))|ascii)
	if hi < 1e8 {
		w := eightDigitsSWAR(uint32(hi))
		le.PutUint64(buf[4:], w|ascii)
		return 4 + bits.TrailingZeros64(w)/8
	}
	top := hi / 1e8 // at most 1844
	le.PutUint64(buf[4:], eightDigitsSWAR(uint32(hi-top*1e8))|ascii)
	w := eightDigitsSWAR(uint32(top))
	le.PutUint32(buf[0:], uint32(w>>32|ascii))
	return bits.TrailingZeros32(uint32(w>>32)) / 8 // top > 0
}

// eightDigitsSWAR gives v < 1e8 as eight decimal digits, a byte each,
// the most significant in the lowest byte (the first when stored
// little-endian), by dividing all lanes of a word at once: v splits into
// halves of four digits in 32-bit lanes, those into pairs in 16-bit
// lanes, those into digits in bytes (x*10486>>20 is x/100 below 43699,
// x*103>>10 is x/10 below 179). A zero byte is a leading zero; OR
// 0x30 into every byte for ASCII.
func eightDigitsSWAR(v uint32) uint64 {
	x := uint64(v/10000) | uint64(v%10000)<<32
	h := (x * 10486 >> 20) & 0x0000007F0000007F
	y := h | (x-h*100)<<16
	t := (y * 103 >> 10) & 0x000F000F000F000F
	return t | (y-t*10)<<8
}
