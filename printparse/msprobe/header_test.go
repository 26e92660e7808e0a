package msprobe

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/layermap/layermap/printparse/testkit"
)

// Expected values below were computed independently with Python's json
// module over the corpus files.

func TestReadHeaderAndEntryNames(t *testing.T) {
	c := testkit.Corpus(t, "msprobe")
	tests := []struct {
		path                 string
		task, level, fw, ddd string
		fwMissing            bool
		entries              int
		first                string
	}{
		{"examples/quick_start/gpu_dump/step0/proc2016/dump.json", "statistics", "mix", "pytorch", "", false, 760, "Functional.conv2d.0.forward"},
		{"golden/synth_tensor_pt/npu/dump.json", "tensor", "mix", "pytorch", "./dump_tensor_data", false, 7, "Functional.linear.0.forward"},
		{"golden/synth_md5/npu/dump.json", "statistics", "mix", "pytorch", "", false, 27, "Functional.linear.0.forward"},
		{"golden/qwen25vl_llamafactory_vs_mindspeed_reverse_template/bench/proc12353/dump.json", "statistics", "mix", "pytorch", "", false, 197, "Tensor.__mul__.0.forward"},
		{"test/msprobe_test/resources/layer_mapping/mindspore/dump.json", "statistics", "mix", "mindspore", "", false, 1,
			"Cell.network_with_loss.module.language_model.embedding.word_embeddings.VocabParallelEmbedding.forward.0"},
		// framework after "data", and missing.
		{"test/msprobe_test/visualization_ut/input_format_correct/step0/rank0/dump.json", "statistics", "mix", "pytorch", "", false, 1, "api"},
		{"test/msprobe_test/visualization_ut/input/step0/rank0/dump.json", "statistics", "mix", "pytorch", "", true, 1, "api"},
		{"test/msprobe_test/resources/common/test_backward.json", "", "", "pytorch", "./", true, 2, "Module"},
	}
	for _, tt := range tests {
		t.Run(filepath.Base(filepath.Dir(tt.path)), func(t *testing.T) {
			p := filepath.Join(c, tt.path)
			h, err := ReadHeader(p)
			if err != nil {
				t.Fatal(err)
			}
			if h.Task != tt.task || h.Level != tt.level || h.Framework != tt.fw || h.DumpDataDir != tt.ddd || h.FrameworkMissing != tt.fwMissing {
				t.Errorf("header %+v, want task=%q level=%q fw=%q ddd=%q missing=%v", h, tt.task, tt.level, tt.fw, tt.ddd, tt.fwMissing)
			}
			names, err := EntryNames(p)
			if err != nil {
				t.Fatal(err)
			}
			if len(names) != tt.entries || names[0] != tt.first {
				t.Errorf("EntryNames: %d names, first %q; want %d, %q", len(names), names[0], tt.entries, tt.first)
			}
		})
	}
}

// TestSkimEntryNames: on every dump of the corpus EntryNames reads, the
// skim gives the same names.
func TestSkimEntryNames(t *testing.T) {
	t.Parallel()
	n := 0
	for _, p := range flatDumps(t) {
		want, err := EntryNames(p)
		if err != nil {
			continue
		}
		got, err := SkimEntryNames(p)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("%s: SkimEntryNames %d names (%v), EntryNames %d", p, len(got), err, len(want))
		}
		n++
	}
	if n < 20 {
		t.Fatalf("only %d dumps read", n)
	}
}

func TestReadHeaderErrors(t *testing.T) {
	c := testkit.Corpus(t, "msprobe")
	tests := []struct{ path, want string }{
		{"test/msprobe_test/visualization_ut/input/step1/rank0/dump.json", `dump.json:1: expected a "data" key in the dump object, found none`},
		{"test/msprobe_test/resources/common/test_no_dump_data.json", `test_no_dump_data.json:3: expected a "data" key`},
	}
	for _, tt := range tests {
		_, err := ReadHeader(filepath.Join(c, tt.path))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want %q", tt.path, err, tt.want)
		}
		if _, err := EntryNames(filepath.Join(c, tt.path)); err == nil {
			t.Errorf("%s: EntryNames succeeded", tt.path)
		}
	}
}

