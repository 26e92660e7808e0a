package nametable

import (
	"fmt"
	"testing"

	_ "github.com/layermap/layermap/printparse/testkit"
)

// TestTable: the table answers as a map does, a later set of a name
// winning, also when every name falls in one bucket with first hashes
// that collide (the second hash tells the names apart).
func TestTable(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		n    int
		mask uint64
	}{{0, ^uint64(0)}, {1, ^uint64(0)}, {2, ^uint64(0)}, {1000, ^uint64(0)}, {300_000, ^uint64(0)}, {300, 0}, {500, 6}, {2000, 0xff}} {
		t.Run(fmt.Sprintf("n=%d,mask=%x", tt.n, tt.mask), func(t *testing.T) {
			t.Parallel()
			x := newMasked(tt.mask)
			want := map[string]int32{}
			name := func(i int) string { return fmt.Sprintf("Module.layers.%d.mlp.Linear.forward.%d", i%97, i) }
			for i := range tt.n {
				if i%3 == 0 {
					x.SetBytes([]byte(name(i)), int32(i))
				} else {
					x.Set(name(i), int32(i))
				}
				want[name(i)] = int32(i)
			}
			for i := 0; i < tt.n; i += 7 { // set again: the last set wins
				x.Set(name(i), -int32(i))
				want[name(i)] = -int32(i)
			}
			x.Done()
			if x.Len() != len(want) {
				t.Fatalf("Len = %d, want %d", x.Len(), len(want))
			}
			for n, v := range want {
				if got, ok := x.Get(n); !ok || got != v {
					t.Fatalf("Get(%q) = %d, %v; want %d", n, got, ok, v)
				}
				if got, ok := x.Get(n + "x"); ok {
					t.Fatalf("Get(%q) = %d, want none", n+"x", got)
				}
			}
			seen := map[int32]int{}
			x.Each(func(id int32) { seen[id]++ })
			for _, v := range want {
				if seen[v]--; seen[v] < 0 {
					t.Fatalf("Each: id %d missing", v)
				}
			}
			x.Release()
			if _, ok := x.Get(name(0)); ok || x.Len() != 0 {
				t.Fatal("names left after Release")
			}
			x.Release() // twice is harmless
		})
	}
	var none *Table
	none.Release()
	none.Each(func(int32) { t.Fatal("a nil Table has names") })
	if _, ok := none.Get("a"); ok || none.Len() != 0 {
		t.Fatal("a nil Table has names")
	}
}
