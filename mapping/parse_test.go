package mapping

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/layermap/layermap/printparse/source"
	"github.com/layermap/layermap/printparse/testkit"
)

func TestParseSeeds(t *testing.T) {
	seeds, err := filepath.Glob(filepath.Join(testkit.Testdata(t, "seed-templates"), "*.yaml"))
	if err != nil || len(seeds) != 4 {
		t.Fatalf("want 4 seed templates, found %d (%v)", len(seeds), err)
	}
	for _, path := range seeds {
		t.Run(filepath.Base(path), func(t *testing.T) {
			m, diags, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range diags {
				t.Errorf("unexpected diagnostic: %s", d)
			}
			if !strings.HasPrefix(m.Header, "NPU side: ") {
				t.Errorf("header = %q, want the seed's first comment line", m.Header)
			}
			if m.Classes[0].Class != TopLayer || m.Classes[0].Pos.Line != 2 {
				t.Errorf("first class %q at %v, want TopLayer at line 2", m.Classes[0].Class, m.Classes[0].Pos)
			}
		})
	}
}

// diagSummary renders diagnostics as "line:col CODE severity" for tables.
func diagSummary(ds []Diagnostic) []string {
	var out []string
	for _, d := range ds {
		s := d.Pos.String()
		s = s[strings.IndexByte(s, ':')+1:]
		out = append(out, s+" "+d.Code+" "+d.Severity.String())
	}
	return out
}

func TestParseDiagnostics(t *testing.T) {
	tests := []struct {
		name   string
		yaml   string
		want   []string // "line:col CODE severity"
		msgHas string   // substring of the first message
		effect map[string]string
		effCls string
	}{
		{name: "duplicate class keeps last",
			yaml:   "TransformerLayer:\n  input_layernorm: norm1\nMLP:\n  linear_fc1: up_proj\nTransformerLayer:\n  self_attention: self_attn\n",
			want:   []string{"5:1 LM001 error"},
			msgHas: "also at line 1",
			effCls: "TransformerLayer", effect: map[string]string{"self_attention": "self_attn"}},
		{name: "duplicate key different values",
			yaml: "A:\n  a: x\n  b: y\n  a: z\n", want: []string{"4:3 LM002 error"}, msgHas: `keeps the last value "z"`,
			effCls: "A", effect: map[string]string{"a": "z", "b": "y"}},
		{name: "duplicate key same value", yaml: "A:\n  a: x\n  a: x\n", want: []string{"3:3 LM002 warning"}},
		{name: "paren cut", yaml: "A:\n  attention: self_attention(Attn)\n", want: []string{"2:14 LM005 warning"}, msgHas: `"self_attention"`},
		{name: "paren after space", yaml: "A:\n  attention: self_attention (Attn)\n", want: []string{"2:14 LM005 error"}},
		{name: "empty value", yaml: "A:\n  a: \"\"\n", want: []string{"2:6 LM004 error"}},
		{name: "empty key", yaml: "A:\n  \"\": b\n", want: []string{"2:3 LM003 error"}},
		{name: "space in value", yaml: "A:\n  a: b c\n", want: []string{"2:6 LM006 error"}},
		{name: "empty segment", yaml: "A:\n  a..b: c\n  d: e.\n", want: []string{"2:3 LM007 error", "3:6 LM007 error"}},
		{name: "identity", yaml: "A:\n  mlp: mlp\n", want: []string{"2:3 LM008 info"}},
		{name: "int class key", yaml: "0:\n  a: b\n", want: []string{"1:1 LM009 warning"}},
		{name: "quoted int class key is a string", yaml: "\"0\":\n  a: b\n"},
		{name: "Cell alias", yaml: "Cell:\n  network_with_loss: module\n", want: []string{"1:1 LM010 info"},
			effCls: TopLayer, effect: map[string]string{"network_with_loss": "module"}},
		// detail §3.2: with both, the Cell entry wins.
		{name: "Cell overrides TopLayer", yaml: "TopLayer:\n  network_with_loss: WRONG\nCell:\n  network_with_loss: module\n",
			want: []string{"1:1 LM011 error"}, effCls: TopLayer, effect: map[string]string{"network_with_loss": "module"}},
		{name: "null Cell dropped", yaml: "Cell:\nTopLayer:\n  a: b\n", want: []string{"1:1 LM012 warning"},
			effCls: TopLayer, effect: map[string]string{"a": "b"}},
		{name: "empty class", yaml: "A: {}\n", want: []string{"1:1 LM013 info"}},
		{name: "empty mapping is valid", yaml: "{}\n"},
		{name: "aliases", yaml: "A:\n  &k attn: &v self_attn\nB:\n  *k : *v\n"},
		{name: "multi-level keys and index targets", yaml: "MultimodalProjector:\n  encoder.linear_fc1: mlp.0\n  0.module: module\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, diags, err := Parse([]byte(tc.yaml), "m.yaml")
			if err != nil {
				t.Fatal(err)
			}
			got := diagSummary(diags)
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("diagnostics %q, want %q\n%v", got, tc.want, diags)
			}
			if tc.msgHas != "" && (len(diags) == 0 || !strings.Contains(diags[0].Msg, tc.msgHas)) {
				t.Errorf("first message %v lacks %q", diags, tc.msgHas)
			}
			if tc.effect != nil {
				eff := m.Effective()[tc.effCls]
				gotEff := map[string]string{}
				for _, r := range eff {
					gotEff[r.Key] = r.Value
				}
				if len(gotEff) != len(tc.effect) {
					t.Errorf("effective %s = %v, want %v", tc.effCls, gotEff, tc.effect)
				}
				for k, v := range tc.effect {
					if gotEff[k] != v {
						t.Errorf("effective %s[%s] = %q, want %q", tc.effCls, k, gotEff[k], v)
					}
				}
			}
		})
	}
}

