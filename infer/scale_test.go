package infer

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/layermap/layermap/printparse"
	"github.com/layermap/layermap/printparse/msprobe/dumpgen"
	"github.com/layermap/layermap/printparse/testkit"
	"github.com/layermap/layermap/printparse/treetest"
)

// The cost targets of issue 8 (near-linear alignment), as benchmarks:
//
//	go test -run '^$' -bench Scale -benchmem ./infer
//
// explicit-256: a megatron-core TE Llama print against transformers'
// Llama with the repeat groups written out as 256 explicit layers per side
// (older PyTorch, ModuleDict layers) — target under 2 s. deepseek-v3: the
// DeepSeek-V3 print of the corpus against itself — under 2 s. dump-2048:
// two msprobe dump folders of 2,048 layers (loaded outside the timer) —
// under 3 s. nested-1000/2000: one module nested 1,000 (2,000) deep on
// both sides, names differing at every level — under 1 s (2,000 must
// finish). siblings-250: 250 distinct sibling classes under one root.
// Memory must grow linearly with the modules: B/op per size.

const (
	llamaTE = "prints/megatron/llama_7b_like-gptmodel-te-old-mcore-no-qk-layernorm__finetune-script-comment-anon.txt"
	llamaHF = "prints/hf/llama2_7b__timing-script-docstring-anon.txt"
	dsV3    = "prints/hf/deepseek_r1_0528-v3-remote-code-dense3-moe58__tenstorrent-tt-metal-models-demos-deepseek_v3-reference-README.txt"
)

var repeatHeader = regexp.MustCompile(`^(\s*)\((\d+)-(\d+)\): (\d+) x (.*)$`)

// explicitLayers rewrites every repeat group "(a-b): N x Cls(" of a print
// as n explicit members "(i): Cls(" (n = 0 keeps each group's indices), as
// PyTorch before 1.13 and ModuleDict layers print them.
func explicitLayers(text string, n int) string {
	lines := strings.Split(text, "\n")
	var out []string
	for i := 0; i < len(lines); i++ {
		m := repeatHeader.FindStringSubmatch(lines[i])
		if m == nil {
			out = append(out, lines[i])
			continue
		}
		indent, head := m[1], m[5]
		body := []string{}
		if strings.HasSuffix(head, "(") {
			for i++; i < len(lines) && lines[i] != indent+")"; i++ {
				body = append(body, lines[i])
			}
			body = append(body, indent+")")
		}
		first, count := 0, n
		if count == 0 {
			fmt.Sscan(m[2], &first)
			fmt.Sscan(m[4], &count)
		}
		for k := first; k < first+count; k++ {
			out = append(out, fmt.Sprintf("%s(%d): %s", indent, k, head))
			out = append(out, body...)
		}
	}
	return strings.Join(out, "\n")
}

// nested is a print of one module nested depth deep: level names and
// classes differ between the two sides (prefix), the leaf is a Linear.
func nested(depth int, name, class string) string {
	var b strings.Builder
	b.WriteString("Model(\n")
	for d := 1; d <= depth; d++ {
		fmt.Fprintf(&b, "%s(%s): %s%d(\n", strings.Repeat("  ", d), name, class, d%7)
	}
	fmt.Fprintf(&b, "%s(proj): Linear(in_features=8, out_features=8, bias=True)\n", strings.Repeat("  ", depth+1))
	for d := depth; d >= 0; d-- {
		fmt.Fprintf(&b, "%s)\n", strings.Repeat("  ", d))
	}
	return b.String()
}

// siblingsPrint is a print of n distinct sibling classes under one root, each
// with two leaves.
func siblingsPrint(n int, prefix string) string {
	var b strings.Builder
	b.WriteString("Model(\n")
	for i := range n {
		fmt.Fprintf(&b, "  (%s_block%d): Block%dType(\n", prefix, i, i)
		fmt.Fprintf(&b, "    (dense): Linear(in_features=%d, out_features=8, bias=True)\n", i+1)
		b.WriteString("    (norm): LayerNorm((8,), eps=1e-05, elementwise_affine=True)\n  )\n")
	}
	b.WriteString(")\n")
	return b.String()
}

