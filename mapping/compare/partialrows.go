package compare

import "github.com/layermap/layermap/printparse/offheap"

// partialRows keeps which rows were matched of the bench entries that
// left the cache partly matched, should one be parsed again: an
// open-addressing table of 16-byte slots (the entry, and its rows' bits,
// or for an entry of more than 64 rows where its bits start in long),
// at most 3/4 full, outside the collected heap. A slot is never removed:
// an entry that leaves the cache again overwrites its bits (its matches
// only grow).
type partialRows struct {
	slots []uint64 // pairs: entry+1 (0: empty), bits or index in long
	free  func()
	used  int
	long  offheap.List[uint64]
}

// home is where entry i's probe starts, for a table of n slots.
func partialHome(i int32, n int) int {
	h := uint64(uint32(i)+1) * 0x9e3779b97f4a7c15
	return int((h >> 32) * uint64(n) >> 32)
}

// slot returns the index of entry i's slot, or of the empty slot where
// it would go.
func (p *partialRows) slot(i int32) int {
	n := len(p.slots) / 2
	for k := partialHome(i, n); ; k++ {
		if k == n {
			k = 0
		}
		if e := p.slots[2*k]; e == 0 || e == uint64(uint32(i)+1) {
			return k
		}
	}
}

// put records matched as entry i's matched rows.
func (p *partialRows) put(i int32, matched []bool) {
	if (p.used+1)*4 > len(p.slots)/2*3 {
		p.grow()
	}
	k := p.slot(i)
	if p.slots[2*k] == 0 {
		p.slots[2*k] = uint64(uint32(i) + 1)
		p.used++
		if len(matched) > 64 {
			p.slots[2*k+1] = uint64(p.long.Len())
			for range (len(matched) + 63) / 64 {
				p.long.Add(0)
			}
		}
	}
	if len(matched) <= 64 {
		p.slots[2*k+1] = packBits(matched)
		return
	}
	at := int(p.slots[2*k+1])
	for w := 0; w*64 < len(matched); w++ {
		p.long.Set(at+w, packBits(matched[w*64:min(len(matched), w*64+64)]))
	}
}

// get sets matched from entry i's record and reports whether it had one.
func (p *partialRows) get(i int32, matched []bool) bool {
	if p.used == 0 {
		return false
	}
	k := p.slot(i)
	if p.slots[2*k] == 0 {
		return false
	}
	if len(matched) <= 64 {
		unpackBits(p.slots[2*k+1], matched)
		return true
	}
	at := int(p.slots[2*k+1])
	for w := 0; w*64 < len(matched); w++ {
		unpackBits(p.long.At(at+w), matched[w*64:min(len(matched), w*64+64)])
	}
	return true
}

func (p *partialRows) grow() {
	old, free := p.slots, p.free
	p.slots, p.free = offheap.Make[uint64](2 * max(256, len(old)))
	for k := 0; k < len(old); k += 2 {
		if old[k] != 0 {
			n := p.slot(int32(old[k] - 1))
			p.slots[2*n], p.slots[2*n+1] = old[k], old[k+1]
		}
	}
	if free != nil {
		free()
	}
}

// release frees the table; it is empty afterwards.
func (p *partialRows) release() {
	if p.free != nil {
		p.free()
	}
	p.long.Release()
	*p = partialRows{}
}

func packBits(m []bool) uint64 {
	var w uint64
	for r, ok := range m {
		if ok {
			w |= 1 << r
		}
	}
	return w
}

func unpackBits(w uint64, m []bool) {
	for r := range m {
		m[r] = w&(1<<r) != 0
	}
}
