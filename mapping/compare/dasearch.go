package compare

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
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
//     (layer, its position in the layer), an op's own diff coming after
//     the layer's compute entries. The ops of all ranks make a graph
//     (daGraph): an op is linked to its counterparts on other ranks and
//     takes the layer of the op linked from, and ops without a diff in
//     their layer are dropped. Each rank's first op left forms, with the
//     ops linked to it, a group unless an earlier rank's holds it; of the
//     groups' diffs those at the smallest place are reported, group by
//     group, compute entries before ops in each (daDuring).
//  3. After communication: each rank's first diff after its last
//     communication op, by rank.
//
// msprobe's own quirks are kept: an op's type compares its src or dst
// value with the rank, and msprobe writes those values as strings, so
// that an op with a src or dst row never links to an op of its own API;
// a peer rank 0 is dropped; a linked op is looked up by the prefix of
// its API's name. Inside a group of linked ops msprobe
// lists the diffs in Python's set order; here by rank. Where msprobe's
// search fails (a rank named that the run did not compare, a rank that
// is not a number) it writes no file, and neither does compare, which
// says why. The values are read as msprobe writes them (str of an int);
// int() of other forms (underscores, non-ASCII digits, past int64) is
// taken for no rank. msprobe also searches the stale per-rank files of
// earlier runs in the output folder; compare this run's ranks.

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

