package resolve

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/layermap/layermap/mapping"
	"github.com/layermap/layermap/printparse"
	"github.com/layermap/layermap/printparse/msprobe"
	"github.com/layermap/layermap/printparse/testkit"
)

// R1: msprobe's test/msprobe_test/mindspore_ut/compare/test_layer_mapping.py
// (test_generate_api_mapping_by_layer_mapping_then_pass), same table in
// msprobe-layer-mapping-detail.md §7.6.
var r1API = []NamePair{
	{"Tensor.__add__.0.forward", "N/A"},
	{"Tensor.__bool__.1.forward", "N/A"},
	{"Tensor.__add__.1.forward", "Tensor.__add__.0.forward"},
	{"Mint.logical_or.0.forward", "Tensor.__or__.0.forward"},
	{"Distributed.all_reduce.0.forward", "Distributed.all_reduce.0.forward"},
	{"Cell.network_with_loss.module.language_model.embedding.word_embeddings.VocabParallelEmbedding.forward.0", "Module.module.module.language_model.embedding.word_embeddings.VocabParallelEmbedding.forward.0"},
	{"Primitive.norm.RmsNorm.0.forward", "NPU.npu_rms_norm.0.forward"},
	{"Cell.network_with_loss.module.language_model.encoder.layers.0.ParallelTransformerLayer.forward.0", "Module.module.module.language_model.encoder.layers.0.ParallelTransformerLayer.forward.0"},
	{"Cell.network_with_loss.module.language_model.encoder.layers.0.input_norm.FusedRMSNorm.backward.0", "N/A"},
	{"Cell.network_with_loss.module.language_model.encoder.layers.0.attention.ParallelAttention.forward.0", "Module.module.module.language_model.encoder.layers.0.self_attention.ParallelAttention.forward.0"},
	{"Mint.cos.0.forward", "Torch.cos.0.forward"},
	{"Functional.flash_attention_score.0.forward", "NPU.npu_fusion_attention.0.forward"},
	{"Functional.flash_attention_score.0.backward", "NPU.npu_fusion_attention.0.backward"},
}

func TestGenerateAPIMappingParity(t *testing.T) {
	r1 := testkit.Corpus(t, "msprobe/test/msprobe_test/mindspore_ut/compare/dump_file")
	r2 := testkit.Corpus(t, "msprobe/test/msprobe_test/resources/layer_mapping")
	qw := testkit.Corpus(t, "msprobe/golden/qwen25vl_llamafactory_vs_mindspeed_reverse_template")
	tests := []struct {
		name       string
		yaml       string // "" = bare -lm (no rules)
		npu, bench string
		want       []NamePair
		wantGolden string
		onlyNonNA  bool
		wantNonNA  []NamePair
	}{
		{name: "R1 mindspore_ut dump_file", yaml: r1 + "/layer_mapping.yaml", npu: r1 + "/mindspore_data", bench: r1 + "/pytorch_data", want: r1API},
		// R2: test_common_layer_mapping.py: one entry per side.
		{name: "R2 resources/layer_mapping", yaml: r2 + "/layer_mapping.yaml", npu: r2 + "/mindspore", bench: r2 + "/pytorch",
			want: []NamePair{{"Cell.network_with_loss.module.language_model.embedding.word_embeddings.VocabParallelEmbedding.forward.0",
				"Module.module.module.language_model.embedding.word_embeddings.VocabParallelEmbedding.forward.0"}}},
		// R4 (detail §14): bare -lm keeps only __add__.1 -> __add__.0.
		{name: "R4 bare -lm", npu: r1 + "/mindspore_data", bench: r1 + "/pytorch_data", onlyNonNA: true,
			wantNonNA: []NamePair{{"Tensor.__add__.1.forward", "Tensor.__add__.0.forward"}}},
		// R4: the YAML with the sides swapped (PT as NPU).
		{name: "R4 reversed", yaml: r1 + "/layer_mapping.yaml", npu: r1 + "/pytorch_data", bench: r1 + "/mindspore_data", onlyNonNA: true,
			wantNonNA: []NamePair{{"Tensor.__add__.0.forward", "Tensor.__add__.1.forward"}}},
		// msprobe's own generate_api_mapping_by_layer_mapping output (PROVENANCE.md).
		{name: "qwen25vl reverse template", yaml: qw + "/layer_mapping.yaml", npu: qw + "/npu/proc12360", bench: qw + "/bench/proc12353",
			wantGolden: qw + "/output/api_mapping.yaml"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var m *mapping.Mapping
			if tc.yaml != "" {
				m = mustLoad(t, tc.yaml)
			}
			got, err := GenerateAPIMapping(m, tc.npu, tc.bench)
			if err != nil {
				t.Fatal(err)
			}
			want := tc.want
			if tc.wantGolden != "" {
				want = readPairs(t, tc.wantGolden)
			}
			if tc.onlyNonNA {
				var nonNA []NamePair
				for _, p := range got {
					if p.Bench != NA {
						nonNA = append(nonNA, p)
					}
				}
				got, want = nonNA, tc.wantNonNA
			}
			diffPairs(t, got, want)
		})
	}
}

