package resolve

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unsafe"

	"github.com/layermap/layermap/printparse/msprobe"
	"github.com/layermap/layermap/printparse/nametable"
)

// rowTable holds the row names of a dump's entries compactly. Almost every
// row is its entry's name followed by a structural suffix (".input.0",
// ".parameters.weight"), and entries share their lists of suffixes: each
// distinct list is kept once, an entry keeps the list's number.
type rowTable struct {
	// entry maps an entry name to its suffix list, or for an entry with a
	// row that does not start with the entry name to -1-k, its rows being
	// raw[k] as read.
	entry *nametable.Table
	lists []suffixList
	raw   [][]string
	// irregular is set when some row is not its entry's name followed by
	// "" or a suffix starting with '.' (then distinct entries may give one
	// row name, and the data mapping takes the general path).
	irregular bool

	// The entries' key offsets (msprobe.Entry.Offset) and whether each
	// has a row msprobe.NormalRow refuses, in the order read.
	offs []int64
	odd  []bool

	// While reading: the entries in order, each with its list (-1: raw),
	// put in the maps by done at their final size.
	names   []string
	ofName  []int32
	rawRows map[int32][]string
	ids     map[string]int32 // interning key of a list -> its number
	key     []byte
}

// suffixList is one entry's row suffixes in order, each once (a repeated
// row name is one key of msprobe's data mapping dict).
type suffixList struct {
	sfx   []string
	index map[string]int32 // suffix -> position, for long lists
}

// longList is the length above which a suffixList gets an index.
const longList = 16

func newRowTable() *rowTable {
	return &rowTable{ids: map[string]int32{}}
}

// add records the rows of e under name (e.Name, detached from the
// scanner's buffers).
func (t *rowTable) add(name string, e *msprobe.Entry) {
	t.names = append(t.names, name)
	t.offs, t.odd = append(t.offs, e.Offset), append(t.odd, !msprobe.NormalRows(e))
	k := t.key[:0]
	for i := range e.Items {
		r := e.Items[i].Name
		if !strings.HasPrefix(r, name) {
			rows := make([]string, len(e.Items))
			for j := range e.Items {
				rows[j] = strings.Clone(e.Items[j].Name)
			}
			if t.rawRows == nil {
				t.rawRows = map[int32][]string{}
			}
			t.rawRows[int32(len(t.ofName))] = rows
			t.ofName = append(t.ofName, -1)
			t.irregular = true
			return
		}
		s := r[len(name):]
		if s != "" && s[0] != '.' {
			t.irregular = true
		}
		k = binary.AppendUvarint(k, uint64(len(s)))
		k = append(k, s...)
	}
	t.key = k
	id, ok := t.ids[string(k)]
	if !ok {
		id = int32(len(t.lists))
		t.ids[string(k)] = id
		var l suffixList
		seen := map[string]bool{}
		for i := range e.Items {
			s := e.Items[i].Name[len(name):]
			if !seen[s] {
				seen[s] = true
				l.sfx = append(l.sfx, strings.Clone(s))
			}
		}
		if len(l.sfx) > longList {
			l.index = make(map[string]int32, len(l.sfx))
			for i, s := range l.sfx {
				l.index[s] = int32(i)
			}
		}
		t.lists = append(t.lists, l)
	}
	t.ofName = append(t.ofName, id)
}

// done puts the entries read in the table (a later entry of a repeated
// name wins), drops what only reading needs, and returns the entries'
// names in the order read.
func (t *rowTable) done() []string {
	names := t.names
	t.entry = nametable.New()
	for i, name := range t.names {
		id := t.ofName[i]
		if id < 0 {
			id = -1 - int32(len(t.raw))
			t.raw = append(t.raw, t.rawRows[int32(i)])
		}
		t.entry.Set(name, id)
	}
	t.entry.Done()
	t.names, t.ofName, t.rawRows, t.ids, t.key = nil, nil, nil, nil, nil
	return names
}

