package printparse

import (
	"fmt"
	"strings"
	"testing"
)

// TestLookupIndexed checks that ChildIndex finds what Node.Lookup and
// Node.LookupSegs find, on a narrow node and on a wide one (indexed),
// including a repeated child name (the first counts) and malformed paths.
func TestLookupIndexed(t *testing.T) {
	root := &Node{}
	add := func(p *Node, name, class string) *Node {
		c := &Node{Name: name, Class: class, Parent: p}
		p.Children = append(p.Children, c)
		return c
	}
	model := add(root, "model", "M")
	layers := add(model, "layers", "ModuleList")
	for i := range 40 {
		add(add(layers, fmt.Sprint(i), "Layer"), "mlp", "MLP")
	}
	add(layers, "7", "Second") // a repeated name: Child finds the first
	add(model, "norm", "Norm")

	var x ChildIndex
	for _, path := range []string{"", "model", "model.norm", "model.layers.7", "model.layers.39.mlp",
		"model.layers.40", "model.layers.7.", "model..norm", ".model", "nothing.here", "model.norm.x"} {
		want := root.Lookup(path)
		if path != "" && !strings.HasSuffix(path, ".") {
			if got := root.LookupSegs(strings.Split(path, ".")); got != want {
				t.Errorf("LookupSegs(%q) = %v, Lookup %v", path, got, want)
			}
		}
		for _, idx := range []*ChildIndex{&x, nil} {
			if got := idx.Lookup(root, path); got != want {
				t.Errorf("ChildIndex(%v).Lookup(%q) = %v, Lookup %v", idx != nil, path, got, want)
			}
		}
	}
	if n := x.Lookup(root, "model.layers.7"); n == nil || n.Class != "Layer" {
		t.Errorf("repeated name: got %v, want the first child", n)
	}
	if len(x.wide) != 1 || x.wide[layers] == nil {
		t.Errorf("indexed %d nodes, want the wide list only", len(x.wide))
	}
	if x.LookupSegs(nil, []string{"a"}) != nil || root.LookupSegs(nil) != root {
		t.Error("LookupSegs of nil or of no segments")
	}
}
