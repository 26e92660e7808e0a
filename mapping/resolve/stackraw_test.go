package resolve

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/layermap/layermap/printparse/msprobe"
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

// checkStackMembers checks stackMembers of data, written to a file,
// against json.Unmarshal's reading; the lexer also reads Python's bare
// NaN and Infinity, which json.Unmarshal refuses, and refuses invalid
// UTF-8, which json.Unmarshal reads.
func checkStackMembers(t *testing.T, what string, data []byte, names []string) {
	t.Helper()
	got := map[string][]byte{}
	gempty, gok := stackMembers(testkit.WriteFile(t, t.TempDir(), "stack.json", string(data)), msprobe.NamesOf(names), func(k string, v []byte) {
		got[k] = bytes.Clone(v)
	})
	if !utf8.Valid(data) {
		if gok {
			t.Fatalf("%s: stackMembers read a file that is not UTF-8", what)
		}
		return
	}
	want, wempty, wok := stackRawJSON(data, names)
	if gok && !wok && bareWordFirst(data) {
		return
	}
	if gok != wok || gempty != wempty || gok && len(got) != len(want) {
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
		`{"a.b": [NaN], "x.y.z": -Infinity}`, `{"a.b": 1} {`, `{"a.b": [[[[1]]]]`,
		// a key or value across the lexer's 64 KB buffer
		`{"` + strings.Repeat("k", 70000) + `": 1, "a.b": ["` + strings.Repeat("v", 70000) + `"], "a": 2}`,
		`{"0": "` + strings.Repeat("v", 65530) + `", "q\"r.s": ["` + strings.Repeat("w", 90000) + `"]}`,
	} {
		checkStackMembers(t, in, []byte(in), names)
	}
}

// TestStackRawPythonWords: stack.json with Python's bare NaN and
// Infinity reads as json.load reads it, not refused as encoding/json
// would.
func TestStackRawPythonWords(t *testing.T) {
	t.Parallel()
	path := testkit.WriteFile(t, t.TempDir(), "stack.json", `{"0": [["a.b.c.d"], [NaN, -Infinity]], "a.b.c.d": ["File x, line 1, in f"]}`)
	got, empty, err := readStackRaw(path, msprobe.NamesOf([]string{"a.b.c.d"}))
	if err != nil || empty || len(got) != 1 || !got["a.b.c.d"].Valid || len(got["a.b.c.d"].Frames) != 1 {
		t.Errorf("readStackRaw = %v, %v, %v; want the one stack of a.b.c.d", got, empty, err)
	}
}

// bareWordFirst reports whether json.Unmarshal's first syntax error in
// data is at one of Python's bare words (NaN, Infinity, -Infinity).
func bareWordFirst(data []byte) bool {
	var m map[string]json.RawMessage
	var se *json.SyntaxError
	if !errors.As(json.Unmarshal(data, &m), &se) || se.Offset < 1 || se.Offset > int64(len(data)) {
		return false
	}
	c := data[se.Offset-1]
	return c == 'N' || c == 'I'
}

func FuzzStackMembers(f *testing.F) {
	f.Add([]byte(`{"a.b": ["f1"], "0": [["a.b"], ["f"]], "a": null}`))
	f.Add([]byte(`{"q\"r.s": {"a": "}]"}, "a.b": [1], "a.b": 2}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkStackMembers(t, "fuzz", data, []string{"a.b", "a", "0", "q\"r.s", "x.y.z"})
	})
}

// TestReadStackRawShared: entries whose stacks are the same text share
// one decoding, and each gets what decoding its own value gives (a
// repeated key's last value).
func TestReadStackRawShared(t *testing.T) {
	t.Parallel()
	data := `{"a.b.c.d": ["f1", "f2"], "e.f.g.h": ["f1", "f2"], "i.j.k.l": ["f1", "f3"], "m.n.o.p": [], "q.r.s.t": [1, 2],
		"u.v.w.x": "x", "y.z.a.b": [ ], "c.d.e.f": ["f1",  "f2"], "a.b.c.d": ["f9"], "g.h.i.j": ["f1", "f2"]}`
	names := []string{"a.b.c.d", "e.f.g.h", "i.j.k.l", "m.n.o.p", "q.r.s.t", "u.v.w.x", "y.z.a.b", "c.d.e.f", "g.h.i.j", "k.l.m.n"}
	got, empty, err := readStackRaw(testkit.WriteFile(t, t.TempDir(), "stack.json", data), msprobe.NamesOf(names))
	if err != nil || empty {
		t.Fatalf("readStackRaw: empty %v, %v", empty, err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(data), &m); err != nil {
		t.Fatal(err)
	}
	want := map[string]StackEntry{}
	for k, v := range m {
		want[k] = stackEntry(v)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("readStackRaw =\n%v\nwant\n%v", got, want)
	}
	if &got["e.f.g.h"].Frames[0] != &got["g.h.i.j"].Frames[0] {
		t.Errorf("the same stack text is decoded twice")
	}
}
