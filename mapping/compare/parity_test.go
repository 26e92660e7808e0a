package compare

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/layermap/layermap/printparse/msprobe/dumpgen"
	"github.com/layermap/layermap/printparse/testkit"
)

// copyFile copies src into dir (used to drop stack.json from a fixture).
func copyFile(t *testing.T, src, dir string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, filepath.Base(src)), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

type parityCase struct {
	name     string
	target   string // relative to corpus/msprobe, or absolute
	golden   string
	want     string   // folder of expected files (relative to corpus/msprobe)
	wantOnly []string // expected file names in want (default: every .csv)
	opt      func(t *testing.T, o *Options)
}

func runParity(t *testing.T, c parityCase) {
	root := filepath.Join(testkit.Corpus(t, "msprobe"))
	abs := func(p string) string {
		if filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(root, p)
	}
	wantDir := abs(c.want)
	names := c.wantOnly
	if names == nil {
		m, _ := filepath.Glob(filepath.Join(wantDir, "*.csv"))
		for _, f := range m {
			names = append(names, filepath.Base(f))
		}
	}
	sort.Strings(names)
	if len(names) == 0 {
		t.Fatalf("no expected files in %s", wantDir)
	}
	out := t.TempDir()
	opt := Options{Target: abs(c.target), Golden: abs(c.golden), OutDir: out}
	tm := goldenTime(t, names[0])
	opt.Stamp = tm
	if c.opt != nil {
		c.opt(t, &opt)
	}
	rep, err := Run(opt)
	if err != nil {
		t.Fatal(err)
	}
	// The summary (counts, sources, first divergence) is kept as a golden
	// file; regenerate with -update and review the diff.
	for i := range rep.Health {
		rep.Health[i].Pos = strings.ReplaceAll(rep.Health[i].Pos, testkit.Root(t)+string(filepath.Separator), "")
	}
	for i := range rep.Ranks {
		for j, n := range rep.Ranks[i].Summary.SentNowhere {
			rep.Ranks[i].Summary.SentNowhere[j].Pos = strings.ReplaceAll(n.Pos, testkit.Root(t)+string(filepath.Separator), "")
		}
		rep.Ranks[i].Target, rep.Ranks[i].Golden = filepath.Base(rep.Ranks[i].Target), filepath.Base(rep.Ranks[i].Golden)
		for j, f := range rep.Ranks[i].Files {
			rep.Ranks[i].Files[j] = filepath.Base(f)
		}
	}
	sj, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	sj = append(sj, '\n')
	testkit.Golden(t, filepath.Join("testdata", c.name+".summary.json"), sj)
	for _, n := range names {
		want, err := os.ReadFile(filepath.Join(wantDir, n))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(out, n))
		if err != nil {
			ents, _ := os.ReadDir(out)
			var have []string
			for _, e := range ents {
				have = append(have, e.Name())
			}
			t.Fatalf("%s not written (have %v)", n, have)
		}
		diffCSV(t, n, got, want)
	}
}

func TestParity(t *testing.T) {
	for _, c := range parityCases(t) {
		t.Run(c.name, func(t *testing.T) { runParity(t, c) })
	}
}

// TestParityJoins: the goldens hold with every bench join: the whole bench
// side in memory, and the bench index with caches so small that parsed
// entries leave them and are parsed again; with the rows finished by the
// join itself or by workers, whatever the machine's CPUs choose; and with
// a layer mapping's data mapping made before the table from the rows it
// reads itself, as well as completed as the table's passes read them.
func TestParityJoins(t *testing.T) {
	joins := []struct {
		name string
		set  func(o *Options)
	}{
		{"full", func(o *Options) { o.fullBench = true }},
		{"cache 1", func(o *Options) { o.cache = 1 }},
		{"cache 16", func(o *Options) { o.cache = 16 }},
		{"inline rows", func(o *Options) { o.inline = true }},
		{"three workers", func(o *Options) { o.Workers = 3 }},
		{"rows read by the layer mapping", func(o *Options) { o.mapRows = true }},
	}
	for _, j := range joins {
		for _, c := range parityCases(t) {
			opt := c.opt
			c.opt = func(t *testing.T, o *Options) {
				if opt != nil {
					opt(t, o)
				}
				j.set(o)
			}
			t.Run(j.name+"/"+c.name, func(t *testing.T) { runParity(t, c) })
		}
	}
}

