package compare

import (
	"sync"

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
	pos   int32      // an NPU row's msprobe.Entry.Member + 1 (0: not known), trusted as its entry's position
	num   int32      // a row's position among its dump's rows (entries msprobe skips aside) + 1 (0: not known)
	ahead keyHashes  // key's candidate prefixes, hashed by the lookahead for the join
}

// set makes r the row of it, with none of the rest: one copy of it
// (a composite literal would be zeroed first).
func (r *sideRow) set(it *msprobe.Item) {
	r.it = *it
	r.key, r.stack, r.owner, r.fused, r.fast, r.pos, r.num, r.ahead = "", nil, nil, nil, 0, 0, 0, keyHashes{}
}

// member is the msprobe.Entry.Member of an NPU row's entry, -1 where not
// known (a row built rather than read).
func (r *sideRow) member() int { return int(r.pos) - 1 }

// outRow is one row of the result table.
type outRow struct {
	npu          *sideRow
	bench        *sideRow // nil when unmatched (or dropped by the dtype gate)
	source       MatchSource
	output       bool        // an output row (".output." in its name)
	ncell, bcell [4]cell     // the stat cells as they print (groupWriter.prepare; none in md5 mode)
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

// setCells derives the stat cells once per row, as the table's
// whole-column effects art print them.
func (r *outRow) setCells(art *artifacts) {
	for i := 0; i < 4; i++ {
		r.ncell[i].setStat(r.npu, i, art.npuFloat[i] || (r.bench == nil && art.noBenchFloat[i]))
		if r.bench == nil {
			r.bcell[i] = naCell
			continue
		}
		r.bcell[i].setStat(r.bench, i, art.benchFloat[i])
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
// numbers (written as numbers in xlsx), Bool those it holds as Python
// bools, Text "True" or "False" (written as booleans in xlsx).
type Cell struct {
	Text string
	Num  bool
	Bool bool
	Val  float64
}

func txt(s string) Cell { return Cell{Text: s} }

func statCell(c cell) Cell {
	if c.isNum() {
		return Cell{Text: c.csv(), Num: true, Val: c.f}
	}
	return Cell{Text: c.csv(), Bool: c.k == cBool}
}

// rowOut renders rows: as Cells (cell sinks), or as msprobe's CSV line
// (line sinks: numbers formatted straight into it, nothing allocated).
type rowOut struct {
	cells []Cell
	buf   []byte
}

// str adds a text cell.
func (o *rowOut) str(s string) { o.cells = append(o.cells, Cell{Text: s}) }

// metric adds a tensor metric cell.
func (o *rowOut) metric(m Metric) {
	if !m.IsNum || m.Text != "" {
		o.str(m.Text)
		return
	}
	o.cells = append(o.cells, Cell{Text: m.String(), Num: true, Val: m.Value})
}

// render produces a judged row's cells.
func (r *outRow) render(mode Mode, stack bool, o *rowOut) {
	n := &r.npu.it
	if r.bench != nil {
		b := &r.bench.it
		o.cells = append(o.cells, Cell{Text: n.Name}, Cell{Text: b.Name}, Cell{Text: n.Dtype}, Cell{Text: b.Dtype},
			Cell{Text: n.Shape}, Cell{Text: b.Shape}, Cell{Text: r.npuReqGrad()}, Cell{Text: reqGrad(b.RequiresGrad)})
	} else {
		o.cells = append(o.cells, Cell{Text: n.Name}, Cell{Text: "N/A"}, Cell{Text: n.Dtype}, Cell{Text: "N/A"},
			Cell{Text: n.Shape}, Cell{Text: "N/A"}, Cell{Text: r.npuReqGrad()}, Cell{Text: "N/A"})
	}
	switch mode {
	case Statistics:
		for i := range r.diff {
			o.str(r.diff[i].String())
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
			o.cells = append(o.cells, statCell(r.ncell[i]))
		}
		for i := range r.bcell {
			o.cells = append(o.cells, statCell(r.bcell[i]))
		}
	}
	consistent := "False" // Requires_grad Consistent, a bool column
	if r.npuReqGrad() == r.benchReqGrad() {
		consistent = "True"
	}
	o.cells = append(o.cells, Cell{Text: consistent, Bool: true})
	o.str(r.result)
	if len(r.msgs) == 0 {
		o.str("[]")
	} else {
		o.buf = msprobe.AppendJSONDumps(o.buf[:0], r.msgs)
		o.str(string(o.buf))
	}
	if stack {
		if s := r.npu.stack; s != nil {
			o.str(s.Text())
		} else {
			o.str("N/A")
		}
	}
	if mode == Tensor {
		o.buf = r.dataNames(o.buf[:0])
		o.str(string(o.buf))
	}
}

// dataNames appends the Data_name cell: the Python list of the two
// sides' file names.
func (r *outRow) dataNames(b []byte) []byte {
	bdn := "N/A"
	if r.bench != nil {
		bdn = dataName(&r.bench.it)
	}
	return append(msprobe.AppendPyRepr(append(msprobe.AppendPyRepr(append(b, '['), dataName(&r.npu.it)), ", "...), bdn), ']')
}

// appendLine appends a judged row as msprobe's CSV line, newline
// included: render's cells, CSV-encoded.
func (o *rowOut) appendLine(b []byte, r *outRow, mode Mode, stack bool) []byte {
	n := &r.npu.it
	if r.bench != nil {
		bi := &r.bench.it
		b = appendPair(b, n.Name, bi.Name)
		b = appendPair(append(b, ','), n.Dtype, bi.Dtype)
		b = appendPair(append(b, ','), n.Shape, bi.Shape)
		b = appendPair(append(b, ','), r.npuReqGrad(), reqGrad(bi.RequiresGrad))
	} else {
		b = append(appendCSVField(b, n.Name), ",N/A,"...)
		b = append(appendCSVField(b, n.Dtype), ",N/A,"...)
		b = append(appendCSVField(b, n.Shape), ",N/A,"...)
		b = append(appendCSVField(b, r.npuReqGrad()), ",N/A"...)
	}
	switch {
	case mode == Statistics:
		for i := range r.diff {
			b = r.diff[i].appendTo(append(b, ','))
		}
	case mode == Tensor:
		for _, m := range r.met {
			b = append(b, ',')
			if !m.IsNum || m.Text != "" {
				b = appendCSVField(b, m.Text)
			} else {
				b = msprobe.AppendPyFloat(b, m.Value)
			}
		}
	case mode == MD5:
		b = appendCSVField(append(b, ','), r.npuMD5())
		b = appendCSVField(append(b, ','), r.benchMD5())
	}
	if mode != MD5 {
		for i := range r.ncell {
			b = r.ncell[i].appendCSV(append(b, ','))
		}
		if r.bench == nil {
			b = append(b, ",N/A,N/A,N/A,N/A"...) // setCells' bench cells without a bench row
		} else {
			for i := range r.bcell {
				b = r.bcell[i].appendCSV(append(b, ','))
			}
		}
	}
	if r.npuReqGrad() == r.benchReqGrad() {
		b = append(b, ",True,"...)
	} else {
		b = append(b, ",False,"...)
	}
	b = append(append(b, r.result...), ',')
	if len(r.msgs) == 0 {
		b = append(b, "[]"...)
	} else {
		o.buf = msprobe.AppendJSONDumps(o.buf[:0], r.msgs)
		b = appendCSVField(b, o.buf)
	}
	if stack {
		if s := r.npu.stack; s != nil {
			b = append(append(b, ','), s.CSV()...)
		} else {
			b = append(b, ",N/A"...)
		}
	}
	if mode == Tensor {
		o.buf = r.dataNames(o.buf[:0])
		b = appendCSVField(append(b, ','), o.buf)
	}
	return append(b, '\n')
}

// appendPair appends an NPU text field and its bench one: a bench text
// equal to the NPU's (the common case) copies its CSV field instead of
// quoting it again.
func appendPair(b []byte, npu, bench string) []byte {
	at := len(b)
	b = appendCSVField(b, npu)
	if bench != npu {
		return appendCSVField(append(b, ','), bench)
	}
	end := len(b)
	return append(append(b, ','), b[at:end]...)
}

// stackCell is an NPU_Stack_Info text, rendered once per distinct stack.
type stackCell struct {
	frames []string
	// Python's str() of the frames list, and that as a CSV field, each
	// made when first asked for: a table takes one of them (cell sinks the
	// text, line sinks the field), and a dump's distinct stacks can hold
	// many MB.
	textOnce, csvOnce sync.Once
	text, csv         string
	daJSON            []byte // -da's JSON of the list (da.go), made when first asked for (a daRank's cells are its own, on one goroutine)
}

// Text is Python's str() of the frames list.
func (c *stackCell) Text() string {
	c.textOnce.Do(func() { c.text = msprobe.PyStrList(c.frames) })
	return c.text
}

// CSV is Text as a CSV field.
func (c *stackCell) CSV() string {
	c.csvOnce.Do(func() { c.csv = string(appendCSVField(nil, msprobe.PyStrList(c.frames))) })
	return c.csv
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
	next   framesNexter // frames, when it takes a cursor
	cur    msprobe.StackCursor
	cells  map[*string]*stackCell
	empty  *stackCell
}

// framesNexter looks entries up in their order (msprobe.Stacks.FramesNext).
type framesNexter interface {
	FramesNext(c *msprobe.StackCursor, entry string) ([]string, bool)
}

// newStackCells renders the cells of frames' entries.
func newStackCells(frames StackFrames) *stackCells {
	next, _ := frames.(framesNexter)
	return &stackCells{frames: frames, next: next, cells: map[*string]*stackCell{}, empty: &stackCell{frames: []string{}}}
}

// cell is the stack cell of entry, nil when stack.json has none. Entries
// come in dump order: a cursor finds most next to the last ones.
func (s *stackCells) cell(entry string) *stackCell {
	var fr []string
	var ok bool
	if s.next != nil {
		fr, ok = s.next.FramesNext(&s.cur, entry)
	} else {
		fr, ok = s.frames.Frames(entry)
	}
	if !ok {
		return nil
	}
	if len(fr) == 0 {
		return s.empty
	}
	c := s.cells[&fr[0]]
	if c == nil {
		c = &stackCell{frames: fr}
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
