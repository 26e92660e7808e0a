package tensor

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/layermap/layermap/printparse/msprobe"
)

// Status tells which path msprobe's CompareRealData took for a row; every
// status but StatusOK and StatusScalar fills all six cells with one marker.
type Status uint8

const (
	StatusOK           Status = iota // metrics computed
	StatusScalar                     // 0-d NPU tensor: only MaxAbsErr and MaxRelativeErr
	StatusNoRealData                 // a data_name is "-1": "unsupported"
	StatusAPIUnmatch                 // exactly one side unmatched ("N/A"): "unsupported"
	StatusReadNone                   // a file is missing or unreadable: "unsupported"
	StatusEmpty                      // NPU tensor has no element: "unsupported"
	StatusShapeUnmatch               // squeezed shapes differ: "shape unmatched"
	StatusNaNMismatch                // NaN/inf at different positions: "N/A"
)

var statusNames = [...]string{"ok", "0-d", "no real data", "api unmatched", "read failed", "empty", "shape unmatched", "nan/inf mismatch"}

func (s Status) String() string {
	if int(s) < len(statusNames) {
		return statusNames[s]
	}
	return fmt.Sprintf("Status(%d)", uint8(s))
}

// Metrics is one row's six tensor-mode cells, in table order, plus how
// they came about.
type Metrics struct {
	Cosine          Value
	EucDist         Value
	MaxAbsErr       Value
	MaxRelativeErr  Value
	OneThousandth   Value // "One Thousandth Err Ratio"
	FiveThousandths Value // "Five Thousandths Err Ratio"

	Status Status
	// Message is msprobe's intermediate err_msg for the row (what its
	// -tensor_log prints). msprobe drops it from the final table, whose
	// Err_message comes from the rule checkers only.
	Message string
	// Err is the cause of StatusReadNone.
	Err error
}

// Values returns the six cells in column order.
func (m Metrics) Values() [6]Value {
	return [6]Value{m.Cosine, m.EucDist, m.MaxAbsErr, m.MaxRelativeErr, m.OneThousandth, m.FiveThousandths}
}

// Cells returns the six cells as msprobe's CSV writes them, in column
// order: Cosine, EucDist, MaxAbsErr, MaxRelativeErr, One Thousandth Err
// Ratio, Five Thousandths Err Ratio.
func (m Metrics) Cells() [6]string {
	var out [6]string
	for i, v := range m.Values() {
		out[i] = v.String()
	}
	return out
}

// marked fills all six cells with one marker.
func marked(s Status, text, msg string) Metrics {
	v := Text(text)
	return Metrics{Cosine: v, EucDist: v, MaxAbsErr: v, MaxRelativeErr: v, OneThousandth: v, FiveThousandths: v, Status: s, Message: msg}
}

// NoRealData is the row msprobe writes when one side's data_name is "-1"
// (a non-tensor item, or a tensor dumped without a file); npuSide tells
// which side lacks the file.
func NoRealData(npuSide bool) Metrics {
	if npuSide {
		return marked(StatusNoRealData, Unsupported, "NPU does not have data file.")
	}
	return marked(StatusNoRealData, Unsupported, "Bench does not have data file.")
}

// APIUnmatch is the row msprobe writes when exactly one data_name is "N/A".
func APIUnmatch() Metrics {
	return marked(StatusAPIUnmatch, Unsupported, "Bench api/module unmatched.")
}

// ReadFailed is the row msprobe writes when a tensor file cannot be read.
func ReadFailed(err error) Metrics {
	m := marked(StatusReadNone, Unsupported, fmt.Sprintf("Dump file: %v not found or read failed.", err))
	m.Err = err
	return m
}

// Options tunes a comparison. The zero value is msprobe's default.
type Options struct {
	// NPUName and BenchName are the rows' NPU Name and Bench Name; the
	// dirty-data cleaning applies only to rows whose name contains
	// "output".
	NPUName, BenchName string
	// NPUValidLen and BenchValidLen are the rows' dirty_valid_len (nil
	// when msprobe has -1): rows of dimension 0 from that index on are
	// zeroed before comparing (msprobe's output_postprocess, used for
	// npu_grouped_matmul / npu_dequant_swiglu_quant outputs). Leave them
	// nil in consistent-check mode, where msprobe does not clean.
	NPUValidLen, BenchValidLen *int
	// BLASThreads is the OpenBLAS thread count of the host msprobe ran on;
	// it changes how dot products of more than 10000 elements are summed,
	// which shows in the last digits of EucDist. 0 means 1.
	BLASThreads int
	// Workers bounds the goroutines one comparison uses; 0 means up to 2
	// (GOMAXPROCS permitting). The result does not depend on it.
	Workers int
}