// daDirected are the APIs msprobe links only to ops naming the rank
// (DIRECTED_API); daPeerAPI pairs the point-to-point APIs
// (P2P_API_MAPPING).
var (
	daDirected = []string{"send", "recv", "isend", "irecv", "broadcast", "scatter", "gather", "send_object_list",
		"recv_object_list"}
	daPeerAPI = map[string]string{"send": "recv", "recv": "send", "isend": "irecv", "irecv": "isend",
		"send_object_list": "recv_object_list", "recv_object_list": "send_object_list"}
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

// daAPI is a communication op's API, the second part of its name
// (CommunicationNode.api).
func daAPI(name string) string {
	_, rest, _ := strings.Cut(name, ".")
	api, _, _ := strings.Cut(rest, ".")
	return api
}

// daInput is an input row of a communication op as the search reads it
// in the per-rank JSON: its name, and the JSON of its NPU max (NPU MD5 in
// md5 mode) and of its NPU P2POp peer.
type daInput struct{ name, value, peer string }

// daFind is what the search needs of one rank, taken from its entries in
// table order (entry): a rendered node for phases 1 and 3, and the
// communication ops.
type daFind struct {
	pre *daNode // phase 1: the first diff before the first communication op
	ops []*daOp // the communication ops, from the first on
	pos int     // compute entries in the layer under way
	// the first diff of the layer under way, at pendAt: after the last
	// op, phase 3's node
	pending *daNode
	pendAt  int
}

// entry takes the next entry of the rank's table (one with at least four
// dot-separated parts: msprobe's per-rank JSON has no other), same its
// is_same; node renders it, called at most once an entry; inputs are a
// communication op's input rows.
func (f *daFind) entry(name string, same bool, node func() *daNode, inputs func() []daInput) {
	isComm := daIsComm(name)
	// after its first communication op a rank's communication ops count
	// whatever they hold (_analyze_comm_nodes tests them first)
	if daSkipped(name) && (len(f.ops) == 0 || !isComm) {
		return
	}
	if len(f.ops) == 0 && !isComm {
		if !same && f.pre == nil {
			f.pre = node()
		}
		return
	}
	if f.pre != nil {
		return // phase 1 reports this rank: the later phases need nothing of it
	}
	if !isComm {
		if !same && f.pending == nil {
			f.pending, f.pendAt = node(), f.pos
		}
		f.pos++
		return
	}
	name = strings.Clone(name) // it may share its rows' memory (msprobe.ScanReuse)
	op := &daOp{name: name, api: daAPI(name), inputs: inputs(), layer: len(f.ops), at: f.pos, first: f.pending, firstAt: f.pendAt}
	if !same {
		op.diff = node()
	}
	f.ops = append(f.ops, op)
	f.pos, f.pending = 0, nil
}

// nodes are the nodes found, for the no-bench downcast's patch.
func (f *daFind) nodes() []*daNode {
	n := []*daNode{f.pre, f.pending}
	for _, op := range f.ops {
		n = append(n, op.first, op.diff)
	}
	return n
}

// daOp is a communication op of a rank (CommunicationNode).
type daOp struct {
	name    string
	api     string
	inputs  []daInput // those the search reads (daRank.inputs)
	typ     string    // "src", "dst" or "link" (resolveType, once the rank is known)
	layer   int
	diff    *daNode // its own diff, at at (the compute entries before it in its layer)
	at      int
	first   *daNode // its layer's first compute diff, at firstAt
	firstAt int
	of      *daRank  // its rank
	rel     []*daOp  // the ops linked to it
	gone    bool     // dropped (no diff in its layer)
	conns   *daConns // find_connected_nodes, once asked
}

// daConns are the ranks an op links to and how (find_connected_nodes).
type daConns struct {
	ranks []int
	bad   string // a value find_connected_nodes cannot read (its int() fails): why
	// a peer that is no rank (None, NaN, a string): a linking op's search
	// fails on it; a linked op still names it, and so refuses every rank
	odd string
	api string // the linked ops' API prefix, "Distributed." and the API
	typ string // the linked ops' type
}

// resolveType is the op's type on rank rank (_resolve_type): its first
// input row whose name holds src (else dst) makes it that direction when
// the row's value equals the rank, else the other; msprobe writes a src
// or dst argument as a string (str of an int), never equal, but a
// number (a tensor's statistic) can be.
func (op *daOp) resolveType(rank int) string {
	for _, p := range [...][2]string{{"src", "dst"}, {"dst", "src"}} {
		for _, in := range op.inputs {
			if !strings.Contains(in.name, p[0]) {
				continue
			}
			if f, err := strconv.ParseFloat(in.value, 64); err == nil && f == float64(rank) {
				return p[0]
			}
			if in.value == "true" && rank == 1 || in.value == "false" && rank == 0 {
				return p[0] // Python's True == 1
			}
			return p[1]
		}
	}
	return "link"
}

// conn is find_connected_nodes: the ranks named by the op's src and dst
// rows (but rank 0), its group row and its P2POp peers.
func (op *daOp) conn() *daConns {
	if op.conns != nil {
		return op.conns
	}
	c := &daConns{api: "Distributed." + cmp.Or(daPeerAPI[op.api], op.api), typ: "link"}
	switch op.typ {
	case "src":
		c.typ = "dst"
	case "dst":
		c.typ = "src"
	}
	add := func(r int) {
		if !slices.Contains(c.ranks, r) {
			c.ranks = append(c.ranks, r)
		}
	}
	for _, in := range op.inputs {
		switch {
		case strings.Contains(in.name, "dst") || strings.Contains(in.name, "src"):
			r, err := daPyInt(in.value)
			if err != nil {
				c.bad = cmp.Or(c.bad, fmt.Sprintf("%s: %v", in.name, err))
			} else if r != 0 {
				add(r)
			}
		case strings.HasSuffix(in.name, ".group"):
			var s string
			if json.Unmarshal([]byte(in.value), &s) != nil {
				if in.value != "null" && in.value != "0" && in.value != "false" {
					c.bad = cmp.Or(c.bad, fmt.Sprintf("%s: %s is no group", in.name, in.value))
				}
				continue
			}
			if len(s) < 2 || s[0] != '[' || s[len(s)-1] != ']' {
				continue
			}
			for _, part := range strings.Split(strings.Trim(s, "[]"), ",") {
				r, err := strconv.Atoi(strings.TrimSpace(part))
				if err != nil {
					c.bad = cmp.Or(c.bad, fmt.Sprintf("%s: %q is no rank", in.name, part))
					continue
				}
				add(r)
			}
		case in.peer != `"None"`:
			f, err := strconv.ParseFloat(in.peer, 64)
			if err != nil || f != math.Trunc(f) {
				c.odd = cmp.Or(c.odd, fmt.Sprintf("%s: peer %s", in.name, in.peer))
				continue
			}
			add(int(f))
		}
	}
	op.conns = c
	return c
}

// daPyInt is Python's int() of the JSON value text.
func daPyInt(text string) (int, error) {
	var v any
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		return 0, fmt.Errorf("%s is no int", text)
	}
	switch v := v.(type) {
	case string:
		return strconv.Atoi(strings.TrimSpace(v))
	case float64:
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return 0, fmt.Errorf("%s is no int", text)
		}
		return int(v), nil
	case bool:
		if v {
			return 1, nil
		}
		return 0, nil
	}
	return 0, fmt.Errorf("%s is no int", text)
}

