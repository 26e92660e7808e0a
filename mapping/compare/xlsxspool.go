package compare

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"unsafe"
)

// xlsxSpool keeps rows of an xlsx table in a file until the sheets they
// go to are known (XLSXSink). A row is its color, its cell count, and per
// cell a flags byte (xlsxNum, xlsxBool), the number's bits when it is one,
// and the text's length and bytes. The file is removed as soon as it is
// open where the system allows it (Unix: nothing of it outlives the
// process), else when closed.
type xlsxSpool struct {
	f       *os.File
	w       *bufio.Writer
	path    string // still to remove ("" once removed)
	scratch []byte
}

// The flags of a spooled cell: Cell.Num and Cell.Bool.
const (
	xlsxNum = 1 << iota
	xlsxBool
)

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

// add appends one row.
func (sp *xlsxSpool) add(cells []Cell, color Color) error {
	b := append(sp.scratch[:0], byte(color))
	b = binary.AppendUvarint(b, uint64(len(cells)))
	for _, c := range cells {
		var flags byte
		if c.Num {
			flags |= xlsxNum
		}
		if c.Bool {
			flags |= xlsxBool
		}
		b = append(b, flags)
		if c.Num {
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(c.Val))
		}
		b = binary.AppendUvarint(b, uint64(len(c.Text)))
		b = append(b, c.Text...)
	}
	sp.scratch = b
	if _, err := sp.w.Write(b); err != nil {
		return fmt.Errorf("xlsx: spool the rows: %w", err)
	}
	return nil
}

// each reads the rows back in order. The cells' texts are valid during
// the call only.
func (sp *xlsxSpool) each(fn func(cells []Cell, color Color) error) error {
	if err := sp.w.Flush(); err != nil {
		return fmt.Errorf("xlsx: spool the rows: %w", err)
	}
	if _, err := sp.f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("xlsx: read the spooled rows: %w", err)
	}
	r := bufio.NewReaderSize(sp.f, 1<<20)
	var cells []Cell
	var text []byte
	var offs []int
	for {
		color, err := r.ReadByte()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("xlsx: read the spooled rows: %w", err)
		}
		n, err := binary.ReadUvarint(r)
		if err != nil {
			return spoolErr(err)
		}
		cells, text, offs = cells[:0], text[:0], offs[:0]
		for range n {
			flags, err := r.ReadByte()
			if err != nil {
				return spoolErr(err)
			}
			c := Cell{Num: flags&xlsxNum != 0, Bool: flags&xlsxBool != 0}
			if c.Num {
				var v [8]byte
				if _, err := io.ReadFull(r, v[:]); err != nil {
					return spoolErr(err)
				}
				c.Val = math.Float64frombits(binary.LittleEndian.Uint64(v[:]))
			}
			size, err := binary.ReadUvarint(r)
			if err != nil {
				return spoolErr(err)
			}
			at := len(text)
			offs = append(offs, at)
			text = slices.Grow(text, int(size))[:at+int(size)]
			if _, err := io.ReadFull(r, text[at:]); err != nil {
				return spoolErr(err)
			}
			cells = append(cells, c)
		}
		offs = append(offs, len(text))
		for i := range cells {
			// read during the call only (excelize copies what it writes)
			cells[i].Text = unsafe.String(unsafe.SliceData(text[offs[i]:]), offs[i+1]-offs[i])
		}
		if err := fn(cells, Color(color)); err != nil {
			return err
		}
	}
}

// spoolErr is an error reading a row back: a spool cut short is one.
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
