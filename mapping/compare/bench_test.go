package compare

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/layermap/layermap/printparse/msprobe"
	"github.com/layermap/layermap/printparse/msprobe/dumpgen"
	"github.com/layermap/layermap/printparse/testkit"
)

// Benchmarks of the whole compare on generated dump pairs.
//
// Pairs are generated once per test process into a temporary folder
// (LAYERMAP_BENCH_DIR keeps them between runs):
//   - gen: dumpgen's synthetic transformer (statistics, level mix, forward
//     and backward), bench perturbed by 1%; 64 MB per side by default;
//   - qwen25vl: the real Qwen2.5-VL dumps of testdata/demo/dumps (NPU
//     LLaMA-Factory, bench MindSpeed-MM) scaled by dumpgen.Scale to 32
//     layers per tower and as many forward passes as the size asks; 27 MB
//     per side by default (the size of the real pair); "-lm" runs
//     it with the layer mapping built into the templates (the mapped join),
//     "-dm" with the data mapping that layer mapping gives (msprobe's -dm),
//     "-da" writes msprobe's first-divergence JSON instead of the table
//     (in directory mode, msprobe's only one for -da: the pair linked as
//     rank0 of a step folder a side, rankFolders), "-shuffled" has the
//     bench entries in a random order (dumpgen.Shuffle: a bench dump
//     ordered otherwise than the NPU side); "-xlsx" writes the
//     table as xlsx (--xlsx), only for the sizes LAYERMAP_BENCH_XLSX
//     lists (default none: excelize's rows take ten times the compare,
//     and would swamp the build's profile);
//   - synthstats: msprobe's synthetic statistics fixture
//     (testdata/corpus/msprobe/golden/synth_statistics) scaled by
//     dumpgen.Scale: every value type msprobe dumps, NPU-only and
//     bench-only calls, most rows matched and the no-bench downcast
//     applying (the rows per byte of a real mix-level dump); 27 MB per
//     side by default;
//   - quickstart: msprobe's quick-start example, real ResNet50 dumps of
//     two training steps on one GPU (testdata/corpus/msprobe/examples/
//     quick_start), scaled by dumpgen.Scale: one framework a side, so
//     every row finds its bench row and is compared (the rows of a real
//     mix-level pair whose names all match); 27 MB per side by default;
//   - gen-md5: the gen pair in msprobe's md5 summary mode, the bench
//     side diverging from decoder layer 2 on (dumpgen.MD5Pair): the md5s
//     agree before and differ after, and the table compares them, its
//     statistics left out; 32 MB per side by default;
//   - gen-foreach: the gen pair with an optimizer step after every 32
//     layers (dumpgen.ForeachPair): foreach calls on lists of 288
//     parameters, entries of 576 to 864 rows; 64 MB per side by default;
//   - gen-fm: the gen pair with msprobe's fuzzy match (-fm), which pairs
//     the rows in order and reads the bench side as a stream; 64 MB per
//     side by default.
//
// LAYERMAP_BENCH_SIZES lists the sizes per side of gen (default "64M";
// e.g. "64M,256M,512M,1G"), LAYERMAP_BENCH_QWEN those of qwen25vl
// (default "27M"; "27M,216M" for the 8x memory check),
// LAYERMAP_BENCH_STATS those of synthstats (default "27M"),
// LAYERMAP_BENCH_QUICKSTART those of quickstart (default "27M") and
// LAYERMAP_BENCH_MD5 those of gen-md5 (default "32M"),
// LAYERMAP_BENCH_FOREACH those of gen-foreach (default "64M") and
// LAYERMAP_BENCH_FM those of gen-fm (default "64M"); "none" runs none
// of a kind ("27M,216M" in LAYERMAP_BENCH_XLSX for the xlsx memory
// check). Each iteration runs one compare in a child process (the test
// binary re-executed), as `layermap compare` would, and reports:
//   - MB/s: both dump.json files' bytes per second of wall time;
//   - cpu-MB/s: the same per second of user+system CPU time;
//   - peak-RSS-MB: the child's maximum resident set, as the child reads it
//     (testkit.PeakRSS);
//   - allocs/row: heap allocations (runtime.MemStats.Mallocs) per table row;
//   - best-MB/s: MB/s of the fastest iteration, which a shared machine's
//     passing load slows least (run with -benchtime 5x or more for it);
//   - tokenizer-%: best-MB/s as a percentage of the bare tokenizer's
//     (BenchmarkTokenizer) over the same files, its fastest of as many
//     runs, each just before one of the compare's: measured side by side,
//     the ratio holds while the machine's load changes.
//
// LAYERMAP_BENCH_MSPROBE, when set, is the command that runs msprobe's
// compare (e.g. "msprobe compare", or "msprobe -f pytorch compare" for
// older versions; split at spaces): every iteration then also runs it on
// the same pair, just after layermap's run, with -tp, -gp, -o and the
// run's flags (-da, --xlsx), and checks that every file it writes is
// byte-identical to layermap's file of the same name (the time stamps in
// the names aside; an xlsx table cell for cell, sameCells). msprobe's
// compare of PyTorch dumps ignores -lm, so a "-lm" run gives it the data
// mapping layermap's run wrote (-dm): its time leaves out msprobe's own
// derivation of that mapping. gen-fm is not run by msprobe: its fuzzy
// match of a statistics dump misaligns every row (msprobe-compare.md
// §3.4), and its queues are rescanned at every row. Reported besides:
//   - msprobe-s: msprobe's wall time, the mean over the iterations;
//   - x-msprobe: msprobe's wall time over layermap's, summed over the
//     iterations (each pair of runs side by side, so both meet about the
//     same load of the machine);
//   - x-msprobe-best: msprobe's best wall time over layermap's best. On
//     a busy machine of few CPUs, layermap, which keeps every CPU busy,
//     loses more to the machine's other work than msprobe, which keeps
//     one: the best runs tell the tools apart from that load.
//
// LAYERMAP_BENCH_CPUPROFILE=DIR makes every child write the CPU profile of
// its compare into DIR, one file per run: the profiles cmd/default.pgo,
// the build's profile-guided optimization, is merged from (README.md's
// "Tests" gives the command).

