package compare

import (
	"hash/maphash"
	"strconv"
	"strings"

	"github.com/layermap/layermap/printparse/msprobe"
	"github.com/layermap/layermap/printparse/offheap"
)

// keyNamer builds the op_name_update keys of one side: for backward
// entries the call index is replaced by how many backward entries of the
// same op came before (msprobe's update_backward_call), so recompute-shifted
// indices line up.
type keyNamer struct {
	renumber bool
	debug    bool
	bwd      opCounts // backward entries seen per op
}

// opCounts counts op names in memory outside the collected heap
// (printparse/offheap) that grows by about 24 bytes per name (a file has
// about one op per module): hashes of the name (96 bits: the table's
// 32-bit tag and a second 64-bit hash; two names would share a count only
// if all agreed, odds of 2^-96 per pair) and its count.
type opCounts struct {
	seed, seed2 maphash.Seed
	h2          offheap.List[uint64]
	counts      offheap.List[int32]
	index       tagTable
}

// release frees the counts; they start again from nothing.
func (c *opCounts) release() {
	c.h2.Release()
	c.counts.Release()
	c.index.release()
}

// next returns how many times name was counted before, and counts it.
func (c *opCounts) next(name string) int {
	if c.counts.Len() == 0 {
		c.seed, c.seed2 = maphash.MakeSeed(), maphash.MakeSeed()
		c.index.offHeap = true
	}
	h, h2 := maphash.String(c.seed, name), maphash.String(c.seed2, name)
	k := -1
	c.index.find(h, func(n uint32) bool {
		if c.h2.At(int(n)) == h2 {
			k = int(n)
			return false
		}
		return true
	})
	if k < 0 {
		c.index.insert(h, uint32(c.counts.Len()))
		c.h2.Add(h2)
		c.counts.Add(1)
		return 0
	}
	n := c.counts.At(k)
	c.counts.Set(k, n+1)
	return int(n)
}

// release frees the namer's counts (see opCounts).
func (k *keyNamer) release() { k.bwd.release() }

func newKeyNamer(renumber, debug bool) *keyNamer {
	return &keyNamer{renumber: renumber && !debug, debug: debug}
}

// entryKey tells how the rows of an entry get their compare keys: the
// row name, or for a renumbered backward entry prefix + the row name with
// every occurrence of the entry name removed.
type entryKey struct {
	prefix     string // the key prefix: the entry name, or the renumbered one
	renumbered bool
	call       int // the renumbered call index
}

// key is the compare key of a row of entry name.
func (k entryKey) key(name, row string) string {
	if !k.renumbered {
		return row
	}
	return k.prefix + strings.ReplaceAll(row, name, "")
}

// setKeys gives the rows of entry name their keys (key), those of a
// renumbered entry in one string when every row is the entry name and a
// suffix without it, as flattened rows are.
func (k entryKey) setKeys(name string, rows []sideRow) {
	if !k.renumbered {
		for i := range rows {
			rows[i].key = rows[i].it.Name
		}
		return
	}
	n := 0
	for i := range rows {
		row := rows[i].it.Name
		if !strings.HasPrefix(row, name) || strings.Contains(row[len(name):], name) {
			for i := range rows {
				rows[i].key = k.key(name, rows[i].it.Name)
			}
			return
		}
		n += len(k.prefix) + len(row) - len(name)
	}
	var b strings.Builder
	b.Grow(n)
	for i := range rows {
		b.WriteString(k.prefix)
		b.WriteString(rows[i].it.Name[len(name):])
	}
	all, at := b.String(), 0
	for i := range rows {
		end := at + len(k.prefix) + len(rows[i].it.Name) - len(name)
		rows[i].key = all[at:end]
		at = end
	}
}

// entryKey registers an entry and returns how its rows are keyed, or ok
// false when msprobe skips the entry.
func (k *keyNamer) entryKey(name string) (entryKey, bool) {
	if k.debug {
		// debug.json names are used as they are
		return entryKey{prefix: name}, name != ""
	}
	op, cd, dir := msprobe.SplitName(name)
	if op == "" {
		return entryKey{}, false
	}
	if !k.renumber || dir != "backward" {
		return entryKey{prefix: name}, true
	}
	return renumbered(name, op, cd, k.bwd.next(op)), true
}

// renumbered is the entryKey of a backward entry (op, call direction cd)
// that is the n-th of its op: the number in cd replaced by n.
func renumbered(name, op, cd string, n int) entryKey {
	i := strings.LastIndexByte(cd, '.')
	if i < 0 {
		return entryKey{prefix: name}
	}
	head, tail := cd[:i], cd[i+1:]
	hd, td := msprobe.IsDigits(head), msprobe.IsDigits(tail)
	if !hd && !td {
		return entryKey{prefix: name}
	}
	var buf [64]byte
	b := append(buf[:0], op...)
	b = append(b, '.')
	if hd {
		b = strconv.AppendInt(b, int64(n), 10)
	} else {
		b = append(b, head...)
	}
	b = append(b, '.')
	if td {
		b = strconv.AppendInt(b, int64(n), 10)
	} else {
		b = append(b, tail...)
	}
	return entryKey{prefix: string(b), renumbered: true, call: n}
}

// renameAPI is msprobe's fuzzy-match name (Match.rename_api): the last
// dot-part before the first "forward" (or "backward") is dropped, so
// call indices are ignored (for modules it drops the class name).
func renameAPI(name string) string { return string(appendRenameAPI(nil, name)) }

// appendRenameAPI appends renameAPI(name) to dst.
func appendRenameAPI(dst []byte, name string) []byte {
	dir := "forward"
	i := strings.Index(name, dir)
	if i < 0 {
		dir = "backward"
		if i = strings.Index(name, dir); i < 0 {
			return append(dst, name...)
		}
	}
	head, inOut := name[:i], name[i+len(dir):]
	if j := strings.Index(inOut, dir); j >= 0 {
		inOut = inOut[:j] // Python's split: the piece up to the next one
	}
	for range 2 { // head.rsplit(".", 2)[0]
		k := strings.LastIndexByte(head, '.')
		if k < 0 {
			break
		}
		head = head[:k]
	}
	dst = append(dst, head...)
	dst = append(dst, '.')
	dst = append(dst, dir...)
	return append(dst, inOut...)
}