func TestReadConstruct(t *testing.T) {
	c := testkit.Corpus(t, "msprobe")
	tests := []struct {
		path       string
		n, topLvl  int
		key, value string
	}{
		{"examples/quick_start/gpu_dump/step0/proc2016/construct.json", 868, 20, "Functional.conv2d.0.forward", "Module.conv1.Conv2d.forward.0"},
		{"test/msprobe_test/resources/layer_mapping/mindspore/construct.json", 13, 3, "Mint.logical_or.0.forward",
			"Cell.network_with_loss.module.language_model.embedding.word_embeddings.VocabParallelEmbedding.forward.0"},
		{"golden/synth_multirank/npu/step0/rank0/construct.json", 5, 5, "Functional.relu.0.forward", ""},
	}
	for _, tt := range tests {
		m, err := ReadConstruct(filepath.Join(c, tt.path))
		if err != nil {
			t.Fatal(err)
		}
		top := 0
		for _, v := range m {
			if v == "" {
				top++
			}
		}
		if len(m) != tt.n || top != tt.topLvl || m[tt.key] != tt.value {
			t.Errorf("%s: %d entries, %d top-level, m[%q]=%q", tt.path, len(m), top, tt.key, m[tt.key])
		}
	}

	dir := t.TempDir()
	write := func(name, s string) string { return testkit.WriteFile(t, dir, name, s) }
	m, err := ReadConstruct(write("mg.json", `{"megatron_micro_step_number": 2, "A.0.forward": ["Module.m.M.forward.0", 1], "B.0.forward": null, "Module.m.M.forward.0": ""}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 3 || m["A.0.forward"] != "Module.m.M.forward.0" || m["B.0.forward"] != "" {
		t.Errorf("megatron construct %v", m)
	}
	for _, bad := range []struct{ src, want string }{
		{`{"megatron_micro_step_number": 2,` + "\n" + `"A": ["x"]}`, "bad.json:2: entry \"A\": expected [parent, microStep], found a list of 1"},
		{`{"A": 3}`, `bad.json:1: entry "A": expected a parent name or null, found a number`},
		{`[]`, "bad.json:1: expected an object of entry -> parent, found a list"},
		{`{"A": "x"`, "bad.json:1: expected ',' or '}', found end of file"},
	} {
		_, err := ReadConstruct(write("bad.json", bad.src))
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: err = %v, want %q", bad.src, err, bad.want)
		}
	}
}

func TestReadStack(t *testing.T) {
	c := testkit.Corpus(t, "msprobe")
	tests := []struct {
		path      string
		n, frames int
		key       string
	}{
		{"examples/quick_start/gpu_dump/step0/proc2016/stack.json", 410, 6872, "Functional.conv2d.0.forward"},
		{"golden/synth_statistics/npu/stack.json", 20, 20, "Functional.linear.0.forward"},
		{"test/msprobe_test/resources/layer_mapping/mindspore/stack.json", 10, 268, "Tensor.__add__.0.forward"},
		{"test/msprobe_test/visualization_ut/input/step0/rank0/stack.json", 0, 0, ""},
	}
	for _, tt := range tests {
		m, err := ReadStack(filepath.Join(c, tt.path))
		if err != nil {
			t.Fatal(err)
		}
		frames := 0
		for _, v := range m {
			frames += len(v)
		}
		if len(m) != tt.n || frames != tt.frames || (tt.key != "" && len(m[tt.key]) == 0) {
			t.Errorf("%s: %d entries, %d frames, %q has %d", tt.path, len(m), frames, tt.key, len(m[tt.key]))
		}
	}
	m, err := ReadStack(filepath.Join(c, "examples/quick_start/gpu_dump/step0/proc2016/stack.json"))
	if err != nil {
		t.Fatal(err)
	}
	if got := m["Functional.conv2d.0.forward"][0]; !strings.HasPrefix(got, "File /root/miniconda3/lib/python3.12/site-packages/msprobe/core/dump/api_dump/api_registry.py, line 95, in api_function, \n return") {
		t.Errorf("first frame %q", got)
	}
}

// TestFileMembers: each member's key as written and its value's text,
// across buffer refills; anything but one object declines.
func TestFileMembers(t *testing.T) {
	t.Parallel()
	big := `"` + strings.Repeat("x", 200<<10) + `"`
	tests := []struct {
		in   string
		want []string // key, value, key, value...
		ok   bool
	}{
		{`{}`, nil, true},
		{" {\n \"a\" : [1, {\"b\": \"}]\"}] ,\"c\\\"d\":null}\n", []string{`"a"`, `[1, {"b": "}]"}]`, `"c\"d"`, `null`}, true},
		{`{"0": [["x"], ["y"]], "0": 5}`, []string{`"0"`, `[["x"], ["y"]]`, `"0"`, `5`}, true},
		{`{"k": ` + big + `, "l": -1.5e3}`, []string{`"k"`, big, `"l"`, `-1.5e3`}, true},
		{`[]`, nil, false},
		{`{"a": 1} x`, nil, false},
		{`{"a": 1,}`, nil, false},
		{`{"a" 1}`, nil, false},
		{`{"a": 1`, nil, false},
		{``, nil, false},
	}
	for _, tc := range tests {
		var got []string
		ok := fileMembers(t, []byte(tc.in), func(k []byte, v string) { got = append(got, string(k), v) })
		if ok != tc.ok || ok && strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("FileMembers(%.40q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
	// keys across the lexer's first refill (its buffer is 64 KB), at
	// every offset around it
	for n := 65490; n < 65540; n++ {
		checkFileMembers(t, []byte(`{"a": "`+strings.Repeat("v", n)+`", "key\\\"with.dots.0.forward": [1], "b": 2}`))
	}
	checkFileMembers(t, []byte(`{"`+strings.Repeat("k", 200<<10)+`": 1, "a": 2}`))
}

// fileMembers is FileMembers of data written to a file, with each
// value's text; the file's offset is moved first, which FileMembers must
// not mind.
func fileMembers(t *testing.T, data []byte, fn func(key []byte, value string)) bool {
	t.Helper()
	f, err := os.Open(testkit.WriteFile(t, t.TempDir(), "obj.json", string(data)))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.Seek(int64(len(data)/2), io.SeekStart)
	return FileMembers(f, func(k, v []byte, start, end int64) {
		if v != nil && string(v) != string(data[start:end]) {
			t.Errorf("value of %s at %d..%d is %.40q, want %.40q", k, start, end, v, data[start:end])
		}
		fn(k, string(data[start:end]))
	})
}

// refMembers is FileMembers' reference: each member's key and value,
// through encoding/json's tokens (a key as written is its exact text).
func refMembers(data []byte) ([]string, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(data, &m) != nil || m == nil {
		return nil, false
	}
	d := json.NewDecoder(bytes.NewReader(data))
	d.Token() // '{'
	var out []string
	for d.More() {
		start := d.InputOffset()
		if _, err := d.Token(); err != nil {
			return nil, false
		}
		key := bytes.TrimLeft(data[start:d.InputOffset()], " \t\r\n,")
		var v json.RawMessage
		if d.Decode(&v) != nil {
			return nil, false
		}
		out = append(out, string(key), string(v))
	}
	return out, true
}

// checkFileMembers: FileMembers gives the members encoding/json reads.
func checkFileMembers(t *testing.T, data []byte) {
	t.Helper()
	var got []string
	gok := fileMembers(t, data, func(k []byte, v string) { got = append(got, string(k), v) })
	want, wok := refMembers(data)
	if gok != wok || strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("FileMembers(%.40q) = %.80q, %v; encoding/json: %.80q, %v", data, got, gok, want, wok)
	}
}

// TestCheckJSON: json.load's syntax, the first error at its line.
func TestCheckJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want string // "" for none
	}{
		{`{"a": [1, 2.5e3, -0, true, null, "x\u00e9"]}`, ""},
		{"{\"a\": NaN,\n \"b\": [-Infinity, Infinity]}\n", ""},
		{`[1, "two"]`, ""},
		{"{\"a\": 1,\n \"b\": 1.2.3}", ":2: expected ',' or '}', found '.'"},
		{"{\"a\": 1}\n{}", ":2: expected end of file, found '{'"},
		{"{\"a\":\n [1,", ":2: expected a value, found end of file (truncated?)"},
		{"", ":1: expected a JSON value, found end of file (truncated?)"},
		{"{\"a\": \"\xff\"}", ":1: expected UTF-8 text in the string, found byte 0xff"},
		{"\xef\xbb\xbf{}", ":1: expected a JSON value, found a UTF-8 byte-order mark (BOM)"},
	}
	for _, tc := range tests {
		path := testkit.WriteFile(t, t.TempDir(), "dump.json", tc.in)
		err := CheckJSON(path)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("CheckJSON(%q) = %v, want nil", tc.in, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), path+tc.want)):
			t.Errorf("CheckJSON(%q) = %v, want %q", tc.in, err, path+tc.want)
		}
	}
	if err := CheckJSON(filepath.Join(t.TempDir(), "none.json")); err == nil {
		t.Error("CheckJSON of a missing file: no error")
	}
}
