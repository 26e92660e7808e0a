package msprobe

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/layermap/layermap/printparse/testkit"
)

// scanItems scans data in mode m and returns each entry (its items
// apart), each item, and the header with the error, rendered.
func scanItems(data []byte, name string, m scanMode) (entries []string, items []Item, end string) {
	h, err := scan(strings.NewReader(string(data)), name, nil, func(e *Entry) error {
		c := *e
		c.Items = nil
		entries = append(entries, fmt.Sprintf("%+v %d items", c, len(e.Items)))
		items = append(items, e.Items...)
		return nil
	}, m)
	return entries, items, fmt.Sprintf("%+v %v", h, err)
}

// noStatsDiffer reports how a scan of data without statistics
// (ScanOptions.NoStats) differs from the full scan other than as NoStats
// says (a row's Stats Null in place of the full scan's), "" when it does
// not; the fast path on and off, pipelined or not, must agree on which
// rows lose them. nulled counts the rows of the first scan whose
// statistics were left out.
func noStatsDiffer(data []byte, name string) (diff string, nulled int) {
	var first []Item
	for _, flat := range []bool{true, false} {
		for _, pipelined := range []bool{false, true} {
			m := scanMode{pipelined: pipelined, noFlat: !flat}
			fe, fi, fend := scanItems(data, name, m)
			m.noStats = true
			ne, ni, nend := scanItems(data, name, m)
			where := fmt.Sprintf("fast path %v, pipelined %v", flat, pipelined)
			if fend != nend || strings.Join(fe, "\n") != strings.Join(ne, "\n") || len(fi) != len(ni) {
				return fmt.Sprintf("%s: entries differ:\n%s\n%s\nwant\n%s\n%s", where, strings.Join(ne, "\n"), nend, strings.Join(fe, "\n"), fend), 0
			}
			n := 0
			for k := range fi {
				want := fi[k]
				if ni[k].Stats == ([4]Value{}) && want.Stats != ni[k].Stats {
					want.Stats = ni[k].Stats
					n++
				}
				if g, w := fmt.Sprintf("%+v", ni[k]), fmt.Sprintf("%+v", want); g != w {
					return fmt.Sprintf("%s: row %d: %s\nwant %s", where, k, g, w), 0
				}
			}
			if first == nil {
				first, nulled = ni, n
				continue
			}
			for k := range first {
				if fmt.Sprint(first[k].Stats) != fmt.Sprint(ni[k].Stats) {
					return fmt.Sprintf("%s: row %d %s: statistics %+v, the first scan's %+v", where, k, ni[k].Name, ni[k].Stats, first[k].Stats), 0
				}
			}
		}
	}
	return "", nulled
}

// TestNoStats checks ScanOptions.NoStats against the full scan on every
// dump and on the fast path's seeds: the same entries, rows and errors,
// only statistics left out; and left out just where they come from the
// item's Max, Min, Mean and Norm: a tensor's (its dtype set) lose them, a
// scalar's (its value) and a rank's keep them.
func TestNoStats(t *testing.T) {
	t.Parallel()
	nulled := 0
	for _, path := range flatDumps(t) {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		d, n := noStatsDiffer(data, filepath.Base(path))
		if d != "" {
			t.Errorf("%s: %s", path, d)
		}
		nulled += n
		_, full, _ := scanItems(data, filepath.Base(path), scanMode{})
		_, items, _ := scanItems(data, filepath.Base(path), scanMode{noStats: true})
		for k, it := range items {
			tensor := strings.HasSuffix(it.Type, "Tensor") && it.Dtype != "" && !it.NoneItem
			// a dtype of its own (not a scalar's "<class ...>", not a
			// rank's or ellipsis's type), a torch.Size or a slice
			members := it.Dtype != it.Type && !strings.HasPrefix(it.Dtype, "<class ") || it.Type == "torch.Size" || it.Type == "slice"
			lost := fmt.Sprint(it.Stats) != fmt.Sprint(full[k].Stats)
			if tensor && it.Stats != ([4]Value{}) || lost && !members {
				t.Errorf("%s: %s (%s, %s): statistics %+v, the full scan's %+v", path, it.Name, it.Type, it.Dtype, it.Stats, full[k].Stats)
				break
			}
		}
	}
	if nulled == 0 {
		t.Error("no row lost its statistics")
	}
	for _, name := range []string{"Functional.linear.0.forward", "A.parameters_grad", "x.debug"} {
		for _, body := range flatSeeds {
			if d, _ := noStatsDiffer([]byte(dumpWith(strconv.Quote(name)+": "+body)), "dump.json"); d != "" {
				t.Errorf("%s: %s: %s", name, body, d)
			}
		}
	}
}

// TestEntryReaderSkipStats: EntryReader.SkipStats reads each entry's
// rows as a scan with NoStats gives them.
func TestEntryReaderSkipStats(t *testing.T) {
	t.Parallel()
	for _, dir := range []string{"synth_md5", "synth_statistics"} {
		path := filepath.Join(testkit.Testdata(t), "corpus/msprobe/golden", dir, "npu/dump.json")
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		_, want, _ := scanItems(data, path, scanMode{noStats: true})
		r, err := NewEntryReader(path)
		if err != nil {
			t.Fatal(err)
		}
		r.SkipStats()
		spans, err := skimSpans(path)
		if err != nil {
			t.Fatal(err)
		}
		var got []Item
		for i, sp := range spans {
			if err := r.Read(i, sp.off, sp.end, sp.line, func(e *Entry) error {
				got = append(got, e.Items...)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
		}
		r.Close()
		if g, w := fmt.Sprintf("%+v", got), fmt.Sprintf("%+v", want); g != w || len(want) == 0 {
			t.Errorf("%s: EntryReader with SkipStats:\n%s", path, firstDiff(g, w))
		}
	}
}
