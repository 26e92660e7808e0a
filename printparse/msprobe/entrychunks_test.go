package msprobe

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/layermap/layermap/printparse/testkit"
)

// countingReaderAt counts the bytes read through it.
type countingReaderAt struct {
	r     io.ReaderAt
	bytes int64
	reads int
}

func (c *countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.bytes += int64(n)
	c.reads++
	return n, err
}

// chunkFile writes size bytes that differ from chunk to chunk and opens
// an EntryReader on them that counts what it reads.
func chunkFile(t *testing.T, size int) ([]byte, *EntryReader, *countingReaderAt) {
	t.Helper()
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i*7 + i/readChunk)
	}
	r, err := NewEntryReader(testkit.WriteFile(t, t.TempDir(), "dump.json", string(data)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	c := &countingReaderAt{r: r.f}
	r.ra = c
	return data, r, c
}

// TestEntryReaderBytesAt: whatever the order of the reads and however
// the ranges lie on the chunks, bytesAt gives the file's bytes.
func TestEntryReaderBytesAt(t *testing.T) {
	t.Parallel()
	const size = 20*readChunk + 1234
	data, r, _ := chunkFile(t, size)
	type span struct{ off, end int64 }
	spans := []span{
		{0, 0}, {0, 1}, {5, 900},
		{readChunk - 1, readChunk + 1},            // across two chunks
		{readChunk, 2 * readChunk},                // one whole chunk
		{readChunk - 10, 3*readChunk + 10},        // across four
		{100, readChunks/2*readChunk - 100},       // the most chunks copied together
		{100, readChunks/2*readChunk + 100},       // read alone
		{3 * readChunk, 3*readChunk + 3*size/4},   // more than all the chunks
		{size - 10, size}, {size - 10, size + 50}, // the end, and past it
		{size, size}, {size, size + 8},
		{readChunk + 5, readChunk + 6}, // from a kept chunk
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	for range 3000 {
		off := rnd.Int64N(size)
		n := rnd.Int64N(4 << 10)
		if rnd.IntN(20) == 0 {
			n = rnd.Int64N(12 * readChunk)
		}
		spans = append(spans, span{off, off + n})
	}
	for _, s := range spans {
		got, err := r.bytesAt(s.off, s.end)
		if err != nil {
			t.Fatalf("bytesAt(%d, %d): %v", s.off, s.end, err)
		}
		if want := data[s.off:min(s.end, size)]; !bytes.Equal(got, want) {
			t.Fatalf("bytesAt(%d, %d): %d bytes, not the file's %d", s.off, s.end, len(got), len(want))
		}
	}
	for _, s := range []span{{-1, 5}, {10, 5}, {size + 1, size + 2}} {
		if _, err := r.bytesAt(s.off, s.end); err == nil {
			t.Errorf("bytesAt(%d, %d): no error", s.off, s.end)
		}
	}
}

// TestEntryReaderReadsOnce: entries read near each other in an order of
// their own (a join in the other dump's order, which goes back a few
// hundred KB at times), scattered (a count of the entries no row asked
// for) or along a few walks taken in turn are read from chunks kept: the
// file's bytes are read about once, a chunk at a time. Entries asked for
// in no order at all (a bench dump the other dump orders otherwise) are
// read alone, once each, but where a recent request lay next to them
// (about one in thirty here: 3.2 times the file, 70 a chunk each).
func TestEntryReaderReadsOnce(t *testing.T) {
	t.Parallel()
	const size, entry = 24 << 20, 900
	var offs []int64
	for off := int64(0); off+entry <= size; off += entry {
		offs = append(offs, off)
	}
	rnd := rand.New(rand.NewPCG(3, 4))
	// runs of 500 entries (450 KB) in an order of their own
	local := make([]int64, 0, len(offs))
	for k := 0; k < len(offs); k += 500 {
		run := append([]int64(nil), offs[k:min(k+500, len(offs))]...)
		rnd.Shuffle(len(run), func(i, j int) { run[i], run[j] = run[j], run[i] })
		local = append(local, run...)
	}
	var sparse []int64
	for i, off := range offs {
		if i%40 == 0 || rnd.IntN(10) == 0 {
			sparse = append(sparse, off)
		}
	}
	shuffled := slices.Clone(offs)
	rnd.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	// walks along the file taken in turn, an entry each: from the start
	// and the middle, from three places, and forward beside backward
	var two, three, ways []int64
	for i := range len(offs) / 2 {
		two = append(two, offs[i], offs[len(offs)/2+i])
		ways = append(ways, offs[i], offs[len(offs)-1-i])
	}
	for i := range len(offs) / 3 {
		three = append(three, offs[i], offs[len(offs)/3+i], offs[2*len(offs)/3+i])
	}
	chunks := size/readChunk + 1
	for _, c := range []struct {
		name     string
		order    []int64
		max      float64 // bytes read, in files
		maxReads int
	}{
		{"local", local, 1.05, 3 * chunks},
		{"in order", offs, 1.01, chunks},
		{"sparse", sparse, 1.01, chunks},
		{"shuffled", shuffled, 4, len(shuffled)},
		{"two walks", two, 1.01, chunks + 2},
		{"three walks", three, 1.01, chunks + 3},
		{"forward and backward", ways, 1.01, chunks + 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			data, r, count := chunkFile(t, size)
			for _, off := range c.order {
				got, err := r.bytesAt(off, off+entry)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, data[off:off+entry]) {
					t.Fatalf("bytesAt(%d): not the file's bytes", off)
				}
			}
			if files := float64(count.bytes) / size; files > c.max {
				t.Errorf("read %.2f times the file, want at most %.2f", files, c.max)
			}
			if count.reads > c.maxReads {
				t.Errorf("%d reads, want at most %d", count.reads, c.maxReads)
			}
		})
	}
}

