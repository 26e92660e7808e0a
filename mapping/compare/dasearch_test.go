package compare

import (
	"encoding/json"
	"fmt"
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
		fails string // where msprobe's search fails: what the error says
	}{
		{"before communication, every rank", [][]string{{op("a"), op("b*"), ar("0")}, {op("a*"), ar("0")}},
			"rank_0:Torch.b.0, rank_1:Torch.a.0", 1, ""},
		{"a rank without communication, in its whole file", [][]string{{op("a"), op("b"), op("c*")}, {ar("0"), op("d*"), ar("1")}},
			"rank_0:Torch.c.0", 1, ""},
		{"the smallest place in the layer only", [][]string{{ar("0"), op("a"), op("b*"), ar("1")}, {ar("0"), op("a*"), op("b"), ar("1")}},
			"rank_1:Torch.a.0", 2, ""},
		{"ties at the smallest place all reported", [][]string{
			{ar("0"), op("a"), op("b*"), ar("1")}, {ar("0"), op("a*"), op("b"), ar("1")}, {ar("0"), op("z*"), op("b"), ar("1")}},
			"rank_1:Torch.a.0, rank_2:Torch.z.0", 2, ""},
		{"a communication op after its layer's compute entries", [][]string{
			{ar("0"), op("x"), ar("1*"), op("y"), ar("2")}, {ar("0"), op("x"), ar("1"), op("y*"), ar("2")}},
			"rank_0:Distributed.all_reduce.1", 2, ""},
		{"the first communication op first of all", [][]string{{ar("0*"), op("x"), ar("1")}, {ar("0"), op("x*"), ar("1")}},
			"rank_0:Distributed.all_reduce.0", 2, ""},
		{"at a tie compute entries before communication ops", [][]string{{ar("0"), ar("1*")}, {ar("0"), op("q*"), ar("1")}},
			"rank_1:Torch.q.0, rank_0:Distributed.all_reduce.1", 2, ""},
		{"communication ops tied", [][]string{{ar("0"), op("x"), ar("1*")}, {ar("0"), op("x"), ar("1*")}},
			"rank_0:Distributed.all_reduce.1, rank_1:Distributed.all_reduce.1", 2, ""},
		{"layers by communication op, not by position in the file", [][]string{
			{ar("0"), op("a"), ar("1"), op("b*"), ar("2")}, {ar("0"), op("a"), op("b"), op("c*"), ar("1")}},
			"rank_1:Torch.c.0", 2, ""},
		{"after the last communication op: only when nothing comes before", [][]string{
			{ar("0"), op("x*")}, {ar("0"), ar("1"), op("y*"), ar("2")}},
			"rank_1:Torch.y.0", 2, ""},
		{"after the last communication op: late diffs in the layers win", [][]string{
			{ar("0"), op("x*")}, {ar("0"), ar("1"), ar("2"), ar("3"), op("y*"), ar("4")}},
			"rank_1:Torch.y.0", 2, ""},
		{"after the last communication op, every rank", [][]string{{ar("0"), ar("1"), op("x*")}, {ar("0"), ar("1"), ar("2"), op("y*")}},
			"rank_0:Torch.x.0, rank_1:Torch.y.0", 3, ""},
		{"a clean rank without communication", [][]string{{op("a"), op("b")}, {ar("0"), op("c*"), ar("1")}},
			"rank_1:Torch.c.0", 2, ""},
		{"barrier is no communication op", [][]string{
			{"Distributed.barrier.0.forward", op("x*")}, {op("y*"), "Distributed.barrier.0.forward"}},
			"rank_0:Torch.x.0, rank_1:Torch.y.0", 1, ""},
		{"MintDistributed is a communication op", [][]string{
			{"MintDistributed.all_reduce.0.forward", op("x*")}, {op("y*"), "MintDistributed.all_reduce.0.forward"}},
			"rank_1:Torch.y.0", 1, ""},
		{"Mint is not", [][]string{{"Mint.gather.0.forward", op("x*")}, {op("y*"), "Mint.gather.0.forward"}},
			"rank_0:Torch.x.0, rank_1:Torch.y.0", 1, ""},
		{"skipped ops", [][]string{{"Torch.empty.0.forward*", "Module.a.Tensor.__setitem__.0.forward*", op("a"), ar("0")}, {ar("0")}},
			"", 0, ""},
		{"skipped ops take no place", [][]string{
			{ar("0"), "Torch.fill.0.forward", op("a*"), ar("1")}, {ar("0"), op("b"), op("c*"), ar("1")}},
			"rank_0:Torch.a.0", 2, ""},
		{"a communication op at its position in the layer", [][]string{{ar("0"), op("x"), ar("1*")}, {ar("0"), op("y*"), ar("1")}},
			"rank_1:Torch.y.0", 2, ""},
		{"a compute diff before its layer's own op", [][]string{{ar("0"), op("x*"), ar("1*")}, {ar("0"), op("x"), ar("1*")}},
			"rank_0:Torch.x.0", 2, ""},
		{"positions count from the layer's start", [][]string{
			{ar("0"), op("a"), op("b"), ar("1"), op("c*"), ar("2")}, {ar("0"), ar("1"), op("d"), op("e*"), ar("2")}},
			"rank_0:Torch.c.0", 2, ""},
		{"ops linked to none: by rank", [][]string{{bc("0"), op("x"), bc("1*")}, {bc("0"), op("x"), op("q*"), bc("1")}},
			"rank_0:Distributed.broadcast.1, rank_1:Torch.q.0", 2, ""},
		{"process groups in the order of their first rank", [][]string{
			{ar("0|[0, 2]"), op("a"), op("b*"), ar("1|[0, 2]")}, {ar("0|[1, 3]"), op("a*"), ar("1|[1, 3]")},
			{ar("0|[0, 2]"), op("a*"), ar("1|[0, 2]")}, {ar("0|[1, 3]"), op("a*"), ar("1|[1, 3]")}},
			"rank_2:Torch.a.0, rank_1:Torch.a.0, rank_3:Torch.a.0", 2, ""},
		{"in a process group compute entries before ops", [][]string{
			{ar("0|[0, 2]"), ar("1*|[0, 2]")}, {ar("0|[1, 3]"), op("q*"), ar("1|[1, 3]")},
			{ar("0|[0, 2]"), ar("1*|[0, 2]")}, {ar("0|[1, 3]"), op("q*"), ar("1|[1, 3]")}},
			"rank_0:Distributed.all_reduce.1, rank_2:Distributed.all_reduce.1, rank_1:Torch.q.0, rank_3:Torch.q.0", 2, ""},
		// msprobe's graph: ops linked across APIs and sequences
		{"a refused broadcast links broadcast_object_list", [][]string{
			{bc("0*"), op("a"), "Distributed.broadcast_object_list.0.forward"},
			{bc("0"), op("a*"), "Distributed.broadcast_object_list.0.forward"}},
			"rank_1:Torch.a.0, rank_0:Distributed.broadcast.0", 2, ""},
		{"a broadcast more on one rank", [][]string{
			{ar("0"), op("x*"), ar("1")}, {bc("0|src=1"), ar("0"), op("y*"), ar("1")}},
			"rank_0:Torch.x.0, rank_1:Torch.y.0", 2, ""},
		{"pipeline stages", [][]string{
			{op("a"), "Distributed.send.0.forward|dst=1", op("b"), "Distributed.send.1.forward|dst=1"},
			{"Distributed.recv.0.forward|src=0", op("c"), "Distributed.send.0.forward|dst=2", "Distributed.recv.1.forward|src=0",
				op("d*"), "Distributed.send.1.forward|dst=2"},
			{"Distributed.recv.0.forward|src=1", op("e*"), "Distributed.recv.1.forward|src=1", op("f")}},
			"rank_1:Torch.d.0, rank_2:Torch.e.0", 2, ""},
		{"a layer not above the one before moves up", [][]string{
			{ar("0"), op("x*"), ar("1")}, {bc("0"), ar("0"), ar("1")}, {ar("0"), op("y*"), ar("1")}},
			"rank_0:Torch.x.0", 2, ""},
		{"ops of another type are not linked", [][]string{
			{bc("0|src=0"), op("x*"), "Distributed.broadcast_object_list.0.forward"},
			{bc("0|src=0"), op("y*"), "Distributed.broadcast_object_list.0.forward"}},
			"rank_0:Torch.x.0, rank_1:Torch.y.0", 2, ""},
		{"a peer rank 0 is dropped", [][]string{
			{op("a")}, {"Distributed.send.0.forward|dst=0", op("x*"), ar("0")},
			{bc("0"), op("y*"), "Distributed.recv.0.forward|src=1", ar("0")}},
			"rank_2:Torch.y.0", 2, ""},
		// an op's type from its first src row: the other direction when
		// msprobe's string, this one when the rank's own number
		{"a src row as msprobe writes it", [][]string{
			{op("a")}, {"Distributed.send.0.forward|src=1;dst=2", op("x*"), ar("0")},
			{bc("0"), op("y*"), "Distributed.recv.0.forward|src=1", ar("0")}},
			"rank_1:Torch.x.0, rank_2:Torch.y.0", 2, ""},
		{"a src row of the rank's own number", [][]string{
			{op("a")}, {"Distributed.send.0.forward|src#1;dst=2", op("x*"), ar("0")},
			{bc("0"), op("y*"), "Distributed.recv.0.forward|src=1", ar("0")}},
			"rank_2:Torch.y.0", 2, ""},
		{"MintDistributed links Distributed", [][]string{
			{ar("0"), "MintDistributed.all_reduce.0.forward", op("x*"), ar("1")},
			{ar("0"), op("y*"), "MintDistributed.all_reduce.0.forward", ar("1")}},
			"rank_1:Torch.y.0", 2, ""},
		{"a null peer on the last rank", [][]string{{ar("0"), op("x*"), ar("1")}, {ar("0|peer=null"), op("x"), ar("1")}},
			"rank_0:Torch.x.0", 2, ""},
		// where msprobe's search fails
		{"a process group naming a rank not compared", [][]string{
			{ar("0|[0, 1, 2]"), op("x*"), ar("1|[0, 1, 2]")}, {ar("0|[0, 1, 2]"), op("x"), ar("1|[0, 1, 2]")}},
			"", 0, "names rank 2"},
		{"a null peer", [][]string{{ar("0|peer=null"), op("x*"), ar("1")}, {ar("0"), op("x"), ar("1")}}, "", 0, "peer null"},
		{"a src that is no int", [][]string{{bc("0|src=None"), op("x*"), bc("1")}, {bc("0"), op("x"), bc("1")}}, "", 0, "src"},
		// a name no real dump has: both an op the search walks over and a
		// communication op, which counts once a rank's first one is seen
		{"a skipped communication op after the first one", [][]string{
			{ar("0"), "Distributed.all_reduce.0.Torch.fill.forward", op("a*"), ar("1")}, {ar("0"), op("b*"), ar("1")}},
			"rank_1:Torch.b.0", 2, ""},
		{"a skipped communication op first", [][]string{
			{"Distributed.all_reduce.0.Torch.fill.forward", op("a*"), ar("1")}, {op("b*"), ar("1")}},
			"rank_0:Torch.a.0, rank_1:Torch.b.0", 1, ""},
		{"no diff", [][]string{{ar("0"), op("a")}, {op("a"), ar("0")}}, "", 0, ""},
		{"a peer that is no rank on a linked op refuses", [][]string{
			{ar("0"), op("x*"), ar("1")}, {ar("0|peer=null"), ar("1"), op("y*"), ar("2")}},
			"rank_0:Torch.x.0, rank_1:Torch.y.0", 2, ""},
		{"several nodes of one rank", [][]string{
			{"Distributed.all_gather.0.forward*"}, {ar("0*"), bc("0"), op("c*"), "Distributed.all_gather.0.forward"}},
			"rank_1:Torch.c.0, rank_1:Distributed.all_reduce.0, rank_0:Distributed.all_gather.0", 2, ""},
		{"a linked op's src that is no int", [][]string{
			{"Distributed.send.0.forward|dst=1", op("x*"), ar("0")}, {"Distributed.recv.0.forward|src=None", ar("0")}}, "", 0, "src"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, phase, err := daSearch(daRanks(t, c.ranks))
			if c.fails != "" {
				if err == nil || !strings.Contains(err.Error(), c.fails) || b != nil {
					t.Fatalf("search: %s, error %v; want no file and an error with %q", b, err, c.fails)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if b != nil && !json.Valid(b) {
				t.Fatalf("not JSON: %s", b)
			}
			if c.want == "" && b != nil {
				t.Fatalf("reported %s, want no file", b)
			}
			var got []string
			for _, n := range daNodes(b) {
				got = append(got, strings.TrimSuffix(n, ".forward"))
			}
			if g := strings.Join(got, ", "); g != c.want || phase != c.phase {
				t.Errorf("reported %q in phase %d, want %q in phase %d", g, phase, c.want, c.phase)
			}
		})
	}
}