// R1 data mapping: the 46 pairs asserted in msprobe's test_layer_mapping.py
// (test_generate_data_mapping_by_layer_mapping_then_pass), copied to
// testdata/r1_data_mapping.yaml; the other cases are msprobe's own output
// files in the corpus (PROVENANCE.md).
func TestGenerateDataMappingParity(t *testing.T) {
	r1 := testkit.Corpus(t, "msprobe/test/msprobe_test/mindspore_ut/compare/dump_file")
	r2 := testkit.Corpus(t, "msprobe/test/msprobe_test/resources/layer_mapping")
	qw := testkit.Corpus(t, "msprobe/golden/qwen25vl_llamafactory_vs_mindspeed_reverse_template")
	tests := []struct {
		name, yaml, npu, bench, want string
		unordered                    bool
	}{
		{"R1", r1 + "/layer_mapping.yaml", r1 + "/mindspore_data", r1 + "/pytorch_data", "testdata/r1_data_mapping.yaml", true},
		{"layer_mapping_ms_vs_pt", r2 + "/layer_mapping.yaml", r2 + "/mindspore", r2 + "/pytorch",
			testkit.Corpus(t, "msprobe/golden/layer_mapping_ms_vs_pt/output/data_mapping_20261202120352.yaml"), false},
		{"qwen25vl reverse template", qw + "/layer_mapping.yaml", qw + "/npu/proc12360", qw + "/bench/proc12353",
			qw + "/output/data_mapping.yaml", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := GenerateDataMapping(mustLoad(t, tc.yaml), tc.npu, tc.bench)
			if err != nil {
				t.Fatal(err)
			}
			want := readPairs(t, tc.want)
			// the compact form compare uses: the same pairs, and Lookup
			// answers each NPU row with its bench row
			sides, err := ReadSides(tc.npu, tc.bench, true)
			if err != nil {
				t.Fatal(err)
			}
			npuNames := sides.NPU.Items()
			dm, err := sides.DataMapping(mustLoad(t, tc.yaml), nil)
			if err != nil {
				t.Fatal(err)
			}
			compact := dm.Pairs()
			var names []string
			for _, it := range npuNames {
				names = append(names, it.Name)
			}
			checkLookup(t, dm, sides.side[0].rows, names, compact)
			// the rows left to the compare: the deferred map, completed
			// as the dumps are read, gives the same pairs
			deferred := deferredPairs(t, tc.npu, tc.bench, tc.yaml, sides.side[0].rows, names)
			diffPairs(t, deferred, compact)
			if tc.unordered { // the python test compares dicts
				sortPairs(got)
				sortPairs(compact)
				sortPairs(want)
			}
			diffPairs(t, got, want)
			diffPairs(t, compact, want)
		})
	}
}

