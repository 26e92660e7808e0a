package msprobe

import (
	"bytes"
	"hash/maphash"
	"math/bits"
	"slices"
)

// ParentIndex is construct.json for lookups by entry name, in a fraction
// of ReadConstruct's memory: it keeps each entry's parent under 96 bits of
// two hashes of the entry's name, not the name (two names would share a
// parent only if all agreed: odds of 2^-96 a pair), each distinct parent
// once, and the module entries among names and parents, which is what a
// module tree needs (printparse.DumpTreeOf). Its table is 16 bytes a slot
// at most three quarters full, without pointers for the collector to scan.
type ParentIndex struct {
	seed1, seed2 maphash.Seed
	mask         uint64 // applied to the first hash (tests force collisions)

	slots   []parentSlot // open addressing, linear probing
	n       int          // slots in use: distinct names
	parents []string     // distinct parents; [0] is ""
	ids     map[string]int32
	modules []string // module entries among names and parents
}

// parentSlot is a name's hashes and its parent's index in parents.
type parentSlot struct {
	h1     uint64 // 0: an empty slot
	h2     uint32
	parent int32
}

// ReadParentIndex reads construct.json as ReadConstructSized does into a
// ParentIndex; n is about the number of its entries (0 when unknown).
func ReadParentIndex(path string, n int) (*ParentIndex, error) {
	p := newParentIndex(n, ^uint64(0))
	if readConstructPlain(path, p) {
		return p.done(), nil
	}
	p = newParentIndex(n, ^uint64(0))
	if err := readConstructTree(path, p); err != nil {
		return nil, err
	}
	return p.done(), nil
}

// NewParentIndex indexes a construct.json read by ReadConstruct.
func NewParentIndex(construct map[string]string) *ParentIndex {
	return parentIndexOf(construct, len(construct), ^uint64(0))
}

func parentIndexOf(construct map[string]string, n int, mask uint64) *ParentIndex {
	p := newParentIndex(n, mask)
	for k, v := range construct {
		p.member([]byte(k), []byte(v))
	}
	p.done()
	slices.Sort(p.modules) // the map's order is random
	return p
}

func newParentIndex(n int, mask uint64) *ParentIndex {
	return &ParentIndex{
		seed1: maphash.MakeSeed(), seed2: maphash.MakeSeed(), mask: mask,
		slots: make([]parentSlot, max(16, n+n/3+1)), parents: []string{""}, ids: map[string]int32{"": 0},
	}
}

// member records that key's parent is parent; a repeated key takes its
// last parent, as json.load does.
func (p *ParentIndex) member(key, parent []byte) {
	id, ok := p.ids[string(parent)]
	if !ok {
		s := string(parent)
		id = int32(len(p.parents))
		p.parents = append(p.parents, s)
		p.ids[s] = id
		if isModuleEntry(s) {
			p.modules = append(p.modules, s)
		}
	}
	if moduleLike(key) {
		if _, isParent := p.ids[string(key)]; !isParent {
			if s := string(key); isModuleEntry(s) {
				p.modules = append(p.modules, s)
			}
		}
	}
	h1, h2 := p.hashes(key)
	sl := p.slot(h1, h2)
	if sl.h1 == 0 {
		if p.n++; p.n > len(p.slots)*3/4 {
			p.grow()
			sl = p.slot(h1, h2)
		}
		sl.h1, sl.h2 = h1, h2
	}
	sl.parent = id
}

// slot returns the slot of the name with hashes h1 and h2, or the empty
// slot where it goes.
func (p *ParentIndex) slot(h1 uint64, h2 uint32) *parentSlot {
	i, _ := bits.Mul64(h1, uint64(len(p.slots)))
	for {
		s := &p.slots[i]
		if s.h1 == 0 || s.h1 == h1 && s.h2 == h2 {
			return s
		}
		if i++; i == uint64(len(p.slots)) {
			i = 0
		}
	}
}

// grow doubles the table.
func (p *ParentIndex) grow() {
	old := p.slots
	p.slots = make([]parentSlot, 2*len(old))
	for _, s := range old {
		if s.h1 != 0 {
			*p.slot(s.h1, s.h2) = s
		}
	}
}

// done drops what only reading needs and the module names recorded twice
// (a module entry seen as a name before it was seen as a parent, or a
// repeated name).
func (p *ParentIndex) done() *ParentIndex {
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

// hashes returns key's hashes: the first never 0 (an empty slot).
func (p *ParentIndex) hashes(key []byte) (uint64, uint32) {
	return maphash.Bytes(p.seed1, key)&p.mask | 1, uint32(maphash.Bytes(p.seed2, key))
}

// Parent returns the parent of the entry named name: "" for none, or for
// a name construct.json does not have. A nil index has no names.
func (p *ParentIndex) Parent(name string) string {
	if p == nil {
		return ""
	}
	h1 := maphash.String(p.seed1, name)&p.mask | 1
	if s := p.slot(h1, uint32(maphash.String(p.seed2, name))); s.h1 != 0 {
		return p.parents[s.parent]
	}
	return ""
}

// Len is the number of distinct entry names.
func (p *ParentIndex) Len() int {
	if p == nil {
		return 0
	}
	return p.n
}

// Modules returns the distinct module entries (ModuleEntry) among the
// entry names and the parents, in the order first seen. The slice is
// shared: do not modify it.
func (p *ParentIndex) Modules() []string {
	if p == nil {
		return nil
	}
	return p.modules
}
