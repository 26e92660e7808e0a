package cmd

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/layermap/layermap/printparse/testkit"
)

// corpusRel returns the corpus folder relative to the package directory,
// so that goldens hold the same paths on every checkout.
func corpusRel(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(dir, testkit.Corpus(t))
	if err != nil {
		t.Fatal(err)
	}
	return filepath.ToSlash(rel)
}

func TestTreeCommand(t *testing.T) {
	c := corpusRel(t)
	tests := []struct {
		name string
		args []string
		code int
	}{
		{"mindspeed-list", []string{"tree", c + "/prints/mindspeed/qwen2_5_vl_3b-vlmmodel-ddp-list__msprobe-docs-mindspeed-mm-qwen25vl.txt"}, 0},
		{"llamafactory-depth3", []string{"tree", "--depth", "3", c + "/prints/hf/qwen2_5_vl_3b-old-layout-deepspeed__msprobe-docs-llamafactory-qwen25vl.txt"}, 0},
		{"fsdp-log-prefixed-expand", []string{"tree", "--expand", c + "/prints/wrapped/llama_tiny-fsdp1-tp-log-prefixed__saforem2-mmm-readme-anon.txt"}, 0},
		{"rank-prefix-wrapped-lines-warnings", []string{"tree", "--depth", "2", c + "/prints/wrapped/moe_draft-ddp-float16-gptmodel-te-srun-rank-prefix-wrapped-lines__swiss-ai-notes-anon.txt"}, 0},
		{"corrupted-error", []string{"tree", c + "/prints/wrapped/qwen2_5_7b-peft-lora-ms-swift-log-CORRUPTED-missing-lines-diff-marker__swift-sft-notes-anon.txt"}, 2},
		{"msprobe-folder", []string{"tree", c + "/msprobe/golden/qwen25vl_llamafactory_vs_mindspeed_reverse_template/bench"}, 0},
		{"json", []string{"tree", "--json", "testdata/tree/small.txt"}, 0},
		{"json-msprobe-params", []string{"tree", "--json", c + "/msprobe/golden/qwen25vl_llamafactory_vs_mindspeed_reverse_template/npu"}, 0},
		{"two-dumps-needs-index", []string{"tree", "testdata/tree/two-dumps.log"}, 2},
		{"two-dumps-index1", []string{"tree", "--index", "1", "testdata/tree/two-dumps.log"}, 0},
		{"bad-depth", []string{"tree", "--depth", "-1", "testdata/tree/small.txt"}, 2},
		{"json-with-depth", []string{"tree", "--json", "--depth", "1", "testdata/tree/small.txt"}, 2}, // the cut was silently ignored
		{"missing-file", []string{"tree", "testdata/tree/no-such-file.txt"}, 2},
		{"no-args", []string{"tree"}, 2},
		{"stdin", []string{"tree", "-"}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			stdin := ""
			if tc.name == "stdin" {
				stdin = "[rank0]: Net(\n[rank0]:   (fc): Linear(in_features=4, out_features=8, bias=True)\n"
			}
			code := Execute(tc.args, strings.NewReader(stdin), &out, &errb)
			if code != tc.code {
				t.Errorf("exit %d, want %d; stderr: %s", code, tc.code, errb.String())
			}
			if tc.code == 2 && strings.Count(strings.TrimSuffix(errb.String(), "\n"), "\n") > 1 {
				t.Errorf("error is not one line (plus usage hint): %q", errb.String())
			}
			got := "$ layermap " + strings.Join(tc.args, " ") + "\nexit " + strconv.Itoa(code) + "\n--- stdout\n" + out.String() + "--- stderr\n" + errb.String()
			path := filepath.Join("testdata", "tree", tc.name+".golden")
			testkit.Golden(t, path, []byte(got))
		})
	}
}
