package htmlview

import (
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/layermap/layermap/mapping/compare"
	"github.com/layermap/layermap/printparse"
	"github.com/layermap/layermap/printparse/msprobe"
)

// MaxTableRows bounds the compare rows a page carries. Past it, only the
// rows marked warning or error are kept (the table file has them all).
const MaxTableRows = 200_000

// CompareInput is one rank pair of a compare run.
type CompareInput struct {
	NPU, Bench msprobe.Paths
	Header     []string
	Rows       []TableRow
	Summary    *compare.Summary
	// Mapping is the --mapping file (NPU-keyed), nil without one.
	Mapping *MappingFile
	// Dropped counts the rows whose cells were not kept (MaxTableRows).
	Dropped int
}

// TableRow is one row of msprobe's comparison table.
type TableRow struct {
	NPU, Bench string // the NPU Name and Bench Name cells
	Result     Result
	Cells      []string // nil when not kept
}

// CompareSink collects a rank's comparison table as compare writes it and
// writes the view beside it (it is a compare.ViewSink).
type CompareSink struct {
	in CompareInput
}

// NewCompareSink returns the sink for one rank pair; m is the --mapping
// file or nil.
func NewCompareSink(npu, bench msprobe.Paths, m *MappingFile) *CompareSink {
	return &CompareSink{in: CompareInput{NPU: npu, Bench: bench, Mapping: m}}
}

// Header receives the table's header.
func (s *CompareSink) Header(cols []string) error {
	s.in.Header = append([]string(nil), cols...)
	return nil
}

// Row receives one row; past MaxTableRows only the cells of rows marked
// warning or error are kept.
func (s *CompareSink) Row(cells []compare.Cell, mark compare.RowMark) error {
	r := TableRow{Result: ParseResult(mark.Result)}
	if len(cells) > 1 {
		r.NPU, r.Bench = cells[0].Text, cells[1].Text
	}
	if len(s.in.Rows) < MaxTableRows || r.Result >= Warning {
		r.Cells = make([]string, len(cells))
		for i, c := range cells {
			r.Cells[i] = c.Text
		}
	} else {
		s.in.Dropped++
	}
	s.in.Rows = append(s.in.Rows, r)
	return nil
}

