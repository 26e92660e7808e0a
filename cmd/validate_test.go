package cmd

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/layermap/layermap/printparse/testkit"
)

func execValidate(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := Execute(append([]string{"validate"}, args...), strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func TestValidateCommand(t *testing.T) {
	c, root := testkit.Corpus(t), testkit.Root(t)
	npu := filepath.Join(c, "prints/mindspeed/qwen2_5_vl_3b-vlmmodel-ddp-list__msprobe-docs-mindspeed-mm-qwen25vl.txt")
	bench := filepath.Join(c, "prints/hf/qwen2_5_vl_3b-old-layout-deepspeed__msprobe-docs-llamafactory-qwen25vl.txt")
	seed := filepath.Join(root, "mapping/testdata/seed")
	ms2hf := filepath.Join(seed, "qwen2.5-vl_mindspeed-mm_to_llamafactory.yaml")
	hf2ms := filepath.Join(seed, "qwen2.5-vl_llamafactory_to_mindspeed-mm.yaml")
	golden := filepath.Join(c, "msprobe/golden/qwen25vl_llamafactory_vs_mindspeed_reverse_template")
	dir := t.TempDir()
	write := func(name, text string) string { return testkit.WriteFile(t, dir, name, text) }
	broken := write("broken.yaml", "TopLayer:\n  0.module: [\n")
	cutDump := filepath.Join(dir, "cut")
	os.Mkdir(cutDump, 0o755)
	os.WriteFile(filepath.Join(cutDump, "dump.json"), []byte("{\n \"task\": \"statis"), 0o644)
	warnOnly := write("warn.yaml", "TopLayer:\n  0.module: module\nFloat16Module:\n  module.image_encoder: visual(x)\n")
	tests := []struct {
		name    string
		args    []string
		code    int
		outHas  []string
		errHas  string
		errLine bool // stderr is exactly one line
	}{
		{"conflict fails", []string{ms2hf, "--npu", npu, "--bench", bench}, 1,
			[]string{"2 errors, 0 warnings, 1 info; coverage 190/429 (44.3%)", "error LM105: class TransformerLayer", "0.module.module.text_decoder.decoder.layers.{0-7}.input_layernorm  RMSNorm"}, "", false},
		{"clean direction passes", []string{hf2ms, "--npu", bench, "--bench", npu}, 0, []string{"0 errors, 0 warnings, 6 info; coverage 207/304 (68.1%)"}, "", false},
		{"coverage gate", []string{hf2ms, "--npu", bench, "--bench", npu, "--min-coverage", "70%"}, 1, []string{"error LM106: coverage 207/304 (68.1%) is below the required 70.0%"}, "", false},
		{"coverage gate met", []string{hf2ms, "--npu", bench, "--bench", npu, "--min-coverage", "0.6"}, 0, nil, "", false},
		{"warning passes", []string{warnOnly, "--npu", npu, "--bench", bench}, 0, []string{"warning LM005"}, "", false},
		{"warning fails with strict", []string{warnOnly, "--npu", npu, "--bench", bench, "--strict"}, 1, nil, "", false},
		{"github format", []string{ms2hf, "--npu", npu, "--bench", bench, "--format", "github"}, 1,
			[]string{"::error file=" + ms2hf + ",line=15,col=1,title=LM105 conflict::class TransformerLayer"}, "", false},
		// Dump folders: module and entry coverage equal the non-N/A lines of
		// msprobe's own api_mapping.yaml for these dumps (corpus PROVENANCE.md).
		{"dump folders", []string{filepath.Join(golden, "layer_mapping.yaml"), "--npu", filepath.Join(golden, "npu/proc12360"), "--bench", filepath.Join(golden, "bench/proc12353")}, 0,
			[]string{"coverage 47/68 (69.1%) of the NPU modules msprobe dumps (paired by its resolver with this mapping), 141/194 (72.7%) of NPU dump entries"}, "", false},
		{"broken yaml", []string{broken, "--npu", npu, "--bench", bench}, 2, nil, broken + ":2: invalid YAML", true},
		{"missing npu file", []string{ms2hf, "--npu", filepath.Join(dir, "nope.txt"), "--bench", bench}, 2, nil, "nope.txt: expected a print(model) text file or an msprobe dump folder, found no such file or folder", true},
		{"missing flags", []string{ms2hf}, 2, nil, "needs both --npu and --bench", true},
		// the file first, no "--npu: " in front of "file:line: expected"
		{"not a dump", []string{ms2hf, "--npu", ms2hf, "--bench", bench}, 2, nil, "layermap: " + ms2hf + ":1: expected a print(model) dump", true},
		{"cut dump.json", []string{ms2hf, "--npu", npu, "--bench", cutDump}, 2, nil, "layermap: " + filepath.Join(cutDump, "dump.json") + ":2: expected", true},
		{"no mapping", []string{"--npu", npu, "--bench", bench}, 2, nil,
			"layermap: validate: expected one MAPPING (a layer_mapping.yaml) and the structures as --npu and --bench, found 0 arguments", false},
		{"two mappings", []string{ms2hf, hf2ms, "--npu", npu, "--bench", bench}, 2, nil, "found 2 arguments", false},
		// validate has no --index: the several-dumps error names its own flags
		{"two dumps on the bench side", []string{ms2hf, "--npu", npu, "--bench", "testdata/tree/two-dumps.log"}, 2, nil,
			"pass --index-bench N (0-based) to pick one", true},
		{"index out of range", []string{ms2hf, "--npu", "testdata/tree/two-dumps.log", "--index-npu", "2", "--bench", bench}, 2, nil,
			"expected dump #2 (--index-npu is 0-based), found 2", true},
		{"negative index", []string{ms2hf, "--npu", npu, "--bench", bench, "--index-bench", "-3"}, 2, nil,
			"--index-bench must be a 0-based dump number, got -3", true},
		{"bad format", []string{ms2hf, "--npu", npu, "--bench", bench, "--format", "xml"}, 2, nil, "--format must be text, json or github", true},
		{"bad coverage", []string{ms2hf, "--npu", npu, "--bench", bench, "--min-coverage", "1.5"}, 2, nil, "--min-coverage", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := execValidate(tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, out, errOut)
			}
			for _, s := range tc.outHas {
				if !strings.Contains(out, s) {
					t.Errorf("stdout lacks %q:\n%s", s, out)
				}
			}
			if tc.errHas != "" && !strings.Contains(errOut, tc.errHas) {
				t.Errorf("stderr %q lacks %q", errOut, tc.errHas)
			}
			if tc.errLine && strings.Count(strings.TrimSuffix(errOut, "\n"), "\n") != 0 {
				t.Errorf("stderr is not one line: %q", errOut)
			}
			if tc.code == 2 && out != "" {
				t.Errorf("unusable input wrote to stdout: %q", out)
			}
		})
	}
}

