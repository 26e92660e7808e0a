package msprobe

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/layermap/layermap/printparse/testkit"
)

// skimRead reads a dump as a reader of entries out of order does: Skim,
// then every entry through an EntryReader. Entries are rendered as in
// the flattening tables, with their split and md5 flag.
func skimRead(path string) (out []string, odd []bool, err error) {
	type ref struct {
		off  int64
		line int
		odd  bool
	}
	var refs []ref
	if _, err := Skim(path, func(e *SkimEntry) error {
		refs = append(refs, ref{e.Offset, e.Line, e.Odd})
		return nil
	}); err != nil {
		return nil, nil, err
	}
	r, err := NewEntryReader(path)
	if err != nil {
		return nil, nil, err
	}
	defer r.Close()
	// Backwards, so that no entry is read after the one before it.
	got := make([][]string, len(refs))
	for i := len(refs) - 1; i >= 0; i-- {
		end := int64(-1)
		if i+1 < len(refs) {
			end = refs[i+1].off
		}
		if err := r.Read(i, refs[i].off, end, refs[i].line, func(e *Entry) error {
			got[i] = renderEntry(e)
			return nil
		}); err != nil {
			// Without the line, errors still name it.
			if err2 := r.Read(i, refs[i].off, end, 0, func(*Entry) error { return nil }); err2 == nil || err2.Error() != err.Error() {
				return nil, nil, fmt.Errorf("with line: %v; without: %v", err, err2)
			}
			return nil, nil, err
		}
	}
	for i, g := range got {
		out = append(out, g...)
		for range g {
			odd = append(odd, refs[i].odd)
		}
	}
	return out, odd, nil
}

func renderEntry(e *Entry) []string {
	var out []string
	for _, it := range e.Items {
		out = append(out, fmt.Sprintf("%s@%d %s|%s|%s md5:%v: %s line %d", e.Name, e.Line, e.OpNoNumber,
			e.CallDirection, e.Direction, e.HasMD5, row(it), it.Line))
	}
	if len(e.Items) == 0 {
		out = append(out, fmt.Sprintf("%s@%d (no rows)", e.Name, e.Line))
	}
	return out
}

func scanRender(path string) ([]string, error) {
	var out []string
	_, err := ScanFile(path, func(e *Entry) error {
		out = append(out, renderEntry(e)...)
		return nil
	})
	return out, err
}

// TestSkimMatchesScan: Skim and EntryReader give the entries Scan gives
// (call orders aside), and every entry Skim does not call odd has rows
// named its name plus a structural suffix.
func TestSkimMatchesScan(t *testing.T) {
	dir := t.TempDir()
	var files []string
	for _, d := range []string{"llamafactory", "mindspeed-mm"} {
		files = append(files, filepath.Join("..", "..", "testdata", "demo", "dumps", d, "dump.json"))
	}
	write := func(name, src string) string {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := map[string]string{
		"plain":        `"A.0.forward": {"input_args": [` + tensorA + `, null], "output": [` + tensorA + `]}`,
		"escapes":      `"A.0.forward": {"input_kwargs": {"k\"ey": {"type": "str", "value": "a\\\"b}]"}}}, "B.1.backward": {"input": [` + tensorA + `]}`,
		"data names":   `"A.0.forward": {"output": [{"type": "torch.Tensor", "dtype": "torch.float32", "shape": [], "data_name": "A.0.forward.output.0.pt"}]}`,
		"odd stem":     `"A.0.forward": {"output": [{"type": "torch.Tensor", "dtype": "torch.float32", "shape": [], "data_name": "X.1.forward.output.0.pt"}]}`,
		"no-ext stem":  `"A.0.forward": {"output": [{"type": "torch.Tensor", "dtype": "torch.float32", "shape": [], "data_name": "A.0.forward.output"}]}`,
		"number name":  `"A.0.forward": {"output": [{"type": "torch.Tensor", "dtype": "torch.float32", "shape": [], "data_name": 7}]}`,
		"name twice":   `"A.0.backward": {"input_kwargs": {"A": {"0": {"backward": {"type": "int", "value": 1}}}}}`,
		"pg and debug": `"M.fc.Linear.parameters_grad": {"weight": [` + tensorA + `]}, "M.fc.Linear.forward.0": {"parameters": {"w": ` + tensorA + `}}`,
		"skipped":      `"Tensor.weird": {"output": [` + tensorA + `]}, "A.0.forward": {}`,
		"empty data":   ``,
		"nested lists": `"A.0.forward": {"input_args": [[[1, 2], {"type": "slice", "value": [1, null, 2]}], {"a": {"b": [null]}}]}`,
	}
	for name, data := range cases {
		files = append(files, write(filepath.Join(strings.ReplaceAll(name, " ", "_"), "dump.json"), dumpWith(data)))
	}
	files = append(files, write("debug/debug.json", `{"task": "statistics", "level": "debug", "data": {"x": {"y": [`+tensorA+`]}, "x.y": {"z": null}}}`))
	for _, f := range files {
		want, err := scanRender(f)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		got, odd, err := skimRead(f)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s: skim+read\n%s\nscan\n%s", f, strings.Join(got, "\n"), strings.Join(want, "\n"))
			continue
		}
		for i, line := range got {
			if odd[i] || strings.Contains(line, "(no rows)") {
				continue
			}
			fields := strings.Fields(line)
			entry := fields[0][:strings.LastIndexByte(fields[0], '@')]
			rowName := fields[3]
			if !NormalRow(entry, rowName) {
				t.Errorf("%s: entry %s not odd but has row %s", f, entry, rowName)
			}
		}
	}
	// The odd cases are called odd.
	for _, name := range []string{"odd stem", "no-ext stem", "number name", "name twice"} {
		_, odd, err := skimRead(filepath.Join(dir, strings.ReplaceAll(name, " ", "_"), "dump.json"))
		if err != nil || len(odd) == 0 || !odd[0] {
			t.Errorf("%s: odd %v, %v", name, odd, err)
		}
	}
}

