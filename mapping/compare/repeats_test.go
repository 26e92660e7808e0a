package compare

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/layermap/layermap/printparse/testkit"
)

// TestRepeatedKeysGolden: a dump.json whose "data" repeats a key is read
// as msprobe's json.load reads it, the entry at its first place with its
// last body (a Python dict keeps a key where it was first set). So a
// golden pair whose entry's body is moved to a repeat of its key later in
// the file, a decoy body left at its place, still gives msprobe's golden
// table byte for byte: with the repeat on the NPU side (the table's
// passes read it again with the repeats' plan), on the bench side (the
// bench index made again with it), on both, three times over, and with
// the whole bench side in memory. Keeping the first body, or putting the
// entry at the last place, changes the table.
func TestRepeatedKeysGolden(t *testing.T) {
	t.Parallel()
	root := testkit.Corpus(t, "msprobe")
	// the decoy's rows, were it read, would be new rows of the entry
	const decoy = `{"input_args": [{"type": "torch.Tensor", "dtype": "torch.float32", "shape": [1], "Max": 9.0, "Min": 9.0, "Mean": 9.0, "Norm": 9.0, "requires_grad": false}], "output": []}`
	variants := []struct {
		name        string
		npu, bench  int // times the moved entry's key is given (1: not moved)
		first, full bool
	}{
		{name: "npu", npu: 2, bench: 1},
		{name: "bench", npu: 1, bench: 2},
		{name: "both", npu: 2, bench: 2},
		{name: "three times", npu: 3, bench: 3},
		{name: "first entry", npu: 2, bench: 2, first: true},
		{name: "bench in memory", npu: 1, bench: 3, full: true},
	}
	n := 0
	for _, c := range parityCases(t) {
		if strings.HasPrefix(c.name, "layer_mapping") || c.name == "data_mapping" {
			continue // a mapping reads the dumps itself: cmd's TestHostileRepeatedKeys
		}
		target, golden := c.target, c.golden
		if !filepath.IsAbs(target) {
			target, golden = filepath.Join(root, target), filepath.Join(root, golden)
		}
		if filepath.Base(golden) != "dump.json" {
			continue // a folder of step or rank folders
		}
		wantDir := filepath.Join(root, c.want)
		names := c.wantOnly
		if names == nil {
			m, _ := filepath.Glob(filepath.Join(wantDir, "*.csv"))
			for _, f := range m {
				names = append(names, filepath.Base(f))
			}
		}
		sort.Strings(names)
		n++
		for _, v := range variants {
			t.Run(c.name+"/"+v.name, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				opt := Options{Target: repeatVariant(t, target, filepath.Join(dir, "npu"), v.npu, v.first, decoy),
					Golden: repeatVariant(t, golden, filepath.Join(dir, "bench"), v.bench, v.first, decoy),
					OutDir: t.TempDir(), Stamp: goldenTime(t, names[0]), fullBench: v.full}
				if c.opt != nil {
					c.opt(t, &opt)
				}
				if _, err := Run(opt); err != nil {
					t.Fatal(err)
				}
				for _, name := range names {
					want, err := os.ReadFile(filepath.Join(wantDir, name))
					if err != nil {
						t.Fatal(err)
					}
					got, err := os.ReadFile(filepath.Join(opt.OutDir, name))
					if err != nil {
						t.Fatalf("%s not written: %v", name, err)
					}
					diffCSV(t, name, got, want)
				}
			})
		}
	}
	if n < 10 {
		t.Errorf("%d golden pairs of a dump.json a side, want at least 10", n)
	}
}

// repeatVariant writes into dir the dump.json at path with the key of
// its middle entry (its first with first) given times times: at its
// place with decoy as its body, then with decoy again after the next
// entry, its own body last of all. The dump's other files are linked
// beside it. It returns the new dump.json.
func repeatVariant(t *testing.T, path, dir string, times int, first bool, decoy string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Name() != filepath.Base(path) {
			if err := os.Symlink(filepath.Join(filepath.Dir(path), e.Name()), filepath.Join(dir, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
	out := filepath.Join(dir, "dump.json")
	head, entries, tail := splitDump(t, path)
	if times > 1 {
		k := len(entries) / 2
		if first {
			k = 0
		}
		colon := bytes.Index(entries[k], []byte(`": `)) + 2
		key, body := entries[k][:colon], bytes.TrimLeft(entries[k][colon:], " ")
		with := func(b []byte) []byte { return append(append(append([]byte(nil), key...), ' '), b...) }
		var es [][]byte
		for i, e := range entries {
			switch {
			case i == k:
				es = append(es, with([]byte(decoy)))
			case i == k+1 && times > 2:
				es = append(es, e, with([]byte(decoy)))
			default:
				es = append(es, e)
			}
		}
		entries = append(es, with(body))
	}
	writeDump(t, out, head, entries, tail)
	return out
}
