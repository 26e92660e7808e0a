package msprobe

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/layermap/layermap/printparse/testkit"
)

// constructPlain is readConstructPlain into a map.
func constructPlain(path string) (map[string]string, bool) {
	m := newConstructMap()
	ok := readConstructPlain(path, m)
	return m.m, ok
}

// constructTree is readConstructTree into a map.
func constructTree(path string) (map[string]string, error) {
	m := newConstructMap()
	if err := readConstructTree(path, m); err != nil {
		return nil, err
	}
	return m.m, nil
}

// checkParentIndex fails unless ix answers as the map construct does:
// every name's parent, "" for names it lacks, the number of names, and
// the module entries among names and parents.
func checkParentIndex(t *testing.T, ix *ParentIndex, construct map[string]string) {
	t.Helper()
	if ix.Len() != len(construct) {
		t.Fatalf("index holds %d names, construct.json %d", ix.Len(), len(construct))
	}
	want := map[string]bool{}
	for k, v := range construct {
		if got := ix.Parent(k); got != v {
			t.Fatalf("Parent(%q) = %q, want %q", k, got, v)
		}
		if got := ix.Parent(k + "x"); got != construct[k+"x"] {
			t.Fatalf("Parent(%q) = %q, want %q", k+"x", got, construct[k+"x"])
		}
		for _, s := range []string{k, v} {
			if _, _, _, ok := ModuleEntry(s); ok {
				want[s] = true
			}
		}
	}
	got := map[string]bool{}
	for m := range ix.Modules() {
		if got[m] {
			t.Fatalf("Modules lists %q twice", m)
		}
		got[strings.Clone(m)] = true
	}
	if !maps.Equal(got, want) {
		t.Fatalf("Modules = %v, want %v", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
	}
}

// checkParentIndexOf fails unless ReadParentIndexOf answers as the map
// construct (read from path) does, whatever the dump's names: all the
// names and parents, some of them, some twice, none, or others.
func checkParentIndexOf(t *testing.T, path string, construct map[string]string) {
	t.Helper()
	keys := slices.Sorted(maps.Keys(construct))
	var all []string
	for _, k := range keys {
		all = append(all, k, construct[k])
	}
	var half, twice []string
	for i, k := range keys {
		if i%2 == 0 {
			half = append(half, k)
		}
		twice = append(twice, k, k)
	}
	sets := [][]string{all, keys, half, twice, nil, {"x", "Module.m.M.forward.0"}}
	// the names of the dump beside, in its order (construct.json's keys
	// mostly come in it too)
	if dump, err := EntryNames(filepath.Join(filepath.Dir(path), "dump.json")); err == nil {
		sets = append(sets, dump, append(slices.Clone(dump), dump[:len(dump)/2]...))
	}
	for _, names := range sets {
		ix, err := ReadParentIndexOf(path, NamesOf(names))
		if err != nil {
			t.Fatalf("with %d names: %v", len(names), err)
		}
		checkParentIndex(t, ix, construct)
		for i, n := range names {
			if got := ix.ParentOf(i, n); got != construct[n] {
				t.Fatalf("ParentOf(%d, %q) = %q, want %q", i, n, got, construct[n])
			}
			if got := string(ix.AppendParentOf([]byte("x"), i, n)); got != "x"+construct[n] {
				t.Fatalf("AppendParentOf(x, %d, %q) = %q, want %q", i, n, got, "x"+construct[n])
			}
		}
	}
}

// TestParentIndex: the index answers as ReadConstruct's map on every
// construct.json of testdata and on edge files.
func TestParentIndex(t *testing.T) {
	t.Parallel()
	files := testkit.FilesNamed(t, testkit.Testdata(t), "construct.json", 15)
	dir := t.TempDir()
	for i, in := range []string{
		`{}`,
		`{"a": null, "b": "c", "a": "d"}`,
		`{"Module.m.M.forward.0": null, "Tensor.add.0.forward": "Module.m.M.forward.0", "Module.m.k.K.forward.0": "Module.m.M.forward.0"}`,
		`{"Module.m.k.K.forward.0": "Module.m.M.forward.0", "Module.m.M.forward.0": null, "Module.m.k.K.forward.0": "Module.m.M.forward.1"}`,
		`{"megatron_micro_step_number": 2, "A.0.forward": ["Module.m.M.forward.0", 1], "Module.m.M.forward.0": ""}`,
		`{"Tensor.add.0.forward": "Module.m.M.forward.0", "Tensor.add.0.forward": null}`, // a parent no name keeps
		`{"Module.a.A.forward.0": null, "Tensor.add.0.forward": "Module.b.B.forward.0", "Tensor.add.0.forward": "Module.a.A.forward.0"}`,
	} {
		p := filepath.Join(dir, fmt.Sprintf("c%d.json", i))
		os.WriteFile(p, []byte(in), 0o644)
		files = append(files, p)
	}
	checkParentIndex(t, nil, nil) // a nil index has no names
	for _, f := range files {
		construct, err := ReadConstruct(f)
		ix, ierr := ReadParentIndex(f)
		if fmt.Sprint(err) != fmt.Sprint(ierr) {
			t.Fatalf("%s: ReadConstruct error %v, ReadParentIndex %v", f, err, ierr)
		}
		if err != nil {
			continue
		}
		t.Run(strings.TrimPrefix(f, testkit.Testdata(t)), func(t *testing.T) {
			checkParentIndex(t, ix, construct)
			checkParentIndex(t, NewParentIndex(construct), construct)
			checkParentIndexOf(t, f, construct)
		})
	}
}