// list returns the suffix list of an entry whose rows all start with its
// name.
func (t *rowTable) list(entry string) (int32, bool) {
	id, ok := t.entry.Get(entry)
	return id, ok && id >= 0
}

// rows returns the row names of an entry (each once), none for a name
// that is not an entry with rows.
func (t *rowTable) rows(entry string) []string {
	id, ok := t.entry.Get(entry)
	switch {
	case !ok:
		return nil
	case id < 0:
		return t.raw[-1-id]
	}
	l := t.lists[id].sfx
	out := make([]string, len(l))
	for i, s := range l {
		out[i] = entry + s
	}
	return out
}

// find returns the position of s in the list, or -1.
func (l *suffixList) find(s string) int {
	if l.index != nil {
		if i, ok := l.index[s]; ok {
			return int(i)
		}
		return -1
	}
	for i, x := range l.sfx {
		if x == s {
			return i
		}
	}
	return -1
}

// DataMap is msprobe's data mapping of a mapped compare (see DataMapping),
// kept per entry rather than per row: each NPU entry with its bench entry
// and the row suffixes both have. Rows are named only when asked for.
type DataMap struct {
	lists   []suffixList // the NPU side's suffix lists
	pairs   []dmPair
	byEntry *nametable.Table // NPU entry -> index in pairs

	// the general path (irregular names): every pair spelled out
	full    []NamePair
	fullMap map[string]string

	// deferred marks a map whose rows are read after it (Deferred),
	// kept in later rather than pairs: for each NPU entry by its
	// position in the NPU dump, its bench entry's position among
	// benchNames, or -1.
	deferred   bool
	later      []int32 // outside the heap, freed by the map's cleanup (apiPositions)
	scratch    []byte  // EntryPairs' bench entry name
	benchNames *msprobe.Names
}

// dmPair is one NPU entry of the data mapping: its bench entry ("" for
// none) and, per NPU suffix (list), whether the bench entry has a row
// with it.
type dmPair struct {
	npu, bench string
	list       int32
	has        []bool
}

// newDeferredDataMap is newDataMap for sides whose rows are read after
// the map is made: at[i] is the position among bench of the bench entry
// paired with the NPU entry npu[i], or -1 (an api mapping by position).
// nil when an NPU entry is paired twice. The rows of both sides must be
// regular (every row its entry's name followed by "" or a suffix
// starting with '.', as a skim without odd entries finds them) and no
// entry name may extend another's on either side: an NPU row's pair is
// then its bench entry's row of the same suffix, as newDataMap's compact
// path pairs them. The map keeps no NPU name: it is asked by position
// (the names, distinct, are the NPU dump's entries in file order).
func newDeferredDataMap(npu, bench *msprobe.Names, at []int32) *DataMap {
	if npu.Len() != len(at) || npu.Distinct() != len(at) {
		return nil
	}
	return &DataMap{deferred: true, later: at, benchNames: bench}
}

// Deferred reports a map made before the rows were read: it pairs each
// NPU row with the row of the same suffix of its entry's bench entry, if
// that entry has one, else with NA; whether it has one is for the reader
// of the bench dump to tell. Its pairs are given by EntryPairs for each
// NPU entry as the compare reads the dumps, not by Each, and an NPU row's
// bench entry by its entry's EntryPair, not Lookup. Both take the NPU
// entry by its position among the NPU dump's members (msprobe.Entry.Member,
// which counts the names msprobe skips).
func (d *DataMap) Deferred() bool { return d.deferred }

// EntryPair gives, in a deferred map, the bench entry paired with the NPU
// entry at position i in the NPU dump ("" for none) and its position in
// the bench dump; ok is false when the map has no entry i. An NPU row
// named with the entry's name and a suffix is paired with the bench
// entry's row of that suffix, when the bench entry has it, else with NA.
func (d *DataMap) EntryPair(i int) (bench string, at int32, ok bool) {
	b, at, ok := d.AppendEntryPair(nil, i)
	return string(b), at, ok
}

