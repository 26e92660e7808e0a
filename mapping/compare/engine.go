package compare

import (
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/layermap/layermap/mapping/compare/tensor"
	"github.com/layermap/layermap/mapping/resolve"
	"github.com/layermap/layermap/printparse/msprobe"
)

// Source yields one side's dump entries in file order, each with its items
// flattened and ordered as msprobe orders them. Compare may call it more
// than once (for the NPU side) and reads the entry only during the call.
type Source func(yield func(*msprobe.Entry) error) error

// TensorComparer computes the six tensor-mode metrics (Cosine, EucDist,
// MaxAbsErr, MaxRelativeErr, One Thousandth and Five Thousandths Err
// Ratio) of one row from the two items' data names. bench is nil for an
// unmatched row. group is the NPU entry's group-tensor kwarg row (see
// DirtyGroup) or nil: the NPU outputs are cleaned to the valid length it
// holds, as msprobe's output_postprocess does. A non-nil error means a
// tensor file of the row exists but cannot be read: the row is judged
// error, with "error: " and the error's text first in its Err_message.
// at is the row's place in the table: a later row has a greater at.
// Rows are compared side by side, in no order: what a comparer reports of
// them should follow at. It must be safe for concurrent use.
type TensorComparer interface {
	Metrics(at int64, npu, bench, group *msprobe.Item) ([6]Metric, error)
}

// rowAt is row i's place in the table (TensorComparer) of the group
// written seq-th.
func rowAt(seq, i int) int64 { return int64(seq)<<32 | int64(i) }

// DirtyGroup is the row of an NPU entry that msprobe reads its
// dirty_valid_len from (ParseData.get_valid_len_with_postprocess): for an
// entry whose name contains an API of tensor.DirtyDataAPIs, its kwarg row
// named by that table ("<entry>.input.group_list" for
// npu_grouped_matmul); nil otherwise. rows are the entry's rows; only the
// NPU side (msprobe's "target" backend) has such handlers.
func DirtyGroup(rows []*msprobe.Item) *msprobe.Item {
	if len(rows) == 0 {
		return nil
	}
	entry := rows[0].Entry
	apis := make([]string, 0, len(tensor.DirtyDataAPIs))
	for api := range tensor.DirtyDataAPIs {
		apis = append(apis, api)
	}
	slices.Sort(apis)
	for _, api := range apis {
		if !strings.Contains(entry, api) {
			continue
		}
		name := entry + ".input." + tensor.DirtyDataAPIs[api]
		for _, it := range rows {
			if it.Name == name && it.State == "input" {
				return it
			}
		}
		return nil
	}
	return nil
}

// StackFrames gives an entry's call stack frames (msprobe.Stacks).
type StackFrames interface {
	Frames(entry string) ([]string, bool)
}

// Config says how to match and judge.
type Config struct {
	Mode Mode
	// Fuzzy is msprobe's --fuzzy_match: names compared without call
	// indices, rows paired in order (see fuzzyMatcher); with a data
	// mapping or pairs, only backward calls left unrenumbered (see
	// fuzzyJoin).
	Fuzzy bool
	// DataMapping maps NPU row names to bench row names (msprobe's -dm):
	// NPU rows are keyed by its Lookup (else their name), the dtype gate
	// is off, and bench keys stay msprobe's renumbered names.
	DataMapping *DataMapping
	// DataMappingSource is reported for rows matched through DataMapping
	// under a mapped name: ByDataMap (default) or ByLayerMap.
	DataMappingSource MatchSource
	// Pairs maps NPU row names to bench rows' compare keys (renumbered
	// backward calls unless Fuzzy, see PairRows) from explicit node pairs;
	// it takes precedence over DataMapping and is applied the same way.
	// Set, if empty, whenever the run has pairs: rows are then joined
	// through them first (see fuzzyJoin).
	Pairs map[string]string
	// Stack gives the NPU entries' stack.json frames (msprobe.Stacks); nil
	// means no NPU_Stack_Info column.
	Stack StackFrames
	// CrossFramework normalises dtypes before the dtype gate: msprobe's
	// cross_frame, a mindspore or mindtorch target against a bench taken
	// for PyTorch (crossFramework).
	CrossFramework bool
	// gateWarning is set when the two dumps hold different frameworks'
	// values and the dtype gate compares their dtypes by name: no tensor
	// row of one pairs with the other's (rankConfig).
	gateWarning string
	// Debug is set for debug.json dumps (entry names used as they are).
	Debug bool
	// Tensor computes tensor-mode metrics; required in Tensor mode.
	Tensor TensorComparer
	// Workers is how many goroutines finish the joined rows (diffs or
	// tensor metrics, rules, cells) beside the join. Zero means
	// GOMAXPROCS, except in statistics and md5 mode with two CPUs or
	// fewer: then the join finishes each entry's rows itself (see
	// inlineRows).
	Workers int
	// Progress, when set, is called with the number of NPU entries done.
	Progress func(entries int)
	// BenchRepeats is the plan for a bench dump.json whose "data" repeats
	// keys (msprobe.FindRepeats): Compare then reads it as Python does.
	// Without it such a file stops Compare with an error wrapping
	// msprobe.ErrRepeatedKey.
	BenchRepeats *msprobe.Repeats
	// npuRepeats is the plan the table's passes read the NPU dump.json
	// with from the start (a layer mapping's reading found no repeats).
	npuRepeats *msprobe.Repeats

	// simpleBench holds the bench side as plain rows in a map (the
	// reference the packed store is tested against).
	simpleBench bool
	// fullBench joins against the whole bench side in memory (the packed
	// store) instead of the index (tests, benchmarks).
	fullBench bool
	// cache overrides cacheEntries (tests).
	cache int
	// fuzzyPack overrides packAfterRows (tests; -1: never pack).
	fuzzyPack int
	// writeAgain never patches a table (patchTable): a whole-column
	// effect makes a second pass (tests).
	writeAgain bool
	// inline has the join finish and write each entry's rows itself, with
	// no workers; Compare sets it (inlineRows), tests force it.
	inline bool
	// trace, when set, records how the bench side was joined (tests).
	trace *joinTrace
	// chunks, when set, lends the bench readers' chunk memory.
	chunks *msprobe.Chunks
	// fused, when set, compares N:1 groups and tensor-parallel shards
	// (fused.go).
	fused *fusedPlan
	// held is an index of the bench side built before the compare, for
	// its first join to take (plan.go).
	held *heldIndex
	// keepStats has the dumps read with their statistics whatever the
	// mode (statsUnread): the N:1 detection compares them (sameStats).
	keepStats bool
	// nowhere maps the NPU entries a layer_mapping rule sends to no bench
	// entry to the rule (nowhereRules, health.go).
	nowhere      *sentNowhere
	nowhereRules []Nowhere
	// layerMap is the data mapping derived from the layer mapping (Run
	// sets no DataMapping beside it: msprobe replaces -dm with it).
	layerMap *resolve.DataMap
	// dataMapLog, when set, writes layerMap's pairs as the join reads the
	// NPU entries (a deferred map).
	dataMapLog *dataMapLog
	// suffixCheck tells, for a deferred layerMap, whether a bench
	// entry has a row: the pass's, through the bench index it joins with.
	suffixCheck *suffixCheck
	// da, when set, receives the table as msprobe's -da per-rank JSON
	// (da.go).
	da *daRank
	// construct are the two sides' construct.json files ("" for none):
	// the first divergence's enclosing modules.
	construct [2]string
}

