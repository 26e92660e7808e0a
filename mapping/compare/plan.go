package compare

import (
	"cmp"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/layermap/layermap/mapping"
	"github.com/layermap/layermap/mapping/resolve"
	"github.com/layermap/layermap/printparse/msprobe"
)

// planFused builds a rank pair's N:1 plan: the sidecar's groups, the
// groups the dumps' shapes show behind mapped pairs (detect), and the
// tensor-parallel shards. nil when there is nothing to combine.
//
// known are both dumps' entry names where the layer mapping read them
// (see readBothNames).
// Detection reads both dumps through the indexes of ixs (indexSides),
// and leaves the bench one to the compare's join in cfg.held.
func planFused(cfg *Config, np, bp msprobe.Paths, groups []mapping.ModulePair, detect bool, tp *tpPlan, ixs *sideIndexes, known [2]*msprobe.Names) (*fusedPlan, error) {
	if len(groups) == 0 && !detect && tp == nil {
		return nil, nil
	}
	pl := &fusedPlan{calls: map[string]*groupCall{}, tp: tp}
	if len(groups) == 0 && !detect {
		return pl, nil
	}
	if detect && ixs != nil {
		// the detection's indexes skimmed the dumps: not again for their names
		for i, n := range ixs.names() {
			known[i] = cmp.Or(known[i], n)
		}
	}
	nn, bn, err := readBothNames(np, bp, cfg, known)
	if err != nil {
		return nil, inputErr(err)
	}
	for _, g := range groups {
		if !pl.addGroup(g, nn, bn) {
			pl.Unknown = append(pl.Unknown, g)
		}
	}
	if err := errors.Join(nn.err, bn.err); err != nil {
		return nil, inputErr(err)
	}
	if detect {
		nix, bix, err := ixs.take(cfg, np, bp)
		if err != nil {
			return nil, inputErr(err)
		}
		found, err := detectGroups(cfg, nix, bix, nn, bn, pl)
		nix.close()
		if err != nil || tp != nil {
			bix.close()
		} else {
			cfg.held = &heldIndex{path: bp.DumpJSON, ix: bix}
		}
		if err != nil {
			return nil, err
		}
		for _, g := range found {
			pl.addGroup(g, nn, bn)
			pl.Detected = append(pl.Detected, g)
		}
		if err := errors.Join(nn.err, bn.err); err != nil {
			cfg.held.close() // (the compare that would take it does not run)
			cfg.held = nil
			return nil, inputErr(err)
		}
	}
	return pl, nil
}

// detectGroups finds the N:1 groups a mapping implies without saying
// so. A mapping line may pair a fused module with one of its parts
// (MindSpeed's linear_fc1 with LLaMA-Factory's up_proj): the first
// forward outputs of the pair then differ along one axis. The other parts
// are the partner's siblings (modules of the same parent) whose first
// forward call read the very same input (equal shape and statistics: the
// tensor all parts read) and whose outputs differ from the partner's only
// along that axis; exactly one set of them must make up the difference.
// The group's parts are in the order of their first calls, its kind
// named by the parts' names. Both directions: the fused module may be on
// either side.
func detectGroups(cfg *Config, nix, bix *benchIndex, nn, bn *dumpNames, pl *fusedPlan) ([]mapping.ModulePair, error) {
	// the entries asked for only: a first forward call of each module,
	// sparse in the files (a prefetcher of every entry would parse all
	// those between). The bench index goes on to the compare
	// (heldIndex.take), whose join looks ahead (lookAhead).
	nix.reset(false)
	bix.reset(false)
	var refs []rowRef
	var ferr error
	// a deferred layer mapping asks the bench index whether a
	// bench entry has a row
	mcfg := *cfg
	mcfg.suffixCheck = &suffixCheck{ix: bix}
	row := func(ix *benchIndex, key string) *msprobe.Item {
		if ferr != nil {
			return nil
		}
		if refs, ferr = ix.lookup(key, refs); ferr != nil || len(refs) == 0 {
			return nil
		}
		_, r := ix.row(refs[0])
		it := r.it
		return &it
	}
	// the forward modules in the order of their first calls (one entry
	// is one module's call: no ties)
	type firstCall struct {
		path string
		at   int32
	}
	var keys []firstCall
	for k, calls := range nn.calls {
		if k.dir == "forward" {
			keys = append(keys, firstCall{k.path, calls[0]})
		}
	}
	slices.SortFunc(keys, func(a, b firstCall) int { return cmp.Compare(a.at, b.at) })
	// Their first calls, asked for in this order, are parsed ahead on a
	// goroutine of their own.
	firsts := make([]int32, len(keys))
	for i, k := range keys {
		firsts[i] = k.at
	}
	nix.prefetchOf(firsts)
	var out []mapping.ModulePair
	taken := [2]map[string]bool{{}, {}}
	for _, k := range keys {
		path, first := k.path, k.at
		if taken[0][path] || pl.calls[nn.name(first)] != nil {
			continue
		}
		o := row(nix, nn.keyPrefix(first)+".output.0")
		if o == nil {
			continue
		}
		key, src, _ := joinKey(&sideRow{it: *o, key: o.Name, pos: first + 1}, &mcfg, nil)
		if ferr = cmp.Or(ferr, mcfg.suffixCheck.err); ferr != nil {
			break
		}
		if src == ByName {
			continue // not a mapped pair
		}
		b := row(bix, key)
		if b == nil {
			continue
		}
		axis, npuBigger := differAxis(o.Shape, b.Shape)
		if axis < 0 {
			continue
		}
		bpath, _, bdir, ok := msprobe.ModuleEntry(b.Entry)
		if !ok || bdir != "forward" || taken[1][bpath] {
			continue
		}
		var g mapping.ModulePair
		if npuBigger {
			call := bn.callOf(b.Entry, bpath, "forward")
			parts := findParts(bn, bix, row, bpath, call, axis, dims(o.Shape)[axis])
			if parts == nil {
				continue
			}
			g = mapping.ModulePair{NPU: path, BenchParts: parts, Kind: kindOfParts(parts)}
		} else {
			parts := findParts(nn, nix, row, path, 0, axis, dims(b.Shape)[axis])
			if parts == nil {
				continue
			}
			g = mapping.ModulePair{NPUParts: parts, Bench: bpath, Kind: kindOfParts(parts)}
		}
		for _, m := range g.NPUModules() {
			taken[0][m] = true
		}
		for _, m := range g.BenchModules() {
			taken[1][m] = true
		}
		out = append(out, g)
	}
	return out, ferr
}

