package msprobe

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"io"
	"math/bits"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/layermap/layermap/printparse/source"
)

// maxDepth is msprobe's recursion limit for flattening (Const.MAX_DEPTH):
// a value nested deeper than this below an entry field is an error.
const maxDepth = 400

// Row states.
const (
	StateInput          = "input"
	StateOutput         = "output"
	StateParameters     = "parameters"
	StateParametersGrad = "parameters_grad"
	StateDebug          = "debug"
)

// ScanFile is Scan over the file at path; the file name is the source in
// errors and selects debug.json parsing.
//
// A "data" that repeats a key stops the scan once "data" is read (fn
// given its entries, the repeats too) with an error wrapping
// ErrRepeatedKey (see Repeats); ScanFileExact reads such a file as Python
// does.
func ScanFile(path string, fn func(*Entry) error) (Header, error) {
	return ScanFileWith(path, ScanOptions{}, fn)
}

// ScanOptions are the choices of ScanFileWith and ScanReuseWith.
type ScanOptions struct {
	// Plan is the plan FindRepeats gave for the file (nil: none).
	Plan *Repeats
	// NoStats leaves the statistics out of the rows that take them from
	// the item's Max, Min, Mean and Norm (a tensor, a torch.Size, a
	// slice): their Stats stay Null, the members checked as always but
	// their numbers not converted. For readers of md5 tables, which print
	// no statistics. A row whose statistics are its value (a scalar) or
	// its ranks keeps them.
	NoStats bool
}

// ScanFileWith is ScanFile with options.
func ScanFileWith(path string, opt ScanOptions, fn func(*Entry) error) (Header, error) {
	return scanFile(path, opt.Plan, fn, scanMode{noStats: opt.NoStats})
}

// ScanFileReuseWith is ScanReuseWith over the file at path, opened as
// ScanFile opens it: what is kept per entry does not grow with the file.
func ScanFileReuseWith(path string, opt ScanOptions, fn func(*Entry) error) (Header, error) {
	return scanFile(path, opt.Plan, fn, scanMode{reuse: true, noStats: opt.NoStats})
}

// scanMode is how scan reads a file: with the decoding goroutine
// (pipelined), reusing the entries it gives fn (reuse; see ScanReuse),
// building rows with their names only (names; see ScanFileRowNames),
// without the items' statistics (noStats; see ScanOptions).
type scanMode struct {
	pipelined, reuse, names, noStats bool
	count                            bool        // rows counted, not built, into counted (ScanFileRowCount)
	counted                          *rowCount   // the count's
	noFlat                           bool        // the fast path off (tests compare both paths)
	check                            repeatCheck // tests
}

// scanFile is scan over the file at path, pipelined when more than one
// CPU is available.
func scanFile(path string, plan *Repeats, fn func(*Entry) error, m scanMode) (Header, error) {
	f, err := source.Open(path, source.MaxDumpJSON)
	if err != nil {
		return Header{}, err // *source.Error naming the file
	}
	defer f.Close()
	m.pipelined = runtime.GOMAXPROCS(0) > 1
	return scan(f, path, plan, fn, m)
}

// ScanFileExact is ScanFile that reads a "data" repeating keys as
// Python's json.load does: on a repeat it calls reset (the caller forgets
// the entries fn was given) and scans the file again with its Repeats.
func ScanFileExact(path string, reset func(), fn func(*Entry) error) (Header, error) {
	h, _, err := scanFileExact(path, reset, fn, scanMode{})
	return h, err
}

// ScanFileRowNames is ScanFileExact for readers of the rows' names only.
// Each Item has its Name, Entry, State, DataName and Line (and a P2POp
// row its Op, Peer and P2P), and nothing else: no statistics, dtype,
// shape or md5 are filled in. The file is
// checked, and its entries and rows found, exactly as ScanFileExact does.
// Entries are given as ScanReuse gives them (reused: fn must copy what it
// keeps; no call orders); repeats tells whether "data" repeated a key (the
// file was scanned again).
func ScanFileRowNames(path string, reset func(), fn func(*Entry) error) (h Header, repeats bool, err error) {
	return scanFileExact(path, reset, fn, scanMode{reuse: true, names: true})
}

// ScanFileRowCount counts the rows of a dump.json's entries, as
// ScanFileRowNames finds and checks them, without building them.
func ScanFileRowCount(path string) (RowCount, error) {
	var c rowCount
	h, _, err := scanFileExact(path, func() { c = rowCount{} }, nil, scanMode{reuse: true, names: true, count: true, counted: &c})
	if err != nil {
		return RowCount{}, err
	}
	return RowCount{Rows: c.rows, P2P: c.p2p, MD5: h.MD5}, nil
}

// RowCount is what ScanFileRowCount finds in a dump.json.
type RowCount struct {
	Rows int  // the rows of the entries msprobe reads
	P2P  bool // one of them is a torch.distributed.P2POp (its values: ScanFileRowNames)
	MD5  bool // an entry carries an md5 (Header.MD5)
}

// rowCount is what a counting scan found.
type rowCount struct {
	rows int
	p2p  bool
}

func scanFileExact(path string, reset func(), fn func(*Entry) error, m scanMode) (Header, bool, error) {
	h, err := scanFile(path, nil, fn, m)
	if err == nil {
		return h, false, nil
	}
	plan, ferr := FindRepeatsAfter(err)
	switch {
	case ferr != nil:
		return Header{}, false, ferr
	case plan == nil:
		return Header{}, false, err
	}
	reset()
	h, err = scanFile(path, plan, fn, m)
	return h, true, err
}