// joinTrace records the bench strategy of a Compare call.
type joinTrace struct {
	indexedPasses, fullPasses, streamedPasses int
	seed                                      maphash.Seed // the bench index's (see tagCollision)
	skims                                     int          // of the bench dump.json, by the join's index
}

// RowSink receives the table: the header once, then the rows in order.
// Reset discards everything written so far (Compare reruns the table when
// a whole-column pandas artifact changes how cells print).
type RowSink interface {
	Header(cols []string) error
	Row(cells []Cell, mark RowMark) error
	Reset() error
}

// LineSink is a RowSink that takes rows as msprobe's CSV lines (newline
// included): Compare then renders each row straight into its line and
// calls Line instead of Row. line is valid during the call.
type LineSink interface {
	RowSink
	Line(line []byte, mark RowMark) error
}

// RowMark is a row's judgement: msprobe's Result and its highlight color.
type RowMark struct {
	Result string
	Color  Color
}

// Summary counts what Compare found.
type Summary struct {
	Mode           string `json:"mode"`
	Rows           int    `json:"rows"`
	Pass           int    `json:"pass"`
	Warning        int    `json:"warning"`
	Error          int    `json:"error"`
	NPUUnmatched   int    `json:"npu_unmatched"`
	BenchUnmatched int    `json:"bench_unmatched"`
	BenchRows      int    `json:"bench_rows"`
	// Passes is 2 when a whole-column pandas effect made Compare write the
	// table again.
	Passes    int            `json:"passes"`
	MatchedBy map[string]int `json:"matched_by"`
	// Compared counts the rows with a bench partner and ComparedResults
	// their Results: msprobe marks a row without one pass, so Pass alone
	// counts rows never compared.
	Compared        int    `json:"compared"`
	ComparedResults Counts `json:"compared_results"`
	// Fused counts, per N:1 group kind, the rows a group touched.
	Fused map[string]*FusedCounts `json:"fused,omitempty"`
	// FusedWarnings are the N:1 group calls whose parts' shapes do not
	// make the other side's row (their rows are inputs only).
	FusedWarnings []string `json:"fused_warnings,omitempty"`
	// SentNowhere counts, per layer_mapping rule, the NPU rows it renamed
	// to a bench name no entry has (mapping health).
	SentNowhere []Nowhere `json:"sent_nowhere,omitempty"`
	// First is the first divergence (divergence.go): the earliest forward
	// one not absorbed, else the earliest forward one, else the same in
	// backward; Divergences holds, per direction, the first of each class
	// in execution order.
	First       *Divergence   `json:"first_divergence,omitempty"`
	Divergences []*Divergence `json:"divergences,omitempty"`
	div         divergences
	matched     [ByGroup + 1]int // MatchedBy by source while the table is written (see matchedBy)

	benchMD5 bool // the bench side has an md5 (see msprobe.Header.MD5)
}

// matchedBy adds the counts tally kept by source to MatchedBy.
func (s *Summary) matchedBy() {
	for src, n := range s.matched {
		if n > 0 {
			s.MatchedBy[MatchSource(src).String()] += n
		}
	}
	s.matched = [len(s.matched)]int{}
}

// artifacts are the whole-column pandas effects that change how cells
// print (spec §4.6.2-4).
//
// npuFloat and benchFloat are the statistics columns whose ints print as
// floats. msprobe assigns a side's four columns from the rows' lists
// (df[cols] = lists), which pandas 1.5 makes a DataFrame of, a dtype per
// column (colFacts.dtype), and then a 2-D array of: when every column is
// numeric the array takes their common dtype (float64 when one is
// float64, or when uint64 meets int64), else it is object, each column's
// values kept as its dtype made them. The ints of a float64 column print
// as floats, those of the others as they are.
type artifacts struct {
	npuFloat, benchFloat [4]bool
	noBenchFloat         [4]bool
	reads                [4]colRead
}

// colFacts are what decides the dtype pandas gives one statistics column
// of a side, and how get_number reads it: whether every row is a number
// (NaN and None are not), whether one is a float, an int, a negative
// int, an int past int64 but within uint64 (ubig), past both (huge), or
// past ±2^53, where a float64 is no longer exact (wide).
type colFacts struct {
	num, float, int, neg, ubig, huge, wide bool
}

// colDtype is a statistics column's dtype.
type colDtype uint8

const (
	dtObject colDtype = iota
	dtInt64
	dtUint64
	dtFloat64
)

// note adds statistic i of s, of kind c.
func (f *colFacts) note(c cellKind, s *sideRow, i int) {
	switch c {
	case cFloat:
		f.float = true
	case cInt:
		f.int = true
		t := pyIntText(s.it.Stats[i].Text)
		neg := t[0] == '-'
		f.neg = f.neg || neg
		if len(t) < 16 {
			return // within ±2^53
		}
		v, err := strconv.ParseInt(t, 10, 64)
		f.wide = f.wide || err != nil || v > 1<<53 || v < -1<<53
		if err == nil {
			return
		}
		if _, err := strconv.ParseUint(t, 10, 64); err == nil && !neg {
			f.ubig = true
		} else {
			f.huge = true
		}
	default:
		f.num = false
	}
}

// dtype is the column's dtype as pandas infers it from its values
// (maybe_convert_objects): anything not a number, an int past uint64, or
// a negative int beside one past int64 keep it object.
func (f colFacts) dtype() colDtype {
	switch {
	case !f.num || f.huge || f.ubig && f.neg:
		return dtObject
	case f.float:
		return dtFloat64
	case f.ubig:
		return dtUint64
	}
	return dtInt64
}

// read is how get_number reads the column (to_numeric's
// maybe_convert_numeric) of at least one row, given whether its ints
// print as ints (not as floats).
func (f colFacts) read(intsPrinted bool) numRead {
	switch {
	case !f.num || f.float || !intsPrinted || f.huge || f.ubig && f.neg:
		return readFloat
	case f.ubig:
		return readUint64
	}
	return readInt64
}

// artifactScan accumulates the facts artifacts are derived from.
type artifactScan struct {
	rows       int
	npu, bench [4]colFacts
	nbRows     int
	nb         [4]colFacts // the NPU columns of the rows without bench data
}

func newArtifactScan() *artifactScan {
	a := &artifactScan{}
	for i := range a.npu {
		a.npu[i].num, a.bench[i].num, a.nb[i].num = true, true, true
	}
	return a
}

func (a *artifactScan) add(r *outRow) {
	a.rows++
	for i := 0; i < 4; i++ {
		c := statKind(r.npu, i)
		a.npu[i].note(c, r.npu, i)
		if r.bench == nil {
			a.bench[i].num = false // "N/A"
			a.nb[i].note(c, r.npu, i)
			continue
		}
		a.bench[i].note(statKind(r.bench, i), r.bench, i)
	}
	if r.bench == nil {
		a.nbRows++
	}
}

