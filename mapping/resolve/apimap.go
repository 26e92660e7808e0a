package resolve

import (
	"cmp"
	"fmt"
	"sync"

	"github.com/layermap/layermap/mapping"
	"github.com/layermap/layermap/printparse"
	"github.com/layermap/layermap/printparse/msprobe"
	"github.com/layermap/layermap/printparse/offheap"
)

// NA is msprobe's literal for an NPU name without a bench partner.
const NA = "N/A"

// NamePair is one line of an api or data mapping: an NPU name and the bench
// name msprobe pairs with it, or NA.
type NamePair struct {
	NPU, Bench string
}

// APIMapping is msprobe's generate_api_mapping_by_layer_mapping on two
// prepared tries: every NPU item in dump order with its bench partner's
// name or NA. A nil mapping behaves like bare -lm (no rules).
func APIMapping(m *mapping.Mapping, npu, bench *Trie) []NamePair {
	return APIMappingWith(m, npu, bench, nil)
}

// APIMappingWith is APIMapping; unpaired, when set, also sees every NPU
// item msprobe pairs with nothing, with its position among the NPU items
// (dump order) and the rules that fired for it (a slice shared by the
// items of one scope: not to be modified). The item is valid during the
// call only: it and its name are used again.
func APIMappingWith(m *mapping.Mapping, npu, bench *Trie, unpaired func(i int, it *Item, fired []*mapping.Rule)) []NamePair {
	at, free := apiPositions(m, npu, bench, unpaired)
	defer free()
	return namePairs(npu, bench, at)
}

// apiPositions is APIMappingWith by position: for each NPU item in order,
// its bench partner's position in bench, or -1; outside the heap until
// free is called (offheap.Make).
func apiPositions(m *mapping.Mapping, npu, bench *Trie, unpaired func(i int, it *Item, fired []*mapping.Rule)) (_ []int32, free func()) {
	r := New(m)
	out, free := offheap.Make[int32](npu.Len())
	var it Item
	var buf []byte
	// Items of one node (the calls of an API in one module) convert
	// alike, to the same bench node: once each.
	type conversion struct {
		fired []*mapping.Rule
		node  *TrieNode // the bench node at the converted path, nil for none
	}
	converted := map[*TrieNode]conversion{}
	for i := range out {
		node, state, ord := npu.at(i)
		c, ok := converted[node]
		if !ok {
			var path []string
			path, c.fired = r.ConvertScope(npu, npu.Item(i).Scope())
			c.node = bench.Lookup(path)
			converted[node] = c
		}
		b := c.node.posOf(state, ord)
		if b < 0 && unpaired != nil {
			buf = npu.itemIn(&it, i, buf)
			unpaired(i, &it, c.fired)
		}
		out[i] = int32(b)
	}
	return out, free
}

// namePairs spells out an api mapping by position (apiPositions).
func namePairs(npu, bench *Trie, at []int32) []NamePair {
	out := make([]NamePair, len(at))
	for i, b := range at {
		out[i].NPU = npu.nameAt(i)
		out[i].Bench = NA
		if b >= 0 {
			out[i].Bench = bench.nameAt(int(b))
		}
	}
	return out
}

// GenerateAPIMapping reads the two dump folders (rank folders, dump.json
// files, or step folders with one rank) and returns msprobe's api mapping
// for m: every NPU entry in dump order, bench name or NA.
func GenerateAPIMapping(m *mapping.Mapping, npuDir, benchDir string) ([]NamePair, error) {
	npu, bench, _, _, err := readSides(npuDir, benchDir, noRows)
	if err != nil {
		return nil, err
	}
	return APIMapping(m, npu, bench), nil
}

// Sides are two dump folders as the layer mapping reads them: the scope
// tries and, per entry, its row names (where they were read).
type Sides struct {
	NPU, Bench *Trie
	side       [2]sideRest
	// index tells, per side, whether an entry's name extends another's
	// (see newDataMap): worked out beside the rest once the side is read.
	index [2]func() bool
}

// sideRest is what a mapped compare needs of a side besides its trie:
// its entry names as SkimExact gives them (nil when they may differ), the
// row names of each entry (or, for a side whose rows are left to the
// compare, the skim's entries) and its module tree.
type sideRest struct {
	names    *msprobe.Names
	scanned  bool // names are the rows' entries
	rows     *rowTable
	skim     *skimmed
	dumpJSON string
	tree     *printparse.Tree
	treeErr  error
}

// RowsRead reports whether the reading built a side's rows (every row's
// name), not only its entries.
func (s *Sides) RowsRead() bool { return s.side[0].rows != nil || s.side[1].rows != nil }

// EntryNames returns the keys of each dump.json's "data" in order, as
// msprobe.SkimExact gives them, for a side whose reading read the whole
// file and found one "data" key that repeats no name (a reader of it
// then needs no check for repeats, msprobe.NoRepeats); nil for another.
func (s *Sides) EntryNames() (npu, bench *msprobe.Names) {
	return s.side[0].names, s.side[1].names
}

