package compare

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/layermap/layermap/printparse/testkit"
)

// dmChunkSeeds are data mappings the pieces must read as the whole does:
// the format msprobe writes, and the constructs a cut could change.
var dmChunkSeeds = []string{
	"a.input.0: b.input.0\na.output.0: b.output.0\nc.input.0: d.input.0\ne.output.0: f.output.0\n",
	"a: b\na: c\nd: e\na: f\n",                  // repeated keys: the last wins
	"a: \"b\nc: d\"\ne: f\ng: h\n",              // a quoted scalar over a line that looks like a key
	"a: 'b\nc: d'\ne: f\ng: h\n",                // single-quoted
	"a: [b,\nc: d]\ne: f\ng: h\n",               // a flow sequence
	"{a: b,\nc: d}\ne: f\n",                     // a flow mapping
	"a: b\n...\nc: d\ne: f\n",                   // the document ends
	"a: b\n---\nc: d\ne: f\n",                   // a second document
	"%YAML 1.2\n---\na: b\nc: d\ne: f\n",        // a directive
	"  a: b\nc: d\ne: f\n",                      // an indented mapping, then one at column 1
	"a: |\n  b\nc: d\ne: f\n",                   // a block scalar
	"a:\n  b\nc: d\ne: f\n",                     // a value on the next line
	"a: b\n c\nd: e\nf: g\n",                    // a plain scalar over two lines
	"a: &x b\nc: *x\ne: f\n",                    // an anchor and its alias
	"a: b # comment\n# comment\nc: d\n\ne: f\n", // comments and blank lines
	"a: !!str 1\n1: 2\n_x: null\ny:\nz: ~\n",    // tags, numbers, nulls
	"a: b\r\nc: d\r\ne: f\r\n",                  // CRLF
	"- a\n- b\nc: d\n",                          // a sequence
	"a: b\nc\nd: e\n",                           // not YAML
	"a: {b: c}\nd: e\nf: g\n",                   // a value that is no scalar
	"\ufeffa: b\nc: d\ne: f\n",                  // a byte order mark
	"a: \"b\\\nc\"\nd: e\nf: g\n",               // an escaped line break
	"a: b\n\tc: d\ne: f\n",                      // a tab
	"? a\n: b\nc: d\ne: f\n",                    // an explicit key
	"a: b\nc: d\ne: \"f\ng\"\nh: i\n",           // a quoted scalar cut at its end
	"a: b\nc: d\ne: >\n  f\n  g\nh: i\n",        // a folded scalar
	"a: b\nc:\n- d\ne: f\n",                     // a sequence value at column 1
	"a: b\nc: d\n  e: f\ng: h\n",                // an indented mapping value
	"a: b\nc: d\ne: f #\n#\n...x\ng: h\n",       // "..." starting a line
}

// FuzzDataMappingChunks: where the pieces are read, they give the pairs
// the whole document gives; the whole reading does not fail there.
func FuzzDataMappingChunks(f *testing.F) {
	for _, s := range dmChunkSeeds {
		f.Add(s, uint8(1))
	}
	f.Fuzz(func(t *testing.T, s string, chunk uint8) {
		checkChunks(t, s, max(int(chunk%16), 1))
	})
}

// checkChunks fails t where the pieces of chunk bytes read s otherwise
// than the whole, or otherwise when the file comes a byte at a time.
func checkChunks(t *testing.T, s string, chunk int) {
	t.Helper()
	got, ok, err := dataMappingChunks(strings.NewReader(s), 2, chunk)
	if err != nil {
		t.Fatal(err)
	}
	bytewise, bok, err := dataMappingChunks(iotest.OneByteReader(strings.NewReader(s)), 2, chunk)
	if err != nil {
		t.Fatal(err)
	}
	if bok != ok || ok && !maps.Equal(maps.Collect(bytewise.All()), maps.Collect(got.All())) {
		t.Fatalf("chunk %d: %q read a byte at a time gives %v (cut %v), read whole %v (cut %v)", chunk, s,
			maps.Collect(bytewise.All()), bok, maps.Collect(got.All()), ok)
	}
	if !ok {
		return // read whole
	}
	want, err := dataMappingWhole("dm.yaml", []byte(s))
	if err != nil {
		t.Fatalf("chunk %d: the pieces of %q read %v, the whole fails: %v", chunk, s, maps.Collect(got.All()), err)
	}
	if g, w := maps.Collect(got.All()), maps.Collect(want.All()); !maps.Equal(g, w) {
		t.Fatalf("chunk %d: the pieces of %q read %v, the whole %v", chunk, s, g, w)
	}
}

