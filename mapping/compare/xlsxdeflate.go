package compare

import (
	"bytes"
	"errors"
	"io"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/klauspost/compress/flate"
)

// deflateBlock is how much of a zip entry one CPU compresses at a time;
// deflateWorkers bounds the CPUs, whose blocks (three each, in and out)
// add to the peak memory.
const (
	deflateBlock   = 1 << 20
	deflateWorkers = 4
)

// parallelDeflate compresses a zip entry as one deflate stream on up to
// deflateWorkers CPUs: the entry is cut into blocks, each compressed
// alone and ended with a sync flush (a byte-aligned empty stored block),
// the last one with the final block, and written in order. A block
// back-references nothing of the one before, which costs a little of the
// ratio. An entry of one block is compressed as a single writer would.
type parallelDeflate struct {
	out     io.Writer
	cur     []byte
	pending chan chan deflated // the blocks under way, in order
	done    chan error         // the writer of the blocks, when it ends
	work    chan deflateJob
	free    chan []byte        // blocks written, for the next ones
	outs    chan *bytes.Buffer // their compressed forms, likewise
	workers sync.WaitGroup
	n       int                   // workers (deflateWorkers, fewer with fewer CPUs)
	failed  atomic.Pointer[error] // the first error writing out, for Write to stop on
	err     error                 // the entry's error, once Write or Close met one
	closed  bool
}

type deflateJob struct {
	in    []byte
	final bool
	res   chan deflated
}

type deflated struct {
	out *bytes.Buffer
	in  []byte // given back for the next block
	err error
}

func newParallelDeflate(out io.Writer) *parallelDeflate {
	return &parallelDeflate{out: out, n: min(max(1, runtime.GOMAXPROCS(0)), deflateWorkers)}
}

var errDeflateClosed = errors.New("compare: deflate: write after close")

// Write keeps p in the block under way and hands full blocks on.
func (d *parallelDeflate) Write(p []byte) (int, error) {
	if d.closed {
		return 0, errDeflateClosed
	}
	n := len(p)
	for len(p) > 0 {
		if err := d.failed.Load(); err != nil && d.err == nil {
			d.err = *err // the file failed: the rest is not compressed for nothing
		}
		if d.err != nil {
			return 0, d.err
		}
		if d.cur == nil {
			select {
			case b := <-d.free:
				d.cur = b[:0]
			default:
				d.cur = make([]byte, 0, deflateBlock)
			}
		}
		k := copy(d.cur[len(d.cur):cap(d.cur)], p)
		d.cur, p = d.cur[:len(d.cur)+k], p[k:]
		if len(d.cur) == cap(d.cur) && len(p) > 0 {
			d.hand(false)
		}
	}
	return n, nil
}

// hand hands the block under way on to the workers, starting them with
// the first.
func (d *parallelDeflate) hand(final bool) {
	if d.work == nil {
		n := d.n
		d.work = make(chan deflateJob, n)
		d.pending = make(chan chan deflated, 2*n)
		d.done = make(chan error, 1)
		d.free = make(chan []byte, 3*n+2) // every block in flight
		d.outs = make(chan *bytes.Buffer, 3*n+2)
		for range n {
			d.workers.Go(d.compress)
		}
		go d.writeOut()
	}
	res := make(chan deflated, 1)
	d.pending <- res
	d.work <- deflateJob{in: d.cur, final: final, res: res}
	d.cur = nil
}

// compress compresses blocks (a worker).
func (d *parallelDeflate) compress() {
	var w *flate.Writer
	for j := range d.work {
		var buf *bytes.Buffer
		select {
		case buf = <-d.outs:
			buf.Reset()
		default:
			buf = new(bytes.Buffer)
		}
		var err error
		w, err = deflateTo(w, buf, j.in, j.final)
		j.res <- deflated{out: buf, in: j.in, err: err}
	}
}

// deflateTo compresses in to out at best speed with w (made when nil,
// else reset), ending with the final block when final, else a sync
// flush.
func deflateTo(w *flate.Writer, out io.Writer, in []byte, final bool) (*flate.Writer, error) {
	if w == nil {
		var err error
		if w, err = flate.NewWriter(out, flate.BestSpeed); err != nil {
			return nil, err
		}
	} else {
		w.Reset(out)
	}
	if _, err := w.Write(in); err != nil {
		return w, err
	}
	if final {
		return w, w.Close()
	}
	return w, w.Flush()
}

// writeOut writes the compressed blocks in order.
func (d *parallelDeflate) writeOut() {
	var err error
	for res := range d.pending {
		r := <-res
		if err == nil {
			if err = r.err; err == nil {
				_, err = d.out.Write(r.out.Bytes())
			}
			if err != nil {
				e := err
				d.failed.Store(&e)
			}
		}
		select {
		case d.free <- r.in:
		default:
		}
		select {
		case d.outs <- r.out:
		default:
		}
	}
	d.done <- err
}

// Close compresses the last block and waits for all to be written.
func (d *parallelDeflate) Close() error {
	if d.closed {
		return d.err
	}
	d.closed = true
	switch {
	case d.err != nil:
		if d.work != nil {
			d.stop() // the blocks under way are let go
		}
	case d.work == nil:
		// One block: compressed here, as a single writer would.
		_, d.err = deflateTo(nil, d.out, d.cur, true)
	default:
		d.hand(true)
		d.err = d.stop()
	}
	return d.err
}

// stop ends the workers and the writer once the blocks handed on are
// done, and returns the writer's error.
func (d *parallelDeflate) stop() error {
	close(d.work)
	close(d.pending)
	d.workers.Wait()
	return <-d.done
}
