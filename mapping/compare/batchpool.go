package compare

// batchPool recycles the batches of entries on their way to the join:
// the stage that empties a batch puts it back, the one that fills batches
// takes one. An empty pool makes a batch, a full one drops it; a nil pool
// recycles nothing.
type batchPool chan []npuEntry

// batchesKept bounds the batches a pool keeps: about those in flight
// between the NPU stream, the lookahead and the join.
const batchesKept = 16

func newBatchPool() batchPool { return make(batchPool, batchesKept) }

// get returns an empty batch.
func (p batchPool) get() []npuEntry {
	select {
	case b := <-p:
		return b
	default:
		return make([]npuEntry, 0, npuBatch)
	}
}

// put takes back b, emptied of what it points to.
func (p batchPool) put(b []npuEntry) {
	clear(b)
	select {
	case p <- b[:0]:
	default:
	}
}

// sendBatch hands b on through out; false once stop is closed. It tries
// first without waiting, which is cheaper than the select with stop.
func sendBatch(out chan<- []npuEntry, b []npuEntry, stop <-chan struct{}) bool {
	select {
	case out <- b:
		return true
	default:
	}
	select {
	case out <- b:
		return true
	case <-stop:
		return false
	}
}
