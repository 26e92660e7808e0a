package cmd

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/layermap/layermap/cmd/iostreams"
	"github.com/layermap/layermap/mapping"
	"github.com/layermap/layermap/printparse/testkit"
	"github.com/layermap/layermap/templates"
)

func pairA(t *testing.T) (npu, bench string) {
	d := testkit.Corpus(t, "prints")
	return filepath.Join(d, "mindspeed", "qwen2_5_vl_3b-vlmmodel-ddp-list__msprobe-docs-mindspeed-mm-qwen25vl.txt"),
		filepath.Join(d, "hf", "qwen2_5_vl_3b-old-layout-deepspeed__msprobe-docs-llamafactory-qwen25vl.txt")
}

func run(args ...string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	code = Execute(args, strings.NewReader(""), &o, &e)
	return code, o.String(), e.String()
}

func TestSuggestStdout(t *testing.T) {
	npu, bench := pairA(t)
	code, out, errOut := run("suggest", npu, bench)
	if code != ExitOK {
		t.Fatalf("exit %d, stderr %s", code, errOut)
	}
	for _, want := range []string{"TopLayer:\n  0.module: module", "Float16Module:", "module.text_decoder.output_layer: lm_head", "MultimodalProjector:"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	for _, want := range []string{"coverage:", "conflicts (2):", "TransformerLayer: proven by the resolver"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr report lacks %q", want)
		}
	}
}

