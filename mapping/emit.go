package mapping

import (
	"bytes"
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"
)

// Marshal renders the mapping as layer_mapping.yaml: the header as comment
// lines, then the blocks and rules in the order they were built, a class
// comment above its block and a rule comment after its line
// ("key: value  # comment"). Scalars are quoted wherever PyYAML or yaml.v3
// would not load them back as the same string, so both load the same map.
func (m *Mapping) Marshal() ([]byte, error) {
	var b bytes.Buffer
	if h := strings.TrimSpace(m.Header); h != "" {
		for _, l := range strings.Split(h, "\n") {
			writeComment(&b, "", l)
		}
		b.WriteByte('\n')
	}
	if len(m.Classes) == 0 {
		b.WriteString("{}\n")
	}
	for i, c := range m.Classes {
		if i > 0 {
			b.WriteByte('\n')
		}
		if c.Comment != "" {
			for _, l := range strings.Split(c.Comment, "\n") {
				writeComment(&b, "", l)
			}
		}
		cls, err := scalar(c.Class)
		if err != nil {
			return nil, err
		}
		if len(c.Rules) == 0 {
			fmt.Fprintf(&b, "%s: {}\n", cls)
			continue
		}
		fmt.Fprintf(&b, "%s:\n", cls)
		for _, r := range c.Rules {
			k, err := scalar(r.Key)
			if err != nil {
				return nil, err
			}
			v, err := scalar(r.Value)
			if err != nil {
				return nil, err
			}
			fmt.Fprintf(&b, "  %s: %s", k, v)
			if r.Comment != "" {
				b.WriteString("  # ")
				b.WriteString(oneLine(r.Comment))
			}
			b.WriteByte('\n')
		}
	}
	return b.Bytes(), nil
}

func writeComment(b *bytes.Buffer, indent, l string) {
	l = strings.TrimRight(l, " \t\r")
	b.WriteString(indent)
	if l == "" {
		b.WriteString("#\n")
		return
	}
	b.WriteString("# ")
	b.WriteString(l)
	b.WriteByte('\n')
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

var plainRE = lazyRegexp(`^[A-Za-z0-9_][A-Za-z0-9_./-]*$`)

// scalar renders s plain when both PyYAML (YAML 1.1) and yaml.v3 load it
// back as the same string, double-quoted otherwise.
func scalar(s string) (string, error) {
	if plainRE().MatchString(s) && PyYAMLType(s) == "str" {
		var v map[string]any
		if err := yaml.Unmarshal([]byte("k: "+s), &v); err == nil {
			if got, ok := v["k"].(string); ok && got == s {
				return s, nil
			}
		}
	}
	out, err := yaml.Marshal(&yaml.Node{Kind: yaml.ScalarNode, Style: yaml.DoubleQuotedStyle, Value: s})
	if err != nil {
		return "", fmt.Errorf("quote %q: %w", s, err)
	}
	return strings.TrimSuffix(string(out), "\n"), nil
}