// plainPairsSeeds are pieces on both sides of what plainPairs reads.
var plainPairsSeeds = []string{
	"a: b\n", "a: b", "? a\n: b\n", "? a\n: b", "a: b\n? c\n: d\ne: f\n",
	"Module.layers.0.Linear.forward.0.input.0: Module.decoder.layers.0.linear_fc1.ColumnParallelLinear.forward.0.input.0\n",
	"a-b/c.d_e: 1.5\n_: 0\n1: 2\ntrue: null\nyes: no\nx: 0x1F\n",
	"a:b\n", "a: b \n", "a: b\n\n", "a: b\n c\n", "a: b #c\n", "a: b\n? c\n:d\n", "?a\n: b\n",
	"? a\n:\n", "? a: b\n", "a: b:c\n", "a: b: c\n", "a: b\r\n", "a: -b\n", "a:  b\n", "a: b\n  c: d\n",
	"? a\n  b\n: c\n", "? a\n: b\n c\n", "a: b\n...\n", "a: b\n---\nc: d\n", "\ufeffa: b\n", "a: b\n# c\n",
	"a: b\n: c\n", "? a\n? b\n: c\n", "a: b c: d\n", "a: b!c: d\n", "a: b\n-c: d\n", "a.: b.\n", "a: b\nc: d\na: e\n",
}

// FuzzPlainPairs: what plainPairs reads, yaml.v3 reads as the same pairs.
func FuzzPlainPairs(f *testing.F) {
	for _, s := range plainPairsSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkPlainPairs(t, s) })
}

// checkPlainPairs fails t where plainPairs reads s and yaml.v3 does not
// read it as the same pairs.
func checkPlainPairs(t *testing.T, s string) {
	t.Helper()
	got, ok := plainPairs([]byte(s), nil)
	if !ok {
		return
	}
	want, wok := yamlPiece([]byte(s))
	if !wok || !slices.Equal(got, want) {
		t.Fatalf("%q: plainPairs reads %q, yaml.v3 %q (%v)", s, got, want, wok)
	}
}