// deferredPairs reads a pair of dumps with the rows left to the compare,
// and gives the data mapping's pairs as EntryPairs gives them for the NPU
// dump's entries read in order, the bench rows read too; the map's
// Lookup is checked against them (npu: the NPU rows, names: the NPU
// entries).
func deferredPairs(t *testing.T, npuDir, benchDir, yaml string, npu *rowTable, names []string) []NamePair {
	t.Helper()
	sides, err := ReadSides(npuDir, benchDir, false)
	if err != nil {
		t.Fatal(err)
	}
	dm, err := sides.DataMapping(mustLoad(t, yaml), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !dm.Deferred() {
		t.Fatalf("%s: not a deferred map", npuDir)
	}
	if err := dm.Each(func(string, string, string, string) error { return nil }); err == nil {
		t.Error("Each of a deferred map gave no error")
	}
	paths := func(dir string) msprobe.Paths {
		in, err := ReadDumpInput(dir)
		if err != nil {
			t.Fatal(err)
		}
		return in.Paths
	}
	bench, _, _, err := scanRowTable(paths(benchDir).DumpJSON)
	if err != nil {
		t.Fatal(err)
	}
	benchNames := bench.done()
	return entryPairsOf(t, dm, paths(npuDir).DumpJSON, bench, benchNames, npu, names)
}

// entryPairsOf gives the pairs of a deferred map for the NPU
// dump's entries read in order, the bench rows from a table, and checks
// the map's Lookup against them.
func entryPairsOf(t *testing.T, dm *DataMap, npuDump string, bench *rowTable, benchNames []string, npu *rowTable, names []string) []NamePair {
	t.Helper()
	has := func(at int32, s string) (bool, error) {
		return slices.Contains(bench.rows(benchNames[at]), benchNames[at]+s), nil
	}
	var got []NamePair
	members := map[string]int{}
	if _, err := msprobe.ScanFile(npuDump, func(e *msprobe.Entry) error {
		var rows []string
		for _, it := range e.Items {
			rows = append(rows, it.Name)
		}
		members[e.Name] = e.Member
		return dm.EntryPairs(e.Name, e.Member, rows, has, func(n, ns, b, bs string) error {
			got = append(got, NamePair{NPU: n + ns, Bench: strings.Clone(b + bs)}) // b is read in place
			return nil
		})
	}); err != nil {
		t.Fatal(err)
	}
	checkLookupDeferred(t, dm, npu, names, members, got, has)
	return got
}

// checkLookupDeferred is checkLookup for a deferred map: EntryPair of
// each NPU row's entry (by its position, members) gives its bench entry,
// which has the row a pair names, and no row of the suffix for a row
// paired with NA (has: whether the bench entry at a position has a row
// with a suffix). Positions outside the NPU dump have no pair.
func checkLookupDeferred(t *testing.T, dm *DataMap, npu *rowTable, names []string, members map[string]int, pairs []NamePair, has func(at int32, suffix string) (bool, error)) {
	t.Helper()
	want := map[string]string{}
	for _, p := range pairs {
		want[p.NPU] = p.Bench
	}
	for _, i := range []int{-1, len(dm.later), len(dm.later) + 1} {
		if b, at, ok := dm.EntryPair(i); ok {
			t.Errorf("EntryPair(%d) of %d entries = %q, %d, true", i, len(dm.later), b, at)
		}
	}
	for _, e := range names {
		m, found := members[e]
		if !found {
			t.Fatalf("entry %q: not scanned", e)
		}
		for _, r := range npu.rows(e) {
			if _, _, ok := dm.Lookup(e, r); ok {
				t.Errorf("Lookup(%q, %q) of a deferred map found the row", e, r)
			}
			b, at, ok := "", int32(-1), false
			if strings.HasPrefix(r, e) { // the row's pair, as compare's mapRow asks
				b, at, ok = dm.EntryPair(m)
			}
			w, wok := want[r]
			if ok != wok {
				t.Errorf("EntryPair(%q) for row %q has the row %v, want %v", e, r, ok, wok)
				continue
			}
			if !ok {
				continue
			}
			s := r[len(e):]
			found := false
			if b != "" {
				found, _ = has(at, s)
			}
			if got := map[bool]string{true: b + s, false: NA}[found]; got != w {
				t.Errorf("EntryPair(%q) for row %q = %q at %d: the row's pair %q, want %q", e, r, b, at, got, w)
			}
		}
	}
}

// checkLookup checks that dm.Lookup gives every pair's bench row for its
// NPU row, and that rows without a pair are not in the mapping.
func checkLookup(t *testing.T, dm *DataMap, npu *rowTable, names []string, pairs []NamePair) {
	t.Helper()
	want := map[string]string{}
	for _, p := range pairs {
		want[p.NPU] = p.Bench
	}
	entries := map[string]bool{}
	for _, e := range names {
		entries[e] = true
	}
	for e := range entries {
		for _, r := range npu.rows(e) {
			b, bs, ok := dm.Lookup(e, r)
			b += bs
			w, wok := want[r]
			if b != w || ok != wok {
				t.Errorf("Lookup(%q, %q) = %q, %v; want %q, %v", e, r, b, ok, w, wok)
			}
		}
	}
}

// TestDataMapCompactGeneral: the per-entry data mapping gives the
// general algorithm's pairs, on regular names (the compact path) and on
// names where one entry's rows may be another's (the general path).
func TestDataMapCompactGeneral(t *testing.T) {
	entry := func(name string, rows ...string) *msprobe.Entry {
		e := &msprobe.Entry{Name: name}
		for _, r := range rows {
			e.Items = append(e.Items, msprobe.Item{Name: r, Entry: name})
		}
		return e
	}
	table := func(es ...*msprobe.Entry) *rowTable {
		t := newRowTable()
		for _, e := range es {
			t.add(e.Name, e)
		}
		t.done()
		return t
	}
	a, b, c := "Functional.a.0.forward", "Functional.b.0.forward", "Functional.c.0.forward"
	tests := []struct {
		name     string
		npu, bch []*msprobe.Entry
		api      []NamePair
		general  bool
	}{
		{"regular", []*msprobe.Entry{entry(a, a+".input.0", a+".input.1", a+".input.0", a+".output.0"), entry(b, b+".input.0", b+".output.0"), entry(c)},
			[]*msprobe.Entry{entry(b, b+".input.0", b+".output.1"), entry(c, c+".input.0")},
			[]NamePair{{a, b}, {b, NA}, {c, c}, {"", b}, {"Functional.none.0.forward", b}}, false},
		{"long lists", []*msprobe.Entry{entry(a, longRows(a, 40)...)}, []*msprobe.Entry{entry(b, longRows(b, 30)...)},
			[]NamePair{{a, b}}, false},
		{"entry extends another", []*msprobe.Entry{entry(a, a+".input.0", a+".input.0.x"), entry(a+".input.0", a+".input.0.x")},
			[]*msprobe.Entry{entry(b, b+".input.0.x")}, []NamePair{{a, b}, {a + ".input.0", c}}, true},
		{"unpaired entry extends a paired one", []*msprobe.Entry{entry(a, a+".input.0"), entry(a+".input.0", a+".input.0.x")},
			[]*msprobe.Entry{entry(b, b+".input.0")}, []NamePair{{a, b}}, false},
		{"raw row", []*msprobe.Entry{entry(a, "elsewhere.input.0", a+".output.0")}, []*msprobe.Entry{entry(b, b+".output.0")},
			[]NamePair{{a, b}}, true},
		{"raw bench row", []*msprobe.Entry{entry(a, a+".input.0")}, []*msprobe.Entry{entry(b, "x")}, []NamePair{{a, b}}, true},
		{"suffix without dot", []*msprobe.Entry{entry(a, a+"x.input.0")}, []*msprobe.Entry{entry(b, b+"x.input.0")}, []NamePair{{a, b}}, true},
		{"entry twice", []*msprobe.Entry{entry(a, a+".input.0")}, []*msprobe.Entry{entry(b, b+".input.0")}, []NamePair{{a, b}, {a, NA}}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			npu, bch := table(tc.npu...), table(tc.bch...)
			want := DataMapping(tc.api, npu.rows, bch.rows)
			var names []string
			for _, e := range tc.npu {
				names = append(names, e.Name)
			}
			// unknown (nil), or worked out over all NPU entries as
			// ReadSides does: the same data mapping
			all := func() bool { return msprobe.NamesOf(names).Extends() }
			for _, mayExtend := range []func() bool{nil, all} {
				dm := newDataMap(tc.api, npu, bch, mayExtend)
				if general := dm.full != nil; general != tc.general {
					t.Errorf("general path %v, want %v", general, tc.general)
				}
				got := dm.Pairs()
				diffPairs(t, got, want)
				if dm.Len() != len(want) {
					t.Errorf("Len %d, want %d", dm.Len(), len(want))
				}
				checkLookup(t, dm, npu, names, want)
			}
			// deferred, where the rows are regular (as the
			// skim the compare relies on finds them) and no name extends
			// another: the same pairs
			if npu.irregular || bch.irregular || all() {
				return
			}
			var benchNames []string
			for _, e := range tc.bch {
				benchNames = append(benchNames, e.Name)
			}
			npuNames, at := positionsOf(tc.api, benchNames)
			pe := newDeferredDataMap(msprobe.NamesOf(npuNames), msprobe.NamesOf(benchNames), at)
			if pe == nil {
				if tc.name == "regular" || tc.name == "long lists" {
					t.Error("no deferred map")
				}
				return
			}
			has := func(at int32, s string) (bool, error) {
				return slices.Contains(bch.rows(benchNames[at]), benchNames[at]+s), nil
			}
			members := map[string]int{}
			for i, n := range npuNames {
				members[n] = i
			}
			var got []NamePair
			for _, e := range tc.npu {
				var rows []string
				for _, it := range e.Items {
					rows = append(rows, it.Name)
				}
				m, ok := members[e.Name]
				if !ok {
					m = -1 // not in the api mapping
				}
				if err := pe.EntryPairs(e.Name, m, rows, has, func(n, ns, b, bs string) error {
					got = append(got, NamePair{NPU: n + ns, Bench: strings.Clone(b + bs)}) // b is read in place
					return nil
				}); err != nil {
					t.Fatal(err)
				}
			}
			diffPairs(t, got, want)
			checkLookupDeferred(t, pe, npu, names, members, want, has)
		})
	}
}

