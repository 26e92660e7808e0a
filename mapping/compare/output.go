package compare

import (
	"archive/zip"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unsafe"

	"github.com/layermap/layermap/mapping/output"
	"github.com/xuri/excelize/v2"
)

// MaxCSVRows is how many rows msprobe puts in one CSV file; longer tables
// are split into name_part_1.csv, name_part_2.csv, ... each with the
// header (write_df_to_csv, MAX_ROWS_PER_CSV_FILE).
const MaxCSVRows = 1_000_000

// MaxXLSXRows is msprobe's limit on the rows of one sheet
// (MAX_EXCEL_LENGTH): a table of fewer rows is written to sheet Sheet1;
// one of at least as many is cut into the fewest sheets of at most
// MaxXLSXRows rows, part_0, part_1, ..., all of ceil(rows/sheets) rows
// but the last (save_excel): 1,500,000 rows make two sheets of 750,000,
// and a table of exactly MaxXLSXRows rows one sheet part_0.
const MaxXLSXRows = 1_048_500

// xlsxSheets are the sheets of a table of rows rows cut as msprobe cuts
// it at max rows a sheet (see MaxXLSXRows).
type xlsxSheets struct {
	rows, max int
}

// size is the rows of every sheet but the last.
func (x xlsxSheets) size() int {
	if x.rows < x.max {
		return max(x.rows, 1)
	}
	n := (x.rows + x.max - 1) / x.max
	return (x.rows + n - 1) / n
}

// sheet is the sheet of row k and k's row in it (0 for its first).
func (x xlsxSheets) sheet(k int) (sheet, row int) {
	n := x.size()
	return k / n, k % n
}

// name is the name of sheet i.
func (x xlsxSheets) name(i int) string {
	if x.rows < x.max {
		return "Sheet1"
	}
	return fmt.Sprintf("part_%d", i)
}

// outputName is msprobe's result file name: compare_result (or
// debug_compare_result for debug.json) + suffix ("" for files, "_rank0" or
// "_proc2016" for folders) + "_YYYYmmddHHMMSS" + ".csv" or ".xlsx"; the
// output set fills in the time stamp.
func outputName(debug bool, suffix string, xlsx bool) output.Name {
	prefix := "compare_result"
	if debug {
		prefix = "debug_compare_result"
	}
	ext := ".csv"
	if xlsx {
		ext = ".xlsx"
	}
	return output.Name{Prefix: prefix + suffix + "_", Suffix: ext, Stamped: true}
}

// resultMode is msprobe's result file mode; resultDirMode that of the
// output folders it creates (DATA_DIR_AUTHORITY).
const (
	resultMode    = 0o640
	resultDirMode = 0o750
)

// csvField quotes like Python's csv module with QUOTE_MINIMAL: only fields
// holding the delimiter, a quote or a line break.
func appendCSVField[T string | []byte](b []byte, s T) []byte {
	if !needsQuote(s) {
		return append(b, s...)
	}
	b = append(b, '"')
	at := 0 // s[at:] is still to append
	for i := 0; i < len(s); i++ {
		if s[i] == '"' {
			b = append(b, s[at:i+1]...)
			at = i // the quote again, doubled
		}
	}
	return append(append(b, s[at:]...), '"')
}

// needsQuote reports whether s holds a comma, a quote, '\n' or '\r'; it
// tests eight bytes at a time (the names and stacks are long), first for
// any byte up to ',' (the four are below it; names' bytes are above). A
// tail shorter than eight is tested with the last eight bytes.
func needsQuote[T string | []byte](s T) bool {
	n := len(s)
	if n < 8 {
		for i := 0; i < n; i++ {
			if c := s[i]; c <= ',' && (c == ',' || c == '"' || c == '\n' || c == '\r') {
				return true
			}
		}
		return false
	}
	for i := 0; i+8 <= n; i += 8 {
		if quoteWord(word8(s[i : i+8])) {
			return true
		}
	}
	return n%8 != 0 && quoteWord(word8(s[n-8:]))
}

