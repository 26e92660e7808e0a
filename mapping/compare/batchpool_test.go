package compare

import "testing"

func TestBatchPool(t *testing.T) {
	p := newBatchPool()
	b := p.get()
	if len(b) != 0 || cap(b) < npuBatch {
		t.Fatalf("new batch: len %d cap %d", len(b), cap(b))
	}
	b = append(b, npuEntry{name: "a", rows: make([]sideRow, 1), ahead: &parsedEntry{}, isAhead: true})
	p.put(b)
	if b[0].name != "" || b[0].rows != nil || b[0].ahead != nil || b[0].isAhead {
		t.Errorf("put kept %+v", b[0])
	}
	if r := p.get(); len(r) != 0 || &r[:1][0] != &b[0] {
		t.Errorf("get did not return the batch put back")
	}
	for range 2 * batchesKept { // a full pool drops what it is given
		p.put(make([]npuEntry, 1, npuBatch))
	}
	if len(p) != batchesKept {
		t.Errorf("pool keeps %d batches, want %d", len(p), batchesKept)
	}
	var none batchPool // recycles nothing
	none.put(none.get())
	if b := none.get(); len(b) != 0 || cap(b) < npuBatch {
		t.Errorf("nil pool batch: len %d cap %d", len(b), cap(b))
	}
}
