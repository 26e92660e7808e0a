package compare

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/layermap/layermap/mapping"
	"github.com/layermap/layermap/printparse/msprobe"
)

// N:1 groups in the comparison.
//
// A group pairs one module on one side with several on the other (a
// fused gate/up projection, a fused qkv, grouped experts, see
// mapping.ModulePair). Its calls are paired by position (the k-th call of
// the single module with the k-th call of each part, per direction), and
// so are the APIs called directly in them (the k-th call of an API in the
// single module's call with the k-th call of that API in each part's).
//
// When the parts are on the bench side, each NPU row of the single
// module gets a bench row built from the parts' rows of the same suffix
// (see combine.go), compared as one row and named "[part ; part]".
// When the parts are on the NPU side, each part's rows stay in the table:
// an input the parts share is compared with the single module's; the
// rest are marked as parts and, after the last part's rows, one combined
// NPU row per suffix is compared with the single module's row. Rows no
// exact combination exists for are "fused: inputs only": not compared,
// never an error. The table is msprobe's; Err_message says what was
// combined.

// fusedStatus is what the fusion did with a row.
type fusedStatus uint8

const (
	fusedCombined   fusedStatus = iota + 1 // compared with the other side's parts combined
	fusedShared                            // an input the parts share, compared 1:1
	fusedInputsOnly                        // no exact combination: not compared
	fusedPart                              // an NPU part: compared in the combined row
)

// fusedRow marks a row the fusion touched (sideRow.fused).
type fusedRow struct {
	kind   string
	status fusedStatus
	msg    string // the Err_message line
	comb   combination
	// parts are the combined side's items (tensor mode reads their files)
	parts []msprobe.Item
	// npuSide: the NPU side holds the parts
	npuSide bool
	// rankDirs are the folders of parts[1:] when they are other ranks'
	// (tensor-parallel shards); parts of a group are the row's side's own.
	rankDirs []msprobe.Paths
}

// groupCall is one call of an N:1 group: the entries of both sides.
type groupCall struct {
	kind      string
	layout    string // qkv: the fused side's head layout ("" unknown)
	npuMany   bool
	npu       []string // NPU entry names: the single module's, or the parts' in order
	bench     []string // bench entry names
	benchKeys []string // their compare-key prefixes
	dir       string
	group     int // its group in fusedPlan.Groups
}

// fusedPlan is what a rank pair's comparison knows of N:1 groups.
type fusedPlan struct {
	calls map[string]*groupCall // NPU entry -> the group call it is in
	// Groups are the groups applied: the sidecar's and those the dumps'
	// shapes showed behind a mapped pair.
	Groups []mapping.ModulePair
	// Detected are the groups among them the shapes showed.
	Detected []mapping.ModulePair
	// Unknown are sidecar groups with a module that has no call in its
	// dump.
	Unknown []mapping.ModulePair
	tp      *tpPlan
}

func (pl *fusedPlan) empty() bool { return pl == nil || len(pl.calls) == 0 && pl.tp == nil }

// addGroup pairs the calls of a group; false when a module has none.
func (pl *fusedPlan) addGroup(g mapping.ModulePair, nn, bn *dumpNames) bool {
	nm, bm := g.NPUModules(), g.BenchModules()
	any := false
	for _, dir := range [...]string{"forward", "backward", msprobe.StateParametersGrad} {
		nc, bc := make([][]int32, len(nm)), make([][]int32, len(bm))
		n := -1
		for i, m := range nm {
			nc[i] = nn.moduleCalls(m, dir)
			if n < 0 || len(nc[i]) < n {
				n = len(nc[i])
			}
		}
		for i, m := range bm {
			bc[i] = bn.moduleCalls(m, dir)
			n = min(n, len(bc[i]))
		}
		for k := 0; k < n; k++ {
			c := &groupCall{kind: g.Kind, layout: g.Layout, npuMany: len(nm) > 1, dir: dir, group: len(pl.Groups)}
			for i := range nm {
				c.npu = append(c.npu, nn.name(nc[i][k]))
			}
			for i := range bm {
				c.bench = append(c.bench, bn.name(bc[i][k]))
				c.benchKeys = append(c.benchKeys, bn.keyPrefix(bc[i][k]))
			}
			if pl.register(c) && dir != msprobe.StateParametersGrad {
				pl.addChildren(c, nn, bn)
			}
			any = true
		}
	}
	if any {
		pl.Groups = append(pl.Groups, g)
	}
	return any
}

