package compare

import (
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
// cells (Result and Err_message left "", as msprobe leaves them there)
// and is_same, false when an output row has a relative error above 50%
// (md5 mode: a different md5). Then the ranks are searched for the first
// divergence across them (diff_analyze_{ns}.json, not written when there
// is none): on each rank the first entry that is not the same before its
// first communication op; when no rank has one, the ranks' entries are
// cut at their communication ops into segments (the k-th segment of every
// rank lies between the same collective calls) and the first segment in
// which some rank has a diff gives each such rank's first diff node.
// msprobe's own search builds a graph of the communication nodes of all
// ranks; the segments are that graph's layers when every rank calls the
// same collectives in the same order (the golden synth_multirank is
// reproduced byte for byte).

// daSkip are the APIs msprobe's search walks over.
var daSkip = []string{"Torch.empty", "Torch.fill", "Tensor.__setitem__"}

// daComm are the names of communication APIs.
var daComm = []string{"send", "recv", "broadcast", "all_reduce", "reduce", "all_gather", "gather", "isend", "irecv",
	"scatter", "reduce_scatter", "all_to_all", "barrier"}

// daIgnore lists, per API, the output indices msprobe's is_same ignores
// (diff_analyze/ignore_op_list.yaml).
var daIgnore = map[string][]string{"npu_fusion_attention": {"4", "5"}}

// daRank writes one rank pair's per-rank JSON and keeps what the search
// across ranks needs.
type daRank struct {
	rank   string // "rank_0"
	f      *output.File
	buf    []byte
	first  bool // no entry written yet
	err    error
	nodes  []daNode
	frames StackFrames
}

// daNode is an entry of a rank as the search sees it.
type daNode struct {
	name       string
	same, comm bool
	info       []byte // data_info and stack_info of an entry that is not the same
}

func newDARank(f *output.File, rank string, frames StackFrames) *daRank {
	return &daRank{rank: rank, f: f, first: true, frames: frames, buf: []byte("{")}
}

// reset forgets what was written (the table is written again).
func (d *daRank) reset() {
	if d.err = d.f.Truncate(); d.err == nil {
		d.buf, d.first, d.nodes = append(d.buf[:0], '{'), true, nil
	}
}

// flush writes the buffer when it is large.
func (d *daRank) flush(force bool) {
	if d.err == nil && (force || len(d.buf) > 1<<20) {
		_, d.err = d.f.Write(d.buf)
		d.buf = d.buf[:0]
	}
}

// finish closes the JSON object and writes it.
func (d *daRank) finish() error {
	if !d.first {
		d.buf = append(d.buf, '\n')
	}
	d.buf = append(d.buf, '}')
	d.flush(true)
	return d.err
}

// add writes the group of one entry.
func (d *daRank) add(grp []*outRow, mode Mode, stack bool) {
	name := grp[0].npu.it.Entry
	if strings.Count(name, ".") < 3 {
		return // fewer than 4 dot-parts: msprobe skips it
	}
	same := true
	for _, r := range grp {
		if r.npu.it.State != msprobe.StateOutput || daIgnored(r.npu.it.Name) {
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
		d.opItem(r, mode, stack)
		d.buf = append(d.buf, "\n            }"...)
	}
	d.buf = append(d.buf, "\n        ]\n    }"...)
	// a clone: the entry's name shares its rows' strings (msprobe.ScanReuse)
	n := daNode{name: strings.Clone(name), same: same, comm: daIsComm(name)}
	if !same {
		n.info = d.dataInfo(grp, mode)
	}
	d.nodes = append(d.nodes, n)
	d.flush(false)
}

// daIgnored reports an output row msprobe's is_same ignores.
func daIgnored(row string) bool {
	_, rest, _ := strings.Cut(row, ".")
	api, _, _ := strings.Cut(rest, ".")
	idx := row[strings.LastIndexByte(row, '.')+1:]
	for _, i := range daIgnore[api] {
		if i == idx {
			return true
		}
	}
	return false
}

// daIsComm tells a communication API's entry.
func daIsComm(name string) bool {
	kind, rest, _ := strings.Cut(name, ".")
	if kind != "Distributed" && kind != "Communication" && kind != "Mint" {
		return false
	}
	api, _, _ := strings.Cut(rest, ".")
	for _, c := range daComm {
		if strings.Contains(api, c) {
			return true
		}
	}
	return false
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
		default:
			d.buf = msprobe.AppendPyFloat(d.buf, c.f)
		}
	case cInt:
		d.buf = append(d.buf, c.s...)
	case cBool:
		d.buf = strconv.AppendBool(d.buf, c.b)
	case cNone:
		d.buf = append(d.buf, "null"...)
	default:
		d.str(c.str())
	}
}

