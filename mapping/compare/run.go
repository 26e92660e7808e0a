package compare

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/layermap/layermap/mapping/output"
	"github.com/layermap/layermap/printparse/msprobe"
	"github.com/layermap/layermap/printparse/source"
)

// Options describe one `layermap compare` run.
type Options struct {
	Target, Golden string // -tp / -gp: dump.json files, rank folders or step folders
	OutDir         string // -o (default ./output)
	XLSX           bool
	Fuzzy          bool
	DataMapping    map[string]string // -dm
	// LayerMapping, when set, derives a data mapping for one rank pair
	// (msprobe's generate_data_mapping_by_layer_mapping), as ordered
	// [NPU row, bench row] pairs; rows matched through it count as
	// ByLayerMap, and it is saved as data_mapping{suffix}_{ts}.yaml in the
	// output folder as msprobe does.
	LayerMapping func(npuDir, benchDir string) ([][2]string, error)
	// Pairs derives explicit row pairs for one rank pair (--pairs).
	Pairs func(npu, bench msprobe.Paths) (map[string]string, error)
	// View, when set, adds a file beside each rank's table to the run's
	// output set (compare --html): the ViewSink it returns for the rank
	// pair receives the table's rows as they are written, and writes the
	// file once the table is complete.
	View func(npu, bench msprobe.Paths) ViewSink
	// NewTensor builds the tensor-mode metric calculator for a rank pair.
	NewTensor func(npu, bench msprobe.Paths) (TensorComparer, error)
	// StackJSON, when set, is the NPU stack.json to use instead of the one
	// next to the NPU dump.json (compare.json's stack_path).
	StackJSON string
	Now       func() time.Time
	Workers   int
	// Progress, when set, is called now and then with the bytes of the
	// target dump.json read so far and its size.
	Progress func(rank string, done, total int64)

	// fullBench joins against the whole bench side in memory instead of
	// the bench index (tests compare the two).
	fullBench bool
	// cache overrides how many parsed bench entries the index keeps (tests).
	cache int
}

// RankReport is the outcome of one rank pair.
type RankReport struct {
	Rank    string   `json:"rank"` // "" for a file pair, else the NPU rank folder name
	Target  string   `json:"target"`
	Golden  string   `json:"golden"`
	Files   []string `json:"files"`
	Summary *Summary `json:"summary"`
}

// Report is the outcome of a run.
type Report struct {
	Ranks []RankReport `json:"ranks"`
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
	if opt.Now == nil {
		opt.Now = time.Now
	}
	stamp := opt.Now()
	set := output.NewSet()
	rep := &Report{}
	files, err := run(opt, set, rep)
	if err != nil {
		set.Abort()
		return rep, err
	}
	if err := set.Commit(stamp); err != nil {
		return rep, err
	}
	for i, fs := range files {
		for _, f := range fs {
			rep.Ranks[i].Files = append(rep.Ranks[i].Files, f.Path())
		}
	}
	return rep, nil
}