// TestSkimErrors: malformed dumps give Scan's error, from Skim or from the
// EntryReader.
func TestSkimErrors(t *testing.T) {
	dir := t.TempDir()
	for _, src := range []string{
		``,
		`[1]`,
		"{\"data\": {\"A.0.forward\": {\"output\": [{\"type\": \"t\", \"Max\": nan}]}}}",
		"{\"data\": {\"A.0.forward\": {\"output\": [1,]}}}",
		"{\"data\": {\"A.0.forward\" {}}}",
		"{\"data\": {\"A.0.forward\": {}\n\"B.0.forward\": {}}}",
		"{\"data\": {\"A.0.forward",
		`{"data": {"A.0.forward": {"x": "\q"}}}`,
		`{"data": {"A.0.forward": {"x": 01}}}`,
		`{"data": {"A.0.forward": {"x": 1.}}}`,
		"{\"data\": {}}\n{}",
		"{\"data\": {\n\"A.0.forward\": 3}}",
		"{\"data\": {\n\"=cmd|x.0.forward\": {}}}",
		"{\"data\": {\"A.0.forward\": {\"input_args\": [{\"type\": \"t\", \n\"shape\": \"2x3\"}]}}}",
		`{"data": {"A.0.forward": {"x": ` + strings.Repeat("[", 20000) + `}}}`,
		"{\"data\": {\"A.0.forward\": {\"output\": [1]]}}}",
		"{\"data\": {\"A.0.forward\": {\"output\": [1}}}",
		"{\"data\": {\"A.0.forward\": {\n\n\"output\": [1, tru]}}}",
	} {
		p := filepath.Join(dir, "dump.json")
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		_, want := scanRender(p)
		_, _, got := skimRead(p)
		if want == nil || got == nil || got.Error() != want.Error() {
			t.Errorf("%q:\nskim+read: %v\nscan:      %v", src, got, want)
		}
	}
}

