package compare

import (
	"fmt"
	"hash/maphash"
	"math"
	"sort"
	"strings"

	"github.com/layermap/layermap/printparse/msprobe"
	"github.com/layermap/layermap/printparse/offheap"
)

// The first divergence, mapping-aware and noise-aware.
//
// A compared row deviates when its two sides differ by more than two
// correct runs of the model can: the noise floor of its dtype, a relative
// difference of its statistics (Max, Min and Mean relative to the larger
// of the value and the tensor's RMS, Norm relative to itself; in tensor
// mode also 1 - Cosine). The floors:
//
//   - bfloat16: 2^-7 (7.8e-3). bf16 keeps 8 significant bits (unit
//     roundoff u = 2^-8); each side rounds its outputs once, so two
//     correct kernels differ by up to 2u in a value, and a statistic
//     built from them (a maximum is one value) by as much.
//   - float16: 2^-10 (9.8e-4): 2u of its 11 significant bits.
//   - float32: 1e-5. Its roundoff (2^-24) is not what separates two
//     devices: the order of summation is. A reduction of K terms in
//     another order differs by about sqrt(K)·u, 1e-5 for K up to ~3e4,
//     the widest reductions of the models compared (hidden and
//     intermediate sizes).
//   - float64: 1e-12; integers and booleans: exact.
//
// A row of mixed dtypes gets the coarser floor; md5 mode compares
// hashes, exactly.
//
// Per entry (a module's or an API's call) and direction, the inputs (in
// backward: the gradients of the outputs) and the parameters are told
// apart from the outputs. An entry whose outputs deviate is:
//
//   - root cause: its compared inputs agree (its parameters may not: a
//     parameter that differs is a cause of its own), or they differ but
//     its outputs differ at least AmplificationRatio (10) times as much:
//     the entry amplifies a small input difference into a large one, the
//     notion of msprobe's own "The norm relative error of output is 10
//     times that of input" warning (output/input > 10);
//   - inherited: its inputs differ already and its outputs by less than
//     that ratio more: the divergence comes from upstream (an earlier
//     divergence, the parameters of an enclosing module, or, when neither
//     is there, from something compared nowhere);
//   - absorbed: a root cause whose enclosing module (construct.json)
//     has agreeing outputs: the deviation does not leave the module
//     (a norm or a saturating activation absorbs it).
//
// Divergences are ordered as they arise in execution: in dump order (an
// entry is dumped when its call returns, so a module after the calls
// inside it), except that a module whose parameters differ diverges
// before the calls inside it (their inputs read those parameters). Per
// direction the first entry of each class is reported, in that order;
// the first divergence is the earliest one that is not absorbed (an
// absorbed deviation explains nothing downstream), else the earliest;
// Summary.First is the forward one, else the backward one. In md5 mode
// there is no noise floor and no ratio: a row differs when its md5
// does.

// AmplificationRatio is how many times more than its inputs an entry's
// outputs must deviate for it to be a root cause although its inputs
// deviate beyond the noise floor (msprobe's RelativeWarn rule: output
// norm relative error more than 10 times the input's).
const AmplificationRatio = 10

// Divergence classes.
const (
	ClassRootCause = "root_cause"
	ClassInherited = "inherited"
	ClassAbsorbed  = "absorbed"
)

// Divergence is a classified divergence: an entry whose compared outputs
// differ beyond the noise floor.
type Divergence struct {
	Direction  string `json:"direction"` // forward or backward
	Class      string `json:"class"`     // root_cause, inherited or absorbed
	NPUEntry   string `json:"npu_entry"`
	BenchEntry string `json:"bench_entry"`
	// Row is the output row that deviates most, BenchRow its partner (a
	// combined row of an N:1 group is named "[a ; b]").
	Row      string `json:"row"`
	BenchRow string `json:"bench_row"`
	// Messages are the row's Err_message lines (msprobe's rules and the
	// N:1 notes).
	Messages []string `json:"messages"`
	Module   bool     `json:"module"` // a module entry (else an API entry)
	// Dtype and NoiseFloor are the row's; Deviation and InputDeviation are
	// the outputs' and the inputs' largest relative differences.
	Dtype          string  `json:"dtype"`
	NoiseFloor     float64 `json:"noise_floor"`
	Deviation      float64 `json:"deviation"`
	InputDeviation float64 `json:"input_deviation"`
	// ParamsDiffer says the entry's parameters deviate too.
	ParamsDiffer bool `json:"params_differ,omitempty"`
	// Enclosing and BenchEnclosing are the modules the entries were called
	// in (construct.json), for API entries and nested modules.
	Enclosing      string `json:"enclosing,omitempty"`
	BenchEnclosing string `json:"bench_enclosing,omitempty"`
	// Stack is the first frame of the NPU entry's stack outside the
	// frameworks (stack.json): the user's line that called it.
	Stack string `json:"stack,omitempty"`
	// Why says in words what the class means for this entry.
	Why string `json:"why"`
}