// TestEntryReaderAnyOrder: a dump's entries read in a random order
// (most read alone, scattered) or as two walks taken in turn, with or
// without entries of thousands of rows among them, are the entries read
// in file order, and what each gave stays as it was after the reads that
// follow.
func TestEntryReaderAnyOrder(t *testing.T) {
	t.Parallel()
	tensor := func(i int) string {
		return fmt.Sprintf(`{"type": "torch.Tensor", "dtype": "torch.float32", "shape": [%d, 8], "Max": %d.5, "Min": -%d.25, "Mean": 0.%d, "Norm": %d.75, "requires_grad": true}`, i%9+1, i%7, i%5, i, i%11)
	}
	for _, foreach := range []int{0, 2000} { // a list of so many tensors every 1000 entries
		var b strings.Builder
		for i := range 5000 {
			if i > 0 {
				b.WriteString(",\n")
			}
			fmt.Fprintf(&b, `"Tensor.add.%d.forward": {"input_args": [%s, %s], "input_kwargs": {"alpha": {"type": "int", "value": %d}}, "output": [%s]}`,
				i, tensor(i), tensor(i+1), i%3, tensor(i+2))
			if foreach > 0 && i%1000 == 0 {
				list := make([]string, foreach)
				for k := range list {
					list[k] = tensor(i + k)
				}
				fmt.Fprintf(&b, `, "Torch._foreach_add_.%d.forward": {"input_args": [[%s]], "output": []}`, i/1000, strings.Join(list, ", "))
			}
		}
		path := testkit.WriteFile(t, t.TempDir(), "dump.json", dumpWith(b.String()))
		spans, err := skimSpans(path)
		if err != nil {
			t.Fatal(err)
		}
		read := func(order []int) []string {
			r, err := NewEntryReader(path)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			out := make([]string, len(spans))
			held := make([]Entry, len(spans)) // the strings of every entry read
			for _, i := range order {
				err := r.Read(i, spans[i].off, spans[i].end, spans[i].line, func(e *Entry) error {
					out[i] = fmt.Sprintf("%+v", *e)
					held[i] = *e
					held[i].Items = slices.Clone(e.Items)
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			for i := range held {
				if again := fmt.Sprintf("%+v", held[i]); again != out[i] {
					t.Fatalf("entry %d changed after the reads that followed it", i)
				}
			}
			return out
		}
		inOrder := make([]int, len(spans))
		for i := range inOrder {
			inOrder[i] = i
		}
		want := read(inOrder)
		shuffled := slices.Clone(inOrder)
		rand.New(rand.NewPCG(uint64(foreach), 1)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		var walks []int
		half := (len(spans) + 1) / 2
		for i := range half {
			walks = append(walks, i)
			if half+i < len(spans) {
				walks = append(walks, half+i)
			}
		}
		for name, order := range map[string][]int{"shuffled": shuffled, "two walks": walks} {
			got := read(order)
			for _, i := range order {
				if got[i] != want[i] {
					t.Fatalf("foreach %d, %s: entry %d differs from its reading in file order", foreach, name, i)
				}
			}
		}
	}
}

// TestEntryReaderLargeAlone: a large entry is read alone, without
// pushing out the chunks kept for the entries around the place a join is
// at.
func TestEntryReaderLargeAlone(t *testing.T) {
	t.Parallel()
	_, r, count := chunkFile(t, 40*readChunk)
	near := func() {
		for off := int64(0); off < readChunks/2*readChunk; off += 1000 {
			if _, err := r.bytesAt(off, off+900); err != nil {
				t.Fatal(err)
			}
		}
	}
	near()
	if _, err := r.bytesAt(20*readChunk+7, 30*readChunk); err != nil {
		t.Fatal(err)
	}
	before := count.bytes
	near()
	if count.bytes != before {
		t.Errorf("read %d bytes again after a large entry", count.bytes-before)
	}
}

// TestEntryReaderShrunk: an entry past the end of a file that shrank
// after it was skimmed is an error, not stale bytes.
func TestEntryReaderShrunk(t *testing.T) {
	t.Parallel()
	// bytes across two chunks, the first cut short after a read near it
	// that kept nothing: fewer bytes, no panic
	_, cr, _ := chunkFile(t, 20*readChunk)
	if _, err := cr.bytesAt(3*readChunk+100, 3*readChunk+200); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(cr.path, 3*readChunk+10); err != nil {
		t.Fatal(err)
	}
	if b, err := cr.bytesAt(4*readChunk-100, 4*readChunk+100); err != nil || len(b) != 0 {
		t.Errorf("bytes across a chunk cut short: %d bytes, %v; want none", len(b), err)
	}

	body := `{"output": [` + tensorA + `]}`
	var src strings.Builder
	src.WriteString(`{"task": "statistics", "level": "L1", "data": {`)
	for i := range 2000 {
		if i > 0 {
			src.WriteString(",\n")
		}
		src.WriteString(`"A.` + strconv.Itoa(i) + `.forward": ` + body)
	}
	src.WriteString("}}")
	p := testkit.WriteFile(t, t.TempDir(), "dump.json", src.String())
	offs, r := entryReader(t, p)
	read := func(i int) error {
		return r.Read(i, offs[i], offs[i+1], 0, func(*Entry) error { return nil })
	}
	if offs[1500] < 2*readChunk {
		t.Fatalf("the file is %d bytes: it should span more chunks", offs[len(offs)-1])
	}
	if err := read(10); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, offs[1500]+5); err != nil {
		t.Fatal(err)
	}
	if err := read(1500); err == nil {
		t.Errorf("entry cut by the file's end: no error")
	}
	if err := read(1900); err == nil {
		t.Errorf("entry past the file's end: no error")
	}
}

// TestChunks: readers that use a Chunks read into the memory of readers
// closed before them, two open at once into memory of their own (also
// once a reader closed and then collected has its cleanup give its
// memory back again), at most keptChunks readers' memory is kept, and a
// reader still open when the Chunks is freed reads on.
func TestChunks(t *testing.T) {
	t.Parallel()
	data, first, _ := chunkFile(t, 3*readChunk) // the file; its readers are opened here
	path := first.path
	var c Chunks
	open := func() *EntryReader {
		r, err := NewEntryReader(path)
		if err != nil {
			t.Fatal(err)
		}
		r.UseChunks(&c)
		if b, err := r.bytesAt(readChunk+5, readChunk+900); err != nil || !bytes.Equal(b, data[readChunk+5:readChunk+900]) {
			t.Fatalf("bytesAt: %d bytes, %v: not the file's", len(b), err)
		}
		return r
	}
	var mem *byte
	func() {
		r1 := open()
		mem = &r1.chunks[0]
		r1.Close() // and then collected: its cleanup must not give mem again
	}()
	r2 := open()
	if &r2.chunks[0] != mem {
		t.Errorf("a reader opened after one closed does not read into its memory")
	}
	for range 10 {
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	if r := open(); &r.chunks[0] == mem {
		t.Errorf("a reader shares memory with an open one once a closed reader was collected")
	} else {
		r.Close()
	}
	var many []*EntryReader
	for range keptChunks + 3 {
		many = append(many, open())
	}
	for _, r := range many {
		r.Close()
	}
	c.mu.Lock()
	kept := len(c.free)
	c.mu.Unlock()
	if kept != keptChunks {
		t.Errorf("%d readers' memory kept, want %d", kept, keptChunks)
	}
	r3 := open()
	if &r3.chunks[0] == mem {
		t.Errorf("two readers open at once share memory")
	}
	r2.Close()
	c.Free()
	if b, err := r3.bytesAt(2*readChunk+1, 2*readChunk+700); err != nil || !bytes.Equal(b, data[2*readChunk+1:2*readChunk+700]) {
		t.Errorf("a reader open when the Chunks was freed: %d bytes, %v", len(b), err)
	}
	r3.Close()
	r4 := open() // lent after Free: memory of its own, unmapped when it closes
	r4.Close()
}
