package compare

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/layermap/layermap/printparse/msprobe"
	"github.com/layermap/layermap/printparse/msprobe/dumpgen"
)

// splitDump cuts a dump.json into the text before its first entry, each
// entry's "name": body text, and the text after the last.
func splitDump(t *testing.T, path string) (head []byte, entries [][]byte, tail []byte) {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var offs []int64
	if _, err := msprobe.Skim(path, func(e *msprobe.SkimEntry) error {
		offs = append(offs, e.Offset)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	end := bytes.LastIndexByte(src, '}')
	end = bytes.LastIndexByte(src[:end], '}')
	for end > 0 && (src[end-1] == ' ' || src[end-1] == '\n') {
		end--
	}
	head, tail = src[:offs[0]], src[end:]
	for i, off := range offs {
		e := int64(end)
		if i+1 < len(offs) {
			e = offs[i+1]
		}
		entries = append(entries, bytes.TrimRight(src[off:e], " \n,"))
	}
	return head, entries, tail
}

func writeDump(t *testing.T, path string, head []byte, entries [][]byte, tail []byte) {
	t.Helper()
	os.MkdirAll(filepath.Dir(path), 0o755)
	b := append([]byte(nil), head...)
	b = append(b, bytes.Join(entries, []byte(",\n  "))...)
	b = append(b, tail...)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestIndexedFile: the bench index over a dump.json file (Skim and the
// EntryReader) gives the plain join's table and summary with the bench
// entries in any order, duplicated, missing, bench-only, with odd row
// names (data names naming other rows, keys holding the entry name), for
// statistics and tensor dumps, with and without a data mapping, and
// caches small enough that entries are parsed again.
func TestIndexedFile(t *testing.T) {
	dir := t.TempDir()
	for _, tensor := range []bool{false, true} {
		npuPath := filepath.Join(dir, "npu", "dump.json")
		benchPath := filepath.Join(dir, "bench", "dump.json")
		for _, s := range []struct {
			path    string
			perturb float64
		}{{npuPath, 0}, {benchPath, 0.02}} {
			var b bytes.Buffer
			if _, err := dumpgen.Write(&b, dumpgen.Options{Seed: 9, Layers: 4, Hidden: 64, Perturb: s.perturb, Tensor: tensor}); err != nil {
				t.Fatal(err)
			}
			os.MkdirAll(filepath.Dir(s.path), 0o755)
			os.WriteFile(s.path, b.Bytes(), 0o644)
		}
		head, entries, tail := splitDump(t, benchPath)
		rng := rand.New(rand.NewPCG(3, 4))
		odd := func(es [][]byte) [][]byte {
			out := slices.Clone(es)
			for i := range out {
				switch rng.IntN(10) {
				case 0: // a data name naming another row
					out[i] = bytes.Replace(out[i], []byte(`.output.0.pt"`), []byte(`.output.1.pt"`), 1)
				case 1: // a data name of another entry
					if k := rng.IntN(len(out)); k != i {
						name := out[k][1 : bytes.IndexByte(out[k][1:], '"')+1]
						out[i] = bytes.Replace(out[i], []byte(`"data_name": "`), append(append([]byte(`"data_name": "`), name...), ".input.0."...), 1)
					}
				case 2: // a key holding the entry name's first part
					out[i] = bytes.Replace(out[i], []byte(`"use_cache"`), []byte(`"Tensor.use_cache"`), 1)
					out[i] = bytes.Replace(out[i], []byte(`"dim"`), []byte(`"xFunctional"`), 1)
				}
			}
			return out
		}
		shuffled := slices.Clone(entries)
		rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		var dupDrop [][]byte
		for i, e := range entries {
			if i%9 == 4 {
				continue
			}
			dupDrop = append(dupDrop, e)
			if i%11 == 3 {
				dupDrop = append(dupDrop, e)
			}
			if i%13 == 5 {
				dupDrop = append(dupDrop, bytes.Replace(e, []byte(`"`), []byte(`"Extra.`), 1))
			}
		}
		reversed := slices.Clone(entries)
		slices.Reverse(reversed)
		dm := map[string]string{}
		var npuRows []string
		msprobe.ScanFile(npuPath, func(e *msprobe.Entry) error {
			for _, it := range e.Items {
				npuRows = append(npuRows, it.Name)
			}
			return nil
		})
		for i := 0; i+5 < len(npuRows); i += 7 {
			dm[npuRows[i]] = npuRows[i+5]
		}
		variants := map[string][][]byte{"in order": entries, "shuffled": shuffled, "duplicated, dropped, extra": dupDrop,
			"reversed": reversed,
			// entries the index leaves out (no op in the name), more than a
			// word of its bitset, at the end
			"unkeyed last": append(slices.Clone(entries), unkeyed(70)...)}
		if tensor {
			variants["odd"] = odd(entries)
			variants["odd shuffled"] = odd(shuffled)
			last := slices.Clone(entries)
			last[len(last)-1] = bytes.Replace(last[len(last)-1], []byte(`.output.0.pt"`), []byte(`.output.1.pt"`), 1)
			variants["odd last"] = last
			all := slices.Clone(entries)
			for i := range all {
				all[i] = bytes.ReplaceAll(all[i], []byte(`.pt"`), []byte(`.x.pt"`))
			}
			variants["all odd"] = all
		}
		mode := Statistics
		if tensor {
			mode = Tensor
		}
		for name, es := range variants {
			vp := filepath.Join(dir, strings.ReplaceAll(name, " ", "_"), "dump.json")
			writeDump(t, vp, head, es, tail)
			// duplicated entries: one entry, first place, last body (Python's dict)
			plan, err := msprobe.FindRepeats(vp)
			if err != nil || (plan != nil) != strings.Contains(name, "duplicated") {
				t.Fatalf("%s: FindRepeats = %v, %v", name, plan, err)
			}
			for _, cfg := range []Config{{Mode: mode}, {Mode: mode, cache: 2}, {Mode: mode, DataMapping: DataMappingOf(dm), cache: 5}} {
				cfg.BenchRepeats = plan
				if tensor {
					cfg.Tensor = nameMetrics{}
				}
				npuSrc := scanSource(npuPath)
				plain := cfg
				plain.simpleBench = true
				var want, got markSink
				ws, err := Compare(npuSrc, BenchFile(vp), plain, &want)
				if err != nil {
					t.Fatal(err)
				}
				var tr joinTrace
				cfg.trace = &tr
				gs, err := Compare(npuSrc, BenchFile(vp), cfg, &got)
				if err != nil {
					t.Fatal(err)
				}
				if tr.indexedPasses == 0 || tr.fullPasses > 0 {
					t.Fatalf("%s: not the indexed join: %+v", name, tr)
				}
				if ws.Rows == ws.NPUUnmatched {
					t.Fatalf("%s: degenerate: nothing matched", name)
				}
				what := fmt.Sprintf("tensor %v, %s, cache %d, data mapping %v", tensor, name, cfg.cache, cfg.DataMapping != nil)
				if !reflect.DeepEqual(gs, ws) {
					t.Errorf("%s: summary %+v\nplain %+v", what, gs, ws)
				}
				for i := range max(len(got.rows), len(want.rows)) {
					if i >= len(got.rows) || i >= len(want.rows) || !reflect.DeepEqual(got.rows[i], want.rows[i]) || got.marks[i] != want.marks[i] {
						t.Errorf("%s: row %d differs from the plain join's", what, i)
						if i < len(got.rows) && i < len(want.rows) {
							t.Logf("%q\nplain %q", got.rows[i][:2], want.rows[i][:2])
						}
						break
					}
				}
			}
		}
	}
}

// unkeyed returns n dump entries whose names hold no op (the bench index
// leaves them out).
func unkeyed(n int) [][]byte {
	var out [][]byte
	for i := range n {
		out = append(out, []byte(fmt.Sprintf(`"unkeyed%d": {}`, i)))
	}
	return out
}
