package compare

import (
	"math"
	"math/big"
	"slices"
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
	k  cellKind
	b  bool
	rn uint8   // length of r
	f  float64 // cInt (as float), cFloat
	s  string  // cInt literal, cStr text, cFloat repr when the dump's literal is it (setStat)
	r  [24]byte
}

// text is a short cell text held inline (a diff, a relative error): no
// allocation per row.
type text struct {
	n uint8
	b [27]byte
}

func (t *text) set(s string) { t.n = uint8(copy(t.b[:], s)) }

func (t *text) bytes() []byte { return t.b[:t.n] }

func (t *text) String() string { return string(t.b[:t.n]) }

// appendTo appends the text: its whole array is copied past dst's length
// (a fixed-size copy, no call), then dst is cut to the text's length.
func (t *text) appendTo(dst []byte) []byte {
	k := len(dst)
	if cap(dst)-k < len(t.b) {
		dst = slices.Grow(dst, len(t.b))
	}
	*(*[len(t.b)]byte)(dst[k : k+len(t.b)]) = t.b
	return dst[:k+int(t.n)]
}

var naCell = cell{k: cNA}

// fromValue converts a dump value the way msprobe's set_summary sees it.
func fromValue(v msprobe.Value) cell {
	switch k := kindOf(v); k {
	case cBool:
		return cell{k: k, b: v.Bool}
	case cStr:
		return cell{k: k, s: v.Text}
	case cInt:
		f := v.Num
		if f == 0 {
			f = 0 // an int has no negative zero, as a float either
		}
		return cell{k: k, f: f, s: pyIntText(v.Text)}
	case cFloat:
		switch v.Kind {
		case msprobe.PosInf:
			return cell{k: k, f: math.Inf(1)}
		case msprobe.NegInf:
			return cell{k: k, f: math.Inf(-1)}
		}
		return cell{k: k, f: v.Num}
	default:
		return cell{k: k}
	}
}

// pyIntText is Python's str() of the int a JSON int literal reads as: -0
// is 0 (JSON allows no other leading zero).
func pyIntText(t string) string {
	if t == "-0" {
		return "0"
	}
	return t
}

// kindOf is the kind of fromValue(v).
func kindOf(v msprobe.Value) cellKind {
	switch v.Kind {
	case msprobe.Bool:
		return cBool
	case msprobe.String:
		if strings.EqualFold(v.Text, "nan") {
			return cNaN // set_summary: str(i).lower() == 'nan' is "Nan"
		}
		return cStr
	case msprobe.NaN:
		return cNaN
	case msprobe.PosInf, msprobe.NegInf:
		return cFloat
	case msprobe.Number:
		if isIntLiteral(v.Text) {
			return cInt
		}
		if math.IsNaN(v.Num) {
			return cNaN
		}
		return cFloat
	}
	return cNone
}

func isIntLiteral(t string) bool {
	if t == "" {
		return false
	}
	i := 0
	if t[0] == '-' || t[0] == '+' {
		i = 1
	}
	for ; i < len(t); i++ {
		if t[i]-'0' > 9 {
			return false
		}
	}
	return true
}

// withRepr caches the Python repr of a float cell.
func (c cell) withRepr() cell {
	if c.k == cFloat && c.rn == 0 && c.s == "" {
		c.rn = uint8(len(msprobe.AppendPyFloat(c.r[:0], c.f)))
	}
	return c
}

// setStat sets c to the cell of statistic i of row s, with its repr; float
// turns an int into a float (pandas made the column float64). A float
// fastStats found written as its repr takes its literal.
func (c *cell) setStat(s *sideRow, i int, float bool) {
	v := &s.it.Stats[i]
	if s.fast&(1<<i) != 0 {
		*c = cell{k: cFloat, f: v.Num, s: v.Text}
		return
	}
	*c = fromValue(*v)
	if float {
		*c = c.asFloat()
	}
	*c = c.withRepr()
}