// statKind is kindOf statistic i of s: a float fastStats found needs no
// look.
func statKind(s *sideRow, i int) cellKind {
	if s.fast&(1<<i) != 0 {
		return cFloat
	}
	return kindOf(s.it.Stats[i])
}

func (a *artifactScan) result() artifacts {
	var f artifacts
	if a.rows == 0 {
		return f
	}
	f.npuFloat = floatColumns(a.npu)
	f.benchFloat = floatColumns(a.bench)
	for i := 0; i < 4; i++ {
		// fillna's downcast of the rows without bench data infers each
		// of their columns' dtype as the DataFrame did
		nb := a.nb[i]
		f.noBenchFloat[i] = a.nbRows > 0 && !f.npuFloat[i] && nb.int && nb.dtype() == dtFloat64
		rd := colRead{
			npu:   a.npu[i].read(!f.npuFloat[i]),
			bench: a.bench[i].read(!f.benchFloat[i]),
		}
		if rd.npu != rd.bench {
			// the diff is a float64, in which ints within ±2^53 read
			// as they do as floats: only wider ones need reading exactly
			if !a.npu[i].wide {
				rd.npu = readFloat
			}
			if !a.bench[i].wide {
				rd.bench = readFloat
			}
		}
		f.reads[i] = rd
	}
	return f
}

// floatColumns are the columns of one side whose ints print as floats
// (see artifacts).
func floatColumns(cols [4]colFacts) (out [4]bool) {
	var dt [4]colDtype
	all, anyFloat, anyInt, anyUint := true, false, false, false
	for i, c := range cols {
		dt[i] = c.dtype()
		all = all && dt[i] != dtObject
		anyFloat = anyFloat || dt[i] == dtFloat64
		anyInt = anyInt || dt[i] == dtInt64
		anyUint = anyUint || dt[i] == dtUint64
	}
	if all && (anyFloat || anyInt && anyUint) {
		for i := range dt {
			dt[i] = dtFloat64 // the array's common dtype
		}
	}
	for i, c := range cols {
		out[i] = c.int && dt[i] == dtFloat64
	}
	return out
}

// forEachRow walks a side entry by entry, giving each entry's rows their
// compare keys (op_name_update). The rows are put in alloc(n) (n rows),
// or in one buffer reused from entry to entry when alloc is nil.
func forEachRow(src Source, cfg *Config, renumber bool, stack StackFrames,
	alloc func(n int) []sideRow, fn func(e *msprobe.Entry, rows []sideRow) error) error {
	namer := newKeyNamer(renumber, cfg.Debug)
	defer namer.release()
	var buf []sideRow
	if alloc == nil {
		alloc = func(n int) []sideRow {
			buf = slices.Grow(buf[:0], n)[:n]
			return buf
		}
	}
	var cells *stackCells
	if stack != nil {
		cells = newStackCells(stack)
	}
	var num int64 // the rows before the entry
	return src(func(e *msprobe.Entry) error {
		first := num
		num += int64(len(e.Items))
		ek, ok := namer.entryKey(e.Name)
		if !ok {
			return fn(e, nil)
		}
		rows := alloc(len(e.Items))
		for i := range e.Items {
			rows[i].set(&e.Items[i])
			rows[i].pos = int32(e.Member) + 1
			if n := first + int64(i) + 1; n <= math.MaxInt32 {
				rows[i].num = int32(n)
			}
		}
		ek.setKeys(e.Name, rows)
		if len(rows) > 0 && cells != nil {
			rows[0].stack = cells.cellNow(e.Name)
		}
		return fn(e, rows)
	})
}

var dtypeGroups = [2]map[string]bool{
	{"Float16": true, "Float32": true, "BFloat16": true},
	{"torch.float16": true, "torch.float32": true, "torch.bfloat16": true},
}

var crossDtype = map[string]string{
	"Int8": "int", "torch.int8": "int", "UInt8": "int", "torch.uint8": "int",
	"Int16": "int", "torch.int16": "int", "UInt16": "int", "torch.uint16": "int",
	"Int32": "int", "torch.int32": "int", "UInt32": "int", "torch.uint32": "int",
	"Int64": "int", "torch.int64": "int", "UInt64": "int", "torch.uint64": "int",
	"Float16": "float", "torch.float16": "float", "Float32": "float", "torch.float32": "float",
	"Float64": "float", "torch.float64": "float", "BFloat16": "float", "torch.bfloat16": "float",
	"Bool": "bool", "torch.bool": "bool", "Complex64": "complex", "torch.complex64": "complex",
	"Complex128": "complex", "torch.complex128": "complex",
}

// dtypeMatch is msprobe's dtype gate (Match.gen_dtype_condition).
func dtypeMatch(a, b string, cross bool) bool {
	if cross {
		if m, ok := crossDtype[a]; ok {
			a = m
		}
		if m, ok := crossDtype[b]; ok {
			b = m
		}
	}
	if a == b {
		return true
	}
	for _, g := range dtypeGroups {
		if g[a] && g[b] {
			return true
		}
	}
	return false
}

// Compare compares the NPU (target) side with the bench (golden) side and
// writes msprobe's table to sink.
func Compare(npu Source, bench Bench, cfg Config, sink RowSink) (*Summary, error) {
	if cfg.Mode == Tensor && cfg.Tensor == nil {
		return nil, errors.New("compare: tensor mode needs a tensor comparer")
	}
	if cfg.Workers <= 0 {
		cfg.inline = cfg.inline || inlineRows(cfg.Mode, runtime.GOMAXPROCS(0))
		cfg.Workers = runtime.GOMAXPROCS(0)
	}
	renumber := !cfg.Fuzzy
	// The indexed join (benchindex.go) serves every match but the fuzzy
	// one, which pairs the two sides' rows in order and reads the bench
	// side as a stream (fuzzy.go); the tests' references, and the fuzzy
	// match with tensor-parallel shards, read the whole bench side into
	// memory.
	fuzzy := cfg.fuzzyJoin()
	indexed := !fuzzy && !cfg.simpleBench && !cfg.fullBench
	// (Tensor-parallel shards look bench rows up by name: with them the
	// fuzzy match joins against the whole bench side too. N:1 groups come
	// with pairs or a data mapping, which the fuzzy match never joins
	// beside.)
	streamed := fuzzy && !cfg.simpleBench && !cfg.fullBench && cfg.fused.empty()
	var ix *benchIndex
	var bs *benchSide
	defer func() {
		if ix != nil {
			ix.close()
		}
	}()
	// The bench side is indexed (or read) by the first pass's join
	// goroutine, while the NPU side is already being read.
	newJoin := func() (joiner, error) {
		var j joiner
		var err error
		switch {
		case indexed:
			if ix == nil {
				ix = cfg.held.take(bench, &cfg)
			}
			if ix == nil {
				if ix, err = newBenchIndex(bench, &cfg, renumber); err != nil {
					return nil, fmt.Errorf("bench: %w", err)
				}
			}
			ix.reset(false) // the join looks ahead (lookAhead)
			j = &indexJoin{ix: ix, cfg: &cfg}
			if cfg.layerMap != nil && cfg.layerMap.Deferred() {
				cfg.suffixCheck = &suffixCheck{ix: ix}
			}
			if cfg.dataMapLog != nil {
				cfg.dataMapLog.passStart(cfg.suffixCheck)
			}
		case streamed:
			j = newFuzzyJoin(newBenchStream(bench, &cfg), &cfg)
		default:
			if bs == nil {
				var md5 bool
				if bs, err = collectBench(benchEntries(bench, &md5, &cfg), &cfg, renumber); err != nil {
					return nil, fmt.Errorf("bench: %w", err)
				}
				bs.md5 = bs.md5 || md5
			}
			j = newStoreJoin(bs, &cfg)
			if cfg.layerMap != nil && cfg.layerMap.Deferred() {
				return nil, errors.New("compare: a deferred data mapping needs the bench index")
			}
		}
		return fusedJoiner(j, &cfg)
	}
	var assumed artifacts
	for pass := 0; ; pass++ {
		sum, scan, err := runPass(npu, &cfg, renumber, newJoin, assumed, sink)
		if cfg.trace != nil {
			switch {
			case indexed:
				cfg.trace.indexedPasses++
			case streamed:
				cfg.trace.streamedPasses++
			default:
				cfg.trace.fullPasses++
			}
		}
		if err != nil {
			return nil, err
		}
		got := scan.result()
		if cfg.Mode == MD5 {
			got = assumed // an md5 table prints no statistics
		}
		if got != assumed && pass == 0 && !cfg.writeAgain {
			patched, err := patchTable(sink, assumed, got)
			if err != nil {
				return nil, err
			}
			if patched {
				got = assumed
			}
		}
		if got == assumed || pass > 0 {
			sum.Passes = pass + 1
			if ix != nil { // the joins are over: the index goes before construct.json is read
				ix.close()
				ix = nil
			}
			if err := sum.classify(cfg.construct[0], cfg.construct[1], cfg.Stack); err != nil {
				return nil, err
			}
			return sum, nil
		}
		if err := sink.Reset(); err != nil {
			return nil, err
		}
		if r, ok := cfg.Tensor.(interface{ Reset() }); ok {
			r.Reset() // its counts are the table's: the rows come again
		}
		assumed = got
	}
}

