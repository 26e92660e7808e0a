package msprobe

import (
	"bytes"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/layermap/layermap/printparse/testkit"
)

// flatDumps lists the dump files the differential tests read: every
// dump*.json of the repository's testdata, and those under
// LAYERMAP_BENCH_DIR when it is set (the benchmark pairs).
func flatDumps(t *testing.T) []string {
	var paths []string
	roots := []string{testkit.Testdata(t)}
	if d := os.Getenv("LAYERMAP_BENCH_DIR"); d != "" {
		roots = append(roots, d)
	}
	for _, root := range roots {
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasPrefix(d.Name(), "dump") && strings.HasSuffix(d.Name(), ".json") {
				paths = append(paths, p)
			}
			return nil
		})
	}
	if len(paths) < 20 {
		t.Fatalf("found %d dumps", len(paths))
	}
	return paths
}

// renderScan renders what Scan (pipelined or not) gives for data, the error
// included.
func renderScan(data []byte, name string, pipelined, flat bool) string {
	var b strings.Builder
	h, err := scan(strings.NewReader(string(data)), name, nil, func(e *Entry) error {
		fmt.Fprintf(&b, "%+v\n", *e)
		return nil
	}, scanMode{pipelined: pipelined, noFlat: !flat})
	fmt.Fprintf(&b, "%+v %v\n", h, err)
	return b.String()
}

// TestFlatMatchesTree checks the fast path against the tree path on every
// dump: whole files through Scan, and each entry through EntryReader.
func TestFlatMatchesTree(t *testing.T) {
	t.Parallel()
	var entries, taken int
	for _, path := range flatDumps(t) {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, pipelined := range []bool{false, true} {
			var fast, slow string
			fast = renderScan(data, path, pipelined, true)
			slow = renderScan(data, path, pipelined, false)
			if fast != slow {
				t.Errorf("%s (pipelined %v): fast path differs:\n%s", path, pipelined, firstDiff(fast, slow))
			}
		}
		rf, err := NewEntryReader(path)
		if err != nil {
			t.Fatal(err)
		}
		rs, err := NewEntryReader(path)
		if err != nil {
			t.Fatal(err)
		}
		rs.s.noFlat = true
		spans, err := skimSpans(path)
		if err != nil {
			rf.Close()
			rs.Close()
			continue // not a dump Skim reads: Scan compared it above
		}
		for i, sp := range spans {
			read := func(r *EntryReader) string {
				var b strings.Builder
				err := r.Read(i, sp.off, sp.end, sp.line, func(e *Entry) error {
					fmt.Fprintf(&b, "%+v\n", *e)
					return nil
				})
				fmt.Fprintf(&b, "%v\n", err)
				return b.String()
			}
			var fast, slow string
			fast, slow = read(rf), read(rs)
			if fast != slow {
				t.Errorf("%s entry %d: fast path differs:\n%s", path, i, firstDiff(fast, slow))
			}
		}
		entries += len(spans)
		taken += rf.s.flat.taken
		rf.Close()
		rs.Close()
	}
	t.Logf("fast path took %d of %d entries", taken, entries)
	if taken < entries/2 {
		t.Errorf("fast path took only %d of %d entries", taken, entries)
	}
}

// entrySpan is where Skim finds an entry, as EntryReader.Read takes it.
type entrySpan struct {
	off, end int64 // end: the next entry's offset, -1 for the last
	line     int
}

// skimSpans skims the dump at path for its entries' spans.
func skimSpans(path string) ([]entrySpan, error) {
	var spans []entrySpan
	_, err := Skim(path, func(e *SkimEntry) error {
		if n := len(spans); n > 0 {
			spans[n-1].end = e.Offset
		}
		spans = append(spans, entrySpan{off: e.Offset, end: -1, line: e.Line})
		return nil
	})
	return spans, err
}

// renderRows renders what scan gives for data in mode m, rows with what
// ScanFileRowNames keeps of them (all of the row in names mode, so that a
// field it should leave zero shows), the error included.
func renderRows(data []byte, name string, m scanMode) string {
	var b strings.Builder
	h, err := scan(strings.NewReader(string(data)), name, nil, func(e *Entry) error {
		fmt.Fprintf(&b, "%s %d %d %d %s|%s|%s %v\n", e.Name, e.Index, e.Line, e.Offset, e.OpNoNumber, e.CallDirection, e.Direction, e.HasMD5)
		for _, it := range e.Items {
			if !m.names {
				it = Item{Name: it.Name, Entry: it.Entry, State: it.State, DataName: it.DataName, Line: it.Line, Op: it.Op, Peer: it.Peer, P2P: it.P2P}
			}
			fmt.Fprintf(&b, "  %+v\n", it)
		}
		return nil
	}, m)
	fmt.Fprintf(&b, "%+v %v\n", h, err)
	return b.String()
}

