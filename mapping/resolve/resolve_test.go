package resolve

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/layermap/layermap/mapping"
	"github.com/layermap/layermap/printparse"
	"github.com/layermap/layermap/printparse/testkit"
	"github.com/layermap/layermap/printparse/treetest"
)

// tree builds a printparse tree from "path Class" lines (parents first).
func tree(lines ...string) *printparse.Tree {
	root := &printparse.Node{Class: "Root"}
	t := &printparse.Tree{Source: "hand", Root: root}
	for _, l := range lines {
		path, class, _ := strings.Cut(l, " ")
		parent := root
		name := path
		if i := strings.LastIndexByte(path, '.'); i >= 0 {
			parent, name = root.Lookup(path[:i]), path[i+1:]
		}
		n := &printparse.Node{Name: name, Path: path, Class: class, Parent: parent}
		parent.Children = append(parent.Children, n)
	}
	return t
}

func TestResolveTreeHandBuilt(t *testing.T) {
	npu := tree("0 DDP", "0.module Float16Module", "0.module.module GPT", "0.module.module.layers ModuleList",
		"0.module.module.layers.0 Layer", "0.module.module.layers.0.attn Attn", "0.module.module.layers.0.attn.qkv Linear",
		"0.module.module.layers.1 Layer", "0.module.module.layers.1.attn Attn", "0.module.module.layers.1.attn.qkv Linear",
		"0.module.module.head Linear")
	bench := tree("module M", "module.blocks ModuleList", "module.blocks.0 Block", "module.blocks.0.self_attn A",
		"module.blocks.0.self_attn.q Linear", "module.blocks.1 Block", "module.blocks.1.self_attn A", "module.blocks.1.self_attn.q Linear",
		"lm_head Linear")
	m, _, err := mapping.Parse([]byte(`TopLayer:
  0.module: module
Float16Module:
  module.layers: blocks
  module.head: lm_head   # one level fewer
Layer:
  attn: self_attn
  attn.qkv: self_attn.q  # longer key wins over attn
Attn:
  qkv: WRONG             # never consulted: Layer's attn.qkv jumps over Attn
ModuleList:
  "0": WRONG             # ModuleList is never typed in a dump
`), "hand.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"0":                                 "0 -",
		"0.module":                          "module +",
		"0.module.module":                   "module.module -",
		"0.module.module.layers":            "module.blocks +",
		"0.module.module.layers.0":          "module.blocks.0 +",
		"0.module.module.layers.0.attn":     "module.blocks.0.self_attn +",
		"0.module.module.layers.0.attn.qkv": "module.blocks.0.self_attn.q +",
		"0.module.module.layers.1.attn.qkv": "module.blocks.1.self_attn.q +",
		"0.module.module.head":              "module.lm_head -",
	}
	got := map[string]string{}
	for _, p := range New(m).ResolveTree(npu, bench) {
		found := "-"
		if p.Bench != nil {
			found = "+"
			if p.Bench.Path != p.BenchPath {
				t.Errorf("%s: bench node %s at %s", p.NPU.Path, p.Bench.Path, p.BenchPath)
			}
		}
		got[p.NPU.Path] = p.BenchPath + " " + found
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s -> %q, want %q", k, got[k], w)
		}
	}
	// module.head fires at Float16Module, but its target lm_head lands
	// below bench "module", while the bench lm_head is beside it.
	bench2, fired := New(m).ConvertScope(TrieFromTree(npu), strings.Split("0.module.module.head", "."))
	if strings.Join(bench2, ".") != "module.lm_head" || len(fired) != 2 {
		t.Errorf("ConvertScope = %v %v", bench2, fired)
	}
}

func loadPrint(t testing.TB, rel string) *printparse.Tree {
	t.Helper()
	return treetest.Load(t, testkit.Corpus(t, rel))
}

const (
	mindspeedVL = "prints/mindspeed/qwen2_5_vl_3b-vlmmodel-ddp-list__msprobe-docs-mindspeed-mm-qwen25vl.txt"
	hfVLOld     = "prints/hf/qwen2_5_vl_3b-old-layout-deepspeed__msprobe-docs-llamafactory-qwen25vl.txt"
)

