package msprobe

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

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
	const a, b, c = "Functional.a.0.forward", "Functional.b.0.forward", "Functional.c.0.forward"
	tests := []struct {
		name, file, python string // python: the same dump as a dict holds it
		line               int
	}{
		{"one repeat", a + "=1 " + b + "=2 " + a + "=3 " + c + "=4", a + "=3 " + b + "=2 " + c + "=4", 16},
		{"three times, last at the end", a + "=1 " + a + "=2 " + b + "=5 " + a + "=3", a + "=3 " + b + "=5", 11},
		{"two data keys", a + "=1 " + b + "=2|" + c + "=7 " + a + "=8", c + "=7 " + a + "=8", 17},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			file, want := dumpOf(t, tc.file), dumpOf(t, tc.python)
			var wantE []Entry
			if _, err := ScanFile(want, func(e *Entry) error { wantE = append(wantE, *e); return nil }); err != nil {
				t.Fatal(err)
			}
			// the common path stops at the repeat, at its line
			_, err := ScanFile(file, func(*Entry) error { return nil })
			var se *source.Error
			if !errors.Is(err, ErrRepeatedKey) || !errors.As(err, &se) || se.Line != tc.line {
				t.Fatalf("ScanFile: %v; want a repeated key at line %d", err, tc.line)
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
// tables take, whether the input's size is unknown (growth by a quarter),
// known with names spread evenly (growth towards the foretold count), or
// known with the density changing along the file.
func TestNameSet(t *testing.T) {
	const n = 200_000
	for _, c := range []struct {
		name     string
		at       func(i int) (off, size int64)
		min, max float64 // bytes a name at the end
	}{
		{"size unknown", func(int) (int64, int64) { return 0, 0 }, 8, 10.1},
		{"even", func(i int) (int64, int64) { return int64(i)*300 + 100, n*300 + 200 }, 8, 9.5},
		{"sparse then dense", func(i int) (int64, int64) {
			if i < n/10 {
				return int64(i) * 3000, n * 600
			}
			return n*300 + int64(i-n/10)*300, n * 600
		}, 8, 16},
		{"dense then sparse", func(i int) (int64, int64) {
			if i < n/2 {
				return int64(i) * 10, n * 1000
			}
			return n*5 + int64(i-n/2)*1990, n * 1000
		}, 8, 16},
	} {
		t.Run(c.name, func(t *testing.T) {
			var s nameSet
			defer s.release()
			for i := range n {
				off, size := c.at(i)
				if s.add([]byte(fmt.Sprint("Functional.x.", i, ".forward")), off, size) {
					t.Fatalf("name %d reported as seen", i)
				}
			}
			if !s.add([]byte("Functional.x.77.forward"), 0, 0) {
				t.Error("a repeated name not reported")
			}
			slots := 0
			for k := range s.parts {
				slots += s.parts[k].size
			}
			b := float64(slots*slotBytes) / n
			t.Logf("%.1f bytes a name", b)
			if b < c.min || b > c.max {
				t.Errorf("%.1f bytes a name, want %.1f to %.1f", b, c.min, c.max)
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

// TestHashCollisionPath: when the name set takes two names for one (their
// kept hash bits agree), the reader stops with ErrRepeatedKey although no
// key repeats; FindRepeatsAfter then gives an empty plan, and the file
// read with it gives what a plain read gives.
func TestHashCollisionPath(t *testing.T) {
	p := filepath.Join(t.TempDir(), "dump.json")
	data := dumpWith(`"A.0.forward": {"output": [` + tensorA + `]}, "B.0.forward": {"input_args": [` + tensorA + `]}`)
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	collided := &source.Error{File: p, Line: 3, Expected: `each key of "data" once`, Found: `"B.0.forward" again`, Err: ErrRepeatedKey}
	plan, err := FindRepeatsAfter(collided)
	if err != nil || plan == nil {
		t.Fatalf("FindRepeatsAfter(collision) = %v, %v; want an empty plan", plan, err)
	}
	read := func(plan *Repeats) []Entry {
		var es []Entry
		if _, err := ScanFileWith(p, plan, func(e *Entry) error {
			c := *e
			c.Items = slices.Clone(e.Items)
			es = append(es, c)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return es
	}
	if got, want := rowsOf(read(plan)), rowsOf(read(nil)); !slices.Equal(got, want) || len(want) != 2 {
		t.Errorf("read with the collision's plan:\n got %q\nwant %q", got, want)
	}
}

// BenchmarkNameSet adds a million distinct entry names, as a dump of a
// million entries does.
func BenchmarkNameSet(b *testing.B) {
	names := make([][]byte, 1_000_000)
	for i := range names {
		names[i] = []byte(fmt.Sprint("Module.model.layers.", i%64, ".mlp.MLP.forward.", i/64))
	}
	size := int64(len(names)) * 1000
	for b.Loop() {
		var s nameSet
		for i, n := range names {
			if s.add(n, int64(i)*1000, size) {
				b.Fatal("a false repeat")
			}
		}
		s.release()
	}
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
			_, err = ScanReuseWith(f, p, plan, keep)
		} else {
			_, err = ScanFileWith(p, plan, keep)
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
	kf := newKeyFilter(p, NoRepeats(p))
	for i := range 3000 {
		if at, skip, err := kf.member([]byte(fmt.Sprint("Functional.a.", i, ".forward")), i+1, int64(i)); at != nil || skip || err != nil {
			t.Fatalf("member %d: %v %v %v; want its own body", i, at, skip, err)
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
