package compare

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/layermap/layermap/mapping"
	"github.com/layermap/layermap/mapping/resolve"
	"github.com/layermap/layermap/printparse/msprobe"
	"github.com/layermap/layermap/printparse/testkit"
)

// TestDataMappingDeferred: a mapped compare writes the same files whether
// the layer mapping reads the rows itself or leaves them to the table's
// passes (the data mapping deferred, completed as the passes read them),
// on the demo pair and on variants of it, some of which keep the data
// mapping from being deferred, and counts the same rows sent nowhere
// (by entry position, or by name); a body the skim does not check fails
// either way, naming the same line.
func TestDataMappingDeferred(t *testing.T) {
	t.Parallel()
	demo, lm, m := demoMapping(t)
	tensor := testkit.Tensor
	plain := `{"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2], "Max": 1.0, "Min": 0.0, "Mean": 0.5, "Norm": 1.0, "requires_grad": false}`
	// variants insert members first in "data" of the NPU or bench dump
	tests := []struct {
		name           string
		npuAdd, bchAdd string
		deferred       bool
		bad            bool // the compare fails
	}{
		{name: "demo", deferred: true},
		{name: "npu entry with rows named otherwise (odd)",
			npuAdd: `"Tensor.odd.0.forward": {"output": [` + tensor("X.mul.1.forward.output.0.pt") + `]}`},
		{name: "npu entry extending another",
			npuAdd: `"Tensor.ext.0.forward": {"output": [` + plain + `]}, "Tensor.ext.0.forward.x": {"output": [` + plain + `]}`},
		{name: "npu key repeated",
			npuAdd: `"Tensor.rep.0.forward": {"output": [` + plain + `]}, "Tensor.rep.0.forward": {"output": [null, ` + plain + `]}`},
		{name: "bench key repeated",
			bchAdd: `"Tensor.rep.0.forward": {"output": [` + plain + `]}, "Tensor.rep.0.forward": {"output": [null, ` + plain + `]}`},
		{name: "bench rows named otherwise",
			bchAdd: `"Tensor.raw.0.forward": {"output": [` + tensor("X.mul.1.forward.output.0.pt") + `]}`},
		{name: "npu rows repeated and long lists", deferred: true,
			npuAdd: `"Tensor.long.0.forward": {"input_args": [` + strings.Repeat(plain+", ", 20) + plain + `], "output": [null]}`},
		// an entry msprobe's parser skips (no direction) among the NPU
		// entries the join reads: the map looks past it
		{name: "npu entry msprobe skips", deferred: true,
			npuAdd: `"Tensor.pre.0.forward": {"output": [` + plain + `]}, "Tensor.skip.0.sideways": {"output": [` + plain + `]}, "Tensor.post.0.forward": {"output": [` + plain + `]}`},
		{name: "bench entry without some rows", deferred: true,
			npuAdd: `"Tensor.pair.0.forward": {"input_args": [` + plain + `, ` + plain + `], "output": [` + plain + `]}`,
			bchAdd: `"Tensor.pair.0.forward": {"input_args": [` + plain + `], "output": [null, ` + plain + `]}`},
		// backward entries are joined on renumbered keys: a bench row
		// the bench entry lacks may name another entry's key
		{name: "backward calls of different arities", deferred: true,
			npuAdd: `"Tensor.bw.1.backward": {"input": [` + plain + `]}, "Tensor.bw.0.backward": {"input": [` + plain + `, ` + plain + `]}`,
			bchAdd: `"Tensor.bw.1.backward": {"input": [` + plain + `, ` + plain + `]}, "Tensor.bw.0.backward": {"input": [` + plain + `]}`},
		{name: "bench body the skim leaves unchecked", deferred: true, bad: true,
			bchAdd: `"Tensor.bad.0.forward": {"output": [{"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2], "Max": 1.}]}`},
		{name: "npu body the skim leaves unchecked", deferred: true, bad: true,
			npuAdd: `"Tensor.bad.0.forward": {"output": [{"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2], "Max": 1.}]}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			npu := variant(t, filepath.Join(demo, "llamafactory"), filepath.Join(dir, "npu"), tc.npuAdd)
			bench := variant(t, filepath.Join(demo, "mindspeed-mm"), filepath.Join(dir, "bench"), tc.bchAdd)
			np, bp := msprobe.Paths{Dir: npu}, msprobe.Paths{Dir: bench}
			if dm, _, err := checkMapping(m, np, bp, false, func(*resolve.Entries, *resolve.Entries, [2]*msprobe.Names) {}); err != nil {
				t.Fatal(err)
			} else if dm.Deferred() != tc.deferred {
				t.Errorf("deferred %v, want %v", dm.Deferred(), tc.deferred)
			}
			var outs [2]string
			var errs [2]error
			var reps [2]*Report
			for k, mapRows := range []bool{true, false} {
				outs[k] = filepath.Join(dir, "out", []string{"read", "deferred"}[k])
				reps[k], errs[k] = Run(Options{Target: npu, Golden: bench, OutDir: outs[k], LayerMappingFile: lm,
					Stamp: time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC), mapRows: mapRows})
			}
			if tc.bad {
				for k, err := range errs {
					if err == nil {
						t.Fatalf("run %d: no error", k)
					}
					if left := names(t, outs[k]); len(left) != 0 {
						t.Errorf("run %d failed and left %d files", k, len(left))
					}
				}
				// the same place named: the file and line
				var places [2]string
				for k, err := range errs {
					places[k] = placeRE.FindString(err.Error())
				}
				if places[0] == "" || places[0] != places[1] || strings.HasPrefix(places[1], npu) && strings.Contains(errs[1].Error(), "bench:") {
					t.Errorf("errors name different places, or the NPU dump the bench's:\n%v\n%v", errs[0], errs[1])
				}
				return
			}
			for k, err := range errs {
				if err != nil {
					t.Fatalf("run %d: %v", k, err)
				}
			}
			nowhere := [2][]Nowhere{reps[0].Ranks[0].Summary.SentNowhere, reps[1].Ranks[0].Summary.SentNowhere}
			if len(nowhere[0]) == 0 || !slices.Equal(nowhere[1], nowhere[0]) {
				t.Errorf("sent nowhere %+v, want %+v (not none)", nowhere[1], nowhere[0])
			}
			files := names(t, outs[0])
			if got := names(t, outs[1]); !slices.Equal(got, files) || !slices.ContainsFunc(files, func(f string) bool { return strings.HasPrefix(f, "data_mapping") }) {
				t.Fatalf("files %v, want %v with a data mapping", got, files)
			}
			for _, f := range files {
				checkSame(t, filepath.Join(outs[1], f), filepath.Join(outs[0], f))
				if b, _ := os.ReadFile(filepath.Join(outs[1], f)); tc.name == "bench entry without some rows" && strings.HasPrefix(f, "data_mapping") &&
					!strings.Contains(string(b), "Tensor.pair.0.forward.input.1: N/A\n") {
					t.Errorf("%s: no row paired with NA: %q", f, regexp.MustCompile(`(?m)^Tensor.pair.*$`).FindAllString(string(b), -1))
				}
			}
		})
	}
}

// placeRE finds the place an error names.
var placeRE = regexp.MustCompile(`[^ ]*dump\.json:\d+:`)

// demoMapping gives the demo dumps' folder, and the built-in layer
// mapping of their pair: its file and the mapping.
func demoMapping(t *testing.T) (demo, lm string, m *mapping.Mapping) {
	t.Helper()
	lm = filepath.Join(testkit.Root(t), "templates", "data", "qwen2.5-vl_llamafactory_to_mindspeed-mm.yaml")
	m, _, err := mapping.Load(lm)
	if err != nil {
		t.Fatal(err)
	}
	return testkit.Testdata(t, "demo", "dumps"), lm, m
}

// demoDeferred is the deferred data map of the demo pair by its built-in
// layer mapping (checkMapping, rows left to the table), and the pair.
func demoDeferred(t *testing.T) (dm *resolve.DataMap, np, bp msprobe.Paths) {
	t.Helper()
	demo, _, m := demoMapping(t)
	np, bp = msprobe.Paths{Dir: filepath.Join(demo, "llamafactory")}, msprobe.Paths{Dir: filepath.Join(demo, "mindspeed-mm")}
	dm, _, err := checkMapping(m, np, bp, false, func(*resolve.Entries, *resolve.Entries, [2]*msprobe.Names) {})
	if err != nil || !dm.Deferred() {
		t.Fatalf("deferred %v, %v", dm != nil && dm.Deferred(), err)
	}
	return dm, np, bp
}

// variant copies the dump folder src to dst with members put first in
// the "data" of its dump.json.
func variant(t *testing.T, src, dst, members string) string {
	t.Helper()
	for _, f := range []string{"dump.json", "construct.json", "stack.json"} {
		copyFile(t, filepath.Join(src, f), dst)
	}
	if members == "" {
		return dst
	}
	p := filepath.Join(dst, "dump.json")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, `"data": {`)
	if i < 0 {
		t.Fatalf("%s: no data", src)
	}
	i += len(`"data": {`)
	if err := os.WriteFile(p, []byte(s[:i]+"\n"+members+","+s[i:]), 0o644); err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestDataMapLogPasses: a pass cut short and passes read again write each
// entry's pairs once, as one pass does, whether or not the join mapped the
// entry's rows (and so looked its pair up) before; without a pass read to
// the end the file is not finished.
func TestDataMapLogPasses(t *testing.T) {
	t.Parallel()
	dm, np, bp := demoDeferred(t)
	var entries []npuEntry
	if _, err := msprobe.ScanFile(filepath.Join(np.Dir, "dump.json"), func(e *msprobe.Entry) error {
		ne := npuEntry{name: e.Name, member: int32(e.Member)}
		for _, it := range e.Items {
			ne.rows = append(ne.rows, sideRow{it: it, pos: int32(e.Member) + 1})
		}
		entries = append(entries, ne)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	ix, err := newBenchIndex(BenchFile(filepath.Join(bp.Dir, "dump.json")), &Config{}, true)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.close()
	// write runs passes of the first n entries each (-1: all) and closes;
	// with joined, the rows of every other entry are mapped first, as the
	// join maps them
	var joined bool
	write := func(passes ...int) (string, error) {
		var b strings.Builder
		l := &dataMapLog{dm: dm, w: newDataMappingWriter(&b)}
		cfg := &Config{layerMap: dm}
		var buf []byte
		for _, n := range passes {
			ix.stopPrefetch() // as a pass's end does
			ix.reset(true)
			sc := &suffixCheck{ix: ix}
			l.passStart(sc)
			for i := range entries {
				if i == n {
					break
				}
				l.rowsOf(&entries[i])
				for r := range entries[i].rows {
					if joined && i%2 == 0 {
						cfg.mapRow(&entries[i].rows[r], &buf, sc)
					}
				}
				if err := l.entry(entries[i].name, entries[i].member); err != nil {
					t.Fatal(err)
				}
			}
			if n < 0 {
				l.passDone()
			}
		}
		err := l.close()
		return b.String(), err
	}
	want, err := write(-1)
	if err != nil || strings.Count(want, "\n") < 100 {
		t.Fatalf("one pass: %d lines, %v", strings.Count(want, "\n"), err)
	}
	for _, joined = range []bool{false, true} {
		for _, passes := range [][]int{{-1}, {40, -1}, {40, 10, -1, -1}, {-1, -1}} {
			if got, err := write(passes...); err != nil || got != want {
				t.Errorf("passes %v, joined %v: %v, the file differs: %s", passes, joined, err, testkit.FirstDiff(want, got))
			}
		}
	}
	joined = false
	if _, err := write(40); err == nil {
		t.Error("no pass read to the end, and no error")
	}
}

// everySuffix answers a deferred map's suffix checks with yes.
type everySuffix struct{ last entryPair }

func (e *everySuffix) has(int32, string) bool { return true }
func (e *everySuffix) lastPair() *entryPair   { return &e.last }

// TestMapRowDeferred: mapRow gives each NPU row of a deferred map its
// bench entry's row, named in *buf with a buffer (valid until the next
// call) and as a string of its own without one, which later calls leave
// alone (the pair's name is kept in a buffer that the next entry reuses).
func TestMapRowDeferred(t *testing.T) {
	t.Parallel()
	dm, np, _ := demoDeferred(t)
	entries, err := msprobe.EntryNames(filepath.Join(np.Dir, "dump.json"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := &Config{layerMap: dm}
	type kept struct{ row, got, want string }
	var keep []kept
	var buf []byte
	withBuf, without := &everySuffix{}, &everySuffix{} // each keeps its last pair
	paired := 0
	for i, e := range entries {
		b, _, ok := dm.EntryPair(i)
		if !ok {
			t.Fatalf("EntryPair(%d) (%q): not in the map", i, e)
		}
		for _, suffix := range []string{"", ".output.0"} {
			want := resolve.NA
			switch {
			case b == e:
				want = e + suffix
			case b != "":
				want = b + suffix
			}
			n := &sideRow{it: msprobe.Item{Name: e + suffix, Entry: e}, pos: int32(i) + 1}
			it := &n.it
			got, ok := cfg.mapRow(n, &buf, withBuf)
			if !ok || got != want {
				t.Fatalf("mapRow(%q) with a buffer = %q, %v; want %q", it.Name, got, ok, want)
			}
			got, ok = cfg.mapRow(n, nil, without)
			if !ok || got != want {
				t.Fatalf("mapRow(%q) = %q, %v; want %q", it.Name, got, ok, want)
			}
			keep = append(keep, kept{it.Name, got, want})
		}
		if b != "" {
			paired++
		}
	}
	for _, k := range keep {
		if k.got != k.want {
			t.Fatalf("mapRow(%q) without a buffer gave %q, now %q", k.row, k.want, k.got)
		}
	}
	if paired == 0 {
		t.Fatal("no NPU entry is paired")
	}
}
