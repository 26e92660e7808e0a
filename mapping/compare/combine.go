package compare

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/layermap/layermap/printparse/msprobe"
)

// How the rows of an N:1 group's parts make the row of its single module.
//
// The statistics of a concatenation follow from its parts: Max and Min
// of all, Mean weighted by element count, Norm = sqrt(Σ norm²), the shape
// summed along the concatenated axis. They do not depend on the order of
// the elements, so any layout of the parts (q, k and v blocked or
// interleaved per head group, experts' tokens in any order) gives the
// same four numbers. A sum of the parts (the gradient of an input that
// every part reads) has no such rule: its statistics are not in the
// dump; in tensor mode the tensors are summed.
type combineHow uint8

const (
	howNone   combineHow = iota // no exact combination: the row is compared as "inputs only"
	howSame                     // every part holds the whole's value (an input all parts read)
	howConcat                   // the whole is the parts concatenated along axis
	howSum                      // the whole is the parts' elementwise sum
)

// combination is how one row of a group is combined: the rule and, for a
// concatenation, the axis (stack: a new leading axis).
type combination struct {
	how   combineHow
	axis  int
	stack bool
}

// rowRole is what a row holds, as the combination rules see it.
type rowRole uint8

const (
	roleInput     rowRole = iota // forward inputs and kwargs
	roleOutput                   // forward outputs
	roleParam                    // parameters (forward)
	roleGradOut                  // backward inputs: the gradients of the outputs
	roleGradIn                   // backward outputs: the gradients of the inputs
	roleParamGrad                // parameters_grad
)

// roleOf is the role of a row of an entry of direction dir.
func roleOf(it *msprobe.Item, dir string) rowRole {
	switch it.State {
	case msprobe.StateParametersGrad:
		return roleParamGrad
	case msprobe.StateParameters:
		return roleParam
	case msprobe.StateOutput:
		if dir == "backward" {
			return roleGradIn
		}
		return roleOutput
	}
	if dir == "backward" {
		return roleGradOut
	}
	return roleInput
}

// wants is the rule a group kind applies to a role before the shapes are
// looked at. Grouped experts split the tokens: every tensor of the whole
// is its experts' tensors concatenated. A fused projection (gate/up, qkv,
// any other) reads one input and concatenates its outputs, weights and
// output gradients; the gradient of its input is the sum of the parts'.
func wants(kind string, r rowRole) combineHow {
	if kind == kindExperts {
		return howConcat
	}
	switch r {
	case roleInput:
		return howSame
	case roleGradIn:
		return howSum
	}
	return howConcat
}

// Group kinds as the summary counts them: the sidecar's, and
// tensor-parallel shards.
const (
	kindGateUp  = "gate_up"
	kindQKV     = "qkv"
	kindExperts = "experts"
	kindFused   = "fused"
	kindTP      = "tp"
)

// parseShape reads a tensor's shape text ("[4, 2048]", "[]"); ok false
// for anything else (None, a slice's tuple).
func parseShape(s string) ([]int, bool) {
	if !strings.HasPrefix(s, "[") {
		return nil, false
	}
	return msprobe.ParseShape(s)
}

func numel(d []int) int {
	n := 1
	for _, x := range d {
		n *= x
	}
	return n
}

// concatAxis finds the axis along which parts concatenate to whole: same
// rank, the same sizes elsewhere, sizes adding up along it; or a stack
// (whole has one leading axis more, of the parts' count). ok false when
// no axis fits, or more than one does.
func concatAxis(whole []int, parts [][]int) (c combination, ok bool) {
	found := -1
	for a := range whole {
		if sum, fits := axisFit(whole, parts, a); fits && sum == whole[a] {
			if found >= 0 {
				return c, false
			}
			found = a
		}
	}
	if found >= 0 {
		return combination{how: howConcat, axis: found}, true
	}
	if len(whole) > 0 && whole[0] == len(parts) && stackFits(whole, parts) {
		return combination{how: howConcat, stack: true}, true
	}
	return c, false
}

// axisFit reports whether every part has whole's sizes on every axis but
// a, and the sum of their sizes along a.
func axisFit(whole []int, parts [][]int, a int) (sum int, fits bool) {
	for _, p := range parts {
		if len(p) != len(whole) {
			return 0, false
		}
		for i := range p {
			if i != a && p[i] != whole[i] {
				return 0, false
			}
		}
		sum += p[a]
	}
	return sum, true
}

// stackFits reports whether every part has whole's shape without its
// first axis (whole stacks them).
func stackFits(whole []int, parts [][]int) bool {
	for _, p := range parts {
		if !slices.Equal(p, whole[1:]) {
			return false
		}
	}
	return true
}

// sameShapes reports whether every part has whole's shape text.
func sameShapes(whole string, parts []*msprobe.Item) bool {
	for _, p := range parts {
		if p.Shape != whole {
			return false
		}
	}
	return true
}

