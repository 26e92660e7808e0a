package infer

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/layermap/layermap/mapping"
	"github.com/layermap/layermap/printparse"
	"github.com/layermap/layermap/printparse/testkit"
)

// corpusPair is one pair of testdata/corpus inputs (prints/PROVENANCE.md
// "Pairs", paths relative to the corpus): npu keys the forward draft.
type corpusPair struct {
	name, npu, bench string
}

var pairs = []corpusPair{
	{"A_qwen25vl_mindspeed-mm_vs_llamafactory",
		"prints/mindspeed/qwen2_5_vl_3b-vlmmodel-ddp-list__msprobe-docs-mindspeed-mm-qwen25vl.txt",
		"prints/hf/qwen2_5_vl_3b-old-layout-deepspeed__msprobe-docs-llamafactory-qwen25vl.txt"},
	{"D_geneformer_nemo1_vs_nemo2",
		"prints/nemo/geneformer-nemo1-bertmodel-legacy-reindented__bionemo-framework-test_model-docstring.txt",
		"prints/nemo/geneformer-nemo2-megatronbiobertmodel-mcore-reindented__bionemo-framework-test_model-docstring.txt"},
	{"qwen25vl_old3b_vs_old7b",
		"prints/hf/qwen2_5_vl_3b-old-layout-deepspeed__msprobe-docs-llamafactory-qwen25vl.txt",
		"prints/hf/qwen2_5_vl_7b-old-layout__acproject-duorou-docs-qwen2.5vl_graph.txt"},
	{"qwen25vl_new3b_vs_new1layer",
		"prints/hf/qwen2_5_vl_3b-new-layout-model.visual-model.language_model__inspect-model-script-anon.txt",
		"prints/hf/qwen2_5_vl_3b-new-layout-1-layer-missing-final-paren__quic-efficient-transformers-test_subfunction_vlm.txt"},
	{"qwen25vl_old_vs_new_layout",
		"prints/hf/qwen2_5_vl_3b-old-layout-deepspeed__msprobe-docs-llamafactory-qwen25vl.txt",
		"prints/hf/qwen2_5_vl_3b-new-layout-model.visual-model.language_model__inspect-model-script-anon.txt"},
	{"qwen2vl_old7b_vs_new2b",
		"prints/hf/qwen2_vl_7b-old-layout__model-structure-md-anon.txt",
		"prints/hf/qwen2_vl_2b-new-layout__print-model-script-docstring-anon.txt"},
	{"qwen2vl_old7b_vs_new2b_mangled",
		"prints/hf/qwen2_vl_7b-old-layout__model-structure-md-anon.txt",
		"prints/hf/qwen2_vl_2b-new-layout-MANGLED-no-indent-blank-lines__chat-notes-md-anon.txt"},
	// msprobe dump folders of pair A's structures (2 vision, 2 text
	// layers), LLaMA-Factory as NPU.
	{"msprobe_dumps_llamafactory_vs_mindspeed",
		"msprobe/golden/qwen25vl_llamafactory_vs_mindspeed_reverse_template/npu/proc12360",
		"msprobe/golden/qwen25vl_llamafactory_vs_mindspeed_reverse_template/bench/proc12353"},
}

// corpusPair loads a pair; Source is the corpus-relative path so that
// goldens do not depend on where the corpus lives.
func (p corpusPair) load(tb testing.TB) (npu, bench *printparse.Tree) {
	tb.Helper()
	dir := testkit.Corpus(tb)
	load := func(rel string) *printparse.Tree {
		t, err := printparse.Load(filepath.Join(dir, rel), printparse.Options{Index: -1})
		if err != nil {
			tb.Fatal(err)
		}
		t.Source = rel
		return t
	}
	return load(p.npu), load(p.bench)
}

// lines lists a mapping's effective rules as "key: value" per class.
func lines(m *mapping.Mapping) map[string][]string {
	out := map[string][]string{}
	for c, rs := range m.Effective() {
		for _, r := range rs {
			out[c] = append(out[c], r.Key+": "+r.Value)
		}
	}
	return out
}