// fastStats tells which statistics of it are floats written as their
// Python repr, as json.dump writes them (Value.Repr, bit i for Stats[i]):
// their cells then take the literal as the repr instead of formatting the
// float (setStat). A row gets it where the dump is decoded off the join's
// goroutine (the NPU stream, the bench lookahead and prefetcher); the
// cells of the others are worked out. What pandas reads the repr back as
// (number) is left to the few cells whose value is asked for: most are
// equal to their pair's or have none.
func fastStats(it *msprobe.Item) uint8 {
	var fast uint8
	for i := range it.Stats {
		if v := &it.Stats[i]; v.Repr && v.Kind == msprobe.Number && len(v.Text) <= len(cell{}.r) {
			fast |= 1 << i
		}
	}
	return fast
}

// appendStr appends Python's str() of the cell.
func (c *cell) appendStr(dst []byte) []byte {
	switch c.k {
	case cNA:
		return append(dst, "N/A"...)
	case cInt, cStr:
		return append(dst, c.s...)
	case cFloat:
		if c.s != "" {
			return append(dst, c.s...)
		}
		if c.rn > 0 {
			return append(dst, c.r[:c.rn]...)
		}
		return msprobe.AppendPyFloat(dst, c.f)
	case cBool:
		if c.b {
			return append(dst, "True"...)
		}
		return append(dst, "False"...)
	case cNone:
		return append(dst, "None"...)
	case cNaN:
		return append(dst, "Nan"...)
	}
	return dst
}

