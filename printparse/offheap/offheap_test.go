package offheap

import (
	"testing"

	_ "github.com/layermap/layermap/printparse/testkit"
)

func TestMake(t *testing.T) {
	for _, n := range []int{0, 1, 100, Min/8 - 1, Min / 8, 3*Min/8 + 5} {
		s, free := Make[uint64](n)
		if len(s) != n {
			t.Fatalf("Make(%d): len %d", n, len(s))
		}
		for i := range s {
			if s[i] != 0 {
				t.Fatalf("Make(%d)[%d] = %d, want 0", n, i, s[i])
			}
			s[i] = uint64(i)
		}
		for i := range s {
			if s[i] != uint64(i) {
				t.Fatalf("Make(%d)[%d] = %d", n, i, s[i])
			}
		}
		free()
		free() // a second call does nothing
	}
	type pair struct {
		a uint64
		b uint32
	}
	s, free := Make[pair](Min/16 + 1)
	s[len(s)-1] = pair{1, 2}
	if s[len(s)-1] != (pair{1, 2}) {
		t.Fatal("struct element lost")
	}
	free()
}

func TestList(t *testing.T) {
	var l List[uint32]
	n := 3*chunkLen[uint32]() + 7
	for i := range n {
		l.Add(uint32(i * 3))
	}
	if l.Len() != n {
		t.Fatalf("Len %d, want %d", l.Len(), n)
	}
	for i := range n {
		if l.At(i) != uint32(i*3) {
			t.Fatalf("At(%d) = %d", i, l.At(i))
		}
	}
	dst := make([]uint32, n)
	l.MoveTo(dst)
	for i := range n {
		if dst[i] != uint32(i*3) {
			t.Fatalf("MoveTo: [%d] = %d", i, dst[i])
		}
	}
	if l.Len() != 0 {
		t.Fatal("not empty after Release")
	}
	l.Add(5)
	if l.At(0) != 5 {
		t.Fatal("reuse after Release")
	}
	l.Release()

	// Table: the values in one table of their exact size
	for _, m := range []int{0, 1, 2*chunkLen[uint32]() + 3} {
		for i := range m {
			l.Add(uint32(i * 3))
		}
		tab, free := l.Table()
		if len(tab) != m || l.Len() != 0 {
			t.Fatalf("Table of %d values: %d, list left %d", m, len(tab), l.Len())
		}
		for i, v := range tab {
			if v != uint32(i*3) {
				t.Fatalf("Table of %d values: [%d] = %d", m, i, v)
			}
		}
		free()
	}
}