// Entries are the members of a dump.json's "data" in file order, as
// msprobe.Skim gives them: their names, the byte offsets of their keys,
// and whether each has a row msprobe.NormalRow refuses (Odd is thus
// never set where SkimEntry.Odd is not).
type Entries struct {
	Names   *msprobe.Names
	Offsets []int64
	Odd     []bool

	skim *skimmed // keeps a skim's Offsets (off the heap) while used
}

// Entries returns each side's entries as ReadSides read them; nil for a
// side where they may differ from a skim's (entries msprobe skips, keys
// repeated in "data": see EntryNames).
func (s *Sides) Entries() (npu, bench *Entries) {
	var es [2]*Entries
	for k, r := range s.side {
		switch {
		case r.skim != nil:
			es[k] = &Entries{Names: r.skim.names, Offsets: r.skim.offs, Odd: r.skim.odd, skim: r.skim}
		case r.scanned && r.rows != nil && len(r.rows.offs) == r.names.Len():
			es[k] = &Entries{Names: r.names, Offsets: r.rows.offs, Odd: r.rows.odd}
		}
	}
	return es[0], es[1]
}

// Trees returns the module trees of both dump folders as
// printparse.LoadDumpDir reads them, built from what ReadSides read (the
// names, construct.json) where that is what LoadDumpDir would read.
func (s *Sides) Trees() (npu, bench *printparse.Tree, npuErr, benchErr error) {
	return s.side[0].tree, s.side[1].tree, s.side[0].treeErr, s.side[1].treeErr
}

// ReadSides reads two dump folders once for everything a mapped compare
// derives from them: the tries (api mapping, resolution of each entry),
// the module trees (validate's checks) and, with rows, the row names
// (data mapping).
// The sides are read at the same time, each on its own goroutine; each
// lets its construct.json and stack.json go once its trie and tree are
// built. An error of the NPU side is reported before one of the bench.
//
// Without rows, the rows are left to the compare's own passes over the
// dump.json files where they can be: the entries are skimmed (see
// skimEntries: the bodies' syntax is then checked by those passes), and
// DataMapping gives a map completed as the compare reads them
// (DataMap.Deferred).
func ReadSides(npuDir, benchDir string, rows bool) (*Sides, error) {
	s := &Sides{}
	var (
		tries [2]*Trie
		errs  [2]error
		wg    sync.WaitGroup
	)
	for k, dir := range [2]string{npuDir, benchDir} {
		wg.Go(func() {
			mode := withRows
			if !rows {
				mode = rowsLater
			}
			t, rt, sk, in, err := readSide(dir, [2]string{"npu", "bench"}[k], mode)
			if err != nil {
				errs[k] = err
				return
			}
			// (the bench side's only for a deferred map)
			if k == 0 || !rows {
				s.index[k] = namesExtend(in.Names)
			}
			r := &s.side[k]
			if in.allNames && in.noRepeats {
				r.names, r.scanned = in.Names, in.scanned
			}
			r.tree, r.treeErr = dumpTree(in)
			tries[k], r.rows, r.skim, r.dumpJSON = t, rt, sk, in.Paths.DumpJSON
		})
	}
	wg.Wait()
	if err := cmp.Or(errs[0], errs[1]); err != nil {
		return nil, err
	}
	s.NPU, s.Bench = tries[0], tries[1]
	return s, nil
}

// namesExtend works out, on a goroutine of its own, whether one of
// names extends another's (Names.Extends, which looks them up: through
// the index construct.json's reading made, or one it makes) and how many
// are distinct (for a deferred map), then drops the names' index: it is
// not needed again before the mappings are made, whose peak it would
// raise (8 to 16 bytes a name).
func namesExtend(names *msprobe.Names) func() bool {
	c := make(chan bool, 1)
	go func() {
		e := names.Extends()
		names.Distinct()
		names.Unindex()
		c <- e
	}()
	return sync.OnceValue(func() bool { return <-c })
}