// word8 is the first eight bytes of s, little endian.
func word8[T string | []byte](s T) uint64 {
	_ = s[7] // one bounds check
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// quoteWord reports whether one of w's bytes is a comma, a quote, '\n' or
// '\r'.
func quoteWord(w uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	if (w-ones*(','+1))&^w&highs == 0 {
		return false // no byte below ',' + 1: the common case of names
	}
	c, q, n, r := w^(ones*','), w^(ones*'"'), w^(ones*'\n'), w^(ones*'\r')
	return ((c-ones)&^c|(q-ones)&^q|(n-ones)&^n|(r-ones)&^r)&highs != 0
}

// CSVSink writes msprobe's CSV table into an output set: past
// MaxCSVRows rows it starts another file, and the files are then named
// name_part_1.csv, name_part_2.csv, ... each with the header.
type CSVSink struct {
	set    *output.Set
	dir    string
	name   output.Name
	parts  []*output.File
	w      *output.Writer
	header []string
	rows   int
	line   []byte
}

// NewCSVSink starts a CSV table in set, to be named name in dir.
func NewCSVSink(set *output.Set, dir string, name output.Name) (*CSVSink, error) {
	s := &CSVSink{set: set, dir: dir, name: name}
	if err := s.open(); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *CSVSink) open() error {
	f, err := s.set.Create(s.dir, s.name, resultMode)
	if err != nil {
		return err
	}
	s.parts = append(s.parts, f)
	if s.w == nil {
		s.w = output.NewWriter(f, 1<<18)
	} else {
		s.w.Reset(f)
	}
	return nil
}

func (s *CSVSink) writeLine(cells []string) error {
	s.line = s.line[:0]
	for i, c := range cells {
		if i > 0 {
			s.line = append(s.line, ',')
		}
		s.line = appendCSVField(s.line, c)
	}
	s.line = append(s.line, '\n')
	_, err := s.w.Write(s.line)
	return err
}

// Header writes the column names.
func (s *CSVSink) Header(cols []string) error {
	s.header = cols
	return s.writeLine(cols)
}

// Row writes one row.
func (s *CSVSink) Row(cells []Cell, mark RowMark) error {
	s.line = s.line[:0]
	for i, c := range cells {
		if i > 0 {
			s.line = append(s.line, ',')
		}
		s.line = appendCSVField(s.line, c.Text)
	}
	s.line = append(s.line, '\n')
	return s.Line(s.line, mark)
}

// Line writes one row given as its CSV line.
func (s *CSVSink) Line(line []byte, _ RowMark) error {
	if err := s.nextRow(); err != nil {
		return err
	}
	_, err := s.w.Write(line)
	return err
}

// nextRow counts a row about to be written, starting the next part
// first when the part is full.
func (s *CSVSink) nextRow() error {
	if err := s.nextPart(); err != nil {
		return err
	}
	s.rows++
	return nil
}

// nextPart starts the table's next file, with the header, when the rows
// written fill the one under way.
func (s *CSVSink) nextPart() error {
	if s.rows == 0 || s.rows%MaxCSVRows != 0 {
		return nil
	}
	if err := s.w.Flush(); err != nil {
		return err
	}
	if err := s.open(); err != nil {
		return err
	}
	return s.writeLine(s.header)
}

// lineRoom is the room linesTail asks for: lines longer than that are
// written anyway, copied.
const lineRoom = 64 << 10

// linesTail starts n rows to be rendered in place (a lineBuffer): an
// empty slice at the free end of the table's buffer; false when the rows
// would not all go to one part (each is then given to Line).
func (s *CSVSink) linesTail(n int) ([]byte, bool, error) {
	if s.rows%MaxCSVRows+n > MaxCSVRows {
		return nil, false, nil
	}
	if err := s.nextPart(); err != nil {
		return nil, false, err
	}
	return s.w.Tail(lineRoom), true, nil
}

// putLines writes the n rows appended to linesTail's slice.
func (s *CSVSink) putLines(lines []byte, n int) error {
	s.rows += n
	_, err := s.w.Commit(lines)
	return err
}

// Reset discards the rows written so far.
func (s *CSVSink) Reset() error {
	s.w.Reset(s.parts[0])
	for _, f := range s.parts[1:] {
		f.Drop()
	}
	s.parts, s.rows = s.parts[:1], 0
	return s.parts[0].Truncate()
}

// Rows is the number of rows written.
func (s *CSVSink) Rows() int { return s.rows }

// Finish flushes the table and names its parts; the set's Commit writes
// them.
func (s *CSVSink) Finish() error {
	if err := s.w.Flush(); err != nil {
		return err
	}
	if len(s.parts) > 1 {
		for i, f := range s.parts {
			f.Rename(output.Name{Prefix: s.name.Prefix, Suffix: fmt.Sprintf("_part_%d", i+1) + s.name.Suffix, Stamped: true})
		}
	}
	return nil
}

// Drop removes the table from the set.
func (s *CSVSink) Drop() {
	s.w.Reset(io.Discard) // no write in flight to a dropped file
	for _, f := range s.parts {
		f.Drop()
	}
}

// files are the table's files, in the order written.
func (s *CSVSink) files() []*output.File { return s.parts }

// XLSXSink writes the table as msprobe's --xlsx does (sheet Sheet1, cut
// over part_0, part_1, ... from MaxXLSXRows rows on), with rows filled red
// (FF0000) or yellow (FFFF00) by msprobe's highlight rules (see
// highlight). Numbers are written as numbers, as openpyxl writes them
// (openpyxlNumber); Python bools as booleans; text as text, without the
// CSV's " inf" spelling. The workbook's zip is written straight into its
// file, its memory bounded whatever the table's length.
//
// The rows go to the workbook on a goroutine of their own, in batches
// (handOff): excelize takes longer to write a row than the compare to
// make it. A write's error is returned by a later Row, or by Finish.
//
// Where a row lands depends on the table's length, known at its end: the
// rows the first sheet takes whatever the length (spoolFrom) are written
// as they come, the rest spooled to a file beside the table (xlsxSpool)
// and written once the length is known. Only tables of more than
// MaxXLSXRows/2 rows spool.
type XLSXSink struct {
	out    *output.File
	f      *excelize.File
	zip    *xlsxZip // the workbook's, once excelize writes it
	zip64  int64    // an entry of more bytes is marked zip64 (markZip64)
	sw     *excelize.StreamWriter
	header []string
	max    int         // rows a sheet (MaxXLSXRows; tests lower it)
	rows   int         // rows given to the writer
	cut    *xlsxSheets // the table's sheets, once it ended
	sheet  int         // the sheet sw writes
	spool  *xlsxSpool  // the rows from spoolFrom on, until the table ends
	red    int
	yellow int
	head   int // the header's style
	vals   []any
	cs     []Cell // a row's cells, on the writing goroutine

	batch *xlsxBatch // being filled
	h     handOff[*xlsxBatch]
}

// xlsxBatchRows is how many rows go to the writer at a time.
const xlsxBatchRows = 512

// xlsxBatch holds rows for the writer, their texts in one buffer.
type xlsxBatch struct {
	text  []byte
	cells []xlsxCell
	rows  []xlsxRow
}

type xlsxCell struct {
	off, n       int32 // the text, in text
	num, boolean bool
	val          float64
}

type xlsxRow struct {
	cells int32
	color Color
}

// NewXLSXSink starts an xlsx table in set, to be named name in dir.
func NewXLSXSink(set *output.Set, dir string, name output.Name) (*XLSXSink, error) {
	out, err := set.Create(dir, name, resultMode)
	if err != nil {
		return nil, err
	}
	s := &XLSXSink{out: out, batch: &xlsxBatch{}, zip64: math.MaxUint32, max: MaxXLSXRows}
	return s, s.reset()
}

func (s *XLSXSink) reset() error {
	if s.f != nil {
		s.f.Close()
	}
	s.f = excelize.NewFile()
	// The workbook's zip goes straight into the output file: excelize
	// would build it in memory first (File.WriteToBuffer), the whole
	// compressed table, and then copy it. Its buffer stays empty.
	s.zip = nil
	s.f.SetZipWriter(func(io.Writer) excelize.ZipWriter {
		s.zip = newXLSXZip(s.out)
		return s.zip
	})
	s.rows, s.sheet, s.sw, s.cut = 0, 0, nil, nil
	s.dropSpool()
	s.h = handOff[*xlsxBatch]{work: s.writeBatch, fresh: func() *xlsxBatch { return &xlsxBatch{} },
		empty: func(b *xlsxBatch) *xlsxBatch {
			b.text, b.cells, b.rows = b.text[:0], b.cells[:0], b.rows[:0]
			return b
		}}
	var err error
	s.red, err = s.f.NewStyle(&excelize.Style{Fill: excelize.Fill{Type: "pattern", Pattern: 1, Color: []string{"FF0000"}}})
	if err != nil {
		return err
	}
	s.yellow, err = s.f.NewStyle(&excelize.Style{Fill: excelize.Fill{Type: "pattern", Pattern: 1, Color: []string{"FFFF00"}}})
	if err != nil {
		return err
	}
	// pandas' header_style (to_excel): bold, a thin border all round,
	// centered, at the top
	thin := func(side string) excelize.Border { return excelize.Border{Type: side, Color: "000000", Style: 1} }
	s.head, err = s.f.NewStyle(&excelize.Style{Font: &excelize.Font{Bold: true},
		Border:    []excelize.Border{thin("left"), thin("right"), thin("top"), thin("bottom")},
		Alignment: &excelize.Alignment{Horizontal: "center", Vertical: "top"}})
	return err
}

// startSheet starts sheet i. Sheet1, the workbook's first, is renamed
// once the table's length says it is part_0 (Finish).
func (s *XLSXSink) startSheet(i int) error {
	if s.sw != nil {
		if err := s.sw.Flush(); err != nil {
			return err
		}
	}
	name := "Sheet1"
	if i > 0 {
		name = s.cut.name(i)
		if _, err := s.f.NewSheet(name); err != nil {
			return err
		}
	}
	s.sheet = i
	sw, err := s.f.NewStreamWriter(name)
	if err != nil {
		return err
	}
	s.sw = sw
	hdr := make([]any, len(s.header))
	for i, h := range s.header {
		hdr[i] = excelize.Cell{StyleID: s.head, Value: h}
	}
	return sw.SetRow("A1", hdr)
}

// Header records the column names.
func (s *XLSXSink) Header(cols []string) error {
	s.header = cols
	return nil
}

// Row queues one row with its highlight color.
func (s *XLSXSink) Row(cells []Cell, mark RowMark) error {
	b := s.batch
	b.add(cells, mark.Color)
	if len(b.rows) < xlsxBatchRows {
		return nil
	}
	var err error
	s.batch, err = s.h.give(b, true)
	return err
}

// stop has the rows queued written and waits for the writer.
func (s *XLSXSink) stop() error {
	if len(s.batch.rows) > 0 {
		var err error
		if s.batch, err = s.h.give(s.batch, true); err != nil {
			s.h.close()
			return err
		}
	}
	return s.h.close()
}

// writeBatch writes a batch's rows into the workbook (on the writing
// goroutine): into the first sheet while that is where they land
// whatever the table's length, the rest into the spool until the length
// is known (Finish).
func (s *XLSXSink) writeBatch(b *xlsxBatch) error {
	n := min(len(b.rows), max(s.spoolFrom()-s.rows, 0))
	k, err := s.putRows(b, n, s.rows)
	s.rows += n
	if err != nil || n == len(b.rows) {
		return err
	}
	if s.spool == nil {
		if s.spool, err = newXLSXSpool(s.out.Dir()); err != nil {
			return err
		}
	}
	s.rows += len(b.rows) - n
	return s.spool.add(b, n, k)
}

// putRows writes the first n rows of b into their sheets, the first as
// table row k; it returns how many cells they hold.
func (s *XLSXSink) putRows(b *xlsxBatch, n, k int) (cells int, err error) {
	for _, r := range b.rows[:n] {
		s.cs = b.row(s.cs[:0], cells, r)
		if err := s.putRow(k, s.cs, r.color); err != nil {
			return cells, err
		}
		k++
		cells += int(r.cells)
	}
	return cells, nil
}

// add appends a row.
func (b *xlsxBatch) add(cells []Cell, color Color) {
	for _, c := range cells {
		b.cells = append(b.cells, xlsxCell{off: int32(len(b.text)), n: int32(len(c.Text)), num: c.Num, boolean: c.Bool, val: c.Val})
		b.text = append(b.text, c.Text...)
	}
	b.rows = append(b.rows, xlsxRow{cells: int32(len(cells)), color: color})
}

// row appends to cs the cells of row r, whose first is cell k; their
// texts are b's (excelize copies what it writes).
func (b *xlsxBatch) row(cs []Cell, k int, r xlsxRow) []Cell {
	for _, c := range b.cells[k : k+int(r.cells)] {
		text := unsafe.String(unsafe.SliceData(b.text[c.off:]), c.n)
		cs = append(cs, Cell{Text: text, Num: c.num, Bool: c.boolean, Val: c.val})
	}
	return cs
}

// valid reports whether b's rows, cells and texts agree (a spooled batch
// read back).
func (b *xlsxBatch) valid() bool {
	n := 0
	for _, r := range b.rows {
		if r.cells < 0 {
			return false
		}
		n += int(r.cells)
	}
	for _, c := range b.cells {
		if c.off < 0 || c.n < 0 || int(c.off)+int(c.n) > len(b.text) {
			return false
		}
	}
	return n == len(b.cells)
}

// spoolFrom is the first row that may not go to the first sheet: a table
// cut into n sheets has more than (n-1)*max rows, so each sheet but the
// last, ceil(rows/n) rows, holds more than max/2.
func (s *XLSXSink) spoolFrom() int { return (s.max + 1) / 2 }

// putRow writes row k of the table into its sheet.
func (s *XLSXSink) putRow(k int, cells []Cell, color Color) error {
	sheet, row := 0, k
	if s.cut != nil {
		sheet, row = s.cut.sheet(k)
	}
	if s.sw == nil || sheet != s.sheet {
		if err := s.startSheet(sheet); err != nil {
			return err
		}
	}
	style := 0
	switch color {
	case Red:
		style = s.red
	case Yellow:
		style = s.yellow
	}
	s.vals = s.vals[:0]
	for _, c := range cells {
		var v any = c.Text
		if c.Num && isInfText(c.Text) {
			v = strings.TrimSpace(c.Text) // no " inf" spelling in xlsx
		}
		if c.Num && !isInfText(c.Text) {
			v = openpyxlNumber(c.Val, c.Text)
		}
		if c.Bool {
			v = c.Text == "True" // a boolean cell, as openpyxl writes a bool
		}
		if style != 0 {
			v = excelize.Cell{StyleID: style, Value: v}
		}
		s.vals = append(s.vals, v)
	}
	cellName, _ := excelize.CoordinatesToCellName(1, row+2)
	return s.sw.SetRow(cellName, s.vals)
}

// xlsxZip is a workbook's zip written straight into its file. It counts
// each entry's bytes, so that markZip64 can mark the local header of an
// entry of more than 4 GiB as zip64, as excelize does in its own buffer
// (File.writeZip64LFH): archive/zip writes version 20 there and 45 in
// the central directory only, which Excel calls a corrupt file. A sheet
// of a million rows with long stacks passes 4 GiB.
type xlsxZip struct {
	*zip.Writer
	size    countWriter // the file's bytes
	entries []zipEntry
}

type zipEntry struct {
	name string
	size *countWriter // uncompressed
}

// countWriter counts the bytes written through it to w.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

func newXLSXZip(out io.Writer) *xlsxZip {
	z := &xlsxZip{size: countWriter{w: out}}
	z.Writer = fastZip(&z.size)
	return z
}

// Create starts an entry (excelize writes every entry with it).
func (z *xlsxZip) Create(name string) (io.Writer, error) {
	w, err := z.Writer.Create(name)
	if err != nil {
		return nil, err
	}
	e := zipEntry{name: name, size: &countWriter{w: w}}
	z.entries = append(z.entries, e)
	return e.size, nil
}

// markZip64 sets version 45 in the local header of every entry of more
// than large bytes in the closed zip in f. The header is found from the
// central directory (its entry's data offset) and checked before it is
// changed.
func (z *xlsxZip) markZip64(f *output.File, large int64) error {
	big := map[string]bool{}
	for _, e := range z.entries {
		if e.size.n > large {
			big[e.name] = true
		}
	}
	if len(big) == 0 {
		return nil
	}
	r, err := zip.NewReader(f, z.size.n)
	if err != nil {
		return fmt.Errorf("xlsx zip64: %w", err)
	}
	for _, e := range r.File {
		if !big[e.Name] {
			continue
		}
		data, err := e.DataOffset()
		if err != nil {
			return fmt.Errorf("xlsx zip64: %w", err)
		}
		// the local header: signature, version needed, ..., name and
		// extra field lengths at 26 and 28 (archive/zip writes no extra
		// field in it)
		at := data - 30 - int64(len(e.Name))
		var h [30]byte
		if _, err := f.ReadAt(h[:], at); err != nil {
			return err
		}
		if binary.LittleEndian.Uint32(h[0:]) != 0x04034b50 || int(binary.LittleEndian.Uint16(h[26:])) != len(e.Name) || binary.LittleEndian.Uint16(h[28:]) != 0 {
			return fmt.Errorf("xlsx zip64: no local header of %s at %d", e.Name, at)
		}
		if _, err := f.WriteAt([]byte{45, 0}, at+4); err != nil {
			return err
		}
	}
	return nil
}

// fastZip is the workbook's zip writer: deflate at its best speed, by
// klauspost/compress, which takes half the time of compress/flate's and
// writes a smaller file, on several CPUs (parallelDeflate). A table's sheet
// is tens to hundreds of MB of XML; compress/flate's default level takes
// seconds on it, longer than the compare.
func fastZip(w io.Writer) *zip.Writer {
	zw := zip.NewWriter(w)
	zw.RegisterCompressor(zip.Deflate, func(out io.Writer) (io.WriteCloser, error) {
		return newParallelDeflate(out), nil
	})
	return zw
}

// openpyxlNumber is the number openpyxl writes for v, which msprobe's
// xlsx holds: "%.16g" % v (safe_string), 16 significant digits where a
// float may need 17. text is a decimal that reads as v (the cell's text).
// When it has at most 16 significant digits, the 16-digit rounding of v
// is at least as near to v and reads as v too, so v is returned as it is;
// except at a power of two, whose lower neighbour is nearer than its
// upper one.
func openpyxlNumber(v float64, text string) float64 {
	if sigDigits(text) <= 16 && math.Float64bits(v)&(1<<52-1) != 0 {
		return v
	}
	var buf [32]byte
	r, _ := strconv.ParseFloat(string(strconv.AppendFloat(buf[:0], v, 'g', 16, 64)), 64)
	return r
}

// sigDigits counts the significant digits of a decimal number's text (a
// sign, digits, a point, an exponent); 99 for anything else.
func sigDigits(t string) int {
	n, lead := 0, true
	for i := 0; i < len(t); i++ {
		switch c := t[i]; {
		case c == '-' && i == 0, c == '.':
		case c == '0' && lead:
		case c >= '0' && c <= '9':
			n, lead = n+1, false
		case (c == 'e' || c == 'E') && i > 0:
			return n
		default:
			return 99
		}
	}
	return n
}

func isInfText(t string) bool {
	t = strings.TrimSpace(t)
	return t == "inf" || t == "-inf" || t == "nan"
}

// Reset discards the rows written so far.
func (s *XLSXSink) Reset() error {
	s.stop()
	return s.reset()
}

// Finish writes the workbook into its file of the set: the spooled
// rows, now that the table's length is known, and the first sheet's
// name.
func (s *XLSXSink) Finish() error {
	defer s.f.Close()
	defer s.dropSpool()
	if err := s.stop(); err != nil {
		return err
	}
	s.cut = &xlsxSheets{rows: s.rows, max: s.max}
	if s.spool != nil {
		k := s.spoolFrom()
		if err := s.spool.each(&xlsxBatch{}, func(b *xlsxBatch) error {
			_, err := s.putRows(b, len(b.rows), k)
			k += len(b.rows)
			return err
		}); err != nil {
			return err
		}
		if k != s.rows {
			return fmt.Errorf("xlsx: %d rows spooled, %d read back", s.rows-s.spoolFrom(), k-s.spoolFrom())
		}
	}
	if s.sw == nil {
		if err := s.startSheet(0); err != nil {
			return err
		}
	}
	if err := s.sw.Flush(); err != nil {
		return err
	}
	if s.cut.name(0) != "Sheet1" {
		if err := s.f.SetSheetName("Sheet1", s.cut.name(0)); err != nil {
			return err
		}
	}
	if err := s.f.Write(s.out); err != nil {
		return err
	}
	return s.zip.markZip64(s.out, s.zip64)
}

// Drop removes the table from the set.
func (s *XLSXSink) Drop() {
	s.stop()
	s.dropSpool()
	s.f.Close()
	s.out.Drop()
}

// dropSpool removes the spool, if any.
func (s *XLSXSink) dropSpool() {
	if s.spool != nil {
		s.spool.close()
		s.spool = nil
	}
}

func (s *XLSXSink) files() []*output.File { return []*output.File{s.out} }