// Scan streams a dump.json from r and calls fn once per entry of "data",
// in file order, with the entry flattened into rows exactly as msprobe's
// compare flattens it (ParseData.gen_data_df: read_op, op_item_parse,
// gen_op_item, reorder_index; spec §3.1):
//
//   - entries whose name has no forward/backward/parameters_grad in its
//     last two dot-parts are not passed to fn (Header.Skipped lists them);
//     the entry name must not start with (or contain after ';') one of the
//     formula characters + - = % @ (or their full-width forms);
//   - forward bodies: input_args, input_kwargs, input, output, parameters,
//     in that order, prefixed ".input", ".input", ".input", ".output",
//     ".parameters"; parameters_grad and debug entries flatten the whole
//     body; other fields are ignored;
//   - null -> a NONE-ITEM row; empty list/object and bare scalars -> no
//     row; list children are named ".0", ".1"... (except below a
//     parameters_grad name part, where they keep the parent name); P2POp
//     objects -> one row from their tensor; an object with a string "type"
//     -> one leaf row; other objects -> children named ".key";
//   - rows are ordered inputs, parameters, outputs, parameters_grad.
//
// Before flattening, dump.json bodies are checked as msprobe's
// check_dump_json_str does (a "shape" that is not a list, a
// "requires_grad" that is not a bool, or a string starting with a
// formula character in input/kwargs/output is an error).
//
// source names the input in errors ("file:line: expected ..., found ...");
// when its base name is debug.json, entries are parsed as msprobe parses a
// debug.json (names used as-is, no body check).
//
// Memory use is bounded by the largest entries, not by the file: each
// entry body is decoded into a reused tree, flattened, and released (what
// grows is only the per-op call counters, one per distinct OpNoNumber, and
// Header.Skipped). The strings of one entry's rows share one backing
// string: keeping any of them keeps the entry's row strings alive
// (strings.Clone detaches one). When
// more than one CPU is available, decoding runs one goroutine ahead of
// flattening (a few entries in flight); fn is always called from the
// calling goroutine, in file order. A non-nil error from fn stops the scan
// and is returned as is. On any error the returned Header is zero.
func Scan(r io.Reader, source string, fn func(*Entry) error) (Header, error) {
	return scan(r, source, nil, fn, scanMode{pipelined: runtime.GOMAXPROCS(0) > 1})
}

// ScanReuse is Scan for callers that copy what they keep and need no call
// orders: the Entry and its Items slice are reused for the next entry
// (the strings are not: they stay valid), so that scanning allocates
// little per row, and ForwardCallOrder and BackwardCallOrder are left 0,
// so that no count per op name is kept: memory does not grow with the
// file. An entry's name and its rows' strings are one allocation: a
// caller keeping the name without the rows should clone it.
func ScanReuse(r io.Reader, source string, fn func(*Entry) error) (Header, error) {
	return scan(r, source, nil, fn, scanMode{pipelined: runtime.GOMAXPROCS(0) > 1, reuse: true})
}

// ScanReuseWith is ScanReuse with options; with a Plan, source must be
// the path of the file r reads.
func ScanReuseWith(r io.Reader, source string, opt ScanOptions, fn func(*Entry) error) (Header, error) {
	return scan(r, source, opt.Plan, fn, scanMode{pipelined: runtime.GOMAXPROCS(0) > 1, reuse: true, noStats: opt.NoStats})
}

func scan(r io.Reader, source string, plan *Repeats, fn func(*Entry) error, m scanMode) (Header, error) {
	s := &scanner{
		kf:      newKeyFilter(source, plan, m.check),
		reuse:   m.reuse,
		names:   m.names,
		noStats: m.noStats,
		lx:      newLexer(r, source),
		debug:   filepath.Base(source) == DebugJSONName,
		noFlat:  m.noFlat,
		fn:      fn,
		intern:  make(map[string]string),
		fwd:     make(map[string]int),
		bwd:     make(map[string]int),
	}
	s.flat.names, s.flat.noStats = m.names, m.noStats
	if m.count {
		s.countOnly, s.flat.count, s.counted = true, true, m.counted
	}
	defer s.reloc.close()
	if m.pipelined {
		return s.runPipelined()
	}
	t := &tree{}
	p := parser{lx: s.lx, t: t}
	var h Header
	err := readTop(s.lx, &h, func() error {
		return s.kf.onData(s.lx, func() error {
			return forEachDataMember(s.lx, s.kf, func(name []byte, line int, off int64, at *memberAt) error {
				t.reset()
				j, err := s.decode(&p, name, line, at)
				if err != nil {
					return err
				}
				j.setOffset(off, at)
				h.Entries++
				return s.process(&h, &j)
			})
		})
	})
	if err != nil {
		return Header{}, err
	}
	return h, nil
}

// job is one decoded entry on its way from the decoder to the flattener.
type job struct {
	t    *tree
	body int32
	name string
	line int
	off  int64 // Entry.Offset
	// flat: the fast path flattened the entry into t.fitems[ilo:ihi]
	// over t.fsb[slo:shi] (see flat.go), or only counted its ihi rows
	// (flatter.count); there is no body.
	flat               bool
	md5                bool // the flattened entry has an md5 (md5_find)
	ilo, ihi, slo, shi int32
}

// setOffset gives the job the offset of its member's name, or of the
// occurrence at, whose body it read.
func (j *job) setOffset(off int64, at *memberAt) {
	j.off = off
	if at != nil {
		j.off = at.off
	}
}