// opItem writes one row's members (every table column, then state,
// api_origin_name and the P2P columns).
func (d *daRank) opItem(r *outRow, mode Mode, stack bool) {
	const in = "                "
	n := &r.npu.it
	bn, bd, bs, brg := "N/A", "N/A", "N/A", "N/A"
	if r.bench != nil {
		b := &r.bench.it
		bn, bd, bs, brg = b.Name, b.Dtype, b.Shape, reqGrad(b.RequiresGrad)
	}
	for i, kv := range [...][2]string{{"NPU Name", n.Name}, {"Bench Name", bn}, {"NPU Dtype", n.Dtype}, {"Bench Dtype", bd},
		{"NPU Tensor Shape", n.Shape}, {"Bench Tensor Shape", bs}, {"NPU Requires_grad", r.npuReqGrad()}, {"Bench Requires_grad", brg}} {
		d.kv(i == 0, in, kv[0])
		d.str(kv[1])
	}
	if mode == MD5 {
		d.kv(false, in, "NPU MD5")
		d.str(r.npuMD5())
		d.kv(false, in, "BENCH MD5")
		d.str(r.benchMD5())
	} else {
		for i, h := range [...]string{"Max diff", "Min diff", "Mean diff", "L2norm diff", "MaxRelativeErr", "MinRelativeErr", "MeanRelativeErr", "NormRelativeErr"} {
			d.kv(false, in, h)
			d.str(r.diff[i].String())
		}
		for i, h := range [...]string{"NPU max", "NPU min", "NPU mean", "NPU l2norm", "Bench max", "Bench min", "Bench mean", "Bench l2norm"} {
			d.kv(false, in, h)
			if i < 4 {
				d.cellJSON(&r.ncell[i])
			} else {
				d.cellJSON(&r.bcell[i-4])
			}
		}
	}
	d.kv(false, in, "Requires_grad Consistent")
	d.buf = strconv.AppendBool(d.buf, r.npuReqGrad() == r.benchReqGrad())
	// msprobe's provisional Result and Err_message (CalcStatsDiff), which
	// its rule checkers would replace
	msg := ""
	switch {
	case r.bench == nil:
		msg = "No bench data matched."
	case r.npuReqGrad() != r.benchReqGrad():
		msg = "Requires_grad inconsistent. "
	}
	d.kv(false, in, "Result")
	d.str("")
	d.kv(false, in, "Err_message")
	d.str(msg)
	if stack {
		d.kv(false, in, "NPU_Stack_Info")
		d.stack(r, in)
	}
	p2p := func(s string, ok bool) string {
		if !ok || s == "" {
			return "None"
		}
		return s
	}
	bop, bpeer, bp2p := "", "", false
	if r.bench != nil {
		bop, bpeer, bp2p = r.bench.it.Op, r.bench.it.Peer, r.bench.it.P2P
	}
	for _, kv := range [...][2]string{{"state", n.State}, {"api_origin_name", n.Entry}, {"NPU P2POp op", p2p(n.Op, n.P2P)},
		{"Bench P2POp op", p2p(bop, bp2p)}, {"NPU P2POp peer", p2p(n.Peer, n.P2P)}, {"Bench P2POp peer", p2p(bpeer, bp2p)}} {
		d.kv(false, in, kv[0])
		d.str(kv[1])
	}
}

// stack appends a row's NPU_Stack_Info: the entry's frames on its first
// row, "N/A" on the others.
func (d *daRank) stack(r *outRow, indent string) {
	var fr []string
	ok := false
	if r.npu.stack != nil && d.frames != nil {
		fr, ok = d.frames.Frames(r.npu.it.Entry)
	}
	if !ok {
		d.str("N/A")
		return
	}
	if len(fr) == 0 {
		d.buf = append(d.buf, "[]"...)
		return
	}
	d.buf = append(d.buf, '[')
	for i, f := range fr {
		if i > 0 {
			d.buf = append(d.buf, ',')
		}
		d.buf = append(d.buf, '\n')
		d.buf = append(d.buf, indent...)
		d.buf = append(d.buf, "    "...)
		d.str(f)
	}
	d.buf = append(d.buf, '\n')
	d.buf = append(d.buf, indent...)
	d.buf = append(d.buf, ']')
}