// Reset discards the rows (compare writes the table again).
func (s *CompareSink) Reset() error {
	s.in.Rows, s.in.Dropped = nil, 0
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

// View builds the view of the finished table.
func (s *CompareSink) View(rr *compare.RankReport) (*View, error) {
	in := s.in
	in.Summary = rr.Summary
	v, err := FromCompare(in)
	if err != nil {
		return nil, err
	}
	v.Title = "layermap compare: " + filepath.Base(rr.Target) + " vs " + filepath.Base(rr.Golden)
	if rr.Rank != "" {
		v.Title += " (" + rr.Rank + ")"
	}
	return v, nil
}

// FromCompare builds the view of one compare table: the module trees of
// the two dumps, the module pairs the table's rows make, each module
// coloured by the worst Result of its output rows (msprobe's graph colours
// a node by its outputs), the rows of each module and of the API calls
// inside it, and the first divergence.
func FromCompare(in CompareInput) (*View, error) {
	np, bp := in.NPU, in.Bench
	nt, err := printparse.LoadDumpDir(np.Dir)
	if err != nil {
		return nil, err
	}
	bt, err := printparse.LoadDumpDir(bp.Dir)
	if err != nil {
		return nil, err
	}
	v := &View{
		Title:   "layermap compare",
		Mode:    ModeCompare,
		NPU:     NewSide("NPU (-tp)", nt),
		Bench:   NewSide("bench (-gp)", bt),
		Mapping: in.Mapping,
	}
	ns, err := readEntries(np)
	if err != nil {
		return nil, err
	}
	bs, err := readEntries(bp)
	if err != nil {
		return nil, err
	}
	hdr := in.Header
	keep := make([]int, 0, len(hdr))
	for i, h := range hdr {
		if h != "NPU_Stack_Info" {
			keep = append(keep, i)
		}
	}
	t := &Table{Rows: map[*printparse.Node][]Row{}}
	for _, i := range keep {
		t.Header = append(t.Header, hdr[i])
	}
	partner := map[*printparse.Node]*printparse.Node{}
	var order []*printparse.Node
	outRes := map[*printparse.Node]Result{}
	all := map[*printparse.Node]Result{}
	hasOut := map[*printparse.Node]bool{}
	for _, row := range in.Rows {
		ne := ns.entryOf(row.NPU)
		mod, isMod := ns.module(v.NPU, ne)
		if mod == nil {
			continue
		}
		res := row.Result
		out := strings.HasPrefix(row.NPU[len(ne):], ".output")
		if isMod {
			if row.Bench != "N/A" {
				if bm, ok := bs.module(v.Bench, bs.entryOf(row.Bench)); bm != nil && ok && partner[mod] == nil {
					partner[mod] = bm
					order = append(order, mod)
				}
			}
			if out {
				hasOut[mod] = true
				outRes[mod] = max(outRes[mod], res)
			}
			all[mod] = max(all[mod], res)
		} else if out {
			v.NPU.Inner[mod] = max(v.NPU.Inner[mod], res)
		}
		if row.Cells == nil {
			continue
		}
		cells := make([]string, len(keep))
		for k, i := range keep {
			if i < len(row.Cells) {
				cells[k] = row.Cells[i]
			}
		}
		t.Rows[mod] = append(t.Rows[mod], Row{Cells: cells, Result: res, API: !isMod})
	}
	for n, r := range all {
		if hasOut[n] {
			r = outRes[n]
		}
		v.NPU.Result[n] = r
	}
	for _, a := range order {
		b := partner[a]
		v.Pairs = append(v.Pairs, Pair{NPU: nodes(a), Bench: nodes(b), Kind: OneToOne, Proven: true})
		if r, ok := v.NPU.Result[a]; ok {
			v.Bench.Result[b] = r
		}
		if r, ok := v.NPU.Inner[a]; ok {
			v.Bench.Inner[b] = r
		}
	}
	for n := range all {
		if partner[n] == nil {
			v.NPU.Why[n] = "no bench row matched its rows (N/A in the table)"
		}
	}
	v.Pairs = append(v.Pairs, Pair{NPU: nodes(nt.Root), Bench: nodes(bt.Root), Kind: Root, Proven: true})
	if in.Dropped > 0 {
		t.Note = fmt.Sprintf("%d of %d rows shown: past %d rows only those marked warning or error are kept (the table file has them all)",
			len(in.Rows)-in.Dropped, len(in.Rows), MaxTableRows)
	}
	v.Table = t
	if s := in.Summary; s != nil {
		v.Summary.Facts = [][2]string{
			{"mode", s.Mode},
			{"rows", fmt.Sprintf("%d: %d pass, %d warning, %d error", s.Rows, s.Pass, s.Warning, s.Error)},
			{"unmatched rows", fmt.Sprintf("%d NPU rows without a bench row, %d bench rows not compared", s.NPUUnmatched, s.BenchUnmatched)},
		}
		if len(s.MatchedBy) > 0 {
			var by []string
			for _, k := range slices.Sorted(maps.Keys(s.MatchedBy)) {
				by = append(by, fmt.Sprintf("%s %d", k, s.MatchedBy[k]))
			}
			v.Summary.Facts = append(v.Summary.Facts, [2]string{"matched by", strings.Join(by, ", ")})
		}
		v.Summary.Facts = append(v.Summary.Facts, [2]string{"compared rows",
			fmt.Sprintf("%d: %d pass, %d warning, %d error", s.Compared, s.ComparedResults.Pass, s.ComparedResults.Warning, s.ComparedResults.Error)})
		for _, k := range slices.Sorted(maps.Keys(s.Fused)) {
			c := s.Fused[k]
			v.Summary.Facts = append(v.Summary.Facts, [2]string{"N:1 " + k,
				fmt.Sprintf("%d rows combined, %d shared inputs, %d inputs only, %d parts", c.Combined, c.Shared, c.InputsOnly, c.Parts)})
		}
		if d := s.First; d != nil {
			// the classified first divergence: its class and why first
			nm, _ := ns.module(v.NPU, d.NPUEntry)
			bm, _ := bs.module(v.Bench, d.BenchEntry)
			msgs := append([]string{fmt.Sprintf("%s, %s: %s", d.Direction, strings.ReplaceAll(d.Class, "_", " "), d.Why)}, d.Messages...)
			v.Summary.First = &Divergence{NPU: nm, Bench: bm, NPUEntry: d.NPUEntry, BenchEntry: d.BenchEntry, Row: d.Row, Messages: msgs}
		}
	}
	v.Summary.Notes = append(v.Summary.Notes, "Module colours: the worst Result of the module's output rows (all its rows when it has no output row); the bench module shows its NPU partner's. A dot marks a warning or error inside: in a submodule, or in the output of an API call the module makes.")
	return v, nil
}

// entries is one side's dump entry names and construct.json parents.
type entries struct {
	names  map[string]bool
	parent map[string]string
}

func readEntries(p msprobe.Paths) (*entries, error) {
	names, err := msprobe.EntryNames(p.DumpJSON)
	if err != nil {
		return nil, err
	}
	e := &entries{names: make(map[string]bool, len(names))}
	for _, n := range names {
		e.names[n] = true
	}
	if p.ConstructJSON != "" {
		if e.parent, err = msprobe.ReadConstruct(p.ConstructJSON); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// entryOf returns the dump entry a table row belongs to: the longest
// dotted prefix of the row name that names an entry.
func (e *entries) entryOf(row string) string {
	for k := len(row); k > 0; k = strings.LastIndexByte(row[:k], '.') {
		if e.names[row[:k]] {
			return row[:k]
		}
	}
	return ""
}

// module returns the module node an entry belongs to: the entry's own
// module (isModule) or, for an API call, the module construct.json says
// called it.
func (e *entries) module(s *Side, entry string) (n *printparse.Node, isModule bool) {
	if entry == "" {
		return nil, false
	}
	if path, _, _, ok := msprobe.ModuleEntry(entry); ok {
		return s.Lookup(path), true
	}
	for p, seen := e.parent[entry], 0; p != "" && seen < 64; p, seen = e.parent[p], seen+1 {
		if path, _, _, ok := msprobe.ModuleEntry(p); ok {
			return s.Lookup(path), false
		}
	}
	return s.Tree.Root, false
}