func benchSizes(env, def string) []int64 { return dumpgen.Sizes(os.Getenv(env), def) }

func sizeName(n int64) string { return dumpgen.SizeName(n) }

// qwenTemplates holds the real Qwen2.5-VL dump folders the qwen25vl pairs
// are scaled from; absolute, since benchmark children may run elsewhere.
var qwenTemplates, _ = filepath.Abs(filepath.Join("..", "..", "testdata", "demo", "dumps"))

// quickTemplates holds msprobe's quick-start dumps, step0/ and step1/,
// the quickstart pairs are scaled from.
var quickTemplates, _ = filepath.Abs(filepath.Join("..", "..", "testdata", "corpus", "msprobe", "examples", "quick_start", "gpu_dump"))

// statsTemplates holds msprobe's synthetic statistics fixture, npu/ and
// bench/, the synthstats pairs are scaled from.
var statsTemplates, _ = filepath.Abs(filepath.Join("..", "..", "testdata", "corpus", "msprobe", "golden", "synth_statistics"))

// qwenLayerMapping is the built-in LLaMA-Factory to MindSpeed-MM template.
var qwenLayerMapping, _ = filepath.Abs(filepath.Join("..", "..", "templates", "data", "qwen2.5-vl_llamafactory_to_mindspeed-mm.yaml"))

var (
	benchMu   sync.Mutex
	benchDir  string
	benchTemp bool
	benchMade = map[string]benchPair{}
)

// benchPair is a generated pair of dump folders.
type benchPair struct {
	npu, bench string // dump.json paths
	bytes      int64  // both files
}

func benchRoot(b *testing.B) string {
	if benchDir == "" {
		if d := os.Getenv("LAYERMAP_BENCH_DIR"); d != "" {
			benchDir = d
		} else {
			d, err := os.MkdirTemp("", "layermap-bench-")
			if err != nil {
				b.Fatal(err)
			}
			benchDir, benchTemp = d, true
		}
	}
	return benchDir
}

func sizeOf(paths ...string) (int64, bool) {
	var n int64
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return 0, false
		}
		n += st.Size()
	}
	return n, true
}

// cachedPair returns the pair named name, writing it with make (into
// npu/ and bench/ of its folder) unless this run or LAYERMAP_BENCH_DIR
// already has it.
func cachedPair(b *testing.B, name string, make func(npu, bench string) error) benchPair {
	benchMu.Lock()
	defer benchMu.Unlock()
	if p, ok := benchMade[name]; ok {
		return p
	}
	dir := filepath.Join(benchRoot(b), name)
	p := benchPair{npu: filepath.Join(dir, "npu", "dump.json"), bench: filepath.Join(dir, "bench", "dump.json")}
	if _, ok := sizeOf(p.npu, p.bench); !ok {
		if err := make(filepath.Dir(p.npu), filepath.Dir(p.bench)); err != nil {
			b.Fatal(err)
		}
	}
	n, ok := sizeOf(p.npu, p.bench)
	if !ok {
		b.Fatalf("pair %s not written", name)
	}
	p.bytes = n
	benchMade[name] = p
	return p
}