// CompareDataNames runs msprobe's whole per-row procedure for a
// tensor-mode row: npuName/benchName are the two entries of the row's
// Data_name cell ("-1" for no file, "N/A" for unmatched), resolved in the
// dump_tensor_data folders of npu and bench. A data_name that would leave
// its folder is refused: the returned error wraps msprobe.ErrUnsafeDataName
// (and the metrics are the read-failure row). Read failures are not
// errors: they give msprobe's "unsupported" row with Metrics.Err set.
func CompareDataNames(npu, bench msprobe.Paths, npuName, benchName string, opts Options) (Metrics, error) {
	switch {
	case npuName == "-1":
		return NoRealData(true), nil
	case benchName == "-1":
		return NoRealData(false), nil
	case (npuName == "N/A") != (benchName == "N/A"):
		return APIUnmatch(), nil
	case npuName == "N/A":
		// msprobe tries to open a file named N/A and fails.
		return ReadFailed(errors.New("data_name N/A on both sides: no tensor file")), nil
	}
	np, err := npu.TensorPath(npuName)
	if err != nil {
		return ReadFailed(err), err
	}
	bp, err := bench.TensorPath(benchName)
	if err != nil {
		return ReadFailed(err), err
	}
	return CompareFiles(np, bp, opts), nil
}

// CompareFiles loads the two tensor files, squeezes them and cleans dirty
// data as msprobe's reader does, then compares them. A load failure gives
// the "unsupported" row with Metrics.Err set.
func CompareFiles(npuPath, benchPath string, opts Options) Metrics {
	// msprobe's PyTorch reader loads the bench file first; the first
	// failure wins either way.
	b, err := Load(benchPath)
	if err != nil {
		return ReadFailed(err)
	}
	n, err := Load(npuPath)
	if err != nil {
		return ReadFailed(err)
	}
	n = CleanDirty(n.Squeeze(), opts.NPUName, opts.NPUValidLen)
	b = CleanDirty(b.Squeeze(), opts.BenchName, opts.BenchValidLen)
	return Compare(n, b, opts)
}

// CleanDirty applies msprobe's dirty-data cleaning to a row's tensor:
// when validLen is set and rowName contains "output", a copy of t whose
// rows (along dimension 0) from *validLen on are zero. 0-d and empty
// tensors are returned unchanged.
func CleanDirty(t *Tensor, rowName string, validLen *int) *Tensor {
	if validLen == nil || *validLen == -1 || !strings.Contains(rowName, "output") || len(t.Shape) == 0 || len(t.Data) == 0 {
		return t
	}
	keep := min(max(*validLen, 0), t.Shape[0])
	row := len(t.Data) / t.Shape[0]
	out := *t
	out.Data = make([]float64, len(t.Data))
	copy(out.Data, t.Data[:keep*row])
	return &out
}

// ValidLen is how msprobe derives dirty_valid_len from a group tensor
// (the group_list / group_index kwarg): the sum of its elements, for
// integer and bool tensors only.
func ValidLen(group *Tensor) (int, error) {
	if isFloat(group.Dtype) {
		return 0, fmt.Errorf("unsupported dtype: %s", group.Source)
	}
	s := 0.0
	for _, v := range group.Data {
		s += v
	}
	if s < 0 {
		return 0, fmt.Errorf("valid length %v is negative", s)
	}
	return int(s), nil
}

// DirtyDataAPIs is msprobe's built-in table of APIs whose target-side
// (NPU) outputs are cleaned, and the kwarg holding their group tensor
// (core/common/output_postprocess/api_output_postprocess.yaml,
// compare_handlers.target). A row matches when its name contains the API
// name.
var DirtyDataAPIs = map[string]string{
	"npu_dequant_swiglu_quant": "group_index",
	"npu_grouped_matmul":       "group_list",
}