// noiseFloor is the relative difference two correct runs can show in a
// value of dtype (see above); 0 for exact types.
func noiseFloor(dtype string) float64 {
	switch dtype { // the dtypes of nearly every row, without a search
	case "torch.float32", "Float32":
		return 1e-5
	case "torch.bfloat16", "BFloat16":
		return 1.0 / 128
	case "torch.float16", "Float16":
		return 1.0 / 1024
	case "<class 'float'>":
		return 1e-5
	case "torch.int64", "torch.int32", "torch.bool", "Int64", "Int32", "Bool", "<class 'int'>", "<class 'bool'>",
		"<class 'str'>", "<class 'NoneType'>", "None", "int", "slice", "ellipsis", "torch.Size", "torch.ProcessGroup":
		return 0
	}
	return noiseFloorOf(dtype)
}

// noiseFloorOf is noiseFloor worked out from the dtype's words.
func noiseFloorOf(dtype string) float64 {
	switch {
	case containsFold(dtype, "bfloat16"):
		return 1.0 / 128
	case containsFold(dtype, "float16") || containsFold(dtype, "half"):
		return 1.0 / 1024
	case containsFold(dtype, "float64") || containsFold(dtype, "double"):
		return 1e-12
	case containsFold(dtype, "float"):
		return 1e-5
	}
	return 0
}

// floorCache remembers the last dtype of each side and its floor: rows
// come in runs of one dtype.
type floorCache struct {
	dtype [2]string
	val   [2]float64
	set   [2]bool
}

func (c *floorCache) floor(side int, dtype string) float64 {
	if !c.set[side] || c.dtype[side] != dtype {
		c.dtype[side], c.val[side], c.set[side] = dtype, noiseFloor(dtype), true
	}
	return c.val[side]
}

// containsFold is strings.Contains ignoring ASCII case, without
// allocating (sub is lower case).
func containsFold(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		j := 0
		for ; j < len(sub); j++ {
			c := s[i+j]
			if c >= 'A' && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != sub[j] {
				break
			}
		}
		if j == len(sub) {
			return true
		}
	}
	return false
}

// rowDeviation is how far a compared row's two sides are apart: rel the
// largest relative difference of its statistics (+Inf when there is no
// finite one: a NaN, inf or non-numeric value on one side only, a zero
// on the bench side, an md5 that differs), dev the same in units of its
// noise floor (> 1: beyond noise; +Inf for any difference of an exact
// dtype or an md5), and the floor (0 in md5 mode: hashes compare
// exactly).
func rowDeviation(r *outRow, mode Mode, fc *floorCache) (dev, rel, floor float64) {
	n, b := &r.npu.it, &r.bench.it
	if mode == MD5 {
		if r.npuMD5() != r.benchMD5() {
			return math.Inf(1), math.Inf(1), 0
		}
		return 0, 0, 0
	}
	floor = fmax(fc.floor(0, n.Dtype), fc.floor(1, b.Dtype))
	var x, y [4]float64
	for i := 0; i < 4; i++ {
		var ok1, ok2 bool
		x[i], ok1 = statNum(n.Stats[i])
		y[i], ok2 = statNum(b.Stats[i])
		if !ok1 || !ok2 {
			// scalars and texts: equal or not
			if n.Stats[i].Text != b.Stats[i].Text || n.Stats[i].Kind != b.Stats[i].Kind {
				return math.Inf(1), math.Inf(1), floor
			}
			x[i], y[i] = 0, 0
		}
	}
	d := 0.0
	count := fmax(1, float64(shapeNumel(b.Shape)))
	rms := math.Abs(y[3]) / math.Sqrt(count)
	relOf := func(a, b, scale float64) float64 {
		switch {
		case math.IsNaN(a) || math.IsNaN(b) || math.IsInf(a, 0) || math.IsInf(b, 0):
			if a == b || math.IsNaN(a) && math.IsNaN(b) {
				return 0
			}
			return math.Inf(1)
		case a == b:
			return 0
		case scale == 0:
			return math.Inf(1)
		}
		return math.Abs(a-b) / scale
	}
	d = fmax(d, relOf(x[0], y[0], fmax(math.Abs(y[0]), rms)))
	d = fmax(d, relOf(x[1], y[1], fmax(math.Abs(y[1]), rms)))
	d = fmax(d, relOf(x[2], y[2], rms))
	d = fmax(d, relOf(x[3], y[3], math.Abs(y[3])))
	if mode == Tensor {
		if c, ok := r.met[0].num(); ok {
			d = fmax(d, 1-c)
		}
	}
	switch {
	case d == 0:
		return 0, 0, floor
	case floor == 0:
		return math.Inf(1), d, floor
	}
	return d / floor, d, floor
}