// daGraph is msprobe's graph of the ranks' communication ops: each
// rank's ops but the last rank's, in rank and then file order, are
// linked to the ops of the later ranks they name (every rank when they
// name none): to a rank's first op not linked yet by the rank's ops
// whose name starts with the API and whose type is the one looked for,
// and that names no rank and is of an undirected API, or names the
// linking rank; a linked op takes the layer of the op it is linked from,
// an op after a layer not below its own the next (_connect_comm_nodes).
// Then the ops without a diff in their layer are dropped (_pruning). An
// error is where msprobe's search fails.
func daGraph(ranks []*daRank) error {
	index := map[int]int{}
	var nums []int
	for i, r := range ranks {
		index[r.num] = i
		nums = append(nums, r.num)
		for _, op := range r.find.ops {
			op.of, op.typ = r, op.resolveType(r.num)
		}
	}
	searched := map[int]bool{}
	for _, r := range ranks[:max(len(ranks)-1, 0)] {
		searched[r.num] = true
		seen := map[*daOp]bool{}
		// where the scan of a target rank for an API and type resumes: the
		// ops before it were linked, are of another API or type, or refuse
		// this rank, and stay so for it
		type key struct {
			rank     int
			api, typ string
		}
		from := map[key]int{}
		var last *daOp
		for _, cur := range r.find.ops {
			if last != nil && last.layer >= cur.layer {
				cur.layer = last.layer + 1
			}
			c := cur.conn()
			if c.bad != "" || c.odd != "" {
				return fmt.Errorf("%s of %s: %s", cur.name, r.rank, cmp.Or(c.bad, c.odd))
			}
			to := c.ranks
			if len(to) == 0 {
				to = nums
			}
			last = cur
			for _, n := range to {
				if searched[n] {
					continue
				}
				ti, ok := index[n]
				if !ok {
					return fmt.Errorf("%s of %s names rank %d, which the run does not compare", cur.name, r.rank, n)
				}
				k := key{ti, c.api, c.typ}
				ops := ranks[ti].find.ops
				for j := from[k]; j < len(ops); j++ {
					t := ops[j]
					if j == from[k] {
						from[k]++ // an op passed here is passed for good
					}
					if seen[t] || !strings.HasPrefix(t.name, c.api) || t.typ != c.typ {
						continue
					}
					tc := t.conn()
					if tc.bad != "" {
						return fmt.Errorf("%s of %s: %s", t.name, ranks[ti].rank, tc.bad)
					}
					if len(tc.ranks) == 0 && tc.odd == "" && !slices.Contains(daDirected, t.api) || slices.Contains(tc.ranks, r.num) {
						seen[t] = true
						t.layer = cur.layer
						cur.rel, t.rel = append(cur.rel, t), append(t.rel, cur)
						break
					}
				}
			}
		}
	}
	for _, r := range ranks {
		for _, op := range r.find.ops {
			op.gone = op.diff == nil && op.first == nil
		}
	}
	return nil
}

