package mapping

import (
	"path/filepath"
	"testing"

	"github.com/layermap/layermap/printparse/testkit"
	"gopkg.in/yaml.v3"
)

// draft builds the kind of mapping suggest emits, with scalars that need
// quoting for PyYAML or yaml.v3.
func draft() *Mapping {
	m := New()
	m.Header = "drafted by layermap suggest\nNPU: mindspeed.txt\nbench: hf.txt"
	m.Add(TopLayer, "0.module", "module", "score 1.00, list index + wrapper")
	m.Add("Float16Module", "module.image_encoder", "visual", "score 0.93, name+shape")
	m.Add("Float16Module", "module.text_decoder", "model", "")
	m.Add("Weird", "on", "yes", "PyYAML bools must be quoted")
	m.Add("Weird", "1_000", "0x1f", "PyYAML ints")
	m.Add("Weird", "a: b", "c # d", "colon and hash")
	m.Add("Weird", "null", "", "null and empty")
	m.Add("Weird", "x", "y(z)", "multi\nline comment")
	m.Lookup("Weird").Comment = "class comment"
	m.Add("123", "a", "b", "")
	return m
}

func TestMarshalGolden(t *testing.T) {
	out, err := draft().Marshal()
	if err != nil {
		t.Fatal(err)
	}
	testkit.Golden(t, filepath.Join("testdata", "marshal.golden.yaml"), out)
}

func TestMarshalRoundTrip(t *testing.T) {
	seeds, _ := filepath.Glob(filepath.Join(testkit.Testdata(t, "seed-templates"), "*.yaml"))
	cases := map[string]*Mapping{"draft": draft()}
	for _, s := range seeds {
		m, _, err := Load(s)
		if err != nil {
			t.Fatal(err)
		}
		cases[filepath.Base(s)] = m
	}
	for name, m := range cases {
		t.Run(name, func(t *testing.T) {
			out, err := m.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			m2, diags, err := Parse(out, "rt.yaml")
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if a, b := flatten(m), flatten(m2); a != b {
				t.Errorf("round trip changed rules:\n%s---\n%s", a, b)
			}
			if m2.Header != m.Header {
				t.Errorf("header %q, want %q", m2.Header, m.Header)
			}
			for i, r := range m.Rules() {
				if got := m2.Rules()[i].Comment; got != oneLine(r.Comment) {
					t.Errorf("rule %s comment %q, want %q", r, got, oneLine(r.Comment))
				}
			}
			for _, d := range diags {
				if d.Code == CodeDuplicateClass || d.Code == CodeDuplicateKey {
					t.Errorf("round trip introduced %s", d)
				}
			}
			// yaml.v3 loads the same map of strings.
			var v map[string]map[string]string
			if err := yaml.Unmarshal(out, &v); err != nil {
				t.Fatalf("yaml.v3: %v", err)
			}
			for _, c := range m.Classes {
				for _, r := range c.Rules {
					if got, ok := v[c.Class][r.Key]; !ok || got != r.Value {
						t.Errorf("yaml.v3 %s[%q] = %q, want %q", c.Class, r.Key, got, r.Value)
					}
				}
			}
		})
	}
}