// daRanks are ranks that took the entries of tables, one a rank: names,
// each with a trailing "*" when not the same, then maybe "|" and the
// input rows of a communication op, ";" between them: "[0, 1]" a group
// row, "src=1" or "dst=1" such a row (a string, as msprobe writes it),
// "src#1" one whose value is the number, "peer=1" a row with that P2POp
// peer; without, one tensor input.
func daRanks(t *testing.T, tables [][]string) []*daRank {
	inputs := func(name, spec string) []daInput {
		if spec == "" {
			return []daInput{{name + ".input.0", "1.0", `"None"`}}
		}
		var ins []daInput
		for _, s := range strings.Split(spec, ";") {
			k, v, _ := strings.Cut(s, "=")
			switch {
			case strings.Contains(s, "#"):
				k, v, _ := strings.Cut(s, "#")
				ins = append(ins, daInput{name + ".input." + k, v, `"None"`})
			case strings.HasPrefix(s, "["):
				ins = append(ins, daInput{name + ".input.group", strconv.Quote(s), `"None"`})
			case k == "peer":
				ins = append(ins, daInput{name + ".input.0", "1.0", v})
			default:
				ins = append(ins, daInput{name + ".input." + k, strconv.Quote(v), `"None"`})
			}
		}
		return ins
	}
	var ranks []*daRank
	for i, entries := range tables {
		r := &daRank{rank: "rank_" + strconv.Itoa(i), num: i}
		for _, e := range entries {
			e, spec, _ := strings.Cut(e, "|")
			name, diff := strings.CutSuffix(e, "*")
			rendered := 0
			r.find.entry(name, !diff, func() *daNode {
				if rendered++; rendered > 1 {
					t.Fatalf("%s rendered twice", name)
				}
				return &daNode{name: name, info: []byte("{}")}
			}, func() []daInput { return inputs(name, spec) })
		}
		ranks = append(ranks, r)
	}
	return ranks
}

