package tensor

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path/filepath"
	"slices"
	"strings"

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
	// Err is the cause of StatusReadNone, naming the file. It wraps
	// fs.ErrNotExist when a file is missing (msprobe's tolerated case: a
	// dump copied without its tensors), msprobe.ErrUnsafeDataName or
	// ErrOutside when a name or link leads out of the dump.
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

// readFailed is the row msprobe writes when a tensor file cannot be
// read; its message is msprobe's, naming the row's two data names.
func readFailed(npuName, benchName string, err error) Metrics {
	m := marked(StatusReadNone, Unsupported, fmt.Sprintf("Dump file: %s or %s not found or read failed.", npuName, benchName))
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
}

// CompareDataNames runs msprobe's whole per-row procedure for a
// tensor-mode row: npuName/benchName are the two entries of the row's
// Data_name cell ("-1" for no file, "N/A" for unmatched), opened in the
// two sides' tensor folders. A data_name that would leave its folder is
// refused: the returned error wraps msprobe.ErrUnsafeDataName (and the
// metrics are the read-failure row). Read failures are not errors: they
// give msprobe's "unsupported" row with Metrics.Err set.
func CompareDataNames(npu, bench *Folder, npuName, benchName string, opts Options) (Metrics, error) {
	switch {
	case npuName == "-1":
		return NoRealData(true), nil
	case benchName == "-1":
		return NoRealData(false), nil
	case (npuName == "N/A") != (benchName == "N/A"):
		return APIUnmatch(), nil
	case npuName == "N/A":
		// msprobe tries to open a file named N/A and finds none.
		return readFailed(npuName, benchName, fmt.Errorf("data_name N/A on both sides: %w", fs.ErrNotExist)), nil
	}
	// msprobe's PyTorch reader loads the bench file first; the first
	// failure wins either way.
	b, err := bench.Open(benchName)
	if err != nil {
		return readFailed(npuName, benchName, err), unsafeName(err)
	}
	defer b.Close()
	n, err := npu.Open(npuName)
	if err != nil {
		return readFailed(npuName, benchName, err), unsafeName(err)
	}
	defer n.Close()
	return compareOperands(fileOperand(n), fileOperand(b), npuName, benchName, opts), nil
}

func unsafeName(err error) error {
	if errors.Is(err, msprobe.ErrUnsafeDataName) {
		return err
	}
	return nil
}

// CompareFiles opens the two tensor files and compares them as msprobe
// does (squeezed, dirty data cleaned), streaming their elements. A load
// failure gives the "unsupported" row with Metrics.Err set.
func CompareFiles(npuPath, benchPath string, opts Options) Metrics {
	nn, bn := filepath.Base(npuPath), filepath.Base(benchPath)
	b, err := Open(benchPath)
	if err != nil {
		return readFailed(nn, bn, err)
	}
	defer b.Close()
	n, err := Open(npuPath)
	if err != nil {
		return readFailed(nn, bn, err)
	}
	defer n.Close()
	return compareOperands(fileOperand(n), fileOperand(b), nn, bn, opts)
}

// Compare computes the six metrics of two in-memory tensors as
// CompareFiles does for files. It does not modify its arguments.
func Compare(npu, bench *Tensor, opts Options) Metrics {
	for _, t := range []*Tensor{npu, bench} {
		if len(t.Data) != t.Size() {
			return readFailed("NPU", "bench", errors.New("tensor data does not match its shape"))
		}
	}
	return compareOperands(tensorOperand(npu), tensorOperand(bench), "NPU", "bench", opts)
}

// operand is one side of a comparison: what the header says, and how to
// stream the elements.
type operand struct {
	dtype string
	shape []int // squeezed, as np.squeeze leaves it
	size  int
	open  func() (stream, error)
}

func fileOperand(f *File) operand {
	return operand{dtype: f.Dtype, shape: squeezed(f.Shape), size: f.Size(), open: f.stream}
}

func tensorOperand(t *Tensor) operand {
	return operand{dtype: t.Dtype, shape: squeezed(t.Shape), size: len(t.Data),
		open: func() (stream, error) { return &sliceStream{t.Data}, nil }}
}

// openClean opens the operand's stream with msprobe's dirty-data
// cleaning: when validLen is set and rowName contains "output", rows
// (along dimension 0) from *validLen on read as zero; 0-d and empty
// tensors are left alone.
func (o operand) openClean(rowName string, validLen *int) (stream, error) {
	s, err := o.open()
	if err != nil || validLen == nil || *validLen == -1 || !strings.Contains(rowName, "output") || len(o.shape) == 0 || o.size == 0 {
		return s, err
	}
	keep := min(max(*validLen, 0), o.shape[0])
	return &zeroFrom{stream: s, from: keep * (o.size / o.shape[0])}, nil
}

