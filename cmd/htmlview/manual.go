package htmlview

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/layermap/layermap/mapping"
	"github.com/layermap/layermap/mapping/resolve"
	"github.com/layermap/layermap/printparse"
	"github.com/layermap/layermap/printparse/msprobe"
	"github.com/layermap/layermap/printparse/source"
)

// The conversion of manual matches into layer_mapping lines is alignment
// logic (infer's domain); it lives here, beside the page whose script does
// the same steps, until infer takes it over.

// ReadManual reads a manual pairs file (see ParseManual).
func ReadManual(path string) ([]mapping.ModulePair, error) {
	data, err := source.ReadFile(path, source.MaxMappingYAML)
	if err != nil {
		return nil, fmt.Errorf("manual pairs: %w", err)
	}
	return ParseManual(data, path)
}

// ParseManual reads manual module pairs: the manual_pairs.yaml the page
// offers (the sidecar pairs format, mapping.ModulePair), or msprobe's
// .vis.config, a JSON object of NPU graph node -> bench graph node (or one
// holding such an object under "manualMatchNodes" or "npuMatchNodes").
// msprobe's node names are dump entry names ("Module.layers.0.mlp.MLP.forward.0");
// a module's becomes its module path, any other name is kept as written
// (Manual skips what names no module). name is the input in errors, which
// are *source.Error.
func ParseManual(data []byte, name string) ([]mapping.ModulePair, error) {
	trim := bytes.TrimLeft(data, " \t\r\n\ufeff")
	if len(trim) == 0 || trim[0] != '{' {
		return mapping.ParsePairs(data, name)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(trim, &top); err != nil {
		return nil, jsonErr(name, data, err)
	}
	obj := top
	for _, k := range []string{"manualMatchNodes", "npuMatchNodes"} {
		if raw, ok := top[k]; ok {
			obj = nil
			if err := json.Unmarshal(raw, &obj); err != nil {
				return nil, &source.Error{File: name, Expected: fmt.Sprintf("%q to be an object of NPU node -> bench node", k), Found: kindOf(raw)}
			}
			break
		}
	}
	var out []mapping.ModulePair
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		var v string
		if err := json.Unmarshal(obj[k], &v); err != nil {
			if _, skip := map[string]bool{"run": true, "npuUnMatchNodes": true, "benchUnMatchNodes": true, "benchMatchNodes": true}[k]; skip {
				continue
			}
			return nil, &source.Error{File: name, Expected: fmt.Sprintf("a bench node name (a string) for %q", k), Found: kindOf(obj[k])}
		}
		out = append(out, mapping.ModulePair{NPU: visNode(k), Bench: visNode(v)})
	}
	return out, nil
}

// visNode turns an msprobe graph node name into a module path when it
// names a module.
func visNode(name string) string {
	if p, _, _, ok := msprobe.ModuleEntry(name); ok {
		return p
	}
	return name
}

func kindOf(raw json.RawMessage) string {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 {
		return "nothing"
	}
	switch t[0] {
	case '{':
		return "an object"
	case '[':
		return "a list"
	case '"':
		return "a string"
	case 'n':
		return "null"
	}
	return string(t)
}

func jsonErr(name string, data []byte, err error) error {
	if se, ok := err.(*json.SyntaxError); ok {
		line := 1 + bytes.Count(data[:min(int(se.Offset), len(data))], []byte("\n"))
		return &source.Error{File: name, Line: line, Expected: "a .vis.config JSON object", Found: "invalid JSON (" + se.Error() + ")"}
	}
	return &source.Error{File: name, Expected: "a .vis.config JSON object of NPU node -> bench node", Found: err.Error()}
}

// ManualLine is one layer_mapping line that manual pairs need.
type ManualLine struct {
	Class, Key, Value string
	NPU, Bench        string // the pair that asked for it
}

// ManualResult says what became of each manual pair.
type ManualResult struct {
	Lines []ManualLine
	// Sidecar holds the pairs no sound line expresses (compare --pairs).
	Sidecar []mapping.ModulePair
	// Covered are the pairs the mapping already makes.
	Covered []mapping.ModulePair
	// Extended are the pairs a new class rule also makes at the class's
	// other instances (the same module in the other layers).
	Extended []mapping.ModulePair
	// Skipped says, one line each, why a pair was left out.
	Skipped []string
}

// ManualComment is the comment on the lines Manual adds.
const ManualComment = "manual match"

