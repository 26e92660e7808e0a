// Package source is the bottom of layermap's readers: it opens inputs as
// bounded streams and reports what is wrong with them as one positioned
// error type.
//
// Every reader (the print(model) parser, the msprobe dump lexer, the
// layer_mapping YAML loader, the pairs and data-mapping files, compare.json,
// the tensor loader) opens its files with Open or ReadFile and returns
// *Error for bad input, so the command line needs a single errors.As to
// tell "bad input" (exit status 2) from everything else.
//
// Bounded input: only regular files are read. A FIFO, device, socket or
// folder where a file is expected is refused at once (the open itself does
// not block on a FIFO), and a file larger than its reader's budget is
// refused before anything is buffered. The budgets are the Max* constants.
package source

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
)

// Error is bad input: a file (and where known the line and column) and
// what was expected there. Its text is "file:line:col: expected X, found Y";
// the line and column are left out when unknown (0), the file when empty.
// Msg replaces the "expected ..." part for messages of another shape; Err,
// when set, is the underlying cause (appended after ": ").
type Error struct {
	File     string
	Line     int // 1-based; 0 when no single line is at fault
	Col      int // 1-based byte column; 0 when unknown
	Expected string
	Found    string
	Msg      string
	Err      error
	cause    error // unwrapped but not printed (PathError's file-system error)
}

func (e *Error) Error() string {
	var b []byte
	if e.File != "" {
		b = append(b, e.File...)
		if e.Line > 0 {
			b = append(b, ':')
			b = strconv.AppendInt(b, int64(e.Line), 10)
			if e.Col > 0 {
				b = append(b, ':')
				b = strconv.AppendInt(b, int64(e.Col), 10)
			}
		}
		b = append(b, ": "...)
	}
	body := len(b)
	switch {
	case e.Expected != "":
		b = append(b, "expected "...)
		b = append(b, e.Expected...)
		if e.Found != "" {
			b = append(b, ", found "...)
			b = append(b, e.Found...)
		}
	case e.Msg != "":
		b = append(b, e.Msg...)
	}
	if e.Err != nil {
		if len(b) > body {
			b = append(b, ": "...)
		}
		b = append(b, e.Err.Error()...)
	}
	if len(b) == body && body > 2 {
		b = b[:body-2] // a bare file name
	}
	return string(b)
}

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error {
	if e.Err != nil {
		return e.Err
	}
	return e.cause
}

// Errorf returns an *Error at file:line whose message is formatted.
func Errorf(file string, line int, format string, args ...any) *Error {
	return &Error{File: file, Line: line, Msg: fmt.Sprintf(format, args...)}
}

// Budgets: the largest input each reader accepts. A larger file is refused
// before it is read; each is far above what real runs produce (see the
// comments), so a refusal means the file is not what the reader expects.
const (
	// MaxText bounds a print(model) text, read whole. The largest real
	// dumps (100 layers of 256 experts, printed without the "N x" repeat
	// folding) are about 15 MB.
	MaxText = 256 << 20
	// MaxMappingYAML bounds a layer_mapping.yaml or a sidecar pairs file:
	// hand-written or drafted, a few KB to a few MB.
	MaxMappingYAML = 64 << 20
	// MaxDataMapping bounds a data_mapping YAML (compare -dm): one line per
	// dump row pair, so as large as a dump's row list.
	MaxDataMapping = 1 << 30
	// MaxSmallJSON bounds compare.json (-i): three paths and a flag.
	MaxSmallJSON = 1 << 20
	// MaxTreeJSON bounds stack.json and construct.json, read whole into a
	// tree: a 300k-entry construct.json is about 30 MB.
	MaxTreeJSON = 4 << 30
	// MaxDumpJSON bounds dump.json and debug.json, which are streamed
	// (memory does not grow with the file): real dumps reach tens of GB.
	MaxDumpJSON = 1 << 40

	// MaxDepth bounds how deep modules nest in a model structure (a
	// print(model) text, the module names of an msprobe dump) and how deep
	// JSON values nest. Real models nest 3 to 12 levels (the deepest in
	// the corpus: 11); nn.Module.__repr__ and msprobe's forward hooks
	// recurse in Python once or more per level, so Python's default
	// recursion limit (1000) stops both near 1,000 levels. A deeper input
	// is not a model's, and work on paths grows with depth times nodes.
	MaxDepth = 4096
	// MaxPathBytes bounds the sum of the lengths of all module paths of a
	// structure ("model.layers.0.mlp" counts 18), which is what a tree of
	// named nodes holds in memory. The largest real structures, DeepSeek-V3
	// (~150k modules, paths of ~40 bytes) or 100 layers of 256 experts
	// (~130k modules), hold 5 to 8 MB; the node budget (2M modules) at 128
	// bytes per path is 256 MiB.
	MaxPathBytes = 256 << 20
)

