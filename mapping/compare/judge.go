package compare

import (
	"math"
	"strconv"
	"strings"
)

// Result levels, lower case as msprobe writes them.
const (
	ResultPass    = "pass"
	ResultWarning = "warning"
	ResultError   = "error"
)

// Checker messages, exactly as msprobe's rule checkers write them.
const (
	msgInfNaN       = "error: There is nan/inf/-inf in the maximum or minimum value of NPU."
	msgRelativeErr  = "error: The NormRelativeErr of output is greater than 0.5."
	msgThousandth   = "error: The input/parameters of One Thousandth Err Ratio > 0.9 while the output < 0.6."
	msgRequiresGrad = "error: The Required_Grad of NPU and Bench are inconsistent"
	msgParameters   = "error: The scalar parameters of NPU and Bench are inconsistent."
	msgDtype        = "error: The dtype of NPU and Bench are inconsistent."
	msgShape        = "error: The shape of NPU and Bench are inconsistent."
	msgRelativeWarn = "warning: The norm relative error of output is 10 times that of input."
	msgCosineWarn   = "warning: The input/parameters of Cosine > 0.9, and input/parameters - output > 0.1"
	msgCRCWarn      = "warning: The parameter of NPU does not match the bench."
	msgCRCErr       = "error: The CRC-32 value of NPU differs from that of the bench."
)

// ignoredAPI tells whether no checker touches the groups of api, and
// whether its inputs are ignored (msprobe's ApiIndicatorCalculator ignore
// lists).
func ignoredAPI(api string) (all, inputs bool) {
	switch api {
	case "empty", "empty_like", "numpy", "to", "__setitem__", "empty_with_format", "new_empty_strided", "new_empty",
		"empty_strided":
		return true, false
	case "_reduce_scatter_base", "_all_gather_base", "all_to_all_single", "batch_isend_irecv":
		return false, true
	}
	return false, false
}

func (r *outRow) mark(level, msg string) {
	r.msgs = append(r.msgs, msg)
	if level == ResultError || (level == ResultWarning && r.result != ResultError) {
		r.result = level
	}
}

// metricValue is what msprobe's minOrMax folds: numbers, and "x%" strings
// as x/100; nothing else.
type metricValue func(r *outRow) (float64, bool)

func pctValue(s string) (float64, bool) {
	if strings.HasSuffix(s, "%") {
		v, err := strconv.ParseFloat(s[:len(s)-1], 64)
		if err != nil {
			return 0, false
		}
		return v / 100, true
	}
	return 0, false
}

func minOrMax(rows []*outRow, val metricValue, isMin bool) float64 {
	acc := 0.0
	if isMin {
		acc = 1.0
	}
	for _, r := range rows {
		v, ok := val(r)
		if !ok || math.IsNaN(v) {
			continue
		}
		if isMin {
			acc = fmin(acc, v)
		} else {
			acc = fmax(acc, v)
		}
	}
	return acc
}

// str2float is msprobe's str2float: strip "%", divide by 100, 0 when the
// text is no number.
func str2float(s string) float64 {
	s = strings.TrimSpace(s)
	pct := strings.HasSuffix(s, "%")
	s = strings.TrimSuffix(s, "%")
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0
	}
	if pct {
		return v / 100
	}
	return v
}

// judge fills Result and Err_message of one API group (the rows of one
// dump entry) with msprobe's rule checkers for the mode, then adds what an
// N:1 group did with each row. r.output must be set.
func judge(mode Mode, group []*outRow, sc *scratch) {
	rules(mode, group, sc)
	for _, r := range group {
		r.fusedNote()
	}
}

