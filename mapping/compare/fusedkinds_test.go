package compare

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/layermap/layermap/mapping/compare/tensor/tensortest"

	"github.com/layermap/layermap/mapping"
	"github.com/layermap/layermap/printparse/testkit"
)

// Fixtures for each kind of N:1 group, derived from the demo dumps: the
// tensors of the parts are real rows of the LLaMA-Factory dump (their
// statistics and shapes), the whole is computed from them here.

// demoLeaves returns the leaves of the demo LLaMA-Factory dump with the
// given shape, in dump order (the raw material of the fixtures).
func demoLeaves(t testing.TB, shape string) []*jnode {
	doc := readJ(t, testkit.Testdata(t, "demo", "dumps", "llamafactory", "dump.json"))
	ls := leaves(doc)
	var names []string
	for n, l := range ls {
		if l.get("shape") != nil && shapeText(l) == shape {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	out := make([]*jnode, len(names))
	for i, n := range names {
		out[i] = ls[n].clone()
	}
	return out
}

func shapeText(l *jnode) string {
	var s []string
	for _, d := range l.get("shape").arr {
		s = append(s, string(d.raw))
	}
	return "[" + strings.Join(s, ", ") + "]"
}

// withShape is l with shape dims (its statistics kept).
func withShape(l *jnode, dims ...int) *jnode {
	c := l.clone()
	sh := &jnode{isArr: true, arr: []*jnode{}}
	for _, d := range dims {
		sh.arr = append(sh.arr, jnum(float64(d)))
	}
	c.set("shape", sh)
	return c
}

// joinLeaves is the leaf of ls concatenated along axis (stack: along a
// new leading axis), computed independently of combine.go.
func joinLeaves(t testing.TB, axis int, stack bool, ls ...*jnode) *jnode {
	out := ls[0].clone()
	var dims []float64
	for _, d := range ls[0].get("shape").arr {
		dims = append(dims, d.float(t))
	}
	mx, mn, sum, sq, n := math.Inf(-1), math.Inf(1), 0.0, 0.0, 0.0
	for i, l := range ls {
		k := 1.0
		for j, d := range l.get("shape").arr {
			k *= d.float(t)
			if i > 0 && j == axis && !stack {
				dims[axis] += d.float(t)
			}
		}
		mx, mn = math.Max(mx, l.get("Max").float(t)), math.Min(mn, l.get("Min").float(t))
		sum += l.get("Mean").float(t) * k
		sq += l.get("Norm").float(t) * l.get("Norm").float(t)
		n += k
	}
	if stack {
		dims = append([]float64{float64(len(ls))}, dims...)
	}
	sh := &jnode{isArr: true, arr: []*jnode{}}
	for _, d := range dims {
		sh.arr = append(sh.arr, jnum(d))
	}
	out.set("shape", sh)
	out.set("Max", jnum(mx))
	out.set("Min", jnum(mn))
	out.set("Mean", jnum(sum/n))
	out.set("Norm", jnum(math.Sqrt(sq)))
	return out
}

// fxEntry is one dump entry of a fixture.
type fxEntry struct {
	name    string
	in, out []*jnode
	params  map[string]*jnode
}

func (e fxEntry) node() *jnode {
	body := &jnode{obj: true}
	arr := func(ls []*jnode) *jnode { return &jnode{isArr: true, arr: append([]*jnode{}, ls...)} }
	body.set("input_args", arr(e.in))
	body.set("input_kwargs", &jnode{obj: true})
	body.set("output", arr(e.out))
	if len(e.params) > 0 {
		p := &jnode{obj: true}
		var ks []string
		for k := range e.params {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		for _, k := range ks {
			p.set(k, e.params[k])
		}
		body.set("parameters", p)
	}
	return body
}

// writeFixture writes a rank folder holding a statistics dump of entries.
func writeFixture(t testing.TB, dir string, entries ...fxEntry) string {
	t.Helper()
	return writeFixtureTask(t, dir, "statistics", entries...)
}

// writeFixtureTask writes a rank folder holding a dump of task.
func writeFixtureTask(t testing.TB, dir, task string, entries ...fxEntry) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	doc := &jnode{obj: true}
	doc.set("task", jstr(task))
	doc.set("level", jstr("mix"))
	doc.set("framework", jstr("pytorch"))
	doc.set("dump_data_dir", &jnode{raw: []byte("null")})
	data := &jnode{obj: true}
	for _, e := range entries {
		data.set(e.name, e.node())
	}
	doc.set("data", data)
	writeJ(t, filepath.Join(dir, "dump.json"), doc)
	return dir
}

// writePairs writes a sidecar file.
func writePairs(t testing.TB, dir string, ps ...mapping.ModulePair) string {
	t.Helper()
	path := filepath.Join(dir, "pairs.yaml")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := mapping.WritePairs(f, ps); err != nil {
		t.Fatal(err)
	}
	return path
}

// kindCase is one kind of N:1 group: the two dumps, the sidecar, what
// each row must say.
type kindCase struct {
	name         string
	npu, bench   []fxEntry
	pairs        []mapping.ModulePair
	kind         string
	counts       FusedCounts
	rows         map[string]string // NPU Name (prefix) -> Err_message substring
	npuRowsExtra int               // combined NPU rows added to the table
	fuzzy        bool              // -fm
}

func runKind(t *testing.T, c kindCase) (*Summary, [][]string) {
	dir := t.TempDir()
	npu := writeFixture(t, filepath.Join(dir, "npu"), c.npu...)
	bench := writeFixture(t, filepath.Join(dir, "bench"), c.bench...)
	opt := Options{Target: npu, Golden: bench, OutDir: t.TempDir(), Fuzzy: c.fuzzy, Stamp: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)}
	if len(c.pairs) > 0 {
		opt.PairsFile = writePairs(t, dir, c.pairs...)
	}
	rep, err := Run(opt)
	if err != nil {
		t.Fatal(err)
	}
	return rep.Ranks[0].Summary, testkit.ReadCSV(t, rep.Ranks[0].Files[0])
}

func TestFusedKinds(t *testing.T) {
	x := demoLeaves(t, "[2, 8]")
	w := demoLeaves(t, "[8]")
	if len(x) < 12 || len(w) < 8 {
		t.Fatalf("demo dump: %d [2, 8] and %d [8] leaves", len(x), len(w))
	}
	fwd := func(path, class string, in, out *jnode, params map[string]*jnode) fxEntry {
		return fxEntry{name: "Module." + path + "." + class + ".forward.0", in: []*jnode{in}, out: []*jnode{out}, params: params}
	}
	bwd := func(path, class string, gradOut, gradIn *jnode) fxEntry {
		return fxEntry{name: "Module." + path + "." + class + ".backward.0", in: []*jnode{gradOut}, out: []*jnode{gradIn}}
	}
	// gate/up: one input x, two projections; gradients: of the outputs
	// (concatenated), of x (summed over the parts: not in the statistics)
	gate := map[string]*jnode{"weight": w[0], "bias": w[1]}
	up := map[string]*jnode{"weight": w[2], "bias": w[3]}
	fc1 := map[string]*jnode{"weight": joinLeaves(t, 0, false, w[0], w[2]), "bias": joinLeaves(t, 0, false, w[1], w[3])}
	gateUpBench := []fxEntry{
		fwd("model.layers.0.mlp.gate_proj", "Linear", x[0], x[1], gate),
		fwd("model.layers.0.mlp.up_proj", "Linear", x[0], x[2], up),
		bwd("model.layers.0.mlp.up_proj", "Linear", x[3], x[4]),
		bwd("model.layers.0.mlp.gate_proj", "Linear", x[5], x[6]),
	}
	gateUpNPU := []fxEntry{
		fwd("decoder.layers.0.mlp.linear_fc1", "ColumnParallelLinear", x[0], joinLeaves(t, 1, false, x[1], x[2]), fc1),
		bwd("decoder.layers.0.mlp.linear_fc1", "ColumnParallelLinear", joinLeaves(t, 1, false, x[5], x[3]), x[7]),
	}
	// qkv with grouped-query sizes: q [2, 8], k and v [2, 4]
	k4, v4 := withShape(x[8], 2, 4), withShape(x[9], 2, 4)
	qkvBench := []fxEntry{
		fwd("model.layers.0.self_attn.q_proj", "Linear", x[0], x[10], nil),
		fwd("model.layers.0.self_attn.k_proj", "Linear", x[0], k4, nil),
		fwd("model.layers.0.self_attn.v_proj", "Linear", x[0], v4, nil),
	}
	qkvNPU := []fxEntry{fwd("decoder.layers.0.self_attention.linear_qkv", "ColumnParallelLinear", x[0], joinLeaves(t, 1, false, x[10], k4, v4), nil)}
	// experts: the grouped module gets the tokens of every expert
	expertsBench := []fxEntry{
		fwd("model.layers.0.mlp.experts.0", "Qwen3MoeMLP", x[0], x[1], nil),
		fwd("model.layers.0.mlp.experts.1", "Qwen3MoeMLP", x[2], x[3], nil),
		fwd("model.layers.0.mlp.experts.2", "Qwen3MoeMLP", x[4], x[5], nil),
		bwd("model.layers.0.mlp.experts.2", "Qwen3MoeMLP", x[6], x[7]),
		bwd("model.layers.0.mlp.experts.1", "Qwen3MoeMLP", x[8], x[9]),
		bwd("model.layers.0.mlp.experts.0", "Qwen3MoeMLP", x[10], x[11]),
	}
	expertsNPU := []fxEntry{
		fwd("decoder.layers.0.mlp.experts", "TEGroupedMLP", joinLeaves(t, 0, false, x[0], x[2], x[4]), joinLeaves(t, 0, false, x[1], x[3], x[5]), nil),
		bwd("decoder.layers.0.mlp.experts", "TEGroupedMLP", joinLeaves(t, 0, false, x[10], x[8], x[6]), joinLeaves(t, 0, false, x[11], x[9], x[7])),
	}
	experts := []string{"model.layers.0.mlp.experts.0", "model.layers.0.mlp.experts.1", "model.layers.0.mlp.experts.2"}
	cases := []kindCase{
		{
			name: "gate_up, fused on the NPU side", npu: gateUpNPU, bench: gateUpBench, kind: mapping.KindGateUp,
			pairs:  []mapping.ModulePair{{NPU: "decoder.layers.0.mlp.linear_fc1", BenchParts: []string{"model.layers.0.mlp.gate_proj", "model.layers.0.mlp.up_proj"}, Kind: mapping.KindGateUp}},
			counts: FusedCounts{Combined: 4, Shared: 1, InputsOnly: 1},
			rows: map[string]string{
				".forward.0.input.0":         "an input the 2 bench parts share",
				".forward.0.output.0":        "bench row = its 2 parts concatenated along axis 1",
				".forward.0.parameters.bias": "concatenated along axis 0",
				".backward.0.input.0":        "concatenated along axis 1",
				".backward.0.output.0":       "fused: inputs only (gate_up: the gradient of a shared input is the sum",
			},
		},
		{
			name: "gate_up, fused on the bench side", npu: gateUpBench, bench: gateUpNPU, kind: mapping.KindGateUp,
			pairs:  []mapping.ModulePair{{NPUParts: []string{"model.layers.0.mlp.gate_proj", "model.layers.0.mlp.up_proj"}, Bench: "decoder.layers.0.mlp.linear_fc1", Kind: mapping.KindGateUp}},
			counts: FusedCounts{Combined: 4, Shared: 2, InputsOnly: 2, Parts: 8}, npuRowsExtra: 4,
			rows: map[string]string{
				"Module.model.layers.0.mlp.up_proj.Linear.forward.0.output.0":      "part 2 of 2",
				"Module.model.layers.0.mlp.gate_proj.Linear.forward.0.input.0":     "an input the 2 NPU parts share",
				"[Module.model.layers.0.mlp.gate_proj.Linear.forward.0.output.0":   "NPU row = its 2 parts concatenated along axis 1",
				"[Module.model.layers.0.mlp.gate_proj.Linear.backward.0.input.0":   "NPU row = its 2 parts concatenated along axis 1",
				"Module.model.layers.0.mlp.gate_proj.Linear.backward.0.output.0":   "fused: inputs only",
				"[Module.model.layers.0.mlp.gate_proj.Linear.forward.0.parameters": "concatenated along axis 0",
			},
		},
		{
			name: "qkv, three parts of two sizes", npu: qkvNPU, bench: qkvBench, kind: mapping.KindQKV,
			pairs:  []mapping.ModulePair{{NPU: "decoder.layers.0.self_attention.linear_qkv", BenchParts: []string{"model.layers.0.self_attn.q_proj", "model.layers.0.self_attn.k_proj", "model.layers.0.self_attn.v_proj"}, Kind: mapping.KindQKV, Layout: mapping.LayoutInterleaved}},
			counts: FusedCounts{Combined: 1, Shared: 1},
			rows:   map[string]string{".forward.0.output.0": "bench row = its 3 parts concatenated along axis 1"},
		},
		{
			name: "grouped experts", npu: expertsNPU, bench: expertsBench, kind: mapping.KindExperts,
			pairs:  []mapping.ModulePair{{NPU: "decoder.layers.0.mlp.experts", BenchParts: experts, Kind: mapping.KindExperts}},
			counts: FusedCounts{Combined: 4},
			rows: map[string]string{
				".forward.0.input.0":   "bench row = its 3 parts concatenated along axis 0",
				".backward.0.output.0": "bench row = its 3 parts concatenated along axis 0",
			},
		},
		{
			// a 1:1 pair of a fused module with one part: the shapes show
			// the group
			name: "fused, found behind a 1:1 pair", npu: gateUpNPU, bench: gateUpBench, kind: mapping.KindGateUp,
			pairs:  []mapping.ModulePair{{NPU: "decoder.layers.0.mlp.linear_fc1", Bench: "model.layers.0.mlp.up_proj"}},
			counts: FusedCounts{Combined: 4, Shared: 1, InputsOnly: 1},
			rows:   map[string]string{".forward.0.output.0": "bench row = its 2 parts concatenated along axis 1"},
		},
		{
			// the same with the fused module on the bench side: its
			// partner's siblings on the NPU side make up the parts, in the
			// order of their calls; the table is the sidecar group's
			name: "fused on the bench side, found behind a 1:1 pair", npu: gateUpBench, bench: gateUpNPU, kind: mapping.KindGateUp,
			pairs:  []mapping.ModulePair{{NPU: "model.layers.0.mlp.up_proj", Bench: "decoder.layers.0.mlp.linear_fc1"}},
			counts: FusedCounts{Combined: 4, Shared: 2, InputsOnly: 2, Parts: 8}, npuRowsExtra: 4,
			rows: map[string]string{
				"Module.model.layers.0.mlp.gate_proj.Linear.forward.0.output.0":    "part 1 of 2",
				"Module.model.layers.0.mlp.up_proj.Linear.forward.0.output.0":      "part 2 of 2",
				"Module.model.layers.0.mlp.gate_proj.Linear.forward.0.input.0":     "an input the 2 NPU parts share",
				"[Module.model.layers.0.mlp.gate_proj.Linear.forward.0.output.0":   "NPU row = its 2 parts concatenated along axis 1",
				"[Module.model.layers.0.mlp.gate_proj.Linear.backward.0.input.0":   "NPU row = its 2 parts concatenated along axis 1",
				"[Module.model.layers.0.mlp.gate_proj.Linear.forward.0.parameters": "concatenated along axis 0",
			},
		},
		{
			// the kind is named by the parts found: q, k and v
			name: "qkv, found behind a 1:1 pair", npu: qkvNPU, bench: qkvBench, kind: mapping.KindQKV,
			pairs:  []mapping.ModulePair{{NPU: "decoder.layers.0.self_attention.linear_qkv", Bench: "model.layers.0.self_attn.q_proj"}},
			counts: FusedCounts{Combined: 1, Shared: 1},
			rows:   map[string]string{".forward.0.output.0": "fused: qkv, bench row = its 3 parts concatenated along axis 1"},
		},
		{
			// parts named neither gate/up nor q/k/v: a plain fused group
			name: "other parts, found behind a 1:1 pair", npu: qkvNPU, bench: renamed(qkvBench, "q_proj", "proj_a", "k_proj", "proj_b", "v_proj", "proj_c"), kind: mapping.KindFused,
			pairs:  []mapping.ModulePair{{NPU: "decoder.layers.0.self_attention.linear_qkv", Bench: "model.layers.0.self_attn.proj_a"}},
			counts: FusedCounts{Combined: 1, Shared: 1},
			rows:   map[string]string{".forward.0.output.0": "fused: fused, bench row = its 3 parts concatenated along axis 1"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, rows := runKind(t, c)
			if s.Error != 0 || s.Warning != 0 {
				t.Errorf("%d error, %d warning rows, want none", s.Error, s.Warning)
			}
			if got := s.Fused[c.kind]; got == nil || *got != c.counts {
				t.Errorf("fused %s: %+v, want %+v", c.kind, got, c.counts)
			}
			npuRows := 0
			for _, e := range c.npu {
				npuRows += len(e.in) + len(e.out) + len(e.params)
			}
			if s.Rows != npuRows+c.npuRowsExtra {
				t.Errorf("%d rows, want %d NPU rows + %d combined", s.Rows, npuRows, c.npuRowsExtra)
			}
			// -da puts the NPU dump's P2POp values by position: after a
			// combined NPU row the table's rows are no longer the dump's
			checkDAByPosition(t, func(dir string) Options {
				o := Options{Target: writeFixture(t, filepath.Join(dir, "npu"), c.npu...), Golden: writeFixture(t, filepath.Join(dir, "bench"), c.bench...)}
				if len(c.pairs) > 0 {
					o.PairsFile = writePairs(t, dir, c.pairs...)
				}
				return o
			})
			msg, res := col(rows, "Err_message"), col(rows, "Result")
			for suffix, want := range c.rows {
				found := false
				for _, r := range rows[1:] {
					if strings.HasSuffix(r[0], suffix) || strings.HasPrefix(r[0], suffix) {
						found = true
						if !strings.Contains(r[msg], want) || r[res] != "pass" {
							t.Errorf("row %s: %s %s, want pass and %q", r[0], r[res], r[msg], want)
						}
					}
				}
				if !found {
					t.Errorf("no row %s in\n%s", suffix, dumpCol(rows, 0))
				}
			}
		})
	}
}

func dumpCol(rows [][]string, c int) string {
	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintln(&b, r[c])
	}
	return b.String()
}

