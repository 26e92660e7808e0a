package compare

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/layermap/layermap/mapping"
	"gopkg.in/yaml.v3"

	"github.com/layermap/layermap/mapping/output"
	"github.com/layermap/layermap/mapping/resolve"
	"github.com/layermap/layermap/printparse/msprobe"
	"github.com/layermap/layermap/printparse/source"
)

// Options describe one `layermap compare` run: the inputs as files, as
// the command line names them. Run reads them all itself.
type Options struct {
	Target, Golden string // -tp / -gp: dump.json files, rank folders or step folders
	OutDir         string // -o (default ./output)
	XLSX           bool
	Fuzzy          bool
	// DataMappingFile is msprobe's row-level data mapping yaml (-dm).
	DataMappingFile string
	// LayerMappingFile is a layer_mapping.yaml (-lm, --mapping): Run
	// derives each rank pair's data mapping from it as msprobe does
	// (generate_data_mapping_by_layer_mapping, package resolve); rows
	// matched through it count as ByLayerMap, and it is saved as
	// data_mapping{suffix}_{ts}.yaml in the output folder as msprobe does.
	LayerMappingFile string
	// PairsFile holds explicit module pairs (--pairs; see LoadPairs); its
	// N:1 groups are compared combined (fused.go).
	PairsFile string
	// NoFused turns N:1 groups off: the sidecar's groups are left out
	// and a mapped pair whose shapes show a fused module is compared as
	// msprobe compares it.
	NoFused bool
	// TP names the tensor-parallel size of each side when they differ
	// (--tp-size): shards of one side are compared combined (tp.go).
	TP TPSizes
	// Strict makes a mapping-health finding (error or warning) a problem
	// of the run (Report.Findings: exit status 1).
	Strict bool
	// DiffAnalyze is msprobe's -da (da.go): per rank pair the table as
	// compare_result_rank{N}_{ts}.json instead of CSV (statistics, also
	// for tensor dumps), then diff_analyze_{ns}.json, the first divergence
	// across the ranks, with the mapping applied.
	DiffAnalyze bool
	// Views, when set, adds a file beside each rank's table to the run's
	// output set (compare --html): an output format this package cannot
	// name (it lives above it), given each rank's rows as they are written.
	Views ViewMaker
	// StackJSON, when set, is the NPU stack.json to use instead of the one
	// next to the NPU dump.json (compare.json's stack_path).
	StackJSON string
	// Stamp is the time in the output file names; zero means now.
	Stamp time.Time
	// Workers is Config.Workers (zero: chosen from the mode and CPUs).
	Workers int
	// Warnings receives warning lines as layermap prints them: the layer
	// mapping's diagnostics, -tp and -gp naming one dump, tensor files
	// missing or unreadable. nil discards them.
	Warnings io.Writer
	// Progress, when set (a terminal), receives a progress bar now and
	// then, rewritten in place with a carriage return and cleared at the
	// end.
	Progress io.Writer

	// newTensor, when set, replaces NewTensorFiles (tests).
	newTensor func(npu, bench msprobe.Paths) (TensorComparer, error)
	// fullBench joins against the whole bench side in memory instead of
	// the bench index (tests compare the two).
	fullBench bool
	// cache overrides how many parsed bench entries the index keeps (tests).
	cache int
	// fuzzyPack overrides packAfterRows (tests).
	fuzzyPack int
	// inline has the join finish each entry's rows itself (tests; see
	// inlineRows).
	inline bool
	// mapRows has the layer mapping read both dumps' rows itself, its
	// data mapping complete before the table (tests compare it with the
	// one completed by the table's passes: see resolve.ReadSides).
	mapRows bool
	// daByPosition has -da read the NPU dump's P2POp values by position
	// from the first row, as it does once a row is not the dump's own
	// (tests compare the two; see daRank.npuOpPeer).
	daByPosition bool
	// writeAgain writes a table a whole-column pandas effect changes a
	// second time, where the CSV table would be patched (tests compare
	// the two).
	writeAgain bool
	// trace records how the joins ran (tests of one rank pair).
	trace *joinTrace
	// sheetRows overrides MaxXLSXRows (tests of the split into sheets).
	sheetRows int
	// chunks lends the bench readers' chunk memory (Run: one for all
	// rank pairs).
	chunks *msprobe.Chunks
}

// dataMappingErr waits for the data mapping and returns its error, which
// comes before any other: as if the data mapping were read first.
func (in inputs) dataMappingErr() error {
	if in.dataMapping == nil {
		return nil
	}
	_, err := in.dataMapping()
	return err
}

// rankErr is the error a rank pair reports for err: the data mapping's
// when it has one (the dumps need not be checked then), else err in the
// order the dumps would load (inLoadOrder, loadOrder).
func (in inputs) rankErr(err error, np, bp msprobe.Paths, tp *tpPlan) error {
	if derr := in.dataMappingErr(); derr != nil {
		return derr
	}
	return inLoadOrder(err, loadOrder(np.DumpJSON, bp.DumpJSON, tp)...)
}

// loadOrder lists the dump.json files of a rank pair in the order they
// load: the pair's own, the NPU side's first, as msprobe loads them, then
// the tensor-parallel shards of tp (may be nil) in TP order.
func loadOrder(npu, bench string, tp *tpPlan) []string {
	dumps := []string{npu, bench}
	if tp != nil {
		for _, s := range tp.siblings {
			dumps = append(dumps, s.DumpJSON)
		}
	}
	return dumps
}

// inputs are the files of Options, read.
type inputs struct {
	// dataMapping waits for the data mapping (-dm), read on a goroutine
	// of its own beside the dumps' first reading; nil without one.
	dataMapping  func() (*DataMapping, error)
	layerMapping *mapping.Mapping
	pairs        []mapping.ModulePair
	pairsPos     []mapping.Pos
}

// mapped reports whether the rows are joined through an explicit
// mapping: a data mapping (-dm, or the one a layer mapping gives) or
// pairs. It is Config.mapped for every rank pair of the run.
func (in inputs) mapped() bool {
	return in.dataMapping != nil || in.layerMapping != nil || len(in.pairs) > 0
}

// fuzzyWarning tells, when -fm is given beside an explicit mapping, that
// it pairs no row in order (see Config.fuzzyJoin); "" otherwise.
func (in inputs) fuzzyWarning(fuzzy bool) string {
	if !fuzzy || !in.mapped() {
		return ""
	}
	if len(in.pairs) == 0 {
		return "layermap: warning: -fm pairs no row in order beside a data mapping: msprobe joins through the mapping first, and -fm only leaves backward calls unrenumbered"
	}
	what, which := "--pairs", "the pairs are"
	if in.dataMapping != nil || in.layerMapping != nil {
		what, which = "a data mapping and --pairs", "both are"
	}
	return "layermap: warning: -fm pairs no row in order beside " + what + ": " + which + " joined through first, as msprobe joins through a data mapping, and -fm only leaves backward calls unrenumbered"
}

// RankReport is the outcome of one rank pair.
type RankReport struct {
	Rank    string   `json:"rank"` // "" for a file pair, else the NPU rank folder name
	Target  string   `json:"target"`
	Golden  string   `json:"golden"`
	Files   []string `json:"files"`
	Summary *Summary `json:"summary"`
	// Groups are the N:1 groups compared combined (the sidecar's and the
	// ones the shapes showed behind mapped pairs); Shards names the
	// tensor-parallel ranks compared as one.
	Groups []mapping.ModulePair `json:"groups,omitempty"`
	Shards string               `json:"shards,omitempty"`

	health  []Finding
	lacking []pairState     // per pair: whether this rank pair's dumps know its modules
	da      *daRank         // -da: the rank's per-rank JSON
	tensors *missingTensors // tensor mode: what the rank's rows lacked
	// gateWarning says that the dtype gate keeps the two frameworks'
	// rows apart (Config.gateWarning).
	gateWarning string
}

