package source

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

func TestLine(t *testing.T) {
	data := []byte("a\nbc\n\nd")
	for _, tc := range []struct {
		off  int64
		want int
	}{{-1, 1}, {0, 1}, {1, 1}, {2, 2}, {5, 3}, {6, 4}, {7, 4}, {100, 4}} {
		if got := Line(data, tc.off); got != tc.want {
			t.Errorf("Line(%d) = %d, want %d", tc.off, got, tc.want)
		}
		if tc.off < 0 {
			continue
		}
		got, err := LineAt(bytes.NewReader(data), tc.off)
		if err != nil || got != tc.want {
			t.Errorf("LineAt(%d) = %d, %v, want %d", tc.off, got, err, tc.want)
		}
	}
}

func TestCheckUTF8(t *testing.T) {
	if err := CheckUTF8("f", []byte("{\"é\": 1}")); err != nil {
		t.Errorf("UTF-8 refused: %v", err)
	}
	const want = "f:2: expected UTF-8 text, found byte 0xff, which is not UTF-8 (Python's json.load refuses the file)"
	if err := CheckUTF8("f", []byte("{\n\"\xff\": 1}")); err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

func TestJSONError(t *testing.T) {
	const what = "an object"
	for _, tc := range []struct {
		name, in string
		decoder  bool // json.Decoder rather than json.Unmarshal
		want     string
	}{
		{"syntax", "{\n\"a\": \n}", false, "f:3: expected an object, found invalid JSON (invalid character '}' looking for beginning of value)"},
		{"syntax, decoder", "{\n\"a\": \n}", true, "f:3: expected an object, found invalid JSON (invalid character '}' looking for beginning of value)"},
		{"truncated", "{\n\"a\":", false, "f:2: expected an object, found invalid JSON (unexpected end of JSON input)"},
		{"truncated, decoder", "{\n\"a\":", true, "f:2: expected an object, found invalid JSON (unexpected end of JSON input)"},
		{"type", "\n[1]", false, "f:2: expected an object, found a JSON array"},
		{"type, decoder", "\n[1]", true, "f:2: expected an object, found a JSON array"},
		{"empty", " \n", false, "f:1: expected an object, found an empty file"},
		{"empty, decoder", "", true, "f:1: expected an object, found an empty file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var v map[string]int
			var err error
			if tc.decoder {
				err = json.NewDecoder(strings.NewReader(tc.in)).Decode(&v)
			} else {
				err = json.Unmarshal([]byte(tc.in), &v)
			}
			if err == nil {
				t.Fatal("no error to position")
			}
			if got := JSONError("f", []byte(tc.in), what, err).Error(); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
	cause := errors.New("disk on fire")
	if e := JSONError("f", []byte("{}"), what, cause); !errors.Is(e, cause) || e.Error() != "f: expected an object: disk on fire" {
		t.Errorf("other error: %v", e)
	}
}

// TestYAMLError checks the line of yaml.v3's error shapes against the line
// a reader would point at: the '[' or '{' left open, the quote never
// closed, the key indented wrongly, the tab, the repeated key.
func TestYAMLError(t *testing.T) {
	const file = "m.yaml"
	for _, tc := range []struct {
		name, in string
		toMap    bool // decode into a map (repeated keys, types) rather than yaml.Node
		want     string
	}{
		// review item 15: the '[' is on line 6; yaml.v3 says line 5
		{"flow sequence unclosed", "TopLayer:\n  0.module: module\n\nTransformerLayer:\n  input_layernorm: norm1\n  self_attention: [attn\n  pre_mlp_layernorm: norm2\n", false,
			"m.yaml:6: invalid YAML: did not find expected ',' or ']' (a '[' here is not closed, or a ',' is missing between its items)"},
		{"flow sequence unclosed at the end", "TransformerLayer:\n  a: [b", false, "m.yaml:2: invalid YAML: did not find expected ',' or ']' (a '[' here is not closed, or a ',' is missing between its items)"},
		{"flow sequence unclosed on line 1", "a: [b\nc: d\n", false, "m.yaml:1: invalid YAML: did not find expected ',' or ']' (a '[' here is not closed, or a ',' is missing between its items)"},
		{"flow sequence unclosed, keys after", "A:\n  a: b\n  c: [d, e\n  f: g\n  h: i\n", false, "m.yaml:3: invalid YAML: did not find expected ',' or ']' (a '[' here is not closed, or a ',' is missing between its items)"},
		{"flow sequence closed, a ',' missing", "A:\n  x: y\n  a: [b, {c: d} e]\n", false, "m.yaml:3: invalid YAML: did not find expected ',' or ']' (a '[' here is not closed, or a ',' is missing between its items)"},
		{"flow sequence over lines, a ',' missing", "A:\n  a: [b,\n      'c'\n      'd']\n", false, "m.yaml:2: invalid YAML: did not find expected ',' or ']' (a '[' here is not closed, or a ',' is missing between its items)"},
		{"flow mapping closed, a ',' missing", "A:\n  a: {b: c d: e}\n", false, "m.yaml:2: invalid YAML: did not find expected ',' or '}' (a '{' here is not closed, or a ',' is missing between its entries)"},
		{"flow sequence empty, unclosed", "A:\n  a: [\n", false, "m.yaml:2: invalid YAML: did not find expected node content"},
		{"flow mapping unclosed", "A:\n  a: {b: c\n  d: e\n", false, "m.yaml:2: invalid YAML: did not find expected ',' or '}' (a '{' here is not closed, or a ',' is missing between its entries)"},
		{"flow mapping unclosed on line 1", "a: {b: c\nd: e\n", false, "m.yaml:1: invalid YAML: did not find expected ',' or '}' (a '{' here is not closed, or a ',' is missing between its entries)"},
		{"flow mapping unclosed at the end", "A:\n  x: y\n  a: {b: c", false, "m.yaml:3: invalid YAML: did not find expected ',' or '}' (a '{' here is not closed, or a ',' is missing between its entries)"},
		{"dedented key", "A:\n  a: b\n c: d\n", false, "m.yaml:3: invalid YAML: did not find expected key"},
		{"dedented key, nested", "A:\n  B:\n    a: b\n    c: d\n   e: f\n  g: h\n", false, "m.yaml:5: invalid YAML: did not find expected key"},
		{"dedented key after a comment", "A:\n  a: b\n  # note\n\n c: d\n", false, "m.yaml:5: invalid YAML: did not find expected key"},
		{"over-indented key", "A:\n  a: b\n    c: d\n", false, "m.yaml:3: invalid YAML: mapping values are not allowed in this context"},
		{"over-indented key, later", "A:\n  a: b\n  c: d\n  e: f\n     g: h\n", false, "m.yaml:5: invalid YAML: mapping values are not allowed in this context"},
		{"list item among keys", "A:\n  a: b\n  - c\n", false, "m.yaml:3: invalid YAML: did not find expected key"},
		{"key among list items", "A:\n  - a\n  - b\n  c: d\n", false, "m.yaml:4: invalid YAML: did not find expected '-' indicator"},
		{"key without a colon", "A:\n  a: b\n  c\n  d: e\n", false, "m.yaml:3: invalid YAML: could not find expected ':'"},
		{"colon in a plain value", "A:\n  a: b: c\n", false, "m.yaml:2: invalid YAML: mapping values are not allowed in this context"},
		{"tab", "A:\n\ta: b\n", false, "m.yaml:2: invalid YAML: expected spaces in the indentation, found a tab (YAML allows no tabs there)"},
		{"tab after spaces", "A:\n  a: b\n  \tc: d\n", false, "m.yaml:3: invalid YAML: expected spaces in the indentation, found a tab (YAML allows no tabs there)"},
		{"tab on line 1", "\ta: b\n", false, "m.yaml:1: invalid YAML: expected spaces in the indentation, found a tab (YAML allows no tabs there)"},
		{"other bad token", "A:\n  a: b\n  @c: d\n", false, "m.yaml:3: invalid YAML: found character that cannot start any token"},
		{"double quote unclosed", "A:\n  a: \"b\n  c: d\n", false, "m.yaml:2: invalid YAML: found unexpected end of stream (a quote opened here is not closed)"},
		{"single quote unclosed", "A:\n  x: y\n  z: w\n  a: 'b\n  c: d\n  e: f\n", false, "m.yaml:4: invalid YAML: found unexpected end of stream (a quote opened here is not closed)"},
		{"double quote unclosed on line 1", "a: \"b\nc: d\n", false, "m.yaml:1: invalid YAML: found unexpected end of stream (a quote opened here is not closed)"},
		{"unknown escape", "A:\n  a: \"\\q\"\n", false, "m.yaml:2: invalid YAML: found unknown escape character"},
		{"second document broken", "A:\n  a: b\n---\nB:\n  c: [d\n", false, "m.yaml:5: invalid YAML: did not find expected ',' or ']' (a '[' here is not closed, or a ',' is missing between its items)"},
		{"invalid UTF-8", "A:\n  a: b\n  c: \xff\n", false, "m.yaml:3: invalid YAML: invalid leading UTF-8 octet"},
		{"control character", "A:\n  a: b\x01\n", false, "m.yaml:2: invalid YAML: control characters are not allowed"},
		{"repeated key", "A:\n  a: b\n  a: c\n", true, "m.yaml:3: invalid YAML: mapping key \"a\" already defined at line 2"},
		{"repeated top key", "A:\n  a: b\nA:\n  c: d\n", true, "m.yaml:3: invalid YAML: mapping key \"A\" already defined at line 1"},
		{"type", "A:\n  a: [1]\n", true, "m.yaml:2: invalid YAML: cannot unmarshal !!seq into string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.toMap {
				var v map[string]map[string]string
				err = yaml.Unmarshal([]byte(tc.in), &v)
			} else {
				dec := yaml.NewDecoder(strings.NewReader(tc.in))
				for err == nil {
					var n yaml.Node
					err = dec.Decode(&n)
				}
				if errors.Is(err, io.EOF) {
					err = nil
				}
			}
			if err == nil {
				t.Fatal("no error to position")
			}
			if got := YAMLError(file, []byte(tc.in), err).Error(); got != tc.want {
				t.Errorf("got  %s\nwant %s\n(yaml.v3: %v)", got, tc.want, err)
			}
		})
	}
}

// TestYAMLErrorLarge checks the lines given without reading the text
// again (texts above relocateLimit): yaml.v3's, counted from 1.
func TestYAMLErrorLarge(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"A:\n  x: y\n  a: [b\n  c: d\n", "m.yaml:3: invalid YAML: did not find expected ',' or ']' (a '[' here is not closed, or a ',' is missing between its items)"},
		{"A:\n  a: b\n    c: d\n", "m.yaml:3: invalid YAML: mapping values are not allowed in this context"},
		{"A:\n  a: \"b\n  c: d\n", "m.yaml:2: invalid YAML: found unexpected end of stream (a quote opened here is not closed)"},
		{"A:\n  a: b\n  c: \xff\n", "m.yaml:3: invalid YAML: invalid leading UTF-8 octet"},
	} {
		var n yaml.Node
		err := yaml.Unmarshal([]byte(tc.in), &n)
		if err == nil {
			t.Fatalf("%q: no error to position", tc.in)
		}
		if got := yamlError("m.yaml", []byte(tc.in), err, 0).Error(); got != tc.want {
			t.Errorf("%q:\ngot  %s\nwant %s", tc.in, got, tc.want)
		}
	}
}

func TestOneLine(t *testing.T) {
	if got := OneLine("a\nb\r\nc"); got != `a\nb\r\nc` {
		t.Errorf("got %q", got)
	}
}

// FuzzYAMLError checks that any yaml.v3 error becomes one line at a line
// of the input.
func FuzzYAMLError(f *testing.F) {
	for _, s := range []string{"a: [b\n", "A:\n  a: b\n c: d\n", "a: \"b\n", "\ta: b\n", "A:\n  a: b\n  a: c\n", "a: \xff\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		var n yaml.Node
		err := yaml.Unmarshal([]byte(in), &n)
		if err == nil {
			return
		}
		e := YAMLError("m.yaml", []byte(in), err)
		if strings.ContainsAny(e.Error(), "\r\n") {
			t.Errorf("not one line: %q", e.Error())
		}
		if lines := strings.Count(in, "\n") + 1; e.Line < 0 || e.Line > lines {
			t.Errorf("line %d of a %d-line input: %s", e.Line, lines, e)
		}
	})
}
