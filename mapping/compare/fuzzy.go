package compare

// fuzzyMatcher is msprobe's fuzzy match (Match.process_fuzzy_match): rows
// of both sides are pushed in lockstep into two queues; after each step
// the newest NPU row is tried against the queued bench rows (oldest first,
// the newest bench row last), then the older NPU rows against the newest
// bench row. On a hit the NPU rows queued before it come out unmatched,
// the pair comes out matched and both queues are cut behind the pair.
// Rows are equal when their names agree after renameAPI (call indices
// dropped).
//
// msprobe stops as soon as, after a step, exactly one queue is empty: when
// the NPU side is longer and the bench queue is drained, the rest of the
// NPU rows after the next one are lost. That is kept (the tensor-mode
// golden shows it). Where msprobe differs: in statistics and md5 mode its
// result frame is misaligned by two columns, so every row fails the dtype
// gate and comes out unmatched (and it crashes when a row stays
// unmatched); here those modes match as in tensor mode.
type fuzzyMatcher struct {
	bs   *benchSide
	cfg  *Config
	next int // next bench row to push

	npuQ   []*sideRow
	npuKey []string
	bQ     []int32
	bKey   []string
	// positions of queued rows by renamed key, absolute queue positions
	npuAt, bAt     map[string][]int
	npuBase, bBase int // absolute position of the queue heads
	stopped        bool
}

func newFuzzyMatcher(bs *benchSide, cfg *Config) *fuzzyMatcher {
	return &fuzzyMatcher{bs: bs, cfg: cfg, npuAt: map[string][]int{}, bAt: map[string][]int{}}
}

// fuzzyKey is an NPU row's fuzzy-match name (its data-mapped key, if any).
func (f *fuzzyMatcher) fuzzyKey(r *sideRow) string {
	k := r.key
	if f.cfg.dataMapped() {
		if m, ok := f.cfg.mapRow(r, nil, f.cfg.suffixCheck); ok { // kept: no buffer
			k = m
		}
	}
	return renameAPI(k)
}

// first returns the first queued position >= base and < limit for key.
func first(at map[string][]int, key string, base, limit int) int {
	l := at[key]
	for len(l) > 0 && l[0] < base {
		l = l[1:]
	}
	if len(l) == 0 {
		delete(at, key)
	} else {
		at[key] = l
	}
	if len(l) > 0 && l[0] < limit {
		return l[0]
	}
	return -1
}

func (f *fuzzyMatcher) push(n *sideRow, emit emitFunc) error {
	if f.stopped {
		return nil
	}
	pos := f.npuBase + len(f.npuQ)
	k := f.fuzzyKey(n)
	f.npuQ = append(f.npuQ, n)
	f.npuKey = append(f.npuKey, k)
	f.npuAt[k] = append(f.npuAt[k], pos)
	if f.next < f.bs.len() {
		f.pushBench()
	}
	if len(f.bQ) == 0 {
		// exactly one queue is empty after the step: msprobe stops here.
		f.stopped = true
		return nil
	}
	return f.step(emit)
}

func (f *fuzzyMatcher) step(emit emitFunc) error {
	nLast := f.npuBase + len(f.npuQ) - 1
	bLast := f.bBase + len(f.bQ) - 1
	nk := f.npuKey[len(f.npuKey)-1]
	bk := f.bKey[len(f.bKey)-1]
	np, bp := -1, -1
	if p := first(f.bAt, nk, f.bBase, bLast); p >= 0 {
		np, bp = nLast, p
	} else if nk == bk {
		np, bp = nLast, bLast
	} else if p := first(f.npuAt, bk, f.npuBase, nLast); p >= 0 {
		np, bp = p, bLast
	}
	if np < 0 {
		return nil
	}
	ni, bi := np-f.npuBase, bp-f.bBase
	for _, r := range f.npuQ[:ni] {
		if err := emit(r, -1, Unmatched); err != nil {
			return err
		}
	}
	n := f.npuQ[ni]
	b := f.bQ[bi]
	if f.cfg.dataMapped() || dtypeMatch(n.it.Dtype, f.bs.dtype(b), f.cfg.CrossFramework) {
		f.bs.matched[b] = true
		if err := emit(n, b, ByFuzzy); err != nil {
			return err
		}
	} else if err := emit(n, -1, Unmatched); err != nil {
		return err
	}
	f.npuQ, f.npuKey = f.npuQ[ni+1:], f.npuKey[ni+1:]
	f.bQ, f.bKey = f.bQ[bi+1:], f.bKey[bi+1:]
	f.npuBase, f.bBase = np+1, bp+1
	return nil
}

// pushBench queues the next bench row.
func (f *fuzzyMatcher) pushBench() {
	bk := renameAPI(f.bs.key(int32(f.next)))
	f.bAt[bk] = append(f.bAt[bk], f.bBase+len(f.bQ))
	f.bQ = append(f.bQ, int32(f.next))
	f.bKey = append(f.bKey, bk)
	f.next++
}

// finish handles bench rows beyond the NPU side's length and emits the NPU
// rows still queued as unmatched.
func (f *fuzzyMatcher) finish(emit emitFunc) error {
	// When the bench side is longer, msprobe keeps pushing bench rows alone.
	for !f.stopped && f.next < f.bs.len() {
		if len(f.npuQ) == 0 {
			break // exactly one queue is empty: stop
		}
		f.pushBench()
		if err := f.step(emit); err != nil {
			return err
		}
	}
	for _, r := range f.npuQ {
		if err := emit(r, -1, Unmatched); err != nil {
			return err
		}
	}
	f.npuQ = nil
	return nil
}