// ValidLen is how msprobe derives dirty_valid_len from a group tensor
// (the group_list / group_index kwarg): the sum of its elements, for
// integer and bool tensors only.
func ValidLen(group *File) (int, error) {
	if isFloat(group.Dtype) {
		return 0, fmt.Errorf("unsupported dtype: %s", group.Source)
	}
	sum := 0.0
	if group.Size() > 0 {
		s, err := group.stream()
		if err != nil {
			return 0, err
		}
		defer s.close()
		buf := make([]float64, min(chunkLen, group.Size()))
		for left := group.Size(); left > 0; {
			k := min(left, len(buf))
			if err := s.read(buf[:k]); err != nil {
				return 0, err
			}
			for _, v := range buf[:k] {
				sum += v
			}
			left -= k
		}
	}
	if sum < 0 {
		return 0, fmt.Errorf("valid length %v is negative", sum)
	}
	return int(sum), nil
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

// compareOperands is msprobe's ValidateTensor.check_tensor (first rule
// that yields a message wins) and compare_ops_apply, with the elements
// streamed: the shapes decide the empty, shape-mismatch and 0-d rows
// before any element is read.
func compareOperands(n, b operand, npuName, benchName string, opts Options) Metrics {
	if !knownDtype(n.dtype) || !knownDtype(b.dtype) {
		return readFailed(npuName, benchName, fmt.Errorf("unsupported dtype %s / %s", n.dtype, b.dtype))
	}
	if n.size == 0 {
		return marked(StatusEmpty, Unsupported, "This is empty data, can not compare.")
	}
	if !slices.Equal(n.shape, b.shape) {
		return marked(StatusShapeUnmatch, ShapeUnmatch, "Shape of NPU and bench tensor do not match. Skipped.")
	}
	bs, err := b.openClean(opts.BenchName, opts.BenchValidLen)
	if err != nil {
		return readFailed(npuName, benchName, err)
	}
	defer bs.close()
	ns, err := n.openClean(opts.NPUName, opts.NPUValidLen)
	if err != nil {
		return readFailed(npuName, benchName, err)
	}
	defer ns.close()
	var m Metrics
	if len(n.shape) == 0 {
		var x, y [1]float64
		if err := bs.read(y[:]); err != nil {
			return readFailed(npuName, benchName, err)
		}
		if err := ns.read(x[:]); err != nil {
			return readFailed(npuName, benchName, err)
		}
		return compareScalar(x[0], y[0], n.dtype, b.dtype)
	}
	m, err = streamMetrics(ns, bs, n.size, relType(n.dtype, b.dtype) == "float32", opts.BLASThreads, chunkLen)
	if err != nil {
		return readFailed(npuName, benchName, err)
	}
	if m.Status == StatusOK && n.dtype != b.dtype {
		m.Message = "Dtype of NPU and bench tensor do not match." + m.Message
	}
	return m
}

// squeezed is np.squeeze's shape: every size-1 dimension removed.
func squeezed(shape []int) []int {
	out := make([]int, 0, len(shape))
	for _, d := range shape {
		if d != 1 {
			out = append(out, d)
		}
	}
	return out
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

// relStats is the relative-error part of the metrics: max(RE) and the
// threshold counts. Neither depends on the order the elements come in.
type relStats struct {
	maxRel   float64 // in the work type
	nanRel   bool
	lt1, lt5 int
}

// add folds a chunk in, comparing in the work type as numpy does (the
// Python threshold becomes a float32 when RE is float32).
func (s *relStats) add(n, b []float64, f32 bool) {
	lt1, lt5, nanRel := s.lt1, s.lt5, s.nanRel
	if f32 {
		t1, t5 := float32(thousandth), float32(fiveThousandths)
		mx := float32(s.maxRel)
		for i, x := range n {
			r := relErr32(x, b[i])
			if r != r {
				nanRel = true
			} else if r > mx {
				mx = r
			}
			if r < t1 {
				lt1++
			}
			if r < t5 {
				lt5++
			}
		}
		s.maxRel = float64(mx)
	} else {
		mx := s.maxRel
		for i, x := range n {
			r := relErr64(x, b[i])
			if r != r {
				nanRel = true
			} else if r > mx {
				mx = r
			}
			if r < thousandth {
				lt1++
			}
			if r < fiveThousandths {
				lt5++
			}
		}
		s.maxRel = mx
	}
	s.lt1, s.lt5, s.nanRel = lt1, lt5, nanRel
}

// sanitize is msprobe's handle_inf_nan on one chunk: where an element is
// inf or NaN on either side, the inf and NaN classes must agree and both
// become 0; ok is false when they do not (the whole row is then "N/A").
func sanitize(n, b []float64) (ok bool) {
	for i, x := range n {
		y := b[i]
		if x-x == 0 && y-y == 0 {
			continue
		}
		if math.IsInf(x, 0) != math.IsInf(y, 0) || math.IsNaN(x) != math.IsNaN(y) {
			return false
		}
		n[i], b[i] = 0, 0
	}
	return true
}

// streamMetrics computes the six metrics of two equal-shape n-d tensors
// of size elements from their streams, chunk by chunk: one pass, memory
// two chunks. The dot products keep OpenBLAS's order (see dot.go): the
// chunks never straddle a BLAS thread's share, and are multiples of the
// kernel's 16-element blocks but for the share's last one.
func streamMetrics(ns, bs stream, size int, f32 bool, threads, chunk int) (Metrics, error) {
	nbuf := make([]float64, min(chunk, size))
	bbuf := make([]float64, min(chunk, size))
	var (
		tot        [4]float64 // n·b, n·n, b·b, (n−b)·(n−b)
		maxAbs     float64
		rs         relStats
		mismatch   bool
		blasShares = blasChunks(size, threads)
	)
	for _, L := range blasShares {
		var ds dotState
		m := L &^ 15
		for pos := 0; pos < L; {
			k := min(len(nbuf), L-pos)
			x, y := nbuf[:k], bbuf[:k]
			// msprobe's bench reader runs first: its failure is the one named.
			if err := bs.read(y); err != nil {
				return Metrics{}, err
			}
			if err := ns.read(x); err != nil {
				return Metrics{}, err
			}
			lanes := max(min(k, m-pos), 0)
			pos += k
			if mismatch {
				continue // read on: the files' own checks still run
			}
			st := ds
			pm, ok := st.add(x, y, lanes, pos == L)
			if !ok {
				if !sanitize(x, y) {
					mismatch = true
					continue
				}
				st = ds
				pm, _ = st.add(x, y, lanes, pos == L)
			}
			ds = st
			maxAbs = max(maxAbs, pm)
			rs.add(x, y, f32)
		}
		if mismatch {
			continue
		}
		if len(blasShares) == 1 {
			tot = ds.sum
			continue
		}
		// OpenBLAS adds the per-thread results to 0.0, in order.
		for i := range tot {
			tot[i] += ds.sum[i]
		}
	}
	if mismatch {
		return marked(StatusNaNMismatch, NotAvailable, "The position of inf or nan in NPU and bench Tensor do not match."), nil
	}
	return finishMetrics(tot, maxAbs, rs, size), nil
}

// finishMetrics turns the sums into msprobe's six cells.
func finishMetrics(tot [4]float64, maxAbs float64, rs relStats, size int) Metrics {
	m := Metrics{Status: StatusOK}
	var msg strings.Builder
	// Cosine (GetCosineSimilarity).
	an, bn := math.Sqrt(tot[1]), math.Sqrt(tot[2])
	switch {
	case size == 1:
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
		c := tot[0] / (an * bn)
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
	m.EucDist = Num(math.Sqrt(tot[3]))
	// MaxAbsErr: finite inputs give no NaN difference.
	m.MaxAbsErr = Num(round12(maxAbs))
	// MaxRelativeErr.
	if rs.nanRel {
		m.MaxRelativeErr = Text(NanText)
		msg.WriteString("Cannot compare by MaxRelativeError, the data contains nan/inf/-inf in dump data.")
	} else {
		m.MaxRelativeErr = Num(round12(rs.maxRel))
	}
	n := float64(size)
	m.OneThousandth = Num(round12(float64(rs.lt1) / n))
	m.FiveThousandths = Num(round12(float64(rs.lt5) / n))
	m.Message = msg.String()
	return m
}

// compareScalar handles a 0-d NPU tensor (the bench is 0-d too, shapes
// being equal): no NaN/inf handling, MaxAbsErr in numpy's promoted dtype,
// MaxRelativeErr in the work type, the other four cells "unsupported".
func compareScalar(x, y float64, nd, bd string) Metrics {
	msg := "This is type of 0-d tensor, can not calculate 'Cosine', 'EucDist', 'One Thousandth Err Ratio' and 'Five Thousandths Err Ratio'. "
	m := Metrics{Status: StatusScalar, Message: msg,
		Cosine: Text(Unsupported), EucDist: Text(Unsupported), OneThousandth: Text(Unsupported), FiveThousandths: Text(Unsupported)}
	var re float64
	if relType(nd, bd) == "float32" {
		re = float64(relErr32(x, y))
	} else {
		re = relErr64(x, y)
	}
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
