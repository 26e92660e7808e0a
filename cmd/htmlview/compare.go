package htmlview

import (
	"encoding/csv"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/xuri/excelize/v2"

	"github.com/layermap/layermap/mapping/compare"
	"github.com/layermap/layermap/printparse"
	"github.com/layermap/layermap/printparse/msprobe"
)

// MaxTableRows bounds the compare rows a page carries. Past it, only the
// rows of modules marked warning or error (and of the first divergence)
// are kept; the CSV has them all.
const MaxTableRows = 200_000

// CompareInput is one rank pair of a compare run.
type CompareInput struct {
	NPUDir, BenchDir string // rank folders (where dump.json is)
	Table            string // the compare_result CSV (or XLSX) compare wrote
	Summary          *compare.Summary
	// Mapping is the --mapping file (NPU-keyed), nil without one.
	Mapping *MappingFile
}

// FromCompare builds the view of one compare table: the module trees of
// the two dumps, the module pairs the table's rows make, each module
// coloured by the worst Result of its output rows (msprobe's graph colours
// a node by its outputs), the rows of each module and of the API calls
// inside it, and the first divergence.
func FromCompare(in CompareInput) (*View, error) {
	np, err := msprobe.Locate(in.NPUDir)
	if err != nil {
		return nil, err
	}
	bp, err := msprobe.Locate(in.BenchDir)
	if err != nil {
		return nil, err
	}
	nt, err := printparse.LoadDumpDir(np.Dir)
	if err != nil {
		return nil, err
	}
	bt, err := printparse.LoadDumpDir(bp.Dir)
	if err != nil {
		return nil, err
	}
	v := &View{
		Title:   fmt.Sprintf("layermap compare: %s", filepath.Base(in.Table)),
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
	hdr, rows, err := readTable(in.Table)
	if err != nil {
		return nil, err
	}
	col := map[string]int{}
	for i, h := range hdr {
		col[h] = i
	}
	ci, okN := col["NPU Name"]
	cb, okB := col["Bench Name"]
	cr, okR := col["Result"]
	if !okN || !okB || !okR {
		return nil, fmt.Errorf("%s: expected the columns NPU Name, Bench Name and Result, found %s", in.Table, strings.Join(hdr, ", "))
	}
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
	out := map[*printparse.Node]Result{}
	all := map[*printparse.Node]Result{}
	hasOut := map[*printparse.Node]bool{}
	for _, row := range rows {
		if len(row) <= max(ci, cb, cr) {
			continue
		}
		ne := ns.entryOf(row[ci])
		mod, isMod := ns.module(v.NPU, ne)
		if mod == nil {
			continue
		}
		res := ParseResult(row[cr])
		if isMod {
			if row[cb] != "N/A" {
				if bm, ok := bs.module(v.Bench, bs.entryOf(row[cb])); bm != nil && ok && partner[mod] == nil {
					partner[mod] = bm
					order = append(order, mod)
				}
			}
			if strings.HasPrefix(row[ci][len(ne):], ".output") {
				hasOut[mod] = true
				out[mod] = max(out[mod], res)
			}
			all[mod] = max(all[mod], res)
		} else if strings.HasPrefix(row[ci][len(ne):], ".output") {
			v.NPU.Inner[mod] = max(v.NPU.Inner[mod], res)
		}
		cells := make([]string, len(keep))
		for k, i := range keep {
			if i < len(row) {
				cells[k] = row[i]
			}
		}
		t.Rows[mod] = append(t.Rows[mod], Row{Cells: cells, Result: res, API: !isMod})
	}
	for n, r := range all {
		if hasOut[n] {
			r = out[n]
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
	limitTable(t, v)
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
		d := s.First
		if d == nil {
			d = s.FirstAPI
		}
		if d != nil {
			nm, _ := ns.module(v.NPU, d.NPUEntry)
			bm, _ := bs.module(v.Bench, d.BenchEntry)
			v.Summary.First = &Divergence{NPU: nm, Bench: bm, NPUEntry: d.NPUEntry, BenchEntry: d.BenchEntry, Row: d.Row, Messages: d.Messages}
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

// limitTable keeps the table within MaxTableRows.
func limitTable(t *Table, v *View) {
	total := 0
	for _, rs := range t.Rows {
		total += len(rs)
	}
	if total <= MaxTableRows {
		return
	}
	kept := 0
	for n, rs := range t.Rows {
		if v.NPU.Result[n] < Warning {
			delete(t.Rows, n)
			continue
		}
		kept += len(rs)
	}
	t.Note = fmt.Sprintf("%d of %d rows kept: those of modules marked warning or error (the table file has them all)", kept, total)
}

func readTable(path string) ([]string, [][]string, error) {
	if strings.HasSuffix(path, ".xlsx") {
		f, err := excelize.OpenFile(path)
		if err != nil {
			return nil, nil, err
		}
		defer f.Close()
		rows, err := f.GetRows(f.GetSheetName(0))
		if err != nil {
			return nil, nil, err
		}
		if len(rows) == 0 {
			return nil, nil, fmt.Errorf("%s: expected a header row, found an empty sheet", path)
		}
		return rows[0], rows[1:], nil
	}
	fh, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer fh.Close()
	r := csv.NewReader(fh)
	r.FieldsPerRecord = -1
	hdr, err := r.Read()
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	var rows [][]string
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", path, err)
		}
		rows = append(rows, rec)
	}
	return hdr, rows, nil
}
