package htmlview

import (
	"bytes"
	"cmp"
	"container/heap"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"unsafe"

	"github.com/layermap/layermap/mapping/compare"
	"github.com/layermap/layermap/mapping/resolve"
	"github.com/layermap/layermap/printparse"
	"github.com/layermap/layermap/printparse/msprobe"
	"github.com/layermap/layermap/printparse/source"
)

// MaxTableBytes is the default Budget of a CompareSink: the bytes of
// table cells a compare page carries, whatever the table's length (the
// page then opens in a couple of seconds; the table file has every row).
const MaxTableBytes = 4 << 20

// CompareSink collects what a rank's comparison table says about each
// module as compare writes it, and writes the page beside it (it is a
// compare.NoBenchView, a compare.EntriesView, and a compare.LineSink
// so that compare keeps its CSV line path).
//
// Its memory does not grow with the table's length: the two module trees,
// a few counters per NPU module, the module each NPU API call runs in
// (from construct.json, as many entries as it has), and the rows kept for
// the page, at most Budget bytes of cells. Rows are kept by rank: every
// warning and error row before any other, and within each, a module's
// first rows before any module's later ones (so every module shows its
// first rows); the page says how many rows it left out.
type CompareSink struct {
	npu, bench msprobe.Paths
	mf         *MappingFile
	// Budget bounds the bytes of cells the page carries (MaxTableBytes
	// unless set before the first row).
	Budget int

	trees   *compareTrees
	entries [2]*resolve.Entries // the dump.json files' entries it skimmed, until compare takes them
	err     error               // reading the trees

	header    []string
	keep      []int // the columns the page shows (not the stack)
	need      int   // the fields of a CSV line read: through the last kept one
	benchName int   // the Bench Name column (-1 when none)
	npuStats  []int // the NPU statistics columns, which the no-bench downcast may change
	csv       bool  // the rows came as CSV lines (the table is a CSV file)

	mods  map[*printparse.Node]*modState
	order []*printparse.Node // NPU modules in the order they were paired
	kept  rowHeap
	bytes int // cost of the kept rows
	seq   int
	rows  int // rows of the table under a module (those not kept are left off the page)

	last struct { // the entry of the last row and its module (rowEntry), and the state of the last module
		entry   string
		mod     *printparse.Node
		isMod   bool
		stateOf *printparse.Node
		state   *modState
	}

	fields [][]byte // scratch: the fields of a CSV line
	unq    []byte   // scratch: unquoted fields
}

// compareTrees are the two module trees of a rank pair.
type compareTrees struct {
	npu, bench *Side
	// api maps an NPU API entry, by the hash of its name, to the module
	// construct.json says calls it (nil when that module is not in the
	// tree); entries missing run at the top level. 64-bit hashes, not
	// names: a dump of many steps has millions of API calls (16 bytes
	// each here; a collision among a million has odds of 1 in 10^7).
	api  map[uint64]*printparse.Node
	seed maphash.Seed
}

// modState is what the table said so far about one NPU module.
type modState struct {
	partner       *printparse.Node
	own           bool // the module has rows of its own
	hasOut        bool
	hasInner      bool   // an API call inside it has output rows
	out, all      Result // worst Result of its output rows, of all its rows
	inner         Result // worst Result of the outputs of the API calls inside it
	rows          int    // its rows in the table, its own and its API calls'
	kept          int    // of those, rows the page carries
	bad, passRank int32  // rows seen so far of each tier
}

// keptRow is a row the page carries, with its rank.
type keptRow struct {
	mod  *printparse.Node
	tier uint8 // 0 warning or error, 1 the rest
	rank int32 // rows of its module and tier before it
	seq  int
	cost int
	row  Row
}

// worse orders the kept rows: the first to leave out is the worst.
func worse(a, b *keptRow) bool {
	if a.tier != b.tier {
		return a.tier > b.tier
	}
	if a.rank != b.rank {
		return a.rank > b.rank
	}
	return a.seq > b.seq
}

// rowHeap is a max-heap of kept rows by worse.
type rowHeap []*keptRow

func (h rowHeap) Len() int           { return len(h) }
func (h rowHeap) Less(i, j int) bool { return worse(h[i], h[j]) }
func (h rowHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *rowHeap) Push(x any)        { *h = append(*h, x.(*keptRow)) }
func (h *rowHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return x
}