// decode checks an entry name and parses its body into p's tree, after
// what the tree already holds. With at set (a repeated key, see Repeats)
// the body is the one at at, and the one at the lexer is skipped.
func (s *scanner) decode(p *parser, rawName []byte, line int, at *memberAt) (job, error) {
	// The name is held in the tree's arena, which outlives the job, and
	// read there in place; emit makes the Entry's copy (see finish).
	lo := len(p.t.arena)
	p.t.arena = append(p.t.arena, rawName...)
	name := unsafe.String(unsafe.SliceData(p.t.arena[lo:]), len(rawName))
	if formulaStart(name) {
		return job{}, &source.Error{File: s.lx.source, Line: line,
			Msg: fmt.Sprintf("expected an entry name without a leading formula character (+ - = %% @; msprobe refuses it), found %q", name)}
	}
	if at != nil {
		lx, err := s.reloc.body(s.lx.source, at)
		if err != nil {
			return job{}, err
		}
		q := parser{lx: lx, t: p.t}
		body, err := q.value(0, "an entry body")
		if err != nil {
			return job{}, err
		}
		return job{t: p.t, body: body, name: name, line: at.line}, s.lx.skipValue("an entry body")
	}
	if kind := flatKind(name); !s.debug && !s.noFlat && kind != flatNo {
		if j, ok := s.flat.entry(s.lx, p.t, name, line, kind); ok {
			return j, nil
		}
	}
	body, err := p.value(0, "an entry body")
	if err != nil {
		return job{}, err
	}
	return job{t: p.t, body: body, name: name, line: line}, nil
}

// batch is a run of decoded entries sharing one tree; err, when set, is
// the decoding error that follows them.
type batch struct {
	t    *tree
	jobs []job
	err  error
}

// Batches hand entries from the decoder to the flattener in groups, so
// that goroutine hand-offs are rare; a batch is cut at batchEntries
// entries or batchBytes of tree arena and flat rows (flatRowBytes a row
// besides its strings: entries of thousands of rows go a few at a time),
// and pipelineDepth batches may be in flight, so memory stays bounded.
const (
	batchEntries  = 64
	batchBytes    = 256 << 10
	pipelineDepth = 3
	flatRowBytes  = int(unsafe.Sizeof(Item{}) + unsafe.Sizeof(pspans{}))
)

// runPipelined decodes in a second goroutine and flattens in this one.
func (s *scanner) runPipelined() (Header, error) {
	// free holds the batches the flattener is done with: their trees and
	// job slices are reused.
	free := make(chan batch, pipelineDepth+1)
	for k := 0; k < pipelineDepth+1; k++ {
		free <- batch{t: &tree{}}
	}
	batches := make(chan batch, pipelineDepth)
	done := make(chan struct{})
	var hd Header // filled by the decoder: the header keys
	finished := make(chan error, 1)
	go func() {
		var cur batch
		p := parser{lx: s.lx}
		take := func() bool {
			select {
			case b := <-free:
				b.t.reset()
				cur = batch{t: b.t, jobs: b.jobs}
				p.t = b.t
				return true
			case <-done:
				return false
			}
		}
		send := func() bool {
			select {
			case batches <- cur:
				cur = batch{}
				return true
			case <-done:
				return false
			}
		}
		var err error
		// The first batches are short, so that the first entries reach
		// fn at once (a caller may want only those).
		entries := 1
		if !take() {
			err = errStop
		} else {
			err = readTop(s.lx, &hd, func() error {
				return s.kf.onData(s.lx, func() error {
					return forEachDataMember(s.lx, s.kf, func(name []byte, line int, off int64, at *memberAt) error {
						j, err := s.decode(&p, name, line, at)
						if err != nil {
							return err
						}
						j.setOffset(off, at)
						cur.jobs = append(cur.jobs, j)
						if len(cur.jobs) >= entries || len(cur.t.arena)+len(cur.t.fsb)+len(cur.t.fitems)*flatRowBytes >= batchBytes {
							entries = min(2*entries, batchEntries)
							if !send() || !take() {
								return errStop
							}
						}
						return nil
					})
				})
			})
			if err != errStop {
				cur.err = err
				send()
			}
		}
		close(batches)
		finished <- err
	}()

	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			close(done)
		}
	}
	defer stop() // also when fn panics: the decoder must not block forever
	var h Header // filled by the flattener: Entries, Skipped, MD5
	var ferr error
loop:
	for b := range batches {
		for k := range b.jobs {
			h.Entries++
			if ferr = s.process(&h, &b.jobs[k]); ferr != nil {
				break loop
			}
		}
		if b.err != nil {
			ferr = b.err
			break
		}
		clear(b.jobs)
		free <- batch{t: b.t, jobs: b.jobs[:0]}
	}
	stop()
	for range batches {
	}
	<-finished
	if ferr != nil {
		return Header{}, ferr
	}
	hd.Entries, hd.Skipped, hd.MD5 = h.Entries, h.Skipped, h.MD5
	return hd, nil
}

type scanner struct {
	kf    *keyFilter // repeated keys of "data"
	reloc relocator  // bodies of repeated keys (the rare path)
	reuse bool       // finish reuses out
	names bool       // finish builds rows with their names only
	// noStats leaves the statistics members out of the rows (ScanOptions).
	noStats bool
	// countOnly counts an entry's rows into rows instead of building them.
	countOnly   bool
	counted     *rowCount // a whole file's count (ScanFileRowCount), when not nil
	countP2P    bool      // a P2POp row among the entry's counted ones
	count, rows int
	out         []Item // the entry's items, when reused
	entry       Entry  // the entry passed to fn, when reused
	lx          *lexer
	flat        flatter  // the fast path, used by the decoding goroutine
	crcs        crcHexes // md5 of the tree path's non-tensor values
	t           *tree    // tree of the entry being flattened
	off         int64    // Offset of the entry being flattened
	linesFrom   bool     // lines count from the entry name's (EntryReader.Read): rows get off, for itemLine
	debug       bool
	noFlat      bool // the tree path for every entry (tests)
	fn          func(*Entry) error
	index       int
	member      int // members emitted, skipped ones included
	intern      map[string]string
	recent      [8]string // interned strings seen last
	nextRecent  int
	fwd         map[string]int
	bwd         map[string]int

	// Per-entry state.
	entryName string
	items     []Item   // the entry's items being built (with spans)
	spans     []pspans // their strings' spans
	sb        []byte   // bytes of the entry's row strings
	path      []byte   // structural name being built
	scratch   []byte
}

