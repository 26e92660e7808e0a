package validate

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/layermap/layermap/mapping/resolve"
	"github.com/layermap/layermap/printparse"
)

// groupPath is the node's path with every segment that comes from a repeat
// group replaced by "{}".
func groupPath(n *printparse.Node) string {
	segs, _ := template(n)
	return strings.Join(segs, ".")
}

// template returns the node's path segments with repeat-group members
// replaced by "{}", and the indices that were replaced.
func template(n *printparse.Node) ([]string, []string) {
	var segs, idx []string
	for p := n; p != nil && p.Parent != nil; p = p.Parent {
		if p.Repeat != nil {
			segs = append(segs, "{}")
			idx = append(idx, p.Name)
		} else {
			segs = append(segs, p.Name)
		}
	}
	reverse(segs)
	reverse(idx)
	return segs, idx
}

func reverse(s []string) {
	for i, j := 0, len(s)-1; i < j; i, j = i+1, j-1 {
		s[i], s[j] = s[j], s[i]
	}
}

// collapse groups nodes that differ only in repeat-group indices, in first
// occurrence order: 28 decoder layers' self_attention become one group
// "decoder.layers.{0-27}.self_attention".
func collapse(nodes []*printparse.Node) []Group {
	type acc struct {
		segs  []string
		idx   [][]string
		class string
		count int
	}
	var order []string
	groups := map[string]*acc{}
	for _, n := range nodes {
		segs, idx := template(n)
		k := strings.Join(segs, ".")
		g := groups[k]
		if g == nil {
			g = &acc{segs: segs, idx: make([][]string, len(idx)), class: n.Class}
			groups[k] = g
			order = append(order, k)
		}
		for i, x := range idx {
			g.idx[i] = append(g.idx[i], x)
		}
		g.count++
	}
	out := make([]Group, 0, len(order))
	for _, k := range order {
		g := groups[k]
		segs := append([]string{}, g.segs...)
		j := 0
		for i, s := range segs {
			if s == "{}" {
				segs[i] = renderIndices(g.idx[j])
				j++
			}
		}
		out = append(out, Group{Path: strings.Join(segs, "."), Class: g.class, Count: g.count})
	}
	return out
}

// renderIndices renders a set of list indices: "3", "{0-27}", "{0,2,5-7}"
// (printparse.IndexRange); names that are not numbers are listed as they
// are.
func renderIndices(idx []string) string {
	nums := make([]int, 0, len(idx))
	for _, s := range idx {
		v, err := strconv.Atoi(s)
		if err != nil {
			return "{" + strings.Join(idx, ",") + "}"
		}
		nums = append(nums, v)
	}
	return printparse.IndexRange(nums)
}

// collapseTrie renders tree-trie nodes as collapsed paths for messages.
func collapseTrie(ns []*resolve.TrieNode) string {
	var nodes []*printparse.Node
	var other []string
	for _, n := range ns {
		if items := n.ItemsOf(resolve.StateForward); len(items) > 0 && items[0].Node != nil {
			nodes = append(nodes, items[0].Node)
		} else {
			other = append(other, displayPath(n))
		}
	}
	var parts []string
	for _, g := range collapse(nodes) {
		parts = append(parts, g.Path)
	}
	parts = append(parts, other...)
	if len(parts) > 4 {
		parts = append(parts[:4], fmt.Sprintf("and %d more", len(parts)-4))
	}
	return strings.Join(parts, ", ")
}