// rowNamesDiffer reports how the names mode of scan differs from the full
// one on data, "" when it does not, with the fast path on and off.
func rowNamesDiffer(data []byte, name string) string {
	for _, flat := range []bool{true, false} {
		for _, pipelined := range []bool{false, true} {
			var full, names string
			full = renderRows(data, name, scanMode{pipelined: pipelined, reuse: true, noFlat: !flat})
			names = renderRows(data, name, scanMode{pipelined: pipelined, reuse: true, names: true, noFlat: !flat})
			if full != names {
				return fmt.Sprintf("fast path %v, pipelined %v:\n%s", flat, pipelined, firstDiff(names, full))
			}
		}
	}
	return ""
}

// TestRowNames checks ScanFileRowNames' mode against the full scan: the
// same entries, rows, header and errors, each row with its names only.
func TestRowNames(t *testing.T) {
	t.Parallel()
	for _, path := range flatDumps(t) {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{filepath.Base(path), DebugJSONName} {
			if d := rowNamesDiffer(data, name); d != "" {
				t.Errorf("%s as %s: %s", path, name, d)
			}
		}
	}
	// Values the fast path leaves to the tree (a dtype msprobe refuses,
	// or one the fast path does not keep) besides the seeds.
	bodies := append([]string{
		`{"input_args": [{"type": "torch.Tensor", "dtype": "=x", "shape": [1]}]}`,
		`{"output": [{"type": "torch.Tensor", "dtype": "md5", "shape": [1], "Max": 1}]}`,
	}, flatSeeds...)
	for _, name := range []string{"Functional.linear.0.forward", "A.parameters_grad", "x.debug"} {
		for _, body := range bodies {
			if d := rowNamesDiffer([]byte(dumpWith(strconv.Quote(name)+": "+body)), "dump.json"); d != "" {
				t.Errorf("%s: %s: %s", name, body, d)
			}
		}
	}
	// ScanFileRowNames itself, on a file with a repeated key.
	path := filepath.Join(t.TempDir(), "dump.json")
	src := dumpWith(`"A.0.forward": {"output": [` + tensorA + `]}, "A.0.forward": {"output": [null, ` + tensorA + `]}`)
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	var got []string
	_, repeats, err := ScanFileRowNames(path, func() { got = nil }, func(e *Entry) error {
		for _, it := range e.Items {
			got = append(got, fmt.Sprintf("%+v", it))
		}
		return nil
	})
	want := []string{
		fmt.Sprintf("%+v", Item{Name: "A.0.forward.output.0", Entry: "A.0.forward", State: StateOutput, DataName: "-1", Line: 1}),
		fmt.Sprintf("%+v", Item{Name: "A.0.forward.output.1", Entry: "A.0.forward", State: StateOutput, DataName: "-1", Line: 1}),
	}
	if err != nil || !repeats || strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("ScanFileRowNames: repeats %v, err %v, rows\n%s\nwant\n%s", repeats, err, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for k := range min(len(al), len(bl)) {
		if al[k] != bl[k] {
			return "fast: " + al[k] + "\ntree: " + bl[k]
		}
	}
	return fmt.Sprintf("fast %d lines, tree %d lines", len(al), len(bl))
}

// md5 mode (summary_mode md5): an md5 in every tensor item, which
// md5_find sees in an io field's item or list element, and in a whole
// body's parameter or its list's element, not deeper.
const (
	tensorMD5 = `{"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2], "Max": 1.5, "Min": -1, "Mean": 0.25, "Norm": 2.0, "requires_grad": true, "md5": "58be2ff7"}`
	ioMD5     = `{"input_args": [` + tensorMD5 + `, [` + tensorMD5 + `], ` + tensorMD5 + `], "input_kwargs": {"x": ` + tensorMD5 + `}, "output": ` + tensorMD5 + `, "parameters": {"w": ` + tensorMD5 + `}}`
	wholeMD5  = `{"weight": ` + tensorMD5 + `, "bias": [[` + tensorMD5 + `], ` + tensorMD5 + `], "x": {"y": ` + tensorMD5 + `}}`
)

// NaN and the infinities, as Python's json writes them: statistics of
// a run gone wrong, values, bare list members, body members.
const (
	nanStats  = `{"output": [{"type": "torch.Tensor", "dtype": "torch.float32", "shape": [4], "Max": NaN, "Min": -Infinity, "Mean": Infinity, "Norm": NaN, "requires_grad": false}]}`
	nanValues = `{"input_args": [{"type": "float", "value": NaN}, {"type": "float", "value": -Infinity}, NaN, [Infinity, -Infinity]], "input_kwargs": {"eps": {"type": "float", "value": Infinity}}, "output": null, "x": NaN, "y": -Infinity}`
)

// ranks and process groups (torch.distributed calls): the row's
// statistics and md5 are the str of the rank or of group_ranks.
const ranksPG = `{"input_kwargs": {"src": {"type": "int", "value": 0}, "dst": {"type": "int", "value": 3, "md5": "abc"}, "group_src": {"type": "int"}, "group_dst": {"type": "str", "value": "", "md5": "abc"}, "group": {"type": "torch.ProcessGroup", "group_ranks": [0, 1], "group_id": "1b2c3d4e"}}, "output": [{"type": "torch.ProcessGroup"}, {"type": "torch.ProcessGroup", "group_ranks": []}, {"type": "torch.ProcessGroup", "group_ranks": [0, 1], "md5": "x"}, {"type": "t", "dtype": "d", "group_ranks": [0, 1]}]}`

// indexing and shapes (Tensor.__getitem__, view, reshape): slices,
// ellipsis, torch.Size, their values lists of ints and nulls or none.
const (
	sliceSize = `{"input_args": [` + tensorA + `, [{"type": "slice", "value": [0, 2, null]}, {"type": "ellipsis", "value": "..."}, null, {"type": "slice", "value": [null, -1, null]}, {"type": "slice", "value": []}]], "input_kwargs": {"size": {"type": "torch.Size", "value": [3, 4]}, "s": {"type": "torch.Size", "value": []}, "e": {"type": "ellipsis"}, "t": {"type": "torch.Size"}, "u": {"type": "slice"}, "src": {"type": "torch.Size", "value": [1]}}, "output": [` + tensorA + `]}`
	sizeMD5   = `{"output": [{"type": "torch.Size", "value": [-0, 1], "md5": "ab"}, {"type": "slice", "value": [1, 2, 3], "Max": 1, "Min": "x", "Mean": true, "requires_grad": false}, {"type": "ellipsis", "value": "...", "md5": ""}]}`
)

// flatSeeds are entry bodies at the edges of the fast path's grammar.
var flatSeeds = []string{
	`{"input_args": [` + tensorA + `, null, 3, "s", [], {}], "input_kwargs": {"dim": {"type": "int", "value": -1}, "k": {"type": "bool", "value": true}}, "output": [` + tensorA + `]}`,
	`{"input_args": [{"type": "torch.Tensor", "dtype": "torch.bool", "shape": [], "Max": true, "Min": false, "Mean": null, "Norm": null, "requires_grad": false}], "output": null, "parameters": {"weight": ` + tensorA + `}, "is_recompute": false}`,
	`{"output": [{"type": "float", "value": 1e400}, {"type": "float", "value": -0.0}, {"type": "int", "value": -0}, {"type": "str", "value": "abc"}, {"type": "x"}, {"type": "x", "value": null}]}`,
	`{"input_args": [{"type": "torch.Tensor", "dtype": "", "shape": [1], "value": 2.5}, {"type": "torch.Size", "value": [2, 3]}, {"type": "slice", "value": [1, null, 2]}]}`,
	`{"input_kwargs": {"src": {"type": "int", "value": 1}, "group": {"type": "torch.ProcessGroup", "group_ranks": [0, 1]}}}`,
	`{"input_args": [{"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2], "md5": "abc"}]}`,
	ioMD5,
	wholeMD5,
	`{"input_kwargs": {"x": ` + tensorMD5 + `}, "input_args": [[` + tensorMD5 + `], {"a": ` + tensorMD5 + `}], "parameters": {"w": ` + tensorMD5 + `}}`,
	`{"output": [{"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2], "md5": ""}, {"type": "int", "value": 3, "md5": "0a0b"}, {"type": "int", "value": 3, "md5": ""}]}`,
	`{"output": [{"type": "t", "dtype": "d", "md5": null}], "input_args": [{"type": "t", "dtype": "d", "md5": 5}]}`,
	`{"output": [{"type": "t", "dtype": "d", "md5": "a", "md5": "b"}, {"type": "t", "dtype": "d", "md5": "xmd5"}]}`,
	`{"output": {"a": {"type": "t", "dtype": "d", "md5": true}}, "md5": "abc"}`,
	`{"input_args": [{"dtype": "torch.float32", "type": "torch.Tensor", "shape": [2]}]}`,
	`{"input_args": [{"type": "t", "dtype": "d", "shape": 2}]}`,
	`{"input_args": [{"type": "t", "dtype": "d", "requires_grad": null}]}`,
	`{"input_args": [{"type": "t", "dtype": "d", "Max": 1, "Max": 2}]}`,
	`{"input_args": [{"type": "t", "data_name": "x.0.forward.input.0.pt", "dtype": "d", "extra": "+x"}]}`,
	`{"input_args": [{"type": "t", "data_name": "-1"}], "parameters": {"w": {"type": "t", "data_name": "-1"}}}`,
	`{"output": [], "input_args": []}`,
	`{"input": [1], "input_args": [2]}`,
	`{"input_args": [{"class_type": "torch.distributed.P2POp", "tensor": null, "op": "isend"}]}`,
	`{"input_args": [{"a": {"b": [null, {"type": "t", "dtype": "d", "shape": [0, 10], "Norm": 1.5e-7}]}}]}`,
	`{"input_args": [{"a": 1, "a": null}]}`,
	`{"input_args": [{"a": {"type": 1}}]}`,
	`{"input_args": "md5", "output": ["md5"]}`,
	`{"input_args": [{"type": "t", "dtype": "d", "Max": NaN, "Min": -Infinity}]}`,
	nanStats,
	indentSeed,
	nanValues,
	ranksPG,
	sliceSize,
	sizeMD5,
	`{"input_args": [{"type": "torch.Size", "value": 3}, {"type": "slice", "value": [1.5]}, {"type": "slice", "value": [[1, 2]]}]}`,
	`{"output": [{"type": "ellipsis", "value": [1]}]}`,
	`{"output": [{"type": "int", "value": [1]}]}`,
	`{"output": [{"type": "t", "dtype": "d", "value": [1, 2]}]}`,
	`{"input_args": [{"type": "slice", "value": [1, nul]}, {"type": "torch.Size", "value": [1 2]}, {"type": "slice", "value": [1,]}]}`,
	`{"input_args": [{"type": "torch.ProcessGroup", "group_ranks": null}, {"type": "torch.ProcessGroup", "group_ranks": [0, -1]}, {"type": "torch.ProcessGroup", "group_ranks": [1.5]}, {"type": "torch.ProcessGroup", "group_ranks": "x"}]}`,
	`{"input_kwargs": {"src": {"type": "torch.ProcessGroup", "group_ranks": [2]}, "dst": {"type": "int", "value": [1]}, "group": {"type": "torch.ProcessGroup", "group_ranks": [1, 2], "group_ranks": [3]}}}`,
	`{"input_args": [{"type": "t", "dtype": "d", "Max": -NaN}, {"type": "t", "dtype": "d", "Min": -Inf}]}`,
	`{"input_args": [{"type": "t", "dtype": "d", "Max": NaNa, "Min": Infinit, "Mean": -Infinityx}]}`,
	`{"input_args": [{"type": "t", "dtype": "d", "Max": -I}, {"type": "t", "dtype": "d", "Min": -x}, {"type": "float", "value": -2.5}, [-1, -Infinity, -0.0]]}`,
	`{"input_args": [{"type": "t", "dtype": NaN}, {"type": "t", "dtype": "d", "requires_grad": Infinity}]}`,
	`{"input_args": [{"type": "t\u0041", "dtype": "d"}]}`,
	`{"input_args": [{"type": "t", "dtype": "=d"}]}`,
	`{"input_args": [{"type": "t", "dtype": "d", "shape": [1]}, {"type": "t", "dtype": "a;-b"}, {"type": "t", "dtype": "d"}]}`,
	`{"output": [{"type": "t", "dtype": "torch.md5"}, {"type": "t", "dtype": "torch.md5"}]}`,
	`{"output": [{"type": "t", "dtype": ""}, {"type": "t", "dtype": null}, {"type": "t", "dtype": 1}]}`,
	"{\"input_args\": [{\"type\": \"t\",\n \"dtype\": \"d\"\n}\n, null]\n}",
	"{\"input_args\": [{\"type\": \"t\", \"dtype\": \"d\", \"shape\": [\n        2,\n\t 30\r\n       ]}, {\"type\": \"t\", \"dtype\": \"d\", \"shape\": [ ]}, {\"type\": \"t\", \"dtype\": \"d\", \"shape\": [\n]}]}",
	`{"input_args": [{"type": "t", "dtype": "d", "shape": [0, 01]}, {"type": "t", "dtype": "d", "shape": [1e2]}, {"type": "t", "dtype": "d", "shape": [2.0]}]}`,
	`{"input_args": [{"type": "t", "dtype": "d", "shape": [-0]}, {"type": "t", "dtype": "d", "shape": [1,]}, {"type": "t", "dtype": "d", "shape": [,1]}, {"type": "t", "dtype": "d", "shape": [1` + "\x01" + `]}]}`,
	`{"input_args": [{"type": "t", "dtype": "d", "shape": [1 2]}, {"type": "t", "dtype": "d", "shape": [12345678901234567890123]}, {"type": "t", "dtype": "d", "shape": [0]}]}`,
	`{"input_args": [{"type": "t", "dtype": "d", "shape": [01]}]}`,
	`{"input_args": [{"type": "t", "dtype": "d", "Max": 1.}]}`,
	`{"input_args": [{"type": "t", "dtype": "d", "Max": 12345678901234567890123}]}`,
	`{"input_args": [{"type": "t", "dtype": "d", "shape": [1.5]}, {"type": "t", "dtype": "d", "shape": [-1]}]}`,
	`{"input_args": [{"type": "t", "dtype": "d", "shape": [2e3]}, {"type": "t", "dtype": "d", "Min": -, "Max": 1}]}`,
	`{"input_args": [{"type": "t", "dtype": "d", "Mean": 1e, "Norm": 2}, {"type": "t", "value": 1e+}]}`,
	`{"input_args": [{"type": "t", "dtype": "d", "Mean": -0.5E-3, "Norm": 0e0, "value": 1.25}]}`,
	`[]`,
	`{}`,
	`null`,
	`{"weight": [` + tensorA + `, null, [` + tensorA + `]], "bias": {"type": "t", "dtype": "d", "shape": [3]}, "x.parameters_grad": [null]}`,
	`{"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2], "output": 1}`,
	`{"output": [` + tensorA + `]}`,
	`{"w": {"output": 1, "input_args": [null]}}`,
}

// indentSeed is a body laid out as json.dump(indent=1) writes it, with
// keys after a newline and eight or more spaces, a tab or a carriage
// return, or without the space after the colon or with one before it,
// and keys other than the one expected next.
const indentSeed = "{\n \"input_args\": [\n  {\n   \"type\": \"torch.Tensor\",\n   \"dtype\": \"torch.float32\",\n" +
	"   \"shape\": [\n    2\n   ],\n   \"Max\":1.5,\n   \"Min\" : -1,\n\t\"Mean\": 0.25,\n\r\n   \"Norm\":  2.0,\n" +
	"           \"requires_grad\": true\n  },\n  {\n                \"type\": \"int\",\n                 \"value\": 3\n  },\n" +
	"  {\n   \"type\": \"torch.Tensor\",\n   \"Max\": 1,\n   \"dtype\": \"torch.float32\",\n   \"requires_grad\":\n false\n  }\n ],\n" +
	" \"input_kwargs\": {},\n \"output\": [\n  null\n ]\n}"

// FuzzFlat compares the fast path with the tree path on an entry body
// under a name: the same entries and rows, or the same error.
func FuzzFlat(f *testing.F) {
	names := []string{"Functional.linear.0.forward", "Module.a.B.backward.1", "A.parameters_grad", "x.debug", "Tensor.add.0.forward"}
	for i, s := range flatSeeds {
		f.Add(names[i%len(names)], s)
	}
	if data, err := os.ReadFile(filepath.Join(testkit.Corpus(f, "msprobe"), "golden/synth_statistics/npu/dump.json")); err == nil {
		f.Add("Functional.linear.0.forward", string(data))
	}
	f.Fuzz(func(t *testing.T, name, body string) {
		data := []byte(dumpWith(strconv.Quote(name) + ": " + body))
		for _, pipelined := range []bool{false, true} {
			var fast, slow string
			fast = renderScan(data, "dump.json", pipelined, true)
			slow = renderScan(data, "dump.json", pipelined, false)
			if fast != slow {
				t.Fatalf("fast path differs:\n%s", firstDiff(fast, slow))
			}
		}
		if d := rowNamesDiffer(data, "dump.json"); d != "" {
			t.Fatalf("names mode differs: %s", d)
		}
		if d, _ := noStatsDiffer(data, "dump.json"); d != "" {
			t.Fatalf("NoStats differs: %s", d)
		}
	})
}

// TestFlatMD5 checks the fast path's md5 mode: it takes the entries, and
// an entry has an md5 (Entry.HasMD5, Header.MD5) only where msprobe's
// md5_find looks: an item that is an io field's value or an element of
// its list, a parameter of a parameters_grad body or an element of its
// list; not below a dict or in a nested list. Each case is one dump,
// its entries in turn (the fast path starts each afresh).
func TestFlatMD5(t *testing.T) {
	t.Parallel()
	const tm = tensorMD5
	for _, c := range []struct {
		name   string // of every entry
		bodies []string
		want   []bool
	}{
		{"Functional.a.%d.forward", []string{`{"output": ` + tm + `}`, `{"input_args": [null, ` + tm + `]}`}, []bool{true, true}},
		{"Functional.a.%d.forward", []string{`{"input_args": [[` + tm + `], ` + tm + `]}`}, []bool{true}},
		{"Functional.a.%d.forward", []string{`{"input_kwargs": {"x": ` + tm + `}}`, `{"input_args": [{"a": ` + tm + `}]}`}, []bool{false, false}},
		{"Functional.a.%d.forward", []string{`{"input_args": [[` + tm + `]]}`, `{"input_args": [null], "parameters": {"w": ` + tm + `}}`}, []bool{false, false}},
		{"Functional.a.%d.forward", []string{`{"input_args": [` + tm + `]}`, `{"input_args": [` + tensorA + `]}`, `{"output": [` + tm + `]}`}, []bool{true, false, true}},
		{"M%d.parameters_grad", []string{`{"weight": ` + tm + `}`, `{"x": {"y": ` + tm + `}}`}, []bool{true, false}},
		{"M%d.parameters_grad", []string{`{"bias": [[` + tm + `], ` + tm + `]}`, `{"bias": [[` + tm + `]]}`}, []bool{true, false}},
	} {
		var members []string
		for i, body := range c.bodies {
			name := fmt.Sprintf(c.name, i)
			if !flatTakes(name, body) {
				t.Errorf("fast path declined %s: %s", name, body)
			}
			members = append(members, strconv.Quote(name)+": "+body)
		}
		data := []byte(dumpWith(strings.Join(members, ", ")))
		var fast, slow string
		fast = renderScan(data, "dump.json", false, true)
		slow = renderScan(data, "dump.json", false, false)
		if fast != slow {
			t.Errorf("%s: fast path differs:\n%s", members, firstDiff(fast, slow))
		}
		var got []bool
		var h Header
		h, _ = scan(strings.NewReader(string(data)), "dump.json", nil, func(e *Entry) error {
			got = append(got, e.HasMD5)
			return nil
		}, scanMode{})
		if fmt.Sprint(got) != fmt.Sprint(c.want) || h.MD5 != slices.Contains(c.want, true) {
			t.Errorf("%s: HasMD5 %v, header %v; want %v", members, got, h.MD5, c.want)
		}
	}
}

// flatTakes reports whether the fast path takes the entry, building its
// rows in full and in names mode.
func flatTakes(name, body string) bool {
	for _, names := range []bool{false, true} {
		s := &scanner{}
		s.flat.names = names
		lx := newLexer(strings.NewReader(body+" "), "dump.json")
		if _, ok := s.flat.entry(lx, &tree{}, name, 1, flatKind(name)); !ok {
			return false
		}
	}
	return true
}

// TestFlatSeeds runs the seeds under each name and checks that the fast
// path takes the plain ones.
func TestFlatSeeds(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"Functional.linear.0.forward", "A.parameters_grad", "x.debug", "M.parameters_grad.0", "M.parameters_grad.x.forward"} {
		for _, body := range flatSeeds {
			data := []byte(dumpWith(strconv.Quote(name) + ": " + body))
			var fast, slow string
			fast = renderScan(data, "dump.json", false, true)
			slow = renderScan(data, "dump.json", false, false)
			if fast != slow {
				t.Errorf("%s: %s: fast path differs:\n%s", name, body, firstDiff(fast, slow))
			}
			if d := rowNamesDiffer(data, "dump.json"); d != "" {
				t.Errorf("%s: %s: names mode differs: %s", name, body, d)
			}
		}
	}
	// Bodies the fast path must take.
	take := func(name, body string) {
		if !flatTakes(name, body) {
			t.Errorf("fast path declined %s: %s", name, body)
		}
	}
	for _, body := range flatSeeds[:3] {
		take("Functional.linear.0.forward", body)
	}
	take("M.parameters_grad", flatSeeds[len(flatSeeds)-4])
	take("Functional.linear.0.forward", ioMD5)
	take("Module.a.B.backward.1", `{"input_args": [`+tensorMD5+`, null], "output": [`+tensorMD5+`]}`)
	take("M.parameters_grad", wholeMD5)
	take("Functional.linear.0.forward", nanStats)
	take("Functional.linear.0.forward", indentSeed)
	take("Functional.linear.0.forward", nanValues)
	take("Distributed.all_reduce.0.forward", ranksPG)
	take("Tensor.__getitem__.0.forward", sliceSize)
	take("Tensor.__getitem__.0.forward", sizeMD5)
	take("M.parameters_grad", `{"weight": {"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2], "Max": Infinity, "Min": -Infinity, "Mean": NaN, "Norm": NaN}}`)
	take("M.parameters_grad.1", flatSeeds[len(flatSeeds)-1])
}