// register files a call under its NPU entries; false when one of them is
// in a group already (the first group wins).
func (pl *fusedPlan) register(c *groupCall) bool {
	for _, e := range c.npu {
		if pl.calls[e] != nil {
			return false
		}
	}
	for _, e := range c.npu {
		pl.calls[e] = c
	}
	return true
}

// addChildren pairs the APIs called directly in a group call: the i-th
// call of an API in the single module's entry with the i-th call of it
// in each part's.
func (pl *fusedPlan) addChildren(c *groupCall, nn, bn *dumpNames) {
	nk := make([]map[string][]int32, len(c.npu))
	for i, e := range c.npu {
		nk[i] = nn.apiChildren(e)
	}
	bk := make([]map[string][]int32, len(c.bench))
	for i, e := range c.bench {
		bk[i] = bn.apiChildren(e)
	}
	for api, calls := range nk[0] {
		for k := range calls {
			cc := &groupCall{kind: c.kind, layout: c.layout, npuMany: c.npuMany, dir: apiDir(api), group: c.group}
			ok := true
			for i := range nk {
				if k >= len(nk[i][api]) {
					ok = false
					break
				}
				cc.npu = append(cc.npu, nn.name(nk[i][api][k]))
			}
			for i := range bk {
				if !ok || k >= len(bk[i][api]) {
					ok = false
					break
				}
				cc.bench = append(cc.bench, bn.name(bk[i][api][k]))
				cc.benchKeys = append(cc.benchKeys, bn.keyPrefix(bk[i][api][k]))
			}
			if ok {
				pl.register(cc)
			}
		}
	}
}

// apiDir is the direction of an apiKey ("op|forward").
func apiDir(key string) string {
	_, d, _ := strings.Cut(key, "|")
	return d
}

// benchRower gives the bench rows of a compare key (no dtype gate),
// marking them matched when mark is set.
type benchRower interface {
	benchRows(key string, mark bool, fn func(*sideRow)) error
}

func (j *indexJoin) benchRows(key string, mark bool, fn func(*sideRow)) error {
	var err error
	if j.refs, err = j.ix.lookup(key, j.refs); err != nil {
		return err
	}
	for _, ref := range j.refs {
		_, b := j.ix.row(ref)
		if mark {
			j.ix.match(ref)
		}
		fn(b)
	}
	return nil
}

func (j *storeJoin) benchRows(key string, mark bool, fn func(*sideRow)) error {
	for _, bi := range j.bs.lookup(key) {
		if mark {
			j.bs.matched[bi] = true
		}
		fn(j.bs.rowInto(&j.tmp, bi))
	}
	return nil
}

// fusedJoin joins the rows of group calls (and tensor-parallel shards)
// itself and hands every other row to the join it wraps.
type fusedJoin struct {
	inner joiner
	br    benchRower
	cfg   *Config
	plan  *fusedPlan
	// pending holds, per NPU-many call, the parts' rows seen so far.
	pending map[*groupCall]*partRows
	tp      *tpJoin
	// unmade counts, per group (fusedPlan.Groups), the rows its parts'
	// shapes could not make, and says why for the first
	unmade map[int]*unmadeRows
}

// unmadeRows are the rows of a group its parts could not make.
type unmadeRows struct {
	rows     int
	why, row string
}

// partRows are the rows of an NPU-many call's parts, by row suffix.
type partRows struct {
	rows  map[string][]*msprobe.Item // suffix -> item per part
	order []string                   // suffixes in first-seen order
	seen  map[string]bool            // parts whose entry is done
	// broken holds, per suffix whose parts cannot make the bench row, why
	// (each part's row is then inputs only, none claims a combined row).
	broken map[string]string
}