// entryDev is what the divergence search keeps of a compared entry that
// deviates somewhere.
type entryDev struct {
	dir                  string
	npu, bench           string
	row, benchRow, dtype string
	floor                float64
	in, params, out      float64 // largest deviations, in floors
	inRel, outRel        float64 // largest relative deviations of the inputs, of the output row kept
	inDtype              string  // the dtype of the input row that deviates most (in floors)
	inFloor              float64
	inCompared           bool
	msgs                 []string
	module               bool
}

// divergences follows the entries of one pass (Summary.tally) and keeps
// what the classification needs: the deviating entries (the first
// maxCandidates per direction) and, once one is found, whether each
// compared module's outputs deviate (msprobe dumps a module after the
// calls inside it, so the modules enclosing a candidate come after it; a
// run without a deviation keeps nothing).
type divergences struct {
	cands   map[string][]*entryDev // direction -> candidates in dump order
	modOut  *modStatus             // module entry (hash) -> its compared outputs deviate
	seed    maphash.Seed
	scratch entryDev
	floors  floorCache
	mode    Mode
}

// maxModules bounds the module statuses kept after the first candidate
// (memory stays flat in the dump's length; a candidate whose enclosing
// module comes later is not checked for absorption).
const maxModules = 1 << 16

func (dv *divergences) modKey(entry string) uint64 { return maphash.String(dv.seed, entry) }

// modStatus maps module hashes to whether their compared outputs
// deviate: open addressing, pointer-free, 8 bytes a slot (the hash, its
// low bit the status), at most 3/4 full: 1 MB at maxModules, outside the
// collected heap once large (printparse/offheap).
type modStatus struct {
	slots []uint64
	free  func() // of slots
	n     int
}

// key is h with bit 1 set (never 0) and bit 0 free for the status.
func modSlotKey(h uint64) uint64 { return h&^1 | 2 }

// find is the slot of h, or the empty one where it would go.
func (m *modStatus) find(h uint64) int {
	k, mask := modSlotKey(h), uint64(len(m.slots)-1)
	for i := h >> 2 & mask; ; i = (i + 1) & mask {
		if s := m.slots[i]; s == 0 || s&^1 == k {
			return int(i)
		}
	}
}

func (m *modStatus) set(h uint64, deviates bool) {
	if (m.n+1)*4 > len(m.slots)*3 {
		old, free := m.slots, m.free
		m.slots, m.free = offheap.Make[uint64](max(256, 2*len(old)))
		offheap.Cleanup(m, m.free)
		for _, s := range old {
			if s != 0 {
				m.slots[m.find(s)] = s
			}
		}
		if free != nil {
			free()
		}
	}
	i := m.find(h)
	if m.slots[i] == 0 {
		m.n++
	}
	m.slots[i] = modSlotKey(h)
	if deviates {
		m.slots[i] |= 1
	}
}

// has reports whether h was set (m may be nil).
func (m *modStatus) has(h uint64) bool {
	return m != nil && m.n > 0 && m.slots[m.find(h)] != 0
}

// deviates is the status set for h (false when none; m may be nil).
func (m *modStatus) deviates(h uint64) bool {
	return m != nil && m.n > 0 && m.slots[m.find(h)]&1 != 0
}

// fmax is math.Max, inlined (math.Max is an assembly call per use) but
// for a NaN or a zero y (fmaxSpecial).
func fmax(x, y float64) float64 {
	if x > y {
		return x
	}
	if y >= x && y != 0 {
		return y
	}
	return fmaxSpecial(x, y)
}

