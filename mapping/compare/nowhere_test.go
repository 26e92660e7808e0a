package compare

import (
	"fmt"
	"testing"

	"github.com/layermap/layermap/printparse/msprobe"
)

// TestSentNowhere: kept by member or by name, the entries give the rule
// they were added under, and none for the others; a row built rather
// than read has no member, so only its name finds it; entries of one
// rule one after another make one run.
func TestSentNowhere(t *testing.T) {
	t.Parallel()
	added := map[int]int32{0: 0, 1: 0, 2: 1, 5: 1, 6: 1, 7: 2, 9: 0, 1000: 3}
	name := func(i int) string { return fmt.Sprintf("Tensor.add.%d.forward", i) }
	for _, byPosition := range []bool{true, false} {
		s := &sentNowhere{}
		for i := range 1002 {
			if r, ok := added[i]; ok {
				pos := i
				if !byPosition {
					pos = -1
				}
				s.add(pos, name(i), r)
			}
		}
		s.done()
		if byPosition && len(s.at) != 6 {
			t.Errorf("%d runs, want 6: %v", len(s.at), s.at)
		}
		for i := -1; i < 1002; i++ {
			row := &sideRow{it: msprobe.Item{Entry: name(i)}, pos: int32(i) + 1}
			r, ok := s.rule(row)
			want, wok := added[i]
			if ok != wok || r != want {
				t.Errorf("by position %v: entry %d: rule %d, %v; want %d, %v", byPosition, i, r, ok, want, wok)
			}
		}
		// a row built rather than read (no member) of an entry sent
		// nowhere: found by its name only
		if _, ok := s.rule(&sideRow{it: msprobe.Item{Entry: name(2)}}); ok == byPosition {
			t.Errorf("by position %v: a row without a member found %v", byPosition, ok)
		}
	}
	var none *sentNowhere
	if _, ok := none.rule(&sideRow{pos: 1}); ok {
		t.Error("a nil sentNowhere found an entry")
	}
	empty := &sentNowhere{}
	empty.done()
	if _, ok := empty.rule(&sideRow{pos: 1, it: msprobe.Item{Entry: name(0)}}); ok {
		t.Error("an empty sentNowhere found an entry")
	}
}
