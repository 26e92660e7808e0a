package msprobe

import (
	"bytes"
	"errors"
	"fmt"
	"hash/maphash"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/layermap/layermap/printparse/offheap"
	"github.com/layermap/layermap/printparse/source"
)

// dumpOf writes a dump.json whose "data" objects hold the members given
// as "name=max" (one tensor output with that Max); a "|" starts another
// "data" key.
func dumpOf(t *testing.T, members string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("{\n \"task\": \"statistics\",\n \"level\": \"mix\",\n \"framework\": \"pytorch\"")
	for _, data := range strings.Split(members, "|") {
		b.WriteString(",\n \"data\": {")
		for i, m := range strings.Fields(data) {
			name, max, _ := strings.Cut(m, "=")
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, "\n  %q: {\n   \"output\": [\n    {\"type\": \"torch.Tensor\", \"dtype\": \"torch.float32\", \"shape\": [2], \"Max\": %s, \"Min\": 0, \"Mean\": 0, \"Norm\": 1, \"requires_grad\": false}\n   ]\n  }", name, max)
		}
		b.WriteString("\n }")
	}
	b.WriteString("\n}\n")
	p := filepath.Join(t.TempDir(), "dump.json")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// rowsOf renders the entries' rows (lines aside) for comparison.
func rowsOf(es []Entry) []string {
	var out []string
	for _, e := range es {
		for _, it := range e.Items {
			out = append(out, fmt.Sprintf("%d %s %s max=%s", e.Index, e.Name, it.Name, it.Stats[0].Text))
		}
	}
	return out
}

// rowNames renders the entries' rows without positions.
func rowNames(es []Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Name)
		for _, it := range e.Items {
			out = append(out, fmt.Sprintf("  %s %s %s %s %s", it.Name, it.State, it.Dtype, it.Shape, it.Stats[0].Text))
		}
	}
	return out
}

