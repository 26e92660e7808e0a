package msprobe

import (
	"fmt"
	"strings"
	"testing"
)

// scanCopiedInPlace scans data with Scan (rows copied out) and ScanReuse (rows
// in order handed out in place) and returns each one's rows, printed.
func scanCopiedInPlace(t testing.TB, data, name string) (copied, inPlace []string, errC, errR error) {
	_, errC = Scan(strings.NewReader(data), name, func(e *Entry) error {
		for _, it := range e.Items {
			copied = append(copied, fmt.Sprintf("%#v", it))
		}
		return nil
	})
	_, errR = ScanReuse(strings.NewReader(data), name, func(e *Entry) error {
		for _, it := range e.Items {
			inPlace = append(inPlace, fmt.Sprintf("%#v", it))
		}
		return nil
	})
	return
}

// TestScanReuseInPlace: the rows ScanReuse completes in place are those
// Scan copies out, for rows in and out of order, on the fast path and the
// tree path.
func TestScanReuseInPlace(t *testing.T) {
	str := `{"type": "str", "value": "abc"}`
	nan := `{"type": "torch.Tensor", "dtype": "torch.float32", "shape": [1], "Max": NaN, "Min": "x", "Mean": -Infinity, "Norm": true, "md5": "0a1b2c3d", "data_name": "A.0.forward.input.0.pt"}`
	cases := map[string]string{
		"in order":       `"A.0.forward": {"input_args": [` + tensorA + `, ` + str + `], "output": [` + nan + `]}`,
		"out of order":   `"A.0.forward": {"output": [` + tensorA + `], "parameters": {"w": ` + nan + `}, "input_args": [` + str + `]}`,
		"params grad":    `"A.0.parameters_grad": {"w": [` + tensorA + `, ` + nan + `]}`,
		"none and p2p":   `"P.0.forward": {"input_args": [null, {"class_type": "torch.distributed.P2POp", "tensor": ` + tensorA + `, "op": "isend", "peer": 1}]}`,
		"many entries":   `"A.0.forward": {"output": [` + tensorA + `], "input_args": [` + nan + `]}, "B.0.forward": {"input_args": [` + tensorA + `]}, "C.1.backward": {"output": [` + str + `], "input": [1, 2.5]}`,
		"empty and list": `"A.0.forward": {}, "B.0.forward": {"input_args": [[1, [2, 3]], {"a": ` + tensorA + `}]}`,
		"tree path":      `"A.0.forward": {"input_args": [` + tensorA + `], "input_args": [` + nan + `]}, "B.0.forward": {"output": [` + str + `], "input_args": [{"type": "slice", "value": [1, null]}]}`,
	}
	for label, data := range cases {
		for _, name := range []string{"dump.json", "debug.json"} {
			c, r, errC, errR := scanCopiedInPlace(t, dumpWith(data), name)
			if (errC == nil) != (errR == nil) {
				t.Fatalf("%s %s: Scan: %v, ScanReuse: %v", label, name, errC, errR)
			}
			if strings.Join(c, "\n") != strings.Join(r, "\n") {
				t.Errorf("%s %s: rows differ:\nScan:\n%s\nScanReuse:\n%s", label, name, strings.Join(c, "\n"), strings.Join(r, "\n"))
			}
			if errC == nil && len(c) == 0 && label != "empty and list" {
				t.Errorf("%s %s: no rows", label, name)
			}
		}
	}
}