// AppendEntryPair is EntryPair with the bench entry's name appended to
// dst.
func (d *DataMap) AppendEntryPair(dst []byte, i int) (bench []byte, at int32, ok bool) {
	if !d.deferred || i < 0 || i >= len(d.later) {
		return dst, -1, false
	}
	if at = d.later[i]; at < 0 {
		return dst, -1, true
	}
	return d.benchNames.Append(dst, int(at)), at, true
}

// EntryPairs calls fn, as Each does, for the pairs of the rows of the NPU
// entry named entry, at position i in the NPU dump (rows: its rows' names
// as read, in order) in a deferred map; has tells whether the bench entry
// at a position in the bench dump has a row with a suffix. Given every
// entry of the NPU dump in file order, the calls are Each's of a map made
// with the rows. It is for one goroutine at a time: the bench name fn is
// given is valid during the call only.
func (d *DataMap) EntryPairs(entry string, i int, rows []string, has func(at int32, suffix string) (bool, error), fn func(npu, npuSuffix, bench, benchSuffix string) error) error {
	b, at, ok := d.AppendEntryPair(d.scratch[:0], i)
	if !ok {
		return nil
	}
	d.scratch = b
	return d.EntryPairsOf(entry, unsafe.String(unsafe.SliceData(b), len(b)), at, rows, has, fn)
}

// EntryPairsOf is EntryPairs for an NPU entry whose pair is known: bench
// and at as EntryPair gave them for it (with ok).
func (d *DataMap) EntryPairsOf(entry, bench string, at int32, rows []string, has func(at int32, suffix string) (bool, error), fn func(npu, npuSuffix, bench, benchSuffix string) error) error {
	var seen map[string]bool // for long lists
	if len(rows) > longList {
		seen = make(map[string]bool, len(rows))
	}
	for k, r := range rows {
		if !strings.HasPrefix(r, entry) {
			return fmt.Errorf("data mapping: row %q of entry %q does not start with the entry's name", r, entry)
		}
		s := r[len(entry):]
		// each suffix once, where it first comes
		if seen != nil {
			if seen[s] {
				continue
			}
			seen[s] = true
		} else if slices.ContainsFunc(rows[:k], func(o string) bool { return o[len(entry):] == s }) {
			continue
		}
		b, bs := NA, ""
		if at >= 0 {
			ok, err := has(at, s)
			if err != nil {
				return err
			}
			if ok {
				b, bs = bench, s
			}
		}
		if err := fn(entry, s, b, bs); err != nil {
			return err
		}
	}
	return nil
}

// newDataMap expands an api mapping over the rows of both sides. The
// general algorithm (DataMapping) runs when names are irregular or an
// NPU entry's name extends another's (a row of one could then be a row of
// the other: the dict's later pair overwrites the earlier). mayExtend,
// when not nil, tells whether some NPU entry's name (of all of them, not
// only those paired) extends another's: false spares the check.
func newDataMap(api []NamePair, npu, bench *rowTable, mayExtend func() bool) *DataMap {
	d := &DataMap{lists: npu.lists, byEntry: nametable.New(), pairs: make([]dmPair, 0, npu.entry.Len())}
	general := npu.irregular || bench.irregular
	type listPair struct{ n, b int32 }
	cache := map[listPair][]bool{}
	for _, p := range api {
		if general {
			break
		}
		if p.NPU == "" {
			continue
		}
		nl, ok := npu.list(p.NPU)
		if !ok {
			continue // no rows
		}
		dp := dmPair{npu: p.NPU, list: nl}
		if bl, ok := bench.list(p.Bench); ok {
			dp.bench = p.Bench
			k := listPair{nl, bl}
			has, ok := cache[k]
			if !ok {
				has = make([]bool, len(npu.lists[nl].sfx))
				b := &bench.lists[bl]
				for i, s := range npu.lists[nl].sfx {
					has[i] = b.find(s) >= 0
				}
				cache[k] = has
			}
			dp.has = has
		}
		d.byEntry.Set(p.NPU, int32(len(d.pairs)))
		d.pairs = append(d.pairs, dp)
	}
	d.byEntry.Done()
	// an NPU entry paired twice, or one extending another
	general = general || d.byEntry.Len() != len(d.pairs) ||
		(mayExtend == nil || mayExtend()) && pairsExtend(d.pairs)
	if general {
		d.byEntry.Release()
		d.pairs, d.byEntry = nil, nil
		d.full = DataMapping(api, npu.rows, bench.rows)
		d.fullMap = make(map[string]string, len(d.full))
		for _, p := range d.full {
			d.fullMap[p.NPU] = p.Bench
		}
	}
	return d
}

