package compare

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/layermap/layermap/mapping"
	"github.com/layermap/layermap/mapping/resolve"
	"github.com/layermap/layermap/printparse/testkit"
)

// copyDump copies a rank folder's json files into dst.
func copyDump(t testing.TB, src, dst string) {
	t.Helper()
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"dump.json", "construct.json", "stack.json"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			continue
		}
		if err := os.WriteFile(filepath.Join(dst, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// children lists construct.json's children of each entry, in dump order.
func children(t testing.TB, dir string, doc *jnode) map[string][]string {
	par := readJ(t, filepath.Join(dir, "construct.json"))
	parent := map[string]string{}
	for i, k := range par.keys {
		var p string
		if s := string(par.vals[i].raw); len(s) > 1 && s[0] == '"' {
			p = s[1 : len(s)-1]
		}
		parent[k] = p
	}
	out := map[string][]string{}
	for _, e := range doc.get("data").keys {
		if p := parent[e]; p != "" {
			out[p] = append(out[p], e)
		}
	}
	return out
}

// concatLeaf is the statistics of two leaves concatenated along their
// last axis, computed here independently of combine.go.
func concatLeaf(t testing.TB, a, b *jnode) *jnode {
	out := a.clone()
	sa, sb := a.get("shape").arr, b.get("shape").arr
	last := len(sa) - 1
	na, nb := 1.0, 1.0
	for i := range sa {
		na *= sa[i].float(t)
		nb *= sb[i].float(t)
	}
	sh := out.get("shape")
	sh.arr[last] = jnum(sa[last].float(t) + sb[last].float(t))
	f := func(k string) (float64, float64) { return a.get(k).float(t), b.get(k).float(t) }
	x, y := f("Max")
	out.set("Max", jnum(math.Max(x, y)))
	x, y = f("Min")
	out.set("Min", jnum(math.Min(x, y)))
	x, y = f("Mean")
	out.set("Mean", jnum((x*na+y*nb)/(na+nb)))
	x, y = f("Norm")
	out.set("Norm", jnum(math.Sqrt(x*x+y*y)))
	return out
}

// replaceLeaf puts src's contents into the leaf dst (in place).
func replaceLeaf(dst, src *jnode) { *dst = *src.clone() }

// fusedDemo builds the pair of issue 10 from the demo dumps: MindSpeed-MM
// as NPU, LLaMA-Factory as bench, compared through the seed template
// whose MLP line maps linear_fc1 to up_proj only. Every row the mapping
// pairs agrees (the NPU row takes the bench row's values), and each MLP's
// linear_fc1 computes [gate_proj ; up_proj] of one input: the bench
// gate_proj reads up_proj's input, and the NPU linear_fc1 (and the APIs
// it calls) carries the statistics of the two concatenated along the last
// axis, its input the shared one. The projector's linear_fc1 is a plain
// 1:1 pair.
func fusedDemo(t testing.TB) (npuDir, benchDir, lm string) {
	t.Helper()
	dir := t.TempDir()
	npuDir, benchDir = filepath.Join(dir, "npu"), filepath.Join(dir, "bench")
	copyDump(t, testkit.Testdata(t, "demo", "dumps", "mindspeed-mm"), npuDir)
	copyDump(t, testkit.Testdata(t, "demo", "dumps", "llamafactory"), benchDir)
	lm = testkit.SeedTemplate(t, "qwen2.5-vl_mindspeed-mm_to_llamafactory")
	m, _, err := mapping.Load(lm)
	if err != nil {
		t.Fatal(err)
	}
	dm, err := resolve.GenerateDataMapping(m, npuDir, benchDir)
	if err != nil {
		t.Fatal(err)
	}
	nd, bd := readJ(t, filepath.Join(npuDir, "dump.json")), readJ(t, filepath.Join(benchDir, "dump.json"))
	nl, bl := leaves(nd), leaves(bd)
	nk, bk := children(t, npuDir, nd), children(t, benchDir, bd)
	partner := map[string]string{}
	for _, p := range dm {
		if p.Bench != resolve.NA {
			partner[p.NPU] = p.Bench
		}
	}
	// the fused calls: NPU entry -> (gate entry, up entry)
	type parts struct{ gate, up string }
	fused := map[string]parts{}
	for _, e := range nd.get("data").keys {
		if !strings.Contains(e, ".mlp.linear_fc1.") || !strings.HasPrefix(e, "Module.") {
			continue
		}
		up := strings.TrimSuffix(partner[e+".output.0"], ".output.0")
		if up == "" || !strings.Contains(up, "up_proj") {
			t.Fatalf("%s: mapped to %q, want an up_proj", e, up)
		}
		fused[e] = parts{strings.Replace(up, "up_proj", "gate_proj", 1), up}
		// the APIs called in them, by position
		nc, gc, uc := nk[e], bk[fused[e].gate], bk[up]
		if len(nc) != len(gc) || len(nc) != len(uc) {
			t.Fatalf("%s: %d APIs, gate %d, up %d", e, len(nc), len(gc), len(uc))
		}
		for i := range nc {
			fused[nc[i]] = parts{gc[i], uc[i]}
		}
	}
	for n, b := range partner {
		if _, ok := fused[n[:strings.LastIndex(n[:strings.LastIndex(n, ".")], ".")]]; ok {
			continue
		}
		if nl[n] != nil && bl[b] != nil {
			replaceLeaf(nl[n], bl[b])
		}
	}
	for e, p := range fused {
		for row, leaf := range nl {
			if !strings.HasPrefix(row, e+".") {
				continue
			}
			suffix := row[len(e):]
			g, u := bl[p.gate+suffix], bl[p.up+suffix]
			if g == nil || u == nil {
				t.Fatalf("%s: no bench row %s%s", row, p.up, suffix)
			}
			// x, the input both parts read: the module's and its first
			// API's (x * w)
			if suffix == ".input.0" && (strings.HasPrefix(e, "Module.") || strings.HasPrefix(e, "Tensor.__mul__")) {
				replaceLeaf(g, u)
				replaceLeaf(leaf, u)
				continue
			}
			replaceLeaf(leaf, concatLeaf(t, g, u))
		}
	}
	writeJ(t, filepath.Join(npuDir, "dump.json"), nd)
	writeJ(t, filepath.Join(benchDir, "dump.json"), bd)
	return npuDir, benchDir, lm
}

func col(rows [][]string, name string) int {
	for i, c := range rows[0] {
		if c == name {
			return i
		}
	}
	return -1
}

// TestFusedDemo is issue 10's acceptance: the fused pair that agrees
// everywhere gives no error row, every fused output is compared and
// passes, and there is no first divergence. Without the groups it gives
// the shape errors the issue reports. -fm beside the layer mapping, which
// only leaves backward calls unrenumbered, finds the same groups.
func TestFusedDemo(t *testing.T) {
	npu, bench, lm := fusedDemo(t)
	run := func(noFused, fuzzy bool) (*Summary, [][]string) {
		out := t.TempDir()
		rep, err := Run(Options{Target: npu, Golden: bench, OutDir: out, LayerMappingFile: lm, NoFused: noFused, Fuzzy: fuzzy,
			Stamp: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)})
		if err != nil {
			t.Fatal(err)
		}
		var table string
		for _, f := range rep.Ranks[0].Files {
			if strings.HasSuffix(f, ".csv") {
				table = f
			}
		}
		return rep.Ranks[0].Summary, testkit.ReadCSV(t, table)
	}
	plain, rows := run(true, false)
	shapeErrs := 0
	msg := col(rows, "Err_message")
	for _, r := range rows[1:] {
		if strings.Contains(r[0], "linear_fc1") && strings.Contains(r[msg], "shape of NPU and Bench") {
			shapeErrs++
		}
	}
	if plain.Error == 0 || shapeErrs == 0 {
		t.Errorf("without groups: %d error rows, %d fc1 shape errors; want the issue's shape errors", plain.Error, shapeErrs)
	}
	s, rows := run(false, false)
	if fs, frows := run(false, true); !reflect.DeepEqual(frows, rows) || !reflect.DeepEqual(fs.Fused, s.Fused) {
		t.Errorf("-fm: fused %v, table\n%q\nwant fused %v, table\n%q", fs.Fused, frows, s.Fused, rows)
	}
	if s.Error != 0 || s.Warning != 0 {
		t.Errorf("fused: %d error, %d warning rows, want none", s.Error, s.Warning)
	}
	if s.First != nil || len(s.Divergences) != 0 {
		t.Errorf("fused: first divergence %+v, want none", s.Divergences)
	}
	fc := s.Fused[mapping.KindGateUp]
	if fc == nil || fc.Combined == 0 || fc.InputsOnly != 0 {
		t.Fatalf("fused counts %+v, want gate_up rows combined and none inputs only", fc)
	}
	res, bn := col(rows, "Result"), col(rows, "Bench Name")
	outputs := 0
	for _, r := range rows[1:] {
		if !strings.Contains(r[0], ".mlp.linear_fc1.ColumnParallelLinear.forward.0.output.0") || strings.Contains(r[0], "projector") {
			continue
		}
		outputs++
		if !strings.HasPrefix(r[bn], "[") || !strings.Contains(r[bn], "gate_proj") || r[res] != "pass" || !strings.Contains(r[msg], "fused: gate_up") {
			t.Errorf("fused output row %s: bench %q, %s, %s; want [gate ; up] combined, pass", r[0], r[bn], r[res], r[msg])
		}
	}
	if outputs != 4 {
		t.Errorf("%d fused linear_fc1 output rows, want 4 (2 vision blocks, 2 text layers)", outputs)
	}
	if s.Compared <= plain.Compared-1 || s.Rows != plain.Rows {
		t.Errorf("compared %d of %d rows (plain %d of %d)", s.Compared, s.Rows, plain.Compared, plain.Rows)
	}
}
