package dumpgen_test

import (
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/layermap/layermap/printparse/msprobe"
	"github.com/layermap/layermap/printparse/msprobe/dumpgen"
)

const qwenTemplate = "../../../testdata/demo/dumps/llamafactory"

// TestScaleIdentity: a template scaled to its own layer count and one
// pass is written back with the same entries, stack groups and parents.
func TestScaleIdentity(t *testing.T) {
	out := t.TempDir()
	if _, err := dumpgen.Scale(qwenTemplate, out, dumpgen.ScaleOptions{Seed: 1}); err != nil {
		t.Fatal(err)
	}
	want, err := msprobe.EntryNames(filepath.Join(qwenTemplate, "dump.json"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := msprobe.EntryNames(filepath.Join(out, "dump.json"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("entries differ from the template's")
	}
	for _, read := range []func(string) (any, error){
		func(dir string) (any, error) { return msprobe.ReadStack(filepath.Join(dir, "stack.json")) },
		func(dir string) (any, error) { return msprobe.ReadConstruct(filepath.Join(dir, "construct.json")) },
	} {
		a, err1 := read(qwenTemplate)
		b, err2 := read(out)
		if err1 != nil || err2 != nil || !reflect.DeepEqual(a, b) {
			t.Errorf("stack or construct differs from the template's: %v %v", err1, err2)
		}
	}
}

// TestScaleLayers: layers and passes are renumbered as msprobe numbers
// them, every entry has its stack and its parent, and the dump scans.
func TestScaleLayers(t *testing.T) {
	out, names, seen := scaled(t, qwenTemplate, dumpgen.ScaleOptions{Seed: 1, Layers: 5, Passes: 3})
	for _, want := range []string{
		"Module.module.visual.blocks.4.attn.qkv.Linear.forward.2",
		"Module.module.model.layers.4.mlp.Qwen2MLP.forward.0",
		"Module.module.lm_head.Linear.forward.2",
	} {
		if !seen[want] {
			t.Errorf("no entry %s", want)
		}
	}
	if seen["Module.module.model.layers.5.mlp.Qwen2MLP.forward.0"] || seen["Module.module.lm_head.Linear.forward.3"] {
		t.Errorf("more layers or passes than asked")
	}
	// API call indices run on over the passes.
	muls := 0
	for _, n := range names {
		if strings.HasPrefix(n, "Tensor.__mul__.") {
			if n != "Tensor.__mul__."+strconv.Itoa(muls)+".forward" {
				t.Fatalf("call %d of Tensor.__mul__ named %s", muls, n)
			}
			muls++
		}
	}
	stack, err := msprobe.ReadStack(filepath.Join(out, "stack.json"))
	if err != nil {
		t.Fatal(err)
	}
	parents, err := msprobe.ReadConstruct(filepath.Join(out, "construct.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if _, ok := stack[n]; !ok {
			t.Errorf("%s has no stack", n)
		}
		p, ok := parents[n]
		if !ok {
			t.Errorf("%s has no construct entry", n)
		} else if p != "" && !seen[p] {
			t.Errorf("%s: parent %s is no entry", n, p)
		}
	}
	if _, err := msprobe.ScanFile(filepath.Join(out, "dump.json"), func(*msprobe.Entry) error { return nil }); err != nil {
		t.Fatal(err)
	}
}

// TestScaleNoRepeatedKeys: an entry whose name has no call index to
// renumber (msprobe's synthetic fixture has two) is written once however
// many passes are, as msprobe writes a key of "data" once.
func TestScaleNoRepeatedKeys(t *testing.T) {
	_, _, seen := scaled(t, "../../../testdata/corpus/msprobe/golden/synth_statistics/npu", dumpgen.ScaleOptions{Seed: 1, Passes: 3})
	for _, n := range []string{"Tensor.weird_entry", "Functional.linear.2.forward"} {
		if !seen[n] {
			t.Errorf("no entry %s", n)
		}
	}
}

// scaled scales tmpl with o into a new folder and returns it with the
// entry names written, in order and as a set: as many as Stats counts,
// none written twice.
func scaled(t *testing.T, tmpl string, o dumpgen.ScaleOptions) (string, []string, map[string]bool) {
	t.Helper()
	out := t.TempDir()
	st, err := dumpgen.Scale(tmpl, out, o)
	if err != nil {
		t.Fatal(err)
	}
	names, err := msprobe.EntryNames(filepath.Join(out, "dump.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != st.Entries {
		t.Fatalf("%d entries, Stats says %d", len(names), st.Entries)
	}
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			t.Fatalf("entry %s written twice", n)
		}
		seen[n] = true
	}
	return out, names, seen
}
