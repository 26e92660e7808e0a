package compare

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
	if c.NPUPath == nil || c.BenchPath == nil {
		return "", "", "", &source.Error{File: path, Line: 1, Expected: "keys npu_path and bench_path", Found: missingKeys(c)}
	}
	if c.StackPath != nil {
		stack = *c.StackPath
	}
	return *c.NPUPath, *c.BenchPath, stack, nil
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