// genBench returns the synthetic pair of size bytes per side.
func genBench(b *testing.B, size int64, kind dumpgen.PairKind) benchPair {
	name := "gen-" + sizeName(size)
	switch kind {
	case dumpgen.MD5Pair:
		name = "gen-md5-" + sizeName(size)
	case dumpgen.TensorPair:
		name = "gen-tensor-" + sizeName(size)
	case dumpgen.ForeachPair:
		name = "gen-foreach-" + sizeName(size)
	}
	return cachedPair(b, name, func(npu, bench string) error {
		return dumpgen.WriteSyntheticPair(npu, bench, size, kind)
	})
}

// qwenBench returns the scaled Qwen2.5-VL pair of size bytes per side.
func qwenBench(b *testing.B, size int64) benchPair {
	return cachedPair(b, "qwen25vl-"+sizeName(size), func(npu, bench string) error {
		return dumpgen.WriteQwenPair(qwenTemplates, npu, bench, size)
	})
}

// statsBench returns msprobe's synthetic statistics fixture scaled to
// size bytes per side.
func statsBench(b *testing.B, size int64) benchPair {
	return cachedPair(b, "synthstats-"+sizeName(size), func(npu, bench string) error {
		return dumpgen.ScalePair(filepath.Join(statsTemplates, "npu"), filepath.Join(statsTemplates, "bench"), npu, bench, 0, size)
	})
}

// quickBench returns msprobe's quick-start pair (step 0 against step 1)
// scaled to size bytes per side.
func quickBench(b *testing.B, size int64) benchPair {
	return cachedPair(b, "quickstart-"+sizeName(size), func(npu, bench string) error {
		return dumpgen.ScalePair(filepath.Join(quickTemplates, "step0", "proc2016"), filepath.Join(quickTemplates, "step1", "proc2016"), npu, bench, 0, size)
	})
}

// shuffledBench returns the qwen25vl pair of size bytes per side with
// its bench entries in a random order (dumpgen.Shuffle): a bench dump
// ordered otherwise than the NPU side, every entry the join asks for far
// from the one before.
func shuffledBench(b *testing.B, size int64) benchPair {
	p := qwenBench(b, size)
	return cachedPair(b, "qwen25vl-shuffled-"+sizeName(size), func(npu, bench string) error {
		if err := linkDumpFiles(filepath.Dir(p.npu), npu, "dump.json", "stack.json", "construct.json"); err != nil {
			return err
		}
		if err := linkDumpFiles(filepath.Dir(p.bench), bench, "stack.json", "construct.json"); err != nil {
			return err
		}
		return dumpgen.Shuffle(filepath.Dir(p.bench), bench, 9)
	})
}

// linkDumpFiles links the named files of the dump folder from into the
// folder to (hard links: msprobe refuses symbolic ones), creating it;
// a name missing from from (stack.json and construct.json are optional)
// or present in to is left.
func linkDumpFiles(from, to string, names ...string) error {
	if err := os.MkdirAll(to, 0o755); err != nil {
		return err
	}
	for _, name := range names {
		src, dst := filepath.Join(from, name), filepath.Join(to, name)
		if _, err := os.Stat(dst); err == nil {
			continue
		}
		if _, err := os.Stat(src); err != nil {
			continue
		}
		if err := os.Link(src, dst); err != nil {
			return err
		}
	}
	return nil
}

// rankFolders links p's dump folders as rank0 of a step folder a side
// and returns the two step folders, for a compare in directory mode.
func rankFolders(b *testing.B, p benchPair) (npu, bench string) {
	root := filepath.Join(filepath.Dir(filepath.Dir(p.npu)), "steps")
	var step [2]string
	for i, dump := range []string{p.npu, p.bench} {
		step[i] = filepath.Join(root, filepath.Base(filepath.Dir(dump)))
		if err := linkDumpFiles(filepath.Dir(dump), filepath.Join(step[i], "rank0"), "dump.json", "stack.json", "construct.json"); err != nil {
			b.Fatal(err)
		}
	}
	return step[0], step[1]
}