// daNodes are the nodes of diff_analyze's JSON b, each "rank:op_name",
// in order.
func daNodes(b []byte) []string {
	var nodes []string
	rank := ""
	for _, m := range daNodeRE.FindAllStringSubmatch(string(b), -1) {
		if m[1] != "" {
			rank = m[1]
			continue
		}
		nodes = append(nodes, rank+":"+m[2])
	}
	return nodes
}

// daNodeRE is a rank's key or a node's op_name in diff_analyze's JSON.
var daNodeRE = regexp.MustCompile(`"(rank_\d+)": \[|"op_name": "([^"]+)"`)

// BenchmarkDASearch: the search across ranks on runs whose ranks each call
// ops all_reduce calls, every layer clean but the last rank's last: the
// graph links every op of every rank to its counterpart on each later
// rank.
func BenchmarkDASearch(b *testing.B) {
	for _, size := range [][2]int{{8, 1000}, {32, 1000}, {64, 500}} {
		ranks, ops := size[0], size[1]
		b.Run(fmt.Sprintf("ranks=%d/ops=%d", ranks, ops), func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				rs := make([]*daRank, ranks)
				for i := range rs {
					r := &daRank{rank: "rank_" + strconv.Itoa(i), num: i}
					for k := range ops + 1 {
						name := "Distributed.all_reduce." + strconv.Itoa(k) + ".forward"
						r.find.entry(name, true, nil, func() []daInput { return nil })
						if k < ops {
							same := k != ops-1 || i != ranks-1
							r.find.entry("Torch.add."+strconv.Itoa(k)+".forward", same,
								func() *daNode { return &daNode{name: "Torch.add", info: []byte("{}")} }, nil)
						}
					}
					rs[i] = r
				}
				b.StartTimer()
				if out, phase, err := daSearch(rs); err != nil || phase != 2 || out == nil {
					b.Fatalf("phase %d, %v", phase, err)
				}
			}
		})
	}
}
