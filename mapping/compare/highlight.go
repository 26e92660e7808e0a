package compare

import (
	"math"
	"strconv"
	"strings"
)

// Color is a row's highlight in the xlsx table.
type Color uint8

// Highlight colors (msprobe's -hl fills: red FFFF0000, yellow FFFF00).
const (
	NoColor Color = iota
	Yellow
	Red
)

// highlight colors the rows of one API group with msprobe's highlight
// rules (its -hl option; HEAD dropped the colors when the rule checkers
// replaced them, layermap keeps them for --xlsx). Red wins over yellow.
//
//   - every row: red when NPU max or min prints nan, inf or -inf, else red
//     when |Max diff| (statistics) or |MaxAbsErr| (tensor) exceeds 1e10;
//   - each output row not red, against every input/parameter row, where
//     NPU max, Bench max and that difference are numbers on both: yellow when
//     the difference grew by an order of magnitude (both > 1); tensor mode:
//     red when One Thousandth Err Ratio goes from > 0.9 to < 0.6, else
//     yellow when it drops by more than 0.1, yellow when Cosine drops by
//     more than 0.1; statistics mode: red when the output MaxRelativeErr is
//     over 50 %, yellow when it is over 10 % while the input's is under 1 %;
//   - every row: yellow when requires_grad differs.
//
// md5 tables are not colored.
func highlight(mode Mode, group []*outRow, sc *scratch) {
	for _, r := range group {
		r.color = NoColor
	}
	if mode == MD5 {
		return
	}
	diff := func(r *outRow) (float64, bool) {
		if mode == Tensor {
			return r.met[2].Value, r.met[2].IsNum
		}
		return r.nums[0].diff, r.nums[0].diffOK
	}
	for _, r := range group {
		switch {
		case nanInfText(&r.ncell[0]) || nanInfText(&r.ncell[1]):
			r.color = Red
		default:
			if d, ok := diff(r); ok && math.Abs(d) > 1e10 {
				r.color = Red
			}
		}
	}
	usable := func(r *outRow) bool {
		_, ok := diff(r)
		return ok && r.ncell[0].isNum() && r.bcell[0].isNum()
	}
	inputs := sc.inputs[:0]
	for _, r := range group {
		if !r.output && usable(r) {
			inputs = append(inputs, r)
		}
	}
	sc.inputs = inputs
	for _, o := range group {
		if !o.output || o.color == Red || !usable(o) {
			continue
		}
		od, _ := diff(o)
		for _, in := range inputs {
			id, _ := diff(in)
			a, b := math.Abs(id), math.Abs(od)
			if a <= b && a > 1 && b > 1 && math.Log10(b)-math.Log10(a) >= 1 {
				o.raise(Yellow)
			}
			if mode == Tensor {
				it, iok := in.met[4].num()
				ot, ook := o.met[4].num()
				if iok && ook {
					if it > 0.9 && ot < 0.6 {
						o.raise(Red)
					} else if it-ot > 0.1 {
						o.raise(Yellow)
					}
				}
				ic, iok := in.met[0].num()
				oc, ook := o.met[0].num()
				if iok && ook && ic-oc > 0.1 {
					o.raise(Yellow)
				}
				continue
			}
			ir, iok := in.nums[0].pct, in.nums[0].pctOK
			or, ook := o.nums[0].pct, o.nums[0].pctOK
			if iok && ook {
				if or > 0.5 {
					o.raise(Red)
				} else if or > 0.1 && ir < 0.01 {
					o.raise(Yellow)
				}
			}
		}
	}
	for _, r := range group {
		brg := r.benchReqGrad()
		if r.npuReqGrad() != brg {
			r.raise(Yellow)
		}
	}
}

func (r *outRow) raise(c Color) {
	if c > r.color {
		r.color = c
	}
}

// nanInfText reports whether the cell prints nan, inf or -inf.
func nanInfText(c *cell) bool {
	switch c.k {
	case cFloat:
		return math.IsInf(c.f, 0) || math.IsNaN(c.f)
	case cStr:
		return isNanInfText(c.s)
	}
	return false
}

func isNanInfText(s string) bool {
	s = strings.TrimSuffix(s, "\t")
	return s == "nan" || s == "inf" || s == "-inf"
}

// numText parses a diff cell that holds a number ("0", "-1.0", "inf").
func numText(s string) (float64, bool) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) {
		return 0, false
	}
	return v, true
}