func TestParseDuplicateClassBothLines(t *testing.T) {
	_, diags, err := Parse([]byte("TransformerLayer:\n  a: b\n\nTransformerLayer:\n  c: d\n"), "dup.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(diags) != 1 || diags[0].Pos.Line != 4 || len(diags[0].Related) != 1 || diags[0].Related[0].Line != 1 {
		t.Fatalf("diags = %v, want one at line 4 related to line 1", diags)
	}
	if want := "dup.yaml:4:1: error LM001: duplicate class \"TransformerLayer\" (also at line 1)"; !strings.HasPrefix(diags[0].String(), want) {
		t.Errorf("got %q, want prefix %q", diags[0].String(), want)
	}
}

// Inputs msprobe cannot use at all (detail §3.5): one-line errors with a
// position.
func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"syntax", "A:\n  a: [\n", "m.yaml:2: invalid YAML: did not find expected node content"},
		{"tab", "A:\n\ta: b\n", "m.yaml:2: invalid YAML: expected spaces in the indentation, found a tab (YAML allows no tabs there)"},
		{"tab after spaces", "A:\n  a: b\n  \tc: d\n", "m.yaml:3: invalid YAML: expected spaces in the indentation, found a tab (YAML allows no tabs there)"},
		{"other bad token", "A:\n  a: b\n  @c: d\n", "m.yaml:3: invalid YAML: found character that cannot start any token"},
		{"empty file", "", "m.yaml:1:1: expected a map of class names to maps of child paths, found an empty document"},
		{"top-level list", "- a\n- b\n", "m.yaml:1:1: expected a map of class names to maps of child paths, found a list"},
		{"scalar class value", "TopLayer: module\n", `m.yaml:1:11: expected a map of child paths under "TopLayer", found the string "module"`},
		{"null TopLayer", "TopLayer:\n", `m.yaml:1:10: expected a map of child paths under "TopLayer", found null (msprobe crashes on it)`},
		{"int child key", "A:\n  0: module\n", `m.yaml:2:3: expected a child path (string) under "A", found int 0`},
		{"float child key", "A:\n  0.1: x\n", `m.yaml:2:3: expected a child path (string) under "A", found float 0.1`},
		{"bool child key", "A:\n  on: y\n", `m.yaml:2:3: expected a child path (string) under "A", found bool on`},
		{"int value", "A:\n  x: 0\n", `m.yaml:2:6: expected a bench path (string) for "x", found int "0"`},
		{"null value", "A:\n  x:\n", `m.yaml:2:5: expected a bench path (string) for "x", found null ""`},
		{"hex int value", "A:\n  x: 0x1f\n", `m.yaml:2:6: expected a bench path (string) for "x", found int "0x1f"`},
		{"list value", "A:\n  x: [a]\n", `m.yaml:2:6: expected a bench path (string) for "x", found a list`},
		{"two documents", "A:\n  a: b\n---\nB:\n  c: d\n", "m.yaml:3: expected a single YAML document"},
		{"merge key", "a: &a {x: y}\nB:\n  <<: *a\n", "m.yaml:3:3: YAML merge keys (<<) are not supported in layer mappings"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := Parse([]byte(tc.yaml), "m.yaml")
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			if !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("error %q, want prefix %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans several lines: %q", err)
			}
		})
	}
}