// qwenDataMapping is the data mapping the built-in layer mapping gives
// for the qwen25vl pair p, as a compare with it writes it (once, beside
// the pair's folders).
func qwenDataMapping(b *testing.B, p benchPair) string {
	path := filepath.Join(filepath.Dir(filepath.Dir(p.npu)), "data_mapping.yaml")
	if _, err := os.Stat(path); err == nil {
		return path
	}
	out, err := os.MkdirTemp("", "layermap-bench-")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(out)
	runChild(b, childRun{NPU: p.npu, Bench: p.bench, Out: out, LayerMapping: qwenLayerMapping})
	if err := os.Rename(writtenDataMapping(b, out), path); err != nil {
		b.Fatal(err)
	}
	return path
}

// writtenDataMapping is the data mapping a compare with a layer mapping
// wrote into out.
func writtenDataMapping(b *testing.B, out string) string {
	dm, err := filepath.Glob(filepath.Join(out, "data_mapping_*.yaml"))
	if err != nil || len(dm) != 1 {
		b.Fatalf("the -lm run wrote data mappings %q (%v), want one", dm, err)
	}
	return dm[0]
}

// childRun is what a benchmark child is asked to compare.
type childRun struct {
	NPU, Bench, Out string
	LayerMapping    string // a layer_mapping.yaml (compare -lm)
	DataMapping     string // a data mapping yaml (compare -dm)
	DiffAnalyze     bool   // compare -da
	XLSX            bool   // compare --xlsx
	Fuzzy           bool   // compare -fm
}

type childResult struct {
	Rows    int
	Mallocs uint64
	PeakRSS int64 // the child's own (testkit.PeakRSS)
	Err     string
}

const childEnv = "LAYERMAP_BENCH_CHILD"

func TestMain(m *testing.M) {
	if spec := os.Getenv(childEnv); spec != "" {
		os.Exit(benchChild(spec))
	}
	code := m.Run()
	if benchTemp {
		os.RemoveAll(benchDir)
	}
	os.Exit(code)
}

// benchChild runs one compare as `layermap compare` does and prints its
// row count and heap allocations.
func benchChild(spec string) int {
	var c childRun
	var res childResult
	if err := json.Unmarshal([]byte(spec), &c); err != nil {
		res.Err = err.Error()
	} else {
		opt := Options{Target: c.NPU, Golden: c.Bench, OutDir: c.Out, Stamp: benchStamp, LayerMappingFile: c.LayerMapping,
			DataMappingFile: c.DataMapping,
			DiffAnalyze:     c.DiffAnalyze, XLSX: c.XLSX, Fuzzy: c.Fuzzy}
		stop, err := childProfile()
		if err != nil {
			res.Err = err.Error()
		}
		if res.Err == "" {
			rep, err := Run(opt)
			if perr := stop(); err == nil {
				err = perr
			}
			if err != nil {
				res.Err = err.Error()
			} else {
				for _, r := range rep.Ranks {
					res.Rows += r.Summary.Rows
				}
			}
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		res.Mallocs = ms.Mallocs
	}
	res.PeakRSS = testkit.PeakRSS()
	json.NewEncoder(os.Stdout).Encode(res)
	if res.Err != "" {
		return 1
	}
	return 0
}

// benchStamp stamps the children's output files: a time of this century,
// so that their names have as many digits as msprobe's (see outputDiffs).
var benchStamp = time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)

// childProfile starts the CPU profile LAYERMAP_BENCH_CPUPROFILE asks
// for, into a new file of that folder; stop ends it.
func childProfile() (stop func() error, err error) {
	dir := os.Getenv("LAYERMAP_BENCH_CPUPROFILE")
	if dir == "" {
		return func() error { return nil }, nil
	}
	f, err := os.CreateTemp(dir, "compare-*.pprof")
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}, nil
}

// runChild compares in a child process and returns its result, wall and
// CPU time and peak RSS.
func runChild(b *testing.B, c childRun) (childResult, time.Duration, time.Duration, int64) {
	spec, _ := json.Marshal(c)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+string(spec))
	cmd.Stderr = os.Stderr
	start := time.Now()
	out, err := cmd.Output()
	wall := time.Since(start)
	var res childResult
	if jerr := json.Unmarshal(out, &res); jerr != nil || err != nil || res.Err != "" {
		b.Fatalf("compare child: %v %v %s", err, jerr, res.Err)
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	rss := res.PeakRSS
	if rss == 0 {
		rss = ru.Maxrss * 1024
	}
	return res, wall, cpu, rss
}