// Report is the outcome of a run. Findings and Err say how it ended;
// WriteText and WriteJSON print it.
type Report struct {
	Ranks []RankReport `json:"ranks"`
	// Health are the mapping's and pairs file's problems against the
	// dumps (mapping health), in every rank pair.
	Health []Finding `json:"health"`
	// DiffAnalyze is the -da search's file across the ranks ("" when it
	// found no diff, or without -da).
	DiffAnalyze string `json:"diff_analyze,omitempty"`
	strict      bool
	daFile      *output.File // -da: the search's file

	asked map[string]bool // match sources the run was given
	mu    sync.Mutex      // rank pairs run side by side
}

// badInput is an input problem that concerns no single file position.
func badInput(format string, a ...any) error {
	return &source.Error{Msg: fmt.Sprintf(format, a...)}
}

// asInput marks err as a problem with the inputs: a *source.Error (exit
// status 2 in the command line).
func asInput(err error) error {
	var se *source.Error
	if errors.As(err, &se) {
		return err
	}
	return &source.Error{Err: err}
}

// Run compares the two dumps as `msprobe compare -tp -gp` does: a pair of
// dump.json files (or rank folders) gives one table; a pair of step folders
// gives one table per rank pair (paired by sorted position), named with
// the NPU rank folder as suffix.
//
// Every file of the run (tables, their parts, derived data mappings) is
// one output set: written only when all ranks succeeded, never replacing
// another run's files (a taken time stamp moves the run to the next free
// second), removed on SIGINT/SIGTERM (see package output).
func Run(opt Options) (*Report, error) {
	if opt.OutDir == "" {
		opt.OutDir = "./output"
	}
	if opt.Stamp.IsZero() {
		opt.Stamp = time.Now()
	}
	if opt.Warnings == nil {
		opt.Warnings = io.Discard
	}
	in, err := readInputs(opt)
	if err != nil {
		return nil, err
	}
	opt.chunks = &msprobe.Chunks{}
	defer opt.chunks.Free()
	if sameFile(opt.Target, opt.Golden) {
		if err := in.dataMappingErr(); err != nil {
			return nil, err // before the warning
		}
		fmt.Fprintf(opt.Warnings, "layermap: warning: -tp and -gp name the same dump (%s): every row is compared with itself and passes\n", opt.Target)
	}
	set := output.NewSet()
	rep := &Report{asked: asked(opt, in), strict: opt.Strict}
	made := firstMissing(opt.OutDir)
	files, err := run(opt, in, set, rep)
	if derr := in.dataMappingErr(); derr != nil {
		err = derr // (and nothing is written)
	}
	if err == nil {
		rep.mergeHealth(in)
	}
	if opt.Progress != nil {
		fmt.Fprint(opt.Progress, "\r\033[K")
	}
	if err == nil && opt.DiffAnalyze {
		err = writeDiffAnalyze(opt, set, rep)
	}
	if err != nil {
		set.Abort()
		removeEmptyDirs(made)
		return rep, err
	}
	if err := set.Commit(opt.Stamp); err != nil {
		removeEmptyDirs(made)
		return rep, err
	}
	if rep.daFile != nil {
		rep.DiffAnalyze = rep.daFile.Path()
	}
	for i, fs := range files {
		for _, f := range fs {
			rep.Ranks[i].Files = append(rep.Ranks[i].Files, f.Path())
		}
	}
	// after the run: a refused one prints its one error line alone
	if opt.DataMappingFile != "" && opt.LayerMappingFile != "" {
		fmt.Fprintf(opt.Warnings, "layermap: warning: -dm %s is not read beside a layer mapping: the data mapping derived from the layer mapping replaces it, as in msprobe's MindSpore compare (msprobe's PyTorch compare ignores -lm and would use -dm)\n", opt.DataMappingFile)
	}
	if w := in.fuzzyWarning(opt.Fuzzy); w != "" {
		fmt.Fprintln(opt.Warnings, w)
	}
	for _, r := range rep.Ranks { // in rank pair order
		if r.gateWarning != "" {
			fmt.Fprintln(opt.Warnings, r.gateWarning)
		}
		if r.tensors != nil {
			r.tensors.warn(opt.Warnings)
		}
	}
	return rep, nil
}

// readInputs reads the mapping and pairs files the options name, writing
// the layer mapping's diagnostics to opt.Warnings.
func readInputs(opt Options) (in inputs, err error) {
	// Beside a layer mapping -dm is not read: the layer mapping's data
	// mapping replaces it, as in msprobe's MindSpore compare, which never
	// opens it (ms_compare).
	if opt.DataMappingFile != "" && opt.LayerMappingFile == "" {
		// Read beside the rank pairs' first reading of the dumps (the N:1
		// detection's skims), which does not need it.
		load := sync.OnceValues(func() (*DataMapping, error) {
			m, err := LoadDataMapping(opt.DataMappingFile)
			// The reading's garbage and the pages the heap grew to for
			// it go back to the system rather than adding to the
			// compare's peak.
			debug.FreeOSMemory()
			return m, err
		})
		go load()
		in.dataMapping = load
		defer func() {
			if err == nil {
				return
			}
			if derr := in.dataMappingErr(); derr != nil {
				err = derr
			}
		}()
	}
	if opt.LayerMappingFile != "" {
		// its warnings come after the data mapping's error
		if err := in.dataMappingErr(); err != nil {
			return in, err
		}
		var diags []mapping.Diagnostic
		if in.layerMapping, diags, err = mapping.Load(opt.LayerMappingFile); err != nil {
			return in, asInput(err)
		}
		for _, d := range diags {
			fmt.Fprintln(opt.Warnings, d)
		}
	}
	if opt.PairsFile != "" {
		if in.pairs, in.pairsPos, err = mapping.ReadPairsAt(opt.PairsFile); err != nil {
			return in, asInput(err)
		}
	}
	return in, nil
}

// checkRankFiles checks what a rank pair reads before anything is
// written: both rank folders, their dump.json headers, and stack.json
// and construct.json being regular files (not a FIFO that would block);
// it keeps the files and headers in p for rankConfig.
func checkRankFiles(opt Options, p *rankPair) error {
	for i, dir := range [...]string{p.NPU.Path, p.Bench.Path} {
		side := [...]string{"target", "golden"}[i]
		ps, err := msprobe.Locate(dir)
		if err != nil {
			return asInput(fmt.Errorf("%s: %w", side, err))
		}
		h, err := msprobe.ReadHeader(ps.DumpJSON)
		if err != nil {
			// both dump.json files are loaded before the headers' checks
			npu, bench := p.paths[0].DumpJSON, ps.DumpJSON
			if i == 0 {
				npu, bench = ps.DumpJSON, ""
				if bps, lerr := msprobe.Locate(p.Bench.Path); lerr == nil {
					bench = bps.DumpJSON
				}
			}
			return inLoadOrder(inputErr(err), loadOrder(npu, bench, p.tp)...)
		}
		p.paths[i], p.heads[i] = ps, h
		stack := ps.StackJSON
		if i == 0 && opt.StackJSON != "" {
			stack = opt.StackJSON
		}
		for _, f := range [...]string{stack, ps.ConstructJSON} {
			if f == "" {
				continue
			}
			if err := source.Check(f, 0); err != nil {
				return inputErr(err)
			}
		}
	}
	return nil
}