// appendCSV appends the cell as msprobe's CSV writes it (see csv).
func (c *cell) appendCSV(dst []byte) []byte {
	if c.k == cFloat && c.s != "" && !math.IsInf(c.f, 0) {
		return append(dst, c.s...)
	}
	if c.k == cFloat && c.rn > 0 && !math.IsInf(c.f, 0) {
		// the cached repr, copied as appendTo copies a text
		k := len(dst)
		if cap(dst)-k < len(c.r) {
			dst = slices.Grow(dst, len(c.r))
		}
		*(*[len(c.r)]byte)(dst[k : k+len(c.r)]) = c.r
		return dst[:k+int(c.rn)]
	}
	switch {
	case c.k == cFloat && math.IsInf(c.f, 1):
		return append(dst, " inf"...)
	case c.k == cFloat && math.IsInf(c.f, -1):
		return append(dst, " -inf"...)
	case c.k == cStr:
		return appendCSVField(dst, c.s)
	}
	return c.appendStr(dst)
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
func (c cell) isNum() bool { return c.k.isNum() }

// isNum reports whether the kind is a Python int or float.
func (k cellKind) isNum() bool { return k == cInt || k == cFloat }

// str is Python's str() of the cell.
func (c cell) str() string {
	switch c.k {
	case cNA:
		return "N/A"
	case cInt:
		return c.s
	case cFloat:
		if c.s != "" {
			return c.s
		}
		if c.rn > 0 {
			return string(c.r[:c.rn]) // repr cached by withRepr
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
func (c *cell) infNaN() bool {
	if c.k == cFloat {
		return c.f-c.f != 0 // inf or nan
	}
	return c.k == cNaN || c.k == cStr && strInfNaN(c.s)
}

// finite reports whether c is a finite float (then not infNaN).
func (c *cell) finite() bool { return c.k == cFloat && c.f-c.f == 0 }

// strInfNaN is infNaN of a string cell's text.
func strInfNaN(s string) bool {
	s = strings.ToLower(strings.TrimSpace(s))
	return s == "inf" || s == "-inf" || s == "nan"
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
	if a.k == cInt && b.k == cFloat {
		return intEqualsFloat(a.s, b.f)
	}
	if a.k == cFloat && b.k == cInt {
		return intEqualsFloat(b.s, a.f)
	}
	x, okx := num(a)
	y, oky := num(b)
	if okx || oky {
		return okx && oky && x == y
	}
	var ba, bb [64]byte
	return string(a.appendStr(ba[:0])) == string(b.appendStr(bb[:0]))
}

// intEqualsFloat is Python's int == float: exact, whatever the int's size.
func intEqualsFloat(i string, f float64) bool {
	if v, err := strconv.ParseInt(i, 10, 64); err == nil && v > -1<<53 && v < 1<<53 {
		return float64(v) == f // exact in a float64
	}
	if math.IsInf(f, 0) || math.IsNaN(f) || f != math.Trunc(f) {
		return false
	}
	var n big.Int
	if _, ok := n.SetString(i, 10); !ok {
		return false
	}
	fi, _ := new(big.Float).SetFloat64(f).Int(nil)
	return fi.Cmp(&n) == 0
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

func classify(c *cell) valClass {
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
	// a string ("nan" in any case is cNaN)
	ls := strings.ToLower(c.s)
	switch {
	case ls == "inf":
		return vInf
	case ls == "-inf":
		return vNegInf
	case ls != "true" && ls != "false":
		if _, _, ok := pandasParse(c.s); ok {
			return vNum
		}
	}
	if strings.Contains(ls, "npu") || strings.Contains(ls, "cpu") || strings.Contains(ls, "cuda") {
		return vDevice
	}
	if c.s == "N/A" {
		return vNA
	}
	return vOther
}

// number is pandas.to_numeric(str(cell)) for a cell classified vNum.
func number(c *cell) float64 {
	switch c.k {
	case cFloat:
		if c.s != "" {
			return reprNumber(c.s, c.f)
		}
		if c.rn > 0 {
			return reprNumber(c.r[:c.rn], c.f)
		}
		var buf [24]byte
		v, _, _ := xstrtod(msprobe.AppendPyFloat(buf[:0], c.f))
		return v
	case cInt:
		v, _, _ := pandasParse(c.s)
		return v
	}
	v, _, _ := pandasParse(c.str())
	return v
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

// numRead is how get_number (to_numeric of a column's str) reads one
// side's statistics column.
type numRead uint8

const (
	// readFloat: float64, each text read by xstrtod. A column holding
	// anything but ints, one printed as floats, or one with an int past
	// both int64 and uint64, or past int64 beside a negative one.
	readFloat  numRead = iota
	readInt64          // every cell an int within int64: exact
	readUint64         // every cell an int, none negative, one past int64: exact
)

// colRead is how a statistic's NPU and bench columns are read. Two int64
// columns subtract as int64 and two uint64 ones as uint64 (wrapping, as
// numpy's do, and printed as ints); any other pair subtracts as float64.
type colRead struct{ npu, bench numRead }

// exactRead is an int cell's value read as kind k, as the bits of a
// uint64 (an int64's two's complement), when k reads it exactly.
func exactRead(c *cell, k numRead) (uint64, bool) {
	if c.k != cInt {
		return 0, false
	}
	switch k {
	case readInt64:
		v, err := strconv.ParseInt(c.s, 10, 64)
		return uint64(v), err == nil
	case readUint64:
		v, err := strconv.ParseUint(c.s, 10, 64)
		return v, err == nil
	}
	return 0, false
}

// float is an exact reading of kind k as the float64 numpy converts it to.
func (k numRead) float(v uint64) float64 {
	if k == readUint64 {
		return float64(v)
	}
	return float64(int64(v))
}

// statDiffInto computes one "<S> diff" and "<S>RelativeErr" pair as
// msprobe's CalcStatsDiff does, into d and rel, and returns the numbers
// the rule checkers and highlight rules read back from their text. rd is
// how pandas reads the two columns.
func statDiffInto(a, b *cell, rd colRead, d, rel *text) statNums {
	if sameStr(a, b) {
		d.set("0")
		rel.set("0")
		return statNums{diffOK: true}
	}
	ca, cb := vNum, vNum // two finite floats, the common case
	if a.k != cFloat || b.k != cFloat || a.f-a.f != 0 || b.f-b.f != 0 {
		ca, cb = classify(a), classify(b)
	}
	if ca == vNum && cb == vNum {
		var x, y float64
		xv, xok := exactRead(a, rd.npu)
		if xok {
			x = rd.npu.float(xv) // an int to float64 in the subtraction: rounded once
		} else {
			x = number(a)
		}
		yv, yok := exactRead(b, rd.bench)
		if yok {
			y = rd.bench.float(yv)
		} else {
			y = number(b)
		}
		dv := float64(x - y)
		switch {
		case xok && yok && rd.npu == rd.bench && rd.npu == readInt64:
			di := int64(xv - yv) // wrapping as numpy's does
			dv = float64(di)
			d.n = uint8(len(strconv.AppendInt(d.b[:0], di, 10)))
		case xok && yok && rd.npu == rd.bench:
			du := xv - yv
			dv = float64(du)
			d.n = uint8(len(strconv.AppendUint(d.b[:0], du, 10)))
		default:
			d.n = uint8(len(msprobe.AppendPyFloat(d.b[:0], dv)))
		}
		n := statNums{diff: dv, diffOK: !math.IsNaN(dv)}
		if y == 0 {
			rel.set("inf")
			n.relF = math.Inf(1)
			return n
		}
		r := math.Abs(float64(float64(dv/y) * 100))
		rel.n = uint8(len(append(msprobe.AppendPyFloat(rel.b[:0], r), '%')))
		n.pct, n.pctOK, n.relF = r/100, true, r/100
		return n
	}
	s := diffRule(ca, cb)
	d.set(s)
	rel.set(s)
	switch s {
	case "inf":
		return statNums{diff: math.Inf(1), diffOK: true, relF: math.Inf(1)}
	case "-inf":
		return statNums{diff: math.Inf(-1), diffOK: true, relF: math.Inf(-1)}
	case "Nan":
		return statNums{relF: math.NaN()}
	}
	return statNums{}
}

// statDiff is statDiffInto as two strings.
func statDiff(a, b cell, rd colRead) (string, string) {
	var d, rel text
	statDiffInto(&a, &b, rd, &d, &rel)
	return d.String(), rel.String()
}

// diffRule is msprobe's rule table for a pair of cells whose texts differ
// and that are not both numbers: the text of both cells.
func diffRule(ca, cb valClass) string {
	if ca == vNA || cb == vNA {
		return "N/A"
	}
	switch ca {
	case vNum:
		switch cb {
		case vNaN:
			return "Nan"
		case vInf:
			return "-inf"
		case vNegInf:
			return "inf"
		}
	case vNaN:
		switch cb {
		case vNum, vNaN, vInf, vNegInf:
			return "Nan"
		}
	case vInf:
		switch cb {
		case vNum, vNegInf:
			return "inf"
		case vNaN:
			return "Nan"
		case vInf:
			return "N/A"
		}
	case vNegInf:
		switch cb {
		case vNum, vInf:
			return "-inf"
		case vNaN:
			return "Nan"
		case vNegInf:
			return "N/A"
		}
	case vDevice:
		if cb == vDevice {
			return "N/A"
		}
	}
	return "Diff"
}

// sameStr is a.str() == b.str() without formatting the common cases.
func sameStr(a, b *cell) bool {
	switch {
	case a.k == cFloat && b.k == cFloat:
		// repr is unique per value; only the zero sign differs in text.
		return a.f == b.f && math.Signbit(a.f) == math.Signbit(b.f)
	case a.k == cInt && b.k == cInt:
		return a.s == b.s
	case (a.k == cInt || a.k == cFloat) && (b.k == cInt || b.k == cFloat):
		return false // "1" is never "1.0"
	}
	var ba, bb [64]byte
	return string(a.appendStr(ba[:0])) == string(b.appendStr(bb[:0]))
}
