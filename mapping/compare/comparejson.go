package compare

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/layermap/layermap/printparse/source"
)

// compareJSON is msprobe's legacy compare.json (-i).
type compareJSON struct {
	NPUPath           *string `json:"npu_path"`
	BenchPath         *string `json:"bench_path"`
	StackPath         *string `json:"stack_path"`
	IsPrintCompareLog *bool   `json:"is_print_compare_log"`
}

// ReadCompareJSON reads msprobe's legacy compare.json (-i): the NPU and
// bench dump paths and the optional stack.json path; is_print_compare_log
// must be a boolean when present. Errors are *source.Error at the line.
func ReadCompareJSON(path string) (npu, bench, stack string, err error) {
	b, err := source.ReadFile(path, source.MaxSmallJSON)
	if err != nil {
		return "", "", "", err
	}
	if err := source.CheckUTF8(path, b); err != nil {
		return "", "", "", err
	}
	var c compareJSON
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&c); err != nil {
		if te := (*json.UnmarshalTypeError)(nil); errors.As(err, &te) && te.Field != "" {
			want := "a path (string)"
			if te.Field == "is_print_compare_log" {
				want = "true or false"
			}
			return "", "", "", &source.Error{File: path, Line: source.Line(b, te.Offset), Expected: want + " for " + te.Field, Found: "a JSON " + te.Value}
		}
		return "", "", "", source.JSONError(path, b, "a JSON object with npu_path and bench_path", err)
	}
	if rest := bytes.TrimLeft(b[dec.InputOffset():], " \t\r\n"); len(rest) > 0 {
		off := len(b) - len(rest)
		return "", "", "", &source.Error{File: path, Line: source.Line(b, int64(off)), Expected: "end of file after the JSON object (Python's json.load refuses more)",
			Found: fmt.Sprintf("%q", clipBytes(b[off:], 20))}
	}
	// encoding/json matches keys case-insensitively; Python's dict lookup
	// does not: a key only in another case is no key
	var keys map[string]json.RawMessage
	if json.Unmarshal(b, &keys) == nil {
		for name, f := range map[string]**string{"npu_path": &c.NPUPath, "bench_path": &c.BenchPath, "stack_path": &c.StackPath} {
			if _, ok := keys[name]; !ok {
				*f = nil
			}
		}
	}
	if c.NPUPath == nil || c.BenchPath == nil {
		return "", "", "", &source.Error{File: path, Line: 1, Expected: "keys npu_path and bench_path", Found: missingKeys(c)}
	}
	if c.StackPath != nil {
		stack = *c.StackPath
	}
	return *c.NPUPath, *c.BenchPath, stack, nil
}

func clipBytes(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

func missingKeys(c compareJSON) string {
	var m []string
	if c.NPUPath == nil {
		m = append(m, "no npu_path")
	}
	if c.BenchPath == nil {
		m = append(m, "no bench_path")
	}
	return strings.Join(m, " and ")
}