func TestSuggestFiles(t *testing.T) {
	npu, bench := pairA(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "layer_mapping.yaml")
	pairs := filepath.Join(dir, "pairs.yaml")
	code, stdout, errOut := run("suggest", npu, bench, "-o", out, "--reverse", "--report", "json", "--pairs", pairs, "--template", "none")
	if code != ExitOK {
		t.Fatalf("exit %d, stderr %s", code, errOut)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("report is not JSON: %v\n%s", err, stdout)
	}
	for _, k := range []string{"mapping", "pairs", "unmatched", "conflicts", "reverse", "coverage"} {
		if _, ok := doc[k]; !ok {
			t.Errorf("JSON report lacks %q", k)
		}
	}
	var m map[string]map[string]string
	if err := json.Unmarshal(doc["mapping"], &m); err != nil {
		t.Fatal(err)
	}
	if m["TopLayer"]["0.module"] != "module" {
		t.Errorf("mapping object: TopLayer = %v", m["TopLayer"])
	}
	var ps []struct {
		NPU, Bench string
		Score      float64
	}
	if err := json.Unmarshal(doc["pairs"], &ps); err != nil || len(ps) == 0 || ps[0].NPU != "0.module" || ps[0].Bench != "module" {
		t.Errorf("pairs: %v %v", err, ps[:min(1, len(ps))])
	}
	y, err := os.ReadFile(out)
	if err != nil || !strings.Contains(string(y), "Float16Module:") {
		t.Errorf("-o file: %v\n%s", err, y)
	}
	r, err := os.ReadFile(filepath.Join(dir, "layer_mapping_reverse.yaml"))
	if err != nil || !strings.Contains(string(r), "Qwen2_5_VLForConditionalGeneration:") {
		t.Errorf("reverse file: %v\n%s", err, r)
	}
	// every 1:1 pair has its line; the sidecar holds the N:1 groups
	// (16 + 8 fused gate/up, 8 fused qkv), in both directions
	for _, f := range []string{pairs, filepath.Join(dir, "pairs_reverse.yaml")} {
		sc, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		got, err := mapping.ParsePairs(sc, f)
		n := 0
		for _, p := range got {
			if p.Group() {
				n++
			}
		}
		if err != nil || len(got) != 32 || n != 32 {
			t.Errorf("sidecar %s: %d pairs, %d groups, %v\n%s", f, len(got), n, err, sc)
		}
	}
	left, _ := filepath.Glob(filepath.Join(dir, ".*tmp*"))
	if len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

func TestSuggestBadInput(t *testing.T) {
	npu, bench := pairA(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "lm.yaml")
	notADump := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(notADump, []byte("hello\nworld\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	folderYAML := filepath.Join(dir, "drafts.yaml")
	if err := os.Mkdir(folderYAML, 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"missing file", []string{npu, filepath.Join(dir, "nope.txt"), "-o", out}, "nope.txt"},
		{"not a dump", []string{notADump, bench, "-o", out}, "notes.txt:1: expected"},
		{"suffix", []string{npu, bench, "-o", filepath.Join(dir, "lm.yml")}, "must end in .yaml"},
		{"report format", []string{npu, bench, "-o", out, "--report", "xml"}, "--report must be text or json"},
		{"template", []string{npu, bench, "-o", out, "--template", "bogus"}, "template \"bogus\""},
		// the names once, and the two keywords too (the list was printed twice, without them)
		{"template case", []string{npu, bench, "-o", out, "--template", "AUTO"},
			`layermap: no template "AUTO" (known: ` + strings.Join(templates.Names(), ", ") + "), or auto (pick by class names) or none\n"},
		{"reverse to stdout", []string{npu, bench, "--reverse"}, "--reverse needs -O"},
		{"-O alone", []string{npu, bench, "-O", filepath.Join(dir, "r.yaml")}, "-O needs --reverse"},
		{"one arg", []string{npu}, "suggest: expected two inputs, NPU and BENCH (print(model) text files or msprobe dump folders), found 1 arguments"},
		{"three args", []string{npu, bench, bench}, "found 3 arguments"},
		// -o and -O on one file: the reverse draft overwrote the forward one, exit 0
		{"-o is -O", []string{npu, bench, "-o", out, "--reverse", "-O", out}, "-o and -O both write " + out + ": expected different files"},
		{"-o is -O, spelled differently", []string{npu, bench, "-o", out, "--reverse", "-O", filepath.Join(dir, ".", "lm.yaml")}, "-o and -O both write"},
		{"--pairs is -o", []string{npu, bench, "-o", out, "--pairs", out}, "-o and --pairs both write"},
		{"reverse sidecar is -O", []string{npu, bench, "-o", out, "--reverse", "-O", filepath.Join(dir, "p_reverse.yaml"), "--pairs", filepath.Join(dir, "p.yaml")},
			"-O and --pairs (reverse sidecar) both write"},
		{"-o is a folder", []string{npu, bench, "-o", folderYAML}, "-o " + folderYAML + ": expected a file name, found a folder"},
		// suggest has no --index: the several-dumps error names its own flags
		{"two dumps on the bench side", []string{npu, "testdata/tree/two-dumps.log", "-o", out}, "pass --index-bench N (0-based) to pick one"},
		{"index out of range", []string{"testdata/tree/two-dumps.log", bench, "-o", out, "--index-npu", "5"}, "expected dump #5 (--index-npu is 0-based), found 2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := run(append([]string{"suggest"}, tc.args...)...)
			if code != ExitBadInput {
				t.Errorf("exit %d, want %d; stderr %s", code, ExitBadInput, errOut)
			}
			if !strings.Contains(errOut, tc.want) {
				t.Errorf("stderr %q lacks %q", errOut, tc.want)
			}
			if lines := strings.Count(strings.TrimSpace(errOut), "\n"); lines > 1 {
				t.Errorf("error is %d lines, want one:\n%s", lines+1, errOut)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("%s written on bad input", out)
			}
		})
	}
}

// A template forced with --template NAME that does not fit the trees is
// named on stderr (its lines shaped nothing, yet the header said "Template
// prior: NAME").
func TestSuggestTemplateFit(t *testing.T) {
	npu, bench := pairA(t)
	out := filepath.Join(t.TempDir(), "lm.yaml")
	tests := []struct {
		name, template, want string // want: the warning line, "" for none
	}{
		{"fits", "qwen2.5-vl_mindspeed-mm_to_llamafactory-expert", ""},
		{"fits, named with .yaml", "qwen2.5-vl_mindspeed-mm_to_llamafactory-expert.yaml", ""},
		{"auto", "auto", ""},
		{"none", "none", ""},
		{"wrong direction", "qwen2.5-vl_llamafactory_to_mindspeed-mm-expert",
			"layermap: warning: --template qwen2.5-vl_llamafactory_to_mindspeed-mm-expert does not fit these trees (fewer than 50% of its lines apply with " + npu + " as NPU); it fits with NPU and BENCH swapped\n"},
		{"other model", "qwen2.5_mindspeed-llm_to_llamafactory",
			"layermap: warning: --template qwen2.5_mindspeed-llm_to_llamafactory does not fit these trees (fewer than 50% of its lines apply with " + npu + " as NPU); --template auto would use qwen2.5-vl_mindspeed-mm_to_llamafactory-expert\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := run("suggest", npu, bench, "-o", out, "--template", tc.template)
			if code != ExitOK {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			var got string
			for _, l := range strings.SplitAfter(errOut, "\n") {
				if strings.HasPrefix(l, "layermap: warning: --template") {
					got += l
				}
			}
			if got != tc.want {
				t.Errorf("warning %q, want %q", got, tc.want)
			}
		})
	}
}

// Outputs are all or nothing: when one cannot be written, none of the
// others is left behind (a bad -o used to leave -O's and --pairs' files),
// and a missing output folder is an error naming it (never created).
func TestSuggestOutputsAllOrNothing(t *testing.T) {
	npu, bench := pairA(t)
	tests := []struct {
		name   string
		args   func(dir string) []string
		code   int
		stderr string   // with DIR for the folder; "" for none
		files  []string // what the folder holds afterwards
	}{
		{"-o under a file", func(d string) []string {
			return []string{"-o", filepath.Join(d, "blocker", "x.yaml"), "--reverse", "-O", filepath.Join(d, "r.yaml"), "--pairs", filepath.Join(d, "p.yaml")}
		}, ExitBadInput, "layermap: DIR/blocker: expected an existing folder for x.yaml, found a file\n", []string{"blocker"}},
		{"--pairs under a file", func(d string) []string {
			return []string{"-o", filepath.Join(d, "x.yaml"), "--pairs", filepath.Join(d, "blocker", "p.yaml")}
		}, ExitBadInput, "layermap: DIR/blocker: expected an existing folder for p.yaml, found a file\n", []string{"blocker"}},
		{"missing folder", func(d string) []string {
			return []string{"-o", filepath.Join(d, "new", "sub", "x.yaml"), "--reverse", "--pairs", filepath.Join(d, "p.yaml")}
		}, ExitBadInput, "layermap: DIR/new/sub: expected an existing folder for x.yaml, found nothing there\n", []string{"blocker"}},
		{"all written", func(d string) []string {
			return []string{"-o", filepath.Join(d, "x.yaml"), "--reverse", "--pairs", filepath.Join(d, "p.yaml")}
		}, ExitOK, "", []string{"blocker", "p.yaml", "p_reverse.yaml", "x.yaml", "x_reverse.yaml"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "blocker"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			code, _, errOut := run(append([]string{"suggest", npu, bench}, tc.args(dir)...)...)
			if code != tc.code {
				t.Errorf("exit %d, want %d: %s", code, tc.code, errOut)
			}
			if want := strings.ReplaceAll(tc.stderr, "DIR", dir); tc.stderr != "" && errOut != want {
				t.Errorf("stderr %q, want %q", errOut, want)
			}
			ents, _ := os.ReadDir(dir)
			var got []string
			for _, e := range ents {
				got = append(got, e.Name())
			}
			if strings.Join(got, " ") != strings.Join(tc.files, " ") {
				t.Errorf("folder holds %v, want %v", got, tc.files)
			}
		})
	}
}

// The "aligning ..." status line is for terminals only: stderr redirected
// to a file (an *os.File that is no terminal) gets none of it.
func TestSuggestNoProgressOffTerminal(t *testing.T) {
	npu, bench := pairA(t)
	dir := t.TempDir()
	errFile, err := os.Create(filepath.Join(dir, "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer errFile.Close()
	ios := &iostreams.IOStreams{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: errFile} // TTY detected, not set
	if code := Run(ios, []string{"suggest", npu, bench, "-o", filepath.Join(dir, "lm.yaml")}); code != ExitOK {
		t.Fatalf("exit %d", code)
	}
	got, _ := os.ReadFile(errFile.Name())
	if len(got) != 0 {
		t.Errorf("stderr to a file holds %q, want nothing", got)
	}
}

// On a terminal the status line is shown while aligning and erased after.
func TestSuggestProgressOnTerminal(t *testing.T) {
	npu, bench := pairA(t)
	ios, _, _, errOut := iostreams.Test()
	ios.SetStderrTTY(true)
	if code := Run(ios, []string{"suggest", npu, bench, "-o", filepath.Join(t.TempDir(), "lm.yaml")}); code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	want := "suggest: aligning 433 NPU and 307 bench modules ...\r\033[K"
	if !strings.HasPrefix(errOut.String(), want) {
		t.Errorf("stderr starts %q, want %q", errOut.String()[:min(errOut.Len(), 80)], want)
	}
}
