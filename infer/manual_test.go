package infer_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/layermap/layermap/infer"
	"github.com/layermap/layermap/mapping"
	"github.com/layermap/layermap/mapping/resolve"
	"github.com/layermap/layermap/printparse/treetest"
)

const lin = "Linear(in_features=4, out_features=4, bias=False)"

// Two small models: an encoder whose layers (a repeat group) need renames
// and a decoder that keeps its names; the same Attn class in both.
var (
	manualNPU = `Model(
  (enc): Enc(
    (layers): ModuleList(
      (0-1): 2 x Layer(
        (attn): Attn(
          (q): ` + lin + `
          (o): ` + lin + `
        )
        (mlp): MLP(
          (fc): ` + lin + `
        )
      )
    )
  )
  (dec): Dec(
    (attn): Attn(
      (q): ` + lin + `
      (o): ` + lin + `
    )
  )
  (extra): ` + lin + `
)
`
	manualBench = `Model(
  (enc): Enc(
    (layers): ModuleList(
      (0-1): 2 x Block(
        (self_attn): SelfAttn(
          (qkv): ` + lin + `
          (proj): ` + lin + `
        )
        (mlp): MLP(
          (fc): ` + lin + `
        )
      )
    )
  )
  (dec): Dec(
    (attn): Attn(
      (q): ` + lin + `
      (o): ` + lin + `
    )
  )
  (head): ` + lin + `
)
`
	manualMap = `Layer:
  attn: self_attn
  attn.o: self_attn.proj
TopLayer:
  extra: nowhere
`
)

func TestManual(t *testing.T) {
	for _, tc := range []struct {
		name  string
		pairs []mapping.ModulePair
		want  string // lines, sidecar, covered, extended, skipped
	}{{
		// The Attn rule would take dec.attn.q away from dec.attn.q: the
		// line goes one level up, to Layer, and serves layer 1 too.
		name:  "escape to the layer class",
		pairs: []mapping.ModulePair{{NPU: "enc.layers.0.attn.q", Bench: "enc.layers.0.self_attn.qkv"}},
		want:  "line Layer: attn.q: self_attn.qkv (enc.layers.0.attn.q)\nextended enc.layers.1.attn.q -> enc.layers.1.self_attn.qkv",
	}, {
		name:  "already made by the mapping",
		pairs: []mapping.ModulePair{{NPU: "enc.layers.1.attn.o", Bench: "enc.layers.1.self_attn.proj"}},
		want:  "covered enc.layers.1.attn.o -> enc.layers.1.self_attn.proj",
	}, {
		// .vis.config also stores the bench -> NPU link
		name:  "written the other way round",
		pairs: []mapping.ModulePair{{NPU: "enc.layers.0.self_attn.qkv", Bench: "enc.layers.0.attn.q"}, {NPU: "enc.layers.0.attn.q", Bench: "enc.layers.0.self_attn.qkv"}},
		want:  "line Layer: attn.q: self_attn.qkv (enc.layers.0.attn.q)\nextended enc.layers.1.attn.q -> enc.layers.1.self_attn.qkv",
	}, {
		// TopLayer already has the key "extra": no line can say it
		name:  "no sound line",
		pairs: []mapping.ModulePair{{NPU: "extra", Bench: "head"}},
		want:  "sidecar extra -> head",
	}, {
		name:  "parents first, then the child the parent's line covers",
		pairs: []mapping.ModulePair{{NPU: "enc.layers.0.mlp.fc", Bench: "enc.layers.0.mlp.fc"}, {NPU: "enc.layers.0.attn.q", Bench: "enc.layers.0.self_attn.qkv"}},
		want:  "line Layer: attn.q: self_attn.qkv (enc.layers.0.attn.q)\ncovered enc.layers.0.mlp.fc -> enc.layers.0.mlp.fc\nextended enc.layers.1.attn.q -> enc.layers.1.self_attn.qkv",
	}, {
		name:  "modules the trees lack",
		pairs: []mapping.ModulePair{{NPU: "Functional.linear.0.forward", Bench: "head"}, {NPU: "extra", Bench: "nope"}, {NPU: "", Bench: ""}},
		want:  "skipped Functional.linear.0.forward -> head: the NPU side has no module Functional.linear.0.forward\nskipped extra -> nope: the bench side has no module nope\nskipped  -> : the roots are paired by msprobe itself",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			npu, bench := treetest.Parse(t, "npu.txt", manualNPU), treetest.Parse(t, "bench.txt", manualBench)
			m, _, err := mapping.Parse([]byte(manualMap), "map.yaml")
			if err != nil {
				t.Fatal(err)
			}
			before := len(m.Rules())
			r := infer.Manual(npu, bench, m, tc.pairs)
			var got []string
			for _, l := range r.Lines {
				got = append(got, fmt.Sprintf("line %s: %s: %s (%s)", l.Class, l.Key, l.Value, l.NPU))
			}
			for _, kind := range []struct {
				w  string
				ps []mapping.ModulePair
			}{{"sidecar", r.Sidecar}, {"covered", r.Covered}, {"extended", r.Extended}} {
				for _, p := range kind.ps {
					got = append(got, kind.w+" "+p.NPU+" -> "+p.Bench)
				}
			}
			for _, s := range r.Skipped {
				got = append(got, "skipped "+s)
			}
			if g := strings.Join(got, "\n"); g != tc.want {
				t.Errorf("got\n%s\nwant\n%s", g, tc.want)
			}
			if n := len(m.Rules()) - before; n != len(r.Lines) {
				t.Errorf("m gained %d rules, want the %d lines", n, len(r.Lines))
			}
			// every line, run through msprobe's resolver, sends its pair home
			res := map[string]string{}
			for _, p := range resolve.New(m).ResolveTree(npu, bench) {
				if p.Bench != nil {
					res[p.NPU.Path] = p.Bench.Path
				}
			}
			for _, l := range r.Lines {
				if res[l.NPU] != l.Bench {
					t.Errorf("with the lines, %s resolves to %q, want %s", l.NPU, res[l.NPU], l.Bench)
				}
			}
		})
	}
}

// ParseManual tells the view's pairs file from msprobe's .vis.config
// (read by msprobe.ParseVisConfig, tested there).
func TestParseManual(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"page file", "# from the view\n- npu: a.b\n  bench: x.y\n", "a.b -> x.y"},
		{"empty list", "[]\n", ""},
		{"vis.config after a BOM and blanks", "\ufeff\n {\"Module.a.A.forward.0\": \"Module.b.B.backward.1\"}", "a -> b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps, err := infer.ParseManual([]byte(tc.in), "in")
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range ps {
				got = append(got, p.NPU+" -> "+p.Bench)
			}
			if g := strings.Join(got, "\n"); g != tc.want {
				t.Errorf("got\n%s\nwant\n%s", g, tc.want)
			}
		})
	}
	for _, tc := range []struct{ name, in, want string }{
		{"broken JSON", "{\n\"a\": \n}", "in:3: expected a .vis.config JSON object"},
		{"YAML not a list", "npu: a\n", "in:1: expected a list"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := infer.ParseManual([]byte(tc.in), "in")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func FuzzParseManual(f *testing.F) {
	f.Add([]byte("- npu: a\n  bench: b\n"))
	f.Add([]byte(`{"Module.a.A.forward.0": "Module.b.B.forward.0"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ps, err := infer.ParseManual(data, "fuzz")
		if err != nil && ps != nil {
			t.Fatalf("pairs and an error: %v", err)
		}
	})
}