// decide picks the combination of one row: the kind's rule if the shapes
// allow it (whole is the single module's row, parts the parts' rows);
// otherwise a concatenation the shapes show (an input the parts split),
// else none.
func decide(kind string, r rowRole, whole *msprobe.Item, parts []*msprobe.Item) combination {
	if len(parts) == 0 {
		return combination{}
	}
	w := wants(kind, r)
	if kind == kindTP {
		// shards: a tensor every rank holds whole, or one split
		w = howConcat
		if sameShapes(whole.Shape, parts) {
			w = howSame
		}
	}
	if (w == howSame || w == howSum) && sameShapes(whole.Shape, parts) {
		return combination{how: w}
	}
	ws, ok := parseShape(whole.Shape)
	if !ok {
		return combination{}
	}
	ps := make([][]int, len(parts))
	for i, p := range parts {
		if ps[i], ok = parseShape(p.Shape); !ok {
			return combination{}
		}
	}
	if c, ok := concatAxis(ws, ps); ok {
		return c
	}
	return combination{}
}

// combinedShape is the shape text of parts combined by c.
func combinedShape(c combination, parts []*msprobe.Item) string {
	if c.how != howConcat {
		return parts[0].Shape
	}
	first, _ := parseShape(parts[0].Shape)
	if c.stack {
		return msprobe.FormatShape(append([]int{len(parts)}, first...))
	}
	out := append([]int(nil), first...)
	out[c.axis] = 0
	for _, p := range parts {
		d, _ := parseShape(p.Shape)
		out[c.axis] += d[c.axis]
	}
	return msprobe.FormatShape(out)
}

// statNum reads one statistic as a float: numbers, NaN and ±inf.
func statNum(v msprobe.Value) (float64, bool) {
	switch v.Kind {
	case msprobe.Number:
		return v.Num, true
	case msprobe.NaN:
		return math.NaN(), true
	case msprobe.PosInf:
		return math.Inf(1), true
	case msprobe.NegInf:
		return math.Inf(-1), true
	}
	return 0, false
}

// numValue is a computed statistic as a dump value.
func numValue(f float64, intText bool) msprobe.Value {
	switch {
	case math.IsNaN(f):
		return msprobe.Value{Kind: msprobe.NaN, Num: f}
	case math.IsInf(f, 1):
		return msprobe.Value{Kind: msprobe.PosInf, Num: f}
	case math.IsInf(f, -1):
		return msprobe.Value{Kind: msprobe.NegInf, Num: f}
	}
	v := msprobe.Value{Kind: msprobe.Number, Num: f}
	if intText && f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		v.Text = strconv.FormatInt(int64(f), 10)
	}
	return v
}

// combineStats computes the statistics of parts concatenated (Max, Min,
// Mean by element count, Norm as the root of the summed squares); ok
// false when a part's statistic is not a number or a shape unreadable.
// Parts without elements add nothing.
func combineStats(parts []*msprobe.Item) (stats [4]msprobe.Value, ok bool) {
	mx, mn, sum, sq := math.Inf(-1), math.Inf(1), 0.0, 0.0
	n, used := 0, 0
	nan := false
	ints := [2]bool{true, true}
	for _, p := range parts {
		d, ok := parseShape(p.Shape)
		if !ok {
			return stats, false
		}
		k := numel(d)
		if k == 0 {
			continue
		}
		var v [4]float64
		for i := range v {
			if v[i], ok = statNum(p.Stats[i]); !ok {
				return stats, false
			}
		}
		for i := 0; i < 2; i++ {
			ints[i] = ints[i] && isIntLiteral(p.Stats[i].Text)
		}
		if math.IsNaN(v[0]) || math.IsNaN(v[1]) {
			nan = true
		}
		mx, mn = math.Max(mx, v[0]), math.Min(mn, v[1])
		sum += v[2] * float64(k)
		sq += v[3] * v[3]
		n += k
		used++
	}
	if used == 0 {
		return stats, false
	}
	if nan {
		mx, mn = math.NaN(), math.NaN()
	}
	return [4]msprobe.Value{numValue(mx, ints[0]), numValue(mn, ints[1]), numValue(sum/float64(n), false), numValue(math.Sqrt(sq), false)}, true
}

// combinedItem is the row of parts combined by c, named name (see
// groupName): statistics and shape combined, the rest the first part's.
// ok false when the statistics cannot be combined (statistics and md5
// modes; tensor mode compares the tensors and only needs the shape).
func combinedItem(c combination, parts []*msprobe.Item, name string, needStats bool) (msprobe.Item, bool) {
	it := *parts[0]
	it.Name = name
	it.Shape = combinedShape(c, parts)
	it.DataName = ""
	if parts[0].DataName != "" && parts[0].DataName != "-1" {
		dn := make([]*msprobe.Item, len(parts))
		for i, p := range parts {
			dn[i] = &msprobe.Item{Name: p.DataName}
		}
		it.DataName = groupName(dn)
	}
	switch c.how {
	case howConcat:
		s, ok := combineStats(parts)
		if !ok && needStats {
			return it, false
		}
		it.Stats = s
	case howSum:
		if needStats {
			return it, false
		}
	}
	for _, p := range parts[1:] {
		if p.Dtype != it.Dtype {
			it.Dtype = "" // parts of different dtypes: no dtype to judge
		}
	}
	return it, true
}

// groupName names a combined row: its parts' names in concatenation order
// as "[a ; b]".
func groupName(parts []*msprobe.Item) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, p := range parts {
		if i > 0 {
			b.WriteString(" ; ")
		}
		b.WriteString(p.Name)
	}
	b.WriteByte(']')
	return b.String()
}
