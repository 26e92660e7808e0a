package resolve

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"
	"unicode/utf8"

	"github.com/layermap/layermap/printparse/testkit"
)

// stackRawJSON is stackMembers through json.Unmarshal (the reference).
func stackRawJSON(data []byte, names []string) (map[string][]byte, bool, bool) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil || bytes.HasPrefix(bytes.TrimSpace(data), []byte("null")) {
		return nil, false, false
	}
	raw := map[string][]byte{}
	for _, k := range names {
		if v, ok := m[k]; ok {
			raw[k] = v
		}
	}
	return raw, len(m) == 0, true
}

func checkStackMembers(t *testing.T, what string, data []byte, names []string) {
	t.Helper()
	got, gempty, gok := stackMembers(data, names)
	want, wempty, wok := stackRawJSON(data, names)
	if gok != wok || gempty != wempty || len(got) != len(want) {
		t.Fatalf("%s: stackMembers = %d values, empty %v, %v; json.Unmarshal: %d, %v, %v", what, len(got), gempty, gok, len(want), wempty, wok)
	}
	for k, v := range want {
		if !bytes.Equal(got[k], v) {
			t.Errorf("%s: %q = %q, want %q", what, k, got[k], v)
		}
	}
}

// TestStackMembers: stack.json's values are what json.Unmarshal into a
// map of raw values gives, on the corpus' files (grouped and old format)
// and on files made to differ.
func TestStackMembers(t *testing.T) {
	t.Parallel()
	files := append(testkit.FilesNamed(t, testkit.Testdata(t, "demo"), "stack.json", 1),
		testkit.FilesNamed(t, testkit.Testdata(t, "corpus"), "stack.json", 9)...)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]json.RawMessage
		json.Unmarshal(data, &m)
		var names []string
		for k := range m {
			names = append(names, k, k+".x")
		}
		checkStackMembers(t, f, data, names)
		checkStackMembers(t, f+" (no names)", data, nil)
	}
	names := []string{"a.b", "a", "x.y.z", "é.1", "q\"r.s"}
	for _, in := range []string{
		`{}`, ` { } `, `null`, `[]`, `"a"`, `1`, `{"a.b": 1} x`, `{"a.b": }`, `{"a.b": [1,}`,
		`{"a.b": ["f1", "f2"], "a": null, "x.y.z": "s"}`,
		`{"a.b": [1], "a.b": ["last"]}`,
		"{\n \"a.b\"\t:\r\n [ \"}\", \"]\\\"{\" , {\"k\": [[]]} ] ,\"0\": [[\"a.b\"], [\"f\"]]\n}\n",
		`{"\u0061.b": ["esc"], "\u00e9.1": [], "q\"r.s": {"a": "}"}}`,
		`{"a": -1.5e+3, "x.y.z": true, "a.b": false}`,
		`{"0": [["a.b"], ["File x, line 1"]], "1": [["x.y.z"], []]}`,
	} {
		checkStackMembers(t, in, []byte(in), names)
	}
}

func FuzzStackMembers(f *testing.F) {
	f.Add([]byte(`{"a.b": ["f1"], "0": [["a.b"], ["f"]], "a": null}`))
	f.Add([]byte(`{"q\"r.s": {"a": "}]"}, "a.b": [1], "a.b": 2}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if !utf8.Valid(data) {
			return // readStackRaw refuses it before (source.CheckUTF8)
		}
		checkStackMembers(t, "fuzz", data, []string{"a.b", "a", "0", "q\"r.s", "x.y.z"})
	})
}