// statsUnread tells whether the rows' statistics go unread, so that the
// dumps may be read without them: an md5 table prints none, and combines
// no rows (fused.go, tp.go: an md5 of a whole is not in its parts').
func (cfg *Config) statsUnread() bool { return cfg.Mode == MD5 && !cfg.keepStats }

// benchEntries is the bench side as a Source; md5 is set when the
// bench file's header says md5.
func benchEntries(b Bench, md5 *bool, cfg *Config) Source {
	if k, ok := b.(*knownFile); ok {
		b = BenchFile(k.path) // read whole: the entries' index is no use
	}
	switch b := b.(type) {
	case Source:
		return b
	case BenchFile:
		return func(yield func(*msprobe.Entry) error) error {
			h, err := msprobe.ScanFileReuseWith(string(b), msprobe.ScanOptions{Plan: cfg.BenchRepeats, NoStats: cfg.statsUnread()}, yield)
			*md5 = h.MD5
			return err
		}
	}
	panic(fmt.Sprintf("compare: unknown bench %T", b))
}

// npuAhead bounds the NPU entries read ahead while the first pass's join
// indexes the bench side (the prologue; about 2 MB of rows on ordinary
// dumps); afterwards the reader stays at most npuQueue entries ahead.
// Entries go in batches of npuBatch, so that the join is not woken for
// each one.
const (
	npuAhead = 1024
	npuQueue = 64
	npuBatch = 16
)

// sideStream decodes a side in its own goroutine, ahead of the join (the
// NPU side; the fuzzy join's bench side too): entries with their rows
// keyed come out of ch, in batches, the first row of each with its stack
// cell when stack is set; ready tells it the join has started taking
// them; stop ends it early; the scan's error comes out of errc once ch is
// closed.
func sideStream(src Source, cfg *Config, renumber bool, stack StackFrames, pool *rowsPool, batches batchPool) (ch <-chan []npuEntry, errc <-chan error, ready, stop func()) {
	c := make(chan []npuEntry, npuQueue/npuBatch)
	ec := make(chan error, 1)
	done := make(chan struct{})
	var started atomic.Bool
	var backlog [][]npuEntry // batches the queue had no room for, before ready
	flush := func() error {
		for k, b := range backlog {
			if !sendBatch(c, b, done) {
				return errStopped
			}
			backlog[k] = nil
		}
		backlog = backlog[:0]
		return nil
	}
	var cur []npuEntry // the batch under way
	send := func() error {
		b := cur
		cur = nil
		if !started.Load() && len(backlog) < npuAhead/npuBatch {
			if len(backlog) == 0 {
				select {
				case c <- b:
					return nil
				default:
				}
			}
			backlog = append(backlog, b)
			return nil
		}
		if err := flush(); err != nil {
			return err
		}
		if !sendBatch(c, b, done) {
			return errStopped
		}
		return nil
	}
	go func() {
		var given *rowsBuf // the rows alloc gave, not yet sent
		alloc := func(n int) []sideRow {
			given = pool.get(n)
			return given.rows
		}
		err := forEachRow(src, cfg, renumber, stack, alloc, func(e *msprobe.Entry, _ []sideRow) error {
			b := given // nil for an entry without a compare key: no rows
			given = nil
			if b == nil {
				b = pool.get(0)
			}
			for i := range b.rows {
				b.rows[i].owner = b
				b.rows[i].fast = fastStats(&b.rows[i].it)
			}
			if cur == nil {
				cur = batches.get()
			}
			cur = append(cur, npuEntry{name: e.Name, rows: b.rows, member: int32(e.Member)})
			if len(cur) < npuBatch {
				return nil
			}
			return send()
		})
		if err == nil && len(cur) > 0 {
			err = send()
		}
		if err == nil {
			err = flush()
		}
		close(c)
		ec <- err
	}()
	var once sync.Once // the join and, when the writer fails, the caller stop it
	return c, ec, func() { started.Store(true) }, func() {
		once.Do(func() {
			close(done)
			for range c {
			}
		})
	}
}

// joiner pairs NPU rows with bench rows for one pass.
type joiner interface {
	// row emits the table rows of one NPU row.
	row(n *sideRow, emit rowEmit) error
	// end emits what is left when the NPU side is done and counts the
	// bench side's rows.
	end(emit rowEmit, sum *Summary) error
}

// rowEmit hands one table row to the writer: an NPU row, a bench row
// (nil for none; copied) and the rule that paired them.
type rowEmit func(npu, bench *sideRow, src MatchSource) error

