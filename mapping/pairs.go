package mapping

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/layermap/layermap/printparse/source"
	"gopkg.in/yaml.v3"
)

// ModulePair is one explicit pair of modules, by module path, that no
// layer_mapping.yaml line can express. `layermap suggest --pairs FILE`
// writes them and `layermap compare --pairs FILE` applies them.
//
// The file is a YAML list of pairs of module dump paths: the module part of
// a dump entry name, without "Module." and without the class, direction and
// call index (for print(model) inputs, the same dotted path):
//
//   - npu: 0.module.module.text_decoder.decoder.layers.0.self_attention
//     bench: module.model.layers.0.self_attn
//   - npu: 0.module.module.text_decoder.output_layer
//     bench: lm_head
//
// An N:1 group (one module on one side computes what several modules
// compute on the other) lists the many side's modules in the order their
// outputs are concatenated, and names its kind (see the Kind constants):
//
//   - npu: 0.module.module.text_decoder.decoder.layers.0.mlp.linear_fc1
//     bench: [module.model.layers.0.mlp.gate_proj, module.model.layers.0.mlp.up_proj]
//     kind: gate_up
//
// An empty file or "[]" holds no pairs. Files without groups read as they
// always did.
type ModulePair struct {
	// NPU and Bench are the two modules of a 1:1 pair; in a group, the
	// many side's field is empty and its Parts list holds the modules.
	NPU   string `json:"npu,omitempty"`
	Bench string `json:"bench,omitempty"`
	// NPUParts and BenchParts are a group's many side, in concatenation
	// order (at most one of them is set).
	NPUParts   []string `json:"npu_parts,omitempty"`
	BenchParts []string `json:"bench_parts,omitempty"`
	// Kind names a group's combination ("" for a 1:1 pair).
	Kind string `json:"kind,omitempty"`
	// Layout is a qkv group's head layout on the fused side: LayoutBlocked
	// ([q; k; v]) or LayoutInterleaved (per query group, Megatron's); ""
	// when unknown.
	Layout string `json:"layout,omitempty"`
}

// Kinds of N:1 groups.
const (
	// KindGateUp: a gated MLP's first projection fused (Megatron's
	// linear_fc1 = [gate_proj; up_proj]).
	KindGateUp = "gate_up"
	// KindQKV: the attention's q, k and v projections fused.
	KindQKV = "qkv"
	// KindExperts: a grouped-experts module computing a list of
	// per-expert modules at once (TEGroupedMLP against experts.{0..E-1}).
	KindExperts = "experts"
	// KindFused: any other module whose outputs are its parts' outputs
	// concatenated.
	KindFused = "fused"
)

// Head layouts of a fused qkv projection.
const (
	LayoutBlocked     = "blocked"
	LayoutInterleaved = "interleaved"
)

var groupKinds = []string{KindGateUp, KindQKV, KindExperts, KindFused}

// Group reports whether p is an N:1 group.
func (p ModulePair) Group() bool { return len(p.NPUParts) > 0 || len(p.BenchParts) > 0 }

// NPUModules lists p's NPU modules: the one module, or the parts.
func (p ModulePair) NPUModules() []string {
	if len(p.NPUParts) > 0 {
		return p.NPUParts
	}
	return []string{p.NPU}
}

// BenchModules lists p's bench modules: the one module, or the parts.
func (p ModulePair) BenchModules() []string {
	if len(p.BenchParts) > 0 {
		return p.BenchParts
	}
	return []string{p.Bench}
}

// Swap returns p with its sides exchanged (the reverse draft's pair).
func (p ModulePair) Swap() ModulePair {
	p.NPU, p.Bench = p.Bench, p.NPU
	p.NPUParts, p.BenchParts = p.BenchParts, p.NPUParts
	return p
}

// String renders "npu <-> bench", a group's many side as "[a ; b]" and
// its kind after it: "fc1 <-> [gate ; up] (gate_up)".
func (p ModulePair) String() string {
	side := func(one string, parts []string) string {
		if len(parts) > 0 {
			return "[" + strings.Join(parts, " ; ") + "]"
		}
		return one
	}
	s := side(p.NPU, p.NPUParts) + " <-> " + side(p.Bench, p.BenchParts)
	if p.Kind != "" {
		s += " (" + p.Kind
		if p.Layout != "" {
			s += ", " + p.Layout
		}
		s += ")"
	}
	return s
}

// MarshalYAML writes a pair as "npu: PATH, bench: PATH", a group with its
// many side as a flow list and its kind (and layout).
func (p ModulePair) MarshalYAML() (any, error) {
	n := &yaml.Node{Kind: yaml.MappingNode}
	add := func(k string, one string, parts []string) {
		if one == "" && len(parts) == 0 {
			return
		}
		v := &yaml.Node{Kind: yaml.ScalarNode, Value: one}
		if len(parts) > 0 {
			v = &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
			for _, s := range parts {
				v.Content = append(v.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: s})
			}
		}
		n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: k}, v)
	}
	add("npu", p.NPU, p.NPUParts)
	add("bench", p.Bench, p.BenchParts)
	add("kind", p.Kind, nil)
	add("layout", p.Layout, nil)
	return n, nil
}

// pairsHeader opens every file WritePairs writes.
const pairsHeader = "# Module pairs no layer_mapping.yaml line can express (layermap suggest).\n" +
	"# Read by: layermap compare --pairs FILE\n"

