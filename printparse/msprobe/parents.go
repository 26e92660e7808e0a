package msprobe

import (
	"bytes"
	"iter"
	"runtime"
	"unsafe"

	"github.com/layermap/layermap/printparse/nametable"
	"github.com/layermap/layermap/printparse/offheap"
)

// ParentIndex is construct.json for lookups by entry name, in a fraction
// of ReadConstruct's memory: each entry's parent under 96 bits of two
// hashes of the entry's name, not the name (a nametable.Table: 16 bytes
// a name and 2 to 4 bytes of bucket index, outside the collected heap;
// two names would share a parent only if all agreed: odds of 2^-96 a
// pair), each distinct parent once, and the module entries among names
// and parents, which is what a module tree needs (printparse.DumpTreeOf).
// Make one with ReadParentIndex, ReadParentIndexOf or NewParentIndex; a
// nil index has no names.
//
// An index read with the dump's entry names (ReadParentIndexOf) keeps, for
// those names, each one's parent as a position among them rather than a
// string of its own (4 bytes a name, outside the collected heap): the
// parents are module entries of the same dump. It finds names with
// Names.Find, not a table of its own.
type ParentIndex struct {
	tab *nametable.Table // name -> index in parents (without names: those use Names.Find)
	// distinct parents, and the module entries among names; [0] is ""
	// (with names: those not among them)
	parents []string
	ids     map[string]int32 // index in parents (while reading)
	named   []int32          // module entries among names (while reading)
	modules []string         // module entries among names and parents (by done)

	// with names: the parent of names[i] is parentOf[i]: 0 when
	// construct.json does not have it; 1 for none; k >= 2 names[k-2];
	// k < 0 parents[-k]. Names it has that are not among names are in
	// other (name -> the same).
	positional bool // read with names
	names      *Names
	moduleAt   []int32 // with names: the module entries among them (modules: the rest)
	parentOf   []int32
	other      map[string]int32
	namedNames []int32 // module entries among names, by position (while reading)
	next       int32   // where the next key is looked for first, -1 for nowhere (while reading: keys come in the names' order)
	lastParent []byte  // the last parent read and its parentOf value (siblings come together)
	lastRef    int32
}

// ReadParentIndex reads construct.json as ReadConstruct does into a
// ParentIndex.
func ReadParentIndex(path string) (*ParentIndex, error) {
	p, err := readConstructInto(path, newParentIndex, func(p *ParentIndex) { p.tab.Release() })
	if err != nil {
		return nil, err
	}
	return p.done(), nil
}

// ReadParentIndexOf is ReadParentIndex for a dump whose dump.json has the
// entry names names (nothing may write to them while the index is in
// use): the same answers, each name's parent kept as its position among
// names where it is one (a module entry of the dump), not as a copy.
func ReadParentIndexOf(path string, names *Names) (*ParentIndex, error) {
	fresh := func() *ParentIndex {
		p := newParentIndex()
		var free func()
		p.parentOf, free = offheap.Make[int32](names.Len())
		offheap.Cleanup(p, free)
		p.positional, p.names, p.other = true, names, map[string]int32{}
		if names.Distinct() != names.Len() {
			p.next = -1 // a name is there twice: its key goes where the table has it
		}
		return p
	}
	p, err := readConstructInto(path, fresh, func(p *ParentIndex) { p.tab.Release() })
	if err != nil {
		return nil, err
	}
	return p.done(), nil
}

// NewParentIndex indexes a construct.json read by ReadConstruct.
func NewParentIndex(construct map[string]string) *ParentIndex {
	p := newParentIndex()
	for k, v := range construct {
		p.member([]byte(k), []byte(v))
	}
	return p.done()
}

func newParentIndex() *ParentIndex {
	return &ParentIndex{tab: nametable.New(), parents: []string{""}, ids: map[string]int32{"": 0}}
}

// member records that key's parent is parent; a repeated key takes its
// last parent, as json.load does.
func (p *ParentIndex) member(key, parent []byte) {
	if p.positional {
		p.memberOf(key, parent)
		return
	}
	id := p.id(parent)
	if moduleLike(key) && isModuleEntry(unsafe.String(unsafe.SliceData(key), len(key))) {
		p.named = append(p.named, p.id(key))
	}
	p.tab.SetBytes(key, id)
}

// memberOf is member for an index read with names.
func (p *ParentIndex) memberOf(key, parent []byte) {
	ref := int32(1)
	switch {
	case len(parent) == 0:
	case p.lastRef != 0 && bytes.Equal(parent, p.lastParent):
		ref = p.lastRef
	default:
		if at, ok := p.at(parent); ok {
			ref = at + 2
		} else {
			ref = -p.id(parent)
		}
		p.lastParent, p.lastRef = append(p.lastParent[:0], parent...), ref
	}
	k := unsafe.String(unsafe.SliceData(key), len(key))
	module := moduleLike(key) && isModuleEntry(k)
	if i, ok := p.names.FindFrom(k, int(p.next), 1); ok { // (next -1: nowhere to look first)
		at := int32(i)
		if p.next >= 0 {
			p.next = at + 1
		}
		p.parentOf[at] = ref
		if module {
			p.namedNames = append(p.namedNames, at)
		}
		return
	}
	if module {
		p.named = append(p.named, p.id(key))
	}
	p.other[string(key)] = ref
}

// at is the position of s among the names.
func (p *ParentIndex) at(s []byte) (int32, bool) {
	k := unsafe.String(unsafe.SliceData(s), len(s))
	if i, ok := p.names.Find(k); ok {
		return int32(i), true
	}
	return 0, false
}

// parentString is the parent a parentOf value refers to.
func (p *ParentIndex) parentString(ref int32) string {
	switch {
	case ref >= 2:
		return p.names.At(int(ref - 2))
	case ref < 0:
		return p.parents[-ref]
	}
	return ""
}