// The seed templates applied to the corpus pair (both directions), as a
// golden listing of every NPU node: "+" found on the bench side, "-" not,
// and the rules that fired. The MindSpeed-MM -> LLaMA-Factory misses are the
// ones msprobe-layer-mapping.md's worked example lists (text layers'
// input_layernorm, self_attention(.linear_proj), pre_mlp_layernorm sent to
// norm1/attn/norm2; output_layer sent to model.lm_head).
func TestResolveTreeSeedGolden(t *testing.T) {
	seeds := testkit.Testdata(t, "seed-templates")
	tests := []struct{ name, npu, bench, yaml string }{
		{"mindspeed_to_hf", mindspeedVL, hfVLOld, "qwen2.5-vl_mindspeed-mm_to_llamafactory.yaml"},
		{"hf_to_mindspeed", hfVLOld, mindspeedVL, "qwen2.5-vl_llamafactory_to_mindspeed-mm.yaml"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			npu, bench := loadPrint(t, tc.npu), loadPrint(t, tc.bench)
			m := mustLoad(t, filepath.Join(seeds, tc.yaml))
			var b bytes.Buffer
			found := 0
			pairs := New(m).ResolveTree(npu, bench)
			for _, p := range pairs {
				mark := "-"
				if p.Bench != nil {
					mark = "+"
					found++
				}
				var rules []string
				for _, r := range p.Rules {
					rules = append(rules, fmt.Sprintf("%d", r.KeyPos.Line))
				}
				fmt.Fprintf(&b, "%s %s -> %s [%s]\n", mark, p.NPU.Path, p.BenchPath, strings.Join(rules, ","))
			}
			fmt.Fprintf(&b, "found %d of %d\n", found, len(pairs))
			testkit.Golden(t, filepath.Join("testdata", "resolve_"+tc.name+".golden"), b.Bytes())
		})
	}
}

// bigTree is a 60-layer decoder plus a 32-block vision tower.
func bigTree(vision, text int, npu bool) *printparse.Tree {
	var lines []string
	if npu {
		lines = append(lines, "0 DDP", "0.module Float16Module", "0.module.module VLM", "0.module.module.image_encoder VisionModel",
			"0.module.module.image_encoder.layers ModuleList")
		for i := 0; i < vision; i++ {
			p := fmt.Sprintf("0.module.module.image_encoder.layers.%d", i)
			lines = append(lines, p+" TransformerLayer", p+".input_layernorm RMSNorm", p+".self_attention SA",
				p+".self_attention.linear_qkv CPL", p+".self_attention.linear_proj RPL", p+".pre_mlp_layernorm RMSNorm",
				p+".mlp MLP", p+".mlp.linear_fc1 CPL", p+".mlp.linear_fc2 RPL")
		}
		lines = append(lines, "0.module.module.text_decoder MMGPTModel", "0.module.module.text_decoder.decoder TB",
			"0.module.module.text_decoder.decoder.layers ModuleList")
		for i := 0; i < text; i++ {
			p := fmt.Sprintf("0.module.module.text_decoder.decoder.layers.%d", i)
			lines = append(lines, p+" TransformerLayer", p+".input_layernorm RMSNorm", p+".self_attention SA",
				p+".self_attention.linear_qkv CPL", p+".self_attention.linear_proj RPL", p+".pre_mlp_layernorm RMSNorm",
				p+".mlp MLP", p+".mlp.linear_fc1 CPL", p+".mlp.linear_fc2 RPL")
		}
		return tree(lines...)
	}
	lines = append(lines, "module M", "module.visual V", "module.visual.blocks ModuleList")
	for i := 0; i < vision; i++ {
		p := fmt.Sprintf("module.visual.blocks.%d", i)
		lines = append(lines, p+" Block", p+".norm1 N", p+".attn A", p+".attn.qkv Linear", p+".attn.proj Linear", p+".norm2 N",
			p+".mlp MLP", p+".mlp.up_proj Linear", p+".mlp.down_proj Linear", p+".mlp.gate_proj Linear")
	}
	lines = append(lines, "module.model Model", "module.model.layers ModuleList")
	for i := 0; i < text; i++ {
		p := fmt.Sprintf("module.model.layers.%d", i)
		lines = append(lines, p+" DL", p+".input_layernorm N", p+".self_attn A", p+".self_attn.o_proj Linear",
			p+".post_attention_layernorm N", p+".mlp MLP", p+".mlp.up_proj Linear", p+".mlp.down_proj Linear")
	}
	return tree(lines...)
}

func BenchmarkResolveTree(b *testing.B) {
	npu, bench := bigTree(32, 60, true), bigTree(32, 60, false)
	m := mustLoad(b, filepath.Join(testkit.Testdata(b, "seed-templates"), "qwen2.5-vl_mindspeed-mm_to_llamafactory.yaml"))
	r := New(m)
	b.ReportAllocs()
	for b.Loop() {
		if len(r.ResolveTree(npu, bench)) == 0 {
			b.Fatal("no pairs")
		}
	}
}

