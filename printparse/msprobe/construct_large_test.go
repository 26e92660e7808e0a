package msprobe

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeConstruct writes a construct.json of n entries; repeat names an
// entry written twice (first with parent "old", last with "new").
func writeConstruct(tb testing.TB, n int, repeat string) string {
	tb.Helper()
	var b strings.Builder
	b.WriteString("{\n")
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("Module.m.%d.Linear.forward.0", i)
		parent := "Module.m.ModuleList.forward.0"
		if name == repeat {
			parent = "old"
		}
		fmt.Fprintf(&b, " %q: %q,\n", name, parent)
	}
	if repeat != "" {
		fmt.Fprintf(&b, " %q: \"new\",\n", repeat)
	}
	b.WriteString(" \"Module.m.ModuleList.forward.0\": null\n}\n")
	p := filepath.Join(tb.TempDir(), "construct.json")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		tb.Fatal(err)
	}
	return p
}

// A repeated key in an object large enough to be indexed keeps the last
// value, as Python's json does, and the member count stays the same.
func TestReadConstructLargeDuplicate(t *testing.T) {
	for _, n := range []int{indexKeysAbove - 1, indexKeysAbove + 1, 1000} {
		rep := fmt.Sprintf("Module.m.%d.Linear.forward.0", n/2)
		m, err := ReadConstruct(writeConstruct(t, n, rep))
		if err != nil {
			t.Fatal(err)
		}
		if len(m) != n+1 || m[rep] != "new" || m["Module.m.ModuleList.forward.0"] != "" {
			t.Errorf("n=%d: %d entries, %q -> %q", n, len(m), rep, m[rep])
		}
		ix, err := ReadParentIndex(writeConstruct(t, n, rep))
		if err != nil {
			t.Fatal(err)
		}
		if ix.Len() != n+1 || ix.Parent(rep) != "new" {
			t.Errorf("n=%d: index of %d entries, %q -> %q", n, ix.Len(), rep, ix.Parent(rep))
		}
	}
}

// BenchmarkReadConstruct reads a 200k-entry construct.json shaped like a
// model's (a module call, then calls of four APIs in it) into a map
// (ReadConstruct) and into a ParentIndex. Before the key index the
// duplicate-key check made this quadratic: 300k entries took over 3
// minutes; now it is linear.
func BenchmarkReadConstruct(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("{\n")
	for i := 0; i < 40000; i++ {
		mod := fmt.Sprintf("Module.model.layers.%d.mlp.Linear.forward.%d", i%28, i/28)
		fmt.Fprintf(&sb, " %q: \"Module.model.layers.%d.Qwen2DecoderLayer.forward.%d\",\n", mod, i%28, i/28)
		for _, api := range []string{"Functional.linear", "Tensor.__add__", "Torch.matmul", "Tensor.view"} {
			fmt.Fprintf(&sb, " \"%s.%d.forward\": %q,\n", api, i, mod)
		}
	}
	sb.WriteString(" \"Module.model.Qwen2Model.forward.0\": null\n}\n")
	p := filepath.Join(b.TempDir(), "construct.json")
	if err := os.WriteFile(p, []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	for _, r := range []struct {
		name string
		read func(string) (any, error)
	}{
		{"map", func(p string) (any, error) { return ReadConstruct(p) }},
		{"index", func(p string) (any, error) { return ReadParentIndex(p) }},
	} {
		b.Run(r.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := r.read(p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