func longRows(entry string, n int) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("%s.input.%d", entry, i))
	}
	return out
}

func sortPairs(p []NamePair) {
	sort.Slice(p, func(i, j int) bool { return p[i].NPU < p[j].NPU })
}

// TestSidesTrees: the module trees built from what ReadSides read are
// LoadDumpDir's.
func TestSidesTrees(t *testing.T) {
	built := 0
	r1 := testkit.Corpus(t, "msprobe/test/msprobe_test/mindspore_ut/compare/dump_file")
	qw := testkit.Corpus(t, "msprobe/golden/qwen25vl_llamafactory_vs_mindspeed_reverse_template")
	for _, dirs := range [][2]string{{r1 + "/mindspore_data", r1 + "/pytorch_data"}, {qw + "/npu/proc12360", qw + "/bench/proc12353"},
		{"../../testdata/demo/dumps/llamafactory", "../../testdata/demo/dumps/mindspeed-mm"}} {
		for _, readRows := range []bool{true, false} {
			s, err := ReadSides(dirs[0], dirs[1], readRows)
			if err != nil {
				t.Fatal(err)
			}
			nt, bt, nerr, berr := s.Trees()
			for i, got := range []*printparse.Tree{nt, bt} {
				want, werr := printparse.LoadDumpDir(dirs[i])
				gerr := []error{nerr, berr}[i]
				if fmt.Sprint(gerr) != fmt.Sprint(werr) {
					t.Errorf("%s: error %v, want %v", dirs[i], gerr, werr)
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s: tree differs from LoadDumpDir's", dirs[i])
				}
				if got != nil && got.Root != nil && len(got.Root.Children) > 0 {
					built++
				}
			}
		}
	}
	if built < 8 {
		t.Errorf("%d trees with modules built, want at least 8", built)
	}
}