// TestShuffledBenchJoins: with the bench entries in a random order
// (dumpgen.Shuffle), the bench index, reading entries far apart alone
// (msprobe.EntryReader), writes the whole-bench join's files, byte for
// byte, on every golden pair of a dump.json a side but the fuzzy match's
// and the layer mapping's, whose answers follow the order. Where the
// bench side has no backward entry, the files are msprobe's goldens: its
// outer merge is keyed by name and ordered by the NPU rows, so the bench
// order shows only in the renumbering of backward calls (spec §3.2-3.3;
// none of these pairs repeats a bench key).
func TestShuffledBenchJoins(t *testing.T) {
	t.Parallel()
	root := testkit.Corpus(t, "msprobe")
	n, asGolden := 0, 0
	for _, c := range parityCases(t) {
		if strings.HasPrefix(c.name, "fuzzy") || strings.HasPrefix(c.name, "layer_mapping") {
			continue
		}
		target, golden := c.target, c.golden
		if !filepath.IsAbs(target) {
			target, golden = filepath.Join(root, target), filepath.Join(root, golden)
		}
		if filepath.Base(golden) != "dump.json" {
			continue // a folder of step or rank folders
		}
		n++
		b, err := os.ReadFile(golden)
		if err != nil {
			t.Fatal(err)
		}
		asMsprobe := !bytes.Contains(b, []byte("backward"))
		if asMsprobe {
			asGolden++
		}
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			shuffled := t.TempDir()
			if err := dumpgen.Shuffle(filepath.Dir(golden), shuffled, 3); err != nil {
				t.Fatal(err)
			}
			ents, err := os.ReadDir(filepath.Dir(golden))
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range ents {
				if e.Name() != "dump.json" {
					if err := os.Symlink(filepath.Join(filepath.Dir(golden), e.Name()), filepath.Join(shuffled, e.Name())); err != nil {
						t.Fatal(err)
					}
				}
			}
			var files [2]map[string][]byte
			for i, full := range []bool{false, true} {
				opt := Options{Target: target, Golden: filepath.Join(shuffled, "dump.json"), OutDir: t.TempDir(),
					Stamp: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), fullBench: full}
				if c.opt != nil {
					c.opt(t, &opt)
				}
				if _, err := Run(opt); err != nil {
					t.Fatal(err)
				}
				files[i] = testkit.ReadDir(t, opt.OutDir)
			}
			if len(files[0]) == 0 || len(files[0]) != len(files[1]) {
				t.Fatalf("files %d, the whole-bench join's %d", len(files[0]), len(files[1]))
			}
			for name, want := range files[1] {
				diffCSV(t, name, files[0][name], want)
			}
			if !asMsprobe {
				return
			}
			goldens, _ := filepath.Glob(filepath.Join(root, c.want, "*.csv"))
			var got []string
			for name := range files[0] {
				got = append(got, name)
			}
			sort.Strings(got)
			if len(goldens) != len(got) {
				t.Fatalf("%d tables, %d goldens", len(got), len(goldens))
			}
			for i, g := range goldens {
				want, err := os.ReadFile(g)
				if err != nil {
					t.Fatal(err)
				}
				diffCSV(t, got[i]+" (golden "+filepath.Base(g)+")", files[0][got[i]], want)
			}
		})
	}
	if asGolden < 10 {
		t.Errorf("%d golden pairs compared with the bench shuffled, want at least 10", asGolden)
	}
	if n < 10 {
		t.Errorf("%d golden pairs of a dump.json a side, want at least 10", n)
	}
}