// TestFusedTP compares ranks of different tensor-parallel sizes: TP 2
// against TP 1 and the other way round, two replicas each. A
// column-parallel projection's weight and output are split along their
// last axis, a sequence-parallel norm's output along the first; the
// input and a replicated output are whole on every rank.
func TestFusedTP(t *testing.T) {
	x := demoLeaves(t, "[2, 8]")
	w := demoLeaves(t, "[8]")
	// shard s of replica r
	shard := func(r, s int) []fxEntry {
		i := 4*r + 2*s
		return []fxEntry{
			{name: "Module.decoder.layers.0.mlp.linear_fc1.ColumnParallelLinear.forward.0", in: []*jnode{x[r]},
				out: []*jnode{x[2+i]}, params: map[string]*jnode{"weight": w[i]}},
			{name: "Module.decoder.layers.0.pre_mlp_layernorm.RMSNorm.forward.0", in: []*jnode{x[r]}, out: []*jnode{x[3+i]}},
			{name: "Module.decoder.layers.0.mlp.linear_fc2.RowParallelLinear.forward.0", in: []*jnode{x[r]}, out: []*jnode{x[10+r]}},
		}
	}
	whole := func(r int) []fxEntry {
		a, b := shard(r, 0), shard(r, 1)
		return []fxEntry{
			{name: a[0].name, in: a[0].in, out: []*jnode{joinLeaves(t, 1, false, a[0].out[0], b[0].out[0])},
				params: map[string]*jnode{"weight": joinLeaves(t, 0, false, a[0].params["weight"], b[0].params["weight"])}},
			{name: a[1].name, in: a[1].in, out: []*jnode{joinLeaves(t, 0, false, a[1].out[0], b[1].out[0])}},
			a[2],
		}
	}
	dir := t.TempDir()
	sharded, single := filepath.Join(dir, "tp2", "step0"), filepath.Join(dir, "tp1", "step0")
	for r := 0; r < 2; r++ {
		for s := 0; s < 2; s++ {
			writeFixture(t, filepath.Join(sharded, fmt.Sprintf("rank%d", 2*r+s)), shard(r, s)...)
		}
		writeFixture(t, filepath.Join(single, fmt.Sprintf("rank%d", r)), whole(r)...)
	}
	for _, c := range []struct {
		name            string
		target, golden  string
		tp              TPSizes
		tables, combine int
		fuzzy           bool // msprobe's fuzzy match beside the shards
	}{
		{"NPU TP 2, bench TP 1", sharded, single, TPSizes{2, 1}, 2, 3, false},
		{"NPU TP 1, bench TP 2", single, sharded, TPSizes{1, 2}, 2, 3, false},
		{"NPU TP 2, bench TP 1, fuzzy", sharded, single, TPSizes{2, 1}, 2, 3, true},
		{"NPU TP 1, bench TP 2, fuzzy", single, sharded, TPSizes{1, 2}, 2, 3, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			rep, err := Run(Options{Target: c.target, Golden: c.golden, OutDir: t.TempDir(), TP: c.tp, Fuzzy: c.fuzzy,
				Stamp: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)})
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Ranks) != c.tables {
				t.Fatalf("%d tables, want %d", len(rep.Ranks), c.tables)
			}
			for _, rr := range rep.Ranks {
				s := rr.Summary
				if s.Error != 0 || s.NPUUnmatched != 0 || s.Fused[kindTP] == nil || s.Fused[kindTP].Combined != c.combine {
					t.Errorf("%s: %d error, %d unmatched, tp %+v; want %d rows combined, no error", rr.Rank, s.Error, s.NPUUnmatched, s.Fused[kindTP], c.combine)
				}
				rows := testkit.ReadCSV(t, rr.Files[0])
				msg := col(rows, "Err_message")
				for _, r := range rows[1:] {
					combined := strings.Contains(r[msg], "fused: tp")
					if want := strings.Contains(r[0], "output") && !strings.Contains(r[0], "fc2") || strings.Contains(r[0], "weight"); combined != want {
						t.Errorf("%s: %s: %s", rr.Rank, r[0], r[msg])
					}
				}
			}
			// -da: rows made of shards are not the NPU dump's own
			checkDAByPosition(t, func(string) Options { return Options{Target: c.target, Golden: c.golden, TP: c.tp, Fuzzy: c.fuzzy} })
		})
	}
	if _, err := Run(Options{Target: sharded, Golden: single, OutDir: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "rank folder counts differ") {
		t.Errorf("without --tp-size: %v, want the rank count error", err)
	}
	if _, err := Run(Options{Target: sharded, Golden: single, OutDir: t.TempDir(), TP: TPSizes{3, 1}}); err == nil || !strings.Contains(err.Error(), "--tp-size 3,1") {
		t.Errorf("--tp-size 3,1: %v, want an error naming the sizes", err)
	}
}