// TestFlatLargeEntry: an entry far longer than flatWindow (a foreach call
// on thousands of tensors) is taken by the fast path, the buffer reading
// on until it holds the body; one declined for what it holds (a string
// with an escape, deep in the body and near the buffer's end) goes to the
// tree path; both read as the tree path reads them, streamed or not.
func TestFlatLargeEntry(t *testing.T) {
	t.Parallel()
	list := func(n int, odd string) string {
		items := make([]string, n)
		for i := range items {
			items[i] = tensorA
		}
		if odd != "" {
			items[n-1] = odd
		}
		return "[" + strings.Join(items, ",\n") + "]"
	}
	big := `{"input_args": [` + list(3000, "") + `, ` + list(3000, "") + `], "input_kwargs": {"alpha": {"type": "float", "value": 0.5}}, "output": []}`
	if len(big) < 16*flatWindow {
		t.Fatalf("the large body is %d bytes: it should pass several windows", len(big))
	}
	escaped := `{"input_args": [` + list(3000, `{"type": "str", "value": "a\u00e9"}`) + `], "output": []}`
	for _, name := range []string{"Torch._foreach_add_.0.forward", "Torch.cat.0.forward"} {
		if !flatTakes(name, big) {
			t.Errorf("%s: fast path declined a body of %d bytes", name, len(big))
		}
	}
	if flatTakes("Torch.cat.0.forward", escaped) {
		t.Errorf("fast path took a string with an escape")
	}
	data := []byte(dumpWith(`"Tensor.add.0.forward": {"output": [` + tensorA + `]}, "Torch._foreach_add_.0.forward": ` + big +
		`, "Torch.cat.0.forward": ` + escaped + `, "Tensor.add.1.forward": {"output": [` + tensorA + `]}`))
	for _, pipelined := range []bool{false, true} {
		fast, slow := renderScan(data, "dump.json", pipelined, true), renderScan(data, "dump.json", pipelined, false)
		if fast != slow {
			t.Errorf("pipelined %v: fast path differs:\n%s", pipelined, firstDiff(fast, slow))
		}
		if n := strings.Count(fast, "Name:Torch._foreach_add_.0.forward.input."); n != 6001 {
			t.Errorf("pipelined %v: %d rows of the foreach call, want its 6000 tensors and alpha", pipelined, n)
		}
	}
}