// dataInfo renders a diff node of the search's output (2-space indent,
// nested in a rank's list): its rows' NPU statistics by state, and its
// stack.
func (d *daRank) dataInfo(grp []*outRow, mode Mode) []byte {
	save := d.buf
	d.buf = nil
	part := func(first bool, key string, output bool) {
		d.kv(first, "        ", key)
		d.buf = append(d.buf, '{')
		n := 0
		for _, r := range grp {
			if (r.npu.it.State == msprobe.StateOutput) != output {
				continue
			}
			d.kv(n == 0, "          ", r.npu.it.Name)
			d.buf = append(d.buf, '{')
			if mode == MD5 {
				d.kv(true, "            ", "NPU MD5")
				d.str(r.npuMD5())
			} else {
				for i, h := range [...]string{"NPU max", "NPU min", "NPU mean", "NPU l2norm"} {
					d.kv(i == 0, "            ", h)
					d.cellJSON(&r.ncell[i])
				}
			}
			d.kv(false, "            ", "NPU P2POp peer")
			peer := "None"
			if r.npu.it.P2P && r.npu.it.Peer != "" {
				peer = r.npu.it.Peer
			}
			d.str(peer)
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
	switch {
	case !ok:
		d.str("N/A")
	case len(fr) == 0:
		d.buf = append(d.buf, "[]"...)
	default:
		d.buf = append(d.buf, '[')
		for i, f := range fr {
			if i > 0 {
				d.buf = append(d.buf, ',')
			}
			d.buf = append(d.buf, "\n        "...)
			d.str(f)
		}
		d.buf = append(d.buf, "\n      ]"...)
	}
	out := d.buf
	d.buf = save
	return out
}

// daSearch finds the first divergence across the ranks (see above) and
// renders diff_analyze's JSON; nil when no rank has a diff.
func daSearch(ranks []*daRank) []byte {
	found := make([][]*daNode, len(ranks))
	any := false
	// before each rank's first communication op
	for i, r := range ranks {
		for k := range r.nodes {
			n := &r.nodes[k]
			if daSkipped(n.name) {
				continue
			}
			if n.comm {
				break
			}
			if !n.same {
				found[i], any = []*daNode{n}, true
				break
			}
		}
	}
	if !any {
		// the first segment between communication ops with a diff
		segs := make([][][]*daNode, len(ranks))
		most := 0
		for i, r := range ranks {
			seg := []*daNode{}
			for k := range r.nodes {
				n := &r.nodes[k]
				if daSkipped(n.name) {
					continue
				}
				if n.comm {
					segs[i] = append(segs[i], seg)
					seg = []*daNode{}
					if !n.same {
						seg = append(seg, n)
					}
					continue
				}
				seg = append(seg, n)
			}
			segs[i] = append(segs[i], seg)
			most = max(most, len(segs[i]))
		}
		for s := 0; s < most && !any; s++ {
			for i := range ranks {
				if s >= len(segs[i]) {
					continue
				}
				for _, n := range segs[i][s] {
					if !n.same {
						found[i], any = []*daNode{n}, true
						break
					}
				}
			}
		}
	}
	if !any {
		return nil
	}
	b := []byte("{")
	first := true
	for i, r := range ranks {
		if found[i] == nil {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, "\n  "...)
		b = msprobe.AppendJSONString(b, r.rank)
		b = append(b, ": ["...)
		for k, n := range found[i] {
			if k > 0 {
				b = append(b, ',')
			}
			b = append(b, "\n    {\n      \"op_name\": "...)
			b = msprobe.AppendJSONString(b, n.name)
			b = append(b, ",\n      \"data_info\": "...)
			b = append(b, n.info...)
			b = append(b, "\n    }"...)
		}
		b = append(b, "\n  ]"...)
	}
	return append(b, "\n}"...)
}

func daSkipped(name string) bool {
	for _, s := range daSkip {
		if strings.HasPrefix(name, s) {
			return true
		}
	}
	return false
}

// daRankName is the search's name of a rank: "rank_N" from the NPU rank
// folder ("rank_0" for a folder without a rank number).
func daRankName(d msprobe.RankDir) string {
	if d.Proc || d.Rank < 0 || !strings.HasPrefix(d.Name, "rank") {
		return "rank_0"
	}
	return "rank_" + strconv.Itoa(d.Rank)
}

// daSink is the table's sink under -da: the rows go to the per-rank JSON
// (through Summary.tally), no table file is written.
type daSink struct{ d *daRank }

func (s *daSink) Header([]string) error     { return nil }
func (s *daSink) Row([]Cell, RowMark) error { return nil }
func (s *daSink) Reset() error              { s.d.reset(); return s.d.err }
func (s *daSink) Finish() error             { return s.d.finish() }
func (s *daSink) Drop()                     { s.d.f.Drop() }
func (s *daSink) files() []*output.File     { return []*output.File{s.d.f} }

// writeDiffAnalyze adds the search across the run's ranks to the set.
func writeDiffAnalyze(opt Options, set *output.Set, rep *Report) error {
	var ranks []*daRank
	for _, r := range rep.Ranks {
		if r.da != nil {
			ranks = append(ranks, r.da)
		}
	}
	b := daSearch(ranks)
	if b == nil {
		return nil
	}
	name := output.Name{Prefix: "diff_analyze_" + strconv.FormatInt(opt.Stamp.UnixNano(), 10), Suffix: ".json"}
	var err error
	rep.daFile, err = set.WriteFile(opt.OutDir, name, b, resultMode)
	return err
}
