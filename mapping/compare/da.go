package compare

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/layermap/layermap/mapping/output"
	"github.com/layermap/layermap/printparse/msprobe"
)

// msprobe's first-divergence analysis (-da, spec §6), through layermap's
// table: the mapping, the data mapping, the pairs and the N:1 groups
// applied, which msprobe's own -da ignores.
//
// Per rank pair the table is written, instead of as CSV, as
// compare_result_rank{N}_{ts}.json: every entry's rows with msprobe's
// cells (Result and Err_message as calc_accuracy leaves them, the rule
// checkers do not run there; the P2POp columns by position, see daP2P)
// and is_same, false when an output row has a relative error above 50%
// (md5 mode: a different md5). Then the ranks are searched for the first
// divergence across them (diff_analyze_{ns}.json, not written when there
// is none; dasearch.go).

// daIgnore lists, per API, the outputs msprobe's is_same ignores, by
// their index among the entry's output rows
// (diff_analyze/ignore_op_list.yaml).
var daIgnore = map[string][]int{"npu_fusion_attention": {4, 5}}

// daRank writes one rank pair's per-rank JSON and keeps what the search
// across ranks needs of it (daFind).
type daRank struct {
	rank   string // the search's name of the rank numbered num, "rank_0"
	num    int
	f      *output.File
	w      *output.Writer // to f, written on another goroutine
	buf    []byte
	first  bool // no entry written yet
	err    error
	frames StackFrames
	cells  *stackCells // the entries' stacks, each distinct one rendered once (nil: no stack.json)
	row    int         // the table rows written before
	find   daFind
	// p2p are both sides' P2POp values by row position: the bench
	// side's read meanwhile (waited for before the first entry is
	// written), the NPU side's once needed (npuOpPeer).
	p2p     [2]*daP2P
	p2pErr  error
	p2pDone chan struct{}
	npuDump string
	npuErr  error // reading the NPU dump's rows failed (kept through a reset)
	// npuOwn: every table row so far is the NPU dump's row of the same
	// position, whose P2POp values are its own.
	npuOwn bool
}

// daNode is an entry the search may report.
type daNode struct {
	name  string
	info  []byte  // its data_info and stack_info
	fixes []daFix // its int statistics of rows without bench data
}

// daFix is where an int statistic of a row without bench data stands in
// a daNode's info: the no-bench downcast may print it as a float.
type daFix struct {
	at, end int
	col     int
}

// newDARank writes to f; the bench dump.json's P2POp values are read
// meanwhile, the NPU one's once a row needs them (npuOpPeer).
func newDARank(f *output.File, num int, frames StackFrames, npuDump, benchDump string) *daRank {
	d := &daRank{rank: "rank_" + strconv.Itoa(num), num: num, f: f, w: output.NewWriter(f, 1<<20), first: true, frames: frames,
		p2pDone: make(chan struct{}), npuDump: npuDump}
	d.buf = append(d.w.Tail(daRoom), '{')
	if frames != nil {
		d.cells = newStackCells(frames)
	}
	go func() {
		defer close(d.p2pDone)
		d.p2p[1], d.p2pErr = readDAP2P(benchDump)
	}()
	return d
}

// npuOpPeer returns the NPU dump's P2POp op and peer JSON at table row i,
// r: msprobe puts the NPU dump's row i beside table row i (see daP2P).
// While every row is the dump's row of the same position (ownRows), that
// is r's own item, and the NPU dump is not read again; from the first
// group with a row that is not, its rows are read by position (the rows
// before it are at their own positions: the same values). A failed
// reading fails the rank (waitP2P).
func (d *daRank) npuOpPeer(i int, r *outRow) (op, peer string) {
	if d.npuOwn {
		if r.npu.it.P2P {
			return r.npu.it.Op, r.npu.it.Peer
		}
		return `"None"`, `"None"`
	}
	if d.p2p[0] == nil {
		p, err := readDAP2P(d.npuDump)
		if err != nil {
			d.npuErr = fmt.Errorf("-da: the NPU dump's rows: %w", err)
			if d.err == nil {
				d.err = d.npuErr
			}
			p = &daP2P{}
		}
		d.p2p[0] = p
	}
	return d.p2p[0].opPeer(i)
}

