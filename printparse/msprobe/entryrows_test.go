package msprobe

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/layermap/layermap/printparse/testkit"
)

// entryOffsets are the offsets of the entries of the dump.json at path,
// as a skim gives them.
func entryOffsets(path string) ([]int64, error) {
	var offs []int64
	_, err := Skim(path, func(e *SkimEntry) error {
		offs = append(offs, e.Offset)
		return nil
	})
	return offs, err
}

// entryEnd is where entry i of entries at offs ends for EntryReader: the
// next one's offset, or -1 for the last.
func entryEnd(offs []int64, i int) int64 {
	if i+1 < len(offs) {
		return offs[i+1]
	}
	return -1
}

// entryRowsDiffer reads every entry of the dump.json at path, at the
// offsets a skim gives, with Read and with Rows, and describes the first
// entry whose row count or error differs ("" for none; none either when
// the skim fails: the file has no entries to read).
func entryRowsDiffer(path string) string {
	offs, err := entryOffsets(path)
	if err != nil {
		return ""
	}
	r, err := NewEntryReader(path)
	if err != nil {
		return err.Error()
	}
	defer r.Close()
	errText := func(err error) string {
		if err == nil {
			return "<nil>"
		}
		return err.Error()
	}
	for i, off := range offs {
		end := entryEnd(offs, i)
		want := 0
		rerr := r.Read(i, off, end, 0, func(e *Entry) error {
			want = len(e.Items)
			return nil
		})
		got, cerr := r.Rows(i, off, end, 0)
		if rerr != nil {
			want = 0
		}
		if cerr != nil {
			got = 0
		}
		if got != want || errText(cerr) != errText(rerr) {
			return fmt.Sprintf("entry %d: Rows %d, %s; Read %d, %s", i, got, errText(cerr), want, errText(rerr))
		}
	}
	return ""
}

// TestEntryReaderRows: Rows, which checks the values it does not
// convert, counts the rows Read gives and fails where Read fails, on
// every entry of the testdata dumps and on the same dumps spoiled (a
// statistic no number, a minus sign before each norm, a negative or
// fractional size in a shape, a dtype no string). With -short, the dumps
// are read as they are only.
func TestEntryReaderRows(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	spoil := []struct{ old, new string }{
		{"", ""},
		{`"Max": `, `"Max": 1.2.`},
		{`"Norm": `, `"Norm": -`},
		{`"shape": [`, `"shape": [-`},
		{`"shape": [`, `"shape": [1.5, `},
		{`"dtype": "`, `"dtype": 7, "x": "`},
	}
	for k, path := range flatDumps(t) {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for s, sp := range spoil {
			p := path
			if sp.old != "" && (len(data) > 8<<20 || testing.Short()) {
				break // the benchmark pairs (LAYERMAP_BENCH_DIR), or -short: read as they are
			}
			if sp.old != "" {
				if !strings.Contains(string(data), sp.old) {
					continue
				}
				p = filepath.Join(dir, strconv.Itoa(k)+"_"+strconv.Itoa(s), filepath.Base(path))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(strings.ReplaceAll(string(data), sp.old, sp.new)), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if d := entryRowsDiffer(p); d != "" {
				t.Errorf("%s (%q as %q): %s", path, sp.old, sp.new, d)
			}
		}
	}
}

// FuzzEntryReaderRows: Rows agrees with Read on any entry body.
func FuzzEntryReaderRows(f *testing.F) {
	for _, s := range flatSeeds {
		f.Add("Functional.linear.0.forward", s)
	}
	// a whole body (flatWhole), its lists and nulls counted
	f.Add("M.parameters_grad", `{"weight": {"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2], "Max": 1.5}, "b": [null, {"type": "t", "dtype": "d"}]}`)
	f.Add("M.parameters_grad.1", `{"w": [{"type": "t", "dtype": "d"}, {"type": "t", "dtype": "+d"}]}`)
	f.Fuzz(func(t *testing.T, name, body string) {
		p := filepath.Join(t.TempDir(), "dump.json")
		data := dumpWith(strconv.Quote(name) + ": " + body + `, "Tensor.add.0.forward": {"output": [null]}`)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		if d := entryRowsDiffer(p); d != "" {
			t.Fatal(d)
		}
	})
}

// TestEntryReaderRowsAllocs: counting an entry's rows allocates nothing
// once the reader's buffers have grown (names mode once allocated a
// buffer at every shape it did not build).
func TestEntryReaderRowsAllocs(t *testing.T) {
	offs, r := demoReader(t, "mindspeed-mm")
	rows := 0
	count := func() {
		rows = 0
		for i, off := range offs {
			n, err := r.Rows(i, off, entryEnd(offs, i), 0)
			if err != nil {
				t.Fatal(err)
			}
			rows += n
		}
	}
	count()
	taken := r.s.flat.taken
	if a := testing.AllocsPerRun(5, count); a > 0 || rows < 100 || r.s.flat.taken-taken < 5*len(offs) {
		t.Errorf("%d entries, %d rows counted with %v allocations, %d by the fast path", len(offs), rows, a, (r.s.flat.taken-taken)/6)
	}
}

// TestEntryReaderReadAllocs: reading an entry in full through the fast
// path costs two allocations (the Entry's strings and its rows), whatever
// its items: the flattener's buffers are kept from entry to entry.
func TestEntryReaderReadAllocs(t *testing.T) {
	for _, side := range []string{"mindspeed-mm", "llamafactory"} {
		offs, r := demoReader(t, side)
		rows := 0
		read := func() {
			rows = 0
			for i, off := range offs {
				if err := r.Read(i, off, entryEnd(offs, i), 0, func(e *Entry) error {
					rows += len(e.Items)
					return nil
				}); err != nil {
					t.Fatal(err)
				}
			}
		}
		read()
		taken := r.s.flat.taken
		if a := testing.AllocsPerRun(5, read); a > float64(2*len(offs)) || rows < 500 || r.s.flat.taken-taken < 5*len(offs) {
			t.Errorf("%s: %d entries (%d rows) read with %v allocations, %d by the fast path", side, len(offs), rows, a, (r.s.flat.taken-taken)/6)
		}
	}
}

// demoReader is entryReader on the demo dump of side.
func demoReader(t *testing.T, side string) ([]int64, *EntryReader) {
	t.Helper()
	return entryReader(t, filepath.Join(testkit.Testdata(t), "demo", "dumps", side, "dump.json"))
}

// entryReader opens an EntryReader on the dump.json at path (closed when
// the test ends) and gives its entries' offsets.
func entryReader(t *testing.T, path string) ([]int64, *EntryReader) {
	t.Helper()
	offs, err := entryOffsets(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewEntryReader(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return offs, r
}