// firstMissing is the outermost folder of dir's path that does not
// exist yet ("" when dir exists): what a run creates.
func firstMissing(dir string) string {
	missing := ""
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil {
			return missing
		}
		missing = d
		if filepath.Dir(d) == d {
			return missing
		}
	}
}

// removeEmptyDirs removes top and the folders under it when they hold
// nothing but empty folders: a failed run leaves no folder it created
// (another run writing there keeps it).
func removeEmptyDirs(top string) {
	if top == "" {
		return
	}
	var walk func(string)
	walk = func(d string) {
		ents, err := os.ReadDir(d)
		if err != nil {
			return
		}
		for _, e := range ents {
			if e.IsDir() {
				walk(filepath.Join(d, e.Name()))
			}
		}
		os.Remove(d) // fails, as wanted, when anything is left
	}
	walk(top)
}

// sameFile reports whether two paths name one file or folder.
func sameFile(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}

// run compares into set, adding a RankReport per rank pair to rep; files
// lists each rank's table files.
func run(opt Options, in inputs, set *output.Set, rep *Report) (files [][]*output.File, err error) {
	if sub := mixDirs(opt.Target, opt.Golden); len(sub) > 0 {
		// MindSpore mix dumps (graph/ and pynative/ side by side): each
		// common <name>/<step> pair is compared into OUT/<name>/<step>.
		for _, s := range sub {
			o := opt
			o.Target, o.Golden = filepath.Join(opt.Target, s), filepath.Join(opt.Golden, s)
			o.OutDir = filepath.Join(opt.OutDir, s)
			fs, err := run(o, in, set, rep)
			files = append(files, fs...)
			if err != nil {
				return files, err
			}
		}
		return files, nil
	}
	pairs, dirMode, err := rankPairs(opt.Target, opt.Golden, opt.TP)
	if err != nil {
		return nil, err
	}
	for i := range pairs {
		// the inputs' files before the output folder: a refused input
		// creates nothing
		if err := checkRankFiles(opt, &pairs[i]); err != nil {
			return nil, err
		}
	}
	for i := range pairs {
		// msprobe picks a step folder's comparator from its first NPU
		// rank (core/compare/utils.py compare_distributed_inner)
		pairs[i].lead = pairs[i].heads[0].Framework
		if dirMode {
			pairs[i].lead = pairs[0].heads[0].Framework
		}
	}
	if err := os.MkdirAll(opt.OutDir, resultDirMode); err != nil {
		return nil, source.PathError(opt.OutDir, "an output folder (created when missing)", err)
	}
	// Rank pairs run side by side (each one's compare is itself a
	// pipeline); the reports come in pair order, and a failing pair stops
	// the pairs not yet started.
	type result struct {
		rr  *RankReport
		fs  []*output.File
		err error
	}
	results := make([]result, len(pairs))
	var failed atomic.Bool
	var wg sync.WaitGroup
	side := max(1, min(len(pairs), runtime.GOMAXPROCS(0)))
	if opt.Views != nil {
		side = 1 // the views' makers are not known to be safe side by side
	}
	sem := make(chan struct{}, side)
	for i, p := range pairs {
		suffix := ""
		if dirMode {
			suffix = "_" + p.NPU.Name
		}
		sem <- struct{}{}
		if failed.Load() {
			<-sem
			break
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			rr, fs, err := runRank(opt, in, set, rep, p, suffix)
			results[i] = result{rr, fs, err}
			if err != nil {
				failed.Store(true)
			}
		}()
	}
	wg.Wait()
	for _, r := range results {
		if r.err != nil {
			return files, r.err
		}
		if r.rr == nil {
			break // not started: a pair before it failed
		}
		rep.Ranks = append(rep.Ranks, *r.rr)
		files = append(files, r.fs)
	}
	return files, nil
}

// mixDirs lists the common graph/<step> and pynative/<step> folders of two
// dump folders (msprobe's mix_compare), sorted; none when either side has
// neither name.
func mixDirs(target, golden string) []string {
	var out []string
	for _, name := range [...]string{"graph", "pynative"} {
		te, err1 := os.ReadDir(filepath.Join(target, name))
		ge, err2 := os.ReadDir(filepath.Join(golden, name))
		if err1 != nil || err2 != nil {
			continue
		}
		have := map[string]bool{}
		for _, e := range ge {
			if e.IsDir() {
				have[e.Name()] = true
			}
		}
		for _, e := range te {
			if e.IsDir() && have[e.Name()] {
				out = append(out, filepath.Join(name, e.Name()))
			}
		}
	}
	return out
}

type rankPair struct {
	NPU, Bench msprobe.RankDir
	tp         *tpPlan // the shards compared with this pair (--tp-size)
	// Set by checkRankFiles: the NPU and bench files and dump.json headers.
	paths [2]msprobe.Paths
	heads [2]msprobe.Header
	// lead is the NPU framework that picks msprobe's comparator (run).
	lead string
}

func rankPairs(target, golden string, tp TPSizes) ([]rankPair, bool, error) {
	ts, err := msprobe.Stat(target)
	if err != nil {
		return nil, false, sideErr("target", err)
	}
	gs, err := msprobe.Stat(golden)
	if err != nil {
		return nil, false, sideErr("golden", err)
	}
	if ts.IsDir() != gs.IsDir() {
		what := map[bool]string{true: "a folder", false: "a file"}
		return nil, false, badInput("%s and %s: expected two dump.json files or two folders, found %s and %s", target, golden, what[ts.IsDir()], what[gs.IsDir()])
	}
	if !ts.IsDir() {
		if err := tpSingle(tp, target, golden); err != nil {
			return nil, false, err
		}
		return []rankPair{{NPU: msprobe.RankDir{Path: filepath.Dir(target)}, Bench: msprobe.RankDir{Path: filepath.Dir(golden)}}}, false, nil
	}
	isRank := func(d string) bool {
		_, e1 := os.Stat(filepath.Join(d, msprobe.DumpJSONName))
		_, e2 := os.Stat(filepath.Join(d, msprobe.DebugJSONName))
		return e1 == nil || e2 == nil
	}
	if isRank(target) && isRank(golden) {
		if err := tpSingle(tp, target, golden); err != nil {
			return nil, false, err
		}
		return []rankPair{{NPU: msprobe.RankDir{Path: target}, Bench: msprobe.RankDir{Path: golden}}}, false, nil
	}
	if isRank(target) != isRank(golden) {
		// one rank folder: blame the other side only when it is no step folder either
		rank, step, stepFlag := target, golden, "-gp"
		if isRank(golden) {
			rank, step, stepFlag = golden, target, "-tp"
		}
		if _, err := msprobe.StepRanks(step); err != nil {
			return nil, false, asInput(err)
		}
		return nil, false, &source.Error{File: step, Expected: "a rank folder (holding dump.json) like " + rank,
			Found: "a step folder (holding rank folders): pass one of its rank folders to " + stepFlag + ", or the step folder holding " + rank}
	}
	tr, err := msprobe.StepRanks(target)
	if err != nil {
		return nil, false, asInput(fmt.Errorf("target: %w", err))
	}
	gr, err := msprobe.StepRanks(golden)
	if err != nil {
		return nil, false, asInput(fmt.Errorf("golden: %w", err))
	}
	if tp != (TPSizes{}) && tp.NPU != tp.Bench {
		pairs, plans, err := tpRankPairs(tp, tr, gr)
		for i := range pairs {
			pairs[i].tp = plans[i]
		}
		return pairs, true, err
	}
	rp, err := msprobe.PairRanks(tr, gr)
	if err != nil {
		return nil, false, asInput(err)
	}
	out := make([]rankPair, len(rp))
	for i, p := range rp {
		out[i] = rankPair{NPU: p.NPU, Bench: p.Bench}
	}
	return out, true, nil
}