// TestReadSidesErrors: the sides are read at once, and the error reported
// is the NPU side's when both are bad, named by side.
func TestReadSidesErrors(t *testing.T) {
	t.Parallel()
	good := "../../testdata/demo/dumps/llamafactory"
	dir := t.TempDir()
	bad := filepath.Join(dir, "dump.json")
	if err := os.WriteFile(bad, []byte(`{"task": "statistics", "data": {`), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ npu, bench, want string }{
		{bad, good, "npu dump: "},
		{good, bad, "bench dump: "},
		{bad, bad, "npu dump: "},
		{good, filepath.Join(dir, "none"), "bench dump: "},
	}
	for _, tc := range tests {
		for _, readRows := range []bool{true, false} {
			_, err := ReadSides(tc.npu, tc.bench, readRows)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("ReadSides(%s, %s, %v) = %v, want an error starting %q", tc.npu, tc.bench, readRows, err, tc.want)
			}
		}
	}
}

// TestRowTableRepeats: a name read again (a "data" repeating keys) has
// the rows of its last entry, whether they start with the name or not.
func TestRowTableRepeats(t *testing.T) {
	t.Parallel()
	a, b := "Functional.a.0.forward", "Functional.b.0.forward"
	entry := func(name string, rows ...string) *msprobe.Entry {
		e := &msprobe.Entry{Name: name}
		for _, r := range rows {
			e.Items = append(e.Items, msprobe.Item{Name: r, Entry: name})
		}
		return e
	}
	tests := []struct {
		name    string
		entries []*msprobe.Entry
		want    map[string][]string
	}{
		{"once", []*msprobe.Entry{entry(a, a+".input.0", a+".output.0"), entry(b)},
			map[string][]string{a: {a + ".input.0", a + ".output.0"}, b: nil}},
		{"rows, then raw", []*msprobe.Entry{entry(a, a+".input.0"), entry(a, "x.input.0")},
			map[string][]string{a: {"x.input.0"}}},
		{"raw, then rows", []*msprobe.Entry{entry(a, "x.input.0"), entry(b, "y"), entry(a, a+".output.0")},
			map[string][]string{a: {a + ".output.0"}, b: {"y"}}},
		{"rows, raw, rows", []*msprobe.Entry{entry(a, a+".input.0"), entry(a, "x"), entry(a, a+".input.1", a+".input.1")},
			map[string][]string{a: {a + ".input.1"}}},
	}
	for _, tc := range tests {
		rt := newRowTable()
		var read []string
		for _, e := range tc.entries {
			rt.add(e.Name, e)
			read = append(read, e.Name)
		}
		if got := rt.done(); !slices.Equal(got, read) {
			t.Errorf("%s: done() = %q, want the names as read %q", tc.name, got, read)
		}
		for name, want := range tc.want {
			if got := rt.rows(name); !slices.Equal(got, want) {
				t.Errorf("%s: rows(%s) = %q, want %q", tc.name, name, got, want)
			}
		}
	}
}