func benchCompare(b *testing.B, p benchPair, run childRun) {
	b.SetBytes(p.bytes)
	var cpu, wall, msWall time.Duration
	msBest := time.Duration(math.MaxInt64)
	var rss int64
	var res childResult
	best, bestTok := time.Duration(math.MaxInt64), time.Duration(math.MaxInt64)
	ms := strings.Fields(os.Getenv("LAYERMAP_BENCH_MSPROBE"))
	// Not b.TempDir: msprobe refuses paths with the "=" of its name.
	dir, err := os.MkdirTemp("", "layermap-bench-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		// Every run writes into an empty folder, as a user's run writes
		// files stamped anew: none replaces the last run's (unlinking
		// 100 MB and more), none shares the disk with its writeback.
		out := filepath.Join(dir, strconv.Itoa(i))
		if err := os.RemoveAll(filepath.Join(dir, strconv.Itoa(i-1))); err != nil {
			b.Fatal(err)
		}
		// Nor does the writeback of the last run's files (msprobe's
		// too: hundreds of MB) take CPU from this one, or from the
		// tokenizer's.
		syscall.Sync()
		bestTok = min(bestTok, tokenizePair(b, p))
		b.StartTimer()
		if run.NPU == "" {
			run.NPU, run.Bench = p.npu, p.bench
		}
		run.Out = out
		r, w, c, m := runChild(b, run)
		res, cpu, rss, best, wall = r, cpu+c, max(rss, m), min(best, w), wall+w
		if len(ms) > 0 && !run.Fuzzy {
			b.StopTimer()
			syscall.Sync()
			w := runMsprobe(b, ms, run)
			msWall, msBest = msWall+w, min(msBest, w)
			b.StartTimer()
		}
	}
	if len(ms) > 0 {
		b.ReportMetric(msWall.Seconds()/float64(b.N), "msprobe-s")
		b.ReportMetric(msWall.Seconds()/wall.Seconds(), "x-msprobe")
		b.ReportMetric(msBest.Seconds()/best.Seconds(), "x-msprobe-best")
	}
	b.ReportMetric(float64(p.bytes)/1e6/best.Seconds(), "best-MB/s")
	b.ReportMetric(100*bestTok.Seconds()/best.Seconds(), "tokenizer-%")
	b.ReportMetric(float64(p.bytes)/1e6/(cpu.Seconds()/float64(b.N)), "cpu-MB/s")
	b.ReportMetric(float64(rss)/(1<<20), "peak-RSS-MB")
	b.ReportMetric(float64(res.Mallocs)/float64(res.Rows), "allocs/row")
	b.ReportMetric(float64(res.Rows), "rows")
}

// runMsprobe runs msprobe's compare (the command ms) on what run
// compared, into a folder beside run.Out, checks that its files are
// layermap's (outputDiffs) and returns its wall time.
func runMsprobe(b *testing.B, ms []string, run childRun) time.Duration {
	out := run.Out + "-msprobe"
	args := append(ms[1:len(ms):len(ms)], "-tp", run.NPU, "-gp", run.Bench, "-o", out)
	if run.DiffAnalyze {
		args = append(args, "-da")
	}
	if run.XLSX {
		args = append(args, "--xlsx")
	}
	if run.DataMapping != "" {
		args = append(args, "-dm", run.DataMapping)
	}
	if run.LayerMapping != "" {
		args = append(args, "-dm", writtenDataMapping(b, run.Out))
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(ms[0], args...)
	start := time.Now()
	log, err := cmd.CombinedOutput()
	wall := time.Since(start)
	if err != nil {
		b.Fatalf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, tail(log, 2000))
	}
	diffs, err := outputDiffs(out, run.Out, run.LayerMapping != "")
	if err != nil {
		b.Fatal(err)
	}
	for _, d := range diffs {
		b.Error(d)
	}
	if err := os.RemoveAll(out); err != nil {
		b.Fatal(err)
	}
	return wall
}

// stampDigits matches the time stamps in output file names.
var stampDigits = regexp.MustCompile(`[0-9]{10,}`)