// pspans are the places in sb of the long strings of an Item under
// construction, kept beside the Item until the entry is complete.
type pspans struct {
	name     span
	dataName span
	md5      span
	stats    [4]span // Text of Stats[k]
}

// pitem is an Item under construction and its strings' spans. The items
// and their spans are in two slices, so that finish can hand out the
// items in place.
type pitem struct {
	it *Item
	*pspans
}

func (s *scanner) errAt(line int32, format string, args ...any) error {
	return &source.Error{File: s.lx.source, Line: int(line), Msg: fmt.Sprintf(format, args...)}
}

// process flattens one decoded entry and passes it to fn.
func (s *scanner) process(h *Header, j *job) error {
	s.t, s.off, s.countP2P = j.t, j.off, false
	if j.flat {
		s.count = int(j.ihi - j.ilo)
		if j.md5 {
			h.MD5 = true
		}
		if s.flat.count {
			return s.emit(h, j.name, j.line, j.md5, nil, nil, nil)
		}
		return s.emit(h, j.name, j.line, j.md5, j.t.fitems[j.ilo:j.ihi], j.t.fspans[j.ilo:j.ihi], j.t.fsb[j.slo:j.shi])
	}
	t, body, name, line := j.t, j.body, j.name, j.line
	var err error
	if !s.debug && t.nodes[body].kind != kObject {
		return s.errAt(t.nodes[body].line, "entry %q: expected an object as the entry body, found %s", name, kindName(t.nodes[body].kind))
	}
	if !s.debug {
		if err := s.checkBody(name, body); err != nil {
			return err
		}
	}
	var hasMD5 bool
	if s.debug {
		hasMD5 = t.md5Anywhere(body, 0)
	} else {
		hasMD5 = t.md5Find(body)
	}
	if hasMD5 {
		h.MD5 = true
	}

	s.entryName = name
	s.count, s.rows = 0, 0
	s.items, s.spans = s.items[:0], s.spans[:0]
	s.sb = s.sb[:0]
	s.path = append(s.path[:0], name...)
	lastDot := strings.LastIndexByte(name, '.')
	last := name[lastDot+1:]
	secondLast := ""
	if lastDot >= 0 {
		if d := strings.LastIndexByte(name[:lastDot], '.'); d >= 0 {
			secondLast = name[d+1 : lastDot]
		} else {
			secondLast = name[:lastDot]
		}
	}
	entryPG := hasPGSegment(name)
	switch {
	case last == StateDebug:
		err = s.parse(body, StateDebug, 0, entryPG)
	case last == StateParametersGrad || (lastDot >= 0 && secondLast == StateParametersGrad):
		err = s.parse(body, StateParametersGrad, 0, entryPG)
	case s.debug && t.nodes[body].kind == kArray:
		// msprobe looks the field names up in the list: no rows.
	default:
		if t.nodes[body].kind != kObject {
			return s.errAt(t.nodes[body].line, "entry %q: expected an object as the entry body, found %s", name, kindName(t.nodes[body].kind))
		}
		for _, f := range ioFields {
			c := t.get(body, f.key)
			if c < 0 {
				continue
			}
			s.path = append(s.path[:len(name)], f.suffix...)
			if err = s.parse(c, f.state, 0, entryPG); err != nil {
				break
			}
		}
	}
	if err != nil {
		return err
	}
	return s.emit(h, name, line, hasMD5, s.items, s.spans, s.sb)
}

// emit passes the entry with its rows (items over sb) to fn.
//
// name is read in place (see decode): the Entry's name is copied with
// its rows' strings (finish); an entry only counted keeps it nowhere.
func (s *scanner) emit(h *Header, name string, line int, hasMD5 bool, items []Item, spans []pspans, sb []byte) error {
	e := &s.entry // reused: fn must not keep it (Scan's fn may)
	if !s.reuse {
		e = new(Entry)
	}
	var rows []Item
	if !s.countOnly || !s.reuse {
		name, rows = s.finish(name, items, spans, sb)
		if s.linesFrom {
			for k := range rows {
				rows[k].entryAt = s.off
			}
		}
	}
	*e = Entry{Name: name, Line: line, Offset: s.off, HasMD5: hasMD5, Member: s.member}
	s.member++
	if s.debug {
		e.OpNoNumber, e.CallDirection, e.Direction = name, name, name
	} else {
		e.OpNoNumber, e.CallDirection, e.Direction = SplitName(name)
		if e.OpNoNumber == "" {
			h.Skipped = append(h.Skipped, strings.Clone(name))
			return nil
		}
	}
	if !s.reuse { // a count per op for the whole file: not for ScanReuse
		e.ForwardCallOrder = s.fwd[e.OpNoNumber]
		e.BackwardCallOrder = s.bwd[e.OpNoNumber]
		switch e.Direction {
		case "forward":
			s.fwd[e.OpNoNumber]++
		case "backward":
			s.bwd[e.OpNoNumber]++
		}
	}
	e.Index = s.index
	s.index++
	if s.countOnly {
		s.rows = s.count
		if c := s.counted; c != nil {
			c.rows, c.p2p = c.rows+s.count, c.p2p || s.countP2P
		}
		return nil
	}
	e.Items = rows
	return s.fn(e)
}

var ioFields = [...]struct{ key, suffix, state string }{
	{"input_args", ".input", StateInput},
	{"input_kwargs", ".input", StateInput},
	{"input", ".input", StateInput},
	{"output", ".output", StateOutput},
	{"parameters", ".parameters", StateParameters},
}

// lastIndex is the index of the last '.' in name[:end], or -1; it tests
// eight bytes at a time, from the end.
func lastIndex(name string, end int) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for ; end >= 8; end -= 8 {
		x := load8(name[end-8:end]) ^ ones*'.'
		// High bit set per byte that is '.': no byte carries into the next.
		if dots := ^((x&^highs + ones*0x7f) | x) & highs; dots != 0 {
			return end - 8 + (63-bits.LeadingZeros64(dots))/8
		}
	}
	for i := end - 1; i >= 0; i-- {
		if name[i] == '.' {
			return i
		}
	}
	return -1
}