// positionsOf is an api mapping by position (apiPositions): its NPU
// names, but "", and the position among bench of each one's bench
// entry, -1 for NA or a name bench does not have.
func positionsOf(api []NamePair, bench []string) (npu []string, at []int32) {
	for _, p := range api {
		if p.NPU == "" {
			continue
		}
		npu = append(npu, p.NPU)
		at = append(at, int32(slices.Index(bench, p.Bench)))
	}
	return npu, at
}

// TestSidesEntries: the entries ReadSides gives are the members Skim
// finds, at the same offsets, odd only where Skim says odd too and
// wherever a row is not msprobe.NormalRow's; none for a side with an entry
// msprobe skips.
func TestSidesEntries(t *testing.T) {
	t.Parallel()
	r1 := testkit.Corpus(t, "msprobe/test/msprobe_test/mindspore_ut/compare/dump_file")
	qw := testkit.Corpus(t, "msprobe/golden/qwen25vl_llamafactory_vs_mindspeed_reverse_template")
	dir, tensor := t.TempDir(), testkit.Tensor
	side := func(name, data string) string { return testkit.DumpDir(t, dir, name, data) }
	// rows named by their data_name: odd
	odd := side("odd", `"Tensor.add.0.forward": {"input_args": [`+tensor("Tensor.add.0.forward.input.0.pt")+`], "output": [`+tensor("X.mul.1.forward.output.0.pt")+`]}, `+
		`"Tensor.add.1.forward": {"output": [`+tensor("Tensor.add.1.forward.output.0.pt")+`]}`)
	checked, oddSeen := 0, false
	for _, dirs := range [][2]string{{r1 + "/mindspore_data", r1 + "/pytorch_data"}, {qw + "/npu/proc12360", qw + "/bench/proc12353"},
		{"../../testdata/demo/dumps/llamafactory", "../../testdata/demo/dumps/mindspeed-mm"}, {odd, odd}} {
		for _, readRows := range []bool{true, false} {
			s, err := ReadSides(dirs[0], dirs[1], readRows)
			if err != nil {
				t.Fatal(err)
			}
			npu, bench := s.Entries()
			for k, es := range []*Entries{npu, bench} {
				if es == nil {
					continue
				}
				path := filepath.Join(dirs[k], "dump.json")
				var want struct {
					Names   []string
					Offsets []int64
				}
				var skimOdd []bool
				if _, err := msprobe.Skim(path, func(e *msprobe.SkimEntry) error {
					want.Names = append(want.Names, string(e.Name))
					want.Offsets = append(want.Offsets, e.Offset)
					skimOdd = append(skimOdd, e.Odd)
					return nil
				}); err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(es.Names.Strings(), want.Names) || !reflect.DeepEqual(es.Offsets, want.Offsets) || len(es.Odd) != len(want.Names) {
					t.Errorf("%s: %d entries at offsets %v, Skim: %d at %v", path, es.Names.Len(), head64(es.Offsets), len(want.Names), head64(want.Offsets))
					continue
				}
				rows := s.side[k].rows
				if rows == nil { // left to the compare
					if rows, _, _, err = scanRowTable(path); err != nil {
						t.Fatal(err)
					}
					rows.done()
				}
				for i, name := range es.Names.Strings() {
					normal := true
					for _, r := range rows.rows(name) {
						normal = normal && msprobe.NormalRow(name, r)
					}
					if es.Odd[i] == normal || es.Odd[i] && !skimOdd[i] {
						t.Errorf("%s: %s odd %v, rows all normal %v, Skim odd %v", path, name, es.Odd[i], normal, skimOdd[i])
					}
					oddSeen = oddSeen || es.Odd[i]
				}
				checked++
			}
		}
	}
	if checked < 12 || !oddSeen {
		t.Errorf("entries of %d sides checked, want at least 12; odd entries among them: %v", checked, oddSeen)
	}

	// Where the scan's entries may differ from a skim's: none, so that
	// the compare skims; skimmed sides give the skim's.
	for name, data := range map[string]string{
		"skipped":  `"Tensor.weird": {}, "Tensor.add.0.forward": {}`,
		"repeated": `"Tensor.add.0.forward": {}, "Tensor.mul.0.forward": {}, "Tensor.add.0.forward": {"output": [` + tensor("Tensor.add.0.forward.output.0.pt") + `]}`,
	} {
		d := side(name, data)
		for _, readRows := range []bool{true, false} {
			s, err := ReadSides(d, d, readRows)
			if err != nil {
				t.Fatal(err)
			}
			npu, bench := s.Entries()
			if want := !readRows && name == "skipped"; (npu != nil) != want || (bench != nil) != want {
				t.Errorf("%s, rows read %v: entries %v, %v; want the skim's %v", name, readRows, npu, bench, want)
			}
		}
	}
}