// fileSource streams a dump.json; the header of the last scan is kept and
// the bytes read so far are counted for progress.
type fileSource struct {
	path    string
	plan    *msprobe.Repeats // repeated keys of "data" (rare)
	noStats bool             // read without the statistics (Config.statsUnread)
	hdr     msprobe.Header
	read    atomic.Int64
	size    int64
}

type countingReader struct {
	f *os.File
	n *atomic.Int64
}

func (c countingReader) Read(p []byte) (int, error) {
	n, err := c.f.Read(p)
	c.n.Add(int64(n))
	return n, err
}

func (f *fileSource) source() Source {
	return func(yield func(*msprobe.Entry) error) error {
		fh, err := os.Open(f.path)
		if err != nil {
			return err
		}
		defer fh.Close()
		if st, err := fh.Stat(); err == nil {
			f.size = st.Size()
		}
		f.read.Store(0)
		h, err := msprobe.ScanReuseWith(countingReader{fh, &f.read}, f.path, msprobe.ScanOptions{Plan: f.plan, NoStats: f.noStats}, yield)
		f.hdr = h
		return err
	}
}

// sideErr names the side (target, golden) in a file-system error; a
// *source.Error names its file already.
func sideErr(side string, err error) error {
	var se *source.Error
	if errors.As(err, &se) {
		return err
	}
	return badInput("%s: %v", side, err)
}

// inLoadOrder returns the error msprobe reports first for a rank pair
// whose compare failed with err. msprobe loads the dump.json files whole,
// in the order given (the NPU side's first), before it checks or reads
// anything else (its output folder included), so the first syntax error
// of the first file that has one comes before err, and a file it cannot
// open at all stops it there. err stands when it is that very error (the
// same file and line: its own words may say more), when no dump has a
// syntax error, when a dump cannot be read (err, or the error reading it
// later, says why), or when it is not a *source.Error.
func inLoadOrder(err error, dumps ...string) error {
	var se *source.Error
	if !errors.As(err, &se) {
		return err
	}
	for _, d := range dumps {
		if d == "" {
			continue
		}
		cerr := msprobe.CheckJSON(d)
		if cerr == nil {
			continue
		}
		var ce *source.Error
		if !errors.As(cerr, &ce) || ce.Line == 0 || se.File == ce.File && se.Line == ce.Line {
			return err
		}
		return cerr
	}
	return err
}

// inputErr marks file-system errors on the inputs as input problems.
func inputErr(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return asInput(err)
	}
	return err
}

// ViewMaker makes the ViewSink of each rank pair (Options.Views).
type ViewMaker interface {
	NewView(d ViewDumps) ViewSink
}

// ViewFunc adapts a function to ViewMaker.
type ViewFunc func(d ViewDumps) ViewSink

// NewView calls f.
func (f ViewFunc) NewView(d ViewDumps) ViewSink { return f(d) }

// ViewDumps is the rank pair a view is made for: the two dump folders
// and, where compare read them before the table (a layer mapping's
// reading), each side's dump.json entries, which the view need not read
// again (nil otherwise).
type ViewDumps struct {
	NPU, Bench               msprobe.Paths
	NPUEntries, BenchEntries *resolve.Entries
}

// EntriesView is a ViewSink that read the dump.json files' entries as
// resolve.SkimEntries gives them: compare's indexes take them instead of
// skimming the files again. TakeEntries returns each side's (nil where it
// has none) and lets them go.
type EntriesView interface {
	ViewSink
	TakeEntries() (npu, bench *resolve.Entries)
}

// takeEntries takes an EntriesView's entries.
func takeEntries(v ViewSink) [2]*resolve.Entries {
	if ev, ok := v.(EntriesView); ok {
		npu, bench := ev.TakeEntries()
		return [2]*resolve.Entries{npu, bench}
	}
	return [2]*resolve.Entries{}
}

// ViewSink receives a rank's table as it is written, then writes a file
// beside it (Options.Views). A ViewSink that is also a LineSink gets the
// rows as CSV lines when the table is a CSV file, so compare keeps its
// line fast path with a view attached.
type ViewSink interface {
	RowSink
	// Ext is the file's extension; it is named as the table otherwise.
	Ext() string
	// WriteView writes the file for the finished table.
	WriteView(w io.Writer, rr *RankReport) error
}

// NoBenchView is a ViewSink that takes msprobe's no-bench downcast into
// what it kept of the table, so that compare patches the table instead
// of writing it again (csvpatch.go). What it keeps must not depend on
// whether the downcast applies: it counts the bytes of a cell the
// downcast may change as NoBenchCell prints it.
type NoBenchView interface {
	ViewSink
	// PatchNoBench prints the cells of the named NPU statistics columns
	// of the rows without bench data (Bench Name "N/A") as NoBenchCell
	// does; false when it cannot (compare then writes the table again).
	PatchNoBench(cols []string) bool
}

// teeSink writes the table to its sink and to a ViewSink.
type teeSink struct {
	sink
	view ViewSink
}

func (t teeSink) Header(cols []string) error {
	if err := t.sink.Header(cols); err != nil {
		return err
	}
	return t.view.Header(cols)
}

func (t teeSink) Row(cells []Cell, mark RowMark) error {
	if err := t.sink.Row(cells, mark); err != nil {
		return err
	}
	return t.view.Row(cells, mark)
}

func (t teeSink) Reset() error {
	if err := t.sink.Reset(); err != nil {
		return err
	}
	return t.view.Reset()
}

// patchNoBench patches the table, then the view; false when either
// cannot be patched.
func (t teeSink) patchNoBench(cols [4]bool) (bool, error) {
	p, ok := t.sink.(noBenchPatcher)
	v, vok := t.view.(NoBenchView)
	if !ok || !vok {
		return false, nil
	}
	if ok, err := p.patchNoBench(cols); !ok || err != nil {
		return false, err
	}
	var names []string
	for i, on := range cols {
		if on {
			names = append(names, npuStatColumns[i])
		}
	}
	return v.PatchNoBench(names), nil
}

// teeLineSink is a teeSink whose table and view both take CSV lines.
type teeLineSink struct {
	teeSink
	lines, viewLines LineSink
}

func (t teeLineSink) Line(line []byte, mark RowMark) error {
	if err := t.lines.Line(line, mark); err != nil {
		return err
	}
	return t.viewLines.Line(line, mark)
}

// tee attaches a view to a table sink, as a LineSink when both are.
func tee(sk sink, view ViewSink) sink {
	t := teeSink{sk, view}
	l, ok1 := sk.(LineSink)
	vl, ok2 := view.(LineSink)
	if ok1 && ok2 {
		return teeLineSink{t, l, vl}
	}
	return t
}

// sink is a RowSink writing into an output set.
type sink interface {
	RowSink
	Finish() error // flush and name the files
	Drop()         // remove the table from the set
	files() []*output.File
}

func runRank(opt Options, in inputs, set *output.Set, rep *Report, p rankPair, suffix string) (*RankReport, []*output.File, error) {
	np, bp, cfg, err := rankConfig(opt, p)
	if err != nil {
		return nil, nil, in.rankErr(err, np, bp, p.tp)
	}
	if in.layerMapping == nil {
		startStacks(&cfg) // else once the mappings are made (applyInputs)
	}
	rr, files, err := compareRank(opt, in, set, rep, np, bp, cfg, p, suffix)
	if st, ok := cfg.Stack.(*stackReader); ok {
		// a bad stack.json is reported before what the table found
		serr := st.wait()
		st.s.Release() // a step folder compares many ranks
		if serr != nil {
			err, rr, files = inputErr(serr), nil, nil
		}
	}
	if err != nil {
		return nil, nil, in.rankErr(err, np, bp, p.tp)
	}
	return rr, files, nil
}

