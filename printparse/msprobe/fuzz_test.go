package msprobe

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/layermap/layermap/printparse/source"
	"github.com/layermap/layermap/printparse/testkit"
)

// FuzzScan feeds arbitrary bytes to Scan: it must never panic, entries
// must come with ascending members (none below its index), every error
// must be an *source.Error with a line inside the input, and input that
// Go's encoding/json accepts as an object with a "data" object of objects
// must not be refused for syntax.
func FuzzScan(f *testing.F) {
	f.Add([]byte(dumpWith(`"A.0.forward": {"input_args": [` + tensorA + `, null, [], {"type": "slice", "value": [1, null]}]}`)))
	f.Add([]byte(`{"data": {"X.parameters_grad": {"w": [{"type": "t", "Max": NaN, "Min": -Infinity}]}}}`))
	f.Add([]byte(`{"data": {"P.0.forward": {"input_args": [{"class_type": "torch.distributed.P2POp", "tensor": null, "op": "isend"}]}}}`))
	f.Add([]byte("{\"data\": {\"A.0.forward\": {\"x\": \"\\ud83d\\ude00\\u0041\"}}}"))
	f.Add([]byte(`{"data": {"a.debug": 1.5e308}}`))
	if src, err := os.ReadFile(filepath.Join(testkit.Corpus(f, "msprobe"), "golden/synth_multirank/npu/step0/rank0/dump.json")); err == nil {
		f.Add(src)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		lines := strings.Count(string(data), "\n") + 1
		for _, name := range []string{"dump.json", "debug.json"} {
			rows, member := 0, -1
			_, err := Scan(strings.NewReader(string(data)), name, func(e *Entry) error {
				// members count the entries msprobe skips too
				if e.Member <= member || e.Member < e.Index {
					t.Fatalf("entry %q: member %d after %d, index %d", e.Name, e.Member, member, e.Index)
				}
				member = e.Member
				for _, it := range e.Items {
					if it.Entry != e.Name || it.State == "" || it.DataName == "" {
						t.Fatalf("bad item %+v", it)
					}
					rows++
				}
				return nil
			})
			if err != nil {
				var de *source.Error
				if !errors.As(err, &de) {
					t.Fatalf("%s: error without line: %v", name, err)
				}
				if de.Line < 1 || de.Line > lines {
					t.Fatalf("%s: line %d outside 1..%d: %v", name, de.Line, lines, err)
				}
				if strings.Contains(de.Msg, "expected") && name == "dump.json" && syntaxOK(data) && strings.Contains(de.Msg, "found end of file") {
					t.Fatalf("valid JSON reported truncated: %v", err)
				}
			}
		}
		// ScanReuse's rows, completed in place, are Scan's.
		for _, name := range []string{"dump.json", "debug.json"} {
			c, r, errC, errR := scanCopiedInPlace(t, string(data), name)
			if (errC == nil) != (errR == nil) || strings.Join(c, "\n") != strings.Join(r, "\n") {
				t.Fatalf("%s: Scan (%v) and ScanReuse (%v) differ", name, errC, errR)
			}
		}
		// The counting scan gives the names mode's rows, P2POp, md5 and
		// error.
		for _, name := range []string{"dump.json", "debug.json"} {
			for _, pipelined := range []bool{false, true} {
				m := scanMode{reuse: true, names: true, pipelined: pipelined}
				if got, want := countByCount(string(data), name, m), countByNames(string(data), name, m); got != want {
					t.Fatalf("%s (pipelined %v): counted %s, want %s", name, pipelined, got, want)
				}
			}
		}
		// EntryNames-style skipping must agree with full parsing on syntax.
		lx := newLexer(strings.NewReader(string(data)), "x")
		errSkip := lx.skipValue("a value")
		lx2 := newLexer(strings.NewReader(string(data)), "x")
		p := parser{lx: lx2, t: &tree{}}
		_, errParse := p.value(0, "a value")
		if (errSkip == nil) != (errParse == nil) {
			t.Fatalf("skipValue err %v, parse err %v", errSkip, errParse)
		}
	})
}

// syntaxOK reports whether encoding/json accepts data (it has no NaN).
func syntaxOK(data []byte) bool {
	var v any
	return json.Unmarshal(data, &v) == nil
}

