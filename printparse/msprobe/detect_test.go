package msprobe

import (
	"bufio"
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// pyS is Python's \s for str patterns: the characters str.isspace()
// accepts (re.match(r'\s', chr(c)) over all code points).
const pyS = `[\t\n\v\f\r \x1c-\x1f\x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}]`

var (
	refMS = regexp.MustCompile(`"type":` + pyS + `*"mindspore`)
	refPT = regexp.MustCompile(`"type":` + pyS + `*"torch`)
)

// refDetectTypes is msprobe's loop, line by line: the reference
// detectTypes is held to. A \r\n gives an empty line more than Python's
// universal newlines, which no pattern matches.
func refDetectTypes(data []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, len(data)+1)
	sc.Split(func(data []byte, atEOF bool) (int, []byte, error) {
		if i := bytes.IndexAny(data, "\r\n"); i >= 0 {
			return i + 1, data[:i], nil
		}
		if atEOF && len(data) > 0 {
			return len(data), data, nil
		}
		return 0, nil, nil
	})
	for sc.Scan() {
		switch {
		case refMS.Match(sc.Bytes()):
			return "mindspore"
		case refPT.Match(sc.Bytes()):
			return "pytorch"
		}
	}
	return ""
}

// detectChunks runs detectTypes on data through a buffer of n bytes.
func detectChunks(data []byte, n int) (string, error) {
	return detectTypes(bytes.NewReader(data), make([]byte, n))
}

var detectChunkSizes = []int{1, 2, 3, 7, 8, 9, 13, 64, 64 << 10}

func TestDetectTypes(t *testing.T) {
	long := strings.Repeat(" ", 100<<10)
	tests := []struct{ text, want string }{
		{``, ""},
		{`{"type": "torch.Tensor"}`, "pytorch"},
		{`{"type": "mindspore.Tensor"}`, "mindspore"},
		{`{"type":"torch"}`, "pytorch"},
		{`{"type" : "torch"}`, ""},
		{`{"type": torch}`, ""},
		{`{"type": "torc"}`, ""},
		{`{"type": "Torch"}`, ""},
		{`{"type": "mindspor"}`, ""},
		{`{"type": "int", "x": "torch", "dtype": "mindspore"}`, ""},
		// both on one line: MindSpore's, in either order
		{`{"a": {"type": "torch.Tensor"}, "b": {"type": "mindspore.Tensor"}}`, "mindspore"},
		{`{"b": {"type": "mindspore.Tensor"}, "a": {"type": "torch.Tensor"}}`, "mindspore"},
		// an earlier line with torch only wins
		{"{\"type\": \"torch.Tensor\"}\n{\"type\": \"mindspore.Tensor\"}", "pytorch"},
		{"{\"type\": \"torch.Tensor\"}\r{\"type\": \"mindspore.Tensor\"}", "pytorch"},
		{"{\"type\": \"torch.Tensor\"}\r\n{\"type\": \"mindspore.Tensor\"}", "pytorch"},
		{"{\"type\": \"int\"}\n{\"type\": \"mindspore.Tensor\"}\n{\"type\": \"torch\"}", "mindspore"},
		// torch on the last line, without a line end
		{"{\n\"type\": \"torch\"", "pytorch"},
		// line ends break the whitespace
		{"\"type\":\n\"torch\"", ""},
		{"\"type\":\r\"mindspore\"", ""},
		{"\"type\":\r\n\"torch\"", ""},
		{"\"type\"\n:\"torch\"", ""},
		// whitespace of any length and of Python's \s
		{`"type":` + long + `"mindspore"`, "mindspore"},
		{`"type":` + long + `"torch"`, "pytorch"},
		{"\"type\":\t \t\"torch\"", "pytorch"},
		{"\"type\":\v\"torch\"", "pytorch"},
		{"\"type\":\f\"torch\"", "pytorch"},
		{"\"type\":\x1c\x1d\x1e\x1f\"torch\"", "pytorch"},
		{"\"type\":\u0085\u00a0\u1680\u2000\u2005\u200a\u2028\u2029\u202f\u205f\u3000\"mindspore\"", "mindspore"},
		{"\"type\":\u200b\"torch\"", ""},   // zero width space: not \s
		{"\"type\":\u00a1\"torch\"", ""},   // the byte after C2 decides
		{"\"type\":\u2030\"torch\"", ""},   // after E2 80 too
		{"\"type\":\xa0\"torch\"", ""},     // a lone continuation byte
		{"\"type\":\xc2\"torch\"", ""},     // a cut character
		{"\"type\":\xe2\x80\"torch\"", ""}, // a cut character
		{"\"type\":\xe3\x80\"type\":\"torch\"", "pytorch"},
		{"\"type\":\x00\"torch\"", ""},
		// partial matches that overlap a new one
		{`"type"type": "torch"`, "pytorch"},
		{`"type": "type": "torch"`, "pytorch"},
		{`"type":"type":"mindspore"`, "mindspore"},
		{`""type": "torch"`, "pytorch"},
		{`"type": ""torch"`, ""},
		{`"type": ""type": "torch"`, "pytorch"},
		{`"typ"type": "torch"`, "pytorch"},
		{`"type": "tor"type": "mindspore"`, "mindspore"},
		{`"type": "mind"type": "torch"`, "pytorch"},
		{`"type": "torch"type": "mindspore"`, "mindspore"},
		{`"type": "torchmindspore"`, "pytorch"},
		{"\"type\": \"torch\"\"type\": \"mindspore\"\n", "mindspore"},
		// msprobe's indent=1 layout and a compact one
		{"{\n \"data\": {\n  \"a\": {\n   \"type\": \"torch.Tensor\"\n  }\n }\n}\n", "pytorch"},
		{"{\r\n \"data\": {\"x\": {\"type\":\r\n\"torch.Tensor\"}}\r\n}", ""},
		{`{"task":"statistics","data":{"a":{"input_args":[{"type":"int","value":1},{"type":"mindspore.Tensor"}]}}}`, "mindspore"},
	}
	for _, tc := range tests {
		if ref := refDetectTypes([]byte(tc.text)); ref != tc.want {
			t.Errorf("reference on %.80q: %q, want %q", tc.text, ref, tc.want)
		}
		for _, n := range detectChunkSizes {
			got, err := detectChunks([]byte(tc.text), n)
			if got != tc.want || (err == nil) != (tc.want != "") || err != nil && !errors.Is(err, ErrNoFramework) {
				t.Errorf("chunks of %d, %.80q: %q, %v; want %q", n, tc.text, got, err, tc.want)
			}
		}
	}
}

