package compare

import (
	"sort"

	"github.com/layermap/layermap/printparse/nametable"
	"github.com/layermap/layermap/printparse/offheap"
)

// sentNowhere maps the NPU entries a layer_mapping rule sends to no bench
// entry to the rule (an index in Config.nowhereRules). Where the data
// mapping is deferred, the NPU items' positions are the entries'
// msprobe.Entry.Member: the entries are kept as runs of positions with
// one rule (12 bytes a run, outside the heap; a rule sends a module's
// calls nowhere, mostly one after another). Otherwise they are kept by
// name (a nametable: 16 to 20 bytes an entry). Both are built while the
// api mapping is made; keep drops the one not needed.
type sentNowhere struct {
	runs   offheap.List[nowhereRun] // by position, ascending
	byName *nametable.Table         // nil once dropped
	at     []nowhereRun             // the runs, once kept
	free   func()                   // of at
}

// nowhereRun is the positions [from, to) sent nowhere by one rule.
type nowhereRun struct{ from, to, rule int32 }

func newSentNowhere() *sentNowhere { return &sentNowhere{byName: nametable.New()} }

// add records the entry at position pos, named name, under rule; the
// positions come in ascending order.
func (s *sentNowhere) add(pos int, name string, rule int32) {
	s.byName.Set(name, rule)
	p := int32(pos)
	if n := s.runs.Len(); n > 0 {
		if r := s.runs.At(n - 1); r.to == p && r.rule == rule {
			r.to++
			s.runs.Set(n-1, r)
			return
		}
	}
	s.runs.Add(nowhereRun{p, p + 1, rule})
}

// keep makes the entries ready for lookups, by position or by name.
func (s *sentNowhere) keep(byPosition bool) {
	if !byPosition {
		s.runs.Release()
		s.byName.Done()
		return
	}
	s.byName.Release()
	s.byName = nil
	s.at, s.free = offheap.Make[nowhereRun](s.runs.Len())
	offheap.Cleanup(s, s.free)
	s.runs.MoveTo(s.at)
}

// rule gives the rule that sent the NPU entry of row n nowhere.
func (s *sentNowhere) rule(n *sideRow) (int32, bool) {
	if s == nil {
		return 0, false
	}
	if s.byName != nil {
		return s.byName.Get(n.it.Entry)
	}
	p := n.member()
	if p < 0 {
		return 0, false
	}
	k := sort.Search(len(s.at), func(k int) bool { return int(s.at[k].to) > p })
	if k < len(s.at) && int(s.at[k].from) <= p {
		return s.at[k].rule, true
	}
	return 0, false
}