// progressHead starts a rank pair's progress line.
func progressHead(suffix string) string {
	if rank := strings.TrimPrefix(suffix, "_"); rank != "" {
		return "compare " + rank
	}
	return "compare"
}

// compareRank compares one rank pair configured by rankConfig.
func compareRank(opt Options, in inputs, set *output.Set, rep *Report, np, bp msprobe.Paths, cfg Config, p rankPair, suffix string) (_ *RankReport, _ []*output.File, err error) {
	rr := &RankReport{gateWarning: cfg.gateWarning}
	// A view is made first unless a layer mapping reads the dumps' entries
	// (the view then takes them): the indexes of the N:1 detection, or
	// else the join's, take the entries the view read.
	var view ViewSink
	var viewed [2]*resolve.Entries
	if opt.Views != nil && in.layerMapping == nil {
		// (not for a data mapping refused: a view reads both dumps)
		if err := in.dataMappingErr(); err != nil {
			return nil, nil, err
		}
		view = opt.Views.NewView(ViewDumps{NPU: np, Bench: bp})
		viewed = takeEntries(view)
	}
	written, known, err := applyInputs(opt, in, set, rep, np, bp, suffix, p.tp, viewed, &cfg, rr)
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		// the data mapping is written while the table is (or by it)
		if werr := written(); werr != nil && err == nil {
			err = werr
		}
	}()
	defer cfg.held.close() // when the compare did not take it
	if viewed[0] != nil && cfg.npuRepeats == nil {
		// the view's skim read the NPU dump.json whole: it repeats no key
		cfg.npuRepeats = msprobe.NoRepeats(np.DumpJSON)
	}
	rank := strings.TrimPrefix(suffix, "_")
	nsrc := &fileSource{path: np.DumpJSON, plan: cfg.npuRepeats}
	if opt.Progress != nil {
		head := progressHead(suffix)
		cfg.Progress = func(int) { fmt.Fprintf(opt.Progress, "\r\033[K%s %s", head, progressBar(nsrc.read.Load(), nsrc.size)) }
	}
	name := outputName(np.Debug, suffix, opt.XLSX)
	var sk sink
	switch {
	case opt.DiffAnalyze:
		if cfg.Mode == Tensor {
			cfg.Mode = Statistics // msprobe's -da reads no tensor file
		}
		name.Suffix = ".json"
		f, err := set.Create(opt.OutDir, name, resultMode)
		if err != nil {
			return nil, nil, err
		}
		rr.da = newDARank(f, daRankNum(p.NPU), cfg.Stack, np.DumpJSON, bp.DumpJSON)
		rr.da.npuOwn = !opt.daByPosition
		cfg.da = rr.da
		sk = &daSink{rr.da}
	case opt.XLSX:
		var x *XLSXSink
		if x, err = NewXLSXSink(set, opt.OutDir, name); err == nil {
			x.max = cmp.Or(opt.sheetRows, x.max)
			sk = x
		}
	default:
		sk, err = NewCSVSink(set, opt.OutDir, name)
	}
	if err != nil {
		return nil, nil, err
	}
	if opt.Views != nil && view == nil {
		view = opt.Views.NewView(ViewDumps{NPU: np, Bench: bp, NPUEntries: known[0], BenchEntries: known[1]})
		viewed = takeEntries(view)
	}
	bench := Bench(BenchFile(bp.DumpJSON))
	if view != nil {
		sk = tee(sk, view)
		if viewed[1] != nil && cfg.held == nil {
			bench = &knownFile{bp.DumpJSON, viewed[1]} // the view skimmed it
		}
	}
	known, viewed = [2]*resolve.Entries{}, [2]*resolve.Entries{} // taken where they serve
	cfg.construct = [2]string{np.ConstructJSON, bp.ConstructJSON}
	sum, err := compareTable(cfg, nsrc, np, bench, bp, sk)
	if err != nil {
		sk.Drop()
		return nil, nil, err
	}
	rep.mu.Lock()
	rep.countAsked(sum)
	rep.mu.Unlock()
	rr.Rank, rr.Target, rr.Golden, rr.Summary = rank, np.DumpJSON, bp.DumpJSON, sum
	if cfg.fused != nil {
		rr.Groups = cfg.fused.Groups
		if cfg.fused.tp != nil {
			rr.Shards = cfg.fused.tp.String()
		}
	}
	if sum.Rows == 0 || sum.BenchRows == 0 {
		// msprobe writes nothing when a side has no entries ("No valid data
		// found") or nothing could be compared.
		sk.Drop()
		rr.da = nil // nor does its search know the rank
		return rr, nil, nil
	}
	if err := sk.Finish(); err != nil {
		return nil, nil, err
	}
	files := sk.files()
	if view != nil {
		f, err := set.Create(opt.OutDir, output.Name{Prefix: name.Prefix, Suffix: view.Ext(), Stamped: true}, resultMode)
		if err != nil {
			return nil, nil, err
		}
		if err := view.WriteView(f, rr); err != nil {
			return nil, nil, err
		}
		files = append(files, f)
	}
	return rr, files, nil
}

// rankConfig turns a checked rank pair's files and headers
// (checkRankFiles) into the comparison's configuration: the mode from the
// task, the stack column from the NPU stack.json.
func rankConfig(opt Options, p rankPair) (np, bp msprobe.Paths, cfg Config, err error) {
	np, bp = p.paths[0], p.paths[1]
	if np.Debug != bp.Debug {
		return np, bp, cfg, badInput("%s and %s: expected both dump.json or both debug.json", np.DumpJSON, bp.DumpJSON)
	}
	nh, bh := p.heads[0], p.heads[1]
	if nh.Task != bh.Task {
		return np, bp, cfg, badInput("%s: task %q, but %s: task %q; expected the same task on both sides",
			np.DumpJSON, nh.Task, bp.DumpJSON, bh.Task)
	}
	cfg = Config{Fuzzy: opt.Fuzzy, Debug: np.Debug, Workers: opt.Workers, fullBench: opt.fullBench, cache: opt.cache, fuzzyPack: opt.fuzzyPack, inline: opt.inline, writeAgain: opt.writeAgain, trace: opt.trace, chunks: opt.chunks}
	switch nh.Task {
	case "tensor":
		cfg.Mode = Tensor
	case "statistics":
		cfg.Mode = Statistics
	default:
		return np, bp, cfg, badInput("%s: task %q: expected \"statistics\" or \"tensor\"", np.DumpJSON, nh.Task)
	}
	if cfg.CrossFramework, err = crossFramework(p.lead, bp.DumpJSON, bh); err != nil {
		return np, bp, cfg, inputErr(err)
	}
	if !cfg.CrossFramework && opt.DataMappingFile == "" && opt.LayerMappingFile == "" {
		if nf, bf := familyOf(np.DumpJSON, nh), familyOf(bp.DumpJSON, bh); nf != "" && bf != "" && nf != bf {
			cfg.gateWarning = fmt.Sprintf("layermap: warning: %s holds %s values, %s %s values, and msprobe maps dtypes across frameworks only for a target whose framework is mindspore or mindtorch (in a step folder, its first rank's) against a PyTorch bench: here it compares dtype names, which the two frameworks spell differently (torch.float32, Float32), so their tensor rows do not pair; a mapping (-dm, -lm) turns the dtype check off",
				np.DumpJSON, nf, bp.DumpJSON, bf)
		}
	}
	if opt.StackJSON != "" {
		np.StackJSON = opt.StackJSON
	}
	if np.StackJSON != "" {
		cfg.Stack = readStacksAsync(np.StackJSON)
	}
	return np, bp, cfg, nil
}

