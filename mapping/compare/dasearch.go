package compare

import (
	"cmp"
	"slices"
	"strings"

	"github.com/layermap/layermap/printparse/msprobe"
)

// The search across ranks of -da, as msprobe's find_first does it
// (analyzer.py, graph.py, utils.py): three phases, the first that finds a
// diff giving the output.
//
//  1. Before communication: each rank's first entry that is not the same
//     before its first communication op (a rank without one: in the whole
//     file); every rank that has one is reported.
//  2. During communication: from its first communication op on, a rank's
//     entries fall into layers, layer k being the compute entries between
//     communication ops k-1 and k, then op k itself; a diff's place is
//     (k, its position in the layer), op k's own diff coming after the
//     layer's compute entries. Only the diffs at the smallest place over
//     all ranks are reported: the compute entries first, then the
//     communication ops.
//  3. After communication: each rank's first diff after its last
//     communication op.
//
// msprobe builds a graph of the ranks' communication ops and links the
// same collective calls across ranks, setting a linked op's layer to that
// of the op it is linked from; layers are the ops' indices here, which is
// that graph's when the ranks call their collectives in the same order
// (a data- or tensor-parallel run; daSameCollectives, and compare warns
// otherwise). Where ties are broken by Python's set order, they go by
// rank here.

// daSkip are the APIs the search walks over (is_ignore_op): an entry
// whose name holds one of them.
var daSkip = []string{"Torch.empty", "Torch.fill", "Tensor.__setitem__"}

// daCommPrefixes and daCommKeywords tell a communication op
// (is_communication_op): a name with one of the prefixes that holds one
// of the keywords.
var (
	daCommPrefixes = []string{"Distributed", "MintDistributed", "communication.comm_func"}
	daCommKeywords = []string{"send", "recv", "broadcast", "all_reduce", "reduce", "all_gather", "gather", "isend",
		"irecv", "scatter", "reduce_scatter", "_reduce_scatter_base", "_all_gather_base", "all_to_all_single",
		"all_to_all", "all_gather_into_tensor", "reduce_scatter_tensor", "send_object_list", "recv_object_list"}
)

// daSkipped tells an entry the search walks over.
func daSkipped(name string) bool {
	for _, s := range daSkip {
		if strings.Contains(name, s) {
			return true
		}
	}
	return false
}

// daIsComm tells a communication op's entry.
func daIsComm(name string) bool {
	if !slices.ContainsFunc(daCommPrefixes, func(p string) bool { return strings.HasPrefix(name, p) }) {
		return false
	}
	return slices.ContainsFunc(daCommKeywords, func(k string) bool { return strings.Contains(name, k) })
}

// daFind is what the search needs of one rank, taken from its entries in
// table order (entry): at most three diff nodes, rendered when found.
type daFind struct {
	pre  *daNode // phase 1: the first diff before the first communication op
	comm bool    // a communication op was seen
	ops  int     // communication ops seen: the layer under way
	pos  int     // compute entries in the layer so far
	// phase 2: the first diff from the first communication op on, once
	// a communication op closes its layer, at (layer, at); op tells a
	// communication op's own diff
	found   *daNode
	layer   int
	at      int
	op      bool
	pending *daNode // the first diff of the layer under way, at pendAt
	pendAt  int
	calls   uint64 // a hash of the communication ops' APIs, in order
}

// entry takes the next entry of the rank's table (one with at least four
// dot-separated parts: msprobe's per-rank JSON has no other), same its
// is_same; node renders it, called at most once an entry.
func (f *daFind) entry(name string, same bool, node func() *daNode) {
	if daSkipped(name) {
		return
	}
	isComm := daIsComm(name)
	if !f.comm && !isComm {
		if !same && f.pre == nil {
			f.pre = node()
		}
		return
	}
	if f.pre != nil {
		return // phase 1 reports this rank: the others need nothing more of it
	}
	f.comm = true
	if !isComm {
		if !same && f.pending == nil && f.found == nil {
			f.pending, f.pendAt = node(), f.pos
		}
		f.pos++
		return
	}
	if f.found == nil {
		switch {
		case f.pending != nil:
			f.found, f.layer, f.at = f.pending, f.ops, f.pendAt
		case !same:
			f.found, f.layer, f.at, f.op = node(), f.ops, f.pos, true
		}
	}
	f.ops++
	f.pos, f.pending = 0, nil
	_, rest, _ := strings.Cut(name, ".")
	api, _, _ := strings.Cut(rest, ".") // msprobe's CommunicationNode.api
	f.calls = fnvAdd(f.calls, api)
}

// fnvAdd adds s and a separator to the FNV-1a hash h (0: nothing added).
func fnvAdd(h uint64, s string) uint64 {
	const offset, prime = 14695981039346656037, 1099511628211
	if h == 0 {
		h = offset
	}
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * prime
	}
	return (h ^ 0xff) * prime
}

// after is phase 3's node: the first diff after the last communication
// op (nil when phase 2 has one for the rank).
func (f *daFind) after() *daNode {
	if f.found != nil {
		return nil
	}
	return f.pending
}

// nodes are the nodes found, for the no-bench downcast's patch.
func (f *daFind) nodes() []*daNode { return []*daNode{f.pre, f.found, f.pending} }

// daSameCollectives reports whether the ranks that call collectives call
// the same ones in the same order: then the layers are those of msprobe's
// graph.
func daSameCollectives(ranks []*daRank) bool {
	var first *daFind
	for _, r := range ranks {
		if f := &r.find; f.comm {
			if first == nil {
				first = f
			} else if f.ops != first.ops || f.calls != first.calls {
				return false
			}
		}
	}
	return true
}

// daSearch finds the first divergence across the ranks and renders
// diff_analyze's JSON (nil when no rank has a diff), and the phase that
// found it (1 to 3).
func daSearch(ranks []*daRank) (_ []byte, phase int) {
	type hit struct {
		rank string
		n    *daNode
	}
	var hits []hit
	for _, r := range ranks {
		if r.find.pre != nil {
			hits = append(hits, hit{r.rank, r.find.pre})
		}
	}
	phase = 1
	if len(hits) == 0 {
		phase = 2
		var best *daFind
		for _, r := range ranks {
			if f := &r.find; f.found != nil && (best == nil || cmp.Or(cmp.Compare(f.layer, best.layer), cmp.Compare(f.at, best.at)) < 0) {
				best = f
			}
		}
		if best != nil {
			for _, op := range []bool{false, true} {
				for _, r := range ranks {
					if f := &r.find; f.found != nil && f.layer == best.layer && f.at == best.at && f.op == op {
						hits = append(hits, hit{r.rank, f.found})
					}
				}
			}
		}
	}
	if len(hits) == 0 {
		phase = 3
		for _, r := range ranks {
			if n := r.find.after(); n != nil {
				hits = append(hits, hit{r.rank, n})
			}
		}
	}
	if len(hits) == 0 {
		return nil, 0
	}
	b := []byte("{")
	for i, h := range hits {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, "\n  "...)
		b = msprobe.AppendJSONString(b, h.rank)
		b = append(b, ": [\n    {\n      \"op_name\": "...)
		b = msprobe.AppendJSONString(b, h.n.name)
		b = append(b, ",\n      \"data_info\": "...)
		b = append(b, h.n.info...)
		b = append(b, "\n    }\n  ]"...)
	}
	return append(b, "\n}"...), phase
}
