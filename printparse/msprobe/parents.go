package msprobe

import (
	"bytes"
	"hash/maphash"
	"math/bits"
	"slices"
)

// ParentIndex is construct.json for lookups by entry name, in a fraction
// of ReadConstruct's memory: it keeps each entry's parent under 95 bits of
// two hashes of the entry's name, not the name (two names would share a
// parent only if all agreed: odds of 2^-95 a pair), each distinct parent
// once, and the module entries among names and parents, which is what a
// module tree needs (printparse.DumpTreeOf). Its table is 16 bytes a slot
// at most three quarters full, without pointers for the collector to scan.
// Make one with ReadParentIndex or NewParentIndex; a nil index has no
// names.
type ParentIndex struct {
	seed1, seed2 maphash.Seed
	mask         uint64 // applied to the first hash (tests force collisions)

	slots   []parentSlot // open addressing, linear probing
	n       int          // slots in use: distinct names
	parents []string     // distinct parents; [0] is ""
	ids     map[string]int32
	modules []string // module entries among names (then parents, by done)
}

// parentSlot is a name's hashes and its parent's index in parents.
type parentSlot struct {
	h1     uint64 // 0: an empty slot
	h2     uint32
	parent int32
}

// ReadParentIndex reads construct.json as ReadConstruct does into a
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
	return p.done()
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
		id = int32(len(p.parents))
		p.parents = append(p.parents, string(parent))
		p.ids[p.parents[id]] = id
	}
	if moduleLike(key) {
		s := string(key)
		if k, isParent := p.ids[s]; isParent {
			s = p.parents[k] // the copy held already
		}
		if isModuleEntry(s) {
			p.modules = append(p.modules, s)
		}
	}
	h1, h2 := p.first(maphash.Bytes(p.seed1, key)), uint32(maphash.Bytes(p.seed2, key))
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

// done adds the module entries among the parents names still have (a
// repeated name's earlier parent may have none left), drops repeats from
// the module entries and what only reading needs.
func (p *ParentIndex) done() *ParentIndex {
	held := make([]bool, len(p.parents))
	for _, s := range p.slots {
		if s.h1 != 0 {
			held[s.parent] = true
		}
	}
	for id, s := range p.parents {
		if held[id] && moduleLike([]byte(s)) && isModuleEntry(s) {
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

// first returns the first hash as the table keeps it: masked, and never
// 0 (an empty slot).
func (p *ParentIndex) first(h uint64) uint64 { return h&p.mask | 1 }

// Parent returns the parent of the entry named name: "" for none, or for
// a name construct.json does not have. A nil index has no names.
func (p *ParentIndex) Parent(name string) string {
	if p == nil {
		return ""
	}
	if s := p.slot(p.first(maphash.String(p.seed1, name)), uint32(maphash.String(p.seed2, name))); s.h1 != 0 {
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
// entry names and the parents, in no particular order. The slice is
// shared: do not modify it.
func (p *ParentIndex) Modules() []string {
	if p == nil {
		return nil
	}
	return p.modules
}
