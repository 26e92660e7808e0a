package compare

import (
	"math"
	"strconv"
	"strings"

	"github.com/layermap/layermap/printparse/msprobe"
)

// cellKind tells what Python value a statistics cell holds in msprobe's
// table.
type cellKind uint8

const (
	cNA    cellKind = iota // the string "N/A" (no bench data)
	cInt                   // a Python int
	cFloat                 // a Python float (finite, or ±inf)
	cBool                  // a Python bool
	cStr                   // a string
	cNone                  // str(None) == "None" (JSON null)
	cNaN                   // the string "Nan" msprobe writes for NaN
)

// cell is one Max/Min/Mean/Norm value of a row.
type cell struct {
	k cellKind
	f float64 // cInt (as float), cFloat
	s string  // cInt literal, cStr text
	b bool
}

var naCell = cell{k: cNA}

// fromValue converts a dump value the way msprobe's set_summary sees it.
func fromValue(v msprobe.Value) cell {
	switch v.Kind {
	case msprobe.Null:
		return cell{k: cNone}
	case msprobe.Bool:
		return cell{k: cBool, b: v.Bool}
	case msprobe.String:
		return cell{k: cStr, s: v.Text}
	case msprobe.NaN:
		return cell{k: cNaN}
	case msprobe.PosInf:
		return cell{k: cFloat, f: math.Inf(1)}
	case msprobe.NegInf:
		return cell{k: cFloat, f: math.Inf(-1)}
	case msprobe.Number:
		if isIntLiteral(v.Text) {
			t := v.Text
			if t == "-0" {
				t = "0"
			}
			return cell{k: cInt, f: v.Num, s: t}
		}
		if math.IsNaN(v.Num) {
			return cell{k: cNaN}
		}
		return cell{k: cFloat, f: v.Num}
	}
	return cell{k: cNone}
}

func isIntLiteral(t string) bool {
	if t == "" {
		return false
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		if (c < '0' || c > '9') && !(i == 0 && (c == '-' || c == '+')) {
			return false
		}
	}
	return true
}

// withRepr caches the Python repr of a float cell.
func (c cell) withRepr() cell {
	if c.k == cFloat && c.s == "" {
		c.s = msprobe.PyFloat(c.f)
	}
	return c
}

// asFloat turns an int cell into a float cell (pandas turned the column
// into float64).
func (c cell) asFloat() cell {
	if c.k == cInt {
		return cell{k: cFloat, f: c.f}
	}
	return c
}

// isNum reports whether the cell is a Python int or float.
func (c cell) isNum() bool { return c.k == cInt || c.k == cFloat }

// str is Python's str() of the cell.
func (c cell) str() string {
	switch c.k {
	case cNA:
		return "N/A"
	case cInt:
		return c.s
	case cFloat:
		if c.s != "" {
			return c.s // repr cached by withRepr
		}
		return msprobe.PyFloat(c.f)
	case cBool:
		if c.b {
			return "True"
		}
		return "False"
	case cStr:
		return c.s
	case cNone:
		return "None"
	case cNaN:
		return "Nan"
	}
	return ""
}

// csv is the cell as msprobe's CSV writes it: float infinities get a
// leading space.
func (c cell) csv() string {
	if c.k == cFloat && math.IsInf(c.f, 0) {
		return msprobe.PandasCSVFloat(c.f)
	}
	return c.str()
}

// infNaN is msprobe's check for nan/inf in a max or min cell.
func (c cell) infNaN() bool {
	switch c.k {
	case cFloat:
		return math.IsInf(c.f, 0) || math.IsNaN(c.f)
	case cNaN:
		return true
	case cStr:
		s := strings.ToLower(strings.TrimSpace(c.s))
		return s == "inf" || s == "-inf" || s == "nan"
	}
	return false
}

// pyEqual is Python's == between two cells' values.
func pyEqual(a, b cell) bool {
	num := func(c cell) (float64, bool) {
		switch c.k {
		case cInt, cFloat:
			return c.f, true
		case cBool:
			if c.b {
				return 1, true
			}
			return 0, true
		}
		return 0, false
	}
	if a.k == cInt && b.k == cInt {
		return a.s == b.s
	}
	x, okx := num(a)
	y, oky := num(b)
	if okx || oky {
		return okx && oky && x == y
	}
	return a.str() == b.str()
}

// valClass is msprobe's classification of a statistics cell for the diff
// rules (stats_diff_calc.ValType).
type valClass uint8

const (
	vNum valClass = iota
	vNaN
	vInf
	vNegInf
	vDevice
	vNA
	vOther
)

func classify(c cell) valClass {
	switch c.k {
	case cInt:
		return vNum
	case cFloat:
		switch {
		case math.IsInf(c.f, 1):
			return vInf
		case math.IsInf(c.f, -1):
			return vNegInf
		case math.IsNaN(c.f):
			return vNaN
		}
		return vNum
	case cNaN:
		return vNaN
	case cNA:
		return vNA
	case cNone, cBool:
		return vOther // "None", "True", "False"
	}
	s := c.str()
	ls := strings.ToLower(s)
	switch {
	case ls == "nan":
		return vNaN
	case (c.k == cFloat && math.IsInf(c.f, 1)) || ls == "inf":
		return vInf
	case (c.k == cFloat && math.IsInf(c.f, -1)) || ls == "-inf":
		return vNegInf
	}
	if ls != "true" && ls != "false" {
		switch c.k {
		case cInt, cFloat:
			return vNum
		case cStr:
			if _, _, ok := pandasParse(c.s); ok {
				return vNum
			}
		}
	}
	if strings.Contains(ls, "npu") || strings.Contains(ls, "cpu") || strings.Contains(ls, "cuda") {
		return vDevice
	}
	if s == "N/A" {
		return vNA
	}
	return vOther
}

