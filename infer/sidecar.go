package infer

import (
	"fmt"
	"io"

	"gopkg.in/yaml.v3"
)

// WriteSidecar writes pairs as the sidecar file: a YAML list of
// {npu: PATH, bench: PATH} module paths (see the package documentation),
// "[]" when there are none.
func WriteSidecar(w io.Writer, pairs []NodePair) error {
	if pairs == nil {
		pairs = []NodePair{}
	}
	data, err := yaml.Marshal(pairs)
	if err != nil {
		return fmt.Errorf("infer: sidecar: %w", err)
	}
	head := "# Module pairs no layer_mapping.yaml line can express (layermap suggest).\n" +
		"# Read by: layermap compare --pairs FILE\n"
	if _, err := io.WriteString(w, head); err != nil {
		return err
	}
	_, err = w.Write(data)
	return err
}

// ReadSidecar parses a sidecar file written by WriteSidecar (or by hand).
// source names the input in errors.
func ReadSidecar(data []byte, source string) ([]NodePair, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	if len(doc.Content) == 0 {
		return nil, nil
	}
	list := doc.Content[0]
	if list.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("%s:%d: expected a list of {npu, bench} pairs, found %s", source, list.Line, kindWord(list))
	}
	var out []NodePair
	for _, it := range list.Content {
		if it.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("%s:%d: expected a {npu: PATH, bench: PATH} map, found %s", source, it.Line, kindWord(it))
		}
		var p NodePair
		for i := 0; i+1 < len(it.Content); i += 2 {
			k, v := it.Content[i], it.Content[i+1]
			if v.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("%s:%d: expected a module path for %s, found %s", source, v.Line, k.Value, kindWord(v))
			}
			switch k.Value {
			case "npu":
				p.NPU = v.Value
			case "bench":
				p.Bench = v.Value
			default:
				return nil, fmt.Errorf("%s:%d: expected key npu or bench, found %q", source, k.Line, k.Value)
			}
		}
		if p.NPU == "" || p.Bench == "" {
			return nil, fmt.Errorf("%s:%d: expected both npu and bench paths, found npu %q bench %q", source, it.Line, p.NPU, p.Bench)
		}
		out = append(out, p)
	}
	return out, nil
}

func kindWord(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a map"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return fmt.Sprintf("%q", n.Value)
	}
	return "something else"
}
