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
//     file); every rank that has one is reported, by rank.
//  2. During communication: from its first communication op on, a rank's
//     entries fall into layers, layer k being the compute entries between
//     communication ops k-1 and k, then op k itself; a diff's place is
//     (k, its position in the layer), op k's own diff coming after the
//     layer's compute entries. Only the diffs at the smallest place over
//     all ranks are reported: group by group, a group being the ranks
//     whose layer's op msprobe links (the ranks of its process group, or
//     every rank; an op it links to none is a group of its own rank),
//     groups in the order of their first rank; in a group its compute
//     entries, then its communication ops.
//  3. After communication: each rank's first diff after its last
//     communication op, by rank.
//
// msprobe builds a graph of the ranks' communication ops and links the
// same collective calls across ranks, setting a linked op's layer to that
// of the op it is linked from; layers are the ops' indices here, which is
// that graph's when the ranks call their collectives in the same order
// (a data- or tensor-parallel run), but where msprobe links an op to a
// later one whose API's name extends its own (a broadcast refused by the
// other ranks' broadcast links their broadcast_object_list) or a
// MintDistributed op to a Distributed one: daLayersExact tells, and
// compare warns where it is false. Inside a group msprobe's order is
// Python's set order; it goes by rank here. Where a process group names
// a rank the run did not compare, msprobe's search stops with a
// KeyError and writes nothing; layermap reports what it found.

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

// daDirected are the APIs msprobe links only by a process group
// (DIRECTED_API).
var daDirected = []string{"send", "recv", "isend", "irecv", "broadcast", "scatter", "gather", "send_object_list",
	"recv_object_list"}

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

// daAPI is a communication op's API, the second part of its name
// (CommunicationNode.api).
func daAPI(name string) string {
	_, rest, _ := strings.Cut(name, ".")
	api, _, _ := strings.Cut(rest, ".")
	return api
}

// daFind is what the search needs of one rank, taken from its entries in
// table order (entry): the first diff, rendered when found.
type daFind struct {
	// phase 1: the first diff before the first communication op
	pre *daNode
	ops int // communication ops seen: the layer under way
	pos int // compute entries in the layer so far
	// phase 2: the first diff from the first communication op on, once
	// an op closes its layer, at (layer, at); op tells the op's own diff,
	// link how msprobe links that op (daRank.link)
	found *daNode
	layer int
	at    int
	op    bool
	link  string
	// phase 3, and phase 2 until an op closes its layer: the first diff
	// after the last communication op, at pendAt
	pending *daNode
	pendAt  int
	// what daLayersExact reads: a hash of the ops' APIs and how they
	// link, in order, and the distinct APIs with their prefixes
	calls uint64
	apis  []string
}

// entry takes the next entry of the rank's table (one with at least four
// dot-separated parts: msprobe's per-rank JSON has no other), same its
// is_same; node renders it, called at most once an entry; link is how
// msprobe links it, for a communication op.
func (f *daFind) entry(name string, same bool, node func() *daNode, link func() string) {
	isComm := daIsComm(name)
	// after its first communication op a rank's communication ops count
	// whatever they hold (_analyze_comm_nodes tests them first)
	if daSkipped(name) && (f.ops == 0 || !isComm) {
		return
	}
	if f.ops == 0 && !isComm {
		if !same && f.pre == nil {
			f.pre = node()
		}
		return
	}
	if f.pre != nil {
		return // phase 1 reports this rank: the later phases need nothing of it
	}
	if !isComm {
		if !same && f.pending == nil && f.found == nil {
			f.pending, f.pendAt = node(), f.pos
		}
		f.pos++
		return
	}
	l := link()
	if f.found == nil {
		switch {
		case f.pending != nil:
			f.found, f.layer, f.at, f.link = f.pending, f.ops, f.pendAt, l
		case !same:
			f.found, f.layer, f.at, f.op, f.link = node(), f.ops, f.pos, true, l
		}
	}
	f.ops++
	f.pos, f.pending = 0, nil
	api := daAPI(name)
	// the API and how it links: by a process group (of whichever ranks),
	// with every rank, or with none
	how := l
	if strings.HasPrefix(l, "[") {
		how = "group"
	}
	f.calls = fnvAdd(fnvAdd(f.calls, api), how)
	kind := api
	if strings.HasPrefix(name, "MintDistributed") {
		kind = "MintDistributed." + api
	}
	if !slices.Contains(f.apis, kind) {
		f.apis = append(f.apis, kind)
	}
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

// nodes are the nodes found, for the no-bench downcast's patch.
func (f *daFind) nodes() []*daNode { return []*daNode{f.pre, f.found, f.pending} }

// daLayersExact reports whether the layers are those of msprobe's graph:
// the ranks that call collectives call the same ones in the same order,
// each linking alike on every rank (by a process group, with every rank,
// or with none), none MintDistributed beside Distributed ones, and none a
// directed API beside one whose name extends it (see the search's doc).
func daLayersExact(ranks []*daRank) bool {
	var first *daFind
	var apis []string
	for _, r := range ranks {
		f := &r.find
		if f.ops == 0 {
			continue
		}
		if first == nil {
			first = f
		} else if f.ops != first.ops || f.calls != first.calls {
			return false
		}
		for _, a := range f.apis {
			if !slices.Contains(apis, a) {
				apis = append(apis, a)
			}
		}
	}
	for _, a := range apis {
		mint, ok := strings.CutPrefix(a, "MintDistributed.")
		if ok && slices.Contains(apis, mint) {
			return false
		}
		for _, b := range apis {
			if b != a && slices.Contains(daDirected, a) && strings.HasPrefix(b, a) {
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
			if f := &r.find; f.found != nil && (best == nil || daPlace(f, best) < 0) {
				best = f
			}
		}
		// the groups of the ranks whose first diff is in best's layer
		var groups []string
		group := func(i int) string {
			if l := ranks[i].find.link; l != "" {
				return l
			}
			return "rank " + ranks[i].rank // linked to no other rank's op
		}
		for i, r := range ranks {
			if f := &r.find; best != nil && f.found != nil && f.layer == best.layer && !slices.Contains(groups, group(i)) {
				groups = append(groups, group(i))
			}
		}
		for _, g := range groups {
			for _, op := range []bool{false, true} {
				for i, r := range ranks {
					if f := &r.find; f.found != nil && daPlace(f, best) == 0 && f.op == op && group(i) == g {
						hits = append(hits, hit{r.rank, f.found})
					}
				}
			}
		}
	}
	if len(hits) == 0 {
		phase = 3
		for _, r := range ranks {
			if n := r.find.pending; n != nil {
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

// daPlace orders two ranks' phase-2 diffs by their place.
func daPlace(a, b *daFind) int {
	return cmp.Or(cmp.Compare(a.layer, b.layer), cmp.Compare(a.at, b.at))
}