// NewCompareSink returns the sink for one rank pair; m is the --mapping
// file or nil. It reads the two module trees before compare starts (not
// beside it: what reading them holds for a moment then does not add to
// compare's own memory), from the entries compare read where it did, and
// skims the dump.json files for compare's indexes where it did not; an
// error is returned by the first call after.
func NewCompareSink(d compare.ViewDumps, m *MappingFile) *CompareSink {
	s := &CompareSink{npu: d.NPU, bench: d.Bench, mf: m, Budget: MaxTableBytes, mods: map[*printparse.Node]*modState{}}
	s.trees, s.entries, s.err = loadTrees(d)
	return s
}

// TakeEntries returns each dump.json's entries as the sink skimmed them
// (compare.EntriesView), nil where it did not, and lets them go.
func (s *CompareSink) TakeEntries() (npu, bench *resolve.Entries) {
	npu, bench = s.entries[0], s.entries[1]
	s.entries = [2]*resolve.Entries{}
	return npu, bench
}

func loadTrees(d compare.ViewDumps) (_ *compareTrees, skimmed [2]*resolve.Entries, _ error) {
	// both at once: compare has not started yet
	var (
		bt   *printparse.Tree
		berr error
		done = make(chan struct{})
	)
	go func() {
		defer close(done)
		bt, _, _, skimmed[1], berr = loadTree(d.Bench, d.BenchEntries)
	}()
	nt, names, parents, npuSkimmed, err := loadTree(d.NPU, d.NPUEntries)
	<-done
	skimmed[0] = npuSkimmed
	if err = cmp.Or(err, berr); err != nil {
		return nil, [2]*resolve.Entries{}, err
	}
	t := &compareTrees{npu: NewSide("NPU (-tp)", nt), bench: NewSide("bench (-gp)", bt), api: map[uint64]*printparse.Node{}, seed: maphash.MakeSeed()}
	t.npu.Lookup("")
	t.bench.Lookup("")
	if parents == nil {
		return t, skimmed, nil
	}
	for i, e := range names.All() {
		if _, _, _, ok := msprobe.ModuleEntry(e); ok {
			continue
		}
		n := t.npu.Tree.Root
		p := parents.ParentOf(i, e)
		for seen := 0; p != "" && seen < 64; p, seen = parents.Parent(p), seen+1 {
			if path, _, _, ok := msprobe.ModuleEntry(p); ok {
				n = t.npu.Lookup(path)
				break
			}
		}
		if n != t.npu.Tree.Root {
			t.api[maphash.String(t.seed, e)] = n
		}
	}
	return t, skimmed, nil
}

// loadTree reads a rank folder's module tree as printparse.LoadDumpDir
// does, and returns its dump.json's entry names and its construct.json
// (nil when it has none). The names are known's when compare read them
// already; else the file is skimmed as resolve.SkimEntries does, for
// compare to take (skimmed; nil where that skim gives none).
func loadTree(p msprobe.Paths, known *resolve.Entries) (_ *printparse.Tree, _ *msprobe.Names, _ *msprobe.ParentIndex, skimmed *resolve.Entries, _ error) {
	dir, err := msprobe.FindRankDir(p.Dir)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	dumpFile := filepath.Join(dir, "dump.json")
	var names *msprobe.Names
	own := filepath.Clean(p.DumpJSON) == filepath.Clean(dumpFile) // the file compare reads
	if own && known != nil {
		names = known.Names
	} else {
		// compare reads the entries, and reports their syntax errors
		var es *resolve.Entries
		if names, es, err = resolve.SkimEntries(dumpFile); own {
			skimmed = es
		}
	}
	if err != nil {
		var de *source.Error
		if errors.As(err, &de) {
			return nil, nil, nil, nil, err
		}
		return nil, nil, nil, nil, fmt.Errorf("reading module names: %w", err)
	}
	parents, cerr := msprobe.ReadParentIndexOf(filepath.Join(dir, "construct.json"), names)
	t, err := printparse.DumpTreeOf(p.Dir, dir, names, parents, cerr)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	if cerr != nil {
		parents = nil
	}
	return t, names, parents, skimmed, nil
}

// Header receives the table's header.
func (s *CompareSink) Header(cols []string) error {
	if s.err != nil {
		return s.err
	}
	s.header = append(s.header[:0], cols...)
	s.keep = s.keep[:0]
	for i, h := range cols {
		if h != "NPU_Stack_Info" {
			s.keep = append(s.keep, i)
		}
	}
	s.need = 2 // the names
	if len(s.keep) > 0 {
		s.need = max(s.need, s.keep[len(s.keep)-1]+1)
	}
	s.benchName = slices.Index(cols, "Bench Name")
	s.npuStats = s.npuStats[:0]
	for _, name := range compare.NoBenchColumns() {
		if i := slices.Index(cols, name); i >= 0 {
			s.npuStats = append(s.npuStats, i)
		}
	}
	return nil
}