// TestFusedTensor: in tensor mode the parts' files are combined as they
// stream: outputs and weights concatenated, the gradient of the shared
// input summed; every combined row matches exactly.
func TestFusedTensor(t *testing.T) {
	dir := t.TempDir()
	type tns struct {
		shape []int
		vals  []float64
	}
	seq := func(shape []int, from, step float64) tns {
		n := 1
		for _, d := range shape {
			n *= d
		}
		v := make([]float64, n)
		for i := range v {
			v[i] = from + step*float64(i)
		}
		return tns{shape, v}
	}
	// cat concatenates along the last axis of 2-d tensors, or axis 0
	cat := func(axis int, ts ...tns) tns {
		if axis == 0 {
			out := tns{append([]int{0}, ts[0].shape[1:]...), nil}
			for _, t := range ts {
				out.shape[0] += t.shape[0]
				out.vals = append(out.vals, t.vals...)
			}
			return out
		}
		rows := ts[0].shape[0]
		out := tns{[]int{rows, 0}, nil}
		for _, t := range ts {
			out.shape[1] += t.shape[1]
		}
		for r := 0; r < rows; r++ {
			for _, t := range ts {
				c := t.shape[1]
				out.vals = append(out.vals, t.vals[r*c:(r+1)*c]...)
			}
		}
		return out
	}
	sum := func(a, b tns) tns {
		out := tns{a.shape, make([]float64, len(a.vals))}
		for i := range a.vals {
			out.vals[i] = a.vals[i] + b.vals[i]
		}
		return out
	}
	leaf := func(side, row string, x tns) *jnode {
		b, err := tensortest.PTBytes("torch.float32", x.shape, x.vals)
		if err != nil {
			t.Fatal(err)
		}
		data := filepath.Join(dir, side, "dump_tensor_data")
		os.MkdirAll(data, 0o755)
		if err := os.WriteFile(filepath.Join(data, row+".pt"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		mx, mn, s, sq := math.Inf(-1), math.Inf(1), 0.0, 0.0
		for _, v := range x.vals {
			mx, mn, s, sq = math.Max(mx, v), math.Min(mn, v), s+v, sq+v*v
		}
		l := withShape(&jnode{obj: true}, x.shape...)
		l.keys, l.vals = append([]string{"type", "dtype"}, l.keys...), append([]*jnode{jstr("torch.Tensor"), jstr("torch.float32")}, l.vals...)
		l.set("Max", jnum(mx))
		l.set("Min", jnum(mn))
		l.set("Mean", jnum(s/float64(len(x.vals))))
		l.set("Norm", jnum(math.Sqrt(sq)))
		l.set("requires_grad", &jnode{raw: []byte("true")})
		l.set("data_name", jstr(row+".pt"))
		return l
	}
	x := seq([]int{2, 3}, -1, 0.25)
	wg, wu := seq([]int{2, 3}, 0.5, 0.125), seq([]int{2, 3}, -0.5, 0.0625)
	og, ou := seq([]int{2, 2}, 1, 0.5), seq([]int{2, 2}, -2, 0.75)
	gg, gu := seq([]int{2, 2}, 0.25, 0.25), seq([]int{2, 2}, -0.75, 0.5)
	xg, xu := seq([]int{2, 3}, 0.125, 0.125), seq([]int{2, 3}, 1, -0.25)
	entry := func(side, path, class, dir string, in, out tns, w *tns) fxEntry {
		name := "Module." + path + "." + class + "." + dir + ".0"
		e := fxEntry{name: name, in: []*jnode{leaf(side, name+".input.0", in)}, out: []*jnode{leaf(side, name+".output.0", out)}}
		if w != nil {
			e.params = map[string]*jnode{"weight": leaf(side, name+".parameters.weight", *w)}
		}
		return e
	}
	bench := []fxEntry{
		entry("bench", "mlp.gate_proj", "Linear", "forward", x, og, &wg),
		entry("bench", "mlp.up_proj", "Linear", "forward", x, ou, &wu),
		entry("bench", "mlp.up_proj", "Linear", "backward", gu, xu, nil),
		entry("bench", "mlp.gate_proj", "Linear", "backward", gg, xg, nil),
	}
	w := cat(0, wg, wu)
	npu := []fxEntry{
		entry("npu", "mlp.linear_fc1", "ColumnParallelLinear", "forward", x, cat(1, og, ou), &w),
		entry("npu", "mlp.linear_fc1", "ColumnParallelLinear", "backward", cat(1, gg, gu), sum(xg, xu), nil),
	}
	writeFixtureTask(t, filepath.Join(dir, "npu"), "tensor", npu...)
	writeFixtureTask(t, filepath.Join(dir, "bench"), "tensor", bench...)
	pairs := writePairs(t, dir, mapping.ModulePair{NPU: "mlp.linear_fc1", BenchParts: []string{"mlp.gate_proj", "mlp.up_proj"}, Kind: mapping.KindGateUp})
	rep, err := Run(Options{Target: filepath.Join(dir, "npu"), Golden: filepath.Join(dir, "bench"), OutDir: t.TempDir(), PairsFile: pairs,
		Stamp: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	s := rep.Ranks[0].Summary
	if got := s.Fused[mapping.KindGateUp]; s.Error != 0 || got == nil || *got != (FusedCounts{Combined: 4, Shared: 1}) {
		t.Errorf("%d error rows, fused %+v; want 4 combined (weight, output, both gradients) and the shared input", s.Error, got)
	}
	rows := testkit.ReadCSV(t, rep.Ranks[0].Files[0])
	// -fm beside the group: the same table (pairs are joined through
	// first, -fm only leaving backward calls unrenumbered, which pairs
	// the fixture's alike)
	fz, err := Run(Options{Target: filepath.Join(dir, "npu"), Golden: filepath.Join(dir, "bench"), OutDir: t.TempDir(), PairsFile: pairs,
		Fuzzy: true, Stamp: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	if got := testkit.ReadCSV(t, fz.Ranks[0].Files[0]); !reflect.DeepEqual(got, rows) {
		t.Errorf("fuzzy match: table\n%q\nwant\n%q", got, rows)
	}
	cos, maxAbs, msg := col(rows, "Cosine"), col(rows, "MaxAbsErr"), col(rows, "Err_message")
	for _, r := range rows[1:] {
		if r[cos] != "1.0" || r[maxAbs] != "0.0" {
			t.Errorf("%s: Cosine %s, MaxAbsErr %s, want 1.0 and 0.0 (%s)", r[0], r[cos], r[maxAbs], r[msg])
		}
	}
	if !strings.Contains(strings.Join(rows[len(rows)-1], ","), "summed") {
		t.Errorf("gradient of the input: %v, want its parts summed", rows[len(rows)-1])
	}
	// the same tensors as a qkv group: blocked concatenates, interleaved
	// per query group cannot be laid out without the head count
	for _, c := range []struct {
		layout string
		want   FusedCounts
	}{{mapping.LayoutBlocked, FusedCounts{Combined: 4, Shared: 1}}, {mapping.LayoutInterleaved, FusedCounts{Combined: 1, Shared: 1, InputsOnly: 3}}} {
		pairs := writePairs(t, t.TempDir(), mapping.ModulePair{NPU: "mlp.linear_fc1", BenchParts: []string{"mlp.gate_proj", "mlp.up_proj"}, Kind: mapping.KindQKV, Layout: c.layout})
		rep, err := Run(Options{Target: filepath.Join(dir, "npu"), Golden: filepath.Join(dir, "bench"), OutDir: t.TempDir(), PairsFile: pairs,
			Stamp: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)})
		if err != nil {
			t.Fatal(err)
		}
		if s := rep.Ranks[0].Summary; s.Error != 0 || s.Fused[mapping.KindQKV] == nil || *s.Fused[mapping.KindQKV] != c.want {
			t.Errorf("qkv %s: %d error rows, fused %+v, want %+v", c.layout, s.Error, s.Fused[mapping.KindQKV], c.want)
		}
	}
}

// TestFusedShapesDoNotAddUp: a group whose parts' shapes cannot make the
// other side's row (a wrong sidecar pair, or the demo's synthetic dumps)
// is never dropped silently: its rows are "fused: inputs only" with the
// shapes, no part claims a combined row the table lacks, and the summary
// warns once per group.
func TestFusedShapesDoNotAddUp(t *testing.T) {
	x := demoLeaves(t, "[2, 8]")
	fwd := func(path, class string, in, out *jnode) fxEntry {
		return fxEntry{name: "Module." + path + "." + class + ".forward.0", in: []*jnode{in}, out: []*jnode{out}}
	}
	gate, up, fc1 := "model.layers.0.mlp.gate_proj", "model.layers.0.mlp.up_proj", "decoder.layers.0.mlp.linear_fc1"
	parts := func(g, u *jnode) []fxEntry {
		return []fxEntry{fwd(gate, "Linear", x[0], g), fwd(up, "Linear", x[0], u)}
	}
	fused := func(o *jnode) []fxEntry { return []fxEntry{fwd(fc1, "ColumnParallelLinear", x[0], o)} }
	onBench := mapping.ModulePair{NPU: fc1, BenchParts: []string{gate, up}, Kind: mapping.KindGateUp}
	onNPU := mapping.ModulePair{NPUParts: []string{gate, up}, Bench: fc1, Kind: mapping.KindGateUp}
	for _, c := range []struct {
		name       string
		npu, bench []fxEntry
		pair       mapping.ModulePair
		rows       map[string]string // NPU row name -> Err_message substring
		warning    string
		counts     FusedCounts
	}{
		{name: "parts on the NPU side, as wide as the whole (the demo)", npu: parts(x[1], x[2]), bench: fused(x[3]), pair: onNPU,
			rows: map[string]string{
				"Module." + gate + ".Linear.forward.0.output.0": "fused: inputs only (gate_up: shapes [2, 8] and 1 more part cannot make [2, 8])",
				"Module." + up + ".Linear.forward.0.output.0":   "fused: inputs only (gate_up: shapes [2, 8] and 1 more part cannot make [2, 8])",
				"Module." + gate + ".Linear.forward.0.input.0":  "an input the 2 NPU parts share",
			},
			warning: "[" + gate + " ; " + up + "] <-> " + fc1 + " (gate_up): 2 rows not combined (inputs only), first Module." + gate + ".Linear.forward.0.output.0: shapes [2, 8] and 1 more part cannot make [2, 8]; shapes that do not add up suggest the group pairs the wrong modules",
			counts:  FusedCounts{Shared: 2, InputsOnly: 2}},
		{name: "parts on the bench side, as wide as the whole", npu: fused(x[3]), bench: parts(x[1], x[2]), pair: onBench,
			rows: map[string]string{
				"Module." + fc1 + ".ColumnParallelLinear.forward.0.output.0": "fused: inputs only (gate_up: shapes [2, 8] + [2, 8] do not make [2, 8])",
			},
			warning: fc1 + " <-> [" + gate + " ; " + up + "] (gate_up): 1 rows not combined (inputs only), first Module." + fc1 + ".ColumnParallelLinear.forward.0.output.0: shapes [2, 8] + [2, 8] do not make [2, 8]",
			counts:  FusedCounts{Shared: 1, InputsOnly: 1}},
		{name: "the last part breaks the sum", npu: parts(withShape(x[1], 2, 4), x[2]), bench: fused(withShape(x[3], 2, 16)), pair: onNPU,
			rows: map[string]string{
				"Module." + up + ".Linear.forward.0.output.0": "fused: inputs only (gate_up: shapes [2, 4] + [2, 8] do not make [2, 16]; the rows of the parts before it name a combined row, which the table lacks)",
			},
			warning: "1 rows not combined (inputs only), first Module." + up + ".Linear.forward.0.output.0: shapes [2, 4] + [2, 8] do not make [2, 16]",
			counts:  FusedCounts{Shared: 2, InputsOnly: 1, Parts: 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, rows := runKind(t, kindCase{npu: c.npu, bench: c.bench, pairs: []mapping.ModulePair{c.pair}})
			if got := s.Fused[mapping.KindGateUp]; got == nil || *got != c.counts {
				t.Errorf("fused: %+v, want %+v", got, c.counts)
			}
			msg := col(rows, "Err_message")
			got := map[string]string{}
			for _, r := range rows[1:] {
				got[r[0]] = r[msg]
				if strings.HasPrefix(r[0], "[") {
					t.Errorf("a combined row %s, though the shapes do not add up", r[0])
				}
			}
			for name, want := range c.rows {
				if !strings.Contains(got[name], want) {
					t.Errorf("row %s: %q, want %q", name, got[name], want)
				}
			}
			if len(s.FusedWarnings) != 1 || !strings.Contains(s.FusedWarnings[0], c.warning) {
				t.Errorf("warnings %q, want one with %q", s.FusedWarnings, c.warning)
			}
			var text strings.Builder
			rep := &Report{Ranks: []RankReport{{Summary: s, Files: []string{"t.csv"}}}}
			if err := rep.WriteText(&text); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(text.String(), "    warning: "+s.FusedWarnings[0]+"\n") {
				t.Errorf("text summary lacks the warning:\n%s", text.String())
			}
		})
	}
}

// TestFusedDetectedFirstCalled: two NPU modules that could each be the
// fused whole of the same bench parts (each paired 1:1 with one of them)
// do not both claim the parts: the one called first does, whatever the
// order of the sidecar, and the other stays a 1:1 pair. The same with
// -fm, which beside pairs only leaves backward calls unrenumbered.
func TestFusedDetectedFirstCalled(t *testing.T) {
	x := demoLeaves(t, "[2, 8]")
	fwd := func(path string) fxEntry {
		return fxEntry{name: "Module." + path + ".ColumnParallelLinear.forward.0", in: []*jnode{x[0]}, out: []*jnode{joinLeaves(t, 1, false, x[1], x[2])}}
	}
	gate, up := "model.layers.0.mlp.gate_proj", "model.layers.0.mlp.up_proj"
	bench := []fxEntry{
		{name: "Module." + gate + ".Linear.forward.0", in: []*jnode{x[0]}, out: []*jnode{x[1]}},
		{name: "Module." + up + ".Linear.forward.0", in: []*jnode{x[0]}, out: []*jnode{x[2]}},
	}
	a, b := "decoder.layers.0.mlp.linear_fc1", "decoder.layers.0.mlp.linear_fc1_copy"
	toUp, toGate := []mapping.ModulePair{{NPU: a, Bench: up}, {NPU: b, Bench: gate}}, []mapping.ModulePair{{NPU: b, Bench: gate}, {NPU: a, Bench: up}}
	outRow := func(path string) string { return "Module." + path + ".ColumnParallelLinear.forward.0.output.0" }
	for _, c := range []struct {
		name          string
		called        []string // the NPU modules in the order of their calls
		pairs         []mapping.ModulePair
		claims, stays string
	}{
		{"a called first", []string{a, b}, toUp, a, b},
		{"a called first, the sidecar in the other order", []string{a, b}, toGate, a, b},
		{"b called first", []string{b, a}, toUp, b, a},
		{"b called first, the sidecar in the other order", []string{b, a}, toGate, b, a},
	} {
		for _, fuzzy := range []bool{false, true} {
			name := c.name
			if fuzzy {
				name += ", -fm"
			}
			t.Run(name, func(t *testing.T) {
				npu := []fxEntry{fwd(c.called[0]), fwd(c.called[1])}
				s, rows := runKind(t, kindCase{npu: npu, bench: bench, pairs: c.pairs, fuzzy: fuzzy})
				if got := s.Fused[mapping.KindGateUp]; got == nil || got.Combined != 1 {
					t.Fatalf("fused gate_up: %+v, want one combined row", got)
				}
				msg := col(rows, "Err_message")
				got := map[string]string{}
				for _, r := range rows[1:] {
					got[r[0]] = r[msg]
				}
				if m := got[outRow(c.claims)]; !strings.Contains(m, "bench row = its 2 parts concatenated along axis 1") {
					t.Errorf("%s (called first): %q, want its output combined from the parts", outRow(c.claims), m)
				}
				if m, ok := got[outRow(c.stays)]; !ok || strings.Contains(m, "parts") {
					t.Errorf("%s (called second): %q, want a 1:1 row", outRow(c.stays), m)
				}
			})
		}
	}
}

// renamed is es with each old module name (an odd position of pairs) in
// the entry names replaced by the new one after it.
func renamed(es []fxEntry, pairs ...string) []fxEntry {
	r := strings.NewReplacer(pairs...)
	out := make([]fxEntry, len(es))
	for i, e := range es {
		e.name = r.Replace(e.name)
		out[i] = e
	}
	return out
}

// TestFusedRowPaths: the ways a row of an N:1 group comes out beside the
// plain combination (layermap's own rows: msprobe compares no groups),
// asserted row by row (the NPU row, its bench row, "N/A" for none, and
// what Err_message says), and the whole table against a golden file.
// With the parts on the bench side: a part lacking the row, every part
// lacking it, md5 mode (a hash of the whole is not in its parts'), the
// experts' weights stacked; with the parts on the NPU side: a part
// lacking the row (no combined row, a warning), the bench module lacking
// it, md5 mode.
func TestFusedRowPaths(t *testing.T) {
	x := demoLeaves(t, "[2, 8]")
	w := demoLeaves(t, "[8]")
	fwd := func(path, class string, in *jnode, out []*jnode, params map[string]*jnode) fxEntry {
		return fxEntry{name: "Module." + path + "." + class + ".forward.0", in: []*jnode{in}, out: out, params: params}
	}
	gate, up, fc1 := "model.layers.0.mlp.gate_proj", "model.layers.0.mlp.up_proj", "decoder.layers.0.mlp.linear_fc1"
	gateRow, upRow := "Module."+gate+".Linear.forward.0", "Module."+up+".Linear.forward.0"
	fc1Row := "Module." + fc1 + ".ColumnParallelLinear.forward.0"
	// parts: gate and up, their bias optional, an output more optional
	parts := func(upBias bool, extra *jnode) []fxEntry {
		gp, upp := map[string]*jnode{"weight": w[0], "bias": w[1]}, map[string]*jnode{"weight": w[2]}
		if upBias {
			upp["bias"] = w[3]
		}
		gout, uout := []*jnode{x[1]}, []*jnode{x[2]}
		if extra != nil {
			gout, uout = append(gout, extra), append(uout, extra)
		}
		return []fxEntry{fwd(gate, "Linear", x[0], gout, gp), fwd(up, "Linear", x[0], uout, upp)}
	}
	fused := func(extra *jnode) []fxEntry {
		out := []*jnode{joinLeaves(t, 1, false, x[1], x[2])}
		if extra != nil {
			out = append(out, extra)
		}
		return []fxEntry{fwd(fc1, "ColumnParallelLinear", x[0], out,
			map[string]*jnode{"weight": joinLeaves(t, 0, false, w[0], w[2]), "bias": joinLeaves(t, 0, false, w[1], w[3])})}
	}
	onBench := mapping.ModulePair{NPU: fc1, BenchParts: []string{gate, up}, Kind: mapping.KindGateUp}
	onNPU := mapping.ModulePair{NPUParts: []string{gate, up}, Bench: fc1, Kind: mapping.KindGateUp}
	experts := []string{"model.layers.0.mlp.experts.0", "model.layers.0.mlp.experts.1", "model.layers.0.mlp.experts.2"}
	var expertParts []fxEntry
	for i, e := range experts {
		expertParts = append(expertParts, fwd(e, "Qwen3MoeMLP", x[2*i], []*jnode{x[2*i+1]}, map[string]*jnode{"weight": w[i]}))
	}
	grouped := []fxEntry{fwd("decoder.layers.0.mlp.experts", "TEGroupedMLP", joinLeaves(t, 0, false, x[0], x[2], x[4]),
		[]*jnode{joinLeaves(t, 0, false, x[1], x[3], x[5])}, map[string]*jnode{"weight": joinLeaves(t, 0, true, w[0], w[1], w[2])})}
	type row struct{ bench, msg string }
	for _, c := range []struct {
		name       string
		npu, bench []fxEntry
		pair       mapping.ModulePair
		md5        bool
		rows       map[string]row // NPU Name -> its bench row and Err_message (a substring)
		warning    string
	}{
		{name: "a bench part lacks the row", npu: fused(nil), bench: parts(false, nil), pair: onBench,
			rows: map[string]row{fc1Row + ".parameters.bias": {"N/A", "fused: inputs only (gate_up: 1 of the 2 bench parts have this row)"},
				fc1Row + ".parameters.weight": {"[" + gateRow + ".parameters.weight ; " + upRow + ".parameters.weight]", "fused: gate_up, bench row = its 2 parts concatenated along axis 0"}}},
		{name: "no bench part has the row", npu: fused(x[3]), bench: parts(true, nil), pair: onBench,
			rows: map[string]row{fc1Row + ".output.1": {"N/A", ""},
				fc1Row + ".output.0": {"[" + gateRow + ".output.0 ; " + upRow + ".output.0]", "fused: gate_up, bench row = its 2 parts concatenated along axis 1"}}},
		{name: "md5 mode, parts on the bench side", npu: fused(nil), bench: parts(true, nil), pair: onBench, md5: true,
			rows: map[string]row{fc1Row + ".input.0": {gateRow + ".input.0", "fused: gate_up, an input the 2 bench parts share, compared with the first"},
				fc1Row + ".output.0":          {"N/A", "fused: inputs only (gate_up: an md5 of the whole is not in its parts' md5s)"},
				fc1Row + ".parameters.weight": {"N/A", "fused: inputs only (gate_up: an md5 of the whole is not in its parts' md5s)"}}},
		{name: "experts' weights stacked", npu: grouped, bench: expertParts, pair: mapping.ModulePair{NPU: "decoder.layers.0.mlp.experts", BenchParts: experts, Kind: mapping.KindExperts},
			rows: map[string]row{"Module.decoder.layers.0.mlp.experts.TEGroupedMLP.forward.0.parameters.weight": {
				"[Module." + experts[0] + ".Qwen3MoeMLP.forward.0.parameters.weight ; Module." + experts[1] + ".Qwen3MoeMLP.forward.0.parameters.weight ; Module." + experts[2] + ".Qwen3MoeMLP.forward.0.parameters.weight]",
				"fused: experts, bench row = its 3 parts stacked"}}},
		{name: "an NPU part lacks the row", npu: parts(false, nil), bench: fused(nil), pair: onNPU,
			rows: map[string]row{gateRow + ".parameters.bias": {"N/A", "fused: gate_up, part 1 of 2: compared in the combined row"},
				"[" + gateRow + ".parameters.weight ; " + upRow + ".parameters.weight]": {fc1Row + ".parameters.weight", "fused: gate_up, NPU row = its 2 parts concatenated along axis 0"}},
			warning: "bias: a part has no such row: the other parts' rows name a combined row the table lacks"},
		{name: "the bench module lacks the row", npu: parts(true, x[3]), bench: fused(nil), pair: onNPU,
			rows: map[string]row{gateRow + ".output.1": {"N/A", ""}, upRow + ".output.1": {"N/A", ""},
				"[" + gateRow + ".output.0 ; " + upRow + ".output.0]": {fc1Row + ".output.0", "fused: gate_up, NPU row = its 2 parts concatenated along axis 1"}}},
		{name: "md5 mode, parts on the NPU side", npu: parts(true, nil), bench: fused(nil), pair: onNPU, md5: true,
			rows: map[string]row{gateRow + ".input.0": {fc1Row + ".input.0", "fused: gate_up, an input the 2 NPU parts share, compared with the bench module's"},
				gateRow + ".output.0": {"N/A", "fused: inputs only (gate_up: an md5 of the whole is not in its parts' md5s)"},
				upRow + ".output.0":   {"N/A", "fused: inputs only (gate_up: an md5 of the whole is not in its parts' md5s)"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			npu, bench := c.npu, c.bench
			if c.md5 {
				npu, bench = withMD5(npu), withMD5(bench)
			}
			s, rows := runKind(t, kindCase{npu: npu, bench: bench, pairs: []mapping.ModulePair{c.pair}})
			if want := map[bool]string{true: "md5", false: "statistics"}[c.md5]; s.Mode != want {
				t.Errorf("mode %s, want %s", s.Mode, want)
			}
			bn, msg := col(rows, "Bench Name"), col(rows, "Err_message")
			got := map[string]row{}
			var table bytes.Buffer
			cw := csv.NewWriter(&table)
			for _, r := range rows {
				got[r[0]] = row{r[bn], r[msg]}
				cw.Write(r)
			}
			cw.Flush()
			for name, want := range c.rows {
				g, ok := got[name]
				switch {
				case !ok:
					t.Errorf("no row %s", name)
				case g.bench != want.bench || want.msg == "" && strings.Contains(g.msg, "fused") || !strings.Contains(g.msg, want.msg):
					t.Errorf("row %s: bench %s, %s; want %s, %q", name, g.bench, g.msg, want.bench, want.msg)
				}
			}
			if c.warning == "" && len(s.FusedWarnings) > 0 || c.warning != "" && (len(s.FusedWarnings) != 1 || !strings.Contains(s.FusedWarnings[0], c.warning)) {
				t.Errorf("warnings %q, want %q", s.FusedWarnings, c.warning)
			}
			// the whole table, its numbers included (review the diff)
			testkit.Golden(t, filepath.Join("testdata", "fused_rows", slug(c.name)+".csv"), table.Bytes())
		})
	}
}

// TestFusedPartOddLastRow: an NPU part's entry is done on its last row
// even when that row is not named by the entry's structure (here a dict
// key holding the entry's first dot-part): the parts' combined row still
// follows, after the last part's rows.
func TestFusedPartOddLastRow(t *testing.T) {
	x := demoLeaves(t, "[2, 8]")
	gate, up, fc1 := "model.layers.0.mlp.gate_proj", "model.layers.0.mlp.up_proj", "decoder.layers.0.mlp.linear_fc1"
	gateRow, upRow := "Module."+gate+".Linear.forward.0", "Module."+up+".Linear.forward.0"
	fc1Row := "Module." + fc1 + ".ColumnParallelLinear.forward.0"
	const odd = ".output.1.Module_aux"
	aux := &jnode{obj: true}
	aux.set("Module_aux", x[3])
	entry := func(name string, out *jnode, oddLast bool) fxEntry {
		e := fxEntry{name: name, in: []*jnode{x[0]}, out: []*jnode{out}}
		if oddLast {
			e.out = append(e.out, aux)
		}
		return e
	}
	bench := []fxEntry{entry(fc1Row, joinLeaves(t, 1, false, x[1], x[2]), false)}
	combined := "[" + gateRow + ".output.0 ; " + upRow + ".output.0]"
	for _, c := range []struct {
		name        string
		gateOdd     bool
		upOdd       bool
		combinedRow int // its position among the table's rows (1 the first)
	}{
		{name: "no odd row", combinedRow: 5},
		{name: "the first part's last row odd", gateOdd: true, combinedRow: 6},
		{name: "the last part's last row odd", upOdd: true, combinedRow: 6},
		{name: "every part's last row odd", gateOdd: true, upOdd: true, combinedRow: 7},
	} {
		t.Run(c.name, func(t *testing.T) {
			npu := []fxEntry{entry(gateRow, x[1], c.gateOdd), entry(upRow, x[2], c.upOdd)}
			s, rows := runKind(t, kindCase{npu: npu, bench: bench,
				pairs: []mapping.ModulePair{{NPUParts: []string{gate, up}, Bench: fc1, Kind: mapping.KindGateUp}}})
			if len(s.FusedWarnings) > 0 {
				t.Errorf("warnings %q, want none", s.FusedWarnings)
			}
			if len(rows) != c.combinedRow+1 {
				t.Fatalf("%d rows, want %d, the combined row last:\n%s", len(rows)-1, c.combinedRow, dumpCol(rows, 0))
			}
			bn, res, msg := col(rows, "Bench Name"), col(rows, "Result"), col(rows, "Err_message")
			r := rows[c.combinedRow]
			if r[0] != combined || r[bn] != fc1Row+".output.0" || r[res] != "pass" ||
				!strings.Contains(r[msg], "fused: gate_up, NPU row = its 2 parts concatenated along axis 1") {
				t.Errorf("row %d: %s -> %s, %s %s\nwant %s -> %s.output.0, pass, the parts concatenated",
					c.combinedRow, r[0], r[bn], r[res], r[msg], combined, fc1Row)
			}
			for _, want := range []struct {
				row string
				odd bool
			}{{gateRow + odd, c.gateOdd}, {upRow + odd, c.upOdd}} {
				found := false
				for _, r := range rows[1:] {
					if r[0] == want.row {
						found = true
						if r[bn] != "N/A" || strings.Contains(r[msg], "fused") {
							t.Errorf("row %s: bench %s, %s; want N/A and no fused message", r[0], r[bn], r[msg])
						}
					}
				}
				if found != want.odd {
					t.Errorf("row %s in the table: %v, want %v", want.row, found, want.odd)
				}
			}
		})
	}
}

// TestFusedPartWithoutRows: a part of an NPU-many group whose entry
// flattens into no rows never ends, so the group's combined row is never
// written while the other part's rows say they are compared there: the
// summary warns of it, naming the call and the part.
func TestFusedPartWithoutRows(t *testing.T) {
	x := demoLeaves(t, "[2, 8]")
	gate, up, fc1 := "model.layers.0.mlp.gate_proj", "model.layers.0.mlp.up_proj", "decoder.layers.0.mlp.linear_fc1"
	gateRow, upRow := "Module."+gate+".Linear.forward.0", "Module."+up+".Linear.forward.0"
	fc1Row := "Module." + fc1 + ".ColumnParallelLinear.forward.0"
	bench := []fxEntry{{name: fc1Row, in: []*jnode{x[0]}, out: []*jnode{joinLeaves(t, 1, false, x[1], x[2])}}}
	group := mapping.ModulePair{NPUParts: []string{gate, up}, Bench: fc1, Kind: mapping.KindGateUp}
	for _, c := range []struct {
		name string
		npu  []fxEntry
		warn string // "" none
	}{
		{"both parts with rows", []fxEntry{{name: gateRow, in: []*jnode{x[0]}, out: []*jnode{x[1]}}, {name: upRow, in: []*jnode{x[0]}, out: []*jnode{x[2]}}}, ""},
		{"the last part without rows", []fxEntry{{name: gateRow, in: []*jnode{x[0]}, out: []*jnode{x[1]}}, {name: upRow}},
			group.String() + ": the combined rows of " + gateRow + " ; " + upRow + " were not written, though its parts' rows say they are compared there: " + upRow + " gave no rows"},
		{"the first part without rows", []fxEntry{{name: gateRow}, {name: upRow, in: []*jnode{x[0]}, out: []*jnode{x[2]}}},
			group.String() + ": the combined rows of " + gateRow + " ; " + upRow + " were not written, though its parts' rows say they are compared there: " + gateRow + " gave no rows"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, rows := runKind(t, kindCase{npu: c.npu, bench: bench, pairs: []mapping.ModulePair{group}})
			var want []string
			if c.warn != "" {
				want = []string{c.warn}
			}
			if !slices.Equal(s.FusedWarnings, want) {
				t.Errorf("warnings %q\nwant %q", s.FusedWarnings, want)
			}
			combined := false
			for _, r := range rows[1:] {
				combined = combined || strings.HasPrefix(r[0], "[")
			}
			if combined != (c.warn == "") {
				t.Errorf("combined row written: %v, want %v:\n%s", combined, c.warn == "", dumpCol(rows, 0))
			}
		})
	}
}

// withMD5 is es with an md5 on every tensor, the CRC-32 of its shape and
// statistics (equal tensors, equal md5s).
func withMD5(es []fxEntry) []fxEntry {
	sum := func(l *jnode) *jnode {
		c := l.clone()
		var b []byte
		for _, k := range []string{"shape", "Max", "Min", "Mean", "Norm"} {
			var w bytes.Buffer
			c.get(k).write(&w, "")
			b = append(append(b, w.Bytes()...), ',')
		}
		c.set("md5", jstr(fmt.Sprintf("%08x", crc32.ChecksumIEEE(b))))
		return c
	}
	all := func(ls []*jnode) []*jnode {
		out := make([]*jnode, len(ls))
		for i, l := range ls {
			out[i] = sum(l)
		}
		return out
	}
	out := make([]fxEntry, len(es))
	for i, e := range es {
		e.in, e.out = all(e.in), all(e.out)
		if e.params != nil {
			p := map[string]*jnode{}
			for k, l := range e.params {
				p[k] = sum(l)
			}
			e.params = p
		}
		out[i] = e
	}
	return out
}

// slug is name as a file name: lower-case letters and digits, runs of
// anything else one "_".
func slug(name string) string {
	var b strings.Builder
	sep := false
	for _, r := range strings.ToLower(name) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			if sep && b.Len() > 0 {
				b.WriteByte('_')
			}
			b.WriteRune(r)
			sep = false
		} else {
			sep = true
		}
	}
	return b.String()
}

// TestFusedTPRows: tensor-parallel shards in tensor mode, where the
// shards' tensor files (other ranks' folders) are read and concatenated,
// either side the sharded one; and the rows left as they are: in md5
// mode (a hash of the whole is not in the shards'), and where a sibling
// rank lacks the row. One replica, TP 2 against TP 1: the projection's
// output split along its last axis, its weight along its first, its
// input whole on every rank.
func TestFusedTPRows(t *testing.T) {
	const entry = "Module.decoder.layers.0.mlp.linear_fc1.ColumnParallelLinear.forward.0"
	seq := func(n int, from, step float64) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = from + step*float64(i)
		}
		return v
	}
	x := seq(6, -1, 0.25)         // [2, 3]
	out := seq(8, 0.5, 0.375)     // [2, 4]
	weight := seq(12, -2, 0.1875) // [4, 3]
	// the shard s of 2 of out (columns) and of weight (rows)
	outShard := func(s int) []float64 { return []float64{out[2*s], out[2*s+1], out[4+2*s], out[4+2*s+1]} }
	weightShard := func(s int) []float64 { return weight[6*s : 6*s+6] }
	// rank writes one rank's dump: shard s of 2, or the whole (s < 0)
	rank := func(t *testing.T, dir, task string, s int, noOutput bool) {
		o, w, os_, ws := out, weight, []int{2, 4}, []int{4, 3}
		if s >= 0 {
			o, w, os_, ws = outShard(s), weightShard(s), []int{2, 2}, []int{2, 3}
		}
		e := fxEntry{name: entry, in: []*jnode{ptLeaf(t, dir, entry+".input.0", []int{2, 3}, x)},
			params: map[string]*jnode{"weight": ptLeaf(t, dir, entry+".parameters.weight", ws, w)}}
		if !noOutput {
			e.out = []*jnode{ptLeaf(t, dir, entry+".output.0", os_, o)}
		}
		if task == "md5" {
			writeFixtureTask(t, dir, "statistics", withMD5([]fxEntry{e})...)
			return
		}
		writeFixtureTask(t, dir, task, e)
	}
	type row struct{ msg, cos string }
	for _, c := range []struct {
		name          string
		task          string
		npuMany       bool
		rank1NoOutput bool
		rows          map[string]row // NPU row suffix -> Err_message (a substring; "": no fused one) and Cosine ("": not checked)
		combined      int
	}{
		{name: "tensor, NPU TP 2", task: "tensor", npuMany: true, combined: 2,
			rows: map[string]row{".input.0": {"", "1.0"},
				".output.0":          {"fused: tp, NPU row = the shards of ranks 0-1 concatenated along axis 1", "1.0"},
				".parameters.weight": {"fused: tp, NPU row = the shards of ranks 0-1 concatenated along axis 0", "1.0"}}},
		{name: "tensor, bench TP 2", task: "tensor", combined: 2,
			rows: map[string]row{".input.0": {"", "1.0"},
				".output.0":          {"fused: tp, bench row = the shards of ranks 0-1 concatenated along axis 1", "1.0"},
				".parameters.weight": {"fused: tp, bench row = the shards of ranks 0-1 concatenated along axis 0", "1.0"}}},
		{name: "md5, NPU TP 2", task: "md5", npuMany: true,
			rows: map[string]row{".input.0": {"", ""}, ".output.0": {"", ""}, ".parameters.weight": {"", ""}}},
		{name: "a sibling rank lacks the row", task: "statistics", npuMany: true, rank1NoOutput: true, combined: 1,
			rows: map[string]row{".input.0": {"", ""}, ".output.0": {"", ""},
				".parameters.weight": {"fused: tp, NPU row = the shards of ranks 0-1 concatenated along axis 0", ""}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			many, one := filepath.Join(dir, "tp2", "step0"), filepath.Join(dir, "tp1", "step0")
			rank(t, filepath.Join(many, "rank0"), c.task, 0, false)
			rank(t, filepath.Join(many, "rank1"), c.task, 1, c.rank1NoOutput)
			rank(t, filepath.Join(one, "rank0"), c.task, -1, false)
			opt := Options{Target: many, Golden: one, TP: TPSizes{2, 1}, OutDir: t.TempDir(), Stamp: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)}
			if !c.npuMany {
				opt.Target, opt.Golden, opt.TP = one, many, TPSizes{1, 2}
			}
			rep, err := Run(opt)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Ranks) != 1 {
				t.Fatalf("%d tables, want 1", len(rep.Ranks))
			}
			s := rep.Ranks[0].Summary
			if got := 0; s.Fused[kindTP] != nil {
				got = s.Fused[kindTP].Combined
				if got != c.combined {
					t.Errorf("%d rows combined, want %d", got, c.combined)
				}
			} else if c.combined != 0 {
				t.Errorf("no rows combined, want %d", c.combined)
			}
			rows := testkit.ReadCSV(t, rep.Ranks[0].Files[0])
			msg, cos := col(rows, "Err_message"), col(rows, "Cosine")
			if len(rows) != len(c.rows)+1 {
				t.Errorf("%d rows, want %d", len(rows)-1, len(c.rows))
			}
			for _, r := range rows[1:] {
				want, ok := c.rows[strings.TrimPrefix(r[0], entry)]
				switch {
				case !ok:
					t.Errorf("row %s", r[0])
				case want.msg == "" && strings.Contains(r[msg], "fused") || !strings.Contains(r[msg], want.msg):
					t.Errorf("row %s: %s, want %q", r[0], r[msg], want.msg)
				case want.cos != "" && r[cos] != want.cos:
					t.Errorf("row %s: Cosine %s, want %s (%s)", r[0], r[cos], want.cos, r[msg])
				}
			}
		})
	}
}

