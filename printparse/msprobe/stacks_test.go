package msprobe

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/layermap/layermap/printparse/testkit"
)

// TestReadStacksLikeReadStack: the streaming reader gives every name the
// frames the whole-file reader gives, on the corpus and on the formats'
// corner cases, and the same errors.
func TestReadStacksLikeReadStack(t *testing.T) {
	files := testkit.FilesNamed(t, testkit.Corpus(t, "msprobe"), "stack.json", 1)
	dir := t.TempDir()
	for i, src := range []string{
		`{}`,
		`{"0": [["a", "b", 3], ["f1", "f2"]], "1": [["b", "c"], "one frame"], "2": [["d"], null], "3": [1, 2, 3], "4": "x"}`,
		`{"0": [], "a": ["f1"], "b": null, "c": "single", "d": ["f1"]}`,
		`{"a": ["f1", 2, null], "0": [["x"], ["y"]]}`,
		`{"0": [["a"], ["f"]], "1": [["a"], ["g"]], "0": [["b"], ["h"]]}`,
		`{"a": ["f"], "a": ["g"]}`,
		`{"0": [["a"], 5]}`,
		`{"a": 5}`,
		`{"0": [["a"], ["f"]], "b": 5}`,
		`[1, 2]`,
		`{"a": ["f"]`,
		`{"a": ["f"]} x`,
		// groups read as their names come
		`{"0": [["a"]]}`,
		`{"0": [["a"], ["f"], 3]}`,
		`{"0": [[], ["f"], 3], "1": [["b"], ["g"]]}`,
		`{"0": [[], ["f"]], "1": [[5, "b", [1, {"k": null}]], ["g"]]}`,
		`{"0": [["a", "b"], ["f"]], "1": [["c"], {"x": 1}], "2": [["d"], 7]}`,
		`{"0": [["a"], ["f"]], "1": [["b" "c"], ["f"]]}`,
		`{"0": [["a"], ["f"]], "1": [["b"], ["f"] x]}`,
		`{"0": [["a"], ["f"]], "1": [["b"] x, ["f"]]}`,
		"{\"0\": [ [ \"a\" ,\n \"b\" ] ,\n [\"f\"] ] ,\"1\" :[[\"c\"],\"g\"]}",
		`{"0": [["a"], ["f"]], "1": [["b"],`,
		`{"0": [["a"], ["f"]], "1": [["b"`,
		`{"0": [["a"], null]}`,
		`{"0": [["a"], ["f"]], "1": [["a", "b"], ["g"]]}`,
		`{"0": [1, ["f"]], "1": [["b"], ["g"]]}`,
		`{"0": [["a"], ["f"]], "1": [["b"], [["nested", 1.5], null, "x"]]}`,
		`{"0": [["a\u00e9\n"], ["f"]], "1": [["b"], "g"], "0": [["c"], ["h"]]}`,
	} {
		p := filepath.Join(dir, string(rune('a'+i)), "stack.json")
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(src), 0o644)
		files = append(files, p)
	}
	for _, p := range files {
		want, werr := ReadStack(p)
		got, gerr := ReadStacks(p)
		if (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() {
			t.Errorf("%s: error %v, want %v", p, gerr, werr)
			continue
		}
		if werr != nil {
			continue
		}
		if got.Len() != len(want) {
			t.Errorf("%s: %d names, want %d", p, got.Len(), len(want))
		}
		for name, fr := range want {
			g, ok := got.Frames(name)
			if !ok || !reflect.DeepEqual(g, fr) {
				t.Errorf("%s: %q: %q, want %q", p, name, g, fr)
			}
		}
		if _, ok := got.Frames("no such entry" + strings.Repeat("x", 3)); ok {
			t.Errorf("%s: an unknown name has frames", p)
		}
	}
}

// TestStacksManyNames checks the bucketed lookup on many names (up to
// tables outside the heap): each finds its own frames, the last set of a
// name wins, names never set find none, nothing after Release.
func TestStacksManyNames(t *testing.T) {
	for _, n := range []int{1, 2, 3, 100, 5000, 150000} {
		s := newStacks()
		for i := 0; i < n; i++ {
			s.frames = append(s.frames, []string{fmt.Sprint("frame ", i)})
			if i%7 == 3 {
				s.set(fmt.Sprint("Tensor.add.", i, ".forward"), 1) // set again below
			}
			if i%11 == 5 {
				s.set(fmt.Sprint("Tensor.add.", i, ".forward"), 1) // set again at the end
				continue
			}
			s.set(fmt.Sprint("Tensor.add.", i, ".forward"), int32(i+1))
		}
		for i := 5; i < n; i += 11 {
			s.set(fmt.Sprint("Tensor.add.", i, ".forward"), int32(i+1))
		}
		s.done()
		if s.Len() != n {
			t.Fatalf("n=%d: Len %d", n, s.Len())
		}
		for i := 0; i < n; i++ {
			fr, ok := s.Frames(fmt.Sprint("Tensor.add.", i, ".forward"))
			if !ok || len(fr) != 1 || fr[0] != fmt.Sprint("frame ", i) {
				t.Fatalf("n=%d: Frames(%d) = %v %v", n, i, fr, ok)
			}
			if _, ok := s.Frames(fmt.Sprint("Tensor.mul.", i, ".forward")); ok {
				t.Fatalf("n=%d: a name never set found frames", n)
			}
		}
		s.Release()
		if _, ok := s.Frames("Tensor.add.0.forward"); ok || s.Len() != 0 {
			t.Fatalf("n=%d: frames found after Release", n)
		}
		s.Release()
	}
}