// Compare computes the six metrics of two tensors as msprobe holds them
// after reading (squeezed, dirty data cleaned: see CompareFiles). It does
// not modify its arguments.
func Compare(npu, bench *Tensor, opts Options) Metrics {
	if !knownDtype(npu.Dtype) || !knownDtype(bench.Dtype) {
		return ReadFailed(fmt.Errorf("unsupported dtype %s / %s", npu.Dtype, bench.Dtype))
	}
	if len(npu.Data) != npu.Size() || len(bench.Data) != bench.Size() {
		return ReadFailed(errors.New("tensor data does not match its shape"))
	}
	// ValidateTensor.check_tensor, first rule that yields a message wins.
	if len(npu.Data) == 0 {
		return marked(StatusEmpty, Unsupported, "This is empty data, can not compare.")
	}
	if !slices.Equal(npu.Shape, bench.Shape) {
		return marked(StatusShapeUnmatch, ShapeUnmatch, "Shape of NPU and bench tensor do not match. Skipped.")
	}
	if len(npu.Shape) == 0 {
		return compareScalar(npu, bench)
	}
	msg := ""
	if npu.Dtype != bench.Dtype {
		msg = "Dtype of NPU and bench tensor do not match."
	}
	rel := relType(npu.Dtype, bench.Dtype)
	m, nonFinite := compareArrays(npu.Data, bench.Data, rel, opts)
	if nonFinite {
		n, b, ok := zeroNonFinite(npu.Data, bench.Data)
		if !ok {
			return marked(StatusNaNMismatch, NotAvailable, "The position of inf or nan in NPU and bench Tensor do not match.")
		}
		m, _ = compareArrays(n, b, rel, opts)
	}
	m.Message = msg + m.Message
	return m
}

// zeroNonFinite is msprobe's handle_inf_nan: when the inf masks and the
// NaN masks of both sides are identical, those positions become 0 on both
// sides (copies are made only then); otherwise ok is false.
func zeroNonFinite(n, b []float64) (nz, bz []float64, ok bool) {
	any := false
	for i, x := range n {
		y := b[i]
		if math.IsInf(x, 0) != math.IsInf(y, 0) || math.IsNaN(x) != math.IsNaN(y) {
			return nil, nil, false
		}
		if !any && (math.IsInf(x, 0) || math.IsNaN(x)) {
			any = true
		}
	}
	if !any {
		return n, b, true
	}
	nz = slices.Clone(n)
	bz = slices.Clone(b)
	for i, x := range nz {
		if math.IsInf(x, 0) || math.IsNaN(x) {
			nz[i], bz[i] = 0, 0
		}
	}
	return nz, bz, true
}

// relType is the dtype msprobe's get_relative_err works in: non-float
// inputs are cast to float64 first, and the work type is numpy's
// result_type(npu, bench, float32), i.e. float32 unless a side is float64.
func relType(a, b string) string {
	if (a == "float16" || a == "float32") && (b == "float16" || b == "float32") {
		return "float32"
	}
	return "float64"
}

const (
	eps32 = float32(1.0 / (1 << 23)) // np.finfo(np.float32).eps
	eps64 = 2.220446049250313e-16    // np.finfo(float).eps, also msprobe's FLOAT_EPSILON
	// msprobe's thresholds.
	thousandth      = 0.001
	fiveThousandths = 0.005
	cosineRound     = 0.9999
)

// relErr is |(n − b) / b| in the work type, with eps added to both values
// where b is 0.
func relErr32(x, y float64) float32 {
	n, b := float32(x), float32(y)
	if b == 0 {
		n = float32(n + eps32)
		b = float32(b + eps32)
	}
	d := float32(n - b)
	return float32(math.Abs(float64(float32(d / b))))
}

func relErr64(n, b float64) float64 {
	if b == 0 {
		n += eps64
		b += eps64
	}
	return math.Abs((n - b) / b)
}

// relStats is the relative-error part of the metrics.
type relStats struct {
	maxRel   float64 // in the work type
	nanRel   bool
	lt1, lt5 int
}

// relErrors computes max(RE) and the threshold counts, comparing in the
// work type as numpy does (the Python threshold becomes a float32 when RE
// is float32).
func relErrors(n, b []float64, f32 bool) relStats {
	var s relStats
	if f32 {
		t1, t5 := float32(thousandth), float32(fiveThousandths)
		var mx float32
		for i, x := range n {
			r := relErr32(x, b[i])
			if r != r {
				s.nanRel = true
			} else if r > mx {
				mx = r
			}
			if r < t1 {
				s.lt1++
			}
			if r < t5 {
				s.lt5++
			}
		}
		s.maxRel = float64(mx)
		return s
	}
	for i, x := range n {
		r := relErr64(x, b[i])
		if r != r {
			s.nanRel = true
		} else if r > s.maxRel {
			s.maxRel = r
		}
		if r < thousandth {
			s.lt1++
		}
		if r < fiveThousandths {
			s.lt5++
		}
	}
	return s
}

// dotStats holds n·b, n·n, b·b and (n−b)·(n−b) in OpenBLAS order, and
// max |n−b|, for one BLAS chunk.
type dotStats struct {
	nb, nn, bb, dd float64
	maxAbs         float64
	nonFinite      bool // an inf or NaN was seen: the caller must zero them first
}