// FuzzReadSmallFiles feeds arbitrary bytes to ReadStack, ReadConstruct,
// ReadHeader and EntryNames: no panics, errors carry a line.
func FuzzReadSmallFiles(f *testing.F) {
	f.Add([]byte(`{"0": [["A.0.forward", "B.0.forward"], ["File x, line 1, in f, \n y"]], "1": "bad"}`))
	f.Add([]byte(`{"0": [["A.0.forward", 3, "B"], ["f"]], "1": [["C"], ["g"], 1], "2": [["D"]]}`))
	f.Add([]byte(`{"A.0.forward": ["f1", "f2"], "B": null}`))
	f.Add([]byte(`{"megatron_micro_step_number": 2, "A": ["P", 1], "B": null, "C": ""}`))
	f.Add([]byte(`{"task": "statistics", "data": {"A.0.forward": {}}, "framework": "pytorch"}`))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(dir, "x.json")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		lines := strings.Count(string(data), "\n") + 1
		checkErr := func(what string, err error) {
			if err == nil {
				return
			}
			var de *source.Error
			if !errors.As(err, &de) {
				t.Fatalf("%s: error without line: %v", what, err)
			}
			if de.Line < 1 || de.Line > lines {
				t.Fatalf("%s: line %d outside 1..%d", what, de.Line, lines)
			}
		}
		whole, err := ReadStack(p)
		checkErr("ReadStack", err)
		// the streaming reader agrees with the whole-file one
		st, serr := ReadStacks(p)
		checkErr("ReadStacks", serr)
		if (err == nil) != (serr == nil) {
			t.Fatalf("ReadStack err %v, ReadStacks err %v", err, serr)
		}
		if err == nil {
			if st.Len() != len(whole) {
				t.Fatalf("ReadStacks holds %d names, ReadStack %d", st.Len(), len(whole))
			}
			// through a cursor (before Frames, which may index the names),
			// in the names' order and in the map's
			var c StackCursor
			for _, name := range append(slices.Sorted(maps.Keys(whole)), slices.Collect(maps.Keys(whole))...) {
				if got, ok := st.FramesNext(&c, name); !ok || !slices.Equal(got, whole[name]) {
					t.Fatalf("ReadStacks FramesNext(%q) = %q, ReadStack %q", name, got, whole[name])
				}
			}
			if _, set := whole["\x00none"]; !set {
				if got, ok := st.FramesNext(&c, "\x00none"); ok {
					t.Fatalf("ReadStacks FramesNext of a name not set = %q", got)
				}
			}
			for name, frames := range whole {
				if got, ok := st.Frames(name); !ok || !slices.Equal(got, frames) {
					t.Fatalf("ReadStacks(%q) = %q, ReadStack %q", name, got, frames)
				}
			}
		}
		cons, err := ReadConstruct(p)
		checkErr("ReadConstruct", err)
		// the streamed common case agrees with the tree
		tcons, terr := constructTree(p)
		if fmt.Sprint(err) != fmt.Sprint(terr) || !maps.Equal(cons, tcons) {
			t.Fatalf("ReadConstruct %v, %v; through the tree %v, %v", cons, err, tcons, terr)
		}
		// the index agrees with it
		ix, ierr := ReadParentIndex(p)
		if fmt.Sprint(err) != fmt.Sprint(ierr) {
			t.Fatalf("ReadConstruct error %v, ReadParentIndex %v", err, ierr)
		}
		if err == nil {
			checkParentIndex(t, ix, cons)
			checkParentIndexOf(t, p, cons)
		}
		// the streaming reader of a few parents agrees with it
		want := map[string]bool{}
		for k := range cons {
			want[k] = true
		}
		parents, perr := ReadParents(p, want)
		checkErr("ReadParents", perr)
		if err == nil && perr == nil {
			for k, v := range parents {
				if cons[k] != v {
					t.Fatalf("ReadParents[%q] = %q, ReadConstruct %q", k, v, cons[k])
				}
			}
		}
		// CheckJSON is json.load's syntax: encoding/json's, and Python's
		// bare words
		cerr := CheckJSON(p)
		checkErr("CheckJSON", cerr)
		if utf8.Valid(data) && !bytes.Contains(data, []byte("NaN")) && !bytes.Contains(data, []byte("Infinity")) && (cerr == nil) != json.Valid(data) {
			t.Fatalf("CheckJSON: %v; json.Valid: %v", cerr, json.Valid(data))
		}
		h, err := ReadHeader(p)
		checkErr("ReadHeader", err)
		if err == nil && h.Framework == "" {
			t.Fatal("ReadHeader: empty framework")
		}
		names, err := EntryNames(p)
		checkErr("EntryNames", err)
		// the skim gives the same names where EntryNames reads the file
		if err == nil {
			skimmed, serr := SkimEntryNames(p)
			if serr != nil || !slices.Equal(skimmed, names) {
				t.Fatalf("SkimEntryNames = %q (%v), EntryNames %q", skimmed, serr, names)
			}
		}
		// EntryNames and Scan agree on the entries of a readable dump.
		if err == nil {
			n := 0
			if _, serr := ScanFile(p, func(*Entry) error { n++; return nil }); serr == nil {
				if len(names) < n {
					t.Fatalf("EntryNames %d < scanned %d", len(names), n)
				}
			}
		}
	})
}

// FuzzPyFloat: PyFloat must round-trip and use Python's layout.
func FuzzPyFloat(f *testing.F) {
	for _, v := range []float64{0, 1, 0.1, 1e-5, 1e16, 123.456, 5e-324} {
		f.Add(math.Float64bits(v))
	}
	f.Fuzz(func(t *testing.T, bits uint64) {
		v := math.Float64frombits(bits)
		s := PyFloat(v)
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return
		}
		back, err := strconv.ParseFloat(s, 64)
		if err != nil || back != v {
			t.Fatalf("PyFloat(%v) = %q does not round-trip", v, s)
		}
		if !strings.ContainsAny(s, ".e") {
			t.Fatalf("PyFloat(%v) = %q looks like an int", v, s)
		}
		if got := parseNumber([]byte(s)); math.Float64bits(got) != math.Float64bits(back) {
			t.Fatalf("parseNumber(%q) = %v", s, got)
		}
	})
}