// A "data" repeating keys reads as Python's json.load reads it: the first
// place, the last body; a second "data" replaces the first.
func TestRepeatedKeys(t *testing.T) {
	t.Parallel()
	const a, b, c = "Functional.a.0.forward", "Functional.b.0.forward", "Functional.c.0.forward"
	tests := []struct {
		name, file, python string // python: the same dump as a dict holds it
		line               int
	}{
		{"one repeat", a + "=1 " + b + "=2 " + a + "=3 " + c + "=4", a + "=3 " + b + "=2 " + c + "=4", 16},
		{"three times, last at the end", a + "=1 " + a + "=2 " + b + "=5 " + a + "=3", a + "=3 " + b + "=5", 11},
		{"two data keys", a + "=1 " + b + "=2|" + c + "=7 " + a + "=8", c + "=7 " + a + "=8", 17},
		{"repeat first", a + "=1 " + a + "=2 " + b + "=3 " + c + "=4", a + "=2 " + b + "=3 " + c + "=4", 11},
		{"repeat last", a + "=1 " + b + "=2 " + c + "=3 " + a + "=4", a + "=4 " + b + "=2 " + c + "=3", 21},
		{"two names repeated", a + "=1 " + b + "=2 " + c + "=3 " + b + "=4 " + a + "=5", a + "=5 " + b + "=4 " + c + "=3", 21},
		{"repeats in both data keys", a + "=1 " + a + "=2|" + c + "=7 " + c + "=8", c + "=8", 11},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			file, want := dumpOf(t, tc.file), dumpOf(t, tc.python)
			var wantE []Entry
			if _, err := ScanFile(want, func(e *Entry) error { wantE = append(wantE, *e); return nil }); err != nil {
				t.Fatal(err)
			}
			// the common path reads "data" to its end, then names the
			// first repeat at its line (every reader, the skim ahead too)
			_, err := ScanFile(file, func(*Entry) error { return nil })
			var se *source.Error
			if !errors.Is(err, ErrRepeatedKey) || !errors.As(err, &se) || se.Line != tc.line {
				t.Fatalf("ScanFile: %v; want a repeated key at line %d", err, tc.line)
			}
			for _, pipelined := range []bool{false, true} {
				f, err := os.Open(file)
				if err != nil {
					t.Fatal(err)
				}
				_, err = scan(f, file, nil, func(*Entry) error { return nil }, scanMode{pipelined: pipelined})
				f.Close()
				if !errors.Is(err, ErrRepeatedKey) || !errors.As(err, &se) || se.Line != tc.line {
					t.Errorf("scan, pipelined %v: %v; want a repeated key at line %d", pipelined, err, tc.line)
				}
			}
			for _, w := range []skimWorkers{{n: 1}, {n: 3, chunk: 64}} {
				_, err := skimWith(file, nil, w, func(*SkimEntry) error { return nil })
				if !errors.Is(err, ErrRepeatedKey) || !errors.As(err, &se) || se.Line != tc.line {
					t.Errorf("skim, %d workers: %v; want a repeated key at line %d", w.n, err, tc.line)
				}
			}
			if _, err := entryNames(file, nil, repeatCheck{}); !errors.Is(err, ErrRepeatedKey) || !errors.As(err, &se) || se.Line != tc.line {
				t.Errorf("entryNames: %v; want a repeated key at line %d", err, tc.line)
			}
			var got []Entry
			resets := 0
			if _, err := ScanFileExact(file, func() { got, resets = nil, resets+1 }, func(e *Entry) error { got = append(got, *e); return nil }); err != nil {
				t.Fatal(err)
			}
			if g, w := rowsOf(got), rowsOf(wantE); !slices.Equal(g, w) || resets != 1 {
				t.Errorf("ScanFileExact (%d resets):\n got %q\nwant %q", resets, g, w)
			}
			names, err := EntryNames(file)
			if err != nil {
				t.Fatal(err)
			}
			var wantNames []string
			for _, e := range wantE {
				wantNames = append(wantNames, e.Name)
			}
			if !slices.Equal(names, wantNames) {
				t.Errorf("EntryNames = %q, want %q", names, wantNames)
			}
			if skimmed, err := SkimEntryNames(file); err != nil || !slices.Equal(skimmed, wantNames) {
				t.Errorf("SkimEntryNames = %q (%v), want %q", skimmed, err, wantNames)
			}
			// skimmed, then read at the offsets it gives
			type at struct {
				name     string
				off, end int64
			}
			var skimmed []at
			if _, err := SkimExact(file, func() { skimmed = nil }, func(e *SkimEntry) error {
				skimmed = append(skimmed, at{string(e.Name), e.Offset, e.End})
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			r, err := NewEntryReader(file)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			var read []Entry
			for i, s := range skimmed {
				end := s.end
				if end == 0 && i+1 < len(skimmed) {
					end = skimmed[i+1].off
				} else if end == 0 {
					end = -1
				}
				if err := r.Read(i, s.off, end, 0, func(e *Entry) error {
					c := *e
					c.Items = slices.Clone(e.Items)
					read = append(read, c)
					return nil
				}); err != nil {
					t.Fatalf("read %s: %v", s.name, err)
				}
			}
			if g, w := rowsOf(read), rowsOf(wantE); !slices.Equal(g, w) {
				t.Errorf("SkimExact + EntryReader:\n got %q\nwant %q", g, w)
			}
		})
	}
}

// TestNameSet: no false repeat, a repeat found, and the bytes a name the
// lists hold (their heap chunks whole, the pages written of the others).
func TestNameSet(t *testing.T) {
	for _, n := range []int{10, 5_000, 200_000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			var s nameSet
			defer s.release()
			for i := range n {
				s.add([]byte(fmt.Sprint("Functional.x.", i, ".forward")))
			}
			b := float64(s.held()) / float64(n)
			t.Logf("%.2f bytes a name", b)
			if n == 200_000 && (b < hashBytes || b > 6.5) {
				t.Errorf("%.2f bytes a name, want 6 to 6.5", b)
			}
			s.add([]byte("Functional.x.7.forward"))
			h := s.hashOf([]byte("Functional.x.7.forward"))
			if got := s.repeats(); !slices.Equal(got, []uint64{hashKey(h)}) {
				t.Errorf("repeats = %x, want %x", got, hashKey(h))
			}
			if s.n != n+1 {
				t.Errorf("n = %d after repeats, want %d", s.n, n+1)
			}
			for k := range s.parts {
				if p := &s.parts[k]; p.n != 0 || p.chunks != nil {
					t.Fatalf("part %d not freed by repeats", k)
				}
			}
		})
	}
}

