package compare

import (
	"bytes"
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/layermap/layermap/mapping/resolve"
	"github.com/layermap/layermap/printparse/msprobe"
	"github.com/layermap/layermap/printparse/msprobe/dumpgen"
	"github.com/layermap/layermap/printparse/testkit"
)

// TestOffsets: every span comes back, across blocks, after huge
// entries (far steps), offsets going backwards and equal ones, at a
// block's start or within it.
func TestOffsets(t *testing.T) {
	for _, tc := range []struct {
		name string
		step func(i int) int64 // from the offset before
	}{
		{"even", func(i int) int64 { return int64(100 + i%7) }},
		{"huge entries", func(i int) int64 {
			if i%1500 == 7 || i%offBlock == 3 && i%7 == 0 {
				return 5 << 30
			}
			return int64(100 + i%7)
		}},
		{"step edges", func(i int) int64 { return int64(farStep - 1 + i%3) }},
		{"backwards", func(i int) int64 {
			if i%5 == 2 {
				return -300
			}
			return 1000
		}},
		{"equal", func(i int) int64 { return int64(i % 2) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var o offsets
			defer o.release()
			var want []int64
			off := int64(10)
			for i := range 5000 {
				off += tc.step(i)
				o.add(off)
				want = append(want, off)
			}
			if o.len() != len(want) {
				t.Fatalf("len %d, want %d", o.len(), len(want))
			}
			for i, w := range want {
				wend := int64(-1)
				if i+1 < len(want) {
					wend = want[i+1]
				}
				if off, end := o.span(i); off != w || end != wend {
					t.Fatalf("entry %d: span %d, %d; want %d, %d", i, off, end, w, wend)
				}
			}
		})
	}
}

func TestCandidates(t *testing.T) {
	for _, tc := range []struct {
		key   string
		debug bool
		want  []int
	}{
		{"Tensor.add.0.forward.input.0", false, []int{20}},
		{"Tensor.add.0.forward.output.1.2", false, []int{20}},
		{"Functional.linear.0.forward.kwargs.bias", false, []int{27}},
		{"Module.a.Linear.forward.0.parameters.weight", false, []int{25}},
		{"Module.output.Linear.forward.0.input.0", false, []int{6, 30}},
		{"Module.a.Linear.parameters_grad.weight", false, []int{31, 38}},
		{"Module.a.parameters_grad", false, []int{24}},
		{"Module.a.parameters_grad.", false, []int{24, 25}},
		{"Module.a.parameters_grad.input.0", false, []int{24, 30, 24}},
		{"Tensor.add.0.debug.x.y", false, []int{18, 20}},
		{"input.output.", false, []int{5}},
		{".input", false, []int{0}},
		{"a..input", false, []int{2}},
		{"Tensor.add.0.forward", false, nil},
		{"", false, nil},
		{"a.b.c", true, []int{1, 3, 5}},
		{"abc", true, []int{3}},
	} {
		if got := candidates(nil, tc.key, tc.debug); !slices.Equal(got, tc.want) {
			t.Errorf("candidates(%q, debug %v) = %v, want %v", tc.key, tc.debug, got, tc.want)
		}
	}
}

// candidatesByParts is candidates (debug off) part by part, the
// reference FuzzCandidates holds the word-at-a-time scan to.
func candidatesByParts(key string) []int {
	var dst []int
	for start := 0; start <= len(key); {
		end := start
		for end < len(key) && key[end] != '.' {
			end++
		}
		part := key[start:end]
		if start > 0 && (part == "input" || part == "kwargs" || part == "output" || part == "parameters") {
			dst = append(dst, start-1)
		}
		if part == "parameters_grad" || part == "debug" {
			dst = append(dst, end)
			if end < len(key) {
				next := end + 1
				for next < len(key) && key[next] != '.' {
					next++
				}
				dst = append(dst, next)
			}
		}
		start = end + 1
	}
	return dst
}