// TrieFromTree types nodes as msprobe's dump trie would: a ModuleList and
// the models of a printed list have no dump entry, so their segment text
// is their type and rules keyed by their class never fire; None children
// are not modules.
func TestTrieFromTreeTyping(t *testing.T) {
	tr := tree("0 DistributedDataParallel", "0.module Float16Module", "0.module.layers ModuleList", "0.module.layers.0 Layer", "0.module.gone None")
	tr.List = true
	tr.Root.Class = ""
	tr.Root.Lookup("0.module.gone").None = true
	trie := TrieFromTree(tr)
	tests := []struct {
		path, typ string
		typed     bool
	}{
		{"0", "0", false},
		{"0.module", "Float16Module", true},
		{"0.module.layers", "layers", false},
		{"0.module.layers.0", "Layer", true},
	}
	for _, tc := range tests {
		n := trie.Lookup(strings.Split(tc.path, "."))
		if n == nil || n.Type != tc.typ || n.Typed != tc.typed {
			t.Errorf("%s: %+v, want type %s typed %v", tc.path, n, tc.typ, tc.typed)
		}
	}
	if trie.Lookup([]string{"0", "module", "gone"}) != nil {
		t.Error("a None child is in the trie")
	}
	if trie.Len() != 4 {
		t.Errorf("%d items, want 4", trie.Len())
	}
	m, _, _ := mapping.Parse([]byte("DistributedDataParallel: {module: x}\nModuleList: {\"0\": y}\n"), "t.yaml")
	for _, p := range New(m).ResolveTree(tr, nil) {
		if len(p.Rules) != 0 {
			t.Errorf("%s: rules %v fired for a class msprobe never sees", p.NPU.Path, p.Rules)
		}
	}
}

// FuzzNew builds a resolver from whatever mapping.Parse accepts.
func FuzzNew(f *testing.F) {
	f.Add([]byte("TopLayer:\n  0.module: module\nGPTModel:\n  decoder.layers: model.layers\n"))
	f.Add([]byte("A:\n  b.c: d(e)\n  '': x\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, _, err := mapping.Parse(data, "f.yaml")
		if err != nil {
			return
		}
		r := New(m)
		r.ConvertScope(NewTrie("npu"), []string{"0", "module", "decoder"})
	})
}

// ResolveTrie (incremental, items parents first) gives what convert_scope
// gives item by item, for mappings of keys spanning 1 to 3 segments drawn
// from the trees themselves, on a deep chain and on the corpus pair.
func TestResolveTrieIncremental(t *testing.T) {
	chain := &printparse.Tree{Root: &printparse.Node{Class: "Root"}}
	n := chain.Root
	for i := range 300 {
		c := &printparse.Node{Name: []string{"a", "b", "layers", "0"}[i%4], Class: []string{"A", "B", "ModuleList", "Layer"}[i%4], Parent: n}
		c.Path = strings.TrimPrefix(n.Path+"."+c.Name, ".")
		n.Children = append(n.Children, c, &printparse.Node{Name: "x", Class: "X", Parent: n, Path: strings.TrimPrefix(n.Path+".x", ".")})
		n = c
	}
	trees := []*printparse.Tree{chain, loadPrint(t, mindspeedVL), loadPrint(t, hfVLOld)}
	firedRules, multi := 0, 0
	for ti, npu := range trees {
		for seed := range 20 {
			rng := rand.New(rand.NewPCG(uint64(ti), uint64(seed)))
			var nodes []*printparse.Node
			npu.Walk(func(n *printparse.Node) bool { nodes = append(nodes, n); return true })
			var y strings.Builder
			byClass := map[string][]string{}
			for range 12 {
				n := nodes[rng.IntN(len(nodes))]
				var segs []string
				m := n
				for k := 0; k < 1+rng.IntN(3) && len(m.Children) > 0; k++ {
					m = m.Children[rng.IntN(len(m.Children))]
					segs = append(segs, m.Name)
				}
				if len(segs) == 0 {
					continue
				}
				cls := n.Class
				if n.Parent == nil || cls == "" {
					cls = mapping.TopLayer
				}
				byClass[cls] = append(byClass[cls], fmt.Sprintf("  %s: t%d.u", strings.Join(segs, "."), rng.IntN(5)))
			}
			for cls, lines := range byClass {
				fmt.Fprintf(&y, "%s:\n%s\n", cls, strings.Join(slices.Compact(lines), "\n"))
			}
			m, _, err := mapping.Parse([]byte(y.String()), "gen.yaml")
			if err != nil {
				continue // a generated key repeated within a class
			}
			r := New(m)
			trie := TrieFromTree(npu)
			got := r.ResolveTrie(trie, npu)
			for i, it := range trie.Items() {
				segs, fired := r.ConvertScope(trie, it.Scope())
				want := NodePair{NPU: it.Node, BenchPath: strings.Join(segs, "."), Rules: fired, Bench: npu.Root.LookupSegs(segs)}
				g := got[i]
				firedRules += len(fired)
				for _, f := range fired {
					if strings.Contains(f.Key, ".") {
						multi++
					}
				}
				if g.NPU != want.NPU || g.BenchPath != want.BenchPath || g.Bench != want.Bench || !slices.Equal(g.Rules, want.Rules) {
					t.Fatalf("tree %d seed %d, %s: got %s %v %d rules, want %s %v %d rules\n%s", ti, seed, it.Name,
						g.BenchPath, g.Bench != nil, len(g.Rules), want.BenchPath, want.Bench != nil, len(want.Rules), y.String())
				}
			}
		}
	}
	if firedRules < 1000 || multi < 100 {
		t.Errorf("the generated mappings fired %d rules, %d of multi-segment keys: the test checks too little", firedRules, multi)
	}
}