// fmaxSpecial is math.Max of a NaN, or of x and a zero y: +0 over -0,
// +Inf before NaN.
func fmaxSpecial(x, y float64) float64 {
	switch {
	case y > x:
		return y
	case x == y:
		return math.Float64frombits(math.Float64bits(x) & math.Float64bits(y))
	case math.IsInf(x, 1) || math.IsInf(y, 1):
		return math.Inf(1)
	}
	return math.NaN()
}

// fmin is math.Min, inlined (see fmax).
func fmin(x, y float64) float64 {
	if x < y {
		return x
	}
	if y <= x && y != 0 {
		return y
	}
	return fminSpecial(x, y)
}

// fminSpecial is math.Min of a NaN, or of x and a zero y: -0 over +0,
// -Inf before NaN.
func fminSpecial(x, y float64) float64 {
	switch {
	case y < x:
		return y
	case x == y:
		return math.Float64frombits(math.Float64bits(x) | math.Float64bits(y))
	case math.IsInf(x, -1) || math.IsInf(y, -1):
		return math.Inf(-1)
	}
	return math.NaN()
}

// shapeNumel is the element count of a shape text ("[2, 8]"), 1 when it
// is not one; no allocation.
func shapeNumel(s string) int {
	if len(s) < 2 || s[0] != '[' {
		return 1
	}
	n, cur, digits := 1, 0, false
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			cur, digits = cur*10+int(c-'0'), true
		case c == ',' || c == ']':
			if digits {
				n *= cur
			}
			cur, digits = 0, false
		}
	}
	return n
}

const maxCandidates = 256

// add looks at one written group (the rows of one NPU entry).
func (dv *divergences) add(grp []*outRow, mode Mode) {
	dv.mode = mode
	e := &dv.scratch
	*e = entryDev{npu: grp[0].npu.it.Entry, msgs: e.msgs[:0]}
	_, _, e.dir = msprobe.SplitName(e.npu)
	if e.dir != "forward" && e.dir != "backward" {
		return
	}
	e.module = strings.HasPrefix(e.npu, "Module.") || strings.HasPrefix(e.npu, "Cell.")
	// the outputs first: the inputs matter only when they deviate
	outCompared := false
	for _, r := range grp {
		if r.bench == nil || !r.output {
			continue
		}
		outCompared = true
		if dev, rel, floor := rowDeviation(r, mode, &dv.floors); dev > e.out || e.row == "" {
			e.out, e.outRel, e.row, e.benchRow, e.bench, e.floor = dev, rel, r.npu.it.Name, r.bench.it.Name, r.bench.it.Entry, floor
			e.dtype = r.npu.it.Dtype
			e.msgs = append(e.msgs[:0], r.msgs...)
		}
	}
	if !outCompared {
		return
	}
	if e.out > 1 {
		for _, r := range grp {
			if r.bench == nil || r.output {
				continue
			}
			dev, rel, floor := rowDeviation(r, mode, &dv.floors)
			if r.npu.it.State == msprobe.StateParameters {
				e.params = fmax(e.params, dev)
				continue
			}
			if !e.inCompared || dev > e.in {
				e.in, e.inDtype, e.inFloor = dev, r.npu.it.Dtype, floor
			}
			e.inCompared = true
			e.inRel = fmax(e.inRel, rel)
		}
	}
	if e.out > 1 && dv.cands == nil {
		dv.modOut, dv.cands, dv.seed = &modStatus{}, map[string][]*entryDev{}, maphash.MakeSeed()
	}
	if e.module && dv.modOut != nil && dv.modOut.n < maxModules {
		dv.modOut.set(dv.modKey(e.npu), e.out > 1)
	}
	if e.out > 1 && len(dv.cands[e.dir]) < maxCandidates {
		c := *e
		c.msgs = append([]string(nil), e.msgs...)
		dv.cands[e.dir] = append(dv.cands[e.dir], &c)
	}
}

// amplified says the entry's outputs deviate at least AmplificationRatio
// times as much as its inputs (both finite relative deviations; md5 mode
// has no ratio).
func (e *entryDev) amplified(mode Mode) bool {
	return mode != MD5 && !math.IsInf(e.inRel, 0) && e.outRel >= AmplificationRatio*e.inRel
}