// TestCandidatesTail: the bytes after the last whole eight (loaded as
// the key's last eight, shifted) at every alignment, dots among them.
func TestCandidatesTail(t *testing.T) {
	for n := range 26 {
		for _, tail := range []string{".input", ".input.0", "..output", ".debug.x", ".parameters_grad.", ".\xae.input."} {
			key := strings.Repeat("a", n) + tail
			if got, want := candidates(nil, key, false), candidatesByParts(key); !slices.Equal(got, want) {
				t.Errorf("candidates(%q) = %v, by parts %v", key, got, want)
			}
		}
	}
}

func FuzzCandidates(f *testing.F) {
	for _, k := range []string{"Tensor.add.0.forward.input.0", "Module.a.parameters_grad.input.0", "a..input",
		".input", "input.output.", "Tensor.add.0.debug.x.y", "Module.model.layers.10.mlp.MLP.forward.0.output.0",
		"x.debug.", "debug.input.debug", "a\xae.input", ".......", "parameters_grad.parameters_grad.kwargs"} {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, key string) {
		if got, want := candidates(nil, key, false), candidatesByParts(key); !slices.Equal(got, want) {
			t.Fatalf("candidates(%q) = %v, by parts %v", key, got, want)
		}
	})
}

func TestTagTable(t *testing.T) {
	var tt tagTable
	tt.size(3000)
	for i := uint32(0); i < 10000; i++ {
		tt.insert(uint64(i%97)<<40|uint64(i)<<32, i) // many equal tags
	}
	for i := uint32(0); i < 10000; i += 37 {
		found := false
		tt.find(uint64(i%97)<<40|uint64(i)<<32, func(n uint32) bool {
			found = found || n == i
			return true
		})
		if !found {
			t.Fatalf("%d not found", i)
		}
	}
}