// outputDiffs lists how the files msprobe wrote into msDir and those
// layermap wrote into lmDir differ, time stamps in the names aside: a
// file only one wrote, or a file whose bytes differ. With mapped (a
// run with a layer mapping, to which msprobe was given the data
// mapping layermap wrote), layermap's data mapping is left out.
func outputDiffs(msDir, lmDir string, mapped bool) ([]string, error) {
	list := func(dir string) (map[string]string, error) {
		es, err := os.ReadDir(dir)
		paths := map[string]string{}
		for _, e := range es {
			paths[stampDigits.ReplaceAllString(e.Name(), "T")] = filepath.Join(dir, e.Name())
		}
		return paths, err
	}
	theirs, err := list(msDir)
	if err != nil {
		return nil, err
	}
	ours, err := list(lmDir)
	if err != nil {
		return nil, err
	}
	if mapped {
		delete(ours, "data_mapping_T.yaml")
	}
	var diffs []string
	for name, want := range theirs {
		got, ok := ours[name]
		if !ok {
			diffs = append(diffs, "msprobe wrote "+name+", layermap did not")
			continue
		}
		var same bool
		if strings.HasSuffix(name, ".xlsx") {
			same, err = sameCells(got, want) // two writers' zips: the cells must match
		} else {
			same, err = sameFiles(got, want)
		}
		if err != nil {
			return nil, err
		}
		if !same {
			diffs = append(diffs, "layermap's "+name+" differs from msprobe's")
		}
	}
	for name := range ours {
		if _, ok := theirs[name]; !ok {
			diffs = append(diffs, "layermap wrote "+name+", msprobe did not")
		}
	}
	slices.Sort(diffs)
	return diffs, nil
}

// sameFiles tells whether the files at p and q hold the same bytes
// (a chunk at a time: -da's files are hundreds of MB).
func sameFiles(p, q string) (bool, error) {
	f, err := os.Open(p)
	if err != nil {
		return false, err
	}
	defer f.Close()
	g, err := os.Open(q)
	if err != nil {
		return false, err
	}
	defer g.Close()
	x, y := make([]byte, 1<<20), make([]byte, 1<<20)
	for {
		n, ferr := io.ReadFull(f, x)
		m, gerr := io.ReadFull(g, y)
		if n != m || !bytes.Equal(x[:n], y[:m]) {
			return false, nil
		}
		for _, err := range []error{ferr, gerr} {
			if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
				return false, err
			}
		}
		if ferr != nil {
			return true, nil // both at their end, after the same bytes
		}
	}
}

// sameCells reports whether two xlsx workbooks hold the same cells on
// Sheet1 (xlsxCells: types and values).
func sameCells(a, b string) (bool, error) {
	x, err := xlsxCells(a)
	if err != nil {
		return false, err
	}
	y, err := xlsxCells(b)
	if err != nil {
		return false, err
	}
	return slices.EqualFunc(x, y, slices.Equal[[]string]), nil
}

// tail is the last n bytes of out at most.
func tail(out []byte, n int) []byte { return out[max(0, len(out)-n):] }

// BenchmarkCompare compares generated pairs end to end (see above).
func BenchmarkCompare(b *testing.B) {
	for _, size := range benchSizes("LAYERMAP_BENCH_SIZES", "64M") {
		b.Run("gen/size="+sizeName(size), func(b *testing.B) { benchCompare(b, genBench(b, size, dumpgen.StatisticsPair), childRun{}) })
	}
	for _, size := range benchSizes("LAYERMAP_BENCH_QWEN", "27M") {
		b.Run("qwen25vl/size="+sizeName(size), func(b *testing.B) { benchCompare(b, qwenBench(b, size), childRun{}) })
		b.Run("qwen25vl-lm/size="+sizeName(size), func(b *testing.B) {
			benchCompare(b, qwenBench(b, size), childRun{LayerMapping: qwenLayerMapping})
		})
		b.Run("qwen25vl-dm/size="+sizeName(size), func(b *testing.B) {
			p := qwenBench(b, size)
			benchCompare(b, p, childRun{DataMapping: qwenDataMapping(b, p)})
		})
		b.Run("qwen25vl-da/size="+sizeName(size), func(b *testing.B) {
			p := qwenBench(b, size)
			npu, bench := rankFolders(b, p)
			benchCompare(b, p, childRun{NPU: npu, Bench: bench, DiffAnalyze: true})
		})
		b.Run("qwen25vl-shuffled/size="+sizeName(size), func(b *testing.B) { benchCompare(b, shuffledBench(b, size), childRun{}) })
	}
	for _, size := range benchSizes("LAYERMAP_BENCH_STATS", "27M") {
		b.Run("synthstats/size="+sizeName(size), func(b *testing.B) { benchCompare(b, statsBench(b, size), childRun{}) })
	}
	for _, size := range benchSizes("LAYERMAP_BENCH_QUICKSTART", "27M") {
		b.Run("quickstart/size="+sizeName(size), func(b *testing.B) { benchCompare(b, quickBench(b, size), childRun{}) })
	}
	for _, size := range benchSizes("LAYERMAP_BENCH_MD5", "32M") {
		b.Run("gen-md5/size="+sizeName(size), func(b *testing.B) { benchCompare(b, genBench(b, size, dumpgen.MD5Pair), childRun{}) })
	}
	for _, size := range benchSizes("LAYERMAP_BENCH_FOREACH", "64M") {
		b.Run("gen-foreach/size="+sizeName(size), func(b *testing.B) { benchCompare(b, genBench(b, size, dumpgen.ForeachPair), childRun{}) })
	}
	for _, size := range benchSizes("LAYERMAP_BENCH_FM", "64M") {
		b.Run("gen-fm/size="+sizeName(size), func(b *testing.B) {
			benchCompare(b, genBench(b, size, dumpgen.StatisticsPair), childRun{Fuzzy: true})
		})
	}
	for _, size := range benchSizes("LAYERMAP_BENCH_XLSX", "none") {
		b.Run("qwen25vl-xlsx/size="+sizeName(size), func(b *testing.B) { benchCompare(b, qwenBench(b, size), childRun{XLSX: true}) })
	}
}