// pairsExtend reports whether the NPU entry name of a pair extends
// another's (Names.Extends).
func pairsExtend(pairs []dmPair) bool {
	names := &msprobe.Names{}
	for _, p := range pairs {
		names.AddString(p.npu)
	}
	names.Done()
	defer names.Unindex()
	return names.Extends()
}

// Each calls fn for every pair of the data mapping in msprobe's order:
// the NPU row is npu+npuSuffix, the bench row bench+benchSuffix (NA and
// "" for none). Names are not joined: fn appends the parts where it
// writes them.
func (d *DataMap) Each(fn func(npu, npuSuffix, bench, benchSuffix string) error) error {
	if d.deferred {
		return errDeferred
	}
	if d.full != nil || d.pairs == nil {
		for _, p := range d.full {
			if err := fn(p.NPU, "", p.Bench, ""); err != nil {
				return err
			}
		}
		return nil
	}
	for i := range d.pairs {
		p := &d.pairs[i]
		for k, s := range d.lists[p.list].sfx {
			b, bs := NA, ""
			if p.bench != "" && p.has[k] {
				b, bs = p.bench, s
			}
			if err := fn(p.npu, s, b, bs); err != nil {
				return err
			}
		}
	}
	return nil
}

// errDeferred is Each's error for a deferred map.
var errDeferred = errors.New("data mapping: the pairs of a deferred map are given by EntryPairs")

// Len is the number of pairs (none for a deferred map).
func (d *DataMap) Len() int {
	if d.deferred {
		return 0
	}
	if d.pairs == nil {
		return len(d.full)
	}
	n := 0
	for i := range d.pairs {
		n += len(d.lists[d.pairs[i].list].sfx)
	}
	return n
}

// Pairs spells out every pair, in Each's order (none for a deferred
// map).
func (d *DataMap) Pairs() []NamePair {
	out := make([]NamePair, 0, d.Len())
	d.Each(func(n, ns, b, bs string) error {
		out = append(out, NamePair{NPU: n + ns, Bench: b + bs})
		return nil
	})
	return out
}

// Lookup returns the bench row the data mapping pairs with the NPU row
// named row of the entry named entry (NA for none), in two parts, bench
// and suffix, not joined; and whether the mapping has the row at all. A
// deferred map has no row: ask EntryPair.
func (d *DataMap) Lookup(entry, row string) (bench, suffix string, ok bool) {
	if d.fullMap != nil {
		b, ok := d.fullMap[row]
		return b, "", ok
	}
	if d.deferred {
		return "", "", false
	}
	i, ok := d.byEntry.Get(entry)
	if !ok || !strings.HasPrefix(row, entry) {
		return "", "", false
	}
	p := &d.pairs[i]
	s := row[len(entry):]
	k := d.lists[p.list].find(s)
	switch {
	case k < 0:
		return "", "", false
	case p.bench == "" || !p.has[k]:
		return NA, "", true
	case p.bench == entry:
		return row, "", true
	}
	return p.bench, s, true
}