// runPass streams the NPU side once through the joiner newJoin makes (on
// the join's goroutine, while the NPU side is read) and writes the table.
// Stages keep the cores busy: the NPU scan (itself two goroutines), the
// bench lookahead (lookAhead), the join (one goroutine; it parses the
// bench entries the lookahead did not), and either the join itself
// finishing and writing each entry's rows (cfg.inline) or cfg.Workers
// goroutines finishing them (cells, diffs, rules) and the caller's
// goroutine writing them in order.
func runPass(npu Source, cfg *Config, renumber bool, newJoin func() (joiner, error), art artifacts, sink RowSink) (*Summary, *artifactScan, error) {
	if err := sink.Header(Header(cfg.Mode, cfg.Stack != nil)); err != nil {
		return nil, nil, err
	}
	sum := &Summary{Mode: cfg.Mode.String(), MatchedBy: map[string]int{}}
	scan := newArtifactScan()
	out := newGroupWriter(cfg, sink, sum, art)
	batches := newBatchPool()
	ch, errc, npuReady, stopNPU := sideStream(npu, cfg, renumber, cfg.Stack, &out.rows, batches)
	type joined struct {
		sum Summary // bench counts
		err error
	}
	jc := make(chan joined, 1)
	go func() {
		emit := func(n, b *sideRow, src MatchSource) error {
			r := out.pool.row()
			r.npu, r.source = n, src
			if b != nil {
				s := out.pool.side()
				*s = *b
				r.bench = s
			}
			scan.add(r)
			return out.add(r)
		}
		entries := 0
		var res joined
		j, err := newJoin()
		if err != nil {
			res.err = err
			stopNPU()
			<-errc
			out.closeJobs()
			jc <- res
			return
		}
		npuReady()
		in := ch
		aj, ahead := j.(aheadJoiner)
		if ahead {
			in = aj.lookAhead(ch, batches)
		}
		var cells *stackCells // for entries read before stack.json was
	join:
		for batch := range in {
			for _, e := range batch {
				if e.isAhead {
					aj.takeAhead(e.aheadAt, e.ahead)
					continue
				}
				entries++
				if len(e.rows) > 0 && e.rows[0].stack == stackPending {
					if cells == nil {
						cells = newStackCells(cfg.Stack)
					}
					e.rows[0].stack = cells.cell(e.name)
				}
				if cfg.Progress != nil && entries%1024 == 0 {
					cfg.Progress(entries)
				}
				if cfg.dataMapLog != nil {
					cfg.dataMapLog.rowsOf(&e)
				}
				for i := range e.rows {
					if res.err = j.row(&e.rows[i], emit); res.err != nil {
						break
					}
				}
				if res.err == nil && cfg.dataMapLog != nil {
					res.err = cfg.dataMapLog.entry(e.name, e.member)
				}
				if res.err != nil {
					break join
				}
			}
			batches.put(batch)
		}
		if res.err != nil {
			stopNPU()
			<-errc
		} else if err := <-errc; err != nil {
			res.err = fmt.Errorf("target: %w", err)
		} else {
			if cfg.dataMapLog != nil {
				cfg.dataMapLog.passDone()
			}
			res.err = j.end(emit, &res.sum)
			if res.err == nil {
				res.err = out.flushGroup()
			}
			if cfg.Progress != nil {
				cfg.Progress(entries)
			}
		}
		if a, ok := j.(aborter); ok && res.err != nil {
			a.abort()
		}
		out.closeJobs()
		jc <- res
	}()
	werr := out.drain()
	if werr != nil {
		out.stop()
		stopNPU()
	}
	res := <-jc
	if werr != nil {
		return nil, nil, werr
	}
	if res.err != nil {
		return nil, nil, res.err
	}
	sum.BenchRows, sum.BenchUnmatched, sum.benchMD5 = res.sum.BenchRows, res.sum.BenchUnmatched, res.sum.benchMD5
	sum.FusedWarnings = res.sum.FusedWarnings
	sum.matchedBy()
	return sum, scan, nil
}

var errStopped = errors.New("stopped")

// npuEntry is one NPU entry's rows, handed from the NPU reader to the join
// (sideStream; the fuzzy join's bench side comes so too). (Entries
// without a compare key never come: the scan skips them.)
type npuEntry struct {
	name   string
	member int32 // msprobe.Entry.Member
	rows   []sideRow
	// With isAhead, not an NPU entry but bench entry aheadAt, parsed
	// ahead for the NPU entries after it (lookAhead; nil: msprobe
	// skips it).
	ahead   *parsedEntry
	aheadAt int32
	isAhead bool
}

// indexJoin joins through the bench index.
type indexJoin struct {
	ix   *benchIndex
	cfg  *Config
	refs []rowRef
	key  []byte // the mapped key being looked up
}

func (j *indexJoin) row(n *sideRow, emit rowEmit) error {
	key, src, gate := joinKey(n, j.cfg, &j.key)
	if b := j.cfg.suffixCheck; b != nil && b.err != nil {
		return b.err
	}
	var err error
	if j.refs, err = j.ix.lookupRow(n, key, j.refs); err != nil {
		return err
	}
	if len(j.refs) == 0 {
		return emit(n, nil, Unmatched)
	}
	for _, ref := range j.refs {
		_, b := j.ix.row(ref)
		if gate && !dtypeMatch(n.it.Dtype, b.it.Dtype, j.cfg.CrossFramework) {
			if err := emit(n, nil, Unmatched); err != nil {
				return err
			}
			continue
		}
		j.ix.match(ref)
		if err := emit(n, b, src); err != nil {
			return err
		}
	}
	return nil
}

func (j *indexJoin) end(_ rowEmit, sum *Summary) error { return j.ix.finish(sum) }

// aborter is a joiner with something to release when its pass fails
// before end.
type aborter interface{ abort() }

// aheadJoiner is a joiner whose bench entries are parsed ahead of it, in
// the order its rows ask for them (lookahead.go).
type aheadJoiner interface {
	// lookAhead starts the lookahead of a pass over the NPU entries in
	// and returns them, the bench entries parsed for each put before it.
	// It takes the batches it fills from free and puts back those it
	// empties.
	lookAhead(in <-chan []npuEntry, free batchPool) <-chan []npuEntry
	// takeAhead takes bench entry i, parsed ahead.
	takeAhead(i int32, e *parsedEntry)
}

func (j *indexJoin) lookAhead(in <-chan []npuEntry, free batchPool) <-chan []npuEntry {
	return j.ix.lookAhead(in, free, j.aheadKey)
}

func (j *indexJoin) takeAhead(i int32, e *parsedEntry) { j.ix.takeAhead(i, e) }

// aheadKey gives the key the join will look row n up by, for the
// lookahead.
func (j *indexJoin) aheadKey(n *sideRow, buf *[]byte, has suffixHas) string {
	key, _, _ := joinKeyWith(n, j.cfg, buf, has)
	if key == resolve.NA {
		return ""
	}
	return key
}

// storeJoin joins against the whole bench side in memory (the tests'
// references, and msprobe's fuzzy match when tensor-parallel shards look
// bench rows up by name beside it).
type storeJoin struct {
	bs  *benchSide
	cfg *Config
	fz  *fuzzyMatcher
	tmp sideRow
}

func newStoreJoin(bs *benchSide, cfg *Config) *storeJoin {
	for i := range bs.matched {
		bs.matched[i] = false
	}
	j := &storeJoin{bs: bs, cfg: cfg}
	if cfg.fuzzyJoin() {
		j.fz = newFuzzyMatcher(&storeRows{bs: bs}, cfg)
		j.fz.onMatch = func(pos int) { bs.matched[pos] = true }
		j.fz.packAfter = 0 // packed already
	}
	return j
}