// PyYAML 1.1 typing (detail §3.6).
func TestPyYAMLType(t *testing.T) {
	tests := map[string]string{
		"0.1": "float", "1_000": "int", "0x1f": "int", "on": "bool", "Off": "bool", "yes": "bool", "~": "null",
		"null": "null", "": "null", "0.module": "str", "mlp.0": "str", "1e3": "str", "1.0e+3": "float",
		"2024-01-02": "timestamp", "012": "int", "TopLayer": "str", ".inf": "float", "1:20": "int",
	}
	for in, want := range tests {
		if got := PyYAMLType(in); got != want {
			t.Errorf("PyYAMLType(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestLoadFileChecks(t *testing.T) {
	dir := t.TempDir()
	yml := filepath.Join(dir, "m.yml")
	if err := os.WriteFile(yml, []byte("A:\n  a: b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, diags, err := Load(yml)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, d := range diags {
		if d.Code == CodeFileSuffix {
			found = true
		}
	}
	if !found {
		t.Errorf("no %s for a .yml file: %v", CodeFileSuffix, diags)
	}
	if _, _, err := Load(filepath.Join(dir, "missing.yaml")); err == nil {
		t.Error("no error for a missing file")
	}
}

func FuzzParse(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join(testkit.Testdata(f, "seed-templates"), "*.yaml"))
	for _, s := range seeds {
		if data, err := os.ReadFile(s); err == nil {
			f.Add(data)
		}
	}
	for _, s := range []string{"", "{}", "A:\n  a: b\n", "Cell:\nTopLayer:\n  a: b(c)\n", "a: &x {b: c}\nd: *x\n", "0:\n  1: 2\n", "A:\n  a: [\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, diags, err := Parse(data, "f.yaml")
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error %q", err)
			}
			return
		}
		for _, d := range diags {
			if d.Code == "" || d.Pos.File != "f.yaml" {
				t.Fatalf("bad diagnostic %+v", d)
			}
		}
		// Whatever loads must survive a round trip through Marshal.
		out, err := m.Marshal()
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		m2, _, err := Parse(out, "g.yaml")
		if err != nil {
			t.Fatalf("re-parse of\n%s\nfailed: %v", out, err)
		}
		if a, b := flatten(m), flatten(m2); a != b {
			t.Fatalf("round trip changed the rules:\n%s\n---\n%s\n--- yaml:\n%s", a, b, out)
		}
	})
}

// flatten renders every block and rule, in order, one per line.
func flatten(m *Mapping) string {
	var b strings.Builder
	for _, c := range m.Classes {
		b.WriteString(c.Class + ":\n")
		for _, r := range c.Rules {
			b.WriteString("  " + r.Key + " => " + r.Value + "\n")
		}
	}
	return b.String()
}

// ParseStrict turns what msprobe accepts silently into errors.
func TestParseStrict(t *testing.T) {
	tests := []struct{ name, text, want string }{
		{"ok", "A:\n  a: b\n  c: c\n", ""},
		{"duplicate class", "A:\n  a: b\nA:\n  c: d\n", `s.yaml:3:1: LM001: duplicate class "A" (also at line 1)`},
		{"duplicate key", "A:\n  a: b\n  a: c\n", `s.yaml:3:3: LM002: duplicate key "a" under "A"`},
		{"empty value", "A:\n  a: ''\n", `s.yaml:2:6: LM004: empty bench path for "a"`},
		{"class not a string", "1:\n  a: b\n", `s.yaml:1:1: LM009: class key 1 loads as a YAML 1.1 int`},
		{"empty block", "A: {}\nB:\n  a: b\n", `s.yaml:1:1: LM013:`},
		{"no rules", "{}\n", `s.yaml:1: expected at least one rule, found none`},
		{"list value", "A:\n  a: [b]\n", `s.yaml:2:6: expected a bench path (string) for "a", found a list`},
		{"null block", "A:\n", `s.yaml:1:3: expected a map of child paths under "A", found null`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := ParseStrict([]byte(tc.text), "s.yaml")
			if tc.want == "" {
				if err != nil || m == nil {
					t.Fatalf("ParseStrict: %v", err)
				}
				return
			}
			var se *source.Error
			if !errors.As(err, &se) || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("ParseStrict error %v, want a source.Error starting %q", err, tc.want)
			}
		})
	}
}