// reset forgets what was written (the table is written again).
func (d *daRank) reset() {
	d.w.Reset(d.f)
	if d.err = d.f.Truncate(); d.err == nil {
		d.buf, d.first, d.row, d.find = append(d.w.Tail(daRoom), '{'), true, 0, daFind{}
	}
}

// flush hands the buffer to the writer when it is large. The buffer is
// the writer's free end (output.Writer.Tail): the entries are made in
// place, and copied only where they outgrew it.
func (d *daRank) flush(force bool) {
	if d.err == nil && (force || len(d.buf) > daFlush) {
		_, d.err = d.w.Commit(d.buf)
		d.buf = d.w.Tail(daRoom)
	}
}

// daFlush is the bytes of entries flush hands over at a time; daRoom the
// room it asks of the writer for the next ones (half its buffer), so
// that entries of up to daRoom-daFlush bytes are made in place.
const (
	daFlush = 256 << 10
	daRoom  = 512 << 10
)

// daP2P are one side's P2POp values by row position. msprobe's -da puts
// them beside the table with result_df['NPU P2POp op'] = npu_df['op'],
// which pandas aligns by index: table row i gets the side's row i, not
// the row it matched, and NaN past the side's last row.
type daP2P struct {
	rows int
	at   map[int][2]string // op and peer (json.dumps) of the P2POp rows
	md5  bool              // an entry carries an md5 (msprobe.Header.MD5)
}

// opPeer returns the op and peer JSON of table row i.
func (t *daP2P) opPeer(i int) (op, peer string) {
	if i >= t.rows {
		return "NaN", "NaN"
	}
	if v, ok := t.at[i]; ok {
		return v[0], v[1]
	}
	return `"None"`, `"None"` // op_item.get('op', str(None))
}

// readDAP2P reads the rows of a dump.json as msprobe's -da numbers them
// and keeps the P2POp rows' values. They are counted first: a dump
// without a P2POp row (most) is not read again for their names.
func readDAP2P(path string) (*daP2P, error) {
	c, err := msprobe.ScanFileRowCount(path)
	if err != nil || !c.P2P {
		return &daP2P{rows: c.Rows, md5: c.MD5}, err
	}
	t := &daP2P{}
	h, _, err := msprobe.ScanFileRowNames(path, func() { *t = daP2P{} }, func(e *msprobe.Entry) error {
		for i := range e.Items {
			if it := &e.Items[i]; it.P2P {
				if t.at == nil {
					t.at = map[int][2]string{}
				}
				t.at[t.rows] = [2]string{it.Op, it.Peer}
			}
			t.rows++
		}
		return nil
	})
	t.md5 = h.MD5
	return t, err
}

// benchTotal is what -da's reading of the bench dump.json found: its rows
// and whether an entry carries an md5, as a count of the entries no NPU
// row asks for would (benchIndex.finish); false when d is nil or the
// reading failed.
func (d *daRank) benchTotal() (rows int, md5, ok bool) {
	if d == nil {
		return 0, false, false
	}
	<-d.p2pDone
	if d.p2pErr != nil || d.p2p[1] == nil {
		return 0, false, false
	}
	return d.p2p[1].rows, d.p2p[1].md5, true
}

// waitP2P waits for the P2POp values; false (with the error kept) when
// they could not be read.
func (d *daRank) waitP2P() bool {
	<-d.p2pDone
	if err := cmp.Or(d.p2pErr, d.npuErr); err != nil && d.err == nil {
		d.err = err
	}
	return d.err == nil
}

// finish closes the JSON object and writes it.
func (d *daRank) finish() error {
	if !d.first {
		d.buf = append(d.buf, '\n')
	}
	d.buf = append(d.buf, '}')
	d.flush(true)
	if err := d.w.Flush(); d.err == nil {
		d.err = err
	}
	return d.err
}

// ownRows keeps npuOwn true while every row of grp, the table rows from
// row on, is the NPU dump's row of the same position (sideRow.num): not
// one row of several its key matched, nor after a row msprobe's -da
// numbers and the table lacks, nor made or changed by an N:1 group or
// tensor-parallel shards (fused.go, tp.go).
func (d *daRank) ownRows(grp []*outRow, row int) {
	for k, r := range grp {
		if !d.npuOwn || int64(r.npu.num) != int64(row+k)+1 || r.npu.fused != nil {
			d.npuOwn = false
			return
		}
	}
}