// daHit is a node the search reports, and its rank.
type daHit struct {
	rank string
	n    *daNode
}

// daDuring is phase 2 on the graph (_search_first_diff): each rank's first
// op left by layer forms, with the ops linked to it, a group unless an
// earlier one holds it; the groups' diffs, compute entries first, those
// at the smallest place of all.
func daDuring(ranks []*daRank) []daHit {
	type cand struct {
		hit        daHit
		layer, pos int
	}
	var cands []cand
	in := map[*daOp]bool{}
	for _, r := range ranks {
		var first *daOp
		for _, op := range r.find.ops {
			if !op.gone && (first == nil || op.layer < first.layer) {
				first = op
			}
		}
		if first == nil || in[first] {
			continue
		}
		group := []*daOp{first}
		in[first] = true
		for i := 0; i < len(group); i++ {
			for _, o := range group[i].rel {
				if !o.gone && !in[o] {
					in[o] = true
					group = append(group, o)
				}
			}
		}
		slices.SortStableFunc(group, func(a, b *daOp) int { return cmp.Compare(a.of.num, b.of.num) })
		for _, op := range group {
			if op.first != nil {
				cands = append(cands, cand{daHit{op.of.rank, op.first}, op.layer, op.firstAt})
			}
		}
		for _, op := range group {
			if op.diff != nil {
				cands = append(cands, cand{daHit{op.of.rank, op.diff}, op.layer, op.at})
			}
		}
	}
	if len(cands) == 0 {
		return nil
	}
	best := slices.MinFunc(cands, func(a, b cand) int { return cmp.Or(cmp.Compare(a.layer, b.layer), cmp.Compare(a.pos, b.pos)) })
	var hits []daHit
	for _, c := range cands {
		if c.layer == best.layer && c.pos == best.pos {
			hits = append(hits, c.hit)
		}
	}
	return hits
}

// daSearch finds the first divergence across the ranks and renders
// diff_analyze's JSON (nil when no rank has a diff), and the phase that
// found it (1 to 3); an error where msprobe's search fails, which writes
// nothing.
func daSearch(ranks []*daRank) (_ []byte, phase int, _ error) {
	var hits []daHit
	for _, r := range ranks {
		if r.find.pre != nil {
			hits = append(hits, daHit{r.rank, r.find.pre})
		}
	}
	phase = 1
	if len(hits) == 0 {
		phase = 2
		if err := daGraph(ranks); err != nil {
			return nil, 0, err
		}
		hits = daDuring(ranks)
	}
	if len(hits) == 0 {
		phase = 3
		for _, r := range ranks {
			if n := r.find.pending; n != nil {
				hits = append(hits, daHit{r.rank, n})
			}
		}
	}
	if len(hits) == 0 {
		return nil, 0, nil
	}
	// a rank's nodes in a list, the ranks in the order they first come
	var order []string
	for _, h := range hits {
		if !slices.Contains(order, h.rank) {
			order = append(order, h.rank)
		}
	}
	b := []byte("{")
	for i, rank := range order {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, "\n  "...)
		b = msprobe.AppendJSONString(b, rank)
		b = append(b, ": ["...)
		k := 0
		for _, h := range hits {
			if h.rank != rank {
				continue
			}
			if k++; k > 1 {
				b = append(b, ',')
			}
			b = append(b, "\n    {\n      \"op_name\": "...)
			b = msprobe.AppendJSONString(b, h.n.name)
			b = append(b, ",\n      \"data_info\": "...)
			b = append(b, h.n.info...)
			b = append(b, "\n    }"...)
		}
		b = append(b, "\n  ]"...)
	}
	return append(b, "\n}"...), phase, nil
}