// run compares into set, adding a RankReport per rank pair to rep; files
// lists each rank's table files.
func run(opt Options, set *output.Set, rep *Report) (files [][]*output.File, err error) {
	if sub := mixDirs(opt.Target, opt.Golden); len(sub) > 0 {
		// MindSpore mix dumps (graph/ and pynative/ side by side): each
		// common <name>/<step> pair is compared into OUT/<name>/<step>.
		for _, s := range sub {
			o := opt
			o.Target, o.Golden = filepath.Join(opt.Target, s), filepath.Join(opt.Golden, s)
			o.OutDir = filepath.Join(opt.OutDir, s)
			fs, err := run(o, set, rep)
			files = append(files, fs...)
			if err != nil {
				return files, err
			}
		}
		return files, nil
	}
	pairs, dirMode, err := rankPairs(opt.Target, opt.Golden)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(opt.OutDir, 0o755); err != nil {
		return nil, fmt.Errorf("output folder: %w", err)
	}
	for _, p := range pairs {
		suffix := ""
		if dirMode {
			suffix = "_" + p.NPU.Name
		}
		rr, fs, err := runRank(opt, set, p, suffix)
		if err != nil {
			return files, err
		}
		rep.Ranks = append(rep.Ranks, *rr)
		files = append(files, fs)
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
}

func rankPairs(target, golden string) ([]rankPair, bool, error) {
	ts, err := os.Stat(target)
	if err != nil {
		return nil, false, badInput("target: %v", err)
	}
	gs, err := os.Stat(golden)
	if err != nil {
		return nil, false, badInput("golden: %v", err)
	}
	if ts.IsDir() != gs.IsDir() {
		return nil, false, badInput("%s and %s: expected two dump.json files or two folders", target, golden)
	}
	if !ts.IsDir() {
		return []rankPair{{msprobe.RankDir{Path: filepath.Dir(target)}, msprobe.RankDir{Path: filepath.Dir(golden)}}}, false, nil
	}
	isRank := func(d string) bool {
		_, e1 := os.Stat(filepath.Join(d, msprobe.DumpJSONName))
		_, e2 := os.Stat(filepath.Join(d, msprobe.DebugJSONName))
		return e1 == nil || e2 == nil
	}
	if isRank(target) && isRank(golden) {
		return []rankPair{{msprobe.RankDir{Path: target}, msprobe.RankDir{Path: golden}}}, false, nil
	}
	tr, err := msprobe.StepRanks(target)
	if err != nil {
		return nil, false, asInput(fmt.Errorf("target: %w", err))
	}
	gr, err := msprobe.StepRanks(golden)
	if err != nil {
		return nil, false, asInput(fmt.Errorf("golden: %w", err))
	}
	rp, err := msprobe.PairRanks(tr, gr)
	if err != nil {
		return nil, false, asInput(err)
	}
	out := make([]rankPair, len(rp))
	for i, p := range rp {
		out[i] = rankPair{p.NPU, p.Bench}
	}
	return out, true, nil
}

// fileSource streams a dump.json; the header of the last scan is kept and
// the bytes read so far are counted for progress.
type fileSource struct {
	path string
	hdr  msprobe.Header
	read atomic.Int64
	size int64
}

type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
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
		h, err := msprobe.Scan(countingReader{fh, &f.read}, f.path, yield)
		f.hdr = h
		return err
	}
}

// inputErr marks file-system errors on the inputs as input problems.
func inputErr(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return asInput(err)
	}
	return err
}

