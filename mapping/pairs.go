package mapping

import (
	"fmt"
	"io"

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
// An empty file or "[]" holds no pairs.
type ModulePair struct {
	NPU   string `yaml:"npu" json:"npu"`
	Bench string `yaml:"bench" json:"bench"`
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
	data, err := source.ReadFile(path, source.MaxMappingYAML)
	if err != nil {
		return nil, fmt.Errorf("module pairs: %w", err)
	}
	return ParsePairs(data, path)
}

// ParsePairs parses a module pairs file; name names the input in errors,
// which are one line, "source:line: expected ..., found ...".
func ParsePairs(data []byte, name string) ([]ModulePair, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, &source.Error{File: name, Err: err}
	}
	if len(doc.Content) == 0 {
		return nil, nil
	}
	list := doc.Content[0]
	if list.Kind != yaml.SequenceNode {
		return nil, source.Errorf(name, list.Line, "expected a list of {npu, bench} pairs, found %s", Describe(list))
	}
	var out []ModulePair
	first := map[string]int{} // npu path -> line of its first pair
	for _, it := range list.Content {
		if it.Kind != yaml.MappingNode {
			return nil, source.Errorf(name, it.Line, "expected a {npu: PATH, bench: PATH} map, found %s", Describe(it))
		}
		var p ModulePair
		for i := 0; i+1 < len(it.Content); i += 2 {
			k, v := it.Content[i], it.Content[i+1]
			if v.Kind != yaml.ScalarNode {
				return nil, source.Errorf(name, v.Line, "expected a module path for %s, found %s", k.Value, Describe(v))
			}
			switch k.Value {
			case "npu":
				p.NPU = v.Value
			case "bench":
				p.Bench = v.Value
			default:
				return nil, source.Errorf(name, k.Line, "expected key npu or bench, found %q", k.Value)
			}
		}
		if p.NPU == "" || p.Bench == "" {
			return nil, source.Errorf(name, it.Line, "expected both npu and bench paths, found npu %q bench %q", p.NPU, p.Bench)
		}
		if l, dup := first[p.NPU]; dup {
			return nil, source.Errorf(name, it.Line, "expected each npu path once, found %q again (first at line %d)", p.NPU, l)
		}
		first[p.NPU] = it.Line
		out = append(out, p)
	}
	return out, nil
}
