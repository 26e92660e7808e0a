package compare

// tagTable is an open-addressing hash table of numbers (rows, entries,
// names) tagged with the high 32 bits of their key's hash: 8 bytes a
// slot, pointer-free (the garbage collector does not scan it). Callers
// check the numbers it gives against the real key.
type tagTable struct {
	slots []uint64 // tag | number+1; 0 is empty
	used  int
}

// insert adds number n under hash h.
func (t *tagTable) insert(h uint64, n uint32) {
	if (t.used+1)*4 > len(t.slots)*3 {
		old := t.slots
		t.slots = make([]uint64, max(1024, 2*len(old)))
		t.used = 0
		for _, s := range old {
			if s != 0 {
				t.place(s)
			}
		}
	}
	t.place(h&^(1<<32-1) | uint64(n+1))
}

func (t *tagTable) place(s uint64) {
	mask := uint64(len(t.slots) - 1)
	for i := (s >> 32) & mask; ; i = (i + 1) & mask {
		if t.slots[i] == 0 {
			t.slots[i] = s
			t.used++
			return
		}
	}
}

// find calls fn with every number inserted under a hash with h's tag,
// until fn returns false.
func (t *tagTable) find(h uint64, fn func(n uint32) bool) {
	if len(t.slots) == 0 {
		return
	}
	tag := h &^ (1<<32 - 1)
	mask := uint64(len(t.slots) - 1)
	for i := (h >> 32) & mask; t.slots[i] != 0; i = (i + 1) & mask {
		if s := t.slots[i]; s&^(1<<32-1) == tag && !fn(uint32(s)-1) {
			return
		}
	}
}

// reset empties the table, keeping its memory.
func (t *tagTable) reset() {
	clear(t.slots)
	t.used = 0
}
