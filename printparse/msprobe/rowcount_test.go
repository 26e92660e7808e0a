package msprobe

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestRowCount checks the counting scan (ScanFileRowCount) against the
// names mode it stands for: the rows ScanFileRowNames would give, whether
// one is a P2POp, the header's md5 and the same error, with the fast path
// on and off, pipelined or not, as a dump.json and as a debug.json.
func TestRowCount(t *testing.T) {
	t.Parallel()
	var cases []string
	for _, path := range flatDumps(t) {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, string(data))
	}
	p2p := `{"input_args": [[{"class_type": "torch.distributed.P2POp", "tensor": ` + tensorA + `, "op": "isend", "peer": 1, "tag": 0}, {"class_type": "torch.distributed.P2POp", "tensor": null, "op": "irecv"}]], "output": [` + tensorA + `]}`
	bodies := append([]string{
		p2p,
		`{"input_args": [{"type": "torch.Tensor", "dtype": "=x", "shape": [1]}]}`,
		`{"output": [{"type": "torch.Tensor", "dtype": "md5", "shape": [1], "Max": 1}]}`,
		`{"output": [{"type": "torch.Tensor", "dtype": "torch.float32", "shape": [1], "Max": "x"}]}`,
		`{"output": [1, }`,
		`[]`,
	}, flatSeeds...)
	for _, name := range []string{"Distributed.batch_isend_irecv.0.forward", "A.parameters_grad", "x.debug", "Module.a.b.forward.0"} {
		for _, body := range bodies {
			cases = append(cases, dumpWith(strconv.Quote(name)+": "+body+`, "Functional.relu.0.forward": {"output": [`+tensorA+`]}`))
		}
	}
	for i, data := range cases {
		for _, flat := range []bool{true, false} {
			for _, pipelined := range []bool{false, true} {
				for _, file := range []string{"dump.json", DebugJSONName} {
					m := scanMode{pipelined: pipelined, reuse: true, names: true, noFlat: !flat}
					if got, want := countByCount(data, file, m), countByNames(data, file, m); got != want {
						t.Errorf("case %d as %s (fast path %v, pipelined %v): counted %s, want %s\n%.300s", i, file, flat, pipelined, got, want, data)
					}
				}
			}
		}
	}
	// The file's count, on a file with a repeated key (read twice) and
	// P2POp rows.
	path := filepath.Join(t.TempDir(), "dump.json")
	src := dumpWith(`"A.0.forward": {"output": [` + tensorA + `]}, "B.0.forward": ` + p2p + `, "A.0.forward": {"output": [null, ` + tensorA + `]}`)
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if c, err := ScanFileRowCount(path); c != (RowCount{Rows: 5, P2P: true}) || err != nil {
		t.Errorf("ScanFileRowCount: %+v, %v; want 5 rows, P2P", c, err)
	}
	// md5 keys, in an entry msprobe skips too (msprobe's md5_find sees them)
	src = dumpWith(`"A.0.forward": {"output": [` + tensorA + `]}, "x.debug": {"output": [` + tensorMD5 + `]}`)
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if c, err := ScanFileRowCount(path); c != (RowCount{Rows: 1, MD5: true}) || err != nil {
		t.Errorf("ScanFileRowCount: %+v, %v; want 1 row, MD5", c, err)
	}
}

// countByCount is what the counting scan gives of data read as file
// (countByNames' form).
func countByCount(data, file string, m scanMode) string {
	var c rowCount
	m.count, m.counted = true, &c
	h, err := scan(strings.NewReader(data), file, nil, nil, m)
	if err != nil {
		c, h = rowCount{}, Header{}
	}
	return fmt.Sprintf("%d rows, p2p %v, md5 %v, %v", c.rows, c.p2p, h.MD5, err)
}

// countByNames is what the names mode gives of data read as file: its
// rows, whether one is a P2POp, the header's md5, and its error.
func countByNames(data, file string, m scanMode) string {
	rows, p2p := 0, false
	h, err := scan(strings.NewReader(data), file, nil, func(e *Entry) error {
		for _, it := range e.Items {
			p2p = p2p || it.P2P
		}
		rows += len(e.Items)
		return nil
	}, m)
	if err != nil {
		rows, p2p, h = 0, false, Header{} // a count that fails says nothing else
	}
	return fmt.Sprintf("%d rows, p2p %v, md5 %v, %v", rows, p2p, h.MD5, err)
}
