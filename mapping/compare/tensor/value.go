package tensor

import (
	"math"
	"strconv"

	"github.com/layermap/layermap/printparse/msprobe"
)

// The text markers msprobe writes into metric cells (CompareConst).
const (
	Unsupported  = "unsupported"     // no data, unmatched, empty, unreadable, 0-d
	ShapeUnmatch = "shape unmatched" // NPU and bench shapes differ
	NotAvailable = "N/A"             // NaN/inf at different positions
	NanText      = "Nan"             // metric undefined (zero norm, NaN result)
)

// Value is one metric cell: a Python float or one of msprobe's text
// markers.
type Value struct {
	text  string
	f     float64
	isNum bool
}

// Num is a numeric cell.
func Num(f float64) Value { return Value{f: f, isNum: true} }

// Text is a marker cell (Unsupported, ShapeUnmatch, NotAvailable, NanText).
func Text(s string) Value { return Value{text: s} }

// Float returns the number of a numeric cell; ok is false for markers.
// The Result/Err_message checkers fold numeric cells only (inf counts,
// "Nan"/"N/A"/"unsupported" are skipped).
func (v Value) Float() (f float64, ok bool) { return v.f, v.isNum }

// IsText reports whether the cell is the marker s.
func (v Value) IsText(s string) bool { return !v.isNum && v.text == s }

// String is the cell as msprobe's CSV holds it: Python repr for numbers,
// with ±inf written " inf"/" -inf" (the leading space msprobe adds before
// writing the CSV; use PyString for the xlsx, which keeps inf) and NaN as
// the empty cell pandas writes.
func (v Value) String() string {
	if !v.isNum {
		return v.text
	}
	return msprobe.PandasCSVFloat(v.f)
}

// PyString is Python's str() of the cell value (inf stays "inf").
func (v Value) PyString() string {
	if !v.isNum {
		return v.text
	}
	return msprobe.PyFloat(v.f)
}

// round12 is msprobe's format_value: float(f"{v:.12f}").
func round12(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return v
	}
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'f', 12, 64), 64)
	return r
}

// pyRound is Python's round(v, nd) for a float (correctly rounded, ties
// to even on the exact binary value).
func pyRound(v float64, nd int) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return v
	}
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'f', nd, 64), 64)
	return r
}
