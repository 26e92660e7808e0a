package printparse

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/layermap/layermap/printparse/scan"
	"github.com/layermap/layermap/printparse/source"
	"github.com/layermap/layermap/printparse/testkit"
)

var provRow = regexp.MustCompile("^\\| *\\d+ *\\| *`([^`]+)` *\\|.*\\| *([^|]*?) *\\|$")

// provenance reads the "clean" column of prints/PROVENANCE.md.
func provenance(t *testing.T, prints string) map[string]string {
	data, err := os.ReadFile(filepath.Join(prints, "PROVENANCE.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, l := range strings.Split(string(data), "\n") {
		if m := provRow.FindStringSubmatch(l); m != nil {
			out[m[1]] = m[2]
		}
	}
	if len(out) < 30 {
		t.Fatalf("PROVENANCE.md: read only %d file rows", len(out))
	}
	return out
}

// cleanWarnings lists the warnings expected on files PROVENANCE calls
// clean: authors' elisions, which parse exactly but leave subtrees unknown.
var cleanWarnings = map[string][]string{
	"hf/llama_7b-AUTHOR-ELIDED-handwritten-extra-repr__chinese-llm-book-md-anon.txt": {
		"6: `...忽略` stands for lines left out of the dump: the subtree of model.layers.0-31 (LlamaDecoderLayer) is incomplete",
	},
	"megatron/gpt2_legacy-megatron-deepspeed-flops-profiler-extra-repr-elided__deepspeed-docs-tutorials-flops-profiler.txt": {
		"35: `...` stands for lines left out of the dump: the subtree of language_model.transformer.layers (ModuleList) is incomplete",
		"36: `ParallelTransformerLayerPart2(...)`: the body of language_model.transformer.layers.23 (ParallelTransformerLayerPart2) was left out",
	},
}

// irregular says, per file PROVENANCE does not call clean, what the parser
// must do and why. Lenient files also have a golden rendering under
// testdata/corpus/ (reviewed by hand) so that the repaired tree is pinned.
var irregular = map[string]struct {
	lenient  bool     // parses with warnings (else: a *source.Error)
	why      string   // the reason for that outcome
	warnings []string // "line: text" prefixes, one per warning, in order
	errText  string   // for errors: the whole message after "file:"
}{
	"hf/qwen2_5_vl_3b-new-layout-1-layer-missing-final-paren__quic-efficient-transformers-test_subfunction_vlm.txt": {
		lenient: true, why: "only the root's final `)` is missing and every line is indented as PyTorch does, so closing the root at the end is unambiguous",
		warnings: []string{"58: the input ends without the closing `)` of the root Qwen2_5_VLForConditionalGeneration from line 1; assumed it ends at line 58"},
	},
	"hf/qwen2_vl_2b-new-layout-MANGLED-no-indent-blank-lines__chat-notes-md-anon.txt": {
		lenient: true, why: "indentation is stripped, but the parentheses balance, and they alone define the structure",
		warnings: []string{
			"2: ignored 57 blank lines inside the dump",
			"3: indentation is not 2 spaces per level (here column 0, expected 2; 56 such lines); the structure was read from the parentheses",
		},
	},
	"megatron/mixtral_like-moe-LOOKALIKE-custom-repr-with-comments__mbridge-memory_estimator-README.txt": {
		lenient: true, why: "mbridge's printer is not nn.Module.__repr__, but apart from its /* */ annotations it prints the same module names and nesting; the warning says so",
		warnings: []string{"1: this is not nn.Module.__repr__ output"},
	},
	"nemo/geneformer-nemo1-bertmodel-legacy-reindented__bionemo-framework-test_model-docstring.txt": {
		lenient: true, why: "re-indented by the author; the parentheses balance and define the structure",
		warnings: []string{"2: indentation is not 2 spaces per level (here column 0, expected 2; 18 such lines)"},
	},
	"nemo/geneformer-nemo2-megatronbiobertmodel-mcore-reindented__bionemo-framework-test_model-docstring.txt": {
		lenient: true, why: "re-indented by the author; the parentheses balance and define the structure",
		warnings: []string{"2: indentation is not 2 spaces per level (here column 0, expected 2; 17 such lines)"},
	},
	"wrapped/chatglm3_6b-peft-old-lora-Linear-extra-repr-line-plus-children-TRUNCATED__lora-notes-md-anon.txt": {
		lenient: true, why: "the author's bare `...` stands for omitted lines; the indentation of the next line says where the dump resumes (transformer.output_layer), so the nodes in between are closed and the elision reported",
		warnings: []string{"26: `...` stands for lines left out of the dump: the subtree of base_model.model.transformer.encoder.layers.0-27.self_attention.query_key_value (Linear) is incomplete; judging by the indentation of line 27, query_key_value (Linear), self_attention (SelfAttention), 0-27 (GLMBlock), layers (ModuleList), encoder (GLMTransformer) end inside the omitted lines"},
	},
	"wrapped/connectome_odernn-optimizedmodule-custom-repr-nested-parens__connectome-forward-notebook-md-anon.txt": {
		lenient: true, why: "AutoDiffAdjoint's custom repr nests module reprs in its arguments; it is kept as one leaf by paren balance and the warning names the modules left out",
		warnings: []string{"7: solver._orig_mod (AutoDiffAdjoint) prints a custom repr over lines 7-11, with module reprs inside its arguments; it is kept as one leaf and the modules inside it (term, term) are not in the tree"},
	},
	"wrapped/moe_draft-ddp-float16-gptmodel-te-srun-rank-prefix-wrapped-lines__swiss-ai-notes-anon.txt": {
		lenient: true, why: "the srun `0: ` tag repeats on every line and is removed; the two lines cut mid-token continue at column 0 after the tag, so joining them is unambiguous",
		warnings: []string{
			"24: joined this line to line 23: the line looks cut by a terminal (`TELayerNormColumnParallelLi` + `near(`)",
			"48: joined this line to line 47: the line looks cut by a terminal (`out_features=13107` + `2,`)",
		},
	},
	"wrapped/qwen2_5_7b-peft-lora-ms-swift-log-CORRUPTED-missing-lines-diff-marker__swift-sft-notes-anon.txt": {
		why:     "lines are missing mid-dump (the end of o_proj, mlp( and more): the parentheses no longer balance and line 64 sits left of where its parent's children go, so any tree would be a guess",
		errText: "64: expected a child of base_model.model.model.layers.0-27.self_attn.o_proj.lora_B (ModuleDict) or the `)` closing it at column 18 (lines missing from the dump?), found `(down_proj): lora.Linear(` at column 14",
	},
}

func TestCorpusPrints(t *testing.T) {
	prints := filepath.Join(testkit.Corpus(t), "prints")
	prov := provenance(t, prints)
	var files []string
	err := filepath.WalkDir(prints, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".txt") {
			rel, _ := filepath.Rel(prints, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 30 {
		t.Fatalf("found only %d corpus prints", len(files))
	}
	for name := range irregular {
		if !slices.Contains(files, name) {
			t.Errorf("irregular table names %s, which is not in the corpus", name)
		}
	}
	for _, name := range files {
		t.Run(name, func(t *testing.T) {
			clean, ok := prov[name]
			if !ok {
				t.Fatalf("not listed in PROVENANCE.md")
			}
			path := filepath.Join(prints, name)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			tree, perr := ParseText(data, name, Options{Index: -1})
			irr, isIrr := irregular[name]
			if strings.HasPrefix(clean, "yes") {
				if isIrr {
					t.Fatalf("clean (%q) but in the irregular table", clean)
				}
				if perr != nil {
					t.Fatal(perr)
				}
				checkWarnings(t, tree, cleanWarnings[name])
				checkReproduces(t, data, tree)
				checkExpandRoundTrip(t, tree)
				return
			}
			if !isIrr {
				t.Fatalf("PROVENANCE says clean=%q; add the file to the irregular table with its expected outcome", clean)
			}
			if !irr.lenient {
				var pe *source.Error
				if !errors.As(perr, &pe) {
					t.Fatalf("want a *source.Error (%s), got tree=%v err=%v", irr.why, tree != nil, perr)
				}
				if got := strings.TrimPrefix(perr.Error(), name+":"); got != irr.errText {
					t.Errorf("error\n got %s\nwant %s", got, irr.errText)
				}
				return
			}
			if perr != nil {
				t.Fatalf("want a lenient parse (%s), got %v", irr.why, perr)
			}
			checkWarnings(t, tree, irr.warnings)
			checkExpandRoundTrip(t, tree)
			var out bytes.Buffer
			out.WriteString("# " + irr.why + "\n")
			for _, w := range tree.Warnings {
				out.WriteString("# warning: " + w.Msg + "\n")
			}
			if err := Render(&out, tree, RenderOptions{}); err != nil {
				t.Fatal(err)
			}
			testkit.Golden(t, filepath.Join("testdata", "corpus", strings.ReplaceAll(name, "/", "__")), out.Bytes())
		})
	}
}

func checkWarnings(t *testing.T, tree *Tree, want []string) {
	t.Helper()
	if len(tree.Warnings) != len(want) {
		t.Errorf("%d warnings, want %d:", len(tree.Warnings), len(want))
		for _, w := range tree.Warnings {
			t.Logf("  %d: %s", w.Line, w.Msg)
		}
		return
	}
	for i, w := range tree.Warnings {
		got := strings.TrimSpace(strings.Join([]string{itoa(w.Line), w.Msg}, ": "))
		if !strings.HasPrefix(got, want[i]) {
			t.Errorf("warning %d\n got %s\nwant %s...", i, got, want[i])
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// checkReproduces compares Render's output with the dump's own lines: the
// first from where the root class (or "[") starts, the rest as they are,
// trailing spaces removed.
func checkReproduces(t *testing.T, data []byte, tree *Tree) {
	t.Helper()
	var out bytes.Buffer
	if err := Render(&out, tree, RenderOptions{}); err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	src := scan.Lines(string(data)).Strings()
	start := tree.Line - 1
	if start < 0 || start+len(got) > len(src) {
		t.Fatalf("dump at line %d with %d rendered lines does not fit the %d-line file", tree.Line, len(got), len(src))
	}
	for i, g := range got {
		s := scan.Rstrip(src[start+i])
		if i == 0 {
			if !strings.HasSuffix(s, g) {
				t.Fatalf("line %d: %q does not end with rendered %q", start+1, s, g)
			}
			continue
		}
		if s != g {
			t.Fatalf("line %d differs:\n  dump   %q\n  render %q", start+i+1, s, g)
		}
	}
	// The dump ends where the rendering ends: nothing but blank lines or
	// non-dump text follows.
	if n := start + len(got); n < len(src) && strings.HasPrefix(strings.TrimSpace(src[n]), "(") {
		t.Errorf("line %d after the rendered dump looks like part of it: %q", n+1, src[n])
	}
}

// checkExpandRoundTrip checks that the --expand rendering, where every
// repeat member is printed with its own index, reads back to the same paths
// and classes: expanding "(0-27): 28 x" named the members as PyTorch would
// have printed them one by one.
func checkExpandRoundTrip(t *testing.T, tree *Tree) {
	t.Helper()
	var out bytes.Buffer
	if err := Render(&out, tree, RenderOptions{Expand: true}); err != nil {
		t.Fatal(err)
	}
	again, err := ParseText(out.Bytes(), "expanded", Options{Index: -1})
	if err != nil {
		t.Fatalf("expanded rendering does not parse: %v", err)
	}
	a, b := outline(tree), outline(again)
	a = regexp.MustCompile(` \*\d+-\d+`).ReplaceAllString(a, "")
	if a != b {
		t.Errorf("expanded rendering reads back differently:\n%s", testkit.FirstDiff(a, b))
	}
}
