package source

import (
	"bytes"
	"encoding/json"
	"errors"
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

func TestYAMLError(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"syntax", "A:\n  a: [\n", "m.yaml:2: invalid YAML: did not find expected node content"},
		{"tab", "A:\n\ta: b\n", "m.yaml:2: invalid YAML: expected spaces in the indentation, found a tab (YAML allows no tabs there)"},
		{"tab after spaces", "A:\n  a: b\n  \tc: d\n", "m.yaml:3: invalid YAML: expected spaces in the indentation, found a tab (YAML allows no tabs there)"},
		{"other bad token", "A:\n  a: b\n  @c: d\n", "m.yaml:3: invalid YAML: found character that cannot start any token"},
		{"type", "a: [1]\n", "m.yaml:1: invalid YAML: cannot unmarshal !!seq into string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var v map[string]string
			err := yaml.Unmarshal([]byte(tc.in), &v)
			if err == nil {
				t.Fatal("no error to position")
			}
			if got := YAMLError("m.yaml", []byte(tc.in), err).Error(); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestOneLine(t *testing.T) {
	if got := OneLine("a\nb\r\nc"); got != `a\nb\r\nc` {
		t.Errorf("got %q", got)
	}
}