// dots makes one pass over a chunk for the four dot products (each as
// its own ddot call would sum it) and max |n−b|.
func dots(n, b []float64) dotStats {
	var s dotStats
	var anb, ann, abb, add dotAcc
	m := len(n) &^ 15
	for i := 0; i < m; i += 16 {
		x := n[i : i+16 : i+16]
		y := b[i : i+16 : i+16]
		for j := range 16 {
			xj, yj := x[j], y[j]
			if xj-xj != 0 || yj-yj != 0 { // inf or NaN
				s.nonFinite = true
			}
			d := xj - yj
			if a := math.Abs(d); a > s.maxAbs {
				s.maxAbs = a
			}
			anb.lanes[j] = math.FMA(xj, yj, anb.lanes[j])
			ann.lanes[j] = math.FMA(xj, xj, ann.lanes[j])
			abb.lanes[j] = math.FMA(yj, yj, abb.lanes[j])
			add.lanes[j] = math.FMA(d, d, add.lanes[j])
		}
	}
	if m > 0 {
		s.nb, s.nn, s.bb, s.dd = anb.fold(), ann.fold(), abb.fold(), add.fold()
	}
	for i := m; i < len(n); i++ {
		xj, yj := n[i], b[i]
		if xj-xj != 0 || yj-yj != 0 {
			s.nonFinite = true
		}
		d := xj - yj
		if a := math.Abs(d); a > s.maxAbs {
			s.maxAbs = a
		}
		// One rounding per product, as the C tail loop does.
		s.nb += float64(yj * xj)
		s.nn += float64(xj * xj)
		s.bb += float64(yj * yj)
		s.dd += float64(d * d)
	}
	return s
}

// compareArrays computes the six metrics of two equal-shape n-d tensors.
// nonFinite reports that an inf or NaN was found, in which case the
// metrics are not valid and the caller must zero those positions first.
func compareArrays(n, b []float64, rel string, opts Options) (m Metrics, nonFinite bool) {
	chunks := blasChunks(len(n), opts.BLASThreads)
	workers := opts.Workers
	if workers <= 0 {
		workers = min(2, runtime.GOMAXPROCS(0))
	}
	var rs relStats
	relPass := func() { rs = relErrors(n, b, rel == "float32") }
	var d dotStats
	dotPass := func() {
		if len(chunks) == 1 {
			d = dots(n, b)
			return
		}
		// OpenBLAS adds the per-thread results to 0.0, in order.
		off := 0
		for _, c := range chunks {
			cs := dots(n[off:off+c], b[off:off+c])
			off += c
			d.nb += cs.nb
			d.nn += cs.nn
			d.bb += cs.bb
			d.dd += cs.dd
			d.maxAbs = max(d.maxAbs, cs.maxAbs)
			d.nonFinite = d.nonFinite || cs.nonFinite
		}
	}
	if workers > 1 && len(n) >= 1<<15 {
		var wg sync.WaitGroup
		wg.Go(relPass)
		dotPass()
		wg.Wait()
	} else {
		dotPass()
		if d.nonFinite {
			return Metrics{}, true
		}
		relPass()
	}
	if d.nonFinite {
		return Metrics{}, true
	}

	m = Metrics{Status: StatusOK}
	var msg strings.Builder
	// Cosine (GetCosineSimilarity).
	an, bn := math.Sqrt(d.nn), math.Sqrt(d.bb)
	switch {
	case len(n) == 1:
		m.Cosine = Text(Unsupported)
		msg.WriteString("This is a 1-d tensor of length 1.")
	case an <= eps64 && bn <= eps64:
		m.Cosine = Num(1.0)
	case an <= eps64:
		m.Cosine = Text(NanText)
		msg.WriteString("Cannot compare by Cosine Similarity, All the data is Zero in npu dump data.")
	case bn <= eps64:
		m.Cosine = Text(NanText)
		msg.WriteString("Cannot compare by Cosine Similarity, All the data is Zero in Bench dump data.")
	default:
		c := d.nb / (an * bn)
		if math.IsNaN(c) {
			m.Cosine = Text(NanText)
			msg.WriteString("Cannot compare by Cosine Similarity, the dump data has NaN.")
		} else {
			c = round12(c)
			if c > cosineRound {
				c = pyRound(c, 6)
			}
			m.Cosine = Num(c)
		}
	}
	// EucDist, unrounded.
	m.EucDist = Num(math.Sqrt(d.dd))
	// MaxAbsErr: finite inputs give no NaN difference.
	m.MaxAbsErr = Num(round12(d.maxAbs))
	// MaxRelativeErr.
	if rs.nanRel {
		m.MaxRelativeErr = Text(NanText)
		msg.WriteString("Cannot compare by MaxRelativeError, the data contains nan/inf/-inf in dump data.")
	} else {
		m.MaxRelativeErr = Num(round12(rs.maxRel))
	}
	size := float64(len(n))
	m.OneThousandth = Num(round12(float64(rs.lt1) / size))
	m.FiveThousandths = Num(round12(float64(rs.lt5) / size))
	m.Message = msg.String()
	return m, false
}

