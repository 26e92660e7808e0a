package compare

import (
	"github.com/layermap/layermap/printparse/msprobe"
)

// Mode is the compare mode msprobe derives from the two dump headers.
type Mode uint8

// Compare modes.
const (
	Statistics Mode = iota // task "statistics": Max/Min/Mean/Norm diffs
	Tensor                 // task "tensor": real-data metrics
	MD5                    // task "statistics" with md5 on both sides
)

func (m Mode) String() string {
	switch m {
	case Tensor:
		return "tensor"
	case MD5:
		return "md5"
	}
	return "statistics"
}

// Metric is one tensor-mode metric cell: a number, or a text such as
// "unsupported", "Nan", "N/A" or "shape unmatched".
type Metric struct {
	Value float64
	Text  string
	IsNum bool
}

func (m Metric) num() (float64, bool) { return m.Value, m.IsNum }

// String renders the metric as msprobe's CSV does (Python repr for
// numbers).
func (m Metric) String() string {
	if m.Text != "" {
		return m.Text
	}
	if m.IsNum {
		return msprobe.PyFloat(m.Value)
	}
	return m.Text
}

// MatchSource tells which rule paired a row with its bench row.
type MatchSource uint8

// Match sources.
const (
	Unmatched  MatchSource = iota
	ByName                 // exact compare key (msprobe's default match, incl. backward renumbering)
	ByFuzzy                // --fuzzy-match
	ByDataMap              // -dm data mapping
	ByLayerMap             // the data mapping derived from --mapping
	ByPairs                // explicit node pairs (--pairs)
)

func (s MatchSource) String() string {
	return [...]string{"unmatched", "name", "fuzzy", "data_mapping", "layer_mapping", "pairs"}[s]
}

// sideRow is one flattened row of one side with its compare key.
type sideRow struct {
	it    msprobe.Item
	key   string
	stack string // NPU_Stack_Info text on the first row of an entry, else ""
	order int
}

// outRow is one row of the result table.
type outRow struct {
	npu          *sideRow
	bench        *sideRow // nil when unmatched (or dropped by the dtype gate)
	source       MatchSource
	noBenchFloat [4]bool
	npuFloat     bool
	benchFloat   bool
	intCol       [4]bool
	ncell, bcell [4]cell     // the stat cells as they print (set by groupWriter.add)
	diff         [8]string   // statistics: 4 diffs then 4 relative errors
	met          [6]Metric   // tensor metrics
	readErr      string      // tensor mode: why the row's files could not be read
	nums         [4]statNums // numbers of diff[i]/diff[4+i]
	result       string
	msgs         []string
	color        Color
	cells        []Cell // rendered by prepare
}

// setCells derives the stat cells once per row.
func (r *outRow) setCells() {
	for i := 0; i < 4; i++ {
		c := fromValue(r.npu.it.Stats[i])
		if r.npuFloat || (r.bench == nil && r.noBenchFloat[i]) {
			c = c.asFloat()
		}
		r.ncell[i] = c.withRepr()
		if r.bench == nil {
			r.bcell[i] = naCell
			continue
		}
		c = fromValue(r.bench.it.Stats[i])
		if r.benchFloat {
			c = c.asFloat()
		}
		r.bcell[i] = c.withRepr()
	}
}

func (r *outRow) npuStat(i int) cell { return r.ncell[i] }

func (r *outRow) benchStat(i int) cell { return r.bcell[i] }

func reqGrad(s string) string {
	if s == "" {
		return "N/A"
	}
	return s
}

func (r *outRow) npuReqGrad() string { return reqGrad(r.npu.it.RequiresGrad) }

func (r *outRow) benchReqGrad() string {
	if r.bench == nil {
		return "N/A"
	}
	return reqGrad(r.bench.it.RequiresGrad)
}

func md5Of(it *msprobe.Item) string {
	if it.NoneItem || it.MD5 == "" {
		return "N/A"
	}
	return it.MD5
}

func (r *outRow) npuMD5() string { return md5Of(&r.npu.it) }