// TestGolden drafts every corpus pair with and without templates and
// compares the YAML (both directions) and both reports with the goldens
// under testdata/golden (go test -update rewrites them; review the diff).
func TestGolden(t *testing.T) {
	for _, p := range pairs {
		for _, tmpl := range []string{TemplateNone, TemplateAuto} {
			name := p.name + "__template_" + tmpl
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				npu, bench := p.load(t)
				r, err := Suggest(npu, bench, Options{Template: tmpl})
				if err != nil {
					t.Fatal(err)
				}
				checkSureHasStructure(t, r)
				fwd, err := r.Forward.Mapping.Marshal()
				if err != nil {
					t.Fatal(err)
				}
				rev, err := r.Reverse.Mapping.Marshal()
				if err != nil {
					t.Fatal(err)
				}
				var text, js bytes.Buffer
				if err := WriteReport(&text, r, "text"); err != nil {
					t.Fatal(err)
				}
				if err := WriteReport(&js, r, "json"); err != nil {
					t.Fatal(err)
				}
				dir := filepath.Join("testdata", "golden", name)
				for file, got := range map[string][]byte{
					"layer_mapping.yaml": fwd, "reverse.yaml": rev, "report.txt": text.Bytes(), "report.json": js.Bytes(),
				} {
					testkit.Golden(t, filepath.Join(dir, file), got)
				}
				// Every aligned pair must be reproduced by msprobe's
				// resolver, in both directions, and nothing may be paired
				// that the alignment left alone.
				if r.Forward.Proven != 1 || r.Reverse.Proven != 1 {
					t.Errorf("proven %.3f / reverse %.3f, want 1; sidecar %v", r.Forward.Proven, r.Reverse.Proven, r.Forward.Sidecar)
				}
				for _, c := range r.Forward.Conflicts {
					if !c.Proven {
						t.Errorf("conflict %s not proven: %s", c.Class, c.Resolution)
					}
				}
				// Same input, same output.
				r2, err := Suggest(npu, bench, Options{Template: tmpl})
				if err != nil {
					t.Fatal(err)
				}
				fwd2, _ := r2.Forward.Mapping.Marshal()
				if !bytes.Equal(fwd, fwd2) {
					t.Error("second run drafted a different mapping")
				}
			})
		}
	}
}

// corpusRefused lists the corpus prints the parser must refuse (they are
// deliberately corrupted), with a part of the error each must give. Every
// other corpus print must parse: a parser regression fails TestCorpusSelf
// instead of shrinking its coverage.
var corpusRefused = map[string]string{
	"wrapped/qwen2_5_7b-peft-lora-ms-swift-log-CORRUPTED-missing-lines-diff-marker__swift-sft-notes-anon.txt": ".txt:64: expected a child of base_model.model.model.layers.0-27.self_attn.o_proj.lora_B",
}

// TestCorpusSelf drafts every corpus print against itself: the draft must
// be empty (identity needs no rule), every module paired with itself and
// proven, nothing unmatched, no conflicts.
func TestCorpusSelf(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(testkit.Corpus(t), "prints", "*", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus prints: %v", err)
	}
	for _, f := range files {
		name := filepath.Base(filepath.Dir(f)) + "/" + filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			a, err := printparse.Load(f, printparse.Options{Index: -1})
			if want, refused := corpusRefused[name]; refused {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("got error %v, want one containing %q", err, want)
				}
				return
			}
			if err != nil {
				t.Fatalf("corpus print no longer parses: %v", err)
			}
			n := 0
			a.Walk(func(*printparse.Node) bool { n++; return true })
			if testing.Short() && n > 10000 {
				t.Skipf("-short: %d modules (the full run drafts it)", n)
			}
			b, err := printparse.Load(f, printparse.Options{Index: -1})
			if err != nil {
				t.Fatal(err)
			}
			r, err := Suggest(a, b, Options{Template: TemplateNone})
			if err != nil {
				t.Fatal(err)
			}
			if n := len(r.Forward.Mapping.Rules()); n != 0 {
				y, _ := r.Forward.Mapping.Marshal()
				t.Errorf("%d rules for a tree against itself:\n%s", n, y)
			}
			for _, p := range r.Pairs {
				if p.NPU != p.Bench {
					t.Errorf("%s paired with %s", p.NPU, p.Bench)
				}
			}
			if len(r.Unmatched.NPU)+len(r.Unmatched.Bench) != 0 {
				t.Errorf("unmatched %v / %v", r.Unmatched.NPU, r.Unmatched.Bench)
			}
			if r.Forward.Proven != 1 || len(r.Forward.Conflicts) != 0 {
				t.Errorf("proven %v conflicts %v", r.Forward.Proven, r.Forward.Conflicts)
			}
		})
	}
}

func readCorpus(tb testing.TB, rel string) string {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(testkit.Corpus(tb), rel))
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}
