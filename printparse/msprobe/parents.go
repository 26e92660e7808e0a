package msprobe

import (
	"bytes"
	"unsafe"

	"github.com/layermap/layermap/printparse/nametable"
)

// ParentIndex is construct.json for lookups by entry name, in a fraction
// of ReadConstruct's memory: each entry's parent under 96 bits of two
// hashes of the entry's name, not the name (a nametable.Table: 16 bytes
// a name and 2 to 4 bytes of bucket index, outside the collected heap;
// two names would share a parent only if all agreed: odds of 2^-96 a
// pair), each distinct parent once, and the module entries among names
// and parents, which is what a module tree needs (printparse.DumpTreeOf).
// Make one with ReadParentIndex or NewParentIndex; a nil index has no
// names.
type ParentIndex struct {
	tab *nametable.Table // name -> index in parents
	// distinct parents, and the module entries among names; [0] is ""
	parents []string
	ids     map[string]int32 // index in parents (while reading)
	named   []int32          // module entries among names (while reading)
	modules []string         // module entries among names and parents (by done)
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
	id := p.id(parent)
	if moduleLike(key) && isModuleEntry(unsafe.String(unsafe.SliceData(key), len(key))) {
		p.named = append(p.named, p.id(key))
	}
	p.tab.SetBytes(key, id)
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
	if id, ok := p.tab.Get(name); ok {
		return p.parents[id]
	}
	return ""
}

// Len is the number of distinct entry names.
func (p *ParentIndex) Len() int {
	if p == nil {
		return 0
	}
	return p.tab.Len()
}

// Modules returns the distinct module entries (ModuleEntry) among the
// entry names and the parents, in no particular order. The slice is
// shared: do not modify it.
func (p *ParentIndex) Modules() []string {
	if p == nil {
		return nil
	}
	return p.modules
}