// hasPGSegment reports whether "parameters_grad" is one of the dot-parts of b.
func hasPGSegment[T string | []byte](b T) bool {
	for len(b) > 0 {
		i := indexDot(b)
		seg := b
		if i >= 0 {
			seg, b = b[:i], b[i+1:]
		} else {
			b = b[len(b):]
		}
		if string(seg) == StateParametersGrad {
			return true
		}
	}
	return false
}

func indexDot[T string | []byte](b T) int {
	for i := 0; i < len(b); i++ {
		if b[i] == '.' {
			return i
		}
	}
	return -1
}

// parse is msprobe's op_item_parse of node i named s.path. pg tells
// whether the name has a parameters_grad dot-part.
func (s *scanner) parse(i int32, state string, depth int, pg bool) error {
	t := s.t
	if depth > maxDepth {
		return s.errAt(t.nodes[i].line, "entry %q: expected at most %d levels of nesting below an entry field, found more (msprobe's recursion limit)", s.entryName, maxDepth)
	}
	n := &t.nodes[i]
	switch n.kind {
	case kNull:
		if s.countOnly {
			s.count++
			return nil
		}
		s.noneItem(state, n.line)
		return nil
	case kArray:
		base := len(s.path)
		k := 0
		for c := n.first; c >= 0; c = t.nodes[c].next {
			if !pg {
				s.path = append(s.path[:base], '.')
				s.path = strconv.AppendInt(s.path, int64(k), 10)
			}
			if err := s.parse(c, state, depth+1, pg); err != nil {
				return err
			}
			s.path = s.path[:base]
			k++
		}
		return nil
	case kObject:
		if n.n == 0 {
			return nil
		}
		if ct := t.get(i, "class_type"); ct >= 0 && t.textIs(ct, "torch.distributed.P2POp") {
			if s.countOnly {
				s.count++
				s.countP2P = true
				return nil
			}
			s.p2p(i, state)
			return nil
		}
		if ty := t.get(i, "type"); ty >= 0 && t.nodes[ty].kind == kString {
			if s.countOnly {
				s.count++
				return nil
			}
			s.leaf(i, state)
			return nil
		}
		base := len(s.path)
		for c := n.first; c >= 0; c = t.nodes[c].next {
			key := t.bytes(t.nodes[c].key)
			s.path = append(s.path[:base], '.')
			s.path = append(s.path, key...)
			if err := s.parse(c, state, depth+1, pg || hasPGSegment(key)); err != nil {
				return err
			}
		}
		s.path = s.path[:base]
		return nil
	}
	return nil // bare scalars give no row
}

// addString copies b into the entry's string bytes.
func (s *scanner) addString(b []byte) span {
	off := len(s.sb)
	s.sb = append(s.sb, b...)
	return span{int32(off), int32(len(b))}
}

// internBytes returns a shared string for a frequent short value (dtype,
// shape, ...), allocating it only the first time.
func (s *scanner) internBytes(b []byte) string {
	// Rows repeat the values of the rows before them: a few recent ones
	// are checked before the map.
	for _, v := range s.recent {
		if v == string(b) {
			return v
		}
	}
	v, ok := s.intern[string(b)]
	if !ok {
		v = string(b)
		if len(s.intern) < 1<<14 {
			s.intern[v] = v
		}
	}
	s.recent[s.nextRecent] = v
	s.nextRecent = (s.nextRecent + 1) % len(s.recent)
	return v
}

func (s *scanner) newItem(state string, line int32) pitem {
	s.items = append(s.items, Item{})
	s.spans = append(s.spans, pspans{})
	pi := pitem{&s.items[len(s.items)-1], &s.spans[len(s.spans)-1]}
	pi.it.State = state
	pi.it.Line = int(line)
	pi.it.DataName = "-1"
	pi.name = s.addString(s.path)
	pi.dataName = span{-1, 0}
	pi.md5 = span{-1, 0}
	for k := range pi.stats {
		pi.stats[k] = span{-1, 0}
	}
	return pi
}

// noneItem appends msprobe's NONE-ITEM row: every attribute None.
func (s *scanner) noneItem(state string, line int32) pitem {
	pi := s.newItem(state, line)
	pi.it.NoneItem = true
	pi.it.Dtype, pi.it.Shape = "None", "None"
	return pi
}

// p2p flattens a torch.distributed.P2POp object.
func (s *scanner) p2p(o int32, state string) {
	t := s.t
	var pi pitem
	if tensor := t.get(o, "tensor"); tensor >= 0 && t.nodes[tensor].kind == kObject {
		pi = s.leaf(tensor, state)
	} else {
		pi = s.noneItem(state, t.nodes[o].line)
	}
	pi.it.P2P = true
	pi.it.Op = s.jsonIntern(t.get(o, "op"))
	pi.it.Peer = s.jsonIntern(t.get(o, "peer"))
}

// jsonIntern is the interned json.dumps of node i ("null" if absent, as
// msprobe's op_data.get(key) is None then).
func (s *scanner) jsonIntern(i int32) string {
	if i < 0 {
		return "null"
	}
	s.scratch = s.t.appendJSON(s.scratch[:0], i)
	return s.internBytes(s.scratch)
}

// pyStrIntern is the interned Python str() of node i ("None" if absent).
func (s *scanner) pyStrIntern(i int32) string {
	s.scratch = s.t.appendPyStr(s.scratch[:0], i)
	return s.internBytes(s.scratch)
}