// classify names the divergences of each direction, in execution order
// (see above): the first of each class. parent gives construct.json
// parents (nil without one), benchParent the bench side's, frames the
// NPU stack frames.
func (dv *divergences) classify(parent, benchParent map[string]string, frames StackFrames) []*Divergence {
	var out []*Divergence
	for _, dir := range [...]string{"forward", "backward"} {
		cands, forward := dv.cands[dir], dv.cands["forward"]
		order := arisingOrder(cands, parent)
		byName := make(map[string]*entryDev, len(cands))
		for _, e := range cands {
			byName[e.npu] = e
		}
		var first [3]*Divergence // root cause, inherited, absorbed
		var key [3]int
		for i, e := range cands {
			if !e.inCompared {
				continue // nothing to tell where it came from
			}
			// the class first: only the earliest of each is described
			slot, absorbedIn := 0, ""
			if e.in > 1 && !e.amplified(dv.mode) {
				slot = 1
			} else if m, ok := dv.enclosingModule(parent, e.npu); ok && !dv.modOut.deviates(dv.modKey(m)) {
				slot, absorbedIn = 2, m
			}
			if first[slot] != nil && order[i] >= key[slot] {
				continue
			}
			d := &Divergence{Direction: dir, NPUEntry: e.npu, BenchEntry: e.bench, Row: e.row, BenchRow: e.benchRow,
				Messages: e.msgs, Module: e.module, Dtype: e.dtype, NoiseFloor: e.floor,
				Deviation: round3(e.outRel), InputDeviation: round3(e.inRel), ParamsDiffer: e.params > 1}
			if d.Messages == nil {
				d.Messages = []string{}
			}
			d.Enclosing, d.BenchEnclosing = parent[e.npu], benchParent[e.bench]
			if frames != nil {
				if fr, ok := frames.Frames(e.npu); ok {
					d.Stack = userFrame(fr)
				}
			}
			switch slot {
			case 1:
				d.Class = ClassInherited
				d.Why = dv.inputsDiffer(e) + ", and " + dv.outDiff(e)
				if dv.mode != MD5 && !math.IsInf(e.inRel, 0) {
					d.Why += fmt.Sprintf(", less than %d times as much", AmplificationRatio)
				}
				d.Why += ": the divergence comes from upstream" + upstream(cands, i, byName, parent, order, forward)
			default:
				d.Class = ClassRootCause
				if e.in > 1 {
					d.Why = fmt.Sprintf("%s, but %s, %.3g times as much (at least %d: it amplifies the difference, as msprobe's \"norm relative error of output is 10 times that of input\" says)",
						dv.inputsDiffer(e), dv.outDiff(e), e.outRel/e.inRel, AmplificationRatio)
				} else {
					d.Why = dv.inputsAgree(e) + " and " + dv.outDiff(e)
				}
				if d.ParamsDiffer {
					d.Why += "; its parameters differ too"
				}
				if slot == 2 {
					d.Class = ClassAbsorbed
					d.Why += "; absorbed downstream: the outputs of its enclosing module " + absorbedIn + " agree"
				}
			}
			first[slot], key[slot] = d, order[i]
		}
		var got []int
		for slot, d := range first {
			if d != nil {
				got = append(got, slot)
			}
		}
		sort.SliceStable(got, func(a, b int) bool { return key[got[a]] < key[got[b]] })
		for _, slot := range got {
			out = append(out, first[slot])
		}
	}
	return out
}

// firstOf is the first divergence of a classified list (see above): per
// direction, forward first, the earliest one not absorbed, else the
// earliest.
func firstOf(ds []*Divergence) *Divergence {
	for _, dir := range [...]string{"forward", "backward"} {
		var earliest *Divergence
		for _, d := range ds {
			if d.Direction != dir {
				continue
			}
			if d.Class != ClassAbsorbed {
				return d
			}
			if earliest == nil {
				earliest = d
			}
		}
		if earliest != nil {
			return earliest
		}
	}
	return nil
}

// arisingOrder is each candidate's place in execution order: its dump
// position, except that a module whose parameters differ takes the place
// of the earliest candidate inside it (construct.json), as its
// parameters differ before any call inside it reads them.
func arisingOrder(cands []*entryDev, parent map[string]string) []int {
	order := make([]int, len(cands))
	idx := make(map[string]int, len(cands))
	for i, e := range cands {
		order[i] = i
		idx[e.npu] = i
	}
	for i, e := range cands {
		seen := 0
		for p := parent[e.npu]; p != "" && seen < 1000; p = parent[p] {
			if j, ok := idx[p]; ok && cands[j].params > 1 && i < order[j] {
				order[j] = i
			}
			seen++
		}
	}
	return order
}