// number is pandas.to_numeric(str(cell)) for a cell classified vNum.
func number(c cell) (float64, bool) {
	v, isInt, _ := pandasParse(c.str())
	return v, isInt
}

// statNums are the numbers the rule checkers and highlight rules read
// back from a diff pair's text, kept so that they need not parse it.
type statNums struct {
	diff   float64 // the diff as a number (float(text)), when diffOK
	diffOK bool
	pct    float64 // "x%" as x/100, when pctOK (minOrMax)
	pctOK  bool
	relF   float64 // msprobe's str2float of the relative error text
}

// statDiffNums is statDiff plus the numbers of its text, derived from the
// values rather than parsed back.
func statDiffNums(a, b cell, intCol bool) (string, string, statNums) {
	d, rel, x, y, computed := statDiffRule(a, b, intCol)
	if computed {
		dv := float64(x - y)
		if intCol {
			dv = float64(int64(x) - int64(y))
		}
		n := statNums{diff: dv, diffOK: !math.IsNaN(dv)}
		if y == 0 {
			n.relF = math.Inf(1)
		} else {
			r := math.Abs(float64(float64(dv/y) * 100))
			n.pct, n.pctOK, n.relF = r/100, true, r/100
		}
		return d, rel, n
	}
	switch d {
	case "0":
		return d, rel, statNums{diffOK: true}
	case "inf":
		return d, rel, statNums{diff: math.Inf(1), diffOK: true, relF: math.Inf(1)}
	case "-inf":
		return d, rel, statNums{diff: math.Inf(-1), diffOK: true, relF: math.Inf(-1)}
	case "Nan":
		return d, rel, statNums{relF: math.NaN()}
	}
	return d, rel, statNums{}
}

// statDiff computes one "<S> diff" and "<S>RelativeErr" pair as
// msprobe's CalcStatsDiff does. intCol is true when pandas parsed both
// whole columns as integers.
func statDiff(a, b cell, intCol bool) (string, string) {
	d, rel, _, _, _ := statDiffRule(a, b, intCol)
	return d, rel
}

// statDiffRule is statDiff; computed tells that the pair went through the
// NUM×NUM rule with pandas-parsed values x and y.
func statDiffRule(a, b cell, intCol bool) (string, string, float64, float64, bool) {
	if sameStr(a, b) {
		return "0", "0", 0, 0, false
	}
	ca, cb := classify(a), classify(b)
	if ca == vNA || cb == vNA {
		return "N/A", "N/A", 0, 0, false
	}
	switch ca {
	case vNum:
		switch cb {
		case vNum:
			x, _ := number(a)
			y, _ := number(b)
			d := float64(x - y)
			var ds string
			if intCol {
				ds = strconv.FormatInt(int64(x)-int64(y), 10)
			} else {
				ds = msprobe.PyFloat(d)
			}
			if y == 0 {
				return ds, "inf", x, y, true
			}
			r := math.Abs(float64(float64(d/y) * 100))
			return ds, msprobe.PyFloat(r) + "%", x, y, true
		case vNaN:
			return "Nan", "Nan", 0, 0, false
		case vInf:
			return "-inf", "-inf", 0, 0, false
		case vNegInf:
			return "inf", "inf", 0, 0, false
		}
		return "Diff", "Diff", 0, 0, false
	case vNaN:
		switch cb {
		case vNum, vNaN, vInf, vNegInf:
			return "Nan", "Nan", 0, 0, false
		}
		return "Diff", "Diff", 0, 0, false
	case vInf:
		switch cb {
		case vNum, vNegInf:
			return "inf", "inf", 0, 0, false
		case vNaN:
			return "Nan", "Nan", 0, 0, false
		case vInf:
			return "N/A", "N/A", 0, 0, false
		}
		return "Diff", "Diff", 0, 0, false
	case vNegInf:
		switch cb {
		case vNum, vInf:
			return "-inf", "-inf", 0, 0, false
		case vNaN:
			return "Nan", "Nan", 0, 0, false
		case vNegInf:
			return "N/A", "N/A", 0, 0, false
		}
		return "Diff", "Diff", 0, 0, false
	case vDevice:
		if cb == vDevice {
			return "N/A", "N/A", 0, 0, false
		}
		return "Diff", "Diff", 0, 0, false
	}
	return "Diff", "Diff", 0, 0, false
}

// sameStr is a.str() == b.str() without formatting the common cases.
func sameStr(a, b cell) bool {
	switch {
	case a.k == cFloat && b.k == cFloat:
		// repr is unique per value; only the zero sign differs in text.
		return a.f == b.f && math.Signbit(a.f) == math.Signbit(b.f)
	case a.k == cInt && b.k == cInt:
		return a.s == b.s
	case (a.k == cInt || a.k == cFloat) && (b.k == cInt || b.k == cFloat):
		return false // "1" is never "1.0"
	}
	return a.str() == b.str()
}