// add writes the group of one entry.
func (d *daRank) add(grp []*outRow, mode Mode, stack bool) {
	row := d.row
	d.row += len(grp)
	d.ownRows(grp, row)
	name := grp[0].npu.it.Entry
	if strings.Count(name, ".") < 3 || !d.waitP2P() {
		return // fewer than 4 dot-parts: msprobe skips it; or the P2POp values' error
	}
	same := true
	ignored, out := daIgnoredOutputs(name), -1 // out: the output rows' index
	for _, r := range grp {
		if r.npu.it.State != msprobe.StateOutput {
			continue
		}
		if out++; slices.Contains(ignored, out) {
			continue
		}
		if mode == MD5 {
			if r.bench != nil && r.npuMD5() != r.benchMD5() {
				same = false
			}
			continue
		}
		for i := 0; i < 4; i++ {
			if r.nums[i].pctOK && r.nums[i].pct > 0.5 {
				same = false
			}
		}
	}
	if !d.first {
		d.buf = append(d.buf, ',')
	}
	d.first = false
	d.buf = append(d.buf, "\n    "...)
	d.buf = msprobe.AppendJSONString(d.buf, name)
	d.buf = append(d.buf, ": {\n        \"is_same\": "...)
	d.buf = strconv.AppendBool(d.buf, same)
	d.buf = append(d.buf, ",\n        \"op_items\": ["...)
	for i, r := range grp {
		if i > 0 {
			d.buf = append(d.buf, ',')
		}
		d.buf = append(d.buf, "\n            {"...)
		d.opItem(r, row+i, mode, stack)
		d.buf = append(d.buf, "\n            }"...)
		d.flush(false) // an entry of many rows goes out as it is made
	}
	d.buf = append(d.buf, "\n        ]\n    }"...)
	d.find.entry(name, same, func() *daNode {
		// a clone: the entry's name shares its rows' strings (msprobe.ScanReuse)
		return d.node(strings.Clone(name), grp, row, mode)
	}, func() []daInput { return d.inputs(grp, row, mode) })
	d.flush(false)
}

// inputs are the input rows of grp, an op whose first row is table row
// row, that the search reads, as the per-rank JSON holds them: those
// whose name holds src or dst or ends in .group, and those with a P2POp
// peer.
func (d *daRank) inputs(grp []*outRow, row int, mode Mode) []daInput {
	var ins []daInput
	save := d.buf
	for k, r := range grp {
		if r.npu.it.State != msprobe.StateInput {
			continue
		}
		name := r.npu.it.Name
		_, peer := d.npuOpPeer(row+k, r)
		if peer == `"None"` && !strings.Contains(name, "src") && !strings.Contains(name, "dst") && !strings.HasSuffix(name, ".group") {
			continue
		}
		d.buf = nil
		if mode == MD5 {
			d.str(r.npuMD5())
		} else {
			d.cellJSON(&r.ncell[0])
		}
		ins = append(ins, daInput{name: strings.Clone(name), value: string(d.buf), peer: peer})
	}
	d.buf = save
	return ins
}

// daIgnoredOutputs are the outputs of entry name msprobe's is_same
// passes over (daIgnore): by the API, the third part of the name from
// its end.
func daIgnoredOutputs(name string) []int {
	end := len(name)
	for range 2 {
		if end = strings.LastIndexByte(name[:end], '.'); end < 0 {
			return nil
		}
	}
	return daIgnore[name[strings.LastIndexByte(name[:end], '.')+1:end]]
}

// kv starts one "key": member at the given indent.
func (d *daRank) kv(first bool, indent, key string) {
	if !first {
		d.buf = append(d.buf, ',')
	}
	d.buf = append(d.buf, '\n')
	d.buf = append(d.buf, indent...)
	d.buf = msprobe.AppendJSONString(d.buf, key)
	d.buf = append(d.buf, ": "...)
}

// str appends a JSON string.
func (d *daRank) str(s string) { d.buf = msprobe.AppendJSONString(d.buf, s) }