// familyOf is the framework whose values the dump at path holds,
// "pytorch" or "mindspore", as DetectFramework reads it (a mindtorch
// dump's by its values); "" when it cannot tell.
func familyOf(path string, h msprobe.Header) string {
	fw, err := msprobe.DetectFrameworkOf(path, h)
	if err != nil {
		return ""
	}
	return fw
}

// crossFramework is msprobe's cross_frame flag, which normalises dtypes
// before the dtype gate. Only its MindSpore comparator sets it, for a
// mindspore or mindtorch target (core/compare/utils.py
// get_compare_framework; lead, see rankPair), and only against a bench
// dump detect_framework_by_dump_json takes for PyTorch: its header's
// framework when that is pytorch or mindspore, else its first typed value
// (mindspore/compare/ms_compare.py ms_compare, mindspore/compare/utils.py
// check_cross_framework). A bench it can take for neither has no torch
// or MindSpore dtype for the flag to change (msprobe refuses it).
func crossFramework(lead, bench string, bh msprobe.Header) (bool, error) {
	if lead != "mindspore" && lead != "mindtorch" {
		return false, nil
	}
	fw, err := msprobe.DetectFrameworkOf(bench, bh)
	if errors.Is(err, msprobe.ErrNoFramework) {
		return false, nil
	}
	return fw == "pytorch", err
}

// stackReader reads the NPU stack.json in the background, beside the
// inputs' reading and the bench side's skim: the stack column is first
// needed when the join takes the first NPU entry. Frames waits for it;
// ready says whether it would. The read starts with start (or with the
// first call that waits for it).
type stackReader struct {
	done  chan struct{}
	read  atomic.Bool // done is closed: cheaper to test once per entry
	s     *msprobe.Stacks
	err   error
	start func()
}

func readStacksAsync(path string) *stackReader {
	r := &stackReader{done: make(chan struct{})}
	r.start = sync.OnceFunc(func() {
		go func() {
			defer close(r.done)
			r.s, r.err = msprobe.ReadStacks(path)
			r.read.Store(true)
		}()
	})
	return r
}

// startStacks starts cfg's stack.json read, if any.
func startStacks(cfg *Config) {
	if st, ok := cfg.Stack.(*stackReader); ok {
		st.start()
	}
}

// Frames gives an entry's frames once the file is read (none when it
// could not be: the run then fails with wait's error).
func (r *stackReader) Frames(entry string) ([]string, bool) {
	r.await()
	return r.s.Frames(entry)
}

// FramesNext is Frames with a cursor (msprobe.Stacks.FramesNext).
func (r *stackReader) FramesNext(c *msprobe.StackCursor, entry string) ([]string, bool) {
	r.await()
	return r.s.FramesNext(c, entry)
}

// ready reports whether the file is read (read is set before done is
// closed).
func (r *stackReader) ready() bool { return r.read.Load() }

// await starts the read unless it is done and waits for it.
func (r *stackReader) await() {
	if !r.read.Load() {
		r.start()
		<-r.done
	}
}

// wait returns the read's error once it is done.
func (r *stackReader) wait() error {
	r.await()
	return r.err
}

// applyInputs puts the run's match sources into cfg for one rank pair:
// the data mapping, the one derived from the layer mapping (saved in the
// set, as msprobe saves it), the explicit pairs, and the tensor comparer.
// The data mapping is written in the background, or by the table's passes
// (a deferred one): written waits for it, or finishes it.
func applyInputs(opt Options, in inputs, set *output.Set, rep *Report, np, bp msprobe.Paths, suffix string, tp *tpPlan, viewed [2]*resolve.Entries, cfg *Config, rr *RankReport) (written func() error, known [2]*resolve.Entries, err error) {
	written = func() error { return nil }
	defer func() {
		if err != nil {
			written()
		}
	}()
	// viewed are the dumps' entries a view read (for the indexes), known
	// those the layer mapping read (for a view). The N:1 detection below
	// reads both dumps through indexes: built from the layer mapping's
	// reading of the dumps once the mappings are made, or else from a
	// view's entries or by skimming them beside the other inputs' work.
	// (The plan's names are read after the mappings: beside them they
	// would raise the peak memory.)
	var ixs *sideIndexes
	var entryNames [2]*msprobe.Names // where the layer mapping read them
	startIndexes := func(npu, bench *resolve.Entries) {}
	if !opt.NoFused && in.mapped() {
		ixc := *cfg
		startIndexes = func(npu, bench *resolve.Entries) { ixs = indexSides(ixc, np, bp, npu, bench) }
	}
	defer func() { ixs.close() }()
	if in.layerMapping == nil {
		startIndexes(viewed[0], viewed[1]) // a view's entries, or skims
	}
	// Before the table's progress bar, what the pair is doing (a
	// layer mapping reads both dumps' entries first).
	stage := func(what string) {
		if opt.Progress != nil {
			fmt.Fprintf(opt.Progress, "\r\033[K%s: %s", progressHead(suffix), what)
		}
	}
	if in.dataMapping != nil {
		stage("reading the data mapping")
		if cfg.DataMapping, err = in.dataMapping(); err != nil {
			return written, known, err
		}
		cfg.DataMappingSource = ByDataMap
	}
	if in.layerMapping != nil {
		stage("reading both dumps for the layer mapping")
		// The rows are left to the table's passes where the indexed join
		// reads the bench side (see dataMapLog): always but in the tests'
		// references, -fm pairing no row in order beside a mapping
		// (Config.fuzzyJoin).
		rows := opt.mapRows || cfg.fullBench || cfg.simpleBench
		dm, h, err := checkMapping(in.layerMapping, np, bp, rows, func(npu, bench *resolve.Entries, names [2]*msprobe.Names) {
			stage("resolving the layer mapping")
			known, entryNames = [2]*resolve.Entries{npu, bench}, names
		})
		if err != nil {
			return written, known, err
		}
		// The mappings are made, and the join takes entries by position:
		// the names' index goes before the N:1 detection's indexes come
		// (the tries went with the mappings).
		entryNames[0].Unindex()
		entryNames[1].Unindex()
		startIndexes(known[0], known[1]) // the dumps' entries as read: no skims
		if entryNames[0] != nil {
			// read whole, the NPU dump.json repeats no key: the table's
			// passes need not look for repeats
			cfg.npuRepeats = msprobe.NoRepeats(np.DumpJSON)
		}
		// The layer mapping's reading (both sides' tries and what they
		// were built from) is garbage now, the table's live heap a
		// fraction of it: one collection here sets the collector's goal
		// from the table's live heap, where the table's allocations
		// would otherwise grow the heap to twice the reading's.
		runtime.GC()
		rr.health, cfg.nowhere, cfg.nowhereRules = h.findings, h.entries, h.nowhere
		f, err := set.Create(opt.OutDir, output.Name{Prefix: "data_mapping" + suffix + "_", Suffix: ".yaml", Stamped: true}, resultMode)
		if err != nil {
			return written, known, err
		}
		if dm.Deferred() {
			// written as the table's passes read the NPU entries
			log := &dataMapLog{dm: dm, w: newDataMappingWriter(f)}
			cfg.dataMapLog = log
			written = sync.OnceValue(log.close)
		} else {
			done := make(chan error, 1)
			go func() { done <- writeDataMapping(f, dm.Each) }()
			written = sync.OnceValue(func() error { return <-done })
		}
		// msprobe's MindSpore compare replaces the -dm data mapping with
		// the one it derives (ms_compare)
		cfg.DataMapping, cfg.layerMap, cfg.DataMappingSource = nil, dm, ByLayerMap
	}
	if len(in.pairs) > 0 {
		pm, lacking, err := pairRows(in.pairs, np, bp, cfg)
		if err != nil {
			return written, known, err
		}
		cfg.Pairs = pm // not nil, even when it pairs no row of this rank pair
		rr.lacking = lacking
	}
	var groups []mapping.ModulePair
	for _, p := range in.pairs {
		if p.Group() {
			groups = append(groups, p)
		}
	}
	if opt.NoFused {
		groups = nil
	}
	detect := !opt.NoFused && cfg.mapped()
	if detect {
		stage("looking for N:1 groups")
	}
	if cfg.fused, err = planFused(cfg, np, bp, groups, detect, tp, ixs, entryNames); err != nil {
		return written, known, err
	}
	if in.layerMapping != nil {
		// beside the table, not beside the mappings' and the N:1
		// detection's tables (runRank starts it otherwise)
		startStacks(cfg)
	}
	// (and again: the N:1 plan's reading of construct.json may have
	// indexed the names)
	entryNames[0].Unindex()
	entryNames[1].Unindex()
	if cfg.Mode == Tensor {
		newTensor := opt.newTensor
		if newTensor == nil {
			newTensor = NewTensorFiles
		}
		tc, err := newTensor(np, bp)
		if err != nil {
			return written, known, err
		}
		mt := &missingTensors{TensorComparer: tc, npu: np, bench: bp}
		cfg.Tensor, rr.tensors = mt, mt
	}
	return written, known, nil
}

