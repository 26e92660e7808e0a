package resolve

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/layermap/layermap/mapping"
	"github.com/layermap/layermap/printparse/msprobe"
	"github.com/layermap/layermap/printparse/msprobe/dumpgen"
)

// genDump writes a dumpgen dump.json of about size bytes into dir with a
// construct.json that nests every API under the last module forward before
// it, and a new-format stack.json (no stack entries, as current dumps).
func genDump(b *testing.B, dir string, size int64, perturb float64) {
	b.Helper()
	f, err := os.Create(filepath.Join(dir, "dump.json"))
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	if _, err := dumpgen.Write(w, dumpgen.Options{Seed: 1, TargetBytes: size, Hidden: 64, Perturb: perturb}); err != nil {
		b.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	f.Close()
	names, err := msprobe.EntryNames(filepath.Join(dir, "dump.json"))
	if err != nil {
		b.Fatal(err)
	}
	construct := map[string]string{}
	parent := ""
	for _, n := range names {
		construct[n] = parent
		if strings.HasPrefix(n, "Module.") && strings.Contains(n, ".forward.") {
			parent = n
		}
	}
	data, _ := json.Marshal(construct)
	if err := os.WriteFile(filepath.Join(dir, "construct.json"), data, 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "stack.json"), []byte(`{"0": [[], []]}`), 0o644); err != nil {
		b.Fatal(err)
	}
}

// genPair writes a pair of ~64 MB dumps (genDump; the bench one's
// statistics perturbed) and sets the bytes an op: both dump.json files.
func genPair(b *testing.B) (npu, bench string) {
	npu, bench = b.TempDir(), b.TempDir()
	genDump(b, npu, 64<<20, 0)
	genDump(b, bench, 64<<20, 0.01)
	st, err := os.Stat(filepath.Join(npu, "dump.json"))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(2 * st.Size())
	return npu, bench
}

// BenchmarkGenerateDataMapping: api + data mapping of a pair of ~64 MB
// dumps (what compare --mapping does before comparing).
func BenchmarkGenerateDataMapping(b *testing.B) {
	npu, bench := genPair(b)
	m, _, err := mapping.Parse([]byte("TopLayer: {}\n"), "b.yaml")
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		dm, err := GenerateDataMapping(m, npu, bench)
		if err != nil {
			b.Fatal(err)
		}
		if len(dm) == 0 {
			b.Fatal("empty data mapping")
		}
	}
}

// BenchmarkReadSides: what a mapped compare reads of a pair of ~64 MB
// dumps before its table (the rows left to the table: each dump.json
// skimmed, construct.json and stack.json read, the scope tries and name
// indexes built), with both sides' name indexes waited for.
func BenchmarkReadSides(b *testing.B) {
	npu, bench := genPair(b)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		s, err := ReadSides(npu, bench, false)
		if err != nil {
			b.Fatal(err)
		}
		if s.index[0]() || s.index[1]() {
			b.Fatal("a name extends another")
		}
	}
}