// fusedJoiner wraps a pass's join with the plan (nil plan: j itself).
func fusedJoiner(j joiner, cfg *Config) (joiner, error) {
	pl := cfg.fused
	if pl.empty() {
		return j, nil
	}
	br, ok := j.(benchRower)
	if !ok {
		return j, nil // msprobe's fuzzy match pairs rows in order: no groups
	}
	f := &fusedJoin{inner: j, br: br, cfg: cfg, plan: pl, pending: map[*groupCall]*partRows{}}
	if pl.tp != nil {
		var err error
		if f.tp, err = pl.tp.join(cfg); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// lookAhead has the inner join look ahead, when it can (the fused rows'
// own lookups are not looked ahead: the join parses those itself).
func (f *fusedJoin) lookAhead(in <-chan []npuEntry, free batchPool) <-chan []npuEntry {
	if a, ok := f.inner.(aheadJoiner); ok {
		return a.lookAhead(in, free)
	}
	return in
}

// takeAhead is called only when the inner join looks ahead.
func (f *fusedJoin) takeAhead(i int32, e *parsedEntry) { f.inner.(aheadJoiner).takeAhead(i, e) }

func (f *fusedJoin) row(n *sideRow, emit rowEmit) error {
	c := f.plan.calls[n.it.Entry]
	switch {
	case c == nil || !msprobe.NormalRow(n.it.Entry, n.it.Name):
		if err := f.inner.row(n, f.tpEmit(emit)); err != nil || c == nil || !c.npuMany {
			return err
		}
	case !c.npuMany:
		return f.wholeRow(c, n, rowSuffix(n), emit)
	default:
		if err := f.partRow(c, n, rowSuffix(n), emit); err != nil {
			return err
		}
	}
	// a part's entry is done on its last row, whatever that row is
	if o := n.owner; o != nil && n == &o.rows[len(o.rows)-1] {
		p := f.pendingOf(c)
		p.seen[n.it.Entry] = true
		if len(p.seen) == len(c.npu) {
			delete(f.pending, c)
			return f.combined(c, p, n.it.Entry, emit)
		}
	}
	return nil
}

// pendingWarnings tells of the NPU-many calls whose combined rows were
// never written: a part's entry flattened into no rows, so it never ended,
// while the rows of the others said they were compared there. In the
// order of the groups, then of the calls' first parts.
func (f *fusedJoin) pendingWarnings() []string {
	calls := make([]*groupCall, 0, len(f.pending))
	for c := range f.pending {
		calls = append(calls, c)
	}
	slices.SortFunc(calls, func(a, b *groupCall) int {
		return cmp.Or(cmp.Compare(a.group, b.group), strings.Compare(a.npu[0], b.npu[0]))
	})
	var out []string
	for _, c := range calls {
		var none []string
		for _, e := range c.npu {
			if !f.pending[c].seen[e] {
				none = append(none, e)
			}
		}
		out = append(out, fmt.Sprintf("%s: the combined rows of %s were not written, though its parts' rows say they are compared there: %s gave no rows",
			f.plan.Groups[c.group], strings.Join(c.npu, " ; "), strings.Join(none, ", ")))
	}
	return out
}

// tpEmit is emit through the tensor-parallel shards' combination, when
// the rank pair has shards.
func (f *fusedJoin) tpEmit(emit rowEmit) rowEmit {
	if f.tp == nil {
		return emit
	}
	return f.tp.emit(emit)
}

// rowSuffix is a normal row's name after its entry's.
func rowSuffix(n *sideRow) string { return n.it.Name[len(n.it.Entry):] }

// pendingOf returns the rows seen so far of an NPU-many call's parts.
func (f *fusedJoin) pendingOf(c *groupCall) *partRows {
	p := f.pending[c]
	if p == nil {
		p = &partRows{rows: map[string][]*msprobe.Item{}, seen: map[string]bool{}}
		f.pending[c] = p
	}
	return p
}

// abort closes the tensor-parallel siblings' indexes of a failed pass.
func (f *fusedJoin) abort() {
	if f.tp != nil {
		f.tp.close()
	}
}

// end has the inner join emit its last rows (the fuzzy match settles
// some only now) through the shards' emit, as row does, and only then
// checks and closes the shards' indexes, which those rows look up.
func (f *fusedJoin) end(emit rowEmit, sum *Summary) error {
	sum.FusedWarnings = nil
	for i, g := range f.plan.Groups {
		if u := f.unmade[i]; u != nil {
			sum.FusedWarnings = append(sum.FusedWarnings, fmt.Sprintf("%s: %d rows not combined (inputs only), first %s: %s; shapes that do not add up suggest the group pairs the wrong modules",
				g, u.rows, u.row, u.why))
		}
	}
	sum.FusedWarnings = append(sum.FusedWarnings, f.pendingWarnings()...)
	err := f.inner.end(f.tpEmit(emit), sum)
	switch {
	case f.tp == nil:
		return err
	case err != nil: // the bench dump's error first, as its file loads before the shards'
		f.tp.close()
		return err
	}
	return f.tp.finish()
}

// warn records that a row of a group call could not be made from its
// parts (the summary warns, per group).
func (f *fusedJoin) warn(c *groupCall, row, why string) {
	if f.unmade == nil {
		f.unmade = map[int]*unmadeRows{}
	}
	u := f.unmade[c.group]
	if u == nil {
		u = &unmadeRows{why: why, row: row}
		f.unmade[c.group] = u
	}
	u.rows++
}

// shapesWhy says why parts cannot make whole: "shapes [2, 4] + [2, 8] do
// not make [2, 16]", or, before every part is seen, "[2, 8] and 1 more
// part cannot make [2, 8]".
func shapesWhy(whole string, parts []*msprobe.Item) string {
	var ps []string
	for _, p := range parts {
		if p != nil {
			ps = append(ps, p.Shape)
		}
	}
	if n := len(parts) - len(ps); n > 0 {
		more := "parts"
		if n == 1 {
			more = "part"
		}
		return fmt.Sprintf("shapes %s and %d more %s cannot make %s", strings.Join(ps, " + "), n, more, whole)
	}
	return fmt.Sprintf("shapes %s do not make %s", strings.Join(ps, " + "), whole)
}

// canMake tells whether parts (those seen so far, nil for the rest) can
// still make whole by how: concatenated along one axis (every part
// whole's shape but on that axis, each unseen part at least 1 long
// there) or stacked, summed from parts of whole's shape.
func canMake(how combineHow, whole string, parts []*msprobe.Item) bool {
	if how == howSum {
		for _, p := range parts {
			if p != nil && p.Shape != whole {
				return false
			}
		}
		return true
	}
	ws, ok := parseShape(whole)
	if !ok {
		return false
	}
	var seen [][]int
	for _, p := range parts {
		if p == nil {
			continue
		}
		d, ok := parseShape(p.Shape)
		if !ok {
			return false
		}
		seen = append(seen, d)
	}
	unseen := len(parts) - len(seen)
	for a := range ws {
		if sum, fits := axisFit(ws, seen, a); fits && (unseen == 0 && sum == ws[a] || unseen > 0 && sum+unseen <= ws[a]) {
			return true
		}
	}
	return len(ws) > 0 && ws[0] == len(parts) && stackFits(ws, seen)
}

// lookupParts returns the bench rows of suffix in each of c's bench
// entries (nil where one has none).
func (f *fusedJoin) lookupParts(c *groupCall, suffix string, mark bool) ([]*msprobe.Item, int, error) {
	parts := make([]*msprobe.Item, len(c.benchKeys))
	found := 0
	for i, k := range c.benchKeys {
		it, err := f.firstBench(k+suffix, mark)
		if err != nil {
			return nil, 0, err
		}
		if it != nil {
			parts[i], found = it, found+1
		}
	}
	return parts, found, nil
}

// wholeRow compares a row of the single NPU module of a group with the
// bench parts' rows of its suffix.
func (f *fusedJoin) wholeRow(c *groupCall, n *sideRow, suffix string, emit rowEmit) error {
	parts, found, err := f.lookupParts(c, suffix, true)
	if err != nil {
		return err
	}
	switch {
	case found == 0:
		return emit(n, nil, Unmatched)
	case found < len(parts):
		n.fused = &fusedRow{kind: c.kind, status: fusedInputsOnly,
			msg: fmt.Sprintf("fused: inputs only (%s: %d of the %d bench parts have this row)", c.kind, found, len(parts))}
		return emit(n, nil, Unmatched)
	}
	role := roleOf(&n.it, c.dir)
	comb := f.decide(c, role, &n.it, parts)
	switch comb.how {
	case howSame:
		b := &sideRow{it: *parts[0]}
		b.fused = &fusedRow{kind: c.kind, status: fusedShared,
			msg: fmt.Sprintf("fused: %s, an input the %d bench parts share, compared with the first", c.kind, len(parts))}
		return emit(n, b, ByGroup)
	case howConcat, howSum:
		it, ok := combinedItem(comb, parts, groupName(parts), f.cfg.Mode != Tensor)
		if ok {
			b := &sideRow{it: it}
			b.fused = f.combinedRow(c.kind, comb, parts, false)
			return emit(n, b, ByGroup)
		}
	}
	n.fused = f.inputsOnly(c, role)
	if f.shapesLimit(c, role) && !canMake(wants(c.kind, role), n.it.Shape, parts) {
		why := shapesWhy(n.it.Shape, parts)
		n.fused.msg = fmt.Sprintf("fused: inputs only (%s: %s)", c.kind, why)
		f.warn(c, n.it.Name, why)
	}
	return emit(n, nil, Unmatched)
}

// shapesLimit tells whether only the shapes keep a row of role from
// being combined (not md5 mode, not a sum statistics cannot give, not
// interleaved qkv in tensor mode): a row the shapes refuse is a warning.
func (f *fusedJoin) shapesLimit(c *groupCall, r rowRole) bool {
	w := wants(c.kind, r)
	switch {
	case f.cfg.Mode == MD5, w == howSame:
		return false
	case w == howSum && f.cfg.Mode != Tensor:
		return false
	case f.cfg.Mode == Tensor && c.kind == kindQKV && c.layout != mapping.LayoutBlocked && w == howConcat:
		return false
	}
	return true
}

// decide is decide with the mode's limits: md5 mode combines nothing
// (a hash of a concatenation is not in its parts' hashes); tensor mode
// concatenates q, k and v only when the fused side holds them blocked
// ([q; k; v]): interleaved per query group, the elements' order needs
// the head count, which the dump does not hold. (The statistics do not
// depend on the order: statistics mode combines either layout.)
func (f *fusedJoin) decide(gc *groupCall, r rowRole, whole *msprobe.Item, parts []*msprobe.Item) combination {
	c := decide(gc.kind, r, whole, parts)
	switch {
	case f.cfg.Mode == MD5 && c.how != howSame:
		return combination{}
	case f.cfg.Mode == Tensor && gc.kind == kindQKV && gc.layout != mapping.LayoutBlocked && c.how == howConcat:
		return combination{}
	}
	return c
}

// combinedRow is the fused mark of a combined row.
func (f *fusedJoin) combinedRow(kind string, c combination, parts []*msprobe.Item, npuSide bool) *fusedRow {
	side := "bench"
	if npuSide {
		side = "NPU"
	}
	how := "summed"
	if c.how == howConcat {
		how = fmt.Sprintf("concatenated along axis %d", c.axis)
		if c.stack {
			how = "stacked"
		}
	}
	r := &fusedRow{kind: kind, status: fusedCombined, comb: c, npuSide: npuSide,
		msg: fmt.Sprintf("fused: %s, %s row = its %d parts %s", kind, side, len(parts), how)}
	if f.cfg.Mode == Tensor {
		for _, p := range parts {
			r.parts = append(r.parts, *p)
		}
	}
	return r
}

// inputsOnly marks a row no exact combination exists for.
func (f *fusedJoin) inputsOnly(c *groupCall, r rowRole) *fusedRow {
	why := "the shapes do not show how the parts combine"
	switch {
	case f.cfg.Mode == MD5:
		why = "an md5 of the whole is not in its parts' md5s"
	case r == roleGradIn:
		why = "the gradient of a shared input is the sum of the parts', which statistics do not give"
	case f.cfg.Mode == Tensor && c.kind == kindQKV && c.layout != mapping.LayoutBlocked:
		why = "q, k and v interleaved per query group: the element order needs the head count, which the dump does not hold"
	}
	return &fusedRow{kind: c.kind, status: fusedInputsOnly, msg: fmt.Sprintf("fused: inputs only (%s: %s)", c.kind, why)}
}

// firstBench returns a copy of the first bench row named key (nil: there
// is none); mark takes the row as compared.
func (f *fusedJoin) firstBench(key string, mark bool) (*msprobe.Item, error) {
	var first *msprobe.Item
	err := f.br.benchRows(key, mark, func(b *sideRow) {
		if first == nil {
			it := b.it
			first = &it
		}
	})
	return first, err
}

// partRow handles a row of an NPU part: a shared input is compared with
// the single bench module's row now; a row the parts combine into is
// kept for the combined row.
func (f *fusedJoin) partRow(c *groupCall, n *sideRow, suffix string, emit rowEmit) error {
	p := f.pendingOf(c)
	role := roleOf(&n.it, c.dir)
	w := wants(c.kind, role)
	// whole is the bench row the group's module has for this suffix (nil:
	// not looked up yet; a missing row leaves the NPU row unmatched)
	var whole *msprobe.Item
	if w == howSame {
		var err error
		if whole, err = f.firstBench(c.benchKeys[0]+suffix, false); err != nil {
			return err
		}
		if whole == nil {
			return emit(n, nil, Unmatched)
		}
		if whole.Shape == n.it.Shape {
			it, err := f.firstBench(c.benchKeys[0]+suffix, true)
			if err != nil {
				return err
			}
			b := &sideRow{it: *it}
			b.fused = &fusedRow{kind: c.kind, status: fusedShared,
				msg: fmt.Sprintf("fused: %s, an input the %d NPU parts share, compared with the bench module's", c.kind, len(c.npu))}
			return emit(n, b, ByGroup)
		}
	}
	if f.cfg.Mode == MD5 || w == howSum && f.cfg.Mode != Tensor ||
		f.cfg.Mode == Tensor && c.kind == kindQKV && c.layout != mapping.LayoutBlocked && w == howConcat {
		n.fused = f.inputsOnly(c, role)
		return emit(n, nil, Unmatched)
	}
	i := 0
	for i < len(c.npu) && c.npu[i] != n.it.Entry {
		i++
	}
	if why, ok := p.broken[suffix]; ok {
		f.warn(c, n.it.Name, why)
		n.fused = &fusedRow{kind: c.kind, status: fusedInputsOnly, msg: fmt.Sprintf("fused: inputs only (%s: %s)", c.kind, why)}
		return emit(n, nil, Unmatched)
	}
	// the bench row the parts make: without one, or when the shapes seen
	// so far cannot make it, no combined row follows and no part claims one
	if whole == nil {
		var err error
		if whole, err = f.firstBench(c.benchKeys[0]+suffix, false); err != nil {
			return err
		}
		if whole == nil {
			return emit(n, nil, Unmatched)
		}
	}
	if p.rows[suffix] == nil {
		p.rows[suffix] = make([]*msprobe.Item, len(c.npu))
		p.order = append(p.order, suffix)
	}
	it := n.it
	p.rows[suffix][i] = &it
	if !canMake(w, whole.Shape, p.rows[suffix]) {
		why := shapesWhy(whole.Shape, p.rows[suffix])
		for j, q := range p.rows[suffix] {
			if q != nil && j != i {
				// the rows streamed out already: say so rather than hide it
				why += "; the rows of the parts before it name a combined row, which the table lacks"
				break
			}
		}
		if p.broken == nil {
			p.broken = map[string]string{}
		}
		p.broken[suffix] = why
		f.warn(c, n.it.Name, why)
		n.fused = &fusedRow{kind: c.kind, status: fusedInputsOnly, msg: fmt.Sprintf("fused: inputs only (%s: %s)", c.kind, why)}
		return emit(n, nil, Unmatched)
	}
	n.fused = &fusedRow{kind: c.kind, status: fusedPart, npuSide: true,
		msg: fmt.Sprintf("fused: %s, part %d of %d: compared in the combined row [%s ; ...]", c.kind, i+1, len(c.npu), strings.TrimPrefix(c.npu[0], "Module."))}
	return emit(n, nil, Unmatched)
}

// combined emits the combined rows of an NPU-many call once its last
// part's rows are in: per suffix every part has, the parts combined
// against the single bench module's row. Their entry is entry (the last
// part's), so they join its group in the table.
func (f *fusedJoin) combined(c *groupCall, p *partRows, entry string, emit rowEmit) error {
	for _, suffix := range p.order {
		if _, broken := p.broken[suffix]; broken {
			continue
		}
		items := p.rows[suffix]
		complete := true
		for _, it := range items {
			complete = complete && it != nil
		}
		if !complete {
			// a part lacks the row: the others' rows were marked parts
			f.warn(c, strings.TrimPrefix(suffix, "."), "a part has no such row: the other parts' rows name a combined row the table lacks")
			continue
		}
		bench, err := f.firstBench(c.benchKeys[0]+suffix, true)
		if err != nil {
			return err
		}
		if bench == nil {
			continue
		}
		whole := &sideRow{it: *bench}
		role := roleOf(items[0], c.dir)
		comb := f.decide(c, role, &whole.it, items)
		if comb.how != howConcat && comb.how != howSum {
			continue
		}
		it, ok := combinedItem(comb, items, groupName(items), f.cfg.Mode != Tensor)
		if !ok {
			continue
		}
		it.Entry = entry
		n := &sideRow{it: it}
		n.fused = f.combinedRow(c.kind, comb, items, true)
		if err := emit(n, whole, ByGroup); err != nil {
			return err
		}
	}
	return nil
}
