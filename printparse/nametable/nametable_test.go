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
		n       int
		mask    uint64
		ordered bool
	}{{0, ^uint64(0), false}, {1, ^uint64(0), false}, {2, ^uint64(0), false}, {1000, ^uint64(0), false}, {300_000, ^uint64(0), false}, {300, 0, false}, {500, 6, false}, {2000, 0xff, false},
		{0, ^uint64(0), true}, {1, ^uint64(0), true}, {2, ^uint64(0), true}, {1000, ^uint64(0), true}, {300_000, ^uint64(0), true}, {300, 0, true}, {500, 6, true}, {2000, 0xff, true}} {
		t.Run(fmt.Sprintf("n=%d,mask=%x,ordered=%v", tt.n, tt.mask, tt.ordered), func(t *testing.T) {
			t.Parallel()
			x := newMasked(tt.mask)
			x.ordered = tt.ordered
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
				var c Cursor
				if got, ok := x.Next(&c, n); !ok || got != v {
					t.Fatalf("Next(%q) = %d, %v; want %d", n, got, ok, v)
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

// TestNext: lookups through a cursor answer as Get does in any order:
// the order set, several runs of it interleaved (more than the cursor
// follows), backwards, shuffled, with names set twice and names not set,
// also when all first hashes collide.
func TestNext(t *testing.T) {
	t.Parallel()
	const n = 3000
	name := func(i int) string { return fmt.Sprintf("Module.layers.%d.forward.%d", i%7, i) }
	for _, mask := range []uint64{^uint64(0), 0, 3} {
		for _, ordered := range []bool{true, false} {
			x := newMasked(mask)
			x.ordered = ordered
			want := map[string]int32{}
			for i := range n {
				x.Set(name(i), int32(i))
				want[name(i)] = int32(i)
				if i%11 == 0 { // set again later: the last set wins
					x.Set(name(i/2), -int32(i))
					want[name(i/2)] = -int32(i)
				}
			}
			x.Done()
			orders := map[string][]int{}
			for i := range n + 10 {
				orders["set"] = append(orders["set"], i)
				orders["backwards"] = append(orders["backwards"], n+9-i)
			}
			for _, runs := range []int{2, 16, 17, 40} {
				k := fmt.Sprintf("%d runs", runs)
				for i := range n / runs { // run r is names r*n/runs on
					for r := range runs {
						orders[k] = append(orders[k], r*(n/runs)+i)
					}
				}
			}
			for i := range n {
				orders["shuffled"] = append(orders["shuffled"], (i*7919+13)%(n+10))
			}
			for o, idx := range orders {
				var c Cursor
				for _, i := range idx {
					nm := name(i)
					w, wok := want[nm]
					if got, ok := x.Next(&c, nm); ok != wok || got != w {
						t.Fatalf("mask %x ordered %v order %s: Next(%q) = %d, %v; want %d, %v", mask, ordered, o, nm, got, ok, w, wok)
					}
				}
			}
			x.Release()
			var c Cursor
			if _, ok := x.Next(&c, name(1)); ok {
				t.Fatal("names left after Release")
			}
		}
	}
	// Hostile input: one name set many times, and two names alternating,
	// each in one bucket; Done is linear in a name's repeats.
	for _, names := range [][]string{{"same"}, {"a", "b"}} {
		const sets = 200000
		x := NewOrdered()
		for i := range sets {
			x.Set(names[i%len(names)], int32(i))
		}
		x.Done()
		var c Cursor
		for k, nm := range names {
			w := int32(sets - len(names) + k)
			if got, ok := x.Next(&c, nm); !ok || got != w {
				t.Fatalf("%d repeats: Next(%q) = %d, %v; want %d", sets, nm, got, ok, w)
			}
			if got, ok := x.Get(nm); !ok || got != w {
				t.Fatalf("%d repeats: Get(%q) = %d, %v; want %d", sets, nm, got, ok, w)
			}
		}
		x.Release()
	}
	var none *Table
	var c Cursor
	if _, ok := none.Next(&c, "a"); ok {
		t.Fatal("a nil Table has names")
	}
}