func head64(s []int64) []int64 { return s[:min(len(s), 4)] }

// reversed is a reversed copy of s.
func reversed(s []string) []string {
	r := slices.Clone(s)
	slices.Reverse(r)
	return r
}

// TestAPIMappingUnpaired: the unpaired callback of APIMappingWith sees,
// in order, every NPU item the api mapping pairs with NA, at its
// position, as Item gives it (the callback's item is reused: what it
// keeps is copied).
func TestAPIMappingUnpaired(t *testing.T) {
	t.Parallel()
	r1 := testkit.Corpus(t, "msprobe/test/msprobe_test/mindspore_ut/compare/dump_file")
	qw := testkit.Corpus(t, "msprobe/golden/qwen25vl_llamafactory_vs_mindspeed_reverse_template")
	for _, tc := range []struct{ yaml, npu, bench string }{
		{r1 + "/layer_mapping.yaml", r1 + "/mindspore_data", r1 + "/pytorch_data"},
		{qw + "/layer_mapping.yaml", qw + "/npu/proc12360", qw + "/bench/proc12353"},
	} {
		m := mustLoad(t, tc.yaml)
		npu, err := TrieFromDump(tc.npu)
		if err != nil {
			t.Fatal(err)
		}
		bench, err := TrieFromDump(tc.bench)
		if err != nil {
			t.Fatal(err)
		}
		show := func(it *Item) string { return strings.Join([]string{it.Name, it.State, it.Type, it.FullScope}, " ") }
		var seen []string
		pairs := APIMappingWith(m, npu, bench, func(i int, it *Item, _ []*mapping.Rule) { seen = append(seen, fmt.Sprint(i, " ", show(it))) })
		var want []string
		for i, p := range pairs {
			if p.Bench == NA {
				want = append(want, fmt.Sprint(i, " ", show(npu.Item(i))))
			}
		}
		if len(want) == 0 || !slices.Equal(seen, want) {
			t.Errorf("%s: unpaired saw %d items, want the %d paired with NA:\n got %q\nwant %q", tc.npu, len(seen), len(want), head(seen, 4), head(want, 4))
		}
	}
}