// BenchmarkTokenizer is the reference: a plain JSON tokenizer that also
// parses every number (strconv.ParseFloat), over the same files as
// BenchmarkCompare, read through a 64 KB buffer as the dump scanner reads
// them, on one goroutine; cpu-MB/s is per second of the process's CPU time.
func BenchmarkTokenizer(b *testing.B) {
	run := func(b *testing.B, p benchPair) {
		b.SetBytes(p.bytes)
		cpu0 := cpuTime()
		best := time.Duration(math.MaxInt64)
		for i := 0; i < b.N; i++ {
			best = min(best, tokenizePair(b, p))
		}
		b.ReportMetric(float64(p.bytes)/1e6/best.Seconds(), "best-MB/s")
		b.ReportMetric(float64(p.bytes)/1e6/((cpuTime()-cpu0).Seconds()/float64(b.N)), "cpu-MB/s")
	}
	for _, size := range benchSizes("LAYERMAP_BENCH_SIZES", "64M") {
		b.Run("gen/size="+sizeName(size), func(b *testing.B) { run(b, genBench(b, size, dumpgen.StatisticsPair)) })
	}
	for _, size := range benchSizes("LAYERMAP_BENCH_QWEN", "27M") {
		b.Run("qwen25vl/size="+sizeName(size), func(b *testing.B) { run(b, qwenBench(b, size)) })
		b.Run("qwen25vl-shuffled/size="+sizeName(size), func(b *testing.B) { run(b, shuffledBench(b, size)) })
	}
	for _, size := range benchSizes("LAYERMAP_BENCH_STATS", "27M") {
		b.Run("synthstats/size="+sizeName(size), func(b *testing.B) { run(b, statsBench(b, size)) })
	}
	for _, size := range benchSizes("LAYERMAP_BENCH_QUICKSTART", "27M") {
		b.Run("quickstart/size="+sizeName(size), func(b *testing.B) { run(b, quickBench(b, size)) })
	}
	for _, size := range benchSizes("LAYERMAP_BENCH_MD5", "32M") {
		b.Run("gen-md5/size="+sizeName(size), func(b *testing.B) { run(b, genBench(b, size, dumpgen.MD5Pair)) })
	}
	for _, size := range benchSizes("LAYERMAP_BENCH_FOREACH", "64M") {
		b.Run("gen-foreach/size="+sizeName(size), func(b *testing.B) { run(b, genBench(b, size, dumpgen.ForeachPair)) })
	}
}