// byIndex adapts emit to bench row numbers.
func (j *storeJoin) byIndex(emit rowEmit) emitFunc {
	return func(n *sideRow, bi int32, src MatchSource) error {
		if bi < 0 {
			return emit(n, nil, src)
		}
		return emit(n, j.bs.rowInto(&j.tmp, bi), src)
	}
}

func (j *storeJoin) row(n *sideRow, emit rowEmit) error {
	if j.fz != nil {
		return j.fz.push(n, emit)
	}
	return joinRow(n, j.bs, j.cfg, j.byIndex(emit))
}

func (j *storeJoin) end(emit rowEmit, sum *Summary) error {
	if j.fz != nil {
		if err := j.fz.finish(emit, &Summary{}); err != nil {
			return err
		}
	}
	// (the rows the groups matched count too)
	sum.BenchRows, sum.benchMD5 = j.bs.len(), j.bs.md5
	for _, m := range j.bs.matched {
		if !m {
			sum.BenchUnmatched++
		}
	}
	return nil
}

// joinRow pairs one NPU row with every bench row of its compare key
// (msprobe's outer merge keeps all of them) and applies the dtype gate.
func joinRow(n *sideRow, bs *benchSide, cfg *Config, emit emitFunc) error {
	key, src, gate := joinKey(n, cfg, nil)
	idx := bs.lookup(key)
	if len(idx) == 0 {
		return emit(n, -1, Unmatched)
	}
	for _, bi := range idx {
		if gate && !dtypeMatch(n.it.Dtype, bs.dtype(bi), cfg.CrossFramework) {
			if err := emit(n, -1, Unmatched); err != nil {
				return err
			}
			continue
		}
		bs.matched[bi] = true
		if err := emit(n, bi, src); err != nil {
			return err
		}
	}
	return nil
}

// joinKey returns the bench key an NPU row is joined on, the source it is
// reported under when it matches, and whether the dtype gate applies. A
// key the data mapping joins from parts is joined in *buf when buf is not
// nil (the key is then valid until the next call).
func joinKey(n *sideRow, cfg *Config, buf *[]byte) (key string, src MatchSource, gate bool) {
	return joinKeyWith(n, cfg, buf, cfg.suffixCheck)
}

// joinKeyWith is joinKey with a deferred data mapping's suffix checks
// answered by has.
func joinKeyWith(n *sideRow, cfg *Config, buf *[]byte, has suffixHas) (key string, src MatchSource, gate bool) {
	key, src, mapped := n.key, ByName, false
	if m, ok := cfg.Pairs[n.it.Name]; ok {
		key, src, mapped = m, ByPairs, true
	} else if cfg.dataMapped() {
		key = n.it.Name
		if m, ok := cfg.mapRow(n, buf, has); ok {
			key, mapped = m, true
			if m != n.it.Name {
				src = cfg.DataMappingSource
				if src == Unmatched {
					src = ByDataMap
				}
			}
		}
	}
	return key, src, !mapped && !cfg.dataMapped()
}

// dataMapped reports whether rows are joined through a data mapping.
func (cfg *Config) dataMapped() bool { return cfg.DataMapping != nil || cfg.layerMap != nil }

// mapped reports whether rows are joined through an explicit mapping:
// a data mapping or pairs.
func (cfg *Config) mapped() bool { return cfg.dataMapped() || cfg.Pairs != nil }

// fuzzyJoin reports whether rows are paired by msprobe's fuzzy match:
// -fm without a data mapping or pairs. msprobe joins through a data
// mapping first (Match.match_api_infos), -fm then only leaving the
// backward calls unrenumbered; pairs, an explicit mapping too, are
// joined through the same way.
func (cfg *Config) fuzzyJoin() bool { return cfg.Fuzzy && !cfg.mapped() }

// mapRow returns the bench row name the data mapping gives an NPU row,
// and whether it has the row; has answers a deferred mapping's suffix
// checks. A name joined from parts is joined in *buf when buf is not nil
// (valid until the next call), else allocated.
func (cfg *Config) mapRow(n *sideRow, buf *[]byte, has suffixHas) (string, bool) {
	it := &n.it
	if cfg.DataMapping != nil {
		if buf == nil {
			if m, ok := cfg.DataMapping.Lookup(it.Name); ok {
				return m, true
			}
		} else if b, ok := cfg.DataMapping.AppendLookup((*buf)[:0], it.Name); ok {
			*buf = b
			return unsafe.String(unsafe.SliceData(b), len(b)), true
		}
	}
	var b, suffix string
	switch d := cfg.layerMap; {
	case d == nil:
		return "", false
	case d.Deferred():
		if !strings.HasPrefix(it.Name, it.Entry) {
			return "", false
		}
		// the rows of an entry come together: its pair is looked up once
		last := has.lastPair()
		if last == nil {
			last = &entryPair{}
		}
		if member := n.member(); last.member != member || !last.set {
			var at int32
			var ok bool
			last.bench, at, ok = d.AppendEntryPair(last.bench[:0], member)
			last.member, last.at, last.ok, last.set = member, at, ok, true
		}
		if !last.ok {
			return "", false
		}
		b = unsafe.String(unsafe.SliceData(last.bench), len(last.bench)) // until the next entry's pair
		suffix = it.Name[len(it.Entry):]
		switch {
		case b == "" || !has.has(last.at, suffix):
			return resolve.NA, true
		case b == it.Entry:
			return it.Name, true
		case suffix == "" && buf == nil:
			return strings.Clone(b), true
		case suffix == "":
			*buf = append((*buf)[:0], b...)
			return unsafe.String(unsafe.SliceData(*buf), len(*buf)), true
		}
	default:
		var ok bool
		if b, suffix, ok = d.Lookup(it.Entry, it.Name); !ok {
			return "", false
		}
	}
	switch {
	case suffix == "":
		return b, true
	case buf == nil:
		return b + suffix, true
	}
	*buf = append(append((*buf)[:0], b...), suffix...)
	return unsafe.String(unsafe.SliceData(*buf), len(*buf)), true
}

// suffixHas tells whether the bench entry at position i has a row with
// the suffix; lastPair is where mapRow keeps, for the goroutine that asks,
// the pair of the entry it asked about last (nil: none kept).
type suffixHas interface {
	has(i int32, suffix string) bool
	lastPair() *entryPair
}

// entryPair is a deferred data mapping's pair of one NPU entry
// (resolve.DataMap.EntryPair), kept while its rows are mapped.
type entryPair struct {
	member  int    // the NPU entry's msprobe.Entry.Member
	bench   []byte // the bench entry's name
	at      int32
	ok, set bool
}

// suffixCheck tells, on the goroutine of a join through ix, whether a bench
// entry has a row with a suffix after its name, from the entry as the
// index parses it. The first error parsing one is kept in err (false is
// told from then on).
type suffixCheck struct {
	ix   *benchIndex
	err  error
	last entryPair
}

func (b *suffixCheck) lastPair() *entryPair {
	if b == nil {
		return nil
	}
	return &b.last
}

// has tells whether the bench entry at position i has a row with the
// suffix.
func (b *suffixCheck) has(i int32, suffix string) bool {
	if b == nil {
		panic("compare: a deferred data mapping used without the bench index")
	}
	if b.err != nil {
		return false
	}
	e, err := b.ix.entry(i)
	if err != nil || e == nil { // nil: an entry msprobe skips
		b.err = err
		return false
	}
	found := false
	e.withSuffix(suffix, func(int32) bool {
		found = true
		return false
	})
	return found
}

