package compare

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

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
	if k := firstInvalidUTF8(b); k >= 0 {
		// encoding/json would read the byte as U+FFFD; Python refuses the file
		return "", "", "", &source.Error{File: path, Line: 1 + strings.Count(string(b[:k]), "\n"), Expected: "UTF-8 text",
			Found: fmt.Sprintf("byte 0x%02x, which is not UTF-8 (Python's json.load refuses the file)", b[k])}
	}
	var c compareJSON
	dec := json.NewDecoder(strings.NewReader(string(b)))
	if err := dec.Decode(&c); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line := 1 + strings.Count(string(b[:se.Offset]), "\n")
			return "", "", "", &source.Error{File: path, Line: line, Expected: "a JSON object with npu_path and bench_path", Found: fmt.Sprintf("invalid JSON (%v)", err)}
		}
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &te) && te.Field != "":
			line := 1 + strings.Count(string(b[:min(int(te.Offset), len(b))]), "\n")
			want := "a path (string)"
			if te.Field == "is_print_compare_log" {
				want = "true or false"
			}
			return "", "", "", &source.Error{File: path, Line: line, Expected: want + " for " + te.Field, Found: "a JSON " + te.Value}
		case errors.As(err, &te):
			return "", "", "", &source.Error{File: path, Line: 1, Expected: "a JSON object with npu_path and bench_path", Found: "a JSON " + te.Value}
		case errors.Is(err, io.EOF):
			return "", "", "", &source.Error{File: path, Line: 1, Expected: "a JSON object with npu_path and bench_path", Found: "an empty file"}
		}
		return "", "", "", &source.Error{File: path, Line: 1, Msg: "expected a JSON object with npu_path and bench_path", Err: err}
	}
	if rest := b[dec.InputOffset():]; len(strings.TrimLeft(string(rest), " \t\r\n")) > 0 {
		off := len(b) - len(strings.TrimLeft(string(rest), " \t\r\n"))
		return "", "", "", &source.Error{File: path, Line: 1 + strings.Count(string(b[:off]), "\n"), Expected: "end of file after the JSON object (Python's json.load refuses more)",
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

func firstInvalidUTF8(b []byte) int {
	for k := 0; k < len(b); {
		r, n := utf8.DecodeRune(b[k:])
		if r == utf8.RuneError && n == 1 {
			return k
		}
		k += n
	}
	return -1
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