// cellJSON appends a statistics cell as the JSON of msprobe's frame value:
// numbers as numbers (inf as Infinity), booleans, the rest as strings.
func (d *daRank) cellJSON(c *cell) {
	switch c.k {
	case cFloat:
		switch {
		case c.f > 0 && c.f*0.5 == c.f:
			d.buf = append(d.buf, "Infinity"...)
		case c.f < 0 && c.f*0.5 == c.f:
			d.buf = append(d.buf, "-Infinity"...)
		case c.s != "":
			d.buf = append(d.buf, c.s...) // the repr (setStat)
		case c.rn > 0:
			d.buf = append(d.buf, c.r[:c.rn]...) // the repr, cached
		default:
			d.buf = msprobe.AppendPyFloat(d.buf, c.f)
		}
	case cInt:
		d.buf = append(d.buf, c.s...)
	case cBool:
		d.buf = strconv.AppendBool(d.buf, c.b)
	default: // a None too: msprobe holds str(None)
		d.str(c.str())
	}
}

// daItemIndent is the indent of an op item's members.
const daItemIndent = "                "

// daKeys are how the per-rank JSON starts each of these op item members:
// line break, indent, quoted key and ": ".
func daKeys(keys ...string) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = string(msprobe.AppendJSONString([]byte("\n"+daItemIndent), k)) + ": "
	}
	return out
}

// The op item members' starts, by group, in the order they are written.
var (
	daHeadKeys = daKeys("NPU Name", "Bench Name", "NPU Dtype", "Bench Dtype", "NPU Tensor Shape", "Bench Tensor Shape",
		"NPU Requires_grad", "Bench Requires_grad")
	daMD5Keys  = daKeys("NPU MD5", "BENCH MD5")
	daDiffKeys = daKeys("Max diff", "Min diff", "Mean diff", "L2norm diff", "MaxRelativeErr", "MinRelativeErr", "MeanRelativeErr",
		"NormRelativeErr")
	daStatKeys = daKeys("NPU max", "NPU min", "NPU mean", "NPU l2norm", "Bench max", "Bench min", "Bench mean", "Bench l2norm")
	daTailKeys = daKeys("Requires_grad Consistent", "Result", "Err_message", "NPU_Stack_Info", "state", "api_origin_name",
		"NPU P2POp op", "Bench P2POp op", "NPU P2POp peer", "Bench P2POp peer")
)

// daKey is a member's start (one of daKeys') after its comma, in an
// array: member appends it as one fixed-size copy.
type daKey struct {
	n uint8
	b [64]byte
}

// fixedKeys are keys as daKeys.
func fixedKeys(keys []string) []daKey {
	out := make([]daKey, len(keys))
	for i, k := range keys {
		if len(k)+1 > len(out[i].b) {
			panic("compare: a -da key longer than daKey holds: " + k)
		}
		out[i].n = uint8(copy(out[i].b[:], ","+k))
	}
	return out
}

// The op item members' starts as daKeys.
var (
	daHeadFixed = fixedKeys(daHeadKeys)
	daMD5Fixed  = fixedKeys(daMD5Keys)
	daDiffFixed = fixedKeys(daDiffKeys)
	daStatFixed = fixedKeys(daStatKeys)
	daTailFixed = fixedKeys(daTailKeys)
)

// member starts an op item member: its comma unless first, and its key.
func (d *daRank) member(first bool, key *daKey) {
	if first {
		d.buf = append(d.buf, key.b[1:key.n]...)
		return
	}
	k := len(d.buf)
	if cap(d.buf)-k < len(key.b) {
		d.buf = slices.Grow(d.buf, len(key.b))
	}
	*(*[len(key.b)]byte)(d.buf[k : k+len(key.b)]) = key.b
	d.buf = d.buf[:k+int(key.n)]
}

