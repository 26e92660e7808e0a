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
	ByGroup                // an N:1 group (fused.go)
)

func (s MatchSource) String() string {
	return [...]string{"unmatched", "name", "fuzzy", "data_mapping", "layer_mapping", "pairs", "group"}[s]
}

// sideRow is one flattened row of one side with its compare key.
type sideRow struct {
	it    msprobe.Item
	key   string
	stack *stackCell // NPU_Stack_Info on the first row of an entry, else nil
	owner *rowsBuf   // the slice holding an NPU row (recycled once written)
	fused *fusedRow  // what an N:1 group did with the row (fused.go), or nil
	fast  uint8      // fastStats of it, set where it was decoded off the join's goroutine
	ahead keyHashes  // key's candidate prefixes, hashed by the lookahead for the join
}

// set makes r the row of it, with none of the rest: one copy of it
// (a composite literal would be zeroed first).
func (r *sideRow) set(it *msprobe.Item) {
	r.it = *it
	r.key, r.stack, r.owner, r.fused, r.fast, r.ahead = "", nil, nil, nil, 0, keyHashes{}
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
	output       bool        // an output row (".output." in its name)
	ncell, bcell [4]cell     // the stat cells as they print (set by groupWriter.add)
	diff         [8]text     // statistics: 4 diffs then 4 relative errors
	met          [6]Metric   // tensor metrics
	readErr      string      // tensor mode: why the row's files could not be read
	nums         [4]statNums // numbers of diff[i]/diff[4+i]
	result       string
	msgs         []string
	color        Color
	cells        []Cell // rendered by prepare (cell sinks)
	line         []byte // rendered by prepare (line sinks)
}