// TestDeferredByPosition: a deferred map gives each NPU entry, by its
// position, its bench entry's name and position, without allocating;
// positions outside the NPU dump have none, and a map whose NPU names
// repeat one or miss a position is not made.
func TestDeferredByPosition(t *testing.T) {
	var npuNames, benchNames []string
	for i := range 2000 {
		npuNames = append(npuNames, fmt.Sprintf("Module.layers.%d.mlp.MLP.forward.%d", i%40, i/40))
		benchNames = append(benchNames, fmt.Sprintf("Module.decoder.layers.%d.mlp.MLP.forward.%d", i%40, i/40))
	}
	at := make([]int32, len(npuNames))
	for i := range at {
		at[i] = int32(len(at) - 1 - i)
		if i%7 == 0 {
			at[i] = -1 // paired with nothing
		}
	}
	d := newDeferredDataMap(msprobe.NamesOf(npuNames), msprobe.NamesOf(benchNames), at)
	if d == nil {
		t.Fatal("not deferred")
	}
	var buf []byte
	allocs := testing.AllocsPerRun(1, func() {
		for i := range npuNames {
			var pos int32
			var ok bool
			buf, pos, ok = d.AppendEntryPair(buf[:0], i)
			want := ""
			if at[i] >= 0 {
				want = benchNames[at[i]]
			}
			if !ok || pos != at[i] || string(buf) != want {
				t.Fatalf("entry %d: %q at %d, %v; want %q at %d", i, buf, pos, ok, want, at[i])
			}
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations, want none", allocs)
	}
	for _, i := range []int{-1, len(npuNames), 1 << 30} {
		if b, pos, ok := d.EntryPair(i); ok || b != "" || pos != -1 {
			t.Errorf("EntryPair(%d) = %q, %d, %v; want none", i, b, pos, ok)
		}
	}
	repeated := slices.Clone(npuNames)
	repeated[5] = repeated[4]
	if newDeferredDataMap(msprobe.NamesOf(repeated), msprobe.NamesOf(benchNames), at) != nil {
		t.Error("deferred map made over a repeated NPU name")
	}
	if newDeferredDataMap(msprobe.NamesOf(npuNames[1:]), msprobe.NamesOf(benchNames), at) != nil {
		t.Error("deferred map made over fewer NPU names than positions")
	}
	// as many distinct names as positions, one more name (a repeat)
	if newDeferredDataMap(msprobe.NamesOf(append(slices.Clone(npuNames), npuNames[0])), msprobe.NamesOf(benchNames), at) != nil {
		t.Error("deferred map made over more NPU names than positions")
	}
}