// tokenizePair tokenizes both dump.json files of p and returns the wall
// time it took.
func tokenizePair(b *testing.B, p benchPair) time.Duration {
	start := time.Now()
	for _, path := range []string{p.npu, p.bench} {
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := tokenize(f); err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
	return time.Since(start)
}

// cpuTime is the process's user+system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// tokenize reads JSON tokens from r (strings with their escapes skipped,
// numbers parsed, literals checked) and returns how many it saw.
func tokenize(r io.Reader) (int, error) {
	buf := make([]byte, 64<<10)
	pos, end := 0, 0
	eof := false
	fill := func() bool {
		if eof {
			return false
		}
		n := copy(buf, buf[pos:end])
		pos, end = 0, n
		if end == len(buf) {
			buf = append(buf, make([]byte, len(buf))...)
		}
		m, err := r.Read(buf[end:])
		end += m
		if err != nil {
			eof = true
		}
		return m > 0 || !eof
	}
	toks := 0
	for {
		if pos >= end {
			if !fill() {
				return toks, nil
			}
			continue
		}
		switch c := buf[pos]; c {
		case ' ', '\n', '\t', '\r', ',', ':':
			pos++
		case '{', '}', '[', ']':
			pos++
			toks++
		case '"':
			i := pos + 1
			for {
				if i >= end {
					off := i - pos
					if !fill() {
						return toks, io.ErrUnexpectedEOF
					}
					i = pos + off
					continue
				}
				if buf[i] == '\\' {
					i += 2
					continue
				}
				if buf[i] == '"' {
					break
				}
				i++
			}
			pos = i + 1
			toks++
		default:
			i := pos
			for {
				if i >= end {
					off := i - pos
					if !fill() {
						break
					}
					i = pos + off
					continue
				}
				if c := buf[i]; c == ',' || c == '}' || c == ']' || c == ' ' || c == '\n' || c == ':' {
					break
				}
				i++
			}
			switch w := buf[pos:i]; string(w) {
			case "true", "false", "null", "NaN", "Infinity", "-Infinity":
			default:
				if _, err := strconv.ParseFloat(string(w), 64); err != nil {
					return toks, err
				}
			}
			pos = i
			toks++
		}
	}
}

type discardSink struct{}

func (discardSink) Header([]string) error     { return nil }
func (discardSink) Row([]Cell, RowMark) error { return nil }
func (discardSink) Reset() error              { return nil }

// BenchmarkJoin measures layermap's own work per row (keys, index, join,
// diffs, rules, highlight, rendering) on entries already in memory, so
// that parsing and I/O do not hide it.
func BenchmarkJoin(b *testing.B) {
	p := genBench(b, 4<<20, dumpgen.StatisticsPair)
	load := func(path string) []msprobe.Entry {
		var es []msprobe.Entry
		if _, err := msprobe.ScanFile(path, func(e *msprobe.Entry) error {
			c := *e
			c.Items = append([]msprobe.Item(nil), e.Items...)
			es = append(es, c)
			return nil
		}); err != nil {
			b.Fatal(err)
		}
		return es
	}
	ne, be := load(p.npu), load(p.bench)
	rows := 0
	for _, e := range ne {
		rows += len(e.Items)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Compare(memSource(ne...), memSource(be...), Config{Mode: Statistics}, discardSink{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(rows), "ns/row")
}

// TestOutputDiffs: the side-by-side benchmark's check of msprobe's files
// against layermap's.
func TestOutputDiffs(t *testing.T) {
	t.Parallel()
	big := bytes.Repeat([]byte("0.5,"), 400_000) // past one chunk
	bigOff := slices.Clone(big)
	bigOff[len(bigOff)-1] = ';'
	const csv, lmCSV = "compare_result_20261207054511.csv", "compare_result_20260102030405.csv"
	tests := []struct {
		name   string
		ms, lm map[string][]byte
		mapped bool
		want   []string
	}{
		{"same, stamped otherwise", map[string][]byte{csv: big}, map[string][]byte{lmCSV: big}, false, nil},
		{"a byte past the first chunk", map[string][]byte{csv: big}, map[string][]byte{lmCSV: bigOff}, false,
			[]string{"layermap's compare_result_T.csv differs from msprobe's"}},
		{"one file longer", map[string][]byte{csv: []byte("a,b\n")}, map[string][]byte{lmCSV: []byte("a,b\nc\n")}, false,
			[]string{"layermap's compare_result_T.csv differs from msprobe's"}},
		{"empty files", map[string][]byte{csv: nil}, map[string][]byte{lmCSV: nil}, false, nil},
		{"msprobe's file only", map[string][]byte{csv: big, "diff_analyze_1796623838779168588.json": []byte("{}")},
			map[string][]byte{lmCSV: big}, false, []string{"msprobe wrote diff_analyze_T.json, layermap did not"}},
		{"layermap's data mapping, mapped", map[string][]byte{csv: big},
			map[string][]byte{lmCSV: big, "data_mapping_20260102030405.yaml": []byte("{}\n")}, true, nil},
		{"layermap's data mapping, not mapped", map[string][]byte{csv: big},
			map[string][]byte{lmCSV: big, "data_mapping_20260102030405.yaml": []byte("{}\n")}, false,
			[]string{"layermap wrote data_mapping_T.yaml, msprobe did not"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			write := func(files map[string][]byte) string {
				dir := t.TempDir()
				for name, data := range files {
					testkit.WriteFile(t, dir, name, string(data))
				}
				return dir
			}
			got, err := outputDiffs(write(tc.ms), write(tc.lm), tc.mapped)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