// opItem writes the members of table row i (every table column, then
// state, api_origin_name and the P2P columns).
func (d *daRank) opItem(r *outRow, i int, mode Mode, stack bool) {
	n := &r.npu.it
	bn, bd, bs, brg := "N/A", "N/A", "N/A", "N/A"
	if r.bench != nil {
		b := &r.bench.it
		bn, bd, bs, brg = b.Name, b.Dtype, b.Shape, reqGrad(b.RequiresGrad)
	}
	for k, v := range [...]string{n.Name, bn, n.Dtype, bd, n.Shape, bs, r.npuReqGrad(), brg} {
		d.member(k == 0, &daHeadFixed[k])
		d.str(v)
	}
	if mode == MD5 {
		for k, v := range [...]string{r.npuMD5(), r.benchMD5()} {
			d.member(false, &daMD5Fixed[k])
			d.str(v)
		}
	} else {
		for k := range daDiffKeys {
			d.member(false, &daDiffFixed[k])
			d.buf = msprobe.AppendJSONString(d.buf, r.diff[k].bytes())
		}
		for k := range daStatKeys {
			d.member(false, &daStatFixed[k])
			if k < 4 {
				d.cellJSON(&r.ncell[k])
			} else {
				d.cellJSON(&r.bcell[k-4])
			}
		}
	}
	tail := daTailFixed
	d.member(false, &tail[0]) // Requires_grad Consistent
	d.buf = strconv.AppendBool(d.buf, r.npuReqGrad() == r.benchReqGrad())
	// msprobe's provisional Result and Err_message (calc_accuracy; the
	// rule checkers that would replace them do not run for -da): a row
	// without bench data is N/A, "No bench data matched."; in statistics
	// mode "Requires_grad inconsistent. " follows where the two differ
	// (N/A on the side without data); md5 mode says pass or Different and
	// leaves the message NaN.
	result, msg := "", ""
	switch {
	case mode == MD5 && r.npuMD5() == r.benchMD5():
		result = "pass" // N/A against a missing bench row's N/A too
		if r.bench == nil {
			msg = "No bench data matched."
		}
	case r.bench == nil:
		result, msg = "N/A", "No bench data matched."
	case mode == MD5:
		result = "Different"
	}
	if mode != MD5 && r.npuReqGrad() != r.benchReqGrad() {
		msg += "Requires_grad inconsistent. "
	}
	d.member(false, &tail[1])
	d.str(result)
	d.member(false, &tail[2])
	if mode == MD5 && r.bench != nil {
		d.buf = append(d.buf, "NaN"...)
	} else {
		d.str(msg)
	}
	if stack {
		d.member(false, &tail[3])
		d.stack(r)
	}
	d.member(false, &tail[4])
	d.str(n.State)
	d.member(false, &tail[5])
	d.str(n.Entry)
	nop, npeer := d.npuOpPeer(i, r)
	bop, bpeer := d.p2p[1].opPeer(i)
	for k, v := range [...]string{nop, bop, npeer, bpeer} {
		d.member(false, &tail[6+k])
		d.buf = append(d.buf, v...) // JSON already
	}
}

// stack appends a row's NPU_Stack_Info: the entry's frames on its first
// row, "N/A" on the others.
func (d *daRank) stack(r *outRow) {
	var c *stackCell
	if r.npu.stack != nil && d.cells != nil {
		c = d.cells.cell(r.npu.it.Entry)
	}
	if c == nil {
		d.str("N/A")
		return
	}
	if c.daJSON == nil {
		fr, _ := d.frames.Frames(r.npu.it.Entry)
		c.daJSON = appendFramesJSON(nil, fr, daItemIndent+"    ", daItemIndent)
	}
	d.buf = append(d.buf, c.daJSON...)
}

// appendFramesJSON appends frames as a JSON list written with an indent:
// a frame a line at indent in, the closing bracket at out; [] when there
// is none.
func appendFramesJSON(dst []byte, frames []string, in, out string) []byte {
	if len(frames) == 0 {
		return append(dst, "[]"...)
	}
	dst = append(dst, '[')
	for i, f := range frames {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, '\n')
		dst = append(dst, in...)
		dst = msprobe.AppendJSONString(dst, f)
	}
	dst = append(dst, '\n')
	dst = append(dst, out...)
	return append(dst, ']')
}

