package output

import "io"

// Writer buffers like bufio.Writer, but a full buffer is written by
// another goroutine while the caller fills the next one: the cost of the
// write (the system call, the kernel's copy) leaves the goroutine that
// makes the output. At most one write is in flight, so the data reach the
// underlying writer in order; a write's error is returned by a later
// Write or by Flush.
type Writer struct {
	w        io.Writer
	buf      []byte
	spare    []byte     // the other buffer; being written while inflight is set
	inflight chan error // the result of the write in flight, nil for none
	err      error
}

// defaultSize is the buffers' size when NewWriter is given none.
const defaultSize = 64 << 10

// NewWriter returns a Writer to w with two buffers of size bytes (64 KB
// when size is not positive).
func NewWriter(w io.Writer, size int) *Writer {
	if size <= 0 {
		size = defaultSize
	}
	return &Writer{w: w, buf: make([]byte, 0, size), spare: make([]byte, 0, size)}
}

// Write copies p into the buffer, handing full buffers to the writing
// goroutine.
func (b *Writer) Write(p []byte) (int, error) {
	n := 0
	for {
		if b.err != nil {
			return n, b.err
		}
		if len(p) == 0 {
			return n, nil
		}
		if len(b.buf) == cap(b.buf) {
			b.handOff()
			continue
		}
		k := copy(b.buf[len(b.buf):cap(b.buf)], p)
		b.buf = b.buf[:len(b.buf)+k]
		p = p[k:]
		n += k
	}
}

// Tail is the free end of the buffer, for the caller to append data to
// in place and give to Commit: an empty slice with room for n bytes
// (the buffer's size when n is larger); a buffer with less room left is
// handed off first.
func (b *Writer) Tail(n int) []byte {
	if cap(b.buf)-len(b.buf) < min(n, cap(b.buf)) && b.err == nil {
		b.handOff()
	}
	return b.buf[len(b.buf):len(b.buf)]
}

// Commit writes p, which is Tail's slice with data appended: when it is
// still in the buffer's memory (it did not outgrow the room) it is kept
// where it is, else it is copied like Write's.
func (b *Writer) Commit(p []byte) (int, error) {
	free := b.buf[len(b.buf):cap(b.buf)]
	if b.err != nil || len(p) == 0 || len(p) > len(free) || &p[0] != &free[0] {
		return b.Write(p)
	}
	b.buf = b.buf[:len(b.buf)+len(p)]
	return len(p), nil
}

// handOff waits for the write in flight, then starts writing the buffer
// and makes the spare the buffer.
func (b *Writer) handOff() {
	b.wait()
	if b.err != nil {
		return
	}
	full, w := b.buf, b.w
	done := make(chan error, 1)
	go func() {
		n, err := w.Write(full)
		if err == nil && n < len(full) {
			err = io.ErrShortWrite
		}
		done <- err
	}()
	b.inflight = done
	b.buf, b.spare = b.spare[:0], full
}

// wait waits for the write in flight, keeping its error.
func (b *Writer) wait() {
	if b.inflight == nil {
		return
	}
	if err := <-b.inflight; err != nil && b.err == nil {
		b.err = err
	}
	b.inflight = nil
}

// Flush writes what is buffered and waits until every write is done.
func (b *Writer) Flush() error {
	if len(b.buf) > 0 && b.err == nil {
		b.handOff()
	}
	b.wait()
	return b.err
}

// Reset waits for the write in flight, discards what is buffered and any
// error, and makes w the underlying writer.
func (b *Writer) Reset(w io.Writer) {
	b.wait()
	b.w, b.buf, b.err = w, b.buf[:0], nil
}