// held is the bytes the set's lists hold: their heap chunks whole, the
// pages written of the others.
func (s *nameSet) held() int {
	held := 0
	for k := range s.parts {
		for _, c := range s.parts[k].chunks {
			if cap(c) >= offheap.Min {
				held += (len(c) + 4095) &^ 4095
			} else {
				held += cap(c)
			}
		}
	}
	return held
}

// scratch is the bytes repeats takes besides the lists.
func (s *nameSet) scratch() int {
	largest := 0
	for k := range s.parts {
		largest = max(largest, s.parts[k].n)
	}
	return largest*hashBytes + (max(largest/bucketHashes, 1)+1)*4
}

// TestNameSetParts: the hashes that agree on all 52 bits kept (the part,
// from the top 4, and the low 48) are found, in each part, among many
// and in buckets of any size; those that differ in the part, or only in
// the bits between, are not.
func TestNameSetParts(t *testing.T) {
	const p3, p15 = 3 << 60, 15 << 60
	distinct := func(n int, part uint64) []uint64 { // spread over a part's 48 bits
		hs := make([]uint64, n)
		for i := range hs {
			hs[i] = part | uint64(i)*0x9E3779B97F4A7C15&hashMask
		}
		return hs
	}
	tests := []struct {
		name   string
		hashes []uint64
		want   []uint64
	}{
		{"none", distinct(1000, p3), nil},
		{"one name", []uint64{p3 | 5}, nil},
		{"two names, one hash", []uint64{p3 | 5, p3 | 5}, []uint64{3<<48 | 5}},
		{"same 48 bits, other part", []uint64{p3 | 5, p15 | 5}, nil},
		{"differ between part and kept bits", []uint64{p3 | 5, p3 | 1<<50 | 5}, []uint64{3<<48 | 5}},
		{"first and last of many", append(distinct(5000, p15), p15|0), []uint64{15 << 48}},
		{"in every part", func() (hs []uint64) {
			for k := range uint64(nameParts) {
				hs = append(hs, distinct(300, k<<60)...)
				hs = append(hs, k<<60|hashMask, k<<60|hashMask)
			}
			return hs
		}(), func() (ws []uint64) {
			for k := range uint64(nameParts) {
				ws = append(ws, k<<48|hashMask)
			}
			return ws
		}()},
		{"one bucket, one value", slices.Repeat([]uint64{p3 | 7}, 20_000), []uint64{3<<48 | 7}},
		{"one bucket, many values", append(func() (hs []uint64) {
			for i := range uint64(20_000) {
				hs = append(hs, p3|i) // all in bucket 0
			}
			return hs
		}(), p3|19_999, p3|3), []uint64{3<<48 | 3, 3<<48 | 19_999}},
		{"top and bottom of the 48 bits", []uint64{p3 | hashMask, p3, p3 | hashMask, p3 | 1<<47, p3}, []uint64{3 << 48, 3<<48 | hashMask}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := nameSet{hash: func(b []byte) uint64 {
				var i int
				fmt.Sscan(string(b), &i)
				return tc.hashes[i]
			}}
			defer s.release()
			for i := range tc.hashes {
				s.add([]byte(fmt.Sprint(i)))
			}
			if got := s.repeats(); !slices.Equal(got, tc.want) {
				t.Errorf("repeats = %x, want %x", got, tc.want)
			}
		})
	}
}