func TestSkimGenerated(t *testing.T) {
	// dumpgen imports this package; a large generated dump is checked in
	// the compare benchmarks' pairs. Here: a dump with every item kind
	// repeated, read in file order through the kept chunks.
	var b bytes.Buffer
	b.WriteString(`{"task": "statistics", "level": "mix", "framework": "pytorch", "data": {`)
	for i := 0; i < 3000; i++ {
		if i > 0 {
			b.WriteString(",\n ")
		}
		fmt.Fprintf(&b, `"Functional.linear.%d.forward": {"input_args": [%s, {"type": "int", "value": %d}], "output": [%s]}`, i, tensorA, i, tensorA)
	}
	b.WriteString("}}")
	p := filepath.Join(t.TempDir(), "dump.json")
	os.WriteFile(p, b.Bytes(), 0o644)
	want, err := scanRender(p)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	var refs []SkimEntry
	if _, err := Skim(p, func(e *SkimEntry) error {
		c := *e
		c.Name = nil
		refs = append(refs, c)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	r, _ := NewEntryReader(p)
	defer r.Close()
	for i, e := range refs {
		end := int64(-1)
		if i+1 < len(refs) {
			end = refs[i+1].Offset
		}
		if err := r.Read(i, e.Offset, end, e.Line, func(e *Entry) error {
			got = append(got, renderEntry(e)...)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("in-order read differs from Scan")
	}
}

// TestEntryOffset: every reader gives an entry the offset Skim gives it
// (a repeated key's: its last occurrence's), and EntryReader the offset
// it read at.
func TestEntryOffset(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files := []string{
		filepath.Join("..", "..", "testdata", "demo", "dumps", "llamafactory", "dump.json"),
		filepath.Join("..", "..", "testdata", "demo", "dumps", "mindspeed-mm", "dump.json"),
	}
	for name, data := range map[string]string{
		"skipped":  `"Tensor.weird": {"output": [` + tensorA + `]}, "A.0.forward": {"output": [` + tensorA + `]}`,
		"repeated": `"A.0.forward": {"output": [` + tensorA + `]}, "B.0.forward": {}, "A.0.forward": {"input": [` + tensorA + `]}`,
	} {
		p := filepath.Join(dir, name, "dump.json")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(dumpWith(data)), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
	}
	for _, f := range files {
		skimmed := map[string]int64{}
		if _, err := SkimExact(f, func() { clear(skimmed) }, func(e *SkimEntry) error {
			skimmed[string(e.Name)] = e.Offset
			return nil
		}); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		check := func(how string, e *Entry) {
			if off, ok := skimmed[e.Name]; !ok || e.Offset != off {
				t.Errorf("%s: %s: %s at offset %d, skim says %d (%v)", f, how, e.Name, e.Offset, off, ok)
			}
		}
		var exact []Entry // the last reading's (a repeated key reads the file again)
		if _, err := ScanFileExact(f, func() { exact = exact[:0] }, func(e *Entry) error {
			exact = append(exact, *e)
			return nil
		}); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if len(exact) == 0 {
			t.Fatalf("%s: no entries", f)
		}
		for i := range exact {
			check("ScanFileExact", &exact[i])
		}
		if !strings.Contains(f, "repeated") {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := ScanSequential(bytes.NewReader(data), f, func(e *Entry) error {
				check("ScanSequential", e)
				return nil
			}); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			r, err := NewEntryReader(f)
			if err != nil {
				t.Fatal(err)
			}
			for name, off := range skimmed {
				if err := r.Read(0, off, -1, 0, func(e *Entry) error {
					if e.Offset != off || e.Name != name {
						t.Errorf("%s: EntryReader at %d: %s at offset %d", f, off, e.Name, e.Offset)
					}
					return nil
				}); err != nil {
					t.Fatalf("%s: %v", f, err)
				}
			}
			r.Close()
		}
	}
}

// TestEntryReaderClosed: Close frees the kept chunks (outside the
// heap); a Read after it fails rather than reading freed memory.
func TestEntryReaderClosed(t *testing.T) {
	t.Parallel()
	body := `{"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2], "Max": 1.0, "Min": 0.0, "Mean": 0.5, "Norm": 1.0, "requires_grad": false}`
	src := `{"task": "statistics", "level": "L1", "framework": "pytorch", "dump_data_dir": null, "data": {` +
		`"Functional.relu.0.forward": {"input_args": [` + body + `], "output": [` + body + `]}, ` +
		`"Functional.relu.1.forward": {"input_args": [` + body + `], "output": [` + body + `]}}}`
	p := testkit.WriteFile(t, t.TempDir(), "dump.json", src)
	offs, err := entryOffsets(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(offs) != 2 {
		t.Fatalf("skim found %d entries, want 2", len(offs))
	}
	r, err := NewEntryReader(p)
	if err != nil {
		t.Fatal(err)
	}
	read := func() error {
		return r.Read(0, offs[0], offs[1], 0, func(e *Entry) error {
			if e.Name != "Functional.relu.0.forward" || len(e.Items) != 2 {
				t.Errorf("read %s with %d rows", e.Name, len(e.Items))
			}
			return nil
		})
	}
	for range 2 { // the second from the chunk the first read
		if err := read(); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := read(); err == nil {
		t.Fatal("Read after Close: no error")
	}
}