// setCells derives the stat cells once per row.
func (r *outRow) setCells() {
	for i := 0; i < 4; i++ {
		r.ncell[i].setStat(r.npu, i, r.npuFloat || (r.bench == nil && r.noBenchFloat[i]))
		if r.bench == nil {
			r.bcell[i] = naCell
			continue
		}
		r.bcell[i].setStat(r.bench, i, r.benchFloat)
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

// rowOut receives a row's cells as render produces them: as msprobe's CSV
// line (line sinks: numbers formatted straight into it, nothing
// allocated) or as Cells.
type rowOut struct {
	csv   bool
	line  []byte
	cells []Cell
	buf   []byte
}

func (o *rowOut) sep() {
	if o.csv && len(o.line) > 0 {
		o.line = append(o.line, ',')
	}
}

// str adds a text cell.
func (o *rowOut) str(s string) {
	if o.csv {
		o.sep()
		o.line = appendCSVField(o.line, s)
		return
	}
	o.cells = append(o.cells, Cell{Text: s})
}

// pair adds an NPU text cell and its bench one: a bench text equal to
// the NPU's (the common case) copies its CSV field instead of quoting it
// again.
func (o *rowOut) pair(npu, bench string) {
	if !o.csv {
		o.cells = append(o.cells, Cell{Text: npu}, Cell{Text: bench})
		return
	}
	o.sep()
	at := len(o.line)
	o.line = append(appendCSVField(o.line, npu), ',')
	if bench == npu {
		o.line = append(o.line, o.line[at:len(o.line)-1]...)
		return
	}
	o.line = appendCSVField(o.line, bench)
}

// plain adds a text cell known to need no CSV quoting.
func (o *rowOut) plain(s string) {
	if o.csv {
		o.sep()
		o.line = append(o.line, s...)
		return
	}
	o.cells = append(o.cells, Cell{Text: s})
}

// quoted adds a text cell given with its CSV form.
func (o *rowOut) quoted(s, csv string) {
	if o.csv {
		o.sep()
		o.line = append(o.line, csv...)
		return
	}
	o.cells = append(o.cells, Cell{Text: s})
}

// text adds a text cell held in b (valid during the call).
func (o *rowOut) text(b []byte) {
	if o.csv {
		o.sep()
		o.line = appendCSVField(o.line, b)
		return
	}
	o.cells = append(o.cells, Cell{Text: string(b)})
}

// plainText is text for a cell known to need no CSV quoting (numbers,
// msprobe's rule words).
func (o *rowOut) plainText(b []byte) {
	if o.csv {
		o.sep()
		o.line = append(o.line, b...)
		return
	}
	o.cells = append(o.cells, Cell{Text: string(b)})
}

// stat adds a statistics cell.
func (o *rowOut) stat(c *cell) {
	if o.csv {
		o.sep()
		o.line = c.appendCSV(o.line)
		return
	}
	o.cells = append(o.cells, statCell(*c))
}

// metric adds a tensor metric cell.
func (o *rowOut) metric(m Metric) {
	switch {
	case !m.IsNum || m.Text != "":
		o.str(m.Text)
	case o.csv:
		o.sep()
		o.line = msprobe.AppendPyFloat(o.line, m.Value)
	default:
		o.cells = append(o.cells, Cell{Text: m.String(), Num: true, Val: m.Value})
	}
}

// render produces a judged row's cells.
func (r *outRow) render(mode Mode, stack bool, o *rowOut) {
	n := &r.npu.it
	if r.bench != nil {
		b := &r.bench.it
		o.pair(n.Name, b.Name)
		o.pair(n.Dtype, b.Dtype)
		o.pair(n.Shape, b.Shape)
		o.pair(r.npuReqGrad(), reqGrad(b.RequiresGrad))
	} else {
		o.str(n.Name)
		o.plain("N/A")
		o.str(n.Dtype)
		o.plain("N/A")
		o.str(n.Shape)
		o.plain("N/A")
		o.str(r.npuReqGrad())
		o.plain("N/A")
	}
	switch mode {
	case Statistics:
		for i := range r.diff {
			o.plainText(r.diff[i].bytes())
		}
	case Tensor:
		for _, m := range r.met {
			o.metric(m)
		}
	case MD5:
		o.str(r.npuMD5())
		o.str(r.benchMD5())
	}
	if mode != MD5 {
		for i := range r.ncell {
			o.stat(&r.ncell[i])
		}
		for i := range r.bcell {
			o.stat(&r.bcell[i])
		}
	}
	if r.npuReqGrad() == r.benchReqGrad() {
		o.plain("True")
	} else {
		o.plain("False")
	}
	o.plain(r.result)
	if len(r.msgs) == 0 {
		o.plain("[]")
	} else {
		o.buf = msprobe.AppendJSONDumps(o.buf[:0], r.msgs)
		o.text(o.buf)
	}
	if stack {
		if s := r.npu.stack; s != nil {
			o.quoted(s.text, s.csv)
		} else {
			o.plain("N/A")
		}
	}
	if mode == Tensor {
		bdn := "N/A"
		if r.bench != nil {
			bdn = dataName(&r.bench.it)
		}
		o.buf = append(msprobe.AppendPyRepr(append(msprobe.AppendPyRepr(append(o.buf[:0], '['), dataName(n)), ", "...), bdn), ']')
		o.text(o.buf)
	}
	if o.csv {
		o.line = append(o.line, '\n')
	}
}

// stackCell is an NPU_Stack_Info text, rendered once per distinct stack.
type stackCell struct {
	text   string // Python's str() of the frames list
	csv    string // text as a CSV field
	daJSON []byte // -da's JSON of the list (da.go), made when first asked for
}

// stackPending marks an entry's first row whose stack cell is set later:
// the NPU reader does not wait for stack.json (read beside the bench
// side's skim); the join sets the cell when it takes the entry.
var stackPending = &stackCell{}

// stackCells renders entries' stack cells. Entries share stacks (a
// stack.json group holds one frames slice): each distinct one is rendered
// once. One goroutine uses it.
type stackCells struct {
	frames StackFrames
	cells  map[*string]*stackCell
	empty  *stackCell
}

// newStackCells renders the cells of frames' entries.
func newStackCells(frames StackFrames) *stackCells {
	return &stackCells{frames: frames, cells: map[*string]*stackCell{}, empty: &stackCell{text: "[]", csv: "[]"}}
}

// cell is the stack cell of entry, nil when stack.json has none.
func (s *stackCells) cell(entry string) *stackCell {
	fr, ok := s.frames.Frames(entry)
	if !ok {
		return nil
	}
	if len(fr) == 0 {
		return s.empty
	}
	c := s.cells[&fr[0]]
	if c == nil {
		t := msprobe.PyStrList(fr)
		c = &stackCell{text: t, csv: string(appendCSVField(nil, t))}
		s.cells[&fr[0]] = c
	}
	return c
}

// cellNow is cell when the frames are read, else stackPending.
func (s *stackCells) cellNow(entry string) *stackCell {
	if r, ok := s.frames.(interface{ ready() bool }); ok && !r.ready() {
		return stackPending
	}
	return s.cell(entry)
}