// node renders the entry's diff node of the search's output (2-space
// indent, nested in a rank's list): its rows' NPU statistics by state and
// its stack, with where the int statistics of rows without bench data
// stand (fixes); the group's first row is table row row.
func (d *daRank) node(name string, grp []*outRow, row int, mode Mode) *daNode {
	dn := &daNode{name: name}
	save := d.buf
	d.buf = nil
	part := func(first bool, key string, output bool) {
		d.kv(first, "        ", key)
		d.buf = append(d.buf, '{')
		n := 0
		for k, r := range grp {
			// DataNode.parse_data keeps the input and output rows alone
			// (not parameters, parameters_grad)
			if st := r.npu.it.State; output && st != msprobe.StateOutput || !output && st != msprobe.StateInput {
				continue
			}
			d.kv(n == 0, "          ", r.npu.it.Name)
			d.buf = append(d.buf, '{')
			if mode == MD5 {
				d.kv(true, "            ", "NPU MD5")
				d.str(r.npuMD5())
			} else {
				for i, h := range npuStatColumns {
					d.kv(i == 0, "            ", h)
					at := len(d.buf)
					d.cellJSON(&r.ncell[i])
					if r.bench == nil && r.ncell[i].k == cInt {
						dn.fixes = append(dn.fixes, daFix{at, len(d.buf), i})
					}
				}
			}
			// the search reads the per-rank JSON: the row's value there
			d.kv(false, "            ", "NPU P2POp peer")
			_, peer := d.npuOpPeer(row+k, r)
			d.buf = append(d.buf, peer...)
			d.buf = append(d.buf, "\n          }"...)
			n++
		}
		if n > 0 {
			d.buf = append(d.buf, "\n        "...)
		}
		d.buf = append(d.buf, '}')
	}
	d.buf = append(d.buf, "{"...)
	part(true, "input", false)
	part(false, "output", true)
	d.buf = append(d.buf, "\n      }"...)
	d.kv(false, "      ", "stack_info")
	var fr []string
	ok := false
	if d.frames != nil {
		fr, ok = d.frames.Frames(grp[0].npu.it.Entry)
	}
	if ok {
		d.buf = appendFramesJSON(d.buf, fr, "        ", "      ")
	} else {
		d.buf = append(d.buf, "null"...) // DataNode.stack stays None without a row's stack
	}
	dn.info = d.buf
	d.buf = save
	return dn
}

// daRankNum is the search's number of a rank: N of the NPU rank folder
// rankN (0 for a folder without a rank number).
func daRankNum(d msprobe.RankDir) int {
	if d.Proc || d.Rank < 0 || !strings.HasPrefix(d.Name, "rank") {
		return 0
	}
	return d.Rank
}

// daSink is the table's sink under -da: the rows go to the per-rank JSON
// (through Summary.tally), no table file is written.
type daSink struct{ d *daRank }

func (s *daSink) rowless()                  {}
func (s *daSink) Header([]string) error     { return nil }
func (s *daSink) Row([]Cell, RowMark) error { return nil }
func (s *daSink) Reset() error              { s.d.reset(); return s.d.err }
func (s *daSink) patchNoBench(cols [4]bool) (bool, error) {
	return s.d.patchNoBench(cols)
}
func (s *daSink) Finish() error         { return s.d.finish() }
func (s *daSink) Drop()                 { s.d.f.Drop() }
func (s *daSink) files() []*output.File { return []*output.File{s.d.f} }

// writeDiffAnalyze adds the search across the run's ranks to the set.
func writeDiffAnalyze(opt Options, set *output.Set, rep *Report) error {
	var ranks []*daRank
	for _, r := range rep.Ranks {
		if r.da != nil {
			ranks = append(ranks, r.da)
		}
	}
	b, _, err := daSearch(ranks)
	if err != nil {
		fmt.Fprintf(opt.Warnings, "layermap: warning: -da: msprobe's search across ranks fails here and writes no diff_analyze file, nor does layermap: %v\n", err)
		return nil
	}
	if b == nil {
		return nil
	}
	name := output.Name{Prefix: "diff_analyze_" + strconv.FormatInt(opt.Stamp.UnixNano(), 10), Suffix: ".json"}
	rep.daFile, err = set.WriteFile(opt.OutDir, name, b, resultMode)
	return err
}