// DataMapping is msprobe's data mapping of these sides for m
// (generate_data_mapping_by_layer_mapping): the api mapping of their
// tries (APIMappingWith, unpaired likewise), expanded over the rows of
// both sides (DataMapping). It is made once: the tries are let go (NPU
// and Bench are nil) once the api mapping is made. Where both sides'
// rows were left to the compare, the map is deferred (DataMap.Deferred)
// when each NPU row's pair follows from its entry's pair and the bench
// rows alone: no entry name extends another's on either side and no NPU
// entry is paired twice; the NPU items' positions are then the NPU dump's
// members (msprobe.Entry.Member). Otherwise the rows left are read here.
// unpaired's position is the item's member where the NPU dump's rows were
// left to the compare (the items are then the members in order, deferred
// map or not), else -1.
func (s *Sides) DataMapping(m *mapping.Mapping, unpaired func(member int, it *Item, fired []*mapping.Rule)) (*DataMap, error) {
	npuTrie, benchTrie := s.NPU, s.Bench
	if unpaired != nil && s.side[0].skim == nil {
		byName := unpaired
		unpaired = func(_ int, it *Item, fired []*mapping.Rule) { byName(-1, it, fired) }
	}
	at, free := apiPositions(m, npuTrie, benchTrie, unpaired)
	s.NPU, s.Bench = nil, nil
	npuTrie.release()
	benchTrie.release()
	npu, bench := &s.side[0], &s.side[1]
	// Both answers are awaited: working them out looks the names up, and
	// the caller may drop the names' index once the map is made.
	var extends [2]bool
	for k, f := range s.index {
		extends[k] = f != nil && f()
	}
	npuExtends := extends[0]
	if npu.skim != nil && bench.skim != nil && !npuExtends {
		if !extends[1] {
			if d := newDeferredDataMap(npuTrie.names(), benchTrie.names(), at); d != nil {
				offheap.Cleanup(d, free)
				return d, nil
			}
		}
	}
	api := namePairs(npuTrie, benchTrie, at)
	free()
	npuTrie, benchTrie = nil, nil
	var errs [2]error
	var wg sync.WaitGroup
	for k, r := range []*sideRest{npu, bench} {
		if r.rows != nil {
			continue
		}
		wg.Go(func() {
			rt, _, _, err := scanRowTable(r.dumpJSON)
			if err != nil {
				errs[k] = fmt.Errorf("%s dump: %w", [2]string{"npu", "bench"}[k], err)
				return
			}
			rt.done()
			r.rows = rt
		})
	}
	wg.Wait()
	if err := cmp.Or(errs[0], errs[1]); err != nil {
		return nil, err
	}
	return newDataMap(api, npu.rows, bench.rows, func() bool { return npuExtends }), nil
}

// readSide builds the scope trie of a dump folder and what mode asks of
// its rows, in the same pass over its dump.json.
func readSide(dir, name string, mode rowsMode) (*Trie, *rowTable, *skimmed, DumpInput, error) {
	in, r, sk, err := readDump(dir, mode)
	if err != nil {
		return nil, nil, nil, in, fmt.Errorf("%s dump: %w", name, err)
	}
	t, err := trieFromInput(in)
	if err != nil {
		return nil, nil, nil, in, fmt.Errorf("%s dump: %w", name, err)
	}
	return t, r, sk, in, nil
}

// readSides reads two dump folders (readSide).
func readSides(npuDir, benchDir string, mode rowsMode) (npu, bench *Trie, npuRows, benchRows *rowTable, err error) {
	if npu, npuRows, _, _, err = readSide(npuDir, "npu", mode); err != nil {
		return
	}
	bench, benchRows, _, _, err = readSide(benchDir, "bench", mode)
	return
}

// RowsFunc returns the flattened row names (full_op_name) of one dump.json
// entry in msprobe's reordered order (inputs, parameters, outputs,
// parameters_grad); none for a name that is not an entry.
type RowsFunc func(entry string) []string

// DataMapping expands an api mapping into msprobe's data mapping
// (layer_mapping.generate_data_mapping): for each pair in order, each NPU
// row is paired with the bench row that has the same suffix after the entry
// name (the last bench row with that suffix wins), else NA. A later pair
// overwrites an earlier row of the same name in place, as a Python dict
// update does.
func DataMapping(api []NamePair, npuRows, benchRows RowsFunc) []NamePair {
	var out []NamePair
	pos := map[string]int{}
	for _, p := range api {
		if p.NPU == "" {
			continue
		}
		suffix := map[string]string{}
		for _, b := range benchRows(p.Bench) {
			s := ""
			if len(b) >= len(p.Bench) {
				s = b[len(p.Bench):]
			}
			suffix[s] = b
		}
		for _, n := range npuRows(p.NPU) {
			s := ""
			if len(n) >= len(p.NPU) {
				s = n[len(p.NPU):]
			}
			b, ok := suffix[s]
			if !ok {
				b = NA
			}
			if i, ok := pos[n]; ok {
				out[i].Bench = b
				continue
			}
			pos[n] = len(out)
			out = append(out, NamePair{NPU: n, Bench: b})
		}
	}
	return out
}

// GenerateDataMapping is msprobe's generate_data_mapping_by_layer_mapping:
// the api mapping of m for the two dump folders expanded into per-row
// names (see DataMapping). msprobe's table compare with -dm of this mapping
// is what layermap compare --mapping reproduces.
func GenerateDataMapping(m *mapping.Mapping, npuDir, benchDir string) ([]NamePair, error) {
	npu, bench, npuRows, benchRows, err := readSides(npuDir, benchDir, withRows)
	if err != nil {
		return nil, err
	}
	return DataMapping(APIMapping(m, npu, bench), npuRows.rows, benchRows.rows), nil
}