// FuzzSkim: the skim (with its plan for repeated keys) and the entry
// reader give the entries, rows and offsets the full scan gives, or both
// refuse the file; errors carry a line inside it; nothing panics.
func FuzzSkim(f *testing.F) {
	f.Add([]byte(`{"data": {"A.0.forward": {"output": [{"type": "torch.Tensor", "Max": 1}]}, "B.0.forward": {}, "A.0.forward": {"output": [2]}}}`))
	f.Add([]byte(`{"data": {"A.0.forward": {}}, "data": {"B.0.forward": {"input_args": [null]}}}`))
	f.Add([]byte("{\"data\": {\"A.0.forward\": {\"x\": \"\\u00e9\xc3\xa9\"}}}"))
	f.Add([]byte("{\"data\": {\"A.0.forward\": {\"x\": \"\xff\"}}}"))
	f.Add([]byte(dumpWith(`"A.0.forward": {"input_args": [` + tensorA + `]}, "A.0.forward": {"output": [` + tensorA + `]}`)))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(dir, "dump.json")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		lines := strings.Count(string(data), "\n") + 1
		positioned := func(what string, err error) {
			var se *source.Error
			if !errors.As(err, &se) || se.Line < 1 || se.Line > lines {
				t.Fatalf("%s: error without a line inside the input: %v", what, err)
			}
		}
		var want []Entry
		_, serr := ScanFileExact(p, func() { want = nil }, func(e *Entry) error {
			c := *e
			c.Items = slices.Clone(e.Items)
			want = append(want, c)
			return nil
		})
		type at struct{ off, end int64 }
		var skimmed []at
		_, kerr := SkimExact(p, func() { skimmed = nil }, func(e *SkimEntry) error {
			skimmed = append(skimmed, at{e.Offset, e.End})
			return nil
		})
		if kerr != nil {
			positioned("Skim", kerr)
			if serr == nil {
				t.Fatalf("Skim refuses what Scan reads: %v", kerr)
			}
			return
		}
		r, err := NewEntryReader(p)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		var got []Entry
		var rerr error
		for i, s := range skimmed {
			end := s.end
			if end == 0 {
				end = -1
				if i+1 < len(skimmed) {
					end = skimmed[i+1].off
				}
			}
			if rerr = r.Read(i, s.off, end, 0, func(e *Entry) error {
				c := *e
				c.Items = slices.Clone(e.Items)
				got = append(got, c)
				return nil
			}); rerr != nil {
				break
			}
		}
		switch {
		case serr != nil:
			positioned("Scan", serr)
			if rerr == nil {
				t.Fatalf("Scan refuses (%v), skim and reader read", serr)
			}
			positioned("EntryReader", rerr)
		case rerr != nil:
			t.Fatalf("Scan reads, EntryReader refuses: %v", rerr)
		default:
			if g, w := rowNames(got), rowNames(want); !slices.Equal(g, w) {
				t.Fatalf("skim + reader rows %q\nscan rows %q", g, w)
			}
			for i := range want {
				if want[i].Offset != got[i].Offset {
					t.Fatalf("entry %s: scan gives offset %d, skim %d", want[i].Name, want[i].Offset, got[i].Offset)
				}
			}
		}
	})
}

