package dumpgen_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/layermap/layermap/printparse/msprobe"
	"github.com/layermap/layermap/printparse/msprobe/dumpgen"
)

// TestShuffle: the shuffled dump holds the template's entries, each with
// its value, and the other members, its entries in another order.
func TestShuffle(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	if err := dumpgen.Shuffle(qwenTemplate, out, 1); err != nil {
		t.Fatal(err)
	}
	read := func(dir string) (doc map[string]any, names []string) {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, "dump.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		if names, err = msprobe.EntryNames(filepath.Join(dir, "dump.json")); err != nil {
			t.Fatal(err)
		}
		return doc, names
	}
	want, wantNames := read(qwenTemplate)
	got, gotNames := read(out)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the shuffled dump's members differ from the template's")
	}
	if len(gotNames) != len(wantNames) || slices.Equal(gotNames, wantNames) {
		t.Errorf("%d entries, the template's %d, in the same order: %v", len(gotNames), len(wantNames), slices.Equal(gotNames, wantNames))
	}
	slices.Sort(gotNames)
	slices.Sort(wantNames)
	if !slices.Equal(gotNames, wantNames) {
		t.Errorf("entry names differ from the template's")
	}
}