// dumpFolder writes a synthetic msprobe dump folder of a model with n
// decoder layers.
func dumpFolder(tb testing.TB, n int, seed uint64) string {
	tb.Helper()
	dir := tb.TempDir()
	f, err := os.Create(filepath.Join(dir, "dump.json"))
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := dumpgen.Write(f, dumpgen.Options{Seed: seed, Layers: n, Hidden: 64, Perturb: 0.01 * float64(seed)}); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
	return dir
}

// scaleCase is one input pair of the cost benchmarks.
type scaleCase struct {
	name       string
	npu, bench func(testing.TB) *printparse.Tree
}

func textTree(text, name string) func(testing.TB) *printparse.Tree {
	return func(tb testing.TB) *printparse.Tree { return treetest.Parse(tb, name, text) }
}

func fileTree(path string) func(testing.TB) *printparse.Tree {
	return func(tb testing.TB) *printparse.Tree {
		t, err := printparse.Load(path, printparse.Options{Index: -1})
		if err != nil {
			tb.Fatal(err)
		}
		return t
	}
}

func corpusText(tb testing.TB, rel string) string {
	tb.Helper()
	data, err := os.ReadFile(testkit.Corpus(tb, rel))
	if err != nil {
		tb.Fatal(err)
	}
	return string(data)
}

func scaleCases(tb testing.TB) []scaleCase {
	te, hf, ds := corpusText(tb, llamaTE), corpusText(tb, llamaHF), corpusText(tb, dsV3)
	dump := func(n int, seed uint64) func(testing.TB) *printparse.Tree {
		return func(tb testing.TB) *printparse.Tree {
			t, err := printparse.Load(dumpFolder(tb, n, seed), printparse.Options{Index: -1})
			if err != nil {
				tb.Fatal(err)
			}
			return t
		}
	}
	var cs []scaleCase
	for _, n := range []int{32, 64, 128, 256} {
		cs = append(cs, scaleCase{fmt.Sprintf("explicit-%d", n), textTree(explicitLayers(te, n), "te.txt"), textTree(explicitLayers(hf, n), "hf.txt")})
	}
	cs = append(cs, scaleCase{"deepseek-v3", textTree(ds, "ds.txt"), textTree(ds, "ds.txt")})
	// the benchmark's full-size MoE pairs: megatron-core TE against HF
	for _, p := range []string{"deepseek-v3_mcore-te_vs_hf", "glm4.5-air_mcore-te_vs_hf", "qwen3-30b-a3b_mcore-te_vs_hf"} {
		dir := testkit.Testdata(tb, "benchmark", p)
		cs = append(cs, scaleCase{p, fileTree(filepath.Join(dir, "npu.txt")), fileTree(filepath.Join(dir, "bench.txt"))})
	}
	cs = append(cs, scaleCase{"deepseek-v3-explicit", textTree(explicitLayers(ds, 0), "ds.txt"), textTree(ds, "ds.txt")})
	for _, n := range []int{512, 2048} {
		cs = append(cs, scaleCase{fmt.Sprintf("dump-%d", n), dump(n, 0), dump(n, 1)})
	}
	for _, n := range []int{250, 1000} {
		cs = append(cs, scaleCase{fmt.Sprintf("siblings-%d", n), textTree(siblingsPrint(n, "a"), "a.txt"), textTree(siblingsPrint(n, "b"), "b.txt")})
	}
	for _, n := range []int{250, 500, 1000, 2000} {
		cs = append(cs, scaleCase{fmt.Sprintf("nested-%d", n), textTree(nested(n, "inner", "Wrap"), "a.txt"), textTree(nested(n, "module", "Block"), "b.txt")})
	}
	return cs
}

func BenchmarkScale(b *testing.B) {
	for _, c := range scaleCases(b) {
		b.Run(c.name, func(b *testing.B) {
			npu, bench := c.npu(b), c.bench(b)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := Suggest(npu, bench, Options{Template: TemplateNone}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(countNodes(npu)+countNodes(bench)), "modules")
		})
	}
}
