package compare

// handOff gives batches of work, in order, to a goroutine of its own,
// started with the first: the caller fills a batch while the goroutine
// works through those before it, and the batches it is done with come
// back to be filled again. Its queue bounds the batches handed over and
// not yet worked through.
type handOff[B any] struct {
	work  func(B) error // on each batch, until one fails
	end   func() error  // after the last batch, unless work failed; nil: nothing
	fresh func() B      // a new empty batch
	empty func(B) B     // a batch emptied to be filled again

	queue  chan B
	free   chan B     // batches back from the goroutine
	failed chan error // its first error, as soon as it has one
	done   chan error // its first error, or nil, once queue is closed
	err    error      // the first error the caller has seen
}

// give hands b over and returns an empty batch to fill, when more are to
// come; the error is the goroutine's first, once it has one (b is then
// emptied instead, and given back).
func (h *handOff[B]) give(b B, more bool) (B, error) {
	if h.err != nil {
		return h.empty(b), h.err
	}
	if h.queue == nil {
		h.queue, h.free = make(chan B, 2), make(chan B, 4)
		h.failed, h.done = make(chan error, 1), make(chan error, 1)
		go func() { h.done <- h.run() }()
	}
	h.queue <- b
	var next B
	if more {
		select {
		case n := <-h.free:
			next = h.empty(n)
		default:
			next = h.fresh()
		}
	}
	select {
	case h.err = <-h.failed:
	default:
	}
	return next, h.err
}

// run is the goroutine: it works through the batches in order, and after
// an error takes the rest without working on them.
func (h *handOff[B]) run() error {
	var err error
	for b := range h.queue {
		if err == nil {
			if err = h.work(b); err != nil {
				h.failed <- err
			}
		}
		select {
		case h.free <- b:
		default:
		}
	}
	if err != nil || h.end == nil {
		return err
	}
	return h.end()
}

// close closes the queue and waits for the goroutine: its first error,
// or the caller's when it never started. A handOff closed starts afresh
// with the next give, the caller's error kept.
func (h *handOff[B]) close() error {
	if h.queue == nil {
		return h.err
	}
	close(h.queue)
	err := <-h.done
	h.queue = nil
	return err
}