// TestHashCollisionPath: when two names' kept hash bits agree, the
// reader reads the names of "data" again when it ends, finds no repeat
// and goes on: every reader gives what a read with no check gives; with
// a key repeated as well, the error names that one. When the names
// cannot be read again (a source that is not the file read), the error
// names the end of "data": FindRepeatsAfter then gives the file's plan,
// an empty one when only hashes collided.
func TestHashCollisionPath(t *testing.T) {
	t.Parallel()
	const a, b, c = "A.0.forward", "B.0.forward", "C.0.forward"
	collide := repeatCheck{hash: func(name []byte) uint64 {
		if string(name) == b {
			name = []byte(a) // B hashes as A
		}
		return maphash.Bytes(fixedSeed, name)
	}}
	tests := []struct {
		name    string
		members string
		line    int    // of the error (0: none)
		found   string // its Found
	}{
		{"collision only", a + "=1 " + b + "=2 " + c + "=3", 0, ""},
		{"collision, then a repeat", a + "=1 " + b + "=2 " + c + "=3 " + b + "=4", 21, `"` + b + `" again`},
		{"collision and repeat alike", a + "=1 " + b + "=2 " + a + "=3", 16, `"` + a + `" again`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := dumpOf(t, tc.members)
			var want []string
			if tc.line == 0 {
				want = readAll(t, p, NoRepeats(p), true)
			}
			for _, pipelined := range []bool{false, true} {
				var es []Entry
				f, err := os.Open(p)
				if err != nil {
					t.Fatal(err)
				}
				_, err = scan(f, p, nil, func(e *Entry) error { es = append(es, *e); return nil }, scanMode{pipelined: pipelined, check: collide})
				f.Close()
				checkRepeatErr(t, fmt.Sprintf("pipelined %v", pipelined), err, tc.line, tc.found)
				if err == nil && !slices.Equal(rowsOf(es), want) {
					t.Errorf("pipelined %v: rows %q, want %q", pipelined, rowsOf(es), want)
				}
			}
			var names []string
			_, err := skimWith(p, nil, skimWorkers{n: 1, check: collide}, func(e *SkimEntry) error { names = append(names, string(e.Name)); return nil })
			checkRepeatErr(t, "Skim", err, tc.line, tc.found)
			_, err = entryNames(p, nil, collide)
			checkRepeatErr(t, "EntryNames", err, tc.line, tc.found)
		})
	}

	// the names cannot be read again: the error names the end of "data"
	p := dumpOf(t, a+"=1 "+b+"=2")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, src := range []string{filepath.Join(t.TempDir(), "dump.json"), dumpOf(t, a+"=1 "+c+"=2")} {
		_, err := scan(bytes.NewReader(data), src, nil, func(*Entry) error { return nil }, scanMode{check: collide})
		var se *source.Error
		if !errors.Is(err, ErrRepeatedKey) || !errors.As(err, &se) || se.Line != 16 || se.Found != "a key again" {
			t.Fatalf("Scan of %s, not the file read: %v; want a repeated key at line 16, the end of data", src, err)
		}
	}

	// a file whose names nearly all repeat: the error names the end of
	// "data" rather than hold them all
	p3 := dumpOf(t, a+"=1 "+b+"=2 "+c+"=3 "+a+"=4 "+b+"=5 "+c+"=6")
	_, err = scanFile(p3, nil, func(*Entry) error { return nil }, scanMode{check: repeatCheck{maxNamed: 2}})
	checkRepeatErr(t, "names held", err, 36, "a key again")
	if plan, err := FindRepeatsAfter(err); err != nil || plan == nil || len(plan.last) != 3 {
		t.Errorf("FindRepeatsAfter: %v, %v; want the 3 repeated names", plan, err)
	}
	_, err = scanFile(p3, nil, func(*Entry) error { return nil }, scanMode{check: repeatCheck{maxNamed: 3}})
	checkRepeatErr(t, "3 names held", err, 21, `"`+a+`" again`)

	collided := &source.Error{File: p, Line: 16, Expected: `each key of "data" once`, Found: "a key again", Err: ErrRepeatedKey}
	plan, err := FindRepeatsAfter(collided)
	if err != nil || plan == nil {
		t.Fatalf("FindRepeatsAfter(collision) = %v, %v; want an empty plan", plan, err)
	}
	if got, want := readAll(t, p, plan, false), readAll(t, p, nil, false); !slices.Equal(got, want) || len(want) != 2 {
		t.Errorf("read with the collision's plan:\n got %q\nwant %q", got, want)
	}
}

// fixedSeed hashes names in tests that force collisions.
var fixedSeed = maphash.MakeSeed()