// TestLexerShrinks: a buffer grown past lexShrinkAbove for a long token
// or entry comes back to lexBuf once what it holds unread fits, the input
// continuing where it was.
func TestLexerShrinks(t *testing.T) {
	t.Parallel()
	data := make([]byte, 3*lexShrinkAbove)
	for i := range data {
		data[i] = byte('a' + i%23)
	}
	lx := newLexer(bytes.NewReader(data), "dump.json")
	for lx.end < 2*lexShrinkAbove && lx.fill() { // a token that long
	}
	if len(lx.buf) <= lexShrinkAbove {
		t.Fatalf("buffer %d bytes after %d read", len(lx.buf), lx.end)
	}
	lx.pos = lx.end - 100 // the token read
	at := lx.read + int64(lx.pos)
	if !lx.fill() {
		t.Fatal("fill: no more input")
	}
	if len(lx.buf) != lexBuf {
		t.Errorf("buffer %d bytes, want %d", len(lx.buf), lexBuf)
	}
	if got, want := lx.buf[lx.pos:lx.end], data[at:at+int64(lx.end-lx.pos)]; lx.read+int64(lx.pos) != at || !bytes.Equal(got, want) {
		t.Errorf("the input after the token does not go on where it was")
	}
}

// TestFormulaStart checks formulaStart against a plain reading of
// msprobe's rule on random strings of ';', formula and other characters.
func TestFormulaStart(t *testing.T) {
	ref := func(s string) bool {
		for i, r := range s {
			if i == 0 || s[i-1] == ';' {
				if strings.ContainsRune("+-=%@＋－＝％＠", r) {
					return true
				}
			}
		}
		return false
	}
	alphabet := []string{"a", ";", "+", "-", "=", "%", "@", "＋", "＠", "é", ".", "0"}
	r := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		var b strings.Builder
		for range r.IntN(40) {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		s := b.String()
		if got, want := formulaStart(s), ref(s); got != want {
			t.Fatalf("formulaStart(%q) = %v, want %v", s, got, want)
		}
		if got := formulaStartBytes([]byte(s)); got != ref(s) {
			t.Fatalf("formulaStart([]byte %q) = %v", s, got)
		}
	}
}

