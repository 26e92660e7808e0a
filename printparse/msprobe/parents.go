package msprobe

import (
	"bytes"
	"slices"

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
	tab     *nametable.Table // name -> index in parents
	parents []string         // distinct parents; [0] is ""
	ids     map[string]int32
	modules []string // module entries among names (then parents, by done)
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
	id, ok := p.ids[string(parent)]
	if !ok {
		id = int32(len(p.parents))
		p.parents = append(p.parents, string(parent))
		p.ids[p.parents[id]] = id
	}
	if moduleLike(key) {
		var s string
		if k, isParent := p.ids[string(key)]; isParent {
			s = p.parents[k] // the copy held already
		} else {
			s = string(key)
		}
		if isModuleEntry(s) {
			p.modules = append(p.modules, s)
		}
	}
	p.tab.SetBytes(key, id)
}

// done makes the names ready for lookups, adds the module entries among
// the parents names still have (a repeated name's earlier parent may have
// none left), drops repeats from the module entries and what only reading
// needs.
func (p *ParentIndex) done() *ParentIndex {
	p.tab.Done()
	held := make([]bool, len(p.parents))
	p.tab.Each(func(id int32) { held[id] = true })
	for id, s := range p.parents {
		if held[id] && isModuleEntry(s) {
			p.modules = append(p.modules, s)
		}
	}
	seen := make(map[string]bool, len(p.modules))
	kept := p.modules[:0]
	for _, m := range p.modules {
		if !seen[m] {
			seen[m] = true
			kept = append(kept, m)
		}
	}
	p.modules = slices.Clip(kept)
	p.ids = nil
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
