package compare

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/layermap/layermap/printparse/msprobe"
)

// The no-bench downcast (spec §4.6.3) is known only once the whole table
// is: pandas' fillna on msprobe's rows without bench data prints the int
// cells of an NPU statistics column as floats when that column of those
// rows holds numbers only, ints and floats both. Nothing else of the table
// depends on it. A CSV table written without it is patched instead of
// written again: the rows whose Bench Name is N/A (msprobe's own test of
// the subset) get those cells rewritten, every other byte is copied.

// errNoPatch is a cell the patch cannot print as pandas would (an int
// past the float range): the table is written again instead.
var errNoPatch = errors.New("compare: cell cannot be patched")

// npuStatColumns are the NPU statistics columns of a statistics table,
// in the order of the no-bench downcast's flags.
var npuStatColumns = [4]string{"NPU max", "NPU min", "NPU mean", "NPU l2norm"}

// noBenchPatcher is a sink that can apply the no-bench downcast to the
// table it holds.
type noBenchPatcher interface {
	// patchNoBench prints, for each i set in cols, the int cells of NPU
	// statistics column i (max, min, mean, l2norm) of the rows without
	// bench data as floats; false when it could not (the table is then
	// written again).
	patchNoBench(cols [4]bool) (bool, error)
}

// patchTable gives the table written with the assumed whole-column
// effects those of got, when they differ by the no-bench downcast alone
// and the sink can patch it; false when the table must be written again.
func patchTable(sink RowSink, assumed, got artifacts) (bool, error) {
	cols := got.noBenchFloat
	got.noBenchFloat = assumed.noBenchFloat
	if got != assumed || assumed.noBenchFloat != [4]bool{} {
		return false, nil
	}
	p, ok := sink.(noBenchPatcher)
	if !ok {
		return false, nil
	}
	return p.patchNoBench(cols)
}

func (s *CSVSink) patchNoBench(cols [4]bool) (bool, error) {
	p := csvPatch{bench: slices.Index(s.header, "Bench Name")}
	for i, name := range npuStatColumns {
		if !cols[i] {
			continue
		}
		k := slices.Index(s.header, name)
		if k < 0 {
			return false, nil
		}
		p.cols = append(p.cols, k)
	}
	slices.Sort(p.cols)
	if p.bench < 0 || len(p.cols) == 0 || p.bench >= p.cols[0] {
		return false, nil
	}
	if err := s.w.Flush(); err != nil {
		return false, err
	}
	for _, f := range s.parts {
		if err := f.Rewrite(p.rewrite); err != nil {
			if errors.Is(err, errNoPatch) {
				return false, nil
			}
			return false, err
		}
	}
	return true, nil
}

// csvPatch rewrites the int cells of columns cols (ascending) of the rows
// whose Bench Name (column bench) is N/A as floats.
type csvPatch struct {
	bench  int
	cols   []int
	size   int  // the read buffer's first size (tests; default 1 MB)
	header bool // the header line was read
}

// rewrite copies the CSV table r (a header line, then rows; a part of a
// table has its own) to w, patched.
func (p *csvPatch) rewrite(w io.Writer, r io.Reader) error {
	p.header = false
	err := patchStream(w, r, p.size, recordEnd, false, p.row)
	if err == nil && !p.header {
		err = fmt.Errorf("compare: table without a header line")
	}
	return err
}

// row patches one whole CSV record (the header is copied).
func (p *csvPatch) row(rec []byte, put func(at, end int, text []byte) error) error {
	if !p.header {
		p.header = true
		return nil
	}
	at, col := 0, 0
	for _, c := range p.cols {
		for ; col < c; col++ {
			e := fieldEnd(rec, at)
			if col == p.bench && string(rec[at:e]) != "N/A" {
				return nil
			}
			at = e + 1
			if at >= len(rec) {
				return fmt.Errorf("compare: table row with fewer than %d columns", c+1)
			}
		}
		e := fieldEnd(rec, at)
		if err := patchInt(rec[at:e], func(text []byte) error { return put(at, e, text) }); err != nil {
			return err
		}
	}
	return nil
}