// TestPlainPairs: the lines msprobe writes are read without yaml.v3, as
// yaml.v3 reads them; every other seed goes to yaml.v3; a simple key is
// read up to yaml.v3's limit.
func TestPlainPairs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		text string
		want [][2]string // nil: for yaml.v3
	}{
		{"a: b\n", [][2]string{{"a", "b"}}},
		{"a: b", [][2]string{{"a", "b"}}},
		{"? a\n: b", [][2]string{{"a", "b"}}},
		{"a: b\n? c\n: d\ne: f\n", [][2]string{{"a", "b"}, {"c", "d"}, {"e", "f"}}},
		{"a-b/c.d_e: 1.5\n_: 0\ntrue: null\n", [][2]string{{"a-b/c.d_e", "1.5"}, {"_", "0"}, {"true", "null"}}},
		{"a: b\nc: d\na: e\n", [][2]string{{"a", "b"}, {"c", "d"}, {"a", "e"}}},
		{"", nil}, {"a:b\n", nil}, {"a: b \n", nil}, {"a: b\n\n", nil}, {"a: b\n c\n", nil}, {"a: b #c\n", nil},
		{"? a\n:\n", nil}, {"a: b: c\n", nil}, {"a: b\r\n", nil}, {"a: -b\n", nil}, {"a:  b\n", nil},
		{"? a\n: b\n c\n", nil}, {"a: b\n...\n", nil}, {"\ufeffa: b\n", nil}, {"a: b\n# c\n", nil},
		{"a: b c: d\n", nil}, {"a: b!c: d\n", nil}, {"a: 'b'\n", nil}, {"a: \"b\"\n", nil}, {"a: &x b\n", nil}, {"a: !!str b\n", nil}, {"a: [b]\n", nil},
		{strings.Repeat("k", simpleKeyLimit) + ": v\n", [][2]string{{strings.Repeat("k", simpleKeyLimit), "v"}}},
		{strings.Repeat("k", simpleKeyLimit+1) + ": v\n", nil},
		{"? " + strings.Repeat("k", 2000) + "\n: v\n", [][2]string{{strings.Repeat("k", 2000), "v"}}},
	} {
		got, ok := plainPairs([]byte(tc.text), nil)
		if ok != (tc.want != nil) || !slices.Equal(got, tc.want) {
			t.Errorf("%.40q: plainPairs %q (%v), want %q", tc.text, got, ok, tc.want)
		}
		checkPlainPairs(t, tc.text)
	}
	for _, s := range plainPairsSeeds {
		checkPlainPairs(t, s)
	}
	for _, n := range []int{simpleKeyLimit - 1, simpleKeyLimit, simpleKeyLimit + 1} {
		checkPlainPairs(t, "a: b\n"+strings.Repeat("k", n)+": v\n")
	}
	// the data mappings of testdata (msprobe's, layermap's), whole and
	// cut into pieces of a pair or more
	for _, path := range testDataMappings(t) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := plainPairs(b, nil); !ok {
			t.Errorf("%s: not read without yaml.v3", path)
		}
		checkPlainPairs(t, string(b))
		if _, err := cutPieces(bytes.NewReader(b), 1, nil, func(p []byte) bool {
			checkPlainPairs(t, string(p))
			return true
		}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDataMappingChunks: every seed at every piece size reads as the
// whole does, and a large data mapping as msprobe writes it is read in
// pieces, with its repeated key's last value.
func TestDataMappingChunks(t *testing.T) {
	t.Parallel()
	for _, s := range dmChunkSeeds {
		for chunk := 1; chunk <= len(s); chunk++ {
			checkChunks(t, s, chunk)
		}
	}
	var b strings.Builder
	for i := range 25000 {
		fmt.Fprintf(&b, "Module.layers.%d.Linear.forward.0.input.0: Module.decoder.layers.%d.Linear.forward.0.input.0\n", i, i)
	}
	b.WriteString("Module.layers.0.Linear.forward.0.input.0: last\n")
	got, ok, err := dataMappingChunks(strings.NewReader(b.String()), 2, 1<<16)
	if !ok || err != nil {
		t.Fatal("a large data mapping was not read in pieces")
	}
	first, _ := got.Lookup("Module.layers.0.Linear.forward.0.input.0")
	last, _ := got.Lookup("Module.layers.24999.Linear.forward.0.input.0")
	if got.Len() != 25000 || first != "last" || last != "Module.decoder.layers.24999.Linear.forward.0.input.0" {
		t.Errorf("%d pairs, first %q, last %q", got.Len(), first, last)
	}
	// every pair, the pieces' bytes filled again as they go
	whole, err := dataMappingWhole("dm.yaml", []byte(b.String()))
	if err != nil || !maps.Equal(maps.Collect(got.All()), maps.Collect(whole.All())) {
		t.Errorf("the pieces' pairs are not the whole's (%v)", err)
	}
	// a read error ends the reading, whatever piece it comes in
	errRead := errors.New("read error")
	for _, at := range []int{0, 1 << 15, 1 << 17, b.Len()} {
		r := io.MultiReader(strings.NewReader(b.String()[:at]), iotest.ErrReader(errRead))
		if _, ok, err := dataMappingChunks(r, 2, 1<<16); ok || !errors.Is(err, errRead) {
			t.Errorf("read error after %d bytes: cut %v, error %v", at, ok, err)
		}
	}
	// through LoadDataMapping: the same pairs, in pieces, and read again
	// whole where the last piece may not be read alone (a document end)
	for _, text := range []string{b.String(), b.String() + "...\n"} {
		m, err := LoadDataMapping(testkit.WriteFile(t, t.TempDir(), "dm.yaml", text))
		if err != nil || !maps.Equal(maps.Collect(m.All()), maps.Collect(got.All())) {
			t.Errorf("LoadDataMapping: %d pairs, %v; want the pieces' %d", m.Len(), err, got.Len())
		}
	}
}

// BenchmarkLoadDataMapping reads a data mapping of 100,000 pairs as
// msprobe writes one (about 10 MB): "pieces" as LoadDataMapping does,
// "whole" as one yaml.v3 document.
func BenchmarkLoadDataMapping(b *testing.B) {
	var sb strings.Builder
	for i := range 100_000 {
		fmt.Fprintf(&sb, "Module.module.language_model.layers.%d.mlp.down_proj.Linear.forward.%d.input.0: Module.0.module.module.text_decoder.decoder.layers.%d.mlp.linear_fc2.RowParallelLinear.forward.%d.input.0\n", i%36, i/36, i%36, i/36)
	}
	data := []byte(sb.String())
	p := testkit.WriteFile(b, b.TempDir(), "dm.yaml", sb.String())
	b.Run("pieces", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if _, err := LoadDataMapping(p); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("whole", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if _, err := dataMappingWhole(p, data); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestDataMappingWholeErrors: the whole reading names the line of the
// first pair that is not two scalars, and what it found.
func TestDataMappingWholeErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ text, want string }{
		{"a: b\nc: d\ne: [f]\n", `dm.yaml:3: expected "npu_row: bench_row", found a list`},
		{"a: b\n[c]: d\ne: [f]\n", `dm.yaml:2: expected "npu_row: bench_row", found the string "d"`},
		{"a: b\nc: &x d\ne: *x\n", `dm.yaml:3: expected "npu_row: bench_row", found an alias`},
		{"- a\n", `dm.yaml:1: expected a mapping of NPU row names to bench row names, found a list`},
	} {
		if _, err := dataMappingWhole("dm.yaml", []byte(tc.text)); err == nil || err.Error() != tc.want {
			t.Errorf("%q: error %v, want %s", tc.text, err, tc.want)
		}
	}
}

// testDataMappings are the data mapping files of testdata.
func testDataMappings(t *testing.T) []string {
	t.Helper()
	var paths []string
	root := filepath.Join("..", "..", "testdata")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasPrefix(d.Name(), "data_mapping") && strings.HasSuffix(d.Name(), ".yaml") {
			paths = append(paths, path)
		}
		return err
	})
	if err != nil || len(paths) < 3 {
		t.Fatalf("data mappings of testdata: %v, %v", paths, err)
	}
	return paths
}