// The lines of the per-rank JSON the no-bench downcast patch looks for,
// each with the line break before it: an op item's Bench Name when the
// row has no bench data, and its NPU statistics.
var (
	daNoBenchLine = []byte(daHeadKeys[1] + `"N/A",` + "\n")
	// daNoBenchAnchor is what daPatch searches for, from the end of
	// daNoBenchLine (at daNoBenchAnchorIn) into the NPU Dtype member after
	// it: its first byte is rare in the file.
	daNoBenchAnchorIn = len(daHeadKeys[1] + `"N/`)
	daNoBenchAnchor   = []byte(`A",` + daHeadKeys[2])
	daNPUStatLine     = [4][]byte{[]byte(daStatKeys[0]), []byte(daStatKeys[1]), []byte(daStatKeys[2]), []byte(daStatKeys[3])}
)

// patchNoBench applies the no-bench downcast (csvpatch.go) to what was
// written: the NPU statistics of the op items without bench data in the
// per-rank JSON, and those the search's nodes hold. JSON strings escape
// line breaks, so a line that starts as a member of an op item is one.
func (d *daRank) patchNoBench(cols [4]bool) (bool, error) {
	d.flush(true)
	if d.err == nil {
		d.err = d.w.Flush()
	}
	if d.err != nil {
		return false, d.err
	}
	d.buf = d.w.Tail(daRoom)
	err := d.f.Rewrite(func(w io.Writer, r io.Reader) error { return daPatch(w, r, cols, 0) })
	for _, n := range d.find.nodes() {
		if err == nil && n != nil {
			err = n.patch(cols)
		}
	}
	if errors.Is(err, errNoPatch) {
		return false, nil
	}
	return err == nil, err
}

// daPatch copies the per-rank JSON r to w with the int NPU statistics in
// cols of its op items without bench data as floats, reading size bytes
// at a time (1 MB when 0).
func daPatch(w io.Writer, r io.Reader, cols [4]bool, size int) error {
	// A record runs from an op item's Bench Name line, when it is N/A,
	// through its NPU l2norm line; the text between such records is copied
	// in records of whole lines.
	end := func(b []byte, i int) int {
		for j := i; ; {
			k := bytes.Index(b[j:], daNoBenchAnchor)
			if k < 0 {
				// up to the line break before the last two lines: the first
				// two lines of a record may be cut
				l := bytes.LastIndexByte(b[i:], '\n')
				if l > 0 {
					l = bytes.LastIndexByte(b[i:i+l], '\n')
				}
				if l > 0 {
					return i + l
				}
				return -1
			}
			at := j + k - daNoBenchAnchorIn
			switch {
			case at < i || !bytes.HasPrefix(b[at:], daNoBenchLine):
				j += k + 1 // another N/A cell before an NPU Dtype line
				continue
			case at > i:
				return at
			}
			if m := bytes.Index(b[i:], daNPUStatLine[3]); m >= 0 {
				at := i + m + len(daNPUStatLine[3])
				if e := bytes.IndexByte(b[at:], '\n'); e >= 0 {
					return at + e
				}
			}
			return -1
		}
	}
	fix := func(rec []byte, put func(at, end int, text []byte) error) error {
		if !bytes.HasPrefix(rec, daNoBenchLine) {
			return nil
		}
		for i, key := range daNPUStatLine {
			if !cols[i] {
				continue
			}
			k := bytes.Index(rec, key)
			if k < 0 {
				continue
			}
			at := k + len(key)
			end := at + bytes.IndexAny(rec[at:], ",\n")
			if end < at {
				end = len(rec)
			}
			if err := patchInt(rec[at:end], func(text []byte) error { return put(at, end, text) }); err != nil {
				return err
			}
		}
		return nil
	}
	return patchStream(w, r, size, end, true, fix)
}

// patch prints the node's int statistics of rows without bench data in
// cols as floats.
func (n *daNode) patch(cols [4]bool) error {
	var out bytes.Buffer
	copied := 0
	for _, f := range n.fixes {
		if !cols[f.col] {
			continue
		}
		err := patchInt(n.info[f.at:f.end], func(text []byte) error {
			out.Write(n.info[copied:f.at])
			out.Write(text)
			copied = f.end
			return nil
		})
		if err != nil {
			return err
		}
	}
	if copied > 0 {
		out.Write(n.info[copied:])
		n.info = out.Bytes()
	}
	n.fixes = nil
	return nil
}