func dims(s string) []int {
	d, _ := parseShape(s)
	return d
}

// differAxis is the one axis along which two shapes of the same rank
// differ (-1: none or several), and whether a's size is the larger there.
func differAxis(a, b string) (int, bool) {
	da, ok1 := parseShape(a)
	db, ok2 := parseShape(b)
	if !ok1 || !ok2 || len(da) != len(db) {
		return -1, false
	}
	axis := -1
	for i := range da {
		if da[i] != db[i] {
			if axis >= 0 {
				return -1, false
			}
			axis = i
		}
	}
	if axis < 0 {
		return -1, false
	}
	return axis, da[axis] > db[axis]
}

// findParts finds the parts of a group whose known part is member (its
// call-th forward call): member and the siblings that read the same input
// and whose outputs add up with member's to size along axis. nil when no
// set, or more than one, makes up the size.
func findParts(d *dumpNames, ix *benchIndex, row func(*benchIndex, string) *msprobe.Item, member string, call, axis, size int) []string {
	calls := d.moduleCalls(member, "forward")
	if call < 0 || call >= len(calls) {
		return nil
	}
	in0, out0 := row(ix, d.keyPrefix(calls[call])+".input.0"), row(ix, d.keyPrefix(calls[call])+".output.0")
	if in0 == nil || out0 == nil {
		return nil
	}
	need := size - dims(out0.Shape)[axis]
	type cand struct {
		path string
		size int
		at   int32
	}
	var cands []cand
	for _, s := range d.siblings(member, "forward") {
		sc := d.moduleCalls(s, "forward")
		if len(sc) <= call {
			continue
		}
		si, so := row(ix, d.keyPrefix(sc[call])+".input.0"), row(ix, d.keyPrefix(sc[call])+".output.0")
		if si == nil || so == nil || si.Shape != in0.Shape || !sameStats(si, in0) {
			continue
		}
		if a, _ := differAxis(so.Shape, out0.Shape); a != axis && so.Shape != out0.Shape {
			continue
		}
		cands = append(cands, cand{s, dims(so.Shape)[axis], sc[0]})
	}
	if len(cands) == 0 || len(cands) > 16 || need <= 0 {
		return nil
	}
	found, best := -1, 0
	for mask := 1; mask < 1<<len(cands); mask++ {
		sum := 0
		for i, c := range cands {
			if mask&(1<<i) != 0 {
				sum += c.size
			}
		}
		if sum != need {
			continue
		}
		if found >= 0 {
			return nil // ambiguous
		}
		found, best = mask, mask
	}
	if found < 0 {
		return nil
	}
	parts := []cand{{member, 0, calls[0]}}
	for i, c := range cands {
		if best&(1<<i) != 0 {
			parts = append(parts, c)
		}
	}
	slices.SortFunc(parts, func(a, b cand) int { return int(a.at - b.at) })
	out := make([]string, len(parts))
	for i, p := range parts {
		out[i] = p.path
	}
	return out
}

// sameStats reports whether two items hold the same four statistics.
func sameStats(a, b *msprobe.Item) bool {
	for i := range a.Stats {
		x, y := a.Stats[i], b.Stats[i]
		if x.Kind != y.Kind || x.Num != y.Num && !(x.Num != x.Num && y.Num != y.Num) {
			return false
		}
	}
	return true
}