// FuzzNumCheck checks that numCheck accepts exactly the literals num
// accepts, ending where num ends, with num's sign and kind.
func FuzzNumCheck(f *testing.F) {
	for _, s := range []string{"0", "-0", "12", "012", "1.5", "1.", ".5", "-", "1e5", "1E+5", "1e-", "2.5e-07",
		"123456789012345678901234567890", "1.234567890123456789", "9e99999", "-1.0e0,", "0.000001234]", "7 ", "1.2.3 "} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var n fnum
		full := flatter{b: b}
		ok := full.num(&n)
		check := flatter{b: b}
		neg, float, cok := check.numCheck()
		if ok != cok {
			t.Fatalf("%q: num %v, numCheck %v", b, ok, cok)
		}
		if ok && (full.i != check.i || n.neg != neg || n.float != float) {
			t.Fatalf("%q: num ends at %d (neg %v, float %v), numCheck at %d (neg %v, float %v)",
				b, full.i, n.neg, n.float, check.i, neg, float)
		}
		if !ok && check.i != 0 {
			t.Fatalf("%q: numCheck moved on a literal it refused", b)
		}
	})
}

// checkRepr reads lit as the flat path does and checks fnum.isRepr
// against the reference, isPyRepr (AppendPyFloat and compare); parsed is
// false when num refuses lit or its value is not a finite number.
func checkRepr(t *testing.T, lit string) (repr, parsed bool) {
	t.Helper()
	f := flatter{b: []byte(lit + ",")}
	var n fnum
	if !f.num(&n) || f.i != len(lit) {
		return false, false
	}
	x := n.value()
	if math.IsInf(x, 0) {
		return false, false // PosInf, NegInf: no Repr
	}
	got, want := n.isRepr(x), isPyRepr(n.lit, x)
	if got != want {
		t.Fatalf("%q: isRepr %v, AppendPyFloat %q", lit, got, AppendPyFloat(nil, x))
	}
	return got, true
}