// ptLeaf writes the tensor vals of shape into dir's dump_tensor_data as
// row's .pt file and returns its dump.json leaf, with its statistics.
func ptLeaf(t *testing.T, dir, row string, shape []int, vals []float64) *jnode {
	t.Helper()
	b, err := tensortest.PTBytes("torch.float32", shape, vals)
	if err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "dump_tensor_data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, row+".pt"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	mx, mn, s, sq := math.Inf(-1), math.Inf(1), 0.0, 0.0
	for _, v := range vals {
		mx, mn, s, sq = math.Max(mx, v), math.Min(mn, v), s+v, sq+v*v
	}
	l := withShape(&jnode{obj: true}, shape...)
	l.keys, l.vals = append([]string{"type", "dtype"}, l.keys...), append([]*jnode{jstr("torch.Tensor"), jstr("torch.float32")}, l.vals...)
	l.set("Max", jnum(mx))
	l.set("Min", jnum(mn))
	l.set("Mean", jnum(s/float64(len(vals))))
	l.set("Norm", jnum(math.Sqrt(sq)))
	l.set("requires_grad", &jnode{raw: []byte("true")})
	l.set("data_name", jstr(row+".pt"))
	return l
}

// TestFusedNotDetected: a 1:1 pair whose shapes differ is a group only
// when exactly one set of the bench partner's siblings, each reading the
// very input it reads, makes up the difference along the one axis that
// differs (detectGroups); otherwise it stays the 1:1 pair msprobe
// compares: when the siblings' outputs do not add up, when two sets
// would, when a sibling reads another input, when the shapes differ on
// two axes, and when they do not differ.
func TestFusedNotDetected(t *testing.T) {
	x := demoLeaves(t, "[2, 8]")
	fwd := func(path, class string, in, out *jnode) fxEntry {
		return fxEntry{name: "Module." + path + "." + class + ".forward.0", in: []*jnode{in}, out: []*jnode{out}}
	}
	gate, up, other, fc1 := "model.layers.0.mlp.gate_proj", "model.layers.0.mlp.up_proj", "model.layers.0.mlp.other_proj", "decoder.layers.0.mlp.linear_fc1"
	fused := joinLeaves(t, 1, false, x[1], x[2])
	pair := []mapping.ModulePair{{NPU: fc1, Bench: up}}
	for _, c := range []struct {
		name  string
		npu   *jnode // the fused module's output
		bench []fxEntry
	}{
		{"the siblings do not add up", fused, []fxEntry{fwd(gate, "Linear", x[0], withShape(x[1], 2, 4)), fwd(up, "Linear", x[0], x[2])}},
		{"two sets would", fused, []fxEntry{fwd(gate, "Linear", x[0], x[1]), fwd(other, "Linear", x[0], x[3]), fwd(up, "Linear", x[0], x[2])}},
		{"a sibling reads another input", fused, []fxEntry{fwd(gate, "Linear", x[4], x[1]), fwd(up, "Linear", x[0], x[2])}},
		{"the shapes differ on two axes", withShape(fused, 4, 16), []fxEntry{fwd(gate, "Linear", x[0], x[1]), fwd(up, "Linear", x[0], x[2])}},
		{"the shapes do not differ", x[2], []fxEntry{fwd(gate, "Linear", x[0], x[1]), fwd(up, "Linear", x[0], x[2])}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, rows := runKind(t, kindCase{npu: []fxEntry{fwd(fc1, "ColumnParallelLinear", x[0], c.npu)}, bench: c.bench, pairs: pair})
			if len(s.Fused) != 0 {
				t.Errorf("fused %v, want no group", s.Fused)
			}
			bn, msg := col(rows, "Bench Name"), col(rows, "Err_message")
			if len(rows) != 3 {
				t.Fatalf("%d rows, want 2", len(rows)-1)
			}
			for _, r := range rows[1:] {
				want := "Module." + up + ".Linear" + strings.TrimPrefix(r[0], "Module."+fc1+".ColumnParallelLinear")
				if r[bn] != want || strings.Contains(r[msg], "fused") {
					t.Errorf("row %s: %s, %s; want the 1:1 partner %s", r[0], r[bn], r[msg], want)
				}
			}
		})
	}
}