// TestLargeEntries: entries of thousands of rows (an optimizer's foreach
// calls on lists of every parameter; a cat of many tensors), one of many
// rows named by their data_name (an odd entry), and a bench side lacking
// some of their rows write the same files through every
// join: the bench index, its rows written by the join in runs that fit
// the buffer or by workers, and the whole bench side in memory; the
// bench entries in the NPU side's order or in a random one.
func TestLargeEntries(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tensor := func(i int, off float64) string {
		return fmt.Sprintf(`{"type": "torch.Tensor", "dtype": "torch.float32", "shape": [%d, 128], "Max": %g, "Min": %g, "Mean": %g, "Norm": %g, "requires_grad": false}`,
			64+i%7, 1.5+float64(i%13)/7+off, -0.5-float64(i%11)/9, 0.01*float64(i%17)+off/10, 10+float64(i%19)+off)
	}
	side := func(off float64, lists int) string {
		var entries []string
		for call, op := range []string{"_foreach_mul_", "_foreach_add_", "cat"} {
			var args []string
			for l := range 2 {
				items := make([]string, lists)
				for i := range items {
					items[i] = tensor(l*lists+i, off)
				}
				args = append(args, "["+strings.Join(items, ",\n")+"]")
			}
			entries = append(entries, fmt.Sprintf(`"Torch.%s.%d.forward": {"input_args": [%s], "input_kwargs": {"alpha": {"type": "float", "value": 0.9}}, "output": [%s]}`,
				op, call, strings.Join(args, ", "), tensor(call, off)))
			for i := range 40 {
				entries = append(entries, fmt.Sprintf(`"Tensor.add.%d.forward": {"input_args": [%s, %s], "output": [%s]}`,
					call*40+i, tensor(i, off), tensor(i+1, off), tensor(i+2, off)))
			}
		}
		// an odd entry of many rows: named by their data_name, shorter
		// than the entry's name
		items := make([]string, 70)
		for i := range items {
			items[i] = strings.Replace(tensor(i, off), "{", fmt.Sprintf(`{"data_name": "x%d.pt", `, i), 1)
		}
		entries = append(entries, fmt.Sprintf(`"Torch.cat.9.forward": {"input_args": [[%s]], "output": []}`, strings.Join(items, ", ")))
		return strings.Join(entries, ",\n")
	}
	npu := filepath.Join(testkit.DumpDir(t, dir, "npu", side(0, 1500)), "dump.json")
	benchDir := testkit.DumpDir(t, dir, "bench", side(0.001, 1400)) // each list 100 tensors short
	shuffled := filepath.Join(dir, "shuffled")
	if err := dumpgen.Shuffle(benchDir, shuffled, 4); err != nil {
		t.Fatal(err)
	}
	for _, bench := range []string{filepath.Join(benchDir, "dump.json"), filepath.Join(shuffled, "dump.json")} {
		var files []map[string][]byte
		for _, set := range []func(o *Options){
			func(o *Options) { o.inline = true },
			func(o *Options) { o.Workers = 3 },
			func(o *Options) { o.fullBench = true },
		} {
			opt := Options{Target: npu, Golden: bench, OutDir: t.TempDir(), Stamp: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
			set(&opt)
			if _, err := Run(opt); err != nil {
				t.Fatal(err)
			}
			files = append(files, testkit.ReadDir(t, opt.OutDir))
		}
		for i, join := range []string{"inline", "three workers"} {
			if len(files[i]) != len(files[2]) {
				t.Fatalf("%s: %d files, the whole-bench join's %d", join, len(files[i]), len(files[2]))
			}
			for name, want := range files[2] {
				diffCSV(t, join+": "+name, files[i][name], want)
			}
		}
		for name, b := range files[2] {
			if rows := bytes.Count(b, []byte("\nTorch._foreach_mul_.0.forward.input.")); strings.HasSuffix(name, ".csv") && rows != 3001 {
				t.Errorf("%s: %d rows of the first foreach call, want 3001", name, rows)
			}
		}
	}
}

// TestParityUnderCollection: the goldens hold with a collection at every
// turn (GOGC 1, and runtime.GC in a loop beside the compare). Memory
// outside the heap (printparse/offheap) is unmapped when released, or
// when its owner is collected (offheap.Cleanup): an owner let go while
// its memory is still read makes the read fault here. Not parallel: the
// collector's settings are the process's.
func TestParityUnderCollection(t *testing.T) {
	if testing.Short() {
		t.Skip("compares under constant collection: seconds")
	}
	dir := t.TempDir()
	stressPair := [2]string{filepath.Join(dir, "npu"), filepath.Join(dir, "bench")}
	if err := dumpgen.WriteSyntheticPair(stressPair[0], stressPair[1], 8<<20, dumpgen.StatisticsPair); err != nil {
		t.Fatal(err)
	}
	stressWant := map[string]map[string][]byte{}
	for _, lm := range []string{"", qwenLayerMapping} {
		stressWant[lm] = compareFiles(t, stressPair, lm)
	}
	defer debug.SetGCPercent(debug.SetGCPercent(1))
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
				runtime.GC()
			}
		}
	}()
	defer func() {
		close(stop)
		<-done
	}()
	for _, c := range parityCases(t) {
		t.Run(c.name, func(t *testing.T) { runParity(t, c) })
	}
	// A generated pair large enough that the bench index, the entry
	// readers and the layer mapping's tables are all outside the heap:
	// the outputs are those of the compares run before the collections
	// began.
	for _, lm := range []string{"", qwenLayerMapping} {
		name := "generated"
		if lm != "" {
			name += " -lm"
		}
		t.Run(name, func(t *testing.T) {
			got := compareFiles(t, stressPair, lm)
			for f, want := range stressWant[lm] {
				if !bytes.Equal(got[f], want) {
					t.Errorf("%s differs from the compare without collections", f)
				}
			}
			if len(got) != len(stressWant[lm]) {
				t.Errorf("%d files written, want %d", len(got), len(stressWant[lm]))
			}
		})
	}
}