// emitFunc hands one table row to the writer: an NPU row and its bench row
// (-1 for none) in the whole-bench store, with the rule that paired them.
type emitFunc func(npu *sideRow, bench int32, src MatchSource) error

// rowPool recycles table rows once written: the table is streamed, so
// only the groups in flight are alive at a time. The join takes rows, the
// writer gives them back; the join takes what was given back a batch at a
// time into lists of its own, so that it seldom waits for the lock.
type rowPool struct {
	mu     sync.Mutex
	rows   []*outRow
	sides  []*sideRow
	groups [][]*outRow // emptied group slices

	// The join's.
	myRows   []*outRow
	mySides  []*sideRow
	myGroups [][]*outRow
}

// refill moves what the writer gave back to the join's lists, when one
// of them is empty.
func (p *rowPool) refill() {
	p.mu.Lock()
	if len(p.myRows) == 0 {
		p.myRows, p.rows = p.rows, p.myRows
	}
	if len(p.mySides) == 0 {
		p.mySides, p.sides = p.sides, p.mySides
	}
	if len(p.myGroups) == 0 {
		p.myGroups, p.groups = p.groups, p.myGroups
	}
	p.mu.Unlock()
}

// take pops the last of the join's list mine, refilled from what the
// writer gave back when it is empty.
func take[T any](p *rowPool, mine *[]T) (v T, ok bool) {
	if len(*mine) == 0 {
		p.refill()
	}
	n := len(*mine)
	if n == 0 {
		return v, false
	}
	v = (*mine)[n-1]
	*mine = (*mine)[:n-1]
	return v, true
}

func (p *rowPool) row() *outRow {
	if r, ok := take(p, &p.myRows); ok {
		cells, line, msgs := r.cells[:0], r.line[:0], r.msgs[:0]
		*r = outRow{} // zeroed in place (a literal with fields is built aside, then copied)
		r.cells, r.line, r.msgs = cells, line, msgs
		return r
	}
	return new(outRow)
}

func (p *rowPool) side() *sideRow {
	if r, ok := take(p, &p.mySides); ok {
		return r
	}
	return new(sideRow)
}

// group returns an empty group slice.
func (p *rowPool) group() []*outRow {
	if g, ok := take(p, &p.myGroups); ok {
		return g
	}
	return make([]*outRow, 0, 8)
}

// put takes back a written group: its rows and the slice.
func (p *rowPool) put(grp []*outRow) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range grp {
		if r.bench != nil {
			p.sides = append(p.sides, r.bench)
		}
		p.rows = append(p.rows, r)
	}
	if len(p.groups) < 2*maxInFlight {
		clear(grp)
		p.groups = append(p.groups, grp[:0])
	}
}

// rowsPool recycles the NPU entries' row slices once their rows are
// written (the rows of an entry are written in one group).
type rowsPool struct {
	mu   sync.Mutex
	free freeList[*rowsBuf]
}

// rowsBuf is an NPU entry's rows.
type rowsBuf struct{ rows []sideRow }

func (p *rowsPool) get(n int) *rowsBuf {
	p.mu.Lock()
	b, ok := p.free.take(n)
	p.mu.Unlock()
	if !ok {
		return &rowsBuf{rows: make([]sideRow, n, classCap(n))}
	}
	b.rows = b.rows[:n]
	return b
}

func (p *rowsPool) put(b *rowsBuf) {
	clear(b.rows) // drop the strings for the collector
	p.mu.Lock()
	p.free.give(b, cap(b.rows), 2*maxInFlight)
	p.mu.Unlock()
}

// groupWriter collects the rows of one entry (the join's side), has
// workers finish them (diffs, metrics, rules, cells) and writes them in
// order (drain, the writer's side).
type groupWriter struct {
	cfg    *Config
	sink   RowSink
	sum    *Summary
	art    artifacts
	group  []*outRow
	pool   rowPool
	rows   rowsPool // the NPU entries' rows
	owners []*rowsBuf

	lines   LineSink   // sink, when it takes lines
	direct  lineBuffer // sink, when the join writes the rows (inline) into its buffer
	rowless bool       // sink takes no row's text (see rowlessSink)
	jobs    chan groupJob
	slots   chan struct{} // one per group handed to the workers and not yet written
	stopc   chan struct{}
	closed  bool
	seq     int
	mu      sync.Mutex
	results map[int][]*outRow
	ready   chan struct{}
	done    chan struct{} // closed when the workers are done
	sc      scratch       // the join's, when it finishes the rows itself
}

// inlineRows reports whether the join should finish and write each
// entry's rows itself rather than hand them to workers and a writer. A
// statistics or md5 row is cheap to finish; with two CPUs the NPU reader,
// the bench reader and the join already keep both busy, and handing every
// entry to a worker and on to the writer costs more than it gains (each
// hand-off moves the rows to the other core's cache): on the qwen25vl
// 27 MB pair, 13% less CPU and 8% less wall time inline. Tensor rows
// (two tensor files read and compared) keep their workers.
func inlineRows(mode Mode, cpus int) bool { return mode != Tensor && cpus <= 2 }

// maxInFlight bounds the groups between the join and the writer: the
// workers wait for a writer that is behind.
const maxInFlight = 256

type groupJob struct {
	seq int
	grp []*outRow
}

// lineBuffer is a LineSink whose rows can be rendered in place, straight
// into its buffer: linesTail gives the slice to append n rows' lines to
// (false: give them to Line), putLines writes them.
type lineBuffer interface {
	linesTail(n int) ([]byte, bool, error)
	putLines(lines []byte, n int) error
}

// rowlessSink is a sink that takes the rows but not their text: -da's,
// whose JSON is written from the rows themselves (Summary.tally); the
// rows' cells are then not rendered.
type rowlessSink interface{ rowless() }

func newGroupWriter(cfg *Config, sink RowSink, sum *Summary, art artifacts) *groupWriter {
	g := &groupWriter{cfg: cfg, sink: sink, sum: sum, art: art, jobs: make(chan groupJob, 2*cfg.Workers),
		slots: make(chan struct{}, maxInFlight),
		stopc: make(chan struct{}), results: map[int][]*outRow{}, ready: make(chan struct{}, 1), done: make(chan struct{})}
	g.lines, _ = sink.(LineSink)
	_, g.rowless = sink.(rowlessSink)
	if cfg.inline && g.lines != nil {
		g.direct, _ = sink.(lineBuffer)
	}
	var wg sync.WaitGroup
	workers := cfg.Workers
	if cfg.inline {
		workers = 0
	}
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var sc scratch
			for j := range g.jobs {
				g.prepare(j.seq, j.grp, &sc)
				g.mu.Lock()
				g.results[j.seq] = j.grp
				g.mu.Unlock()
				select {
				case g.ready <- struct{}{}:
				default:
				}
			}
		}()
	}
	go func() {
		wg.Wait()
		close(g.done)
	}()
	return g
}

