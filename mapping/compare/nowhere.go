package compare

import (
	"sort"

	"github.com/layermap/layermap/printparse/nametable"
	"github.com/layermap/layermap/printparse/offheap"
)

// sentNowhere maps the NPU entries a layer_mapping rule sends to no bench
// entry to the rule (an index in Config.nowhereRules). Where the api
// mapping gives the entries' msprobe.Entry.Member (the NPU dump's rows
// left to the compare: resolve.Sides.DataMapping), the entries are kept
// as runs of members with one rule (12 bytes a run, outside the heap; a
// rule sends a module's calls nowhere, mostly one after another).
// Otherwise they are kept by name (a nametable: 16 to 20 bytes an entry).
type sentNowhere struct {
	runs   offheap.List[nowhereRun] // by member, ascending
	byName *nametable.Table         // or by name
	at     []nowhereRun             // the runs, once done
	free   func()                   // of at
}

// nowhereRun is the members [from, to) sent nowhere by one rule.
type nowhereRun struct{ from, to, rule int32 }

// add records the entry at member pos (-1: not known), named name, under
// rule; the members come in ascending order, all known or none.
func (s *sentNowhere) add(pos int, name string, rule int32) {
	if pos < 0 {
		if s.byName == nil {
			s.byName = nametable.New()
		}
		s.byName.Set(name, rule)
		return
	}
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

// done makes the entries ready for lookups.
func (s *sentNowhere) done() {
	if s.byName != nil {
		s.byName.Done()
	}
	s.at, s.free = s.runs.Table()
	offheap.Cleanup(s, s.free)
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
