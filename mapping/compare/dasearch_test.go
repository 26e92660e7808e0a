package compare

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestDASearch: the search across ranks reports the nodes msprobe's
// find_first reports, in its order, for per-rank tables given as entry
// names (daRanks). The expected answers follow analyzer.py's three phases
// and were checked against a Python transcription of it run on the same
// cases (a review's); the goldens (synth_multirank, da_edges) cover phase
// 1 through msprobe itself.
func TestDASearch(t *testing.T) {
	t.Parallel()
	// a trailing "*" (not the same) or "|link" of n goes to the end of the name
	name := func(prefix, n, call string) string {
		n, link, _ := strings.Cut(n, "|")
		if link != "" {
			link = "|" + link
		}
		n, diff := strings.CutSuffix(n, "*")
		if diff {
			return prefix + n + call + ".forward*" + link
		}
		return prefix + n + call + ".forward" + link
	}
	ar := func(k string) string { return name("Distributed.all_reduce.", k, "") }
	bc := func(k string) string { return name("Distributed.broadcast.", k, "") }
	op := func(n string) string { return name("Torch.", n, ".0") }
	for _, c := range []struct {
		name  string
		ranks [][]string
		want  string // rank:op_name (less ".forward"), in output order; "" for no file
		phase int    // the phase that found it
	}{
		{"before communication, every rank", [][]string{{op("a"), op("b*"), ar("0")}, {op("a*"), ar("0")}},
			"rank_0:Torch.b.0, rank_1:Torch.a.0", 1},
		{"a rank without communication, in its whole file", [][]string{{op("a"), op("b"), op("c*")}, {ar("0"), op("d*"), ar("1")}},
			"rank_0:Torch.c.0", 1},
		{"the smallest place in the layer only", [][]string{{ar("0"), op("a"), op("b*"), ar("1")}, {ar("0"), op("a*"), op("b"), ar("1")}},
			"rank_1:Torch.a.0", 2},
		{"ties at the smallest place all reported", [][]string{
			{ar("0"), op("a"), op("b*"), ar("1")}, {ar("0"), op("a*"), op("b"), ar("1")}, {ar("0"), op("z*"), op("b"), ar("1")}},
			"rank_1:Torch.a.0, rank_2:Torch.z.0", 2},
		{"a communication op after its layer's compute entries", [][]string{
			{ar("0"), op("x"), ar("1*"), op("y"), ar("2")}, {ar("0"), op("x"), ar("1"), op("y*"), ar("2")}},
			"rank_0:Distributed.all_reduce.1", 2},
		{"the first communication op first of all", [][]string{{ar("0*"), op("x"), ar("1")}, {ar("0"), op("x*"), ar("1")}},
			"rank_0:Distributed.all_reduce.0", 2},
		{"at a tie compute entries before communication ops", [][]string{{ar("0"), ar("1*")}, {ar("0"), op("q*"), ar("1")}},
			"rank_1:Torch.q.0, rank_0:Distributed.all_reduce.1", 2},
		{"communication ops tied", [][]string{{ar("0"), op("x"), ar("1*")}, {ar("0"), op("x"), ar("1*")}},
			"rank_0:Distributed.all_reduce.1, rank_1:Distributed.all_reduce.1", 2},
		{"layers by communication op, not by position in the file", [][]string{
			{ar("0"), op("a"), ar("1"), op("b*"), ar("2")}, {ar("0"), op("a"), op("b"), op("c*"), ar("1")}},
			"rank_1:Torch.c.0", 2},
		{"after the last communication op: only when nothing comes before", [][]string{
			{ar("0"), op("x*")}, {ar("0"), ar("1"), op("y*"), ar("2")}},
			"rank_1:Torch.y.0", 2},
		{"after the last communication op: late diffs in the layers win", [][]string{
			{ar("0"), op("x*")}, {ar("0"), ar("1"), ar("2"), ar("3"), op("y*"), ar("4")}},
			"rank_1:Torch.y.0", 2},
		{"after the last communication op, every rank", [][]string{{ar("0"), ar("1"), op("x*")}, {ar("0"), ar("1"), ar("2"), op("y*")}},
			"rank_0:Torch.x.0, rank_1:Torch.y.0", 3},
		{"a clean rank without communication", [][]string{{op("a"), op("b")}, {ar("0"), op("c*"), ar("1")}},
			"rank_1:Torch.c.0", 2},
		{"barrier is no communication op", [][]string{
			{"Distributed.barrier.0.forward", op("x*")}, {op("y*"), "Distributed.barrier.0.forward"}},
			"rank_0:Torch.x.0, rank_1:Torch.y.0", 1},
		{"MintDistributed is a communication op", [][]string{
			{"MintDistributed.all_reduce.0.forward", op("x*")}, {op("y*"), "MintDistributed.all_reduce.0.forward"}},
			"rank_1:Torch.y.0", 1},
		{"Mint is not", [][]string{{"Mint.gather.0.forward", op("x*")}, {op("y*"), "Mint.gather.0.forward"}},
			"rank_0:Torch.x.0, rank_1:Torch.y.0", 1},
		{"skipped ops", [][]string{{"Torch.empty.0.forward*", "Module.a.Tensor.__setitem__.0.forward*", op("a"), ar("0")}, {ar("0")}},
			"", 0},
		{"skipped ops take no place", [][]string{
			{ar("0"), "Torch.fill.0.forward", op("a*"), ar("1")}, {ar("0"), op("b"), op("c*"), ar("1")}},
			"rank_0:Torch.a.0", 2},
		{"a communication op at its position in the layer", [][]string{{ar("0"), op("x"), ar("1*")}, {ar("0"), op("y*"), ar("1")}},
			"rank_1:Torch.y.0", 2},
		{"a compute diff before its layer's own op", [][]string{{ar("0"), op("x*"), ar("1*")}, {ar("0"), op("x"), ar("1*")}},
			"rank_0:Torch.x.0", 2},
		{"positions count from the layer's start", [][]string{
			{ar("0"), op("a"), op("b"), ar("1"), op("c*"), ar("2")}, {ar("0"), ar("1"), op("d"), op("e*"), ar("2")}},
			"rank_0:Torch.c.0", 2},
		{"ops linked to none: by rank", [][]string{{bc("0"), op("x"), bc("1*")}, {bc("0"), op("x"), op("q*"), bc("1")}},
			"rank_0:Distributed.broadcast.1, rank_1:Torch.q.0", 2},
		{"process groups in the order of their first rank", [][]string{
			{ar("0|[0, 2]"), op("a"), op("b*"), ar("1|[0, 2]")}, {ar("0|[1, 3]"), op("a*"), ar("1|[1, 3]")},
			{ar("0|[0, 2]"), op("a*"), ar("1|[0, 2]")}, {ar("0|[1, 3]"), op("a*"), ar("1|[1, 3]")}},
			"rank_2:Torch.a.0, rank_1:Torch.a.0, rank_3:Torch.a.0", 2},
		{"in a process group compute entries before ops", [][]string{
			{ar("0|[0, 2]"), ar("1*|[0, 2]")}, {ar("0|[1, 3]"), op("q*"), ar("1|[1, 3]")},
			{ar("0|[0, 2]"), ar("1*|[0, 2]")}, {ar("0|[1, 3]"), op("q*"), ar("1|[1, 3]")}},
			"rank_0:Distributed.all_reduce.1, rank_2:Distributed.all_reduce.1, rank_1:Torch.q.0, rank_3:Torch.q.0", 2},
		// a name no real dump has: both an op the search walks over and a
		// communication op, which counts once a rank's first one is seen
		{"a skipped communication op after the first one", [][]string{
			{ar("0"), "Distributed.all_reduce.0.Torch.fill.forward", op("a*"), ar("1")}, {ar("0"), op("b*"), ar("1")}},
			"rank_1:Torch.b.0", 2},
		{"a skipped communication op first", [][]string{
			{"Distributed.all_reduce.0.Torch.fill.forward", op("a*"), ar("1")}, {op("b*"), ar("1")}},
			"rank_0:Torch.a.0, rank_1:Torch.b.0", 1},
		{"no diff", [][]string{{ar("0"), op("a")}, {op("a"), ar("0")}}, "", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, phase := daSearch(daRanks(t, c.ranks))
			if c.want == "" && b != nil {
				t.Fatalf("reported %s, want no file", b)
			}
			var got []string
			for _, m := range daHit.FindAllStringSubmatch(string(b), -1) {
				got = append(got, m[1]+":"+strings.TrimSuffix(m[2], ".forward"))
			}
			if g := strings.Join(got, ", "); g != c.want || phase != c.phase {
				t.Errorf("reported %q in phase %d, want %q in phase %d", g, phase, c.want, c.phase)
			}
		})
	}
}