// Manual turns manual module pairs into layer_mapping lines where a class
// rule is sound, and sidecar pairs where it is not, adding the lines to m.
//
// For a pair (a, b) it looks for the nearest ancestor P of a that msprobe's
// resolver, given m, sends to an ancestor Q of b, and whose class may key
// a rule (TopLayer for the root; never a ModuleList, Sequential or
// ModuleDict, nor a class that already has the key). The line is
// "P's class: a relative to P: b relative to Q". It is sound when, run
// through the resolver over both trees, it sends a to b, every other module
// the resolver paired before stays paired the same, and every module it now
// pairs besides a's subtree goes to a bench module nothing else resolves
// to — the same module at the class's other instances, as in the other
// layers. Otherwise a longer key at a higher ancestor is tried (the root
// last), and the pair goes to the sidecar when none is sound.
//
// Pairs are taken parents first. A pair naming a module neither tree has
// is skipped; a pair written bench -> NPU (as .vis.config also stores the
// reverse link) is read the right way round.
func Manual(npu, bench *printparse.Tree, m *mapping.Mapping, pairs []mapping.ModulePair) *ManualResult {
	ns, bs := NewSide("", npu), NewSide("", bench)
	out := &ManualResult{}
	order := map[*printparse.Node]int{}
	npu.Walk(func(n *printparse.Node) bool { order[n] = len(order); return true })
	type np struct{ a, b *printparse.Node }
	var todo []np
	seen := map[[2]*printparse.Node]bool{}
	for _, p := range pairs {
		a, b := ns.Lookup(p.NPU), bs.Lookup(p.Bench)
		if a == nil || b == nil {
			if ra, rb := ns.Lookup(p.Bench), bs.Lookup(p.NPU); ra != nil && rb != nil {
				a, b = ra, rb
			}
		}
		switch {
		case a == nil:
			out.Skipped = append(out.Skipped, fmt.Sprintf("%s -> %s: the NPU side has no module %s", p.NPU, p.Bench, p.NPU))
			continue
		case b == nil:
			out.Skipped = append(out.Skipped, fmt.Sprintf("%s -> %s: the bench side has no module %s", p.NPU, p.Bench, p.Bench))
			continue
		case a == npu.Root || b == bench.Root:
			out.Skipped = append(out.Skipped, fmt.Sprintf("%s -> %s: the roots are paired by msprobe itself", p.NPU, p.Bench))
			continue
		}
		if !seen[[2]*printparse.Node{a, b}] {
			seen[[2]*printparse.Node{a, b}] = true
			todo = append(todo, np{a, b})
		}
	}
	slices.SortStableFunc(todo, func(x, y np) int { return cmp.Compare(order[x.a], order[y.a]) })
	res := resolveAll(m, npu, bench)
	for _, p := range todo {
		mp := mapping.ModulePair{NPU: p.a.Path, Bench: p.b.Path}
		if res[p.a] == p.b {
			out.Covered = append(out.Covered, mp)
			continue
		}
		line, after, ext := manualLine(m, npu, bench, res, p.a, p.b)
		if line == nil {
			out.Sidecar = append(out.Sidecar, mp)
			continue
		}
		line.NPU, line.Bench = mp.NPU, mp.Bench
		out.Lines = append(out.Lines, *line)
		out.Extended = append(out.Extended, ext...)
		res = after
	}
	return out
}

// resolveAll returns where msprobe's resolver sends every NPU module.
func resolveAll(m *mapping.Mapping, npu, bench *printparse.Tree) map[*printparse.Node]*printparse.Node {
	res := map[*printparse.Node]*printparse.Node{npu.Root: bench.Root}
	for _, r := range resolve.New(m).ResolveTree(npu, bench) {
		if r.Bench != nil {
			res[r.NPU] = r.Bench
		}
	}
	return res
}

func relPath(anc, d *printparse.Node) string {
	if anc.Path == "" {
		return d.Path
	}
	return strings.TrimPrefix(d.Path, anc.Path+".")
}

func isAncestor(a, d *printparse.Node) bool {
	for p := d.Parent; p != nil; p = p.Parent {
		if p == a {
			return true
		}
	}
	return false
}

// manualLine finds the sound line that sends a to b and adds it to m;
// it returns nil (m unchanged) when there is none.
func manualLine(m *mapping.Mapping, npu, bench *printparse.Tree, res map[*printparse.Node]*printparse.Node, a, b *printparse.Node) (*ManualLine, map[*printparse.Node]*printparse.Node, []mapping.ModulePair) {
	taken := map[[2]string]bool{}
	for _, r := range m.Rules() {
		taken[[2]string{r.Class.Class, r.Key}] = true
	}
	targeted := map[*printparse.Node]bool{}
	for _, t := range res {
		targeted[t] = true
	}
	for p := a.Parent; p != nil; p = p.Parent {
		q := res[p]
		if q == nil || !isAncestor(q, b) {
			continue
		}
		class := p.Class
		if p == npu.Root {
			class = mapping.TopLayer
		} else if class == "" || resolve.NeverDumped(class) {
			continue
		}
		key, val := relPath(p, a), relPath(q, b)
		if taken[[2]string{class, key}] {
			continue
		}
		newBlock := m.Lookup(class) == nil
		m.Add(class, key, val, ManualComment)
		after := resolveAll(m, npu, bench)
		if ext, ok := soundLine(res, after, targeted, a, b); ok {
			return &ManualLine{Class: class, Key: key, Value: val}, after, ext
		}
		dropLast(m, class, newBlock)
	}
	return nil, nil, nil
}

// soundLine checks a trial line: a goes to b, nothing else paired before
// moves, and what it newly pairs outside a's subtree goes to bench modules
// nothing else resolves to.
func soundLine(before, after map[*printparse.Node]*printparse.Node, targeted map[*printparse.Node]bool, a, b *printparse.Node) ([]mapping.ModulePair, bool) {
	if after[a] != b {
		return nil, false
	}
	var ext []mapping.ModulePair
	for n, t := range before {
		if after[n] != t && n != a {
			return nil, false
		}
	}
	for n, t := range after {
		if before[n] != nil || n == a || isAncestor(a, n) {
			continue
		}
		if targeted[t] {
			return nil, false
		}
		ext = append(ext, mapping.ModulePair{NPU: n.Path, Bench: t.Path})
	}
	slices.SortFunc(ext, func(x, y mapping.ModulePair) int { return cmp.Compare(x.NPU, y.NPU) })
	return ext, true
}

func dropLast(m *mapping.Mapping, class string, newBlock bool) {
	c := m.Lookup(class)
	c.Rules = c.Rules[:len(c.Rules)-1]
	if newBlock {
		m.Classes = slices.DeleteFunc(m.Classes, func(x *mapping.ClassRules) bool { return x == c })
	}
}