// TestCountRows: the bench entries no NPU row asked for are counted on
// several goroutines (forked readers) as one would count them.
func TestCountRows(t *testing.T) {
	var b bytes.Buffer
	if _, err := dumpgen.Write(&b, dumpgen.Options{Seed: 2, Layers: 40, Hidden: 64, MD5: true}); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "dump.json")
	os.WriteFile(p, b.Bytes(), 0o644)
	want, n := 0, 0
	h, err := msprobe.ScanFile(p, func(e *msprobe.Entry) error {
		want += len(e.Items)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	src, err := BenchFile(p).openBench(&Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.close()
	if err := src.skim(func(int, []byte, bool) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	var all []int32
	for i := range n {
		all = append(all, int32(i))
	}
	if len(all) < 1024 {
		t.Fatalf("only %d entries: one goroutine would count", len(all))
	}
	rows, md5, err := countRows(src, "bench", all)
	if err != nil || rows != want || md5 != h.MD5 {
		t.Errorf("%d rows, md5 %v, %v; want %d, %v", rows, md5, err, want, h.MD5)
	}

	// Entries that do not parse: the error is the first in file order,
	// however the goroutines took the batches.
	good := b.String()
	re := regexp.MustCompile(`"requires_grad": (true|false)`)
	at := re.FindAllStringIndex(good, -1)
	for _, bad := range [][2]int{{0, 1}, {5, len(at) / 3}, {len(at) / 2, len(at) - 1}, {len(at) - 2, len(at) - 1}} {
		text := good[:at[bad[1]][1]-1] + good[at[bad[1]][1]:] // "tru" or "fals"
		text = text[:at[bad[0]][1]-1] + text[at[bad[0]][1]:]
		p := filepath.Join(t.TempDir(), "dump.json")
		os.WriteFile(p, []byte(text), 0o644)
		src, err := BenchFile(p).openBench(&Config{})
		if err != nil {
			t.Fatal(err)
		}
		if err := src.skim(func(int, []byte, bool) error { return nil }); err != nil {
			t.Fatal(err)
		}
		var want error
		for _, i := range all {
			if _, err := src.rows(int(i)); err != nil {
				want = fmt.Errorf("bench: %w", err)
				break
			}
		}
		if want == nil {
			t.Fatalf("entries %v spoilt: no error", bad)
		}
		for range 10 {
			if _, _, err := countRows(src, "bench", all); err == nil || err.Error() != want.Error() {
				t.Errorf("entries %v spoilt: %v, want %v", bad, err, want)
				break
			}
		}
		src.close()
	}
}

// TestPartialRows: the matched rows of entries that left the cache come
// back as put, for short and long entries, across the table's growth and
// after an entry is put again.
func TestPartialRows(t *testing.T) {
	var p partialRows
	defer p.release()
	rng := rand.New(rand.NewPCG(1, 2))
	want := map[int32][]bool{}
	for range 20000 {
		i := int32(rng.IntN(50000))
		m, ok := want[i]
		if !ok {
			m = make([]bool, 1+rng.IntN(200))
		}
		m = slices.Clone(m)
		for r := range m {
			m[r] = m[r] || rng.IntN(3) == 0 // matches only grow
		}
		p.put(i, m)
		want[i] = m
	}
	for i, m := range want {
		got := make([]bool, len(m))
		if !p.get(i, got) || !slices.Equal(got, m) {
			t.Fatalf("entry %d: %v, want %v", i, got, m)
		}
	}
	for i := int32(50000); i < 50100; i++ {
		if p.get(i, make([]bool, 3)) {
			t.Fatalf("entry %d never put is found", i)
		}
	}
}

// TestKnownIndex: an index built from the entries a mapped compare read
// (resolve.Sides.Entries) finds every row key's bench rows as the one
// built by skimming the file does.
func TestKnownIndex(t *testing.T) {
	t.Parallel()
	r1 := testkit.Corpus(t, "msprobe/test/msprobe_test/mindspore_ut/compare/dump_file")
	qw := testkit.Corpus(t, "msprobe/golden/qwen25vl_llamafactory_vs_mindspeed_reverse_template")
	// rows named by their data_name (odd entries: indexed by row key)
	tensor := testkit.Tensor
	odd := testkit.DumpDir(t, t.TempDir(), "odd",
		`"Tensor.add.0.forward": {"input_args": [`+tensor("Tensor.add.0.forward.input.0.pt")+`], "output": [`+tensor("X.mul.1.forward.output.0.pt")+`]}, `+
			`"Tensor.add.1.forward": {"output": [`+tensor("Tensor.add.1.forward.output.0.pt")+`]}, `+
			`"Tensor.add.0.backward": {"input": [`+tensor("Y.0.backward.input.0.pt")+`]}`)
	sides, oddSeen := 0, false
	for _, dirs := range [][2]string{{r1 + "/mindspore_data", r1 + "/pytorch_data"}, {qw + "/npu/proc12360", qw + "/bench/proc12353"},
		{"../../testdata/demo/dumps/llamafactory", "../../testdata/demo/dumps/mindspeed-mm"}, {odd, odd}} {
		for _, readRows := range []bool{true, false} {
			s, err := resolve.ReadSides(dirs[0], dirs[1], readRows)
			if err != nil {
				t.Fatal(err)
			}
			npu, bench := s.Entries()
			for k, es := range []*resolve.Entries{npu, bench} {
				if es == nil {
					continue
				}
				sides++
				oddSeen = oddSeen || slices.Contains(es.Odd, true)
				path := filepath.Join(dirs[k], "dump.json")
				cfg := &Config{}
				skimmed, err := newBenchIndex(BenchFile(path), cfg, true)
				if err != nil {
					t.Fatal(err)
				}
				defer skimmed.close()
				known, err := newBenchIndex(&knownFile{path, es}, cfg, true)
				if err != nil {
					t.Fatal(err)
				}
				defer known.close()
				skimmed.reset(true)
				known.reset(true)
				if skimmed.n != known.n || skimmed.n == 0 {
					t.Fatalf("%s: %d entries known, %d skimmed", path, known.n, skimmed.n)
				}
				var keys []string
				for i := range skimmed.n {
					e, err := skimmed.entry(int32(i))
					if err != nil {
						t.Fatal(err)
					}
					if e == nil {
						continue
					}
					for r := range e.rows {
						keys = append(keys, e.rows[r].key)
					}
				}
				for _, key := range keys {
					want, err1 := skimmed.lookup(key, nil)
					got, err2 := known.lookup(key, nil)
					if err1 != nil || err2 != nil || !slices.Equal(got, want) || len(got) == 0 {
						t.Fatalf("%s: key %s: known index %v (%v), skimmed %v (%v)", path, key, got, err2, want, err1)
					}
				}
			}
		}
	}
	if sides < 8 || !oddSeen {
		t.Errorf("%d sides indexed from their entries, want at least 8; odd entries among them: %v", sides, oddSeen)
	}
}

// TestTagTableWrap: every number inserted is found under its tag, with
// exactly the others of that tag, in tables that grow and wrap around.
func TestTagTableWrap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 50 {
		var tt tagTable
		n := 1 + rng.IntN(2000)
		if round%2 == 0 {
			tt.size(n)
		}
		byTag := map[uint64][]uint32{}
		var hs []uint64
		for i := range uint32(n) {
			h := uint64(rng.IntN(1+round*4)) << 32
			if rng.IntN(3) == 0 {
				h = ^uint64(0) - uint64(rng.IntN(3))<<32 // homes at the table's end
			}
			h |= uint64(rng.Uint32()) // below the tag: ignored
			tt.insert(h, i)
			hs = append(hs, h)
			byTag[h>>32] = append(byTag[h>>32], i)
		}
		for i, h := range hs {
			var got []uint32
			tt.find(h, func(n uint32) bool { got = append(got, n); return true })
			slices.Sort(got)
			if want := byTag[h>>32]; !slices.Equal(got, want) {
				t.Fatalf("round %d: number %d: %v under its tag, want %v", round, i, got, want)
			}
		}
	}
}

// TestBenchIndexFind: find, trying the entries near the last one found
// first, gives what the table gives, entries sharing a key prefix among
// them.
func TestBenchIndexFind(t *testing.T) {
	var names []string
	for i := range 300 {
		names = append(names, fmt.Sprintf("Tensor.add.%d.forward", i))
		if i%7 == 3 {
			names = append(names, fmt.Sprintf("Tensor.add.%d.forward", i-1)) // shares a prefix
		}
		if i%11 == 5 {
			names = append(names, "NoSplit") // not indexed
		}
	}
	ix, err := newBenchIndex(namesSource(names...), &Config{}, false)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.close()
	collect := func(find func(fn func(uint32) bool)) []uint32 {
		var got []uint32
		find(func(n uint32) bool { got = append(got, n); return true })
		slices.Sort(got)
		return got
	}
	for i, name := range names {
		h := maphash.String(ix.seed, name)
		want := collect(func(fn func(uint32) bool) { ix.index.find(uint32(h>>32), fn) })
		if name != "NoSplit" && !slices.Contains(want, uint32(i)) {
			t.Fatalf("entry %d (%s) not in the table: %v", i, name, want)
		}
		for near := int32(max(0, i-6)); near <= int32(i+2); near++ {
			at := near
			got := collect(func(fn func(uint32) bool) { ix.find(h, &at, fn) })
			if !slices.Equal(got, want) {
				t.Fatalf("entry %d (%s) from %d: %v, table %v", i, name, near, got, want)
			}
		}
	}
	// Absent keys: the filter answers most, the table the rest; both
	// give what the table alone gives.
	for i := range 2000 {
		h := maphash.String(ix.seed, fmt.Sprintf("Tensor.mul.%d.forward", i))
		want := collect(func(fn func(uint32) bool) { ix.index.find(uint32(h>>32), fn) })
		at := int32(i % len(names))
		if got := collect(func(fn func(uint32) bool) { ix.find(h, &at, fn) }); !slices.Equal(got, want) {
			t.Fatalf("absent key %d: %v, table %v", i, got, want)
		}
	}
}

// TestTagFilter: the filter has every tag added (tags at either end of
// the tag range, equal bits, filters of one word) and few others.
func TestTagFilter(t *testing.T) {
	for _, tc := range []struct {
		n    int
		tags []uint32
	}{
		{0, nil},
		{1, []uint32{0}},
		{1, []uint32{^uint32(0)}},
		{3, []uint32{0, 1, ^uint32(0)}},
		{8, []uint32{0x3f, 0xfc0, 0x3f000, 0x3ffff, 1 << 31, 1<<31 - 1}},
		{20, []uint32{7, 7, 7, 0x80000007, 0xffffffc7}},
	} {
		f, free := newTagFilter(tc.n)
		defer free()
		for _, tag := range tc.tags {
			f.add(tag)
		}
		for _, tag := range tc.tags {
			if !f.has(tag) {
				t.Fatalf("n %d, tags %x: %x absent", tc.n, tc.tags, tag)
			}
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{1, 7, 100, 5000, 100000} {
		f, free := newTagFilter(n)
		defer free()
		added := map[uint32]bool{}
		for range n {
			tag := rng.Uint32()
			added[tag] = true
			f.add(tag)
		}
		for tag := range added {
			if !f.has(tag) {
				t.Fatalf("n %d: %x absent", n, tag)
			}
		}
		yes, probes := 0, 20000
		for range probes {
			if tag := rng.Uint32(); !added[tag] && f.has(tag) {
				yes++
			}
		}
		if n >= 100 && yes*10 > probes { // about 3% at 8 bits a tag
			t.Errorf("n %d: %d of %d absent tags pass the filter", n, yes, probes)
		}
	}
}

// FuzzTagFilter: a filter sized for any number of tags has every tag
// added.
func FuzzTagFilter(f *testing.F) {
	f.Add(uint16(0), []byte{})
	f.Add(uint16(1), []byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0})
	f.Add(uint16(500), []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})
	f.Fuzz(func(t *testing.T, n uint16, b []byte) {
		var tags []uint32
		for ; len(b) >= 4; b = b[4:] {
			tags = append(tags, uint32(b[0])|uint32(b[1])<<8|uint32(b[2])<<16|uint32(b[3])<<24)
		}
		filter, free := newTagFilter(int(n))
		defer free()
		for _, tag := range tags {
			filter.add(tag)
		}
		for _, tag := range tags {
			if !filter.has(tag) {
				t.Fatalf("n %d: %x absent", n, tag)
			}
		}
	})
}

// TestTagIndex: every number is found under its tag, with exactly the
// others of that tag, and the numbers left in the bitset are those no
// other indexed number shares a tag with: few and many numbers (31 to
// 14 bits of the tag in a slot), equal tags, tags that agree in the bits
// a slot keeps but not in the rest, homes at the table's end, numbers
// left out.
func TestTagIndex(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range []struct {
		name     string
		n        int
		tag      func(i int) uint32
		leaveOut int // every leaveOut-th number is not indexed (0: none)
	}{
		{"one", 1, func(int) uint32 { return 7 }, 0},
		{"distinct", 1000, func(i int) uint32 { return rng.Uint32() }, 0},
		{"few tags", 3000, func(i int) uint32 { return uint32(i%13) << 20 }, 0},
		{"same low bits", 2000, func(i int) uint32 { return uint32(i%50)<<24 | 0x5a }, 3},
		{"same high bits", 2000, func(i int) uint32 { return 0xabc<<20 | uint32(i%300) }, 0},
		{"table end", 700, func(i int) uint32 { return ^uint32(0) - uint32(i%5) }, 2},
		{"zero tag", 500, func(i int) uint32 { return uint32(i % 2) }, 0},
		{"many numbers", 1 << 17, func(i int) uint32 { return uint32(i/3) * 2654435761 }, 5}, // (threes, spread)
	} {
		t.Run(c.name, func(t *testing.T) {
			tags := make([]uint32, c.n)
			in := make(bitset, (c.n+63)/64)
			byTag := map[uint32][]uint32{}
			count := 0
			for i := range c.n {
				tags[i] = c.tag(i)
				if c.leaveOut != 0 && i%c.leaveOut == 0 {
					continue
				}
				in.set(int32(i))
				byTag[tags[i]] = append(byTag[tags[i]], uint32(i))
				count++
			}
			ti := newTagIndex(tags, count, in)
			defer ti.release()
			for i := range c.n {
				var got []uint32
				ti.find(tags[i], func(n uint32) bool { got = append(got, n); return true })
				slices.Sort(got)
				want := byTag[tags[i]]
				if !slices.Equal(got, want) {
					t.Fatalf("tag %#x (number %d): %v, want %v", tags[i], i, got, want)
				}
				if lone := in.get(int32(i)); lone != (len(want) == 1 && want[0] == uint32(i)) {
					t.Fatalf("number %d: lone %v with %v under its tag", i, lone, want)
				}
			}
			// fn returning false stops the search
			for tag, want := range byTag {
				if len(want) < 2 {
					continue
				}
				calls := 0
				ti.find(tag, func(uint32) bool { calls++; return false })
				if calls != 1 {
					t.Fatalf("tag %#x: %d calls after false", tag, calls)
				}
				break
			}
		})
	}
}

// TestRenumCalls: every entry added gives its call back and no other
// entry gives one: none, the first and last entries, whole words, gaps of
// many words, word edges.
func TestRenumCalls(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, tc := range []struct {
		name string
		n    int
		in   func(i int) bool
	}{
		{"none", 300, func(int) bool { return false }},
		{"first", 300, func(i int) bool { return i == 0 }},
		{"last", 300, func(i int) bool { return i == 299 }},
		{"all", 1000, func(int) bool { return true }},
		{"word edges", 1000, func(i int) bool { return i%64 == 0 || i%64 == 63 }},
		{"gaps", 20000, func(i int) bool { return i%5000 < 3 }},
		{"random", 5000, func(int) bool { return rng.IntN(3) == 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r renumCalls
			defer r.release()
			want := map[int]int{}
			for i := range tc.n {
				if tc.in(i) {
					want[i] = rng.IntN(1 << 20)
					r.add(i, want[i])
				}
			}
			for i := range tc.n + 130 {
				call, ok := r.call(i)
				if w, in := want[i]; ok != in || call != w {
					t.Fatalf("entry %d: call %d, %v; want %d, %v", i, call, ok, w, in)
				}
			}
		})
	}
}

// TestBenchPlanOfItsFile: the plan of a bench file that repeats keys is
// not applied to another dump.json opened with the same Config (a
// tensor-parallel sibling rank's): that file is indexed and read as it
// stands.
func TestBenchPlanOfItsFile(t *testing.T) {
	dir := t.TempDir()
	body := func(v float64, pad int) string {
		return fmt.Sprintf(`{%s"output": [{"type": "torch.Tensor", "dtype": "torch.float32", "shape": [4], "Max": %v, "Min": 0.0, "Mean": 0.5, "Norm": 1.0, "requires_grad": false}]}`,
			strings.Repeat(" ", pad), v)
	}
	write := func(name string, members ...string) string {
		p := filepath.Join(dir, name, "dump.json")
		os.MkdirAll(filepath.Dir(p), 0o755)
		data := `{"task": "statistics", "level": "mix", "framework": "pytorch", "dump_data_dir": null, "data": {` + strings.Join(members, ",\n") + "}}\n"
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a, b := `"Module.a.Linear.forward.0": `, `"Module.b.Linear.forward.0": `
	rank0 := write("rank0", a+body(1, 0), b+body(2, 0), a+body(3, 200))
	rank1 := write("rank1", a+body(4, 0), b+body(5, 0))
	plan, err := msprobe.FindRepeats(rank0)
	if err != nil || plan == nil {
		t.Fatalf("FindRepeats = %v, %v", plan, err)
	}
	cfg := &Config{Mode: Statistics, BenchRepeats: plan}
	for _, c := range []struct {
		path string
		max  []float64
	}{{rank0, []float64{3, 2}}, {rank1, []float64{4, 5}}} {
		ix, err := newBenchIndex(BenchFile(c.path), cfg, true)
		if err != nil {
			t.Fatalf("%s: %v", c.path, err)
		}
		if ix.n != len(c.max) {
			t.Errorf("%s: %d entries, want %d", c.path, ix.n, len(c.max))
		}
		ix.reset(false)
		for i, want := range c.max {
			e, err := ix.entry(int32(i))
			if err != nil || e == nil {
				t.Fatalf("%s: entry %d: %v", c.path, i, err)
			}
			if got := e.rows[0].it.Stats[0].Num; got != want {
				t.Errorf("%s: entry %d: Max %v, want %v", c.path, i, got, want)
			}
		}
		ix.close()
	}
}

// TestBenchPlanEnds: with a plan, an entry's end is kept only where a
// read up to the next entry's offset would not do (a body moved to a
// repeat's place, a large member skipped between, the last entry), and
// every entry reads as Python's json.load has it: repeats first, between
// and last, small and large skipped bodies.
func TestBenchPlanEnds(t *testing.T) {
	body := func(v float64, pad int) string {
		return fmt.Sprintf(`{%s"output": [{"type": "torch.Tensor", "dtype": "torch.float32", "shape": [4], "Max": %v, "Min": 0.0, "Mean": 0.5, "Norm": 1.0, "requires_grad": false}]}`,
			strings.Repeat(" ", pad), v)
	}
	name := func(i int) string { return fmt.Sprintf(`"Module.m%d.Linear.forward.0": `, i) }
	for _, tc := range []struct {
		name    string
		members []int // entry numbers in file order, repeats given again
		pad     int   // of a repeat's body
		ends    int   // ends kept
	}{
		// the last entry's end, always
		{"no repeat", []int{0, 1, 2, 3}, 0, 1},
		// entry 0 (the moved body is far on), entry 1 (moved: the next
		// offset is before its end), the last
		{"repeat between, small", []int{0, 1, 2, 1, 3, 4}, 0, 3},
		// and entry 2, before the large skipped body
		{"repeat between, large", []int{0, 1, 2, 1, 3, 4}, 1000, 4},
		// entry 0's body moved to the next member: read in order
		{"repeat first", []int{0, 0, 1, 2}, 1000, 1},
		{"repeat last", []int{0, 1, 2, 0}, 1000, 2},
		{"many entries, one repeat", append(slices.Collect(func(yield func(int) bool) {
			for i := range 100 {
				yield(i)
			}
		}), 50), 0, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			var members []string
			want := map[int]float64{}
			for k, i := range tc.members {
				pad := 0
				if _, again := want[i]; again {
					pad = tc.pad
				}
				members = append(members, name(i)+body(float64(k), pad))
				want[i] = float64(k) // Python keeps the last body
			}
			p := filepath.Join(dir, "dump.json")
			data := `{"task": "statistics", "level": "mix", "framework": "pytorch", "dump_data_dir": null, "data": {` + strings.Join(members, ",\n") + "}}\n"
			if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
			plan, err := msprobe.FindRepeats(p)
			if err != nil {
				t.Fatal(err)
			}
			if plan == nil {
				plan = msprobe.NoRepeats(p)
			}
			ix, err := newBenchIndex(BenchFile(p), &Config{Mode: Statistics, BenchRepeats: plan}, true)
			if err != nil {
				t.Fatal(err)
			}
			defer ix.close()
			if got := len(ix.src.(*fileBench).ends); got != tc.ends {
				t.Errorf("%d ends kept, want %d", got, tc.ends)
			}
			ix.reset(false)
			for i := range ix.n {
				e, err := ix.entry(int32(i))
				if err != nil || e == nil {
					t.Fatalf("entry %d: %v", i, err)
				}
				var num int
				fmt.Sscanf(e.name, "Module.m%d.", &num)
				if got := e.rows[0].it.Stats[0].Num; got != want[num] {
					t.Errorf("entry %d (%s): Max %v, want %v", i, e.name, got, want[num])
				}
			}
		})
	}
}

// TestResetStopsPrefetch: a pass started while the last one's
// prefetcher runs stops it (its goroutine and bits go), and the new
// pass's prefetcher gives every entry.
func TestResetStopsPrefetch(t *testing.T) {
	var b bytes.Buffer
	if _, err := dumpgen.Write(&b, dumpgen.Options{Seed: 2, Layers: 40, Hidden: 64}); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "dump.json")
	os.WriteFile(p, b.Bytes(), 0o644)
	before := runtime.NumGoroutine()
	ix, err := newBenchIndex(BenchFile(p), &Config{Mode: Statistics}, true)
	if err != nil {
		t.Fatal(err)
	}
	if ix.n <= prefetchAhead {
		t.Fatalf("%d entries: the prefetcher would not block", ix.n)
	}
	ix.reset(true)
	ix.reset(true)
	for i := range int32(ix.n) {
		if _, err := ix.entry(i); err != nil {
			t.Fatal(err)
		}
	}
	ix.close()
	testkit.NoGoroutineLeft(t, before)
}

// TestWithSuffix: an entry's rows of a suffix, by index (many rows) or by
// scan (few), are the rows a scan finds, in order, whatever the repeats,
// and none of the rows not named after the entry; the pool's entries
// drop the index when recycled.
func TestWithSuffix(t *testing.T) {
	t.Parallel()
	rnd := rand.New(rand.NewPCG(5, 6))
	var pool entryPool
	for _, n := range []int{0, 1, 5, suffixIndexRows - 1, suffixIndexRows, suffixIndexRows + 1, 300, 3000} {
		e := pool.get(n)
		e.name = "Torch._foreach_add_.0.forward"
		suffixes := max(1, n/2) // about two rows a suffix
		for r := range e.rows {
			e.rows[r].it.Name = e.name + fmt.Sprintf(".input.%d", rnd.IntN(suffixes))
			if r%10 == 9 {
				e.rows[r].it.Name = fmt.Sprintf("x%d", r) // an odd entry's row, named by its data_name
			}
		}
		e.indexSuffixes()
		if indexed := e.bySuffix != nil; indexed != (n >= suffixIndexRows) {
			t.Errorf("%d rows: indexed %v", n, indexed)
		}
		for k := -1; k <= suffixes; k++ {
			suffix := fmt.Sprintf(".input.%d", k)
			var want, got []int32
			for r := range e.rows {
				if n := e.rows[r].it.Name; strings.HasPrefix(n, e.name) && n[len(e.name):] == suffix {
					want = append(want, int32(r))
				}
			}
			e.withSuffix(suffix, func(r int32) bool {
				got = append(got, r)
				return true
			})
			if !slices.Equal(got, want) {
				t.Fatalf("%d rows, %q: rows %v, want %v", n, suffix, got, want)
			}
			first := int32(-1)
			e.withSuffix(suffix, func(r int32) bool {
				first = r
				return false
			})
			if len(want) > 0 && first != want[0] {
				t.Fatalf("%d rows, %q: stopped at %d, want %d", n, suffix, first, want[0])
			}
		}
		pool.put(e)
		if e.bySuffix != nil {
			t.Errorf("%d rows: a recycled entry keeps its index", n)
		}
	}
}