// compareTable writes the table of one rank pair into sk. md5 mode needs
// an md5 key on both sides, which only a full scan tells: the mode is
// guessed from the first tensor of the NPU side, and the table written
// again when the scan says otherwise.
func compareTable(cfg Config, nsrc *fileSource, np msprobe.Paths, bench Bench, bp msprobe.Paths, sk sink) (*Summary, error) {
	if cfg.Mode == Statistics && peekMD5(np.DumpJSON) {
		cfg.Mode = MD5
	}
	for attempt := 0; ; attempt++ {
		nsrc.noStats = cfg.statsUnread()
		sum, err := Compare(nsrc.source(), bench, cfg, sk)
		if err != nil {
			// a "data" repeating keys (the rare path): read it again as Python does
			plan, ferr := msprobe.FindRepeatsAfter(err)
			if ferr != nil {
				return nil, inputErr(ferr)
			}
			switch {
			case plan == nil:
				return nil, inputErr(err)
			case plan.Path() == nsrc.path && nsrc.plan == nil:
				nsrc.plan = plan
			case plan.Path() == bp.DumpJSON && cfg.BenchRepeats == nil:
				cfg.BenchRepeats = plan
			default:
				return nil, inputErr(err)
			}
			if err := sk.Reset(); err != nil {
				return nil, err
			}
			if r, ok := cfg.Tensor.(interface{ Reset() }); ok {
				r.Reset() // the rows come again, read as Python reads them
			}
			attempt--
			continue
		}
		if err != nil {
			return nil, inputErr(err)
		}
		if e, ok := cfg.Tensor.(interface{ Err() error }); ok && e.Err() != nil {
			return nil, asInput(e.Err())
		}
		if attempt == 1 || cfg.Mode == Tensor || nsrc.hdr.MD5 == sum.benchMD5 && (cfg.Mode == MD5) == nsrc.hdr.MD5 {
			return sum, nil
		}
		if nsrc.hdr.MD5 != sum.benchMD5 {
			return nil, badInput("%s and %s: expected md5 on both sides or on neither (one dump was taken with summary_mode md5)",
				np.DumpJSON, bp.DumpJSON)
		}
		if nsrc.hdr.MD5 {
			cfg.Mode = MD5
		} else {
			cfg.Mode = Statistics
		}
		if err := sk.Reset(); err != nil {
			return nil, err
		}
	}
}

// writeDataMapping adds a derived data mapping, as YAML, to the set: as
// msprobe saves it (see pairText). each gives the pairs in order, each
// name in two parts (see resolve.DataMap.Each).
func writeDataMapping(f io.Writer, each func(func(npu, npuSuffix, bench, benchSuffix string) error) error) error {
	w := newYAMLPairs(f)
	if err := each(w.pair); err != nil {
		return err
	}
	return w.finish()
}

// dataMappingWriter writes a derived data mapping as writeDataMapping
// does, off the goroutine that gives it the pairs (the join's, for a
// deferred map): pair appends the pair's text to a batch, and a goroutine
// of the writer's own writes the full batches. A write's error is
// returned by a later pair, or by finish. Call finish (or abandon) once
// done.
type dataMappingWriter struct {
	text  pairText
	batch []byte // the text of pairs not handed over
	h     handOff[[]byte]
}

// emptyDataMapping is a data mapping without pairs, as yaml.v3 writes an
// empty mapping.
const emptyDataMapping = "{}\n"

// dataMappingBatch is the bytes of pairs handed over at a time.
const dataMappingBatch = 64 << 10

func newDataMappingWriter(f io.Writer) *dataMappingWriter {
	d := &dataMappingWriter{}
	wrote := false // a pair (every one is text), on the writing goroutine
	d.h = handOff[[]byte]{
		work: func(b []byte) error {
			if len(b) == 0 {
				return nil
			}
			wrote = true
			_, err := f.Write(b)
			return err
		},
		end: func() error {
			if wrote {
				return nil
			}
			_, err := io.WriteString(f, emptyDataMapping)
			return err
		},
		fresh: func() []byte { return make([]byte, 0, dataMappingBatch) },
		empty: func(b []byte) []byte { return b[:0] }}
	return d
}

// pair takes the next pair, each name in two parts.
func (d *dataMappingWriter) pair(n, ns, bn, bs string) error {
	var err error
	if d.batch, err = d.text.appendPair(d.batch, n, ns, bn, bs); err != nil {
		return err
	}
	if len(d.batch) < dataMappingBatch {
		return nil
	}
	d.batch, err = d.h.give(d.batch, true)
	return err
}

// finish writes the pairs taken, ends the mapping ("{}" when it had no
// pair) and flushes it.
func (d *dataMappingWriter) finish() error {
	var err error
	if d.batch, err = d.h.give(d.batch, false); err != nil {
		d.abandon()
		return err
	}
	return d.close()
}

// abandon stops the writing goroutine, leaving the pairs it was not given
// unwritten.
func (d *dataMappingWriter) abandon() {
	d.h.err = errAbandoned
	d.close()
}

var errAbandoned = errors.New("data mapping abandoned")

// close closes the queue and waits for the writing goroutine.
func (d *dataMappingWriter) close() error { return d.h.close() }

// yamlPairs writes a derived data mapping as msprobe saves it (see
// pairText).
type yamlPairs struct {
	w     *bufio.Writer
	text  pairText
	empty bool
}

func newYAMLPairs(f io.Writer) *yamlPairs {
	return &yamlPairs{w: bufio.NewWriterSize(f, 64<<10), empty: true}
}

// pair writes the next pair, each name in two parts.
func (d *yamlPairs) pair(n, ns, bn, bs string) error {
	d.empty = false
	if d.w.Available() < len(n)+len(ns)+len(bn)+len(bs)+len("? \n: \n") {
		if err := d.w.Flush(); err != nil {
			return err
		}
	}
	b, err := d.text.appendPair(d.w.AvailableBuffer(), n, ns, bn, bs) // in place, where it fits
	if err != nil {
		return err
	}
	_, err = d.w.Write(b)
	return err
}