// daRanks are ranks that took the entries of tables, one a rank: names,
// each with a trailing "*" when not the same, then "|" and how msprobe
// links it when that is not what daLink gives the name alone ("all" for
// a Distributed op of an undirected API, else "").
func daRanks(t *testing.T, tables [][]string) []*daRank {
	var ranks []*daRank
	for i, entries := range tables {
		r := &daRank{rank: "rank_" + strconv.Itoa(i)}
		for _, e := range entries {
			e, link, linked := strings.Cut(e, "|")
			name, diff := strings.CutSuffix(e, "*")
			if !linked {
				link = daLink(name, nil, Statistics)
			}
			rendered := 0
			r.find.entry(name, !diff, func() *daNode {
				if rendered++; rendered > 1 {
					t.Fatalf("%s rendered twice", name)
				}
				return &daNode{name: name, info: []byte("{}")}
			}, func() string { return link })
		}
		ranks = append(ranks, r)
	}
	return ranks
}

// TestDALayersExact: the layers are msprobe's where the ranks that call
// collectives call the same APIs in the same order, each linking alike,
// unless msprobe links across APIs: a directed API beside one whose name
// extends it, a MintDistributed op beside a Distributed one.
func TestDALayersExact(t *testing.T) {
	t.Parallel()
	ar, bc := "Distributed.all_reduce.0.forward", "Distributed.broadcast.0.forward"
	op := "Torch.add.0.forward"
	for _, c := range []struct {
		name   string
		tables [][]string
		want   bool
	}{
		{"same calls, other compute", [][]string{{ar, op, bc}, {op, ar, bc, op, op}}, true},
		{"call counters differ", [][]string{{ar, "Distributed.all_reduce.1.forward"}, {"Distributed.all_reduce.7.forward", ar}}, true},
		{"a rank without collectives", [][]string{{ar, bc}, {op}, {ar, bc}}, true},
		{"another order", [][]string{{ar, bc}, {bc, ar}}, false},
		{"one call more", [][]string{{ar, bc}, {ar, bc, ar}}, false},
		{"send against recv", [][]string{{"Distributed.send.0.forward"}, {"Distributed.recv.0.forward"}}, false},
		{"broadcast beside broadcast_object_list", [][]string{{bc, "Distributed.broadcast_object_list.0.forward"},
			{bc, "Distributed.broadcast_object_list.0.forward"}}, false},
		{"all_gather beside all_gather_into_tensor", [][]string{{"Distributed.all_gather.0.forward", "Distributed.all_gather_into_tensor.0.forward"},
			{"Distributed.all_gather.0.forward", "Distributed.all_gather_into_tensor.0.forward"}}, true},
		{"MintDistributed beside Distributed", [][]string{{ar, "MintDistributed.all_reduce.0.forward"},
			{ar, "MintDistributed.all_reduce.0.forward"}}, false},
		{"MintDistributed alone", [][]string{{"MintDistributed.all_reduce.0.forward"}, {"MintDistributed.all_reduce.0.forward"}}, true},
		{"process groups", [][]string{{ar + "|[0, 2]"}, {ar + "|[1, 3]"}, {ar + "|[0, 2]"}, {ar + "|[1, 3]"}}, true},
		{"a process group on some ranks", [][]string{{ar + "|[0, 1]"}, {ar}}, false},
	} {
		if got := daLayersExact(daRanks(t, c.tables)); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// daHit is a rank's node in diff_analyze's JSON.
var daHit = regexp.MustCompile(`"(rank_\d+)": \[\n    \{\n      "op_name": "([^"]+)"`)