func TestValidateJSON(t *testing.T) {
	c, root := testkit.Corpus(t), testkit.Root(t)
	npu := filepath.Join(c, "prints/mindspeed/qwen2_5_vl_3b-vlmmodel-ddp-list__msprobe-docs-mindspeed-mm-qwen25vl.txt")
	bench := filepath.Join(c, "prints/hf/qwen2_5_vl_3b-old-layout-deepspeed__msprobe-docs-llamafactory-qwen25vl.txt")
	code, out, _ := execValidate(filepath.Join(root, "mapping/testdata/seed/dup_transformerlayer.yaml"), "--npu", npu, "--bench", bench, "--format", "json")
	if code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	var doc struct {
		Summary  struct{ Errors int }
		Findings []struct {
			Code    string
			Line    int
			Related []struct{ Line int }
		}
		Coverage  struct{ Matched, Total int }
		Unmatched struct{ NPU, Bench []struct{ Path string } }
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	f := doc.Findings[0]
	if f.Code != "LM001" || f.Line != 41 || len(f.Related) != 1 || f.Related[0].Line != 15 {
		t.Errorf("first finding %+v, want LM001 at 41 related to 15", f)
	}
	if doc.Coverage.Total != 429 || len(doc.Unmatched.NPU) == 0 || len(doc.Unmatched.Bench) == 0 {
		t.Errorf("coverage %+v, unmatched %d/%d", doc.Coverage, len(doc.Unmatched.NPU), len(doc.Unmatched.Bench))
	}
}