// Open opens path for reading. It refuses at once anything but a regular
// file (after symbolic links): a FIFO, device, socket or folder gives an
// *Error naming the file and what it is, without blocking. A file larger
// than limit bytes is refused the same way (limit <= 0: no limit). Errors
// from the file system (no such file, permission) are *Error too, with the
// *fs.PathError as their cause (see PathError).
func Open(path string, limit int64) (*os.File, error) {
	f, err := openNonBlocking(path)
	if err != nil {
		return nil, PathError(path, ExpectedFile, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, PathError(path, ExpectedFile, err)
	}
	if err := checkFile(path, st, limit); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// Check tells whether path is a regular file within limit (as Open does)
// without opening it; a missing file is an *Error whose cause is the
// *fs.PathError of os.Stat.
func Check(path string, limit int64) error {
	st, err := os.Stat(path)
	if err != nil {
		return PathError(path, ExpectedFile, err)
	}
	return checkFile(path, st, limit)
}

func checkFile(path string, st fs.FileInfo, limit int64) error {
	if kind := Kind(st.Mode()); kind != "" {
		return &Error{File: path, Expected: "a regular file", Found: kind}
	}
	if limit > 0 && st.Size() > limit {
		return &Error{File: path, Expected: "a file of at most " + Size(limit), Found: Size(st.Size())}
	}
	return nil
}

// Kind describes a file mode that is not a regular file ("a folder", "a
// named pipe (FIFO)", ...); "" for a regular file.
func Kind(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return ""
	case m.IsDir():
		return "a folder"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "a special file"
}

// ReadFile reads the regular file at path whole, refusing it (before
// buffering) when it is larger than limit bytes. A file that grows past
// limit while it is read is refused too.
func ReadFile(path string, limit int64) ([]byte, error) {
	f, err := Open(path, limit)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size := int64(512)
	if st, err := f.Stat(); err == nil && st.Size() > 0 {
		size = st.Size() + 1
	}
	return readAll(f, path, limit, size)
}

// ReadAll reads r whole (standard input, a pipe), refusing it once more
// than limit bytes arrive; name names r in the error ("<stdin>").
func ReadAll(r io.Reader, name string, limit int64) ([]byte, error) {
	return readAll(r, name, limit, 512)
}

func readAll(r io.Reader, name string, limit, size int64) ([]byte, error) {
	if limit > 0 {
		size = min(size, limit+1)
	}
	return readInto(r, name, limit, make([]byte, 0, size))
}

// readInto appends what is left of r to b, refusing more than limit bytes
// in all (limit <= 0: no limit).
func readInto(r io.Reader, name string, limit int64, b []byte) ([]byte, error) {
	if limit > 0 {
		r = io.LimitReader(r, limit+1-int64(len(b)))
	}
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, &Error{File: name, Err: err}
		}
	}
	if limit > 0 && int64(len(b)) > limit {
		return nil, &Error{File: name, Expected: "at most " + Size(limit), Found: "more"}
	}
	return b, nil
}