// upstream says where the inherited divergence of cands[i] comes from:
// an enclosing module whose parameters differ, else the divergence that
// arose last before it, else nothing compared.
func upstream(cands []*entryDev, i int, byName map[string]*entryDev, parent map[string]string, order []int, forward []*entryDev) string {
	seen := 0
	for p := parent[cands[i].npu]; p != "" && seen < 1000; p = parent[p] {
		if m, ok := byName[p]; ok && m.params > 1 {
			return ": the parameters of its enclosing module " + p + " differ"
		}
		seen++
	}
	last := -1
	for j := range cands {
		if order[j] < order[i] && (last < 0 || order[j] > order[last]) {
			last = j
		}
	}
	if last >= 0 {
		return ": " + cands[last].npu + " diverges before it"
	}
	if cands[i].dir == "backward" && len(forward) > 0 {
		return ": the forward pass diverges already (first at " + forward[0].npu + ")"
	}
	if _, known := parent[cands[i].npu]; !known {
		// no construct.json for it: a module dumped later may enclose it
		for _, c := range cands[i+1:] {
			if c.module && c.params > 1 {
				return ", where nothing compared before it shows it; perhaps the parameters of " + c.npu +
					", which differ, if that module encloses it (construct.json would tell)"
			}
		}
	}
	return ", where nothing compared before it shows it (not dumped, or not mapped)"
}

// outDiff says how an entry's outputs differ, with the numbers that mean
// something for its mode and dtype.
func (dv *divergences) outDiff(e *entryDev) string {
	return diffText("its outputs", dv.mode, e.outRel, e.out, e.floor, e.dtype)
}

func (dv *divergences) inputsDiffer(e *entryDev) string {
	return diffText("its inputs", dv.mode, e.inRel, e.in, e.inFloor, e.inDtype)
}

func (dv *divergences) inputsAgree(e *entryDev) string {
	switch {
	case dv.mode == MD5:
		return "its inputs' md5 agree"
	case e.inFloor == 0:
		return "its inputs agree exactly"
	}
	return fmt.Sprintf("its inputs agree within the %s noise floor (%.3g)", floorName(e.inDtype), e.inFloor)
}

// diffText is "its outputs' md5 differs", "its outputs differ by 0.02
// (2.56 times the torch.bfloat16 noise floor)", "... by 0.4 (torch.int64:
// compared exactly)" or, without a finite relative difference, says why.
func diffText(what string, mode Mode, rel, dev, floor float64, dtype string) string {
	switch {
	case mode == MD5:
		return what + "' md5 differs"
	case math.IsInf(rel, 0) || math.IsNaN(rel):
		return what + " differ with no finite relative difference (a NaN, inf or non-numeric value on one side only, or a zero on the bench side)"
	case floor == 0:
		return fmt.Sprintf("%s differ by %.3g (%s: compared exactly)", what, rel, floorName(dtype))
	}
	return fmt.Sprintf("%s differ by %.3g (%.3g times the %s noise floor)", what, rel, dev, floorName(dtype))
}

// enclosingModule is the nearest module around entry whose outputs were
// compared.
func (dv *divergences) enclosingModule(parent map[string]string, entry string) (string, bool) {
	seen := 0
	for p := parent[entry]; p != "" && seen < 1000; p = parent[p] {
		if dv.modOut.has(dv.modKey(p)) {
			return p, true
		}
		seen++
	}
	return "", false
}

// userFrame is the first stack frame outside the frameworks' and
// msprobe's own files, else the first.
func userFrame(fr []string) string {
	for _, f := range fr {
		if !strings.Contains(f, "site-packages/") && !strings.Contains(f, "dist-packages/") && !strings.Contains(f, "msprobe") {
			return f
		}
	}
	if len(fr) > 0 {
		return fr[0]
	}
	return ""
}

func floorName(dtype string) string {
	if dtype == "" {
		return "row's"
	}
	return dtype
}

func round3(f float64) float64 {
	if math.IsInf(f, 0) || math.IsNaN(f) || f == 0 {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return -1 // not a number: the sides disagree on NaN/inf or on a non-numeric value
		}
		return 0
	}
	e := math.Floor(math.Log10(math.Abs(f)))
	p := math.Pow(10, 3-e)
	return math.Round(f*p) / p
}
