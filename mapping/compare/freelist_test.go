package compare

import "testing"

func TestCapClass(t *testing.T) {
	for _, c := range []struct{ n, class, cap int }{
		{0, 0, 2}, {1, 0, 2}, {2, 0, 2}, {3, 1, 4}, {4, 1, 4}, {5, 2, 8}, {1000, 9, 1024},
		{1024, 9, 1024}, {1025, 10, 2048}, {minCap << (freeClasses - 1), freeClasses - 1, minCap << (freeClasses - 1)},
		{minCap<<(freeClasses-1) + 1, freeClasses, minCap<<(freeClasses-1) + 1},
	} {
		if got := capClass(c.n); got != c.class {
			t.Errorf("capClass(%d) = %d, want %d", c.n, got, c.class)
		}
		if got := classCap(c.n); got != c.cap {
			t.Errorf("classCap(%d) = %d, want %d", c.n, got, c.cap)
		}
	}
}

func TestFreeList(t *testing.T) {
	type buf struct{ b []int }
	mk := func(c int) *buf { return &buf{make([]int, 0, c)} }
	for _, c := range []struct {
		name  string
		give  []int // capacities given, in order
		limit int
		take  int
		want  int // capacity taken, 0 for none
	}{
		{"empty", nil, 4, 5, 0},
		{"exact class", []int{8, 16, 32}, 4, 12, 16},
		{"a larger class when its own is empty", []int{8, 64}, 4, 12, 64},
		{"never a smaller buffer", []int{8, 16}, 4, 17, 0},
		{"odd capacity kept in the class it holds", []int{24}, 4, 17, 0},
		{"odd capacity serves its floor class", []int{24}, 4, 16, 24},
		{"the latest of a class first", []int{32, 40}, 4, 32, 40},
		{"at most limit kept", []int{8, 8, 64}, 2, 9, 0},
		{"too small to keep", []int{1}, 4, 1, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			var l freeList[*buf]
			for _, g := range c.give {
				l.give(mk(g), g, c.limit)
			}
			b, ok := l.take(c.take)
			switch {
			case c.want == 0 && ok:
				t.Fatalf("take(%d) = capacity %d, want none", c.take, cap(b.b))
			case c.want != 0 && !ok:
				t.Fatalf("take(%d) found none, want capacity %d", c.take, c.want)
			case ok && cap(b.b) != c.want:
				t.Fatalf("take(%d) = capacity %d, want %d", c.take, cap(b.b), c.want)
			case ok && cap(b.b) < c.take:
				t.Fatalf("take(%d) = capacity %d: too small", c.take, cap(b.b))
			}
			if kept := len(c.give); ok && l.n != min(kept, c.limit)-1 && c.name != "too small to keep" {
				t.Errorf("%d kept after take, want %d", l.n, min(kept, c.limit)-1)
			}
		})
	}
}