// TestIsRepr checks the flat path's repr test of a float literal on
// reprs and on other spellings of the same floats.
func TestIsRepr(t *testing.T) {
	for _, c := range []struct {
		lit  string
		want bool
	}{
		{"1.3220384565547094", true}, {"-0.04181459722050355", true}, {"2.5", true}, {"0.5", true},
		{"123456789012345.6", true}, {"0.30000000000000004", true}, {"0.1", true}, {"-2.5", true},
		{"0.0", true}, {"-0.0", true}, {"5.0", true}, {"50.0", true}, {"123.0", true},
		{"1000000000000000.0", true}, {"9999999999999998.0", true}, {"1e+16", true}, {"1.5e+16", true},
		{"0.0001", true}, {"0.00012345", true}, {"1e-05", true}, {"-1.5e-05", true}, {"1.5e+300", true},
		{"1e+100", true}, {"1e+99", true}, {"1e-100", true}, {"1.7976931348623157e+308", true},
		{"2.2250738585072014e-308", true}, {"5e-324", true}, {"-5e-324", true}, {"1e-323", true},
		{"0.00", false}, {"0.0e+00", false}, {"-0.00", false}, {"0", false}, {"-0", false}, {"5", false},
		{"5.00", false}, {"1.50", false}, {"123.00", false}, {"1e16", false}, {"1E+16", false},
		{"1.0e+16", false}, {"10000000000000000.0", false}, {"1e+15", false}, {"1e-04", false},
		{"0.00001", false}, {"1E-05", false}, {"1e-5", false}, {"1.0e-05", false}, {"1e-005", false},
		{"10e-06", false}, {"0.1e-04", false}, {"1.5e+00", false}, {"15.0e-01", false}, {"1e5", false},
		{"1e+05", false}, {"100000.0", true}, {"1e+020", false}, {"1e+20", true},
		{"100000000000000000000.0", false}, {"12345678901234567890.0", false}, {"1.7976931348623157e308", false},
		{"4.9406564584124654e-324", false}, {"0.30000000000000005", false}, {"0.3000000000000000444", false},
		{"0.299999999999999988898", false}, {"1.00000000000000000000", false}, {"1e-400", false},
		{"-1e-400", false}, {"1.2345678901234567e+200", true}, {"12.345678901234567e+199", false},
		{"0.12345678901234567e+201", false}, {"1.2345678901234567E+200", false}, {"9.999999999999999e+22", false},
		{"1e+23", true}, {"99999999999999990000000.0", false}, {"1e+023", false},
	} {
		repr, parsed := checkRepr(t, c.lit)
		if !parsed || repr != c.want {
			t.Errorf("%q: isRepr %v (parsed %v), want %v", c.lit, repr, parsed, c.want)
		}
	}
	for _, lit := range []string{".5", "01.5", "+1.5", "1.", "1e", "-", "1.5e+", "NaN", "-Infinity", "1e999"} {
		if repr, parsed := checkRepr(t, lit); parsed || repr {
			t.Errorf("%q: parsed", lit)
		}
	}
}