// id is the index of s in parents, added if new.
func (p *ParentIndex) id(s []byte) int32 {
	id, ok := p.ids[string(s)]
	if !ok {
		id = int32(len(p.parents))
		p.parents = append(p.parents, string(s))
		p.ids[p.parents[id]] = id
	}
	return id
}

// done makes the names ready for lookups, lists the module entries among
// the names and among the parents names still have (a repeated name's
// earlier parent may have none left), each once, and drops what only
// reading needs.
func (p *ParentIndex) done() *ParentIndex {
	if p.positional {
		return p.doneOf()
	}
	p.tab.Done()
	held := make([]bool, len(p.parents))
	p.tab.Each(func(id int32) { held[id] = true })
	seen := make([]bool, len(p.parents))
	mods := p.named[:0] // in place: one list of numbers, then the strings
	for _, id := range p.named {
		if !seen[id] {
			seen[id] = true
			mods = append(mods, id)
		}
	}
	for id, s := range p.parents {
		if held[id] && !seen[id] && isModuleEntry(s) {
			mods = append(mods, int32(id))
		}
	}
	p.modules = make([]string, len(mods))
	for k, id := range mods {
		p.modules[k] = p.parents[id]
	}
	p.ids, p.named = nil, nil
	return p
}

// doneOf is done for an index read with names.
func (p *ParentIndex) doneOf() *ParentIndex {
	held := make([]bool, len(p.parents))    // of parents
	heldName := make([]bool, p.names.Len()) // of names, as parents
	seen, seenName := make([]bool, len(p.parents)), make([]bool, p.names.Len())
	hold := func(ref int32) {
		switch {
		case ref >= 2:
			heldName[ref-2] = true
		case ref < 0:
			held[-ref] = true
		}
	}
	for _, ref := range p.parentOf {
		hold(ref)
	}
	for _, ref := range p.other {
		hold(ref)
	}
	for _, at := range p.namedNames {
		if !seenName[at] {
			seenName[at] = true
			p.moduleAt = append(p.moduleAt, at)
		}
	}
	for _, id := range p.named {
		if !seen[id] {
			seen[id] = true
			p.modules = append(p.modules, p.parents[id])
		}
	}
	for at, h := range heldName {
		if h && !seenName[at] && isModuleEntry(p.names.At(at)) {
			p.moduleAt = append(p.moduleAt, int32(at))
		}
	}
	for id, s := range p.parents {
		if held[id] && !seen[id] && isModuleEntry(s) {
			p.modules = append(p.modules, s)
		}
	}
	p.ids, p.named, p.namedNames, p.lastParent = nil, nil, nil, nil
	return p
}

// moduleLike is a cheap test that name may be a module entry: it has
// ModuleEntry's prefix.
func moduleLike(name []byte) bool {
	return bytes.HasPrefix(name, []byte("Module.")) || bytes.HasPrefix(name, []byte("Cell."))
}

func isModuleEntry(s string) bool {
	_, _, _, ok := ModuleEntry(s)
	return ok
}

// Parent returns the parent of the entry named name: "" for none, or for
// a name construct.json does not have. A nil index has no names.
func (p *ParentIndex) Parent(name string) string {
	if p == nil {
		return ""
	}
	if p.positional {
		if at, ok := p.at(unsafe.Slice(unsafe.StringData(name), len(name))); ok {
			return p.parentString(p.parentOf[at])
		}
		return p.parentString(p.other[name])
	}
	if id, ok := p.tab.Get(name); ok {
		return p.parents[id]
	}
	return ""
}

// ParentOf is Parent of the i-th entry name of the dump, name: for an
// index read with the names (ReadParentIndexOf), found by its position.
func (p *ParentIndex) ParentOf(i int, name string) string {
	if ref := p.refOf(i, name); ref != 0 {
		return p.parentString(ref)
	}
	return p.Parent(name)
}

// AppendParentOf appends ParentOf(i, name) to dst, without making a
// string of a parent among the names.
func (p *ParentIndex) AppendParentOf(dst []byte, i int, name string) []byte {
	switch ref := p.refOf(i, name); {
	case ref >= 2:
		return p.names.Append(dst, int(ref-2))
	case ref != 0:
		return append(dst, p.parentString(ref)...)
	}
	return append(dst, p.Parent(name)...)
}

// refOf is the parentOf value of the i-th entry name when it is name in
// an index read with the names; 0 when the index cannot tell by position.
func (p *ParentIndex) refOf(i int, name string) int32 {
	if p != nil && p.positional && i < p.names.Len() && p.names.Is(i, name) {
		return p.parentOf[i]
	}
	return 0
}

// Len is the number of distinct entry names.
func (p *ParentIndex) Len() int {
	if p == nil {
		return 0
	}
	if p.positional {
		n := len(p.other)
		for _, ref := range p.parentOf {
			if ref != 0 {
				n++
			}
		}
		runtime.KeepAlive(p) // parentOf is p's, outside the heap
		return n
	}
	return p.tab.Len()
}

// Modules yields the distinct module entries (ModuleEntry) among the
// entry names and the parents, in no particular order. A string it yields
// may be valid only until the next one is: copy it to keep it (an index
// read with names reads those in place).
func (p *ParentIndex) Modules() iter.Seq[string] {
	return func(yield func(string) bool) {
		if p == nil {
			return
		}
		var b []byte
		for _, at := range p.moduleAt {
			b = p.names.Append(b[:0], int(at))
			if !yield(unsafe.String(unsafe.SliceData(b), len(b))) {
				return
			}
		}
		for _, s := range p.modules {
			if !yield(s) {
				return
			}
		}
	}
}