// checkRepeatErr checks that err is nil (line 0), or a repeated key at
// line with found.
func checkRepeatErr(t *testing.T, what string, err error, line int, found string) {
	t.Helper()
	var se *source.Error
	switch {
	case line == 0 && err != nil:
		t.Errorf("%s: %v; want no error", what, err)
	case line != 0 && (!errors.Is(err, ErrRepeatedKey) || !errors.As(err, &se) || se.Line != line || se.Found != found):
		t.Errorf("%s: %v; want a repeated key at line %d, found %s", what, err, line, found)
	}
}

// readAll reads the file at path with plan and renders its rows.
func readAll(t *testing.T, path string, plan *Repeats, pipelined bool) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var es []Entry
	if _, err := scan(f, path, plan, func(e *Entry) error {
		c := *e
		c.Items = slices.Clone(e.Items)
		es = append(es, c)
		return nil
	}, scanMode{pipelined: pipelined}); err != nil {
		t.Fatal(err)
	}
	return rowsOf(es)
}

// BenchmarkNameSet adds a million distinct entry names, as a dump of a
// million entries does, and looks for repeats; it reports the bytes a
// name the lists hold, and at their peak, with the check's scratch.
func BenchmarkNameSet(b *testing.B) {
	names := make([][]byte, 1_000_000)
	for i := range names {
		names[i] = []byte(fmt.Sprint("Module.model.layers.", i%64, ".mlp.MLP.forward.", i/64))
	}
	var held, peak int
	for b.Loop() {
		var s nameSet
		for _, n := range names {
			s.add(n)
		}
		held, peak = s.held(), s.held()+s.scratch()
		if s.repeats() != nil {
			b.Fatal("a false repeat")
		}
		s.release()
	}
	b.ReportMetric(float64(held)/float64(len(names)), "B/name")
	b.ReportMetric(float64(peak)/float64(len(names)), "peak-B/name")
}

// TestNoRepeats: a file read with NoRepeats gives what a read that looks
// for repeats gives, on both scanners, and its key filter keeps no name
// and makes no allocation.
func TestNoRepeats(t *testing.T) {
	var members []string
	for i := range 3000 {
		members = append(members, fmt.Sprintf("Module.layers.%d.mlp.MLP.forward.%d=%d", i%48, i/48, i))
	}
	p := dumpOf(t, strings.Join(members, " "))
	read := func(plan *Repeats, pipelined bool) []string {
		t.Helper()
		var es []Entry
		keep := func(e *Entry) error {
			c := *e
			c.Items = slices.Clone(e.Items)
			es = append(es, c)
			return nil
		}
		var err error
		if pipelined {
			var f *os.File
			if f, err = os.Open(p); err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			_, err = ScanReuseWith(f, p, ScanOptions{Plan: plan}, keep)
		} else {
			_, err = ScanFileWith(p, ScanOptions{Plan: plan}, keep)
		}
		if err != nil {
			t.Fatal(err)
		}
		return rowsOf(es)
	}
	want := read(nil, false)
	if len(want) != 3000 {
		t.Fatalf("%d rows, want 3000", len(want))
	}
	for _, pipelined := range []bool{false, true} {
		if got := read(NoRepeats(p), pipelined); !slices.Equal(got, want) {
			t.Errorf("pipelined %v: NoRepeats reads %d rows unlike the checked read", pipelined, len(got))
		}
	}
	kf := newKeyFilter(p, NoRepeats(p), repeatCheck{})
	for i := range 3000 {
		if at, skip := kf.member([]byte(fmt.Sprint("Functional.a.", i, ".forward")), i+1, int64(i)); at != nil || skip {
			t.Fatalf("member %d: %v %v; want its own body", i, at, skip)
		}
	}
	if kf.set.n != 0 {
		t.Errorf("NoRepeats' filter holds %d names, want none", kf.set.n)
	}
	name := []byte("Module.layers.0.mlp.MLP.forward.0")
	if n := testing.AllocsPerRun(100, func() { kf.member(name, 1, 0) }); n != 0 {
		t.Errorf("NoRepeats' filter: %v allocations a member, want none", n)
	}
	if NoRepeats(p).Path() != p {
		t.Errorf("Path = %q, want %q", NoRepeats(p).Path(), p)
	}
}