// TestStacksNext: lookups through a cursor answer as Frames does in any
// order (the order set, several runs of it interleaved, more than the
// cursor follows, backwards, shuffled), with names set twice and names
// not set, for ids by runs (few groups and many) and by name (each name
// its own frames, as in the old format); first on a table no other
// lookup indexed, where the names in the order set, and the groups side
// by side, need no index when no name repeats and the groups are few.
func TestStacksNext(t *testing.T) {
	t.Parallel()
	const n = 3000
	name := func(i int) string { return fmt.Sprintf("Module.layers.%d.forward.%d", i%7, i) }
	for _, group := range []int{1000, 40, 1} { // names a frames list
		for _, repeats := range []bool{false, true} {
			want := map[string]int{}
			fill := func() *Stacks {
				s := newStacks()
				for i := range n {
					id := i/group + 1
					for len(s.frames) < id {
						s.frames = append(s.frames, []string{fmt.Sprint("frame ", len(s.frames))})
					}
					s.set(name(i), int32(id))
					want[name(i)] = id
					if repeats && i%11 == 0 { // set again later: the last set wins
						s.set(name(i/2), int32(id))
						want[name(i/2)] = id
					}
				}
				s.done()
				return s
			}
			s := fill()
			if s.Len() != len(want) {
				t.Fatalf("group %d repeats %v: Len %d, want %d", group, repeats, s.Len(), len(want))
			}
			orders := map[string][]int{}
			for i := range n + 10 {
				orders["set"] = append(orders["set"], i)
				orders["backwards"] = append(orders["backwards"], n+9-i)
			}
			for _, runs := range []int{2, 16, 17, 40} {
				k := fmt.Sprintf("%d runs", runs)
				for i := range n / runs { // run r is names r*n/runs on
					for r := range runs {
						orders[k] = append(orders[k], r*(n/runs)+i)
					}
				}
			}
			for i := range n {
				orders["shuffled"] = append(orders["shuffled"], (i*7919+13)%(n+10))
				// the groups side by side: each group's first name, then
				// the names after them (the cursor's runs)
				orders["by group"] = append(orders["by group"], i%3*1000+i/3)
			}
			for o, idx := range orders {
				fresh := fill()
				var c StackCursor
				for _, i := range idx {
					if i >= n {
						continue
					}
					w := want[name(i)]
					if got, ok := fresh.FramesNext(&c, name(i)); !ok || got[0] != fmt.Sprint("frame ", w-1) {
						t.Fatalf("group %d repeats %v order %s, no index yet: FramesNext(%q) = %q, %v; want %d", group, repeats, o, name(i), got, ok, w)
					}
				}
				if indexed := fresh.indexed.Load(); (o == "set" || o == "by group") && group == 1000 && indexed != repeats {
					t.Errorf("group %d repeats %v order %s: indexed %v", group, repeats, o, indexed)
				}
				fresh.Release()
				c = StackCursor{}
				for _, i := range idx {
					for _, nm := range []string{name(i), name(i) + "x", "Tensor.add." + fmt.Sprint(i) + ".forward"} {
						w, wok := want[nm]
						got, ok := s.FramesNext(&c, nm)
						if ok != wok || ok && got[0] != fmt.Sprint("frame ", w-1) {
							t.Fatalf("group %d repeats %v order %s: FramesNext(%q) = %q, %v; want %d, %v", group, repeats, o, nm, got, ok, w, wok)
						}
						if fr, ok := s.Frames(nm); ok != wok || ok && fr[0] != got[0] {
							t.Fatalf("group %d repeats %v: Frames(%q) = %q, %v; want %q", group, repeats, nm, fr, ok, got)
						}
					}
				}
			}
			s.Release()
			var c StackCursor
			if _, ok := s.FramesNext(&c, name(1)); ok || s.Len() != 0 {
				t.Fatal("names left after Release")
			}
		}
	}
	// Hostile input: one name set many times, and two names alternating,
	// in a run and each with its own frames (done stays linear in a
	// name's repeats: 200,000 of them here).
	for _, names := range [][]string{{"same"}, {"a.1", "b"}} {
		for _, own := range []bool{false, true} {
			const sets = 200000
			s := newStacks()
			s.frames = append(s.frames, []string{"f"})
			for i := range sets {
				id := int32(1)
				if own {
					s.frames = append(s.frames, []string{fmt.Sprint(i)})
					id = int32(len(s.frames))
				}
				s.set(names[i%len(names)], id)
			}
			s.done()
			var c StackCursor
			for k, nm := range names {
				w := "f"
				if own {
					w = fmt.Sprint(sets - len(names) + k)
				}
				if got, ok := s.FramesNext(&c, nm); !ok || got[0] != w {
					t.Fatalf("%d repeats: FramesNext(%q) = %q, %v; want %q", sets, nm, got, ok, w)
				}
				if got, ok := s.Frames(nm); !ok || got[0] != w {
					t.Fatalf("%d repeats: Frames(%q) = %q, %v; want %q", sets, nm, got, ok, w)
				}
			}
			if s.Len() != len(names) {
				t.Fatalf("Len %d, want %d", s.Len(), len(names))
			}
			s.Release()
		}
	}
	var none *Stacks
	var c StackCursor
	if _, ok := none.FramesNext(&c, "a"); ok {
		t.Fatal("a nil Stacks has names")
	}
}