// FuzzIsRepr checks isRepr against AppendPyFloat on the spellings of a
// float (its repr, strconv's forms, the repr altered) and on any text.
func FuzzIsRepr(f *testing.F) {
	for _, v := range []float64{0, 1, 0.1, 1e-5, 1e-4, 1e16, 1e15, 123.456, 5e-324, 2.2250738585072014e-308,
		1.7976931348623157e308, -0.04181459722050355, 1e23, 9999999999999998} {
		f.Add(math.Float64bits(v), "")
	}
	for _, s := range []string{"1.50", "1E-05", "0.0", "-0.0", "1e+05", "1.0e-05", "01.5"} {
		f.Add(uint64(0), s)
	}
	f.Fuzz(func(t *testing.T, bits uint64, s string) {
		checkRepr(t, s)
		x := math.Float64frombits(bits)
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return
		}
		r := PyFloat(x)
		if repr, _ := checkRepr(t, r); !repr {
			t.Fatalf("%q: repr not taken", r)
		}
		lits := []string{
			strconv.FormatFloat(x, 'e', -1, 64), strconv.FormatFloat(x, 'g', -1, 64),
			strconv.FormatFloat(x, 'f', -1, 64), strconv.FormatFloat(x, 'e', 16, 64),
			strconv.FormatFloat(x, 'g', 17, 64), strconv.FormatFloat(x, 'f', 1, 64),
			strings.ToUpper(r), strings.Replace(r, "e+", "e", 1), strings.Replace(r, "e-0", "e-", 1),
			strings.Replace(r, "e", "0e", 1), strings.Replace(r, "e", ".0e", 1), r + "0",
			strings.Replace(r, "e+", "e+0", 1), strings.Replace(r, "e-", "e-0", 1),
		}
		if k := strings.IndexAny(r, "e"); k > 1 { // the last digit off by one
			lits = append(lits, r[:k-1]+string("1234567890"[r[k-1]-'0'])+r[k:])
		} else if k < 0 && r[len(r)-1] != '0' {
			lits = append(lits, r[:len(r)-1]+string("1234567890"[r[len(r)-1]-'0']))
		}
		for _, lit := range lits {
			checkRepr(t, lit)
		}
	})
}

// TestSkipDigits checks skipDigits' word-wise run against a byte loop:
// every byte after a run of each length (bytes above '9' carry in the
// word test), at every start and buffer end.
func TestSkipDigits(t *testing.T) {
	ref := func(b []byte, i int) int {
		for i < len(b) && b[i]-'0' <= 9 {
			i++
		}
		return i
	}
	for c := 0; c < 256; c++ {
		for run := 0; run <= 20; run++ {
			b := []byte(strings.Repeat("7", run) + string([]byte{byte(c)}) + "0123456789")
			for start := 0; start <= run; start++ {
				for end := start; end <= len(b); end++ {
					if got, want := skipDigits(b[:end], start), ref(b[:end], start); got != want {
						t.Fatalf("skipDigits(%q, %d) = %d, want %d", b[:end], start, got, want)
					}
				}
			}
		}
	}
}