// compareFiles compares the pair of folders p with a fixed stamp (and
// the layer mapping lm, if any) and returns the files written.
func compareFiles(t *testing.T, p [2]string, lm string) map[string][]byte {
	t.Helper()
	out := t.TempDir()
	if _, err := Run(Options{Target: p[0], Golden: p[1], OutDir: out, LayerMappingFile: lm, Stamp: time.Unix(0, 0)}); err != nil {
		t.Fatal(err)
	}
	return testkit.ReadDir(t, out)
}

// parityCases are the msprobe goldens with how to run them.
func parityCases(t *testing.T) []parityCase {
	root := filepath.Join(testkit.Corpus(t, "msprobe"))
	qs := t.TempDir()
	copyFile(t, filepath.Join(root, "examples/quick_start/gpu_dump/step0/proc2016/dump.json"), filepath.Join(qs, "npu"))
	copyFile(t, filepath.Join(root, "examples/quick_start/gpu_dump/step1/proc2016/dump.json"), filepath.Join(qs, "bench"))
	tp := t.TempDir()
	tensorFixture(t, filepath.Join(root, "golden/synth_tensor_pt/npu"), filepath.Join(tp, "npu"))
	tensorFixture(t, filepath.Join(root, "golden/synth_tensor_pt/bench"), filepath.Join(tp, "bench"))
	os.Remove(filepath.Join(tp, "bench/dump_tensor_data/Tensor.mixed.0.forward.output.9.pt")) // deleted on purpose in the fixture
	layerMap := func(file string) func(t *testing.T, o *Options) {
		return func(t *testing.T, o *Options) { o.LayerMappingFile = filepath.Join(root, file) }
	}
	cases := []parityCase{
		{name: "layer_mapping", target: "golden/qwen25vl_llamafactory_vs_mindspeed_reverse_template/npu",
			golden: "golden/qwen25vl_llamafactory_vs_mindspeed_reverse_template/bench",
			want:   "golden/qwen25vl_llamafactory_vs_mindspeed_reverse_template/output",
			opt:    layerMap("golden/qwen25vl_llamafactory_vs_mindspeed_reverse_template/layer_mapping.yaml")},
		{name: "layer_mapping_ms_vs_pt", target: "test/msprobe_test/resources/layer_mapping/mindspore/dump.json",
			golden: "test/msprobe_test/resources/layer_mapping/pytorch/dump.json",
			want:   "golden/layer_mapping_ms_vs_pt/output",
			opt:    layerMap("test/msprobe_test/resources/layer_mapping/layer_mapping.yaml")},
		{name: "tensor", target: filepath.Join(tp, "npu/dump.json"), golden: filepath.Join(tp, "bench/dump.json"),
			want: "golden/synth_tensor_pt/output"},
		{name: "fuzzy_tensor", target: filepath.Join(tp, "npu/dump.json"), golden: filepath.Join(tp, "bench/dump.json"),
			want: "golden/synth_tensor_pt/output_fuzzy_match", opt: func(t *testing.T, o *Options) { o.Fuzzy = true }},
		{name: "statistics", target: "golden/synth_statistics/npu/dump.json", golden: "golden/synth_statistics/bench/dump.json",
			want: "golden/synth_statistics/output"},
		{name: "md5", target: "golden/synth_md5/npu/dump.json", golden: "golden/synth_md5/bench/dump.json",
			want: "golden/synth_md5/output"},
		{name: "quick_start", target: filepath.Join(qs, "npu/dump.json"), golden: filepath.Join(qs, "bench/dump.json"),
			want: "golden/quick_start_step0_vs_step1_nostack/output"},
		{name: "multirank", target: "golden/synth_multirank/npu/step0", golden: "golden/synth_multirank/bench/step0",
			want: "golden/synth_multirank/output"},
		{name: "data_mapping", target: "golden/qwen25vl_llamafactory_vs_mindspeed_reverse_template/npu",
			golden: "golden/qwen25vl_llamafactory_vs_mindspeed_reverse_template/bench",
			want:   "golden/qwen25vl_llamafactory_vs_mindspeed_reverse_template/output",
			opt: func(t *testing.T, o *Options) {
				o.DataMappingFile = filepath.Join(root, "golden/qwen25vl_llamafactory_vs_mindspeed_reverse_template/output/data_mapping.yaml")
			}},
	}
	// The pairs differential testing cut down: a case a folder.
	for _, g := range []struct{ dir, prefix string }{{"golden/column_effects", ""}, {"golden/edge_values", "edge_"}} {
		outs, _ := filepath.Glob(filepath.Join(root, g.dir, "*", "output"))
		if len(outs) == 0 {
			t.Fatalf("no goldens in %s", g.dir)
		}
		for _, out := range outs {
			name := filepath.Base(filepath.Dir(out))
			pair := filepath.Join(g.dir, name)
			cases = append(cases, parityCase{name: g.prefix + name, target: filepath.Join(pair, "npu", "dump.json"),
				golden: filepath.Join(pair, "bench", "dump.json"), want: filepath.Join(pair, "output")})
		}
	}
	return cases
}

