package compare

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"unsafe"
)

// xlsxSpool keeps rows of an xlsx table in a file until the sheets they
// go to are known (XLSXSink): the writer's batches (xlsxBatch) as they
// are, each its slices' lengths, then their bytes. The file is removed
// as soon as it is open where the system allows it (Unix: nothing of it
// outlives the process), else when closed.
type xlsxSpool struct {
	f    *os.File
	w    *bufio.Writer
	path string // still to remove ("" once removed)
}

// newXLSXSpool creates a spool in dir.
func newXLSXSpool(dir string) (*xlsxSpool, error) {
	f, err := os.CreateTemp(dir, ".layermap-xlsx-rows-*")
	if err != nil {
		return nil, fmt.Errorf("xlsx: spool the rows: %w", err)
	}
	sp := &xlsxSpool{f: f, w: bufio.NewWriterSize(f, 1<<20), path: f.Name()}
	if os.Remove(sp.path) == nil {
		sp.path = ""
	}
	return sp, nil
}

// add appends the rows of b from row i on, whose first cell is cell k.
func (sp *xlsxSpool) add(b *xlsxBatch, i, k int) error {
	rows, cells := b.rows[i:], b.cells[k:]
	var head [24]byte
	binary.LittleEndian.PutUint64(head[0:], uint64(len(rows)))
	binary.LittleEndian.PutUint64(head[8:], uint64(len(cells)))
	binary.LittleEndian.PutUint64(head[16:], uint64(len(b.text)))
	for _, p := range [][]byte{head[:], bytesOf(rows), bytesOf(cells), b.text} {
		if _, err := sp.w.Write(p); err != nil {
			return fmt.Errorf("xlsx: spool the rows: %w", err)
		}
	}
	return nil
}

// each reads the batches back in order into b, which holds each during
// the call only.
func (sp *xlsxSpool) each(b *xlsxBatch, fn func(b *xlsxBatch) error) error {
	if err := sp.w.Flush(); err != nil {
		return fmt.Errorf("xlsx: spool the rows: %w", err)
	}
	if _, err := sp.f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("xlsx: read the spooled rows: %w", err)
	}
	r := bufio.NewReaderSize(sp.f, 1<<20)
	for {
		var head [24]byte
		if _, err := io.ReadFull(r, head[:]); err == io.EOF {
			return nil
		} else if err != nil {
			return spoolErr(err)
		}
		n := func(at int) int { return int(min(binary.LittleEndian.Uint64(head[at:]), 1<<40)) }
		b.rows = slices.Grow(b.rows[:0], n(0))[:n(0)]
		b.cells = slices.Grow(b.cells[:0], n(8))[:n(8)]
		b.text = slices.Grow(b.text[:0], n(16))[:n(16)]
		for _, p := range [][]byte{bytesOf(b.rows), bytesOf(b.cells), b.text} {
			if _, err := io.ReadFull(r, p); err != nil {
				return spoolErr(err)
			}
		}
		if !b.valid() {
			return spoolErr(errors.New("a batch that does not hold together"))
		}
		if err := fn(b); err != nil {
			return err
		}
	}
}

// bytesOf is the memory of s, a slice of pointer-free values.
func bytesOf[T any](s []T) []byte {
	var v T
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(v)))
}

// spoolErr is an error reading a batch back: a spool cut short is one.
func spoolErr(err error) error {
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("xlsx: read the spooled rows: %w", err)
}

// close closes the spool and removes its file.
func (sp *xlsxSpool) close() {
	sp.f.Close()
	if sp.path != "" {
		os.Remove(sp.path)
	}
}