// TestDetectTypesRandom holds detectTypes to the reference on lines made
// of the patterns' pieces.
func TestDetectTypesRandom(t *testing.T) {
	pieces := []string{`"`, `"type"`, `"type":`, `type`, `type":`, `:`, ` `, "\t", "\v", "\x1c", "\u00a0", "\u3000", "\u2028", "\xe2\x80", "\xc2",
		`"torch`, `"mindspore`, `torc`, `mindspor`, `t`, `y`, `m`, "\n", "\r", "\r\n", `x`, `{`, `,`}
	r := rand.New(rand.NewPCG(1, 2))
	trials := 20000
	if testing.Short() {
		trials = 2000
	}
	var b []byte
	for range trials {
		b = b[:0]
		for range r.IntN(24) {
			b = append(b, pieces[r.IntN(len(pieces))]...)
		}
		want := refDetectTypes(b)
		for _, n := range []int{1, 2, 7, 8, 9, 11, 4096} {
			if got, _ := detectChunks(b, n); got != want {
				t.Fatalf("chunks of %d, %q: %q, want %q", n, b, got, want)
			}
		}
	}
}

func FuzzDetectTypes(f *testing.F) {
	f.Add([]byte(`{"a": {"type": "torch.Tensor"}, "b": {"type": "mindspore.Tensor"}}`), uint8(2))
	f.Add([]byte("\"type\":\u3000\v\"torch\"\r\n\"type\": \"mindspore\""), uint8(1))
	f.Add([]byte(`"type"type": ""type":"mindspore`), uint8(7))
	f.Fuzz(func(t *testing.T, data []byte, chunk uint8) {
		want := refDetectTypes(data)
		got, err := detectChunks(data, int(chunk)%32+1)
		if got != want || (err == nil) != (want != "") {
			t.Fatalf("chunks of %d, %q: %q, %v; want %q", int(chunk)%32+1, data, got, err, want)
		}
	})
}

// TestDetectFrameworkOneLine: a dump written on one line, without a
// framework field, is decided in memory that does not grow with it.
func TestDetectFrameworkOneLine(t *testing.T) {
	size := 32 << 20
	if testing.Short() {
		size = 8 << 20
	}
	entry := `"Tensor.add.0.forward": {"input_args": [{"type": "int", "value": 1}], "output": [null]}, `
	for _, tc := range []struct{ last, want string }{
		{`{"type": "torch.Tensor"}`, "pytorch"},
		{`{"type": "mindspore.Tensor"}`, "mindspore"},
		{`null`, ""},
	} {
		var b bytes.Buffer
		b.WriteString(`{"task": "statistics", "level": "L1", "dump_data_dir": null, "data": {`)
		for b.Len() < size {
			b.WriteString(entry)
		}
		b.WriteString(`"Tensor.add.1.forward": {"input_args": [` + tc.last + `]}}}`)
		p := filepath.Join(t.TempDir(), "dump.json")
		if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		b = bytes.Buffer{}
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		got, err := DetectFramework(p)
		runtime.ReadMemStats(&after)
		if got != tc.want || (err == nil) != (tc.want != "") {
			t.Errorf("%s: %q, %v; want %q", tc.last, got, err, tc.want)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
			t.Errorf("%s: %d bytes allocated for a %d-byte line", tc.last, alloc, size)
		}
	}
}