// TestPatchedAsWrittenAgain: a table patched with the no-bench downcast
// (csvpatch.go) is the table a second pass writes, byte for byte, as CSV,
// as xlsx and as -da's JSON, and the patch saved the pass where the
// downcast applies.
func TestPatchedAsWrittenAgain(t *testing.T) {
	t.Parallel()
	// Beside the goldens: the first entry that differs holds a row without
	// bench data (its int input), which -da's search prints too: before
	// any communication op (its phase 1), after an all_reduce (phase 3),
	// and between two (phase 2).
	dir := t.TempDir()
	tensor := func(max, norm string) string {
		return `{"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2], "Max": ` + max + `, "Min": 0.5, "Mean": 1.25, "Norm": ` + norm + `, "requires_grad": false}`
	}
	flag := `"input_kwargs": {"inplace": {"type": "bool", "value": false}}`
	linear := `"Functional.linear.0.forward": {"input_args": [` + tensor("1.5", "2.0") + `, {"type": "int", "value": 3}], ` + flag +
		`, "output": [` + tensor("1.5", "20.0") + `]}, "Functional.relu.0.forward": {"input_args": [` + tensor("2", "3.5") + `], "output": [` + tensor("2.5", "3.5") + `]}`
	benchLinear := `"Functional.linear.0.forward": {"input_args": [` + tensor("1.5", "2.0") + `], ` + flag + `, "output": [` + tensor("1.5", "2.0") + `]}`
	ar := func(k string) string {
		return `"Distributed.all_reduce.` + k + `.forward": {"input_args": [` + tensor("1.0", "1.0") + `], "output": [` + tensor("1.0", "1.0") + `]}`
	}
	cases := parityCases(t)
	for _, c := range []struct{ name, before, after string }{
		{"int without bench", "", ""},
		{"int without bench after communication", ar("0") + ", ", ""},
		{"int without bench between communication ops", ar("0") + ", ", ", " + ar("1")},
	} {
		d := filepath.Join(dir, strconv.Itoa(len(cases)))
		cases = append(cases, parityCase{name: c.name, target: testkit.DumpDir(t, d, "npu", c.before+linear+c.after),
			golden: testkit.DumpDir(t, d, "bench", c.before+benchLinear+c.after)})
	}
	saved := 0
	for _, out := range []string{"csv", "xlsx", "-da"} {
		for _, c := range cases {
			var files [2]map[string][]byte
			var passes [2]int
			for k, again := range []bool{false, true} {
				dir := t.TempDir()
				opt := Options{Target: c.target, Golden: c.golden, OutDir: dir, XLSX: out == "xlsx", DiffAnalyze: out == "-da", writeAgain: again}
				root := testkit.Corpus(t, "msprobe")
				if !filepath.IsAbs(opt.Target) {
					opt.Target, opt.Golden = filepath.Join(root, opt.Target), filepath.Join(root, opt.Golden)
				}
				opt.Stamp = time.Date(2026, 12, 6, 10, 0, 0, 0, time.Local)
				if c.opt != nil {
					c.opt(t, &opt)
				}
				rep, err := Run(opt)
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range rep.Ranks {
					passes[k] += r.Summary.Passes
				}
				files[k] = testkit.ReadDir(t, dir)
			}
			if len(files[0]) == 0 || len(files[0]) != len(files[1]) {
				t.Fatalf("%s: %d files patched, %d written again", c.name, len(files[0]), len(files[1]))
			}
			for n, b := range files[1] {
				if !bytes.Equal(files[0][n], b) {
					t.Errorf("%s (%s): %s patched differs from %s written again", c.name, out, n, n)
				}
			}
			if passes[0] < passes[1] {
				saved++
			}
		}
	}
	if saved < 12 {
		t.Errorf("the patch saved a pass in %d cases, want the statistics golden and the three without bench as CSV, xlsx and -da", saved)
	}
}
