// Parts of this file are adapted from Go's internal/strconv (atofeisel.go):
// Copyright 2020 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style license that can be
// found at https://go.dev/LICENSE.

package msprobe

import (
	"math"
	"math/bits"
)

// Powers of ten for eiselLemire: pow10x128[q-minPow10] is the 128-bit
// mantissa of 10^q rounded down, normalized so that its top bit is set
// (hi, lo), for q in [minPow10, maxPow10]. The table (pow10tab.go) is
// generated from exact integers by TestPow10Table (go test -update), so
// that no process pays for building it at start.
const (
	minPow10 = -348
	maxPow10 = 347
)

// eiselLemire returns the float64 nearest to man * 10^exp10 (ties to
// even), or ok false in the rare cases it cannot decide (the caller then
// parses the text exactly). man must not be 0. This is the Eisel-Lemire
// algorithm (Lemire, "Number Parsing at a Gigabyte per Second", 2021), as
// Go's strconv has it.
func eiselLemire(man uint64, exp10 int, neg bool) (float64, bool) {
	if exp10 < minPow10 || exp10 > maxPow10 {
		return 0, false
	}
	clz := bits.LeadingZeros64(man)
	man <<= uint(clz)
	retExp2 := uint64(217706*exp10>>16+64+1023) - uint64(clz)
	pw := &pow10x128[exp10-minPow10]
	xHi, xLo := bits.Mul64(man, pw[0])
	// The product's low bits may carry into the rounding: a wider one.
	if xHi&0x1FF == 0x1FF && xLo+man < man {
		yHi, yLo := bits.Mul64(man, pw[1])
		mergedHi, mergedLo := xHi, xLo+yHi
		if mergedLo < xLo {
			mergedHi++
		}
		if mergedHi&0x1FF == 0x1FF && mergedLo+1 == 0 && yLo+man < man {
			return 0, false
		}
		xHi, xLo = mergedHi, mergedLo
	}
	msb := xHi >> 63
	retMantissa := xHi >> (msb + 9)
	retExp2 -= 1 ^ msb
	if xLo == 0 && xHi&0x1FF == 0 && retMantissa&3 == 1 {
		return 0, false // halfway: undecided
	}
	retMantissa += retMantissa & 1
	retMantissa >>= 1
	if retMantissa>>53 > 0 {
		retMantissa >>= 1
		retExp2++
	}
	if retExp2-1 >= 0x7FF-1 {
		return 0, false // subnormal, overflow: the exact parser
	}
	b := retExp2<<52 | retMantissa&(1<<52-1)
	if neg {
		b |= 1 << 63
	}
	return math.Float64frombits(b), true
}