// statValue sets stat k of pi from node i as gen_op_item holds it: a
// top-level bool of the item became the string "True"/"False" when
// converted is set.
func (s *scanner) statValue(pi pitem, k int, i int32, converted bool) {
	t := s.t
	if i < 0 {
		pi.it.Stats[k] = Value{Kind: Null}
		pi.stats[k] = span{-1, 0}
		return
	}
	n := &t.nodes[i]
	switch n.kind {
	case kTrue, kFalse:
		if converted {
			pi.it.Stats[k] = Value{Kind: String}
			if n.kind == kTrue {
				pi.stats[k] = s.addString([]byte("True"))
			} else {
				pi.stats[k] = s.addString([]byte("False"))
			}
			return
		}
		pi.it.Stats[k] = Value{Kind: Bool, Bool: n.kind == kTrue}
	case kInt, kFloat:
		v, text := t.number(i), t.bytes(n.text)
		v.Repr = v.Kind == Number && isPyRepr(text, v.Num)
		pi.it.Stats[k] = v
		pi.stats[k] = s.addString(text)
		return
	case kString:
		pi.it.Stats[k] = Value{Kind: String}
		pi.stats[k] = s.addString(t.bytes(n.text))
		return
	case kArray, kObject:
		pi.it.Stats[k] = Value{Kind: Composite}
		off := len(s.sb)
		s.sb = t.appendPyRepr(s.sb, i)
		pi.stats[k] = span{int32(off), int32(len(s.sb) - off)}
		return
	default:
		pi.it.Stats[k] = t.scalar(i) // null, NaN, ±Infinity: constant Text
	}
	pi.stats[k] = span{-1, 0}
}

// statString sets stat k to the string str(node i).
func (s *scanner) statString(pi pitem, k int, b []byte) {
	pi.it.Stats[k] = Value{Kind: String}
	pi.stats[k] = s.addString(b)
}

var statKeys = [4]string{"Max", "Min", "Mean", "Norm"}

// leaf is msprobe's gen_op_item for the item object o; it returns the row.
func (s *scanner) leaf(o int32, state string) pitem {
	t := s.t
	pi := s.newItem(state, t.nodes[o].line)
	var stat [4]int32
	typ, dtype, shape, md5, dataName, value, groupRanks, reqGrad := int32(-1), int32(-1), int32(-1), int32(-1), int32(-1), int32(-1), int32(-1), int32(-1)
	stat[0], stat[1], stat[2], stat[3] = -1, -1, -1, -1
	for c := t.nodes[o].first; c >= 0; c = t.nodes[c].next {
		switch string(t.bytes(t.nodes[c].key)) {
		case "type":
			typ = c
		case "dtype":
			dtype = c
		case "shape":
			shape = c
		case "md5":
			md5 = c
		case "data_name":
			dataName = c
		case "value":
			value = c
		case "group_ranks":
			groupRanks = c
		case "requires_grad":
			reqGrad = c
		case "Max":
			stat[0] = c
		case "Min":
			stat[1] = c
		case "Mean":
			stat[2] = c
		case "Norm":
			stat[3] = c
		}
	}
	typStr := ""
	if typ >= 0 && t.nodes[typ].kind == kString {
		typStr = s.internBytes(t.bytes(t.nodes[typ].text))
	}
	pi.it.Type = typStr

	// data_name and the row name.
	if t.truthy(dataName) {
		s.scratch = t.appendPyStr(s.scratch[:0], dataName)
		if string(s.scratch) != "-1" {
			pi.dataName = s.addString(s.scratch)
			stem := s.scratch
			if d := bytes.LastIndexByte(stem, '.'); d >= 0 {
				stem = stem[:d]
			}
			pi.name = s.addString(stem)
		}
	}

	// requires_grad: a bool became "True"/"False"; None stays None ("").
	if reqGrad >= 0 && t.nodes[reqGrad].kind != kNull {
		pi.it.RequiresGrad = s.pyStrIntern(reqGrad)
	}
	if !s.noStats { // else Null, as newItem left them
		for k := range stat {
			s.statValue(pi, k, stat[k], true)
		}
	}

	// dtype, shape and the special cases of items without dtype.
	md5Set := false
	var md5Bytes []byte
	dtypeTruthy := dtype >= 0 && (t.nodes[dtype].kind == kTrue || t.nodes[dtype].kind == kFalse || t.truthy(dtype))
	if dtypeTruthy {
		pi.it.Dtype = s.pyStrIntern(dtype)
		pi.it.Shape = s.pyStrIntern(shape)
	} else {
		lastSeg := s.path[bytes.LastIndexByte(s.path, '.')+1:]
		switch {
		case typStr == "torch.Size":
			pi.it.Dtype = typStr
			pi.it.Shape = s.pyStrIntern(value)
		case typStr == "slice":
			pi.it.Dtype = typStr
			s.scratch = appendNPShape(s.scratch[:0], t, value)
			pi.it.Shape = s.internBytes(s.scratch)
		case typStr == "ellipsis":
			pi.it.Dtype = typStr
			pi.it.Shape = "[]"
			for k := range stat {
				s.statValue(pi, k, value, false)
			}
		case string(lastSeg) == "src" || string(lastSeg) == "dst" || string(lastSeg) == "group_src" || string(lastSeg) == "group_dst":
			pi.it.Dtype = typStr
			pi.it.Shape = "[]"
			s.scratch = t.appendPyStr(s.scratch[:0], value)
			for k := range stat {
				s.statString(pi, k, s.scratch)
			}
			md5Bytes, md5Set = append([]byte(nil), s.scratch...), true
		case typStr == "torch.ProcessGroup":
			pi.it.Dtype = typStr
			pi.it.Shape = "[]"
			s.scratch = t.appendPyStr(s.scratch[:0], groupRanks)
			for k := range stat {
				s.statString(pi, k, s.scratch)
			}
			md5Bytes, md5Set = append([]byte(nil), s.scratch...), true
		default:
			pi.it.Dtype = pyTypeName(t, value)
			pi.it.Shape = "[]"
			for k := range stat {
				s.statValue(pi, k, value, false)
			}
		}
	}

	// md5: the item's own, the special cases', or the CRC-32 of str(value).
	switch {
	case md5Set && len(md5Bytes) > 0:
		pi.md5 = s.addString(md5Bytes)
	case !md5Set && md5 >= 0 && (t.nodes[md5].kind == kTrue || t.nodes[md5].kind == kFalse || t.truthy(md5)):
		s.scratch = t.appendPyStr(s.scratch[:0], md5)
		pi.md5 = s.addString(s.scratch)
	default:
		var crc uint32
		if value >= 0 {
			s.scratch = t.appendPyStr(s.scratch[:0], value)
			crc = crc32.ChecksumIEEE(s.scratch)
		}
		pi.it.MD5 = s.crcs.hex(crc)
	}
	return pi
}