// patchInt gives put the float text of t when t is an int literal, as
// Python prints float(int): msprobe's downcast cell (NoBenchCell).
func patchInt(t []byte, put func(text []byte) error) error {
	if !isIntLiteral(string(t)) {
		return nil
	}
	var num [32]byte
	text, ok := NoBenchCell(num[:0], string(t))
	if !ok {
		return errNoPatch
	}
	return put(text)
}

// NoBenchCell appends to dst the text msprobe's no-bench downcast prints
// for text, a cell of an NPU statistics column of a row without bench
// data: Python's repr of float(text) when text is an int literal, else
// text itself. ok is false for an int past the float range, which the
// downcast cannot print (compare writes such a table again). A view that
// counts a cell's bytes counts these, so that what it keeps does not
// depend on whether the downcast applies (NoBenchView).
func NoBenchCell(dst []byte, text string) (_ []byte, ok bool) {
	if !isIntLiteral(text) {
		return append(dst, text...), true
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil {
		return dst, false
	}
	return msprobe.AppendPyFloat(dst, f), true
}

// NoBenchColumns are the columns whose cells the no-bench downcast may
// change: a statistics table's NPU statistics.
func NoBenchColumns() [4]string { return npuStatColumns }

// patchStream copies r to w record by record, reading size bytes at a
// time (1 MB when 0; more for a longer record): end finds the end of the
// record at b[i] (-1 when b holds only part of it), and fix patches each
// whole record, calling put for each span [at, end) of it to replace. At
// the end of r what is left is a record too when openTail, else an
// error.
func patchStream(w io.Writer, r io.Reader, size int, end func(b []byte, i int) int, openTail bool,
	fix func(rec []byte, put func(at, end int, text []byte) error) error) error {
	buf := make([]byte, 0, cmp.Or(size, 1<<20))
	copied, start := 0, 0 // buf[:copied] is written; the record under way starts at start
	put := func(at, end int, text []byte) error {
		if _, err := w.Write(buf[copied : start+at]); err != nil {
			return err
		}
		if _, err := w.Write(text); err != nil {
			return err
		}
		copied = start + end
		return nil
	}
	for {
		n, err := io.ReadFull(r, buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		eof := err == io.EOF || err == io.ErrUnexpectedEOF
		if err != nil && !eof {
			return err
		}
		copied, start = 0, 0
		for {
			e := end(buf, start)
			if e < 0 && eof && openTail && start < len(buf) {
				e = len(buf)
			}
			if e < 0 {
				break
			}
			if err := fix(buf[start:e], put); err != nil {
				return err
			}
			start = e
		}
		if _, err := w.Write(buf[copied:start]); err != nil {
			return err
		}
		rest := copy(buf, buf[start:])
		buf = buf[:rest]
		if eof {
			if rest > 0 {
				return fmt.Errorf("compare: table ends inside a row")
			}
			return nil
		}
		if rest == cap(buf) { // a record longer than the buffer
			buf = slices.Grow(buf, cap(buf))
		}
	}
}

// recordEnd returns the end (past its '\n') of the CSV record starting at
// b[i], or -1 when b holds only part of it. Quotes come in pairs in a
// record, so a '\n' after an even number of them ends it.
func recordEnd(b []byte, i int) int {
	quotes := 0
	for {
		k := bytes.IndexByte(b[i:], '\n')
		if k < 0 {
			return -1
		}
		quotes += bytes.Count(b[i:i+k], []byte{'"'})
		i += k + 1
		if quotes%2 == 0 {
			return i
		}
	}
}

// fieldEnd returns the end of the field starting at rec[i]: the comma
// after it, or the record's final '\n'.
func fieldEnd(rec []byte, i int) int {
	if i < len(rec) && rec[i] == '"' {
		j := i + 1
		for {
			k := bytes.IndexByte(rec[j:], '"')
			if k < 0 {
				return len(rec) - 1
			}
			j += k + 1
			if j < len(rec) && rec[j] == '"' {
				j++
				continue
			}
			return j
		}
	}
	if k := bytes.IndexByte(rec[i:], ','); k >= 0 {
		return i + k
	}
	return len(rec) - 1
}

// patchNoBench has nothing to do: a number cell holds its value, which
// the downcast leaves as it is (24 and 24.0 are one number).
func (s *XLSXSink) patchNoBench([4]bool) (bool, error) { return true, nil }
