package output

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
)

// failAfter takes limit bytes, then fails (or writes short); it counts
// the calls made after its first failure.
type failAfter struct {
	got    bytes.Buffer
	limit  int
	short  bool
	failed bool
	after  int // calls after the first failure
}

var errFull = errors.New("disk full")

func (f *failAfter) Write(p []byte) (int, error) {
	if f.failed {
		f.after++
	}
	if f.got.Len()+len(p) <= f.limit {
		return f.got.Write(p)
	}
	f.failed = true
	n := f.limit - f.got.Len()
	f.got.Write(p[:n])
	if f.short {
		return n, nil
	}
	return n, errFull
}

func TestWriter(t *testing.T) {
	t.Parallel()
	data := []byte(strings.Repeat("0123456789abcdefghijklmnopqrstuvwxyz\n", 300)) // 11100 bytes
	for _, tc := range []struct {
		name   string
		size   int   // buffer size
		chunks []int // sizes of the writes, cycled over data
		limit  int   // the underlying writer fails past this many bytes (0: never)
		short  bool  // ... by writing short without an error
		want   error // from Flush
	}{
		{name: "small writes", size: 64, chunks: []int{1, 7, 13}},
		{name: "writes larger than the buffer", size: 64, chunks: []int{100, 1000, 3}},
		{name: "exact buffers", size: 100, chunks: []int{100}},
		{name: "one buffer holds all", size: 1 << 16, chunks: []int{37}},
		{name: "no size given", size: 0, chunks: []int{37}},
		{name: "a negative size", size: -1, chunks: []int{37}},
		{name: "error", size: 64, chunks: []int{10}, limit: 1000, want: errFull},
		{name: "short write", size: 64, chunks: []int{10}, limit: 1000, short: true, want: io.ErrShortWrite},
		{name: "error in the last buffer", size: 4096, chunks: []int{10}, limit: 11000, want: errFull},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dst := &failAfter{limit: tc.limit, short: tc.short}
			if tc.limit == 0 {
				dst.limit = len(data)
			}
			w := NewWriter(dst, tc.size)
			var werr error
			for i, k := 0, 0; i < len(data) && werr == nil; k++ {
				n := min(tc.chunks[k%len(tc.chunks)], len(data)-i)
				var m int
				m, werr = w.Write(data[i : i+n])
				if werr == nil && m != n {
					t.Fatalf("Write wrote %d of %d bytes without an error", m, n)
				}
				i += n
			}
			ferr := w.Flush()
			if werr != nil && !errors.Is(werr, tc.want) {
				t.Fatalf("Write: %v, want nil or %v", werr, tc.want)
			}
			if !errors.Is(ferr, tc.want) {
				t.Fatalf("Flush: %v, want %v", ferr, tc.want)
			}
			if tc.want == nil {
				if !bytes.Equal(dst.got.Bytes(), data) {
					t.Fatalf("wrote %d bytes, not the %d given (or not in order)", dst.got.Len(), len(data))
				}
				return
			}
			// nothing is written after a failed write
			if !bytes.Equal(dst.got.Bytes(), data[:tc.limit]) {
				t.Fatalf("wrote %d bytes before the failure at %d", dst.got.Len(), tc.limit)
			}
			if _, err := w.Write([]byte("more")); !errors.Is(err, tc.want) {
				t.Fatalf("Write after the failure: %v, want %v", err, tc.want)
			}
			if _, err := w.Write(nil); !errors.Is(err, tc.want) {
				t.Fatalf("Write(nil) after the failure: %v, want %v", err, tc.want)
			}
			if err := w.Flush(); !errors.Is(err, tc.want) || dst.after != 0 {
				t.Fatalf("Flush after the failure: %v with %d writes after it, want %v and none", err, dst.after, tc.want)
			}
		})
	}
}

