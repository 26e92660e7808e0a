package msprobe

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/layermap/layermap/printparse/testkit"
)

// skimLog renders what a skim gives fn (every field, Index checked
// against the count), its header and its error; stopAt > 0 makes fn fail
// at that entry.
func skimLog(path string, w skimWorkers, stopAt int) string {
	var b strings.Builder
	n := 0
	h, err := skimWith(path, nil, w, func(e *SkimEntry) error {
		if e.Index != n {
			fmt.Fprintf(&b, "index %d, want %d\n", e.Index, n)
		}
		n++
		fmt.Fprintf(&b, "%d %q off %d line %d odd %v end %d\n", e.Index, e.Name, e.Offset, e.Line, e.Odd, e.End)
		if n == stopAt {
			return errors.New("stop here")
		}
		return nil
	})
	fmt.Fprintf(&b, "header %+v\nerror %v\n", h, err)
	return b.String()
}

// aheadDump writes a dump.json of n entries laid out as json.dump(indent)
// lays it out (members of "data" on lines of their own); edit changes the
// text before it is written.
func aheadDump(t *testing.T, n int, indent string, edit func(string) string) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "{\n%s\"task\": \"statistics\",\n%s\"level\": \"mix\",\n%s\"framework\": \"pytorch\",\n%s\"data\": {", indent, indent, indent, indent)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		body := map[string]any{
			"input_args": []any{map[string]any{"type": "torch.Tensor", "dtype": "torch.float32", "shape": []int{2, i % 7},
				"Max": 1.5 + float64(i), "Min": -0.25, "Mean": 0.125, "Norm": 3.0, "requires_grad": i%2 == 0}},
			"input_kwargs": map[string]any{"dim": map[string]any{"type": "int", "value": i}},
			"output":       []any{map[string]any{"type": "torch.Tensor", "dtype": "torch.bfloat16", "shape": []int{i}, "Max": 2.0, "Min": 0.0, "Mean": 1.0, "Norm": 4.0}},
		}
		if i%97 == 5 {
			// odd: a data_name naming another entry
			body["output"] = []any{map[string]any{"type": "torch.Tensor", "dtype": "torch.float32", "shape": []int{}, "data_name": "X.1.forward.output.0.pt"}}
		}
		text, err := json.MarshalIndent(body, indent+indent, indent)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "\n%s%s\"Functional.op_%d.%d.forward\": %s", indent, indent, i%13, i, text)
	}
	fmt.Fprintf(&b, "\n%s}\n}", indent)
	s := b.String()
	if edit != nil {
		s = edit(s)
	}
	p := filepath.Join(t.TempDir(), "dump.json")
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSkimAhead: skimming ahead gives fn, the header and the error exactly
// what the sequential skim gives, with chunks cut everywhere (inside
// names, numbers, strings, between members); it takes chunks of an
// indented file, none of a compact one.
func TestSkimAhead(t *testing.T) {
	t.Parallel()
	type file struct {
		name   string
		path   string
		taken  int // 1: chunks must be taken; -1: none may be
		stopAt int
	}
	compact := func(s string) string {
		var b bytes.Buffer
		if err := json.Compact(&b, []byte(s)); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	files := []file{
		{name: "indent 1", path: aheadDump(t, 400, " ", nil), taken: 1},
		{name: "indent tab", path: aheadDump(t, 300, "\t", nil), taken: 1},
		{name: "indent 4", path: aheadDump(t, 300, "    ", nil), taken: 1},
		{name: "crlf", path: aheadDump(t, 300, " ", func(s string) string { return strings.ReplaceAll(s, "\n", "\r\n") }), taken: 1},
		{name: "fn fails", path: aheadDump(t, 400, " ", nil), taken: 1, stopAt: 333},
		{name: "compact", path: aheadDump(t, 300, " ", compact), taken: -1},
		// members' bodies indented as members are: a cut may fall on
		// their keys
		{name: "flat bodies", path: aheadDump(t, 300, " ", func(s string) string { return strings.ReplaceAll(s, "\n    ", "\n  ") })},
		// an object after "data" whose members look like members of "data"
		{name: "object after data", path: aheadDump(t, 300, " ", func(s string) string {
			return strings.TrimSuffix(s, "\n}") + ",\n \"extra\": {\n  \"a\": {\"b\": 1},\n  \"c\": [1, 2]\n }\n}"
		}), taken: 1},
		{name: "repeated key", path: aheadDump(t, 300, " ", func(s string) string {
			return strings.Replace(s, `"Functional.op_6.292.forward"`, `"Functional.op_5.5.forward"`, 1)
		}), taken: 1},
		{name: "malformed body", path: aheadDump(t, 300, " ", func(s string) string {
			return strings.Replace(s, `"value": 201`, `"value": 2x1`, 1)
		}), taken: 1},
		{name: "unclosed string", path: aheadDump(t, 300, " ", func(s string) string {
			return strings.Replace(s, `"Functional.op_4.199.forward"`, `"Functional.op_4.199.forward`, 1)
		}), taken: 1},
		{name: "truncated", path: aheadDump(t, 300, " ", func(s string) string { return s[:len(s)*3/4] }), taken: 1},
		{name: "nested too deep", path: aheadDump(t, 300, " ", func(s string) string {
			return strings.Replace(s, `"value": 150`, `"value": `+strings.Repeat("[", maxNesting+1), 1)
		}), taken: 1},
	}
	for _, f := range files {
		want := skimLog(f.path, skimWorkers{n: 1}, f.stopAt)
		if !strings.Contains(want, "Functional.op_") {
			t.Fatalf("%s: the sequential skim read nothing:\n%s", f.name, want)
		}
		for _, chunk := range []int64{97, 256, 1000, 4096, 20011} {
			taken := 0
			w := skimWorkers{n: 3, chunk: chunk, took: func(n int) { taken += n }}
			if got := skimLog(f.path, w, f.stopAt); got != want {
				t.Errorf("%s, chunks of %d: skimming ahead differs:\n%s", f.name, chunk, testkit.FirstDiff(want, got))
			}
			if f.taken > 0 && taken == 0 || f.taken < 0 && taken > 0 {
				t.Errorf("%s, chunks of %d: %d members taken from chunks", f.name, chunk, taken)
			}
		}
	}
}

// TestSkimAheadCorpus: on every dump of the testdata, skimming ahead in
// small chunks gives what the sequential skim gives.
func TestSkimAheadCorpus(t *testing.T) {
	t.Parallel()
	taken := 0
	for _, p := range flatDumps(t) {
		want := skimLog(p, skimWorkers{n: 1}, 0)
		for _, chunk := range []int64{211, 4093} {
			if got := skimLog(p, skimWorkers{n: 2, chunk: chunk, took: func(n int) { taken += n }}, 0); got != want {
				t.Errorf("%s, chunks of %d: skimming ahead differs:\n%s", p, chunk, testkit.FirstDiff(want, got))
			}
		}
	}
	if taken == 0 {
		t.Error("no chunk was taken on the corpus")
	}
}

// FuzzSkimAhead: on any input, skimming ahead in tiny chunks gives what
// the sequential skim gives.
func FuzzSkimAhead(f *testing.F) {
	f.Add([]byte("{\n \"data\": {\n  \"A.0.forward\": {\"output\": [1]},\n  \"B.0.forward\": {\"x\": \"y\"},\n  \"C.0.forward\": {}\n }\n}"), uint8(7))
	f.Add([]byte("{\n \"data\": {\n  \"A.0.forward\": {\n  \"output\": [1]},\n  \"A.0.forward\": {}\n }\n}"), uint8(3))
	f.Fuzz(func(t *testing.T, data []byte, chunk uint8) {
		p := filepath.Join(t.TempDir(), "dump.json")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		want := skimLog(p, skimWorkers{n: 1}, 0)
		if got := skimLog(p, skimWorkers{n: 2, chunk: int64(chunk%64) + 1}, 0); got != want {
			t.Errorf("skimming ahead differs:\n%s", testkit.FirstDiff(want, got))
		}
	})
}