// rules are msprobe's rule checkers.
func rules(mode Mode, group []*outRow, sc *scratch) {
	inputs, outputs := sc.inputs[:0], sc.outputs[:0]
	for _, r := range group {
		r.result, r.msgs = ResultPass, r.msgs[:0]
		if r.readErr != "" { // not msprobe's: an unreadable file never passes
			r.mark(ResultError, r.readErr)
		}
		if r.output {
			outputs = append(outputs, r)
		} else {
			inputs = append(inputs, r)
		}
	}
	sc.inputs, sc.outputs = inputs, outputs
	ignoreAll, ignoreInputs := false, false
	if len(inputs) > 0 {
		// the name's second dot-part: the API
		if _, rest, ok := strings.Cut(inputs[0].npu.it.Name, "."); ok {
			api, _, _ := strings.Cut(rest, ".")
			// msprobe's ignore lists
			ignoreAll, ignoreInputs = ignoredAPI(api)
		}
	}
	if ignoreAll {
		return
	}
	rows := group
	if ignoreInputs {
		rows = outputs
	}
	matched := func(r *outRow) bool { return r.bench != nil }
	switch mode {
	case MD5:
		for _, r := range rows {
			n, b := r.npuMD5(), r.benchMD5()
			if n != b {
				if n == "N/A" || b == "N/A" || n == "Nan" || b == "Nan" || n == "" || b == "" {
					r.mark(ResultWarning, msgCRCWarn)
				} else {
					r.mark(ResultError, msgCRCErr)
				}
			}
		}
		return
	}
	// InfNan
	for _, r := range rows {
		bmax, bmin := &r.bcell[0], &r.bcell[1]
		if bmax.finite() && bmin.finite() && r.ncell[0].finite() && r.ncell[1].finite() {
			continue // the common case, no call
		}
		if bmax.infNaN() || bmin.infNaN() {
			continue
		}
		if r.ncell[0].infNaN() || r.ncell[1].infNaN() {
			r.mark(ResultError, msgInfNaN)
		}
	}
	normRel := func(r *outRow) (float64, bool) { return r.nums[3].pct, r.nums[3].pctOK }
	if mode == Statistics {
		if !ignoreInputs && math.Abs(minOrMax(inputs, normRel, false)) < 0.1 {
			for _, r := range outputs {
				if math.Abs(r.nums[3].relF) > 0.5 {
					r.mark(ResultError, msgRelativeErr)
				}
			}
		}
	} else if len(outputs) > 0 && !ignoreInputs {
		th := func(r *outRow) (float64, bool) { return r.met[4].num() }
		if minOrMax(inputs, th, true) > 0.9 && minOrMax(outputs, th, true) < 0.1 {
			outputs[0].mark(ResultError, msgThousandth)
		}
	}
	// RequiresGrad
	for _, r := range rows {
		if !matched(r) {
			continue
		}
		n, b := r.npuReqGrad(), r.benchReqGrad()
		if n == "" || b == "" {
			continue
		}
		if n != b {
			r.mark(ResultError, msgRequiresGrad)
		}
	}
	// Parameters
	if !ignoreInputs {
		for _, r := range inputs {
			if !matched(r) {
				continue
			}
			if r.npu.it.Shape != "[]" { // first: the cheap test
				continue
			}
			if !strings.Contains(r.npu.it.Dtype, "class") || !strings.Contains(r.bench.it.Dtype, "class") {
				continue
			}
			if !pyEqual(r.npuStat(0), r.benchStat(0)) {
				r.mark(ResultError, msgParameters)
			}
		}
	}
	// DType
	for _, r := range rows {
		if !matched(r) || r.npu.it.Name == "N/A" {
			continue
		}
		if r.npu.it.Dtype == "" || r.bench.it.Dtype == "" {
			continue
		}
		if r.npu.it.Dtype == r.bench.it.Dtype { // before the name searches
			continue
		}
		if !strings.Contains(r.bench.it.Name, "qkv") && !strings.Contains(r.bench.it.Name, "gate_up") {
			r.mark(ResultError, msgDtype)
		}
	}
	// Shape
	for _, r := range rows {
		if matched(r) && r.npu.it.Shape != r.bench.it.Shape {
			r.mark(ResultError, msgShape)
		}
	}
	if len(outputs) == 0 || ignoreInputs {
		return
	}
	if mode == Statistics {
		i := math.Abs(minOrMax(inputs, normRel, false))
		o := math.Abs(minOrMax(outputs, normRel, false))
		if (i == 0 && o > 0.1) || (i != 0 && o/i > 10) {
			outputs[0].mark(ResultWarning, msgRelativeWarn)
		}
		return
	}
	cos := func(r *outRow) (float64, bool) { return r.met[0].num() }
	ci, co := minOrMax(inputs, cos, true), minOrMax(outputs, cos, true)
	if ci > 0.9 && ci-co > 0.1 {
		outputs[0].mark(ResultWarning, msgCosineWarn)
	}
}