// compareScalar handles a 0-d NPU tensor (the bench is 0-d too, shapes
// being equal): no NaN/inf handling, MaxAbsErr in numpy's promoted dtype,
// MaxRelativeErr in the work type, the other four cells "unsupported".
func compareScalar(npu, bench *Tensor) Metrics {
	msg := "This is type of 0-d tensor, can not calculate 'Cosine', 'EucDist', 'One Thousandth Err Ratio' and 'Five Thousandths Err Ratio'. "
	m := Metrics{Status: StatusScalar, Message: msg,
		Cosine: Text(Unsupported), EucDist: Text(Unsupported), OneThousandth: Text(Unsupported), FiveThousandths: Text(Unsupported)}
	x, y := npu.Data[0], bench.Data[0]
	var re float64
	if relType(npu.Dtype, bench.Dtype) == "float32" {
		re = float64(relErr32(x, y))
	} else {
		re = relErr64(x, y)
	}
	nd, bd := npu.Dtype, bench.Dtype
	if nd == "bool" { // reshape_value casts a 0-d bool pair to float
		nd, bd = "float64", "float64"
	}
	abs := absDiff(x, y, promote(nd, bd))
	if math.IsNaN(abs) {
		m.MaxAbsErr = Text(NanText)
	} else {
		m.MaxAbsErr = Num(round12(abs))
	}
	if math.IsNaN(re) {
		m.MaxRelativeErr = Text(NanText)
	} else {
		m.MaxRelativeErr = Num(round12(re))
	}
	return m
}

// absDiff is np.abs(n − b) computed in dtype dt (wrapping for integers).
func absDiff(x, y float64, dt string) float64 {
	switch dt {
	case "float16":
		return math.Abs(roundToHalf(float32(x) - float32(y)))
	case "float32":
		return math.Abs(float64(float32(x) - float32(y)))
	case "float64":
		return math.Abs(x - y)
	case "bool":
		return math.Abs(x - y)
	}
	bits := 64
	fmt.Sscanf(strings.TrimLeft(dt, "uint"), "%d", &bits)
	if strings.HasPrefix(dt, "uint") {
		d := uint64(x) - uint64(y)
		if bits < 64 {
			d &= 1<<bits - 1
		}
		return float64(d) // abs of unsigned is itself
	}
	d := int64(x) - int64(y)
	if bits < 64 {
		d = d << (64 - bits) >> (64 - bits)
	}
	if d < 0 {
		d = -d
		if bits < 64 {
			d = d << (64 - bits) >> (64 - bits)
		}
	}
	return float64(d)
}

// promote is numpy's result_type for two dtypes of this package.
func promote(a, b string) string {
	if a == b {
		return a
	}
	if a == "bool" {
		return b
	}
	if b == "bool" {
		return a
	}
	fa, fb := isFloat(a), isFloat(b)
	width := func(s string) int {
		w := 0
		fmt.Sscanf(strings.TrimLeft(s, "uintfloat"), "%d", &w)
		return w
	}
	switch {
	case fa && fb:
		if width(a) >= width(b) {
			return a
		}
		return b
	case fa || fb:
		f, i := a, b
		if fb {
			f, i = b, a
		}
		// Smallest float holding the integer type and at least f.
		need := 16
		switch width(i) {
		case 8:
			need = 16
		case 16:
			need = 32
		default:
			need = 64
		}
		if width(f) > need {
			need = width(f)
		}
		return fmt.Sprintf("float%d", need)
	}
	ua, ub := strings.HasPrefix(a, "uint"), strings.HasPrefix(b, "uint")
	wa, wb := width(a), width(b)
	switch {
	case ua == ub:
		if wa >= wb {
			return a
		}
		return b
	default:
		u, s := wa, wb
		if ub {
			u, s = wb, wa
		}
		if s > u {
			return fmt.Sprintf("int%d", s)
		}
		if u == 64 {
			return "float64"
		}
		return fmt.Sprintf("int%d", 2*u)
	}
}