// pairText makes the text of a derived data mapping's pairs as msprobe
// saves them (PyYAML's yaml.dump): the names that YAML writes plain, row
// names all, are written directly, a long key as an explicit one
// (simpleKeyMax). Any other pair goes through yaml.v3's encoder as
// strings: they read back as the same strings, though quoted as yaml.v3
// quotes ("true" where PyYAML writes 'true'); msprobe's row names never
// need it. The pairs of one entry's rows share their names' first parts
// (the entry names), so what makes a name plain is worked out once for
// them.
type pairText struct {
	npu, bench plainPart // the last first parts
}

// simpleKeyMax is the longest plain key msprobe's yaml.dump (PyYAML)
// writes as a simple key ("key: value"): a key whose length with its tag
// ("!!str") is 128 or more is written as an explicit one ("? key", then
// ": value" on the next line). yaml.v3 draws that line at 128 bytes of
// the key alone; MindSpeed's row names often cross both.
const simpleKeyMax = 128 - len("!!str") - 1

// appendPair appends the text of one pair, each name in two parts.
func (t *pairText) appendPair(b []byte, n, ns, bn, bs string) ([]byte, error) {
	if t.npu.plainWith(n, ns) && t.bench.plainWith(bn, bs) {
		if len(n)+len(ns) > simpleKeyMax { // plain names are ASCII: a byte a character
			b = append(append(append(append(b, "? "...), n...), ns...), "\n: "...)
		} else {
			b = append(append(append(b, n...), ns...), ": "...)
		}
		return append(append(append(b, bn...), bs...), '\n'), nil
	}
	node := &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{
		{Kind: yaml.ScalarNode, Tag: "!!str", Value: n + ns}, {Kind: yaml.ScalarNode, Tag: "!!str", Value: bn + bs}}}
	one, err := yaml.Marshal(node)
	if err != nil {
		return b, err
	}
	return append(b, one...), nil
}

// plainPart remembers, for the first part of a name, whether each of its
// bytes is one plainYAML allows and whether the first is a letter.
type plainPart struct {
	s            []byte // a copy: a caller may write the next name where this one was
	chars, first bool
}

// plainWith is plainYAML(p+q).
func (c *plainPart) plainWith(p, q string) bool {
	n := len(p) + len(q)
	if n <= 5 || n > 1000 { // the words YAML reads otherwise are short
		return n <= 1000 && plainYAML(p+q)
	}
	if string(c.s) != p {
		c.s = append(c.s[:0], p...)
		c.chars, c.first = plainBytes(p), len(p) > 0 && isLetter(p[0])
	}
	if len(p) == 0 {
		return isLetter(q[0]) && plainBytes(q)
	}
	return c.first && c.chars && plainBytes(q)
}

func isLetter(c byte) bool { return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' }

// plainBytes reports whether every byte of s is one a plain name may
// hold past its first: a letter, a digit or . _ - /.
func plainBytes[S string | []byte](s S) bool {
	for i := 0; i < len(s); i++ {
		if !plainByte[s[i]] {
			return false
		}
	}
	return true
}

// plainByte is plainBytes of each byte.
var plainByte = func() (t [256]bool) {
	for c := range t {
		b := byte(c)
		t[c] = isLetter(b) || b >= '0' && b <= '9' || b == '.' || b == '_' || b == '-' || b == '/'
	}
	return
}()

// finish ends the mapping ("{}" when it had no pair) and flushes it.
func (d *yamlPairs) finish() error {
	if d.empty {
		if _, err := d.w.WriteString(emptyDataMapping); err != nil {
			return err
		}
	}
	return d.w.Flush()
}

// dataMapLog writes a deferred data mapping (resolve.DataMap.Deferred) as
// the compare's passes read the NPU entries, in file order, on the join's
// goroutine: whether a bench entry has a row is asked of the bench index
// (suffixCheck), whose parses of the entries the join mostly makes anyway.
// Every pass reads the same entries in the same order (the map is made so
// only for dump.json files repeating no key), so each pass writes the
// entries past those written before, and a pass cut short (the compare
// reading again) leaves nothing twice.
type dataMapLog struct {
	dm      *resolve.DataMap
	w       *dataMappingWriter
	bench   *suffixCheck // the pass's
	next    int          // entries the pass under way read
	written int          // entries written
	done    bool         // a pass read every entry
	err     error        // the first write's error
	rows    []string
}

// passStart starts a pass over the NPU side, its bench rows told by b.
func (l *dataMapLog) passStart(b *suffixCheck) { l.next, l.bench = 0, b }

// rowsOf keeps the names of the rows of e, before the join: the writer
// may take the rows back once they are joined (the names stay valid).
func (l *dataMapLog) rowsOf(e *npuEntry) {
	l.rows = l.rows[:0]
	for i := range e.rows {
		l.rows = append(l.rows, e.rows[i].it.Name)
	}
}

// entry writes the pairs of the pass's next NPU entry, named name (at
// member, msprobe.Entry.Member), its rows' names kept by rowsOf, after
// the join read its bench rows; unless an earlier pass wrote them.
func (l *dataMapLog) entry(name string, member int32) error {
	if l.err != nil {
		return l.err
	}
	l.next++
	if l.next <= l.written {
		return nil
	}
	l.written++
	if p := l.bench.lastPair(); p != nil && p.set && p.member == int(member) {
		// the join looked the entry's pair up for its rows
		if p.ok {
			l.err = l.dm.EntryPairsOf(name, unsafe.String(unsafe.SliceData(p.bench), len(p.bench)), p.at, l.rows, l.has, l.w.pair)
		}
		return l.err
	}
	l.err = l.dm.EntryPairs(name, int(member), l.rows, l.has, l.w.pair)
	return l.err
}

func (l *dataMapLog) has(at int32, suffix string) (bool, error) {
	ok := l.bench.has(at, suffix)
	return ok, l.bench.err
}

// passDone records that a pass read every entry of the NPU side.
func (l *dataMapLog) passDone() { l.done = true }

// close finishes the file once a pass read every entry, after the
// compare (an error when none did: the compare failed before it).
func (l *dataMapLog) close() error {
	switch {
	case l.err != nil:
		l.w.abandon()
		return l.err
	case !l.done:
		l.w.abandon()
		return errors.New("data mapping: the compare read no pass of the NPU dump to the end")
	}
	return l.w.finish()
}

// plainYAML reports a string yaml.v3 writes as a plain scalar on one
// line: a letter first, then letters, digits and . _ - / only, and no
// word YAML reads as a bool or null.
func plainYAML[S string | []byte](s S) bool {
	if len(s) == 0 || !isLetter(s[0]) || len(s) > 1000 || !plainBytes(s) {
		return false
	}
	if len(s) > 5 {
		return true
	}
	var low [5]byte
	for i := 0; i < len(s); i++ {
		low[i] = s[i] | 0x20 // ASCII letters and digits only, as checked above
	}
	switch string(low[:len(s)]) {
	case "y", "n", "yes", "no", "on", "off", "true", "false", "null":
		return false
	}
	return true
}

var errPeeked = errors.New("peeked")

// peekMD5 tells whether the first tensor item of a dump carries an md5 (a
// statistics dump taken with summary_mode md5).
func peekMD5(path string) bool {
	found := false
	msprobe.ScanFile(path, func(e *msprobe.Entry) error {
		for i := range e.Items {
			it := &e.Items[i]
			if strings.HasSuffix(it.Type, "Tensor") && !it.NoneItem {
				found = it.MD5 != "" && it.MD5 != "00000000"
				return errPeeked
			}
		}
		return nil
	})
	return found
}