// Row receives one row as cells (an XLSX table).
func (s *CompareSink) Row(cells []compare.Cell, mark compare.RowMark) error {
	s.fields = s.fields[:0]
	for _, c := range cells {
		s.fields = append(s.fields, unsafe.Slice(unsafe.StringData(c.Text), len(c.Text))) // read only
	}
	return s.addFields(s.fields, ParseResult(mark.Result))
}

// Line receives one row as its CSV line (a CSV table).
func (s *CompareSink) Line(line []byte, mark compare.RowMark) error {
	s.csv = true
	s.fields, s.unq = splitCSV(line, s.fields[:0], s.unq[:0], s.need)
	return s.addFields(s.fields, ParseResult(mark.Result))
}

// addFields adds a row of fields, which are read during the call only:
// names from fields 0 and 1, the columns kept from s.keep (copied, in one
// allocation, when the row is kept).
func (s *CompareSink) addFields(f [][]byte, res Result) error {
	n := len(f)
	if n < 2 {
		return nil
	}
	cost := 0
	for _, i := range s.keep {
		if i < n {
			cost += len(f[i])
		}
	}
	if s.benchName >= 0 && s.benchName < n && string(f[s.benchName]) == "N/A" {
		// counted as the no-bench downcast prints them, whether or not
		// it applies: the page keeps the same rows either way
		var buf [32]byte
		for _, i := range s.npuStats {
			if i < n {
				if t, ok := compare.NoBenchCell(buf[:0], string(f[i])); ok {
					cost += len(t) - len(f[i])
				}
			}
		}
	}
	view := func(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
	return s.add(view(f[0]), func() string { return view(f[1]) }, res, cost, func() []string {
		size := 0
		for _, i := range s.keep {
			if i < n {
				size += len(f[i])
			}
		}
		buf := make([]byte, 0, size)
		for _, i := range s.keep {
			if i < n {
				buf = append(buf, f[i]...)
			}
		}
		all := view(buf) // never written again
		out := make([]string, len(s.keep))
		at := 0
		for k, i := range s.keep {
			if i < n {
				out[k] = all[at : at+len(f[i])]
				at += len(f[i])
			}
		}
		return out
	})
}

// rowCost is the page bytes a row costs besides its cells: the JSON
// around each cell, the node and flags.
func (s *CompareSink) rowCost() int { return 16 + 3*len(s.keep) }

// add takes one row: npu is its NPU Name cell, bench returns its Bench
// Name cell (both valid during the call only), cost is the length of the
// cells the page would show and cells returns them.
func (s *CompareSink) add(npu string, bench func() string, res Result, cost int, cells func() []string) error {
	if s.err != nil {
		return s.err
	}
	ne, mod, isMod := s.rowEntry(npu)
	if mod == nil {
		return nil
	}
	m := s.last.state
	if m == nil || s.last.stateOf != mod {
		if m = s.mods[mod]; m == nil {
			m = &modState{}
			s.mods[mod] = m
		}
		s.last.state, s.last.stateOf = m, mod
	}
	out := strings.HasPrefix(npu[len(ne):], ".output")
	if isMod {
		if m.partner == nil {
			if b := bench(); b != "N/A" {
				if path, _, _, ok := msprobe.ModuleEntry(entryOf(b)); ok {
					if bm := s.trees.bench.Lookup(path); bm != nil {
						m.partner = bm
						s.order = append(s.order, mod)
					}
				}
			}
		}
		if out {
			m.hasOut = true
			m.out = max(m.out, res)
		}
		m.own = true
		m.all = max(m.all, res)
	} else if out {
		m.hasInner = true
		m.inner = max(m.inner, res)
	}
	m.rows++
	s.rows++
	k := &keptRow{mod: mod, tier: 1, rank: m.passRank, seq: s.seq, cost: cost + s.rowCost()}
	s.seq++
	if res >= Warning {
		k.tier, k.rank = 0, m.bad
		m.bad++
	} else {
		m.passRank++
	}
	for s.bytes+k.cost > s.Budget && len(s.kept) > 0 && worse(s.kept[0], k) {
		w := heap.Pop(&s.kept).(*keptRow)
		s.bytes -= w.cost
		s.mods[w.mod].kept--
	}
	if s.bytes+k.cost > s.Budget {
		return nil
	}
	k.row = Row{Cells: cells(), Result: res, API: !isMod}
	heap.Push(&s.kept, k)
	s.bytes += k.cost
	m.kept++
	return nil
}

// PatchNoBench takes msprobe's no-bench downcast into the rows kept
// (compare.NoBenchView): the cells of the named columns of the rows
// without bench data, which were counted as it prints them.
func (s *CompareSink) PatchNoBench(cols []string) bool {
	at := func(col int) int { return slices.Index(s.keep, col) }
	bench := at(s.benchName)
	var stats []int
	for _, name := range cols {
		if k := at(slices.Index(s.header, name)); k >= 0 {
			stats = append(stats, k)
		}
	}
	if bench < 0 || len(stats) == 0 {
		return bench >= 0
	}
	for _, k := range s.kept {
		c := k.row.Cells
		if bench >= len(c) || c[bench] != "N/A" {
			continue
		}
		for _, i := range stats {
			if i >= len(c) {
				continue
			}
			t, ok := compare.NoBenchCell(nil, c[i])
			if !ok {
				return false
			}
			if string(t) != c[i] {
				c[i] = string(t)
			}
		}
	}
	return true
}

// Reset discards the rows (compare writes the table again).
func (s *CompareSink) Reset() error {
	s.last.entry, s.last.mod, s.last.stateOf, s.last.state = "", nil, nil, nil
	clear(s.mods)
	s.order, s.kept = nil, nil
	s.bytes, s.seq, s.rows = 0, 0, 0
	return nil
}

// Ext is the view's file extension.
func (s *CompareSink) Ext() string { return ".html" }

// WriteView writes the page for the finished table.
func (s *CompareSink) WriteView(w io.Writer, rr *compare.RankReport) error {
	v, err := s.View(rr)
	if err != nil {
		return err
	}
	return Write(w, v)
}

// View builds the view of the finished table: the module trees of the two
// dumps, the module pairs the table's rows make, each module coloured by
// the worst Result of its output rows (msprobe's graph colours a node by
// its outputs), the rows kept of each module and of the API calls inside
// it, and the first divergence.
func (s *CompareSink) View(rr *compare.RankReport) (*View, error) {
	if s.err != nil {
		return nil, s.err
	}
	tr := s.trees
	v := &View{
		Title:   "layermap compare: " + filepath.Base(rr.Target) + " vs " + filepath.Base(rr.Golden),
		Mode:    ModeCompare,
		NPU:     tr.npu.fresh(),
		Bench:   tr.bench.fresh(),
		Mapping: s.mf,
	}
	if rr.Rank != "" {
		v.Title += " (" + rr.Rank + ")"
	}
	for n, m := range s.mods {
		if m.own {
			if m.hasOut {
				v.NPU.Result[n] = m.out
			} else {
				v.NPU.Result[n] = m.all
			}
			if m.partner == nil {
				v.NPU.Why[n] = "no bench row matched its rows (N/A in the table)"
			}
		}
		if m.hasInner {
			v.NPU.Inner[n] = m.inner
		}
	}
	for _, a := range s.order {
		m := s.mods[a]
		b := m.partner
		v.Pairs = append(v.Pairs, Pair{NPU: nodes(a), Bench: nodes(b), Kind: OneToOne, Proven: true})
		if r, ok := v.NPU.Result[a]; ok {
			v.Bench.Result[b] = r
		}
		if r, ok := v.NPU.Inner[a]; ok {
			v.Bench.Inner[b] = r
		}
	}
	v.Pairs = append(v.Pairs, Pair{NPU: nodes(v.NPU.Tree.Root), Bench: nodes(v.Bench.Tree.Root), Kind: Root, Proven: true})
	v.Table = s.table(v.NPU)
	if err := s.summary(v, rr.Summary); err != nil {
		return nil, err
	}
	return v, nil
}

// fresh returns a Side of the same tree with no results (sharing the
// path index).
func (s *Side) fresh() *Side {
	f := NewSide(s.Label, s.Tree)
	f.byPath = s.byPath
	return f
}

// table returns the rows kept, each module's in table order.
func (s *CompareSink) table(npu *Side) *Table {
	t := &Table{Rows: map[*printparse.Node][]Row{}, File: "the comparison table beside this page"}
	if s.csv {
		t.File = "the comparison table (.csv) beside this page"
	}
	for _, i := range s.keep {
		if i < len(s.header) {
			t.Header = append(t.Header, s.header[i])
		}
	}
	kept := slices.Clone(s.kept)
	slices.SortFunc(kept, func(a, b *keptRow) int { return a.seq - b.seq })
	for _, k := range kept {
		t.Rows[k.mod] = append(t.Rows[k.mod], k.row)
	}
	if len(s.kept) < s.rows {
		t.Total = map[*printparse.Node]int{}
		for n, m := range s.mods {
			if m.kept < m.rows {
				t.Total[n] = m.rows
			}
		}
		size := fmt.Sprintf("%d kB", s.Budget>>10)
		if s.Budget >= 1<<20 {
			size = fmt.Sprintf("%.3g MB", float64(s.Budget)/(1<<20))
		}
		t.Note = fmt.Sprintf("%d of %d table rows are on this page (at most %s of cells: every warning and error row first, then each module's first rows); %s has them all.",
			len(s.kept), s.rows, size, t.File)
	}
	return t
}

func (s *CompareSink) summary(v *View, sum *compare.Summary) error {
	if sum != nil {
		v.Summary.Facts = [][2]string{
			{"mode", sum.Mode},
			{"rows", fmt.Sprintf("%d: %d pass, %d warning, %d error", sum.Rows, sum.Pass, sum.Warning, sum.Error)},
			{"unmatched rows", fmt.Sprintf("%d NPU rows without a bench row, %d bench rows not compared", sum.NPUUnmatched, sum.BenchUnmatched)},
		}
		if len(sum.MatchedBy) > 0 {
			var by []string
			for _, k := range slices.Sorted(maps.Keys(sum.MatchedBy)) {
				by = append(by, fmt.Sprintf("%s %d", k, sum.MatchedBy[k]))
			}
			v.Summary.Facts = append(v.Summary.Facts, [2]string{"matched by", strings.Join(by, ", ")})
		}
		v.Summary.Facts = append(v.Summary.Facts, [2]string{"compared rows",
			fmt.Sprintf("%d: %d pass, %d warning, %d error", sum.Compared, sum.ComparedResults.Pass, sum.ComparedResults.Warning, sum.ComparedResults.Error)})
		for _, k := range slices.Sorted(maps.Keys(sum.Fused)) {
			c := sum.Fused[k]
			v.Summary.Facts = append(v.Summary.Facts, [2]string{"N:1 " + k,
				fmt.Sprintf("%d rows combined, %d shared inputs, %d inputs only, %d parts", c.Combined, c.Shared, c.InputsOnly, c.Parts)})
		}
		if d := sum.First; d != nil {
			// the classified first divergence: its class and why first
			nm, _ := s.module(d.NPUEntry)
			bm, err := s.benchModule(d.BenchEntry)
			if err != nil {
				return err
			}
			msgs := append([]string{fmt.Sprintf("%s, %s: %s", d.Direction, strings.ReplaceAll(d.Class, "_", " "), d.Why)}, d.Messages...)
			v.Summary.First = &Divergence{NPU: nm, Bench: bm, NPUEntry: d.NPUEntry, BenchEntry: d.BenchEntry, Row: d.Row, Messages: msgs}
		}
	}
	v.Summary.Notes = append(v.Summary.Notes, "Module colours: the worst Result of the module's output rows (all its rows when it has no output row); the bench module shows its NPU partner's. A dot marks a warning or error inside: in a submodule, or in the output of an API call the module makes.")
	return nil
}

// module returns the NPU module an entry belongs to: the entry's own
// module (isModule) or, for an API call, the module construct.json says
// called it (the root when it names none).
func (s *CompareSink) module(entry string) (n *printparse.Node, isModule bool) {
	if entry == "" {
		return nil, false
	}
	if path, _, _, ok := msprobe.ModuleEntry(entry); ok {
		return s.trees.npu.Lookup(path), true
	}
	if n, ok := s.trees.api[maphash.String(s.trees.seed, entry)]; ok {
		return n, false
	}
	return s.trees.npu.Tree.Root, false
}

// benchModule is module for the bench side's entry of the first
// divergence; an API call's module is read from construct.json.
func (s *CompareSink) benchModule(entry string) (*printparse.Node, error) {
	side := s.trees.bench
	if entry == "" {
		return nil, nil
	}
	if path, _, _, ok := msprobe.ModuleEntry(entry); ok {
		return side.Lookup(path), nil
	}
	if s.bench.ConstructJSON == "" {
		return side.Tree.Root, nil
	}
	for e, seen := entry, 0; seen < 64; seen++ {
		ps, err := msprobe.ReadParents(s.bench.ConstructJSON, map[string]bool{e: true})
		if err != nil {
			return side.Tree.Root, nil // the tree read it already; a view needs no more
		}
		p := ps[e]
		if p == "" {
			break
		}
		if path, _, _, ok := msprobe.ModuleEntry(p); ok {
			return side.Lookup(path), nil
		}
		e = p
	}
	return side.Tree.Root, nil
}

// rowEntry is entryOf(npu) and module of it; the rows of an entry come
// together, so the last row's answer is kept for the next when sameEntry
// says it holds.
func (s *CompareSink) rowEntry(npu string) (entry string, mod *printparse.Node, isMod bool) {
	if e := s.last.entry; e != "" && sameEntry(e, npu) {
		return e, s.last.mod, s.last.isMod
	}
	e := entryOf(npu)
	mod, isMod = s.module(e)
	s.last.entry, s.last.mod, s.last.isMod = strings.Clone(e), mod, isMod
	return s.last.entry, mod, isMod
}

// sameEntry reports whether entryOf(row) is entry, itself an entryOf,
// without entryOf's walk: row is entry and a row suffix (NormalRow) and
// no longer prefix of row names an entry as entryOf asks. SplitName reads
// a direction in the last two dot-parts of a name; with none in the
// suffix, only the prefix one part longer than entry (whose second-last
// part is entry's last) can be such a name, and it is tried as entryOf
// tries it.
func sameEntry(entry, row string) bool {
	if len(row) <= len(entry) || row[len(entry)] != '.' || !strings.HasPrefix(row, entry) {
		return false
	}
	suffix := row[len(entry)+1:]
	if strings.Contains(suffix, "ward") || strings.Contains(suffix, msprobe.StateParametersGrad) {
		return false // forward, backward
	}
	next := row
	if k := strings.IndexByte(suffix, '.'); k >= 0 {
		next = row[:len(entry)+1+k]
	}
	if op, _, _ := msprobe.SplitName(next); op != "" && msprobe.NormalRow(next, row) {
		return false
	}
	return msprobe.NormalRow(entry, row)
}

// entryOf returns the dump entry a table row belongs to, read from the
// row's name: its longest dotted prefix that is an entry name (a
// direction in its last two parts) followed by a row suffix
// (msprobe.NormalRow), else its longest prefix that is an entry name.
func entryOf(row string) string {
	longest := ""
	for k := len(row); k > 0; k = strings.LastIndexByte(row[:k], '.') {
		e := row[:k]
		if op, _, _ := msprobe.SplitName(e); op == "" {
			continue
		}
		if msprobe.NormalRow(e, row) {
			return e
		}
		if longest == "" {
			longest = e
		}
	}
	return longest
}

// splitCSV splits one CSV line as compare writes it (RFC 4180: a field
// is quoted when it holds a comma, a quote or a line break, its quotes
// doubled) into its first n fields, appended to dst (the rest of the
// line is not read); quoted fields are unquoted into buf. The fields
// alias line and buf.
func splitCSV(line []byte, dst [][]byte, buf []byte, n int) ([][]byte, []byte) {
	line = trimEOL(line)
	// unquoted fields alias buf: size it so that it does not move
	if cap(buf) < len(line) {
		buf = make([]byte, 0, len(line))
	}
	for i := 0; len(dst) < n; {
		if i < len(line) && line[i] == '"' {
			start := len(buf)
			i++
			for i < len(line) {
				q := bytes.IndexByte(line[i:], '"')
				if q < 0 {
					buf = append(buf, line[i:]...)
					i = len(line)
					break
				}
				buf = append(buf, line[i:i+q]...)
				i += q
				if i+1 < len(line) && line[i+1] == '"' {
					buf = append(buf, '"')
					i += 2
					continue
				}
				i++
				break
			}
			dst = append(dst, buf[start:len(buf):len(buf)])
			if k := bytes.IndexByte(line[i:], ','); k >= 0 {
				i += k
			} else {
				i = len(line)
			}
		} else {
			j := len(line)
			if k := bytes.IndexByte(line[i:], ','); k >= 0 {
				j = i + k
			}
			dst = append(dst, line[i:j:j])
			i = j
		}
		if i >= len(line) {
			return dst, buf
		}
		i++ // the comma
	}
	return dst, buf
}

func trimEOL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}