// ViewSink receives a rank's table as it is written, then writes a file
// beside it (Options.View).
type ViewSink interface {
	RowSink
	// Ext is the file's extension; it is named as the table otherwise.
	Ext() string
	// WriteView writes the file for the finished table.
	WriteView(w io.Writer, rr *RankReport) error
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

// sink is a RowSink writing into an output set.
type sink interface {
	RowSink
	Finish() error // flush and name the files
	Drop()         // remove the table from the set
	files() []*output.File
}

func runRank(opt Options, set *output.Set, p rankPair, suffix string) (*RankReport, []*output.File, error) {
	np, err := msprobe.Locate(p.NPU.Path)
	if err != nil {
		return nil, nil, asInput(fmt.Errorf("target: %w", err))
	}
	bp, err := msprobe.Locate(p.Bench.Path)
	if err != nil {
		return nil, nil, asInput(fmt.Errorf("golden: %w", err))
	}
	if np.Debug != bp.Debug {
		return nil, nil, badInput("%s and %s: expected both dump.json or both debug.json", np.DumpJSON, bp.DumpJSON)
	}
	nh, err := msprobe.ReadHeader(np.DumpJSON)
	if err != nil {
		return nil, nil, inputErr(err)
	}
	bh, err := msprobe.ReadHeader(bp.DumpJSON)
	if err != nil {
		return nil, nil, inputErr(err)
	}
	if nh.Task != bh.Task {
		return nil, nil, badInput("%s: task %q, but %s: task %q; expected the same task on both sides",
			np.DumpJSON, nh.Task, bp.DumpJSON, bh.Task)
	}
	cfg := Config{Fuzzy: opt.Fuzzy, Debug: np.Debug, Workers: opt.Workers, fullBench: opt.fullBench, cache: opt.cache}
	switch nh.Task {
	case "tensor":
		cfg.Mode = Tensor
	case "statistics":
		cfg.Mode = Statistics
	default:
		return nil, nil, badInput("%s: task %q: expected \"statistics\" or \"tensor\"", np.DumpJSON, nh.Task)
	}
	cfg.CrossFramework = nh.Framework != bh.Framework
	if opt.StackJSON != "" {
		np.StackJSON = opt.StackJSON
	}
	if np.StackJSON != "" {
		st, err := msprobe.ReadStack(np.StackJSON)
		if err != nil {
			return nil, nil, inputErr(err)
		}
		cfg.Stack = st
	}
	if opt.DataMapping != nil {
		cfg.DataMapping, cfg.DataMappingSource = opt.DataMapping, ByDataMap
	}
	if opt.LayerMapping != nil {
		dm, err := opt.LayerMapping(np.Dir, bp.Dir)
		if err != nil {
			return nil, nil, err
		}
		if err := writeDataMapping(set, opt.OutDir, output.Name{Prefix: "data_mapping" + suffix + "_", Suffix: ".yaml", Stamped: true}, dm); err != nil {
			return nil, nil, err
		}
		merged := make(map[string]string, len(dm)+len(opt.DataMapping))
		for _, kv := range dm {
			merged[kv[0]] = kv[1]
		}
		for k, v := range opt.DataMapping {
			merged[k] = v
		}
		cfg.DataMapping, cfg.DataMappingSource = merged, ByLayerMap
	}
	if opt.Pairs != nil {
		pm, err := opt.Pairs(np, bp)
		if err != nil {
			return nil, nil, err
		}
		cfg.Pairs = pm
	}
	if cfg.Mode == Tensor {
		nt := opt.NewTensor
		if nt == nil {
			nt = NewTensorFiles
		}
		tc, err := nt(np, bp)
		if err != nil {
			return nil, nil, err
		}
		cfg.Tensor = tc
	}
	rank := suffix
	if rank != "" {
		rank = rank[1:]
	}
	nsrc := &fileSource{path: np.DumpJSON}
	if opt.Progress != nil {
		cfg.Progress = func(int) { opt.Progress(rank, nsrc.read.Load(), nsrc.size) }
	}
	name := outputName(np.Debug, suffix, opt.XLSX)
	var sk sink
	if opt.XLSX {
		sk, err = NewXLSXSink(set, opt.OutDir, name)
	} else {
		sk, err = NewCSVSink(set, opt.OutDir, name)
	}
	if err != nil {
		return nil, nil, err
	}
	var view ViewSink
	if opt.View != nil {
		view = opt.View(np, bp)
		sk = teeSink{sk, view}
	}
	// md5 mode needs an md5 key on both sides, which only a full scan
	// tells; guess from the first tensor of the NPU side and rerun when the
	// scan says otherwise.
	if cfg.Mode == Statistics && peekMD5(np.DumpJSON) {
		cfg.Mode = MD5
	}
	var sum *Summary
	for attempt := 0; attempt < 2; attempt++ {
		sum, err = Compare(nsrc.source(), BenchFile(bp.DumpJSON), cfg, sk)
		if err != nil {
			sk.Drop()
			return nil, nil, inputErr(err)
		}
		if e, ok := cfg.Tensor.(interface{ Err() error }); ok && e.Err() != nil {
			sk.Drop()
			return nil, nil, asInput(e.Err())
		}
		if cfg.Mode == Tensor || nsrc.hdr.MD5 == sum.benchMD5 && (cfg.Mode == MD5) == nsrc.hdr.MD5 {
			break
		}
		if nsrc.hdr.MD5 != sum.benchMD5 {
			sk.Drop()
			return nil, nil, badInput("%s and %s: expected md5 on both sides or on neither (one dump was taken with summary_mode md5)",
				np.DumpJSON, bp.DumpJSON)
		}
		if nsrc.hdr.MD5 {
			cfg.Mode = MD5
		} else {
			cfg.Mode = Statistics
		}
		if err := sk.Reset(); err != nil {
			sk.Drop()
			return nil, nil, err
		}
	}
	rr := &RankReport{Rank: rank, Target: np.DumpJSON, Golden: bp.DumpJSON, Summary: sum}
	if sum.Rows == 0 || sum.BenchRows == 0 {
		// msprobe writes nothing when a side has no entries ("No valid data
		// found") or nothing could be compared.
		sk.Drop()
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

// writeDataMapping adds a derived data mapping, as YAML, to the set.
func writeDataMapping(set *output.Set, dir string, name output.Name, dm [][2]string) error {
	n := &yaml.Node{Kind: yaml.MappingNode}
	for _, kv := range dm {
		n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: kv[0]},
			&yaml.Node{Kind: yaml.ScalarNode, Value: kv[1]})
	}
	b, err := yaml.Marshal(n)
	if err != nil {
		return err
	}
	_, err = set.WriteFile(dir, name, b, resultMode)
	return err
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
