package msprobe

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/layermap/layermap/printparse/testkit"
)

// TestReadParentsLikeReadConstruct: streaming the parents of some entries
// gives what ReadConstruct gives for them, on the corpus construct.json
// files and on the Megatron variant.
func TestReadParentsLikeReadConstruct(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(testkit.Testdata(t, "demo", "dumps"), "*", "construct.json"))
	dir := t.TempDir()
	meg := filepath.Join(dir, "construct.json")
	os.WriteFile(meg, []byte(`{"a.0.forward": ["Module.m.M.forward.0", 3], "megatron_micro_step_number": 2, "b.0.forward": [null, 1], "c": null}`), 0o644)
	files = append(files, meg)
	if len(files) < 3 {
		t.Fatalf("construct files: %v", files)
	}
	for _, f := range files {
		all, err := ReadConstruct(f)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]bool{}
		for k := range all {
			if strings.Contains(k, ".0.") || k == "c" {
				want[k] = true
			}
		}
		got, err := ReadParents(f, want)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for k, v := range all {
			if strings.Contains(k, ".0.") || k == "c" {
				n++
				if got[k] != v {
					t.Errorf("%s: %s: %q, ReadConstruct %q", f, k, got[k], v)
				}
			}
		}
		if n == 0 || len(got) != n {
			t.Errorf("%s: %d parents, want %d", f, len(got), n)
		}
	}
}

// TestReadConstructPlain: the streamed reader of the common construct.json
// gives the tree's map on the corpus files, and leaves the rest to it.
func TestReadConstructPlain(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(testkit.Testdata(t, "demo", "dumps"), "*", "construct.json"))
	if len(files) < 2 {
		t.Fatalf("construct files: %v", files)
	}
	for _, f := range files {
		got, ok := constructPlain(f)
		want, err := constructTree(f)
		if !ok || err != nil || !maps.Equal(got, want) || len(got) == 0 {
			t.Errorf("%s: streamed %d parents (%v), tree %d (%v)", f, len(got), ok, len(want), err)
		}
	}
	dir := t.TempDir()
	for _, in := range []string{`{"a": ["b", 1]}`, `{"megatron_micro_step_number": 1}`, `{"a": "b",}`, `{"a": nullx}`, `{"a": 1}`, `{"a": "b"} x`, `[]`} {
		p := filepath.Join(dir, "construct.json")
		os.WriteFile(p, []byte(in), 0o644)
		if m, ok := constructPlain(p); ok {
			t.Errorf("%s: streamed %v, want the tree's reading", in, m)
		}
	}
	for _, in := range []string{`{}`, ` {"a": null, "b": "c", "a": "d"} `, `{"\u0041": "\"x"}`} {
		p := filepath.Join(dir, "construct.json")
		os.WriteFile(p, []byte(in), 0o644)
		want, err := constructTree(p)
		if got, ok := constructPlain(p); !ok || err != nil || !maps.Equal(got, want) {
			t.Errorf("%s: streamed %v (%v), tree %v (%v)", in, got, ok, want, err)
		}
	}
}

func FuzzReadParents(f *testing.F) {
	f.Add([]byte(`{"a": "b", "c": null, "d": ["e", 1]}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(t.TempDir(), "construct.json")
		os.WriteFile(p, data, 0o644)
		all, err := ReadConstruct(p)
		want := map[string]bool{}
		for k := range all {
			want[k] = true
		}
		got, err2 := ReadParents(p, want)
		if err == nil && err2 == nil {
			for k, v := range all {
				if got[k] != v {
					t.Fatalf("%s: %q, ReadConstruct %q", k, got[k], v)
				}
			}
		}
	})
}