func (g *groupWriter) add(r *outRow) error {
	if len(g.group) > 0 && g.group[0].npu.it.Entry != r.npu.it.Entry {
		if err := g.flushGroup(); err != nil {
			return err
		}
	}
	if g.group == nil {
		g.group = g.pool.group()
	}
	g.group = append(g.group, r)
	return nil
}

// flushGroup hands the collected group to the workers.
func (g *groupWriter) flushGroup() error {
	if len(g.group) == 0 {
		return nil
	}
	grp := g.group
	g.group = nil
	if g.cfg.inline {
		g.prepare(g.seq, grp, &g.sc)
		g.seq++
		return g.finish(grp)
	}
	select { // wait for the writer when it is behind
	case g.slots <- struct{}{}:
	case <-g.stopc:
		return errStopped
	}
	select {
	case g.jobs <- groupJob{g.seq, grp}:
		g.seq++
		return nil
	case <-g.stopc:
		return errStopped
	}
}

// closeJobs tells the workers that no group follows (the join is done).
func (g *groupWriter) closeJobs() {
	if !g.closed {
		g.closed = true
		close(g.jobs)
	}
}

// stop makes the join's next hand-off fail (the writer failed).
func (g *groupWriter) stop() { close(g.stopc) }

// drain writes the prepared groups in order until the workers are done.
func (g *groupWriter) drain() error {
	next := 0
	for {
		finished := false
		select {
		case <-g.ready:
		case <-g.done:
			finished = true
		}
		for {
			g.mu.Lock()
			grp, ok := g.results[next]
			delete(g.results, next)
			g.mu.Unlock()
			if !ok {
				break
			}
			next++
			err := g.finish(grp)
			<-g.slots
			if err != nil {
				return err
			}
		}
		if finished {
			return nil
		}
	}
}

// prepare computes everything of a group that depends on the group alone
// (cells, diffs or tensor metrics, Result/Err_message, highlight, the
// rendered cells); it runs on the worker goroutines.
func (g *groupWriter) prepare(seq int, grp []*outRow, sc *scratch) {
	var group *msprobe.Item
	if g.cfg.Mode == Tensor {
		rows := sc.items[:0]
		for _, r := range grp {
			rows = append(rows, &r.npu.it)
		}
		sc.items = rows
		group = DirtyGroup(rows)
	}
	markOutputs(grp)
	for i, r := range grp {
		if g.cfg.Mode != MD5 { // an md5 table has no statistics cells
			r.setCells(&g.art)
		}
		switch g.cfg.Mode {
		case Statistics:
			r.statDiffs(&g.art)
		case Tensor:
			var b *msprobe.Item
			if r.bench != nil {
				b = &r.bench.it
			}
			var err error
			if r.met, err = tensorMetrics(g.cfg.Tensor, rowAt(seq, i), r, b, group); err != nil {
				r.readErr = "error: " + err.Error()
			}
		}
	}
	judge(g.cfg.Mode, grp, sc)
	highlight(g.cfg.Mode, grp, sc)
	if g.rowless || g.direct != nil {
		return // no text, or rendered as written (finish)
	}
	o, stack := &sc.out, g.cfg.Stack != nil
	for _, r := range grp {
		if g.lines != nil {
			r.line = o.appendLine(r.line[:0], r, g.cfg.Mode, stack)
			continue
		}
		o.cells = r.cells[:0]
		r.render(g.cfg.Mode, stack, o)
		r.cells = o.cells
	}
}

// write writes a prepared group's rows.
func (g *groupWriter) write(grp []*outRow) error {
	if g.direct != nil {
		return g.writeDirect(grp)
	}
	for _, r := range grp {
		var err error
		if g.lines != nil {
			err = g.lines.Line(r.line, RowMark{r.result, r.color})
		} else {
			err = g.sink.Row(r.cells, RowMark{r.result, r.color})
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// writeDirect renders a group's rows into the sink's buffer and writes
// them (putRuns).
func (g *groupWriter) writeDirect(grp []*outRow) error {
	o, mode, stack := &g.sc.out, g.cfg.Mode, g.cfg.Stack != nil
	return putRuns(g.direct, len(grp), func(b []byte, i int) []byte {
		return o.appendLine(b, grp[i], mode, stack)
	}, func(i int) error {
		r := grp[i]
		r.line = o.appendLine(r.line[:0], r, mode, stack)
		return g.lines.Line(r.line, RowMark{r.result, r.color})
	})
}

// putRuns writes n rows to lb, render appending row i's line to a
// buffer: in place, in runs that fit the buffer's free room (a group of
// many rows, an entry of thousands, would outgrow it into fresh memory),
// or each row by line where the rows would straddle two of the table's
// parts.
func putRuns(lb lineBuffer, n int, render func(dst []byte, i int) []byte, line func(i int) error) error {
	for at := 0; at < n; {
		b, ok, err := lb.linesTail(n - at)
		if err != nil {
			return err
		}
		if !ok {
			for ; at < n; at++ {
				if err := line(at); err != nil {
					return err
				}
			}
			return nil
		}
		k, full := at, cap(b)-directSlack
		for k < n && (k == at || len(b) < full) {
			b = render(b, k)
			k++
		}
		if err := lb.putLines(b, k-at); err != nil {
			return err
		}
		at = k
	}
	return nil
}

// directSlack is the room putRuns leaves for the next line before it
// writes a run and asks for room again.
const directSlack = 8 << 10

// markOutputs sets r.output of a group's rows: ".output." in the NPU
// name, as msprobe tests it. A row's name starts with its entry's: that
// is searched once, and each name only from where a match could start
// past it.
func markOutputs(grp []*outRow) {
	const p = ".output."
	e := grp[0].npu.it.Entry
	inEntry := strings.Contains(e, p)
	for _, r := range grp {
		n := r.npu.it.Name
		if k := len(e) - (len(p) - 1); k >= 0 && strings.HasPrefix(n, e) {
			r.output = inEntry || strings.Contains(n[k:], p)
		} else {
			r.output = strings.Contains(n, p)
		}
	}
}

// scratch is a worker's reusable memory.
type scratch struct {
	items           []*msprobe.Item
	inputs, outputs []*outRow
	out             rowOut
}

// statDiffs computes the row's statistics diffs, its columns read as art
// reads them.
func (r *outRow) statDiffs(art *artifacts) {
	// a row without bench data has naCell on the bench side: N/A, or 0
	// where the NPU cell prints N/A too
	for i := 0; i < 4; i++ {
		r.nums[i] = statDiffInto(&r.ncell[i], &r.bcell[i], art.reads[i], &r.diff[i], &r.diff[4+i])
	}
}

// finish counts a prepared group and writes it, in table order.
func (g *groupWriter) finish(grp []*outRow) error {
	if err := g.write(grp); err != nil {
		return err
	}
	g.sum.tally(grp, g.cfg)
	// The rows' slices go back once none of them is read any more.
	owners := g.owners[:0]
	for _, r := range grp {
		if o := r.npu.owner; o != nil && (len(owners) == 0 || owners[len(owners)-1] != o) {
			owners = append(owners, o)
		}
	}
	g.pool.put(grp)
	for _, o := range owners {
		g.rows.put(o)
	}
	g.owners = owners
	return nil
}
