package dump

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzScan feeds arbitrary bytes to Scan: it must never panic, every
// error must be an *Error with a line inside the input, and input that
// Go's encoding/json accepts as an object with a "data" object of objects
// must not be refused for syntax.
func FuzzScan(f *testing.F) {
	f.Add([]byte(dumpWith(`"A.0.forward": {"input_args": [` + tensorA + `, null, [], {"type": "slice", "value": [1, null]}]}`)))
	f.Add([]byte(`{"data": {"X.parameters_grad": {"w": [{"type": "t", "Max": NaN, "Min": -Infinity}]}}}`))
	f.Add([]byte(`{"data": {"P.0.forward": {"input_args": [{"class_type": "torch.distributed.P2POp", "tensor": null, "op": "isend"}]}}}`))
	f.Add([]byte("{\"data\": {\"A.0.forward\": {\"x\": \"\\ud83d\\ude00\\u0041\"}}}"))
	f.Add([]byte(`{"data": {"a.debug": 1.5e308}}`))
	if src, err := os.ReadFile(filepath.Join(corpusDir(f), "golden/synth_multirank/npu/step0/rank0/dump.json")); err == nil {
		f.Add(src)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		lines := strings.Count(string(data), "\n") + 1
		for _, name := range []string{"dump.json", "debug.json"} {
			rows := 0
			_, err := Scan(strings.NewReader(string(data)), name, func(e *Entry) error {
				for _, it := range e.Items {
					if it.Entry != e.Name || it.State == "" || it.DataName == "" {
						t.Fatalf("bad item %+v", it)
					}
					rows++
				}
				return nil
			})
			if err != nil {
				var de *Error
				if !errors.As(err, &de) {
					t.Fatalf("%s: error without line: %v", name, err)
				}
				if de.Line < 1 || de.Line > lines {
					t.Fatalf("%s: line %d outside 1..%d: %v", name, de.Line, lines, err)
				}
				if strings.Contains(de.Msg, "expected") && name == "dump.json" && syntaxOK(data) && strings.Contains(de.Msg, "found end of file") {
					t.Fatalf("valid JSON reported truncated: %v", err)
				}
			}
		}
		// EntryNames-style skipping must agree with full parsing on syntax.
		lx := newLexer(strings.NewReader(string(data)), "x")
		errSkip := lx.skipValue("a value")
		lx2 := newLexer(strings.NewReader(string(data)), "x")
		p := parser{lx: lx2, t: &tree{}}
		_, errParse := p.value(0, "a value")
		if (errSkip == nil) != (errParse == nil) {
			t.Fatalf("skipValue err %v, parse err %v", errSkip, errParse)
		}
	})
}

// syntaxOK reports whether encoding/json accepts data (it has no NaN).
func syntaxOK(data []byte) bool {
	var v any
	return json.Unmarshal(data, &v) == nil
}