// TextBlock is how much of a text input is read and checked (Binary)
// before the rest is buffered.
const TextBlock = 8192

// Binary reports whether head, the first bytes of an input, is binary
// data rather than text: a NUL byte in its first TextBlock bytes, unless
// it starts with a UTF-16 or UTF-32 byte-order mark (such text holds NULs).
func Binary(head []byte) bool {
	if b := BOM(head); strings.Contains(b, "UTF-16") || strings.Contains(b, "UTF-32") {
		return false
	}
	return bytes.IndexByte(head[:min(len(head), TextBlock)], 0) >= 0
}

// ReadText reads a text input whole, like ReadAll, but looks at its first
// TextBlock bytes before buffering the rest: binary data (Binary) is an
// *Error at once, "expected WHAT, found binary data", so /dev/zero or a
// 3 GB archive costs one block. what names the text ("text holding a
// print(model) dump").
func ReadText(r io.Reader, name string, limit int64, what string) ([]byte, error) {
	return readText(r, name, limit, 0, what)
}

// ReadTextFile is ReadFile for text: a regular file only (Open), refused
// as binary (see ReadText) before its size is judged or it is buffered.
func ReadTextFile(path string, limit int64, what string) ([]byte, error) {
	f, err := Open(path, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size := int64(0)
	if st, err := f.Stat(); err == nil {
		size = st.Size()
	}
	return readText(f, path, limit, size, what)
}

func readText(r io.Reader, name string, limit, size int64, what string) ([]byte, error) {
	head := make([]byte, TextBlock)
	n, err := io.ReadFull(r, head)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, &Error{File: name, Err: err}
	}
	if Binary(head[:n]) {
		return nil, &Error{File: name, Expected: what, Found: "binary data (a NUL byte in its first " + Size(TextBlock) + ")"}
	}
	if limit > 0 && size > limit {
		return nil, &Error{File: name, Expected: "a file of at most " + Size(limit), Found: Size(size)}
	}
	if n < TextBlock {
		if limit > 0 && int64(n) > limit {
			return nil, &Error{File: name, Expected: "at most " + Size(limit), Found: "more"}
		}
		return head[:n], nil
	}
	b := head
	if size >= int64(n) {
		c := size + 1
		if limit > 0 {
			c = min(c, limit+1)
		}
		b = make([]byte, n, c)
		copy(b, head)
	}
	return readInto(r, name, limit, b)
}

// BOM names the byte-order mark data starts with ("a UTF-8 byte-order
// mark", "a UTF-16LE byte-order mark", ...), or returns "".
func BOM(data []byte) string {
	switch {
	case len(data) >= 3 && data[0] == 0xef && data[1] == 0xbb && data[2] == 0xbf:
		return "a UTF-8 byte-order mark (BOM)"
	case len(data) >= 4 && data[0] == 0xff && data[1] == 0xfe && data[2] == 0 && data[3] == 0:
		return "a UTF-32LE byte-order mark (BOM)"
	case len(data) >= 4 && data[0] == 0 && data[1] == 0 && data[2] == 0xfe && data[3] == 0xff:
		return "a UTF-32BE byte-order mark (BOM)"
	case len(data) >= 2 && data[0] == 0xff && data[1] == 0xfe:
		return "a UTF-16LE byte-order mark (BOM)"
	case len(data) >= 2 && data[0] == 0xfe && data[1] == 0xff:
		return "a UTF-16BE byte-order mark (BOM)"
	}
	return ""
}

// Size renders a byte count for messages: "512 B", "64 MiB", "3.0 GiB".
func Size(n int64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatInt(n, 10) + " B"
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 5; m /= unit {
		div *= unit
		exp++
	}
	v := float64(n) / float64(div)
	u := "KMGTPE"[exp : exp+1]
	if n%div == 0 {
		return strconv.FormatInt(n/div, 10) + " " + u + "iB"
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + " " + u + "iB"
}