// pyTypeName is Python's str(type(v)) for the value JSON node i loads as
// (a missing value is None).
func pyTypeName(t *tree, i int32) string {
	if i < 0 {
		return "<class 'NoneType'>"
	}
	switch t.nodes[i].kind {
	case kNull:
		return "<class 'NoneType'>"
	case kTrue, kFalse:
		return "<class 'bool'>"
	case kInt:
		return "<class 'int'>"
	case kFloat, kNaN, kInf, kNegInf:
		return "<class 'float'>"
	case kString:
		return "<class 'str'>"
	case kArray:
		return "<class 'list'>"
	}
	return "<class 'dict'>"
}

// appendNPShape appends Python's str(np.shape(np.array(v))) for node i:
// "()" for a scalar or missing value, "(3,)" for a list of three, "(2, 2)"
// for nested equal lists. A ragged nesting (which numpy refuses) gives
// the outer length only.
func appendNPShape(dst []byte, t *tree, i int32) []byte {
	var dims []int
	for i >= 0 && t.nodes[i].kind == kArray {
		n := int(t.nodes[i].n)
		dims = append(dims, n)
		if n == 0 {
			break
		}
		// Descend only if every child is a list of the same length.
		first := t.nodes[i].first
		if t.nodes[first].kind != kArray {
			break
		}
		ok := true
		for c := first; c >= 0; c = t.nodes[c].next {
			if t.nodes[c].kind != kArray || t.nodes[c].n != t.nodes[first].n {
				ok = false
				break
			}
		}
		if !ok {
			break
		}
		i = first
	}
	dst = append(dst, '(')
	for k, d := range dims {
		if k > 0 {
			dst = append(dst, ", "...)
		}
		dst = strconv.AppendInt(dst, int64(d), 10)
	}
	if len(dims) == 1 {
		dst = append(dst, ',')
	}
	return append(dst, ')')
}

// finish orders the entry's rows as reorder_index does and materializes
// their strings with one allocation. In reuse mode the entry's name
// shares it (a caller keeping the name alone for long clones it);
// otherwise the name is a string of its own. The rows are completed in
// items; in reuse mode, rows already in order are handed out in place.
func (s *scanner) finish(name string, items []Item, spans []pspans, sb []byte) (string, []Item) {
	if len(items) == 0 {
		return strings.Clone(name), nil
	}
	var str string
	if s.reuse {
		var b strings.Builder
		b.Grow(len(name) + len(sb))
		b.WriteString(name)
		b.Write(sb)
		str = b.String()
		name, str = str[:len(name)], str[len(name):]
	} else {
		name, str = strings.Clone(name), string(sb)
	}
	// The rows go in passes (rowPass); mostly the items are in their
	// order already and one pass takes them all. Their strings are
	// filled in place, so that in reuse mode rows in order are handed
	// out as they are.
	var passes uint8
	inOrder, last := true, 0
	for k := range items {
		p := rowPass(items[k].State)
		passes |= 1 << p
		inOrder = inOrder && p >= last
		last = p
		if !s.names {
			completeItem(&items[k], &spans[k], name, str)
		}
	}
	if inOrder && s.reuse && !s.names {
		return name, items
	}
	if inOrder {
		passes = 1
	}
	var out []Item
	if s.reuse {
		out = s.out[:0]
	} else {
		out = make([]Item, 0, len(items))
	}
	out = slices.Grow(out, len(items))
	for pass := range 4 {
		if passes>>pass&1 == 0 {
			continue
		}
		for k := range items {
			pi := &items[k]
			if !inOrder && rowPass(pi.State) != pass {
				continue
			}
			if s.names {
				ps := &spans[k]
				it := Item{Name: ps.name.in(str), Entry: name, State: pi.State, DataName: pi.DataName, Line: pi.Line,
					Op: pi.Op, Peer: pi.Peer, P2P: pi.P2P}
				if ps.dataName.off >= 0 {
					it.DataName = ps.dataName.in(str)
				}
				out = append(out, it)
				continue
			}
			// One copy of the item (out has room).
			n := len(out)
			out = out[:n+1]
			out[n] = *pi
		}
	}
	if s.reuse {
		s.out = out
	}
	return name, out
}

// completeItem gives it its entry's name and the strings in str its
// spans ps hold.
func completeItem(it *Item, ps *pspans, name, str string) {
	it.Entry = name
	it.Name = ps.name.in(str)
	if ps.dataName.off >= 0 {
		it.DataName = ps.dataName.in(str)
	}
	if ps.md5.off >= 0 {
		it.MD5 = ps.md5.in(str)
	}
	st := &it.Stats
	if ps.stats[0].off >= 0 {
		st[0].Text = ps.stats[0].in(str)
	}
	if ps.stats[1].off >= 0 {
		st[1].Text = ps.stats[1].in(str)
	}
	if ps.stats[2].off >= 0 {
		st[2].Text = ps.stats[2].in(str)
	}
	if ps.stats[3].off >= 0 {
		st[3].Text = ps.stats[3].in(str)
	}
}