// TestWriterTail: data appended to Tail's slice and committed, mixed with
// Writes, reach the writer in order, whether it fits the room asked for,
// outgrows it (and is copied) or is larger than the buffer; an error
// stops the commits as it stops the writes.
func TestWriterTail(t *testing.T) {
	t.Parallel()
	data := []byte(strings.Repeat("0123456789abcdefghijklmnopqrstuvwxyz\n", 300))
	for _, limit := range []int{len(data), 1000} {
		for _, size := range []int{8, 64, 100, 4096} {
			dst := &failAfter{limit: limit}
			w := NewWriter(dst, size)
			var err error
			for i, k := 0, 0; i < len(data) && err == nil; k++ {
				n := min([]int{1, 7, 13, 50, 150, 0}[k%6], len(data)-i)
				switch k % 3 {
				case 0, 1:
					tail := w.Tail([]int{10, 40}[k%2])
					if len(tail) != 0 || cap(tail) == 0 {
						t.Fatalf("Tail: len %d cap %d", len(tail), cap(tail))
					}
					_, err = w.Commit(append(tail, data[i:i+n]...))
				default:
					_, err = w.Write(data[i : i+n])
				}
				i += n
			}
			ferr := w.Flush()
			if limit == len(data) {
				if err != nil || ferr != nil || !bytes.Equal(dst.got.Bytes(), data) {
					t.Fatalf("size %d: %v %v, wrote %d bytes, not the %d given (or not in order)", size, err, ferr, dst.got.Len(), len(data))
				}
				continue
			}
			if !errors.Is(ferr, errFull) || !bytes.Equal(dst.got.Bytes(), data[:limit]) {
				t.Fatalf("size %d: Flush %v, wrote %d bytes before the failure at %d", size, ferr, dst.got.Len(), limit)
			}
			if _, err := w.Commit(append(w.Tail(4), "more"...)); !errors.Is(err, errFull) || dst.after != 0 {
				t.Fatalf("Commit after the failure: %v with %d writes after it", err, dst.after)
			}
		}
	}
}

func TestWriterReset(t *testing.T) {
	t.Parallel()
	bad := &failAfter{limit: 0}
	w := NewWriter(bad, 8)
	w.Write([]byte("0123456789")) // the first 8 bytes are being written, and fail
	var good bytes.Buffer
	w.Reset(&good) // waits for that write, drops "89" and the error
	if _, err := w.Write([]byte("hello, ")); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("world")); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if good.String() != "hello, world" {
		t.Fatalf("after Reset: %q, want %q", good.String(), "hello, world")
	}
}

// BenchmarkWriter writes 64 MB of CSV lines to a file, each line made as
// a compare row is (28 numbers formatted into one buffer), through a
// Writer and through bufio.Writer, each with 1 MB buffers. With a Writer
// the system calls and the kernel's copy into the page cache run beside
// the making of the next lines instead of after them. At this size the
// page cache takes the writes at memory speed and the difference is a few
// percent; a compare's table of gigabytes also meets the kernel's
// throttling of dirty pages, which then stalls only the Writer's
// goroutine (BenchmarkCompare in mapping/compare shows that).
func BenchmarkWriter(b *testing.B) {
	const total = 64 << 20
	type flusher interface {
		io.Writer
		Flush() error
	}
	for _, tc := range []struct {
		name string
		make func(io.Writer) flusher
	}{
		{"output.Writer", func(w io.Writer) flusher { return NewWriter(w, 1<<20) }},
		{"bufio.Writer", func(w io.Writer) flusher { return bufio.NewWriterSize(w, 1<<20) }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(total)
			var line []byte
			f, err := os.CreateTemp(b.TempDir(), "w")
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			for b.Loop() {
				if err := f.Truncate(0); err != nil {
					b.Fatal(err)
				}
				if _, err := f.Seek(0, io.SeekStart); err != nil {
					b.Fatal(err)
				}
				w := tc.make(f)
				for n, k := 0, 0; n < total; n += len(line) {
					line = line[:0]
					for c := range 28 {
						k++
						line = strconv.AppendFloat(line, float64(k)/float64(c+3), 'g', -1, 64)
						line = append(line, ',')
					}
					line = append(line, '\n')
					if _, err := w.Write(line); err != nil {
						b.Fatal(err)
					}
				}
				if err := w.Flush(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