func (r *outRow) benchMD5() string {
	if r.bench == nil {
		return "N/A"
	}
	return md5Of(&r.bench.it)
}

func dataName(it *msprobe.Item) string {
	if it.DataName == "" {
		return "-1"
	}
	return it.DataName
}

// Header returns msprobe's column names for a mode.
func Header(mode Mode, stack bool) []string {
	h := []string{"NPU Name", "Bench Name", "NPU Dtype", "Bench Dtype", "NPU Tensor Shape",
		"Bench Tensor Shape", "NPU Requires_grad", "Bench Requires_grad"}
	stats := []string{"NPU max", "NPU min", "NPU mean", "NPU l2norm", "Bench max", "Bench min",
		"Bench mean", "Bench l2norm"}
	switch mode {
	case Statistics:
		h = append(h, "Max diff", "Min diff", "Mean diff", "L2norm diff", "MaxRelativeErr",
			"MinRelativeErr", "MeanRelativeErr", "NormRelativeErr")
		h = append(h, stats...)
	case Tensor:
		h = append(h, "Cosine", "EucDist", "MaxAbsErr", "MaxRelativeErr", "One Thousandth Err Ratio",
			"Five Thousandths Err Ratio")
		h = append(h, stats...)
	case MD5:
		h = append(h, "NPU MD5", "BENCH MD5")
	}
	h = append(h, "Requires_grad Consistent", "Result", "Err_message")
	if stack {
		h = append(h, "NPU_Stack_Info")
	}
	if mode == Tensor {
		h = append(h, "Data_name")
	}
	return h
}

// Cell is one rendered table cell. Num marks cells msprobe holds as
// numbers (written as numbers in xlsx).
type Cell struct {
	Text string
	Num  bool
	Val  float64
}

func txt(s string) Cell { return Cell{Text: s} }

func statCell(c cell) Cell {
	if c.isNum() {
		return Cell{Text: c.csv(), Num: true, Val: c.f}
	}
	return Cell{Text: c.csv()}
}

// render turns a judged row into its cells.
func (r *outRow) render(mode Mode, stack bool, dst []Cell) []Cell {
	n := &r.npu.it
	bn, bd, bs, brg := "N/A", "N/A", "N/A", "N/A"
	if r.bench != nil {
		b := &r.bench.it
		bn, bd, bs, brg = b.Name, b.Dtype, b.Shape, reqGrad(b.RequiresGrad)
	}
	dst = append(dst, txt(n.Name), txt(bn), txt(n.Dtype), txt(bd), txt(n.Shape), txt(bs),
		txt(r.npuReqGrad()), txt(brg))
	switch mode {
	case Statistics:
		for _, d := range r.diff {
			dst = append(dst, txt(d))
		}
	case Tensor:
		for _, m := range r.met {
			if m.IsNum {
				dst = append(dst, Cell{Text: m.String(), Num: true, Val: m.Value})
			} else {
				dst = append(dst, txt(m.Text))
			}
		}
	case MD5:
		dst = append(dst, txt(r.npuMD5()), txt(r.benchMD5()))
	}
	if mode != MD5 {
		for i := 0; i < 4; i++ {
			dst = append(dst, statCell(r.npuStat(i)))
		}
		for i := 0; i < 4; i++ {
			dst = append(dst, statCell(r.benchStat(i)))
		}
	}
	consistent := "False"
	if r.npuReqGrad() == brg {
		consistent = "True"
	}
	dst = append(dst, txt(consistent), txt(r.result), txt(msprobe.JSONDumps(r.msgs)))
	if stack {
		s := r.npu.stack
		if s == "" {
			s = "N/A"
		}
		dst = append(dst, txt(s))
	}
	if mode == Tensor {
		bdn := "N/A"
		if r.bench != nil {
			bdn = dataName(&r.bench.it)
		}
		dst = append(dst, txt(msprobe.PyStrList([]string{dataName(n), bdn})))
	}
	return dst
}