// kindOfParts names a group by its parts' last names: gate and up make a
// gated MLP, q/k/v an attention projection, anything else "fused".
func kindOfParts(parts []string) string {
	has := func(pred func(string) bool) bool {
		for _, p := range parts {
			if pred(p[strings.LastIndexByte(p, '.')+1:]) {
				return true
			}
		}
		return false
	}
	token := func(t string) func(string) bool {
		return func(n string) bool { return slices.Contains(strings.Split(n, "_"), t) }
	}
	switch {
	case has(token("gate")) && has(token("up")):
		return mapping.KindGateUp
	case has(qkvName("q", "query")) && has(qkvName("k", "key")) && has(qkvName("v", "value")):
		return mapping.KindQKV
	}
	return mapping.KindFused
}

func qkvName(short, long string) func(string) bool {
	return func(n string) bool { return n == short || n == long || strings.HasPrefix(n, short+"_") }
}

// sideIndexes are the two dumps of a rank pair indexed side by side (one
// skim of each dump.json, or the entries already read) for detectGroups,
// in the background, beside the single-threaded work on the mappings
// (applyInputs).
type sideIndexes struct {
	done       chan struct{}
	stop       atomic.Bool // the indexes will not be taken: their skims stop
	npu, bench *benchIndex
	err        error
	taken      bool
}

// indexSides starts indexing both dumps; cfg is copied. A side's entries,
// when known (as a skim gives them), are indexed without skimming it; a
// side skimmed keeps its names for names.
func indexSides(cfg Config, np, bp msprobe.Paths, npuKnown, benchKnown *resolve.Entries) *sideIndexes {
	s := &sideIndexes{done: make(chan struct{})}
	cfg.keepStats = true // for detectGroups; the join that takes the bench index keeps them too
	// A side whose "data" repeats keys is indexed again with its plan,
	// read as Python reads it.
	side := func(name, path string, known *resolve.Entries) (*benchIndex, error) {
		var b Bench = BenchFile(path)
		if known != nil {
			b = &knownFile{path, known}
		}
		ix, err := newSideIndex(name, b, &cfg, !cfg.Fuzzy, known == nil, &s.stop)
		if err == nil || s.stop.Load() {
			return ix, err // (stopped: no second reading)
		}
		if plan, ferr := msprobe.FindRepeatsAfter(err); ferr == nil && plan != nil && plan.Path() == path && cfg.benchPlan(path) == nil {
			c := cfg
			c.BenchRepeats = plan
			return newSideIndex(name, BenchFile(path), &c, !cfg.Fuzzy, true, &s.stop)
		}
		return ix, err
	}
	go func() {
		defer close(s.done)
		var berr error
		var wg sync.WaitGroup
		wg.Go(func() { s.bench, berr = side("bench", bp.DumpJSON, benchKnown) })
		var nerr error
		s.npu, nerr = side("target", np.DumpJSON, npuKnown)
		wg.Wait()
		if s.err = cmp.Or(nerr, berr); s.err != nil {
			s.release()
		}
	}()
	return s
}

// names waits for the indexes and hands over the names of the dumps
// they skimmed (nil for a side given known entries, or after an error):
// the names SkimExact gives, as a skim that meets a repeated key is made
// again with the repeats' plan.
func (s *sideIndexes) names() (names [2]*msprobe.Names) {
	<-s.done
	if s.err != nil {
		return names
	}
	for i, ix := range [2]*benchIndex{s.npu, s.bench} {
		names[i], ix.names = ix.names, nil
	}
	return names
}

// take waits for the indexes and hands them over, or builds them when
// indexSides was not started (nil s).
func (s *sideIndexes) take(cfg *Config, np, bp msprobe.Paths) (npu, bench *benchIndex, err error) {
	if s == nil {
		s = indexSides(*cfg, np, bp, nil, nil)
	}
	<-s.done
	s.taken = true
	if s.err != nil {
		return nil, nil, s.err
	}
	s.npu.cfg, s.bench.cfg = cfg, cfg
	s.npu.names, s.bench.names = nil, nil // not held through the join
	return s.npu, s.bench, nil
}

// close stops the skims of indexes nobody took and releases them: a
// failed rank pair leaves nothing reading its dumps.
func (s *sideIndexes) close() {
	if s == nil || s.taken {
		return
	}
	s.stop.Store(true)
	<-s.done
	s.release()
}

func (s *sideIndexes) release() {
	for _, ix := range [...]*benchIndex{s.npu, s.bench} {
		if ix != nil {
			ix.close()
		}
	}
	s.npu, s.bench = nil, nil
}

// heldIndex is an index of the bench dump.json built before the compare
// (by detectGroups): the compare's first join takes it instead of
// skimming the file again.
type heldIndex struct {
	path string
	ix   *benchIndex
}

// take returns the held index when it indexes bench as cfg reads it (nil
// otherwise, the index closed): once.
func (h *heldIndex) take(bench Bench, cfg *Config) *benchIndex {
	if h == nil || h.ix == nil {
		return nil
	}
	ix := h.ix
	h.ix = nil
	if b, ok := bench.(BenchFile); !ok || string(b) != h.path || cfg.BenchRepeats != nil {
		ix.close()
		return nil
	}
	ix.cfg = cfg
	return ix
}

// close closes an index nobody took.
func (h *heldIndex) close() {
	if h != nil && h.ix != nil {
		h.ix.close()
		h.ix = nil
	}
}
