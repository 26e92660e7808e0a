package compare

import "testing"

func TestOffsets(t *testing.T) {
	var o offsets
	var want []int64
	off := int64(0)
	for i := 0; i < 5000; i++ {
		off += int64(100 + i%7)
		if i%1500 == 7 {
			off += 5 << 30 // a huge entry before this one
		}
		o.add(off)
		want = append(want, off)
	}
	for i, w := range want {
		if got := o.at(i); got != w {
			t.Fatalf("offset %d: %d, want %d", i, got, w)
		}
	}
}

func TestTagTable(t *testing.T) {
	var tt tagTable
	tt.size(3000)
	for i := uint32(0); i < 10000; i++ {
		tt.insert(uint64(i%97)<<40|uint64(i)<<32, i) // many equal tags
	}
	for i := uint32(0); i < 10000; i += 37 {
		found := false
		tt.find(uint64(i%97)<<40|uint64(i)<<32, func(n uint32) bool {
			found = found || n == i
			return true
		})
		if !found {
			t.Fatalf("%d not found", i)
		}
	}
}