// rowPass is the place of the rows of an item in state st among its
// entry's: first the inputs (and debug), then parameters, output and
// parameters_grad.
func rowPass(st string) int {
	switch st {
	case StateParameters:
		return 1
	case StateOutput:
		return 2
	case StateParametersGrad:
		return 3
	}
	return 0
}

// formulaStart reports whether s matches msprobe's STRING_BLACKLIST:
// it starts with, or has after a ';', one of + - = % @ or the full-width
// ＋ － ＝ ％ ＠.
func formulaStart(s string) bool {
	isFormula := func(s string) bool {
		r := rune(s[0])
		if r >= utf8.RuneSelf {
			r, _ = utf8.DecodeRuneInString(s)
		}
		switch r {
		case '+', '-', '=', '%', '@', '＋', '－', '＝', '％', '＠':
			return true
		}
		return false
	}
	if len(s) > 0 && isFormula(s) {
		return true
	}
	for {
		k := strings.IndexByte(s, ';')
		if k < 0 {
			return false
		}
		if s = s[k+1:]; len(s) > 0 && isFormula(s) {
			return true
		}
	}
}

// formulaStartBytes is formulaStart of b's bytes.
func formulaStartBytes(b []byte) bool {
	return formulaStart(unsafe.String(unsafe.SliceData(b), len(b)))
}

// checkBody is msprobe's check_dump_json_str: in input (input_args, or
// input when input_args is empty), input_kwargs and output, every member
// reached through lists and nested objects is checked: "shape" must be a
// list, "requires_grad" a bool, and a string must not start with a formula
// character. Lists inside objects are not entered, as in msprobe.
func (s *scanner) checkBody(name string, body int32) error {
	t := s.t
	in := t.get(body, "input_args")
	if !t.truthy(in) {
		in = t.get(body, "input")
	}
	for _, a := range [...]int32{in, t.get(body, "input_kwargs"), t.get(body, "output")} {
		if !t.truthy(a) {
			continue
		}
		switch t.nodes[a].kind {
		case kObject:
			if err := s.checkValue(name, a, 0); err != nil {
				return err
			}
		case kArray:
			for c := t.nodes[a].first; c >= 0; c = t.nodes[c].next {
				if !t.truthy(c) {
					continue
				}
				if err := s.checkValue(name, c, 0); err != nil {
					return err
				}
			}
		case kString:
			// msprobe iterates its characters and checks nothing.
		default:
			return s.errAt(t.nodes[a].line, "entry %q: expected a list or object of inputs/outputs, found %s", name, kindName(t.nodes[a].kind))
		}
	}
	return nil
}

func (s *scanner) checkValue(name string, i int32, depth int) error {
	if depth > maxDepth {
		return nil // msprobe logs and stops checking
	}
	t := s.t
	switch t.nodes[i].kind {
	case kArray:
		for c := t.nodes[i].first; c >= 0; c = t.nodes[c].next {
			if err := s.checkValue(name, c, depth+1); err != nil {
				return err
			}
		}
	case kObject:
		for c := t.nodes[i].first; c >= 0; c = t.nodes[c].next {
			n := &t.nodes[c]
			switch {
			case n.kind == kObject:
				if err := s.checkValue(name, c, depth+1); err != nil {
					return err
				}
			case t.keyIs(c, "shape") && n.kind != kArray:
				return s.errAt(n.line, "entry %q: expected \"shape\" to be a list, found %s (msprobe refuses the dump)", name, kindName(n.kind))
			case t.keyIs(c, "requires_grad") && n.kind != kTrue && n.kind != kFalse:
				return s.errAt(n.line, "entry %q: expected \"requires_grad\" to be true or false, found %s (msprobe refuses the dump)", name, kindName(n.kind))
			case n.kind == kString && formulaStartBytes(t.bytes(n.text)):
				return s.errAt(n.line, "entry %q: expected %q to have no leading formula character (+ - = %% @; msprobe refuses it), found %q", name, t.str(n.key), t.str(n.text))
			}
		}
	}
	return nil
}

// md5Find is msprobe's md5_find for one entry body: some field that is a
// list has an element containing "md5", or some non-bool field contains
// "md5" (a key of an object, an element of a list, a substring of a
// string).
func (t *tree) md5Find(body int32) bool {
	if t.nodes[body].kind != kObject {
		return false
	}
	contains := func(i int32) bool {
		switch t.nodes[i].kind {
		case kObject:
			return t.get(i, "md5") >= 0
		case kArray:
			for c := t.nodes[i].first; c >= 0; c = t.nodes[c].next {
				if t.textIs(c, "md5") {
					return true
				}
			}
		case kString:
			return bytes.Contains(t.bytes(t.nodes[i].text), []byte("md5"))
		}
		return false
	}
	for f := t.nodes[body].first; f >= 0; f = t.nodes[f].next {
		n := &t.nodes[f]
		if n.kind == kArray {
			for c := n.first; c >= 0; c = t.nodes[c].next {
				if t.truthy(c) && contains(c) {
					return true
				}
			}
		}
		if n.kind == kTrue || n.kind == kFalse {
			continue
		}
		if t.truthy(f) && contains(f) {
			return true
		}
	}
	return false
}

// md5Anywhere is md5_find for a debug.json: an object with an "md5" key
// anywhere below node i.
func (t *tree) md5Anywhere(i int32, depth int) bool {
	if depth > maxDepth {
		return false
	}
	n := &t.nodes[i]
	if n.kind != kObject && n.kind != kArray {
		return false
	}
	if n.kind == kObject && t.get(i, "md5") >= 0 {
		return true
	}
	for c := n.first; c >= 0; c = t.nodes[c].next {
		if t.md5Anywhere(c, depth+1) {
			return true
		}
	}
	return false
}