// WritePairs writes pairs in the format ParsePairs reads, "[]" when there
// are none.
func WritePairs(w io.Writer, pairs []ModulePair) error {
	if pairs == nil {
		pairs = []ModulePair{}
	}
	data, err := yaml.Marshal(pairs)
	if err != nil {
		return fmt.Errorf("module pairs: %w", err)
	}
	if _, err := io.WriteString(w, pairsHeader); err != nil {
		return err
	}
	_, err = w.Write(data)
	return err
}

// ReadPairs reads a module pairs file (see ModulePair).
func ReadPairs(path string) ([]ModulePair, error) {
	ps, _, err := ReadPairsAt(path)
	return ps, err
}

// ReadPairsAt reads a module pairs file and where each pair starts.
func ReadPairsAt(path string) ([]ModulePair, []Pos, error) {
	data, err := source.ReadFile(path, source.MaxMappingYAML)
	if err != nil {
		return nil, nil, err // *source.Error: "path: expected ..., found ..."
	}
	return parsePairs(data, path)
}

// ParsePairs parses a module pairs file; name names the input in errors,
// which are one line, "source:line: expected ..., found ...".
func ParsePairs(data []byte, name string) ([]ModulePair, error) {
	ps, _, err := parsePairs(data, name)
	return ps, err
}

func parsePairs(data []byte, name string) ([]ModulePair, []Pos, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, nil, source.YAMLError(name, data, err)
	}
	if len(doc.Content) == 0 {
		return nil, nil, nil
	}
	list := doc.Content[0]
	if list.Kind != yaml.SequenceNode {
		return nil, nil, source.Errorf(name, list.Line, "expected a list of {npu, bench} pairs, found %s", Describe(list))
	}
	var out []ModulePair
	var pos []Pos
	first := map[string]int{} // npu path -> line of its first pair
	for _, it := range list.Content {
		if it.Kind != yaml.MappingNode {
			return nil, nil, source.Errorf(name, it.Line, "expected a {npu: PATH, bench: PATH} map, found %s", Describe(it))
		}
		var p ModulePair
		for i := 0; i+1 < len(it.Content); i += 2 {
			k, v := it.Content[i], it.Content[i+1]
			switch k.Value {
			case "npu", "bench":
				one, parts, err := pairSide(name, k.Value, v)
				if err != nil {
					return nil, nil, err
				}
				if k.Value == "npu" {
					p.NPU, p.NPUParts = one, parts
				} else {
					p.Bench, p.BenchParts = one, parts
				}
			case "kind", "layout":
				if v.Kind != yaml.ScalarNode {
					return nil, nil, source.Errorf(name, v.Line, "expected a word for %s, found %s", k.Value, Describe(v))
				}
				if k.Value == "kind" {
					if !slices.Contains(groupKinds, v.Value) {
						return nil, nil, source.Errorf(name, v.Line, "expected kind %s, found %q", strings.Join(groupKinds, ", "), v.Value)
					}
					p.Kind = v.Value
				} else {
					if v.Value != LayoutBlocked && v.Value != LayoutInterleaved {
						return nil, nil, source.Errorf(name, v.Line, "expected layout %s or %s, found %q", LayoutBlocked, LayoutInterleaved, v.Value)
					}
					p.Layout = v.Value
				}
			default:
				return nil, nil, source.Errorf(name, k.Line, "expected key npu, bench, kind or layout, found %q", k.Value)
			}
		}
		if p.NPU == "" && len(p.NPUParts) == 0 || p.Bench == "" && len(p.BenchParts) == 0 {
			return nil, nil, source.Errorf(name, it.Line, "expected both npu and bench paths, found npu %q bench %q", p.NPU, p.Bench)
		}
		switch {
		case len(p.NPUParts) > 0 && len(p.BenchParts) > 0:
			return nil, nil, source.Errorf(name, it.Line, "expected one module on one side of a group, found lists on both")
		case p.Group() && p.Kind == "":
			return nil, nil, source.Errorf(name, it.Line, "expected a kind (%s) for a group of modules", strings.Join(groupKinds, ", "))
		case !p.Group() && p.Kind != "":
			return nil, nil, source.Errorf(name, it.Line, "expected a list of modules on one side of a %s group, found one module on each", p.Kind)
		case p.Layout != "" && p.Kind != KindQKV:
			return nil, nil, source.Errorf(name, it.Line, "expected layout only in a qkv group, found it in kind %q", p.Kind)
		}
		for _, n := range p.NPUModules() {
			if l, dup := first[n]; dup {
				return nil, nil, source.Errorf(name, it.Line, "expected each npu path once, found %q again (first at line %d)", n, l)
			}
			first[n] = it.Line
		}
		out = append(out, p)
		pos = append(pos, Pos{File: name, Line: it.Line, Col: it.Column})
	}
	return out, pos, nil
}

// pairSide reads one side of a pair: a module path, or a list of two or
// more (a group's many side).
func pairSide(name, key string, v *yaml.Node) (string, []string, error) {
	switch v.Kind {
	case yaml.ScalarNode:
		return v.Value, nil, nil
	case yaml.SequenceNode:
		var parts []string
		for _, e := range v.Content {
			if e.Kind != yaml.ScalarNode || e.Value == "" {
				return "", nil, source.Errorf(name, e.Line, "expected a module path in the %s list, found %s", key, Describe(e))
			}
			parts = append(parts, e.Value)
		}
		if len(parts) < 2 {
			return "", nil, source.Errorf(name, v.Line, "expected two or more modules in the %s list of a group, found %d", key, len(parts))
		}
		return "", parts, nil
	}
	return "", nil, source.Errorf(name, v.Line, "expected a module path (or a list of them) for %s, found %s", key, Describe(v))
}