// TestReadStacksManyGroups: a stack.json of more keys than those checked
// by name streams (the rest checked by hash), and a repeated key, early
// or late, grouped or old format, goes to the whole-file reader; either
// way every name has ReadStack's frames, and an error is ReadStack's.
func TestReadStacksManyGroups(t *testing.T) {
	t.Parallel()
	const n = 5000
	grouped := func(keys []string) string {
		var b strings.Builder
		b.WriteString("{")
		for i, k := range keys {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, `%q: [["Tensor.op%d.0.forward", "Tensor.op%d.1.forward"], ["File m.py, line %d, in f"]]`, k, i, i, i)
		}
		b.WriteString("}")
		return b.String()
	}
	seq := func(n int) []string {
		keys := make([]string, n)
		for i := range keys {
			keys[i] = fmt.Sprint(i)
		}
		return keys
	}
	oldFormat := func(n int) string {
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, `"n%d": ["File m.py, line %d, in f"]`, i, i)
		}
		return b.String()
	}
	dir := t.TempDir()
	for _, c := range []struct {
		name     string
		src      string
		fallback bool
	}{
		{"unique", grouped(seq(n)), false},
		{"late key repeated", grouped(append(seq(n), "4500")), true},
		{"early key repeated late", grouped(append(seq(n), "10")), true},
		{"grouped only past the keys checked by name", grouped(append(seq(n)[1:], "0")), false},
		// found grouped by a "0" read whole, late: Python keeps the last "1"
		{"late whole group zero", `{"1": [["a"], ["f"]], "2": [["a"], ["h"]], ` + oldFormat(n) + `, "1": [["a"], ["g"]], "0": "x"}`, true},
		// old format: a repeat past the keys checked by name
		{"old format repeated null", `{"a": ["f"], ` + oldFormat(n) + `, "a": null}`, true},
		{"old format repeated, first bad", `{"a": 5, ` + oldFormat(n) + `, "a": ["g"]}`, true},
		{"old format repeated, the error's place", `{"a": ["f"], "b": 5, ` + oldFormat(n) + `, "a": 7}`, true},
		{"old format unique", `{` + oldFormat(n) + `}`, false},
	} {
		p := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_")+".json")
		if err := os.WriteFile(p, []byte(c.src), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := readStacks(p)
		if fell := errors.Is(err, errStackFallback); fell != c.fallback || err != nil && !fell {
			t.Errorf("%s: streaming reader: %v, want the whole-file reader %v", c.name, err, c.fallback)
		}
		want, werr := ReadStack(p)
		got, gerr := ReadStacks(p)
		if (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() {
			t.Errorf("%s: error %v, want %v", c.name, gerr, werr)
			continue
		}
		if werr != nil {
			continue
		}
		if got.Len() != len(want) {
			t.Errorf("%s: %d names, want %d", c.name, got.Len(), len(want))
		}
		for name, fr := range want {
			if g, ok := got.Frames(name); !ok || !reflect.DeepEqual(g, fr) {
				t.Fatalf("%s: %q: %q, want %q", c.name, name, g, fr)
			}
		}
	}
}
