package compare

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// scaled is leaf l with its statistics scaled by 1+rel (and dtype set).
func scaled(t testing.TB, l *jnode, rel float64, dtype string) *jnode {
	c := l.clone()
	for _, k := range []string{"Max", "Min", "Mean", "Norm"} {
		c.set(k, jnum(c.get(k).float(t)*(1+rel)))
	}
	c.set("dtype", jstr(dtype))
	return c
}

// writeExtras writes construct.json (entry -> parent) and stack.json
// (every entry at one user line) beside a fixture's dump.json.
func writeExtras(t testing.TB, dir string, parent map[string]string, entries []fxEntry) {
	t.Helper()
	b, _ := json.Marshal(parent)
	if err := os.WriteFile(filepath.Join(dir, "construct.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.name)
	}
	stack := map[string]any{"0": []any{names, []string{
		"File /usr/lib/python3/dist-packages/torch/nn/modules/module.py, line 1201, in _call_impl, \n result = hook(self, input)",
		"File /home/user/train.py, line 42, in forward, \n y = self.block(x)"}}}
	b, _ = json.Marshal(stack)
	if err := os.WriteFile(filepath.Join(dir, "stack.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestDivergenceClasses: a fixture per class, derived from the demo
// dump's tensors: a root cause (inputs agree, outputs beyond the noise
// floor, the enclosing module's outputs too), the divergence it leaves
// downstream (inherited), an API whose deviation its module absorbs, a
// deviation under the bf16 floor that is none, and the backward pass
// told apart from the forward one.
func TestDivergenceClasses(t *testing.T) {
	x := demoLeaves(t, "[2, 8]")
	const bf, f32 = "torch.bfloat16", "torch.float32"
	fwd := func(name string, in, out *jnode) fxEntry {
		return fxEntry{name: name, in: []*jnode{in}, out: []*jnode{out}}
	}
	type side struct{ entries []fxEntry }
	mk := func(dev map[string]float64) []fxEntry {
		d := func(k string) float64 { return dev[k] }
		return []fxEntry{
			// layer 0: its norm's API deviates, the norm's output agrees
			fwd("Tensor.pow.0.forward", scaled(t, x[0], 0, bf), scaled(t, x[1], d("pow"), bf)),
			fwd("Module.layers.0.norm.RMSNorm.forward.0", scaled(t, x[0], 0, bf), scaled(t, x[2], 0, bf)),
			// layer 0's mlp: a deviation under bf16's floor (2^-7)
			fwd("Module.layers.0.mlp.MLP.forward.0", scaled(t, x[2], 0, bf), scaled(t, x[3], d("mlp0"), bf)),
			// layer 1's attention: the root cause, its layer deviates too
			fwd("Module.layers.1.attn.Attention.forward.0", scaled(t, x[3], 0, bf), scaled(t, x[4], d("attn1"), bf)),
			fwd("Module.layers.1.Layer.forward.0", scaled(t, x[3], 0, bf), scaled(t, x[5], d("layer1"), bf)),
			// layer 2 reads layer 1's output: inherited
			fwd("Module.layers.2.Layer.forward.0", scaled(t, x[5], d("layer1"), bf), scaled(t, x[6], d("layer2"), bf)),
			// backward: a root cause of its own, in float32
			fwd("Module.layers.2.Layer.backward.0", scaled(t, x[7], 0, f32), scaled(t, x[8], d("bwd"), f32)),
		}
	}
	parent := map[string]string{
		"Tensor.pow.0.forward":                     "Module.layers.0.norm.RMSNorm.forward.0",
		"Module.layers.1.attn.Attention.forward.0": "Module.layers.1.Layer.forward.0",
	}
	dir := t.TempDir()
	bench := mk(nil)
	npu := mk(map[string]float64{"pow": 0.05, "mlp0": 0.003, "attn1": 0.02, "layer1": 0.03, "layer2": 0.04, "bwd": 1e-4})
	writeFixture(t, filepath.Join(dir, "npu"), npu...)
	writeExtras(t, filepath.Join(dir, "npu"), parent, npu)
	writeFixture(t, filepath.Join(dir, "bench"), bench...)
	writeExtras(t, filepath.Join(dir, "bench"), parent, bench)
	rep, err := Run(Options{Target: filepath.Join(dir, "npu"), Golden: filepath.Join(dir, "bench"), OutDir: t.TempDir(),
		Stamp: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	s := rep.Ranks[0].Summary
	got := map[string]*Divergence{}
	for _, d := range s.Divergences {
		got[d.Direction+" "+d.Class] = d
	}
	want := map[string]string{
		"forward root_cause":  "Module.layers.1.attn.Attention.forward.0",
		"forward inherited":   "Module.layers.2.Layer.forward.0",
		"forward absorbed":    "Tensor.pow.0.forward",
		"backward root_cause": "Module.layers.2.Layer.backward.0",
	}
	for k, entry := range want {
		if d := got[k]; d == nil || d.NPUEntry != entry {
			t.Errorf("%s: %+v, want %s", k, d, entry)
		}
	}
	if len(s.Divergences) != len(want) {
		t.Errorf("%d divergences, want %d: %+v", len(s.Divergences), len(want), s.Divergences)
	}
	if f := s.First; f == nil || f.NPUEntry != want["forward root_cause"] || f.Enclosing != "Module.layers.1.Layer.forward.0" ||
		f.BenchEnclosing != "Module.layers.1.Layer.forward.0" || !strings.Contains(f.Stack, "/home/user/train.py, line 42") || f.NoiseFloor != 1.0/128 {
		t.Errorf("first divergence %+v: want the attention, its layer as enclosing module on both sides, the user's stack line and bf16's floor", f)
	}
	if d := got["forward absorbed"]; d != nil && !strings.Contains(d.Why, "Module.layers.0.norm.RMSNorm.forward.0") {
		t.Errorf("absorbed: %s, want the enclosing norm named", d.Why)
	}
	// the same pair compared with itself: nothing diverges
	rep, err = Run(Options{Target: filepath.Join(dir, "bench"), Golden: filepath.Join(dir, "bench"), OutDir: t.TempDir(),
		Stamp: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	if s := rep.Ranks[0].Summary; s.First != nil || len(s.Divergences) > 0 {
		t.Errorf("a dump against itself: %+v", s.Divergences)
	}
}

func TestNoiseFloor(t *testing.T) {
	for dtype, want := range map[string]float64{"torch.bfloat16": 1.0 / 128, "BFloat16": 1.0 / 128, "torch.float16": 1.0 / 1024,
		"Float16": 1.0 / 1024, "torch.float32": 1e-5, "Float32": 1e-5, "torch.float64": 1e-12, "torch.int64": 0, "<class 'int'>": 0} {
		if got := noiseFloor(dtype); got != want {
			t.Errorf("noiseFloor(%s) = %g, want %g", dtype, got, want)
		}
	}
	// the dtypes noiseFloor knows by name get the floor their words give
	for _, dtype := range []string{"torch.float32", "Float32", "torch.bfloat16", "BFloat16", "torch.float16", "Float16",
		"<class 'float'>", "torch.int64", "torch.int32", "torch.bool", "Int64", "Int32", "Bool", "<class 'int'>", "<class 'bool'>",
		"<class 'str'>", "<class 'NoneType'>", "None", "int", "slice", "ellipsis", "torch.Size", "torch.ProcessGroup"} {
		if got, want := noiseFloor(dtype), noiseFloorOf(dtype); got != want {
			t.Errorf("noiseFloor(%s) = %g, its words give %g", dtype, got, want)
		}
	}
}

// TestDivergenceOrder: which entry is the first divergence, in which class
// and with which words, per kind of evidence: amplification (inputs beyond
// the floor, outputs ten times more), inheritance from an earlier
// divergence, from the parameters of an enclosing module dumped after it,
// or from nothing compared; md5 mode and an exact dtype say no
// meaningless number.
func TestDivergenceOrder(t *testing.T) {
	x := demoLeaves(t, "[2, 8]")
	const f32, i64 = "torch.float32", "torch.int64"
	type ent struct {
		name           string
		in, out        float64 // relative deviations of the NPU side
		param          float64 // of a parameter (modules), 0: none
		dtype, outType string
	}
	withMD5 := func(l *jnode, md5 string) *jnode { c := l.clone(); c.set("md5", jstr(md5)); return c }
	build := func(es []ent, npu, md5 bool) []fxEntry {
		var out []fxEntry
		for i, e := range es {
			dt, ot := e.dtype, e.outType
			if dt == "" {
				dt = f32
			}
			if ot == "" {
				ot = dt
			}
			in, o := scaled(t, x[2*i], 0, dt), scaled(t, x[2*i+1], 0, ot)
			if npu {
				in, o = scaled(t, x[2*i], e.in, dt), scaled(t, x[2*i+1], e.out, ot)
			}
			if md5 {
				tag := func(v float64) string {
					if npu && v != 0 {
						return "deadbeef"
					}
					return "00c0ffee"
				}
				in, o = withMD5(in, tag(e.in)), withMD5(o, tag(e.out))
			}
			fe := fxEntry{name: e.name, in: []*jnode{in}, out: []*jnode{o}}
			if e.param != 0 || strings.HasPrefix(e.name, "Module.") {
				p := 0.0
				if npu {
					p = e.param
				}
				fe.params = map[string]*jnode{"weight": scaled(t, x[len(x)-1], p, dt)}
			}
			out = append(out, fe)
		}
		return out
	}
	type want struct {
		entry, class string
		why          []string // substrings of the first divergence's Why
		notWhy       []string
		order        []string // the NPU entries of Divergences, in order
	}
	for _, c := range []struct {
		name    string
		entries []ent
		parent  map[string]string
		md5     bool
		want    want
	}{
		{name: "amplified", entries: []ent{
			{name: "Functional.linear.0.forward", in: 1e-3, out: 0.05},
			{name: "Functional.relu.0.forward", in: 0, out: 0.2},
		}, want: want{entry: "Functional.linear.0.forward", class: ClassRootCause,
			why:   []string{"its inputs differ by 0.001", "but its outputs differ by 0.05", "50 times as much", "at least 10"},
			order: []string{"Functional.linear.0.forward"}}},
		{name: "inherited from an earlier divergence", entries: []ent{
			{name: "Functional.linear.0.forward", in: 0, out: 0.02},
			{name: "Functional.gelu.0.forward", in: 0.02, out: 0.03},
		}, want: want{entry: "Functional.linear.0.forward", class: ClassRootCause,
			why:   []string{"its inputs agree within the torch.float32 noise floor (1e-05)", "its outputs differ by 0.02 (2e+03 times the torch.float32 noise floor)"},
			order: []string{"Functional.linear.0.forward", "Functional.gelu.0.forward"}}},
		{name: "inherited from nothing compared", entries: []ent{
			{name: "Functional.gelu.0.forward", in: 0.02, out: 0.03},
		}, want: want{entry: "Functional.gelu.0.forward", class: ClassInherited,
			why:   []string{"less than 10 times as much", "where nothing compared before it shows it (not dumped, or not mapped)"},
			order: []string{"Functional.gelu.0.forward"}}},
		{name: "inherited from its module's parameters", entries: []ent{
			{name: "Tensor.__mul__.0.forward", in: 0.05, out: 0.05},
			{name: "Module.proj.Scale.forward.0", in: 0, out: 0.05, param: 0.05},
		}, parent: map[string]string{"Tensor.__mul__.0.forward": "Module.proj.Scale.forward.0"},
			want: want{entry: "Module.proj.Scale.forward.0", class: ClassRootCause,
				why:   []string{"its parameters differ too"},
				order: []string{"Module.proj.Scale.forward.0", "Tensor.__mul__.0.forward"}}},
		{name: "a tie in execution order keeps the earlier", entries: []ent{
			{name: "Tensor.__mul__.0.forward", in: 0, out: 0.05},
			{name: "Module.proj.Scale.forward.0", in: 0, out: 0.05, param: 0.05},
		}, parent: map[string]string{"Tensor.__mul__.0.forward": "Module.proj.Scale.forward.0"},
			want: want{entry: "Tensor.__mul__.0.forward", class: ClassRootCause,
				why:   []string{"its inputs agree", "its outputs differ by 0.05"},
				order: []string{"Tensor.__mul__.0.forward"}}},
		{name: "md5", md5: true, entries: []ent{
			{name: "Functional.linear.0.forward", in: 0, out: 0.02},
			{name: "Functional.gelu.0.forward", in: 0.02, out: 0.03},
		}, want: want{entry: "Functional.linear.0.forward", class: ClassRootCause,
			why:    []string{"its inputs' md5 agree and its outputs' md5 differs"},
			notWhy: []string{"floor", "-1", "Inf", "times"},
			order:  []string{"Functional.linear.0.forward", "Functional.gelu.0.forward"}}},
		{name: "exact dtype", entries: []ent{
			{name: "Functional.argmax.0.forward", in: 0, out: 0.5, outType: i64},
		}, want: want{entry: "Functional.argmax.0.forward", class: ClassRootCause,
			why:    []string{"its outputs differ by 0.5 (torch.int64: compared exactly)"},
			notWhy: []string{"noise floor (0)", "times the torch.int64", "Inf"},
			order:  []string{"Functional.argmax.0.forward"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			npu, bench := build(c.entries, true, c.md5), build(c.entries, false, c.md5)
			writeFixture(t, filepath.Join(dir, "npu"), npu...)
			writeFixture(t, filepath.Join(dir, "bench"), bench...)
			if c.parent != nil {
				writeExtras(t, filepath.Join(dir, "npu"), c.parent, npu)
				writeExtras(t, filepath.Join(dir, "bench"), c.parent, bench)
			}
			rep, err := Run(Options{Target: filepath.Join(dir, "npu"), Golden: filepath.Join(dir, "bench"), OutDir: t.TempDir(),
				Stamp: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)})
			if err != nil {
				t.Fatal(err)
			}
			s := rep.Ranks[0].Summary
			if s.Mode != map[bool]string{true: "md5", false: "statistics"}[c.md5] {
				t.Fatalf("mode %s", s.Mode)
			}
			f := s.First
			if f == nil || f.NPUEntry != c.want.entry || f.Class != c.want.class {
				t.Fatalf("first divergence %+v, want %s %s", f, c.want.class, c.want.entry)
			}
			for _, w := range c.want.why {
				if !strings.Contains(f.Why, w) {
					t.Errorf("why %q, want %q in it", f.Why, w)
				}
			}
			for _, w := range c.want.notWhy {
				if strings.Contains(f.Why, w) {
					t.Errorf("why %q, want no %q in it", f.Why, w)
				}
			}
			var order []string
			for _, d := range s.Divergences {
				order = append(order, d.NPUEntry)
			}
			if strings.Join(order, " ") != strings.Join(c.want.order, " ") {
				t.Errorf("divergences %v, want %v", order, c.want.order)
			}
			if len(s.Divergences) > 1 {
				d := s.Divergences[1]
				var want string
				switch {
				case c.parent != nil:
					want = "the parameters of its enclosing module " + c.want.entry + " differ"
				default:
					want = c.want.entry + " diverges before it"
				}
				if d.Class != ClassInherited || !strings.Contains(d.Why, want) {
					t.Errorf("second divergence %s %s: %q, want inherited and %q", d.Class, d.NPUEntry, d.Why, want)
				}
			}
			var text strings.Builder
			if err := rep.WriteText(&text); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(text.String(), "  first divergence, forward, "+strings.ReplaceAll(c.want.class, "_", " ")) {
				t.Errorf("text summary:\n%s\nwant the first divergence line", text.String())
			}
		})
	}
}

// TestModStatus: module statuses come back as last set, across growth.
func TestModStatus(t *testing.T) {
	var m *modStatus
	if m.has(1) || m.deviates(1) {
		t.Fatal("a nil modStatus holds something")
	}
	m = &modStatus{}
	h := func(i int) uint64 { return uint64(i) * 0x9e3779b97f4a7c15 }
	for i := range 70000 {
		m.set(h(i), i%3 == 0)
	}
	for i := 0; i < 70000; i += 7 {
		m.set(h(i), i%2 == 0) // set again
	}
	if m.n != 70000 {
		t.Fatalf("%d statuses, want 70000", m.n)
	}
	for i := range 70000 {
		want := i%3 == 0
		if i%7 == 0 {
			want = i%2 == 0
		}
		if !m.has(h(i)) || m.deviates(h(i)) != want {
			t.Fatalf("module %d: has %v, deviates %v, want %v", i, m.has(h(i)), m.deviates(h(i)), want)
		}
	}
	if m.has(h(70001)) {
		t.Fatal("a module never set is found")
	}
}
