package cmd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/layermap/layermap/printparse/testkit"
)

func execCompare(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Execute(append([]string{"compare"}, args...), strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func TestCompareCommand(t *testing.T) {
	g := testkit.Corpus(t, "msprobe", "golden")
	mr := filepath.Join(g, "synth_multirank")
	cjson := filepath.Join(t.TempDir(), "compare.json")
	os.WriteFile(cjson, []byte(`{"npu_path": "`+filepath.Join(mr, "npu/step0/rank0/dump.json")+`",
 "bench_path": "`+filepath.Join(mr, "bench/step0/rank0/dump.json")+`", "stack_path": "`+filepath.Join(mr, "npu/step0/rank0/stack.json")+`", "is_print_compare_log": true}`), 0o644)
	badJSON := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(badJSON, []byte("{\n \"npu_path\": 1,\n"), 0o644)
	md5 := filepath.Join(g, "synth_md5")
	empty := filepath.Join(t.TempDir(), "dump.json")
	os.WriteFile(empty, []byte(`{"task": "statistics", "level": "L1", "framework": "pytorch", "dump_data_dir": null, "data": {}}`), 0o644)
	broken := filepath.Join(t.TempDir(), "dump.json")
	os.WriteFile(broken, []byte("{\n \"task\": \"statistics\",\n \"level\": \"L1\",\n \"data\": {\n  \"Functional.relu.0.forward\": {\n   \"input_args\": [1,\n"), 0o644)
	brokenStack := t.TempDir()
	for _, f := range []string{"dump.json", "construct.json"} {
		b, _ := os.ReadFile(filepath.Join(md5, "npu", f))
		os.WriteFile(filepath.Join(brokenStack, f), b, 0o644)
	}
	os.WriteFile(filepath.Join(brokenStack, "stack.json"), []byte(`{"0": [["Functional.linear.0.forward"], ["File x, line 1, in f"`), 0o644)
	escape := t.TempDir() // a tensor dump whose first data_name leaves dump_tensor_data
	for _, side := range []string{"npu", "bench"} {
		b, _ := os.ReadFile(filepath.Join(g, "synth_tensor_pt", side, "dump.json"))
		b = bytes.Replace(b, []byte(`"data_name": "Functional.linear.0.forward.input.0.pt"`), []byte(`"data_name": "../../../etc/passwd"`), 1)
		os.MkdirAll(filepath.Join(escape, side), 0o755)
		os.WriteFile(filepath.Join(escape, side, "dump.json"), b, 0o644)
	}
	// a bench dump whose data_name deep in the file (line 248, the
	// fourth entry) leaves dump_tensor_data, under its row's name: the
	// bench side, read by offset, reports it at its line in the file
	benchEscape := t.TempDir()
	for _, side := range []string{"npu", "bench"} {
		b, _ := os.ReadFile(filepath.Join(g, "synth_tensor_pt", side, "dump.json"))
		if side == "bench" {
			b = bytes.Replace(b, []byte(`"data_name": "Tensor.mixed.0.forward.output.3.pt"`), []byte(`"data_name": "Tensor.mixed.0.forward.output.3./etc/passwd"`), 1)
		}
		os.MkdirAll(filepath.Join(benchEscape, side), 0o755)
		os.WriteFile(filepath.Join(benchEscape, side, "dump.json"), b, 0o644)
	}
	noPairs := filepath.Join(t.TempDir(), "pairs.yaml")
	os.WriteFile(noPairs, []byte("- npu: nosuch.module\n  bench: other.module\n"), 0o644)
	downPair := filepath.Join(t.TempDir(), "pairs.yaml")
	os.WriteFile(downPair, []byte("- npu: module.model.layers.0.mlp.down_proj\n  bench: 0.module.module.text_decoder.decoder.layers.0.mlp.linear_fc2\n"), 0o644)
	noRule := filepath.Join(t.TempDir(), "no_rule.yaml")
	os.WriteFile(noRule, []byte("NoSuchClass:\n  foo: bar\n"), 0o644)
	demo := filepath.Join(testkit.Root(t), "testdata/demo/dumps")
	cjson2 := func(name, body string) string {
		p := filepath.Join(t.TempDir(), name)
		os.WriteFile(p, []byte(body), 0o644)
		return p
	}
	cjList, cjEmpty := cjson2("list.json", "[]\n"), cjson2("empty.json", "")
	cjNum := cjson2("num.json", "{\n \"npu_path\": \"a\",\n \"bench_path\": 2\n}\n")
	cjFlag := cjson2("flag.json", "{\"npu_path\": \"a\", \"bench_path\": \"b\", \"is_print_compare_log\": \"yes\"}")
	for _, c := range []struct {
		name     string
		args     []string
		code     int
		files    []string // expected output file name prefixes
		stdout   []string // substrings
		stderr   string
		jsonOut  bool
		outFixed bool // args hold -o already
	}{
		{name: "multirank", args: []string{"-tp", filepath.Join(mr, "npu/step0"), "-gp", filepath.Join(mr, "bench/step0")},
			code: 1, files: []string{"compare_result_rank0_", "compare_result_rank1_"},
			stdout: []string{"compare rank0: statistics mode, 18 rows", "result: 11 pass, 1 warning, 6 error",
				"first divergence, forward, root cause (API): Functional.relu.0.forward",
				// rank1: its inputs differ by 0.13%, its outputs by far more: it amplifies, a root cause
				"first divergence, forward, root cause (API): Functional.linear.0.forward", "2.58e+03 times as much (at least 10"}},
		{name: "legacy json", args: []string{"-i", cjson, "--format", "json"}, code: 1, jsonOut: true,
			files: []string{"compare_result_2"}},
		// a legacy msprobe command line as is: -s and -c change nothing, -f is
		// fuzzy match, -hl the highlighted xlsx (was "unknown shorthand flag: 'l' in -l")
		{name: "legacy flags", args: []string{"-i", cjson, "-s", "-c", "-f", "-hl"}, code: 1,
			files: []string{"compare_result_2"}, stdout: []string{".xlsx", "matched by: fuzzy"}},
		{name: "md5 xlsx", args: []string{"--target_path", filepath.Join(md5, "npu/dump.json"), "-gp=" + filepath.Join(md5, "bench/dump.json"), "--xlsx"},
			code: 1, files: []string{"compare_result_"}, stdout: []string{"md5 mode"}},
		{name: "missing", args: []string{"-tp", "/nonexistent/dump.json", "-gp", filepath.Join(md5, "bench/dump.json")}, code: 2,
			stderr: "/nonexistent/dump.json"},
		{name: "malformed dump", args: []string{"-tp", broken, "-gp", filepath.Join(md5, "bench/dump.json")}, code: 2,
			stderr: "layermap: " + broken + ":7: expected a value, found end of file (truncated?)\n"},
		{name: "malformed stack.json", args: []string{"-tp", brokenStack, "-gp", filepath.Join(md5, "bench")}, code: 2,
			stderr: "layermap: " + filepath.Join(brokenStack, "stack.json") + ":1: expected"},
		{name: "empty data", args: []string{"-tp", empty, "-gp", filepath.Join(g, "synth_statistics/bench/dump.json")}, code: 2,
			stdout: []string{"no valid data found"}, stderr: "no valid data to compare"},
		{name: "no golden", args: []string{"-tp", filepath.Join(md5, "npu/dump.json")}, code: 2, stderr: "expected both -tp"},
		// the flag as typed (was "flag needs an argument: --golden_path")
		{name: "-gp without value", args: []string{"-tp", filepath.Join(md5, "npu"), "-o", "x", "-gp"}, outFixed: true, code: 2, stderr: "layermap: flag needs an argument: -gp\n"},
		{name: "bad compare.json", args: []string{"-i", badJSON}, code: 2, stderr: "bad.json:"},
		// no Go type names ("cannot unmarshal ... cmd.compareJSON") in these
		{name: "compare.json list", args: []string{"-i", cjList}, code: 2, stderr: "layermap: " + cjList + ":1: expected a JSON object with npu_path and bench_path, found a JSON array\n"},
		{name: "compare.json empty", args: []string{"-i", cjEmpty}, code: 2, stderr: "layermap: " + cjEmpty + ":1: expected a JSON object with npu_path and bench_path, found an empty file\n"},
		{name: "compare.json number path", args: []string{"-i", cjNum}, code: 2, stderr: "layermap: " + cjNum + ":3: expected a path (string) for bench_path, found a JSON number\n"},
		{name: "compare.json flag", args: []string{"-i", cjFlag}, code: 2, stderr: "layermap: " + cjFlag + ":1: expected true or false for is_print_compare_log, found a JSON string\n"},
		{name: "unsupported", args: []string{"-tp", "a", "-gp", "b", "-cm", "x"}, code: 2, stderr: "not supported"},
		{name: "bad format", args: []string{"-tp", "a", "-gp", "b", "--format", "xml"}, code: 2, stderr: "--format"},
		// msprobe's data mapping sends every row to N/A and marks it pass:
		// 610 "pass", nothing compared, was exit 0.
		{name: "mapping pairs nothing", args: []string{"-tp", filepath.Join(demo, "llamafactory"), "-gp", filepath.Join(demo, "mindspeed-mm"), "--mapping", noRule},
			code: 1, files: []string{"compare_result_", "data_mapping_"}, stdout: []string{"result: 610 pass, 0 warning, 0 error", "unmatched: 610 NPU rows without a bench row", "  matched by: layer mapping 0\n"},
			stderr: "layermap: " + filepath.Join(demo, "llamafactory/dump.json") + " vs " + filepath.Join(demo, "mindspeed-mm/dump.json") + ": expected NPU rows with a bench partner, found none of 610: nothing was compared"},
		// procfs takes no new file, not even from root: the folder is named,
		// not the table's temporary file (".layermap-123.csv.tmp")
		{name: "unwritable output folder", args: []string{"-tp", filepath.Join(md5, "npu"), "-gp", filepath.Join(md5, "bench"), "-o", "/proc/self"},
			code: 2, stderr: "layermap: /proc/self: expected a folder compare_result_<time>.csv can be written in, found one that refuses new files (no such file or directory)\n", outFixed: true},
		// a sidecar pair naming no module of the dumps: the source is counted
		// at 0 (the "matched by" line left it out)
		{name: "pairs match nothing", args: []string{"-tp", filepath.Join(demo, "llamafactory"), "-gp", filepath.Join(demo, "mindspeed-mm"), "--pairs", noPairs},
			code: 1, files: []string{"compare_result_"}, stdout: []string{"  matched by: name 325, pairs 0\n"}},
		{name: "pairs match nothing, json", args: []string{"-tp", filepath.Join(demo, "llamafactory"), "-gp", filepath.Join(demo, "mindspeed-mm"), "--pairs", noPairs, "--format", "json"},
			code: 1, files: []string{"compare_result_"}, stdout: []string{`"matched_by": {
          "name": 325,
          "pairs": 0
        }`}},
		// pairs are joined through beside -fm, as a data mapping is (the
		// fuzzy match once ignored them: "fuzzy 218, pairs 0", no warning)
		{name: "pairs beside -fm", args: []string{"-tp", filepath.Join(demo, "llamafactory"), "-gp", filepath.Join(demo, "mindspeed-mm"), "--pairs", downPair, "-fm"},
			code: 1, files: []string{"compare_result_"}, stdout: []string{"  matched by: name 319, pairs 10\n"},
			stderr: "layermap: warning: -fm pairs no row in order beside --pairs: the pairs are joined through first, as msprobe joins through a data mapping, and -fm only leaves backward calls unrenumbered\n"},
		// refused, not compared (the missing-file counter once hid the refusal)
		{name: "data_name escapes", args: []string{"-tp", filepath.Join(escape, "npu"), "-gp", filepath.Join(escape, "bench")},
			code: 2, stderr: filepath.Join(escape, "npu", "dump.json") + `:9: expected a data_name naming a file inside dump_tensor_data (msprobe writes plain file names), found "../../../etc/passwd" (contains a path separator)`},
		{name: "data_name escapes, bench", args: []string{"-tp", filepath.Join(benchEscape, "npu"), "-gp", filepath.Join(benchEscape, "bench")},
			code: 2, stderr: "layermap: " + filepath.Join(benchEscape, "bench", "dump.json") + `:248: expected a data_name naming a file inside dump_tensor_data (msprobe writes plain file names), found "Tensor.mixed.0.forward.output.3./etc/passwd" (contains a path separator): data_name escapes dump_tensor_data` + "\n"},
		// The corpus keeps the tensors as tensors.json, not dump_tensor_data:
		// the table is all "unsupported", which the summary alone does not say.
		{name: "tensor files missing", args: []string{"-tp", filepath.Join(g, "synth_tensor_pt/npu"), "-gp", filepath.Join(g, "synth_tensor_pt/bench")},
			code: 1, files: []string{"compare_result_"}, stdout: []string{"tensor mode, 32 rows"},
			stderr: "layermap: warning: " + filepath.Join(g, "synth_tensor_pt/npu") + ": 28 of 32 tensor-mode rows have no tensor file (e.g. " +
				filepath.Join(g, "synth_tensor_pt/npu/dump_tensor_data") + "/"},
		{name: "same dump twice", args: []string{"-tp", filepath.Join(md5, "npu"), "-gp", filepath.Join(md5, "npu") + "/"},
			code: 0, files: []string{"compare_result_"}, stdout: []string{"result: 88 pass, 0 warning, 0 error"},
			stderr: "layermap: warning: -tp and -gp name the same dump (" + filepath.Join(md5, "npu") + "): every row is compared with itself and passes\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := t.TempDir()
			args := c.args
			if !c.outFixed {
				args = append(args, "-o", out)
			}
			code, stdout, stderr := execCompare(t, args...)
			if code != c.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, c.code, stdout, stderr)
			}
			for _, s := range c.stdout {
				if !strings.Contains(stdout, s) {
					t.Errorf("stdout lacks %q:\n%s", s, stdout)
				}
			}
			if c.stderr != "" && !strings.Contains(stderr, c.stderr) {
				t.Errorf("stderr lacks %q: %s", c.stderr, stderr)
			}
			ents, _ := os.ReadDir(out)
			if len(ents) != len(c.files) {
				t.Errorf("%d output files, want %d: %v", len(ents), len(c.files), ents)
			}
			for i, p := range c.files {
				if i < len(ents) && !strings.HasPrefix(ents[i].Name(), p) {
					t.Errorf("output %s, want prefix %s", ents[i].Name(), p)
				}
				if i < len(ents) && strings.HasPrefix(ents[i].Name(), ".") {
					t.Errorf("temporary file left: %s", ents[i].Name())
				}
			}
			if c.jsonOut {
				var rep struct {
					Ranks []struct {
						Summary struct {
							Rows, Error int
						}
					}
				}
				if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
					t.Fatalf("json: %v\n%s", err, stdout)
				}
				if len(rep.Ranks) != 1 || rep.Ranks[0].Summary.Rows != 18 || rep.Ranks[0].Summary.Error != 6 {
					t.Errorf("json summary %+v", rep)
				}
			}
		})
	}
}

// A refused input creates nothing, not even the output folder: an input
// refused before the folder is made (--tp-size that the ranks do not fit,
// a truncated header) and one refused while the table is written (a
// dump.json truncated deep in its data). --tp-size is refused the same
// way for single-rank inputs as for step folders (it was ignored).
func TestCompareRefusedCreatesNothing(t *testing.T) {
	g := testkit.Corpus(t, "msprobe", "golden")
	demo := filepath.Join(testkit.Root(t), "testdata/demo/dumps")
	lf, ms := filepath.Join(demo, "llamafactory"), filepath.Join(demo, "mindspeed-mm")
	whole, err := os.ReadFile(filepath.Join(lf, "dump.json"))
	if err != nil {
		t.Fatal(err)
	}
	truncated := func(n int) string {
		d := t.TempDir()
		os.WriteFile(filepath.Join(d, "dump.json"), whole[:n], 0o644)
		return d
	}
	deep, head := truncated(len(whole)/2), truncated(300)
	base0 := t.TempDir()
	mr := filepath.Join(g, "synth_multirank")
	// A data mapping refused on its last line: read in pieces, beside
	// the dumps' first reading, its error comes while they are read.
	var dm strings.Builder
	for i := 0; dm.Len() < 1<<20; i++ {
		fmt.Fprintf(&dm, "Tensor.add.%d.forward.input.0: Tensor.add.%d.forward.input.0\n", i, i)
	}
	lines := strings.Count(dm.String(), "\n")
	dm.WriteString("Tensor.add.0.forward.output.0: [a\n")
	badDM := filepath.Join(t.TempDir(), "dm.yaml")
	if err := os.WriteFile(badDM, []byte(dm.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	dmErr := fmt.Sprintf("%s:%d:", badDM, lines+1)
	// TP 2 against TP 1 whose NPU rank 1, a shard no row of the demo
	// pair looks up (their shapes are equal), has its last entry broken
	tp := t.TempDir()
	for _, r := range []string{"npu/step0/rank0", "npu/step0/rank1", "bench/step0/rank0"} {
		if err := os.MkdirAll(filepath.Join(tp, r), 0o755); err != nil {
			t.Fatal(err)
		}
		testkit.WriteFile(t, filepath.Join(tp, r), "dump.json", string(whole))
	}
	shard := filepath.Join(tp, "npu/step0/rank1/dump.json")
	v := bytes.LastIndex(whole, []byte(`"Max": `)) + len(`"Max": `)
	broken := slices.Concat(whole[:v], []byte("1.2.3"), whole[v+bytes.IndexAny(whole[v:], ",\n"):])
	if err := os.WriteFile(shard, broken, 0o644); err != nil {
		t.Fatal(err)
	}
	pairs := testkit.WriteFile(t, t.TempDir(), "pairs.yaml", "- npu: module.model.layers.0.mlp.down_proj\n  bench: 0.module.module.text_decoder.decoder.layers.0.mlp.linear_fc2\n")
	shardErr := fmt.Sprintf("layermap: %s:%d: expected ',' or '}', found '.'\n", shard, bytes.Count(whole[:v], []byte("\n"))+1)
	for _, c := range []struct {
		name   string
		args   []string
		stderr string
	}{
		{name: "tp-size, rank folders", args: []string{"-tp", lf, "-gp", ms, "--tp-size", "2,1"},
			stderr: "--tp-size 2,1: expected rank counts that are whole multiples of the TP sizes with as many replicas on each side, found 1 target and 1 golden ranks (" + lf + " and " + ms + " are one rank each"},
		{name: "tp-size, dump.json files", args: []string{"-tp", filepath.Join(lf, "dump.json"), "-gp", filepath.Join(ms, "dump.json"), "--tp-size", "1,4"},
			stderr: "--tp-size 1,4: expected rank counts that are whole multiples of the TP sizes"},
		{name: "tp-size, step folders", args: []string{"-tp", filepath.Join(mr, "npu/step0"), "-gp", filepath.Join(mr, "bench/step0"), "--tp-size", "4,1"},
			stderr: "--tp-size 4,1: expected rank counts that are whole multiples of the TP sizes with as many replicas on each side, found 2 target and 2 golden ranks\n"},
		{name: "tp-size, a broken shard", args: []string{"-tp", filepath.Join(tp, "npu/step0"), "-gp", filepath.Join(tp, "bench/step0"), "--tp-size", "2,1"},
			stderr: shardErr},
		{name: "truncated header", args: []string{"-tp", head, "-gp", ms}, stderr: filepath.Join(head, "dump.json") + ":"},
		{name: "truncated data", args: []string{"-tp", deep, "-gp", ms}, stderr: filepath.Join(deep, "dump.json") + ":"},
		{name: "data mapping", args: []string{"-tp", lf, "-gp", ms, "-dm", badDM}, stderr: dmErr},
		// the data mapping's error first, as if it were read first
		{name: "data mapping and truncated data", args: []string{"-tp", deep, "-gp", ms, "-dm", badDM}, stderr: dmErr},
		{name: "data mapping and missing dump", args: []string{"-tp", filepath.Join(base0, "none"), "-gp", ms, "-dm", badDM}, stderr: dmErr},
		// (and not the warning of a dump compared with itself)
		{name: "data mapping, one dump", args: []string{"-tp", lf, "-gp", lf, "-dm", badDM}, stderr: dmErr},
		// (and not the warning that -fm pairs nothing beside it)
		{name: "data mapping and -fm", args: []string{"-tp", lf, "-gp", ms, "-dm", badDM, "-fm"}, stderr: dmErr},
		// (and not the warning that -fm pairs nothing beside the pairs)
		{name: "pairs, -fm and truncated data", args: []string{"-tp", deep, "-gp", ms, "--pairs", pairs, "-fm"}, stderr: filepath.Join(deep, "dump.json") + ":"},
	} {
		t.Run(c.name, func(t *testing.T) {
			base := t.TempDir()
			out := filepath.Join(base, "new", "out")
			code, _, stderr := execCompare(t, append(c.args, "-o", out)...)
			if code != 2 || !strings.Contains(stderr, c.stderr) || strings.Count(stderr, "\n") != 1 {
				t.Errorf("exit %d, stderr %q; want exit 2 and one line with %q", code, stderr, c.stderr)
			}
			if ents, _ := os.ReadDir(base); len(ents) != 0 {
				t.Errorf("the refused compare created %s", ents[0].Name())
			}
		})
	}
	// equal sizes on single ranks change nothing: no shards to combine
	code, _, stderr := execCompare(t, "-tp", filepath.Join(g, "synth_md5/npu"), "-gp", filepath.Join(g, "synth_md5/bench"), "--tp-size", "2,2", "-o", t.TempDir())
	if code != 1 {
		t.Errorf("--tp-size 2,2 on single ranks: exit %d (%s), want 1 (its error rows)", code, stderr)
	}
}

// The exit status of mapping-health findings, as README and --help say
// (issue 10's contract): printed always, exit 1 only under --strict; a
// layer the dump does not hold is info and never fails. The dump is
// compared with itself, so no row decides the status.
func TestCompareHealthExit(t *testing.T) {
	lf := filepath.Join(testkit.Root(t), "testdata/demo/dumps/llamafactory")
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(body), 0o644)
		return p
	}
	noClass := write("nm.yaml", "NoSuchClass:\n  a: b\n")
	noPairs := write("np.yaml", "- npu: no.such.module\n  bench: other.module\n")
	notDumped := write("nd.yaml", "- npu: module.model.layers.7.mlp\n  bench: module.model.layers.7.mlp\n")
	for _, c := range []struct {
		name   string
		args   []string
		code   int
		stdout string
	}{
		{"mapping matching nothing", []string{"-lm", noClass}, 0, "error LM101"},
		{"mapping matching nothing, --strict", []string{"-lm", noClass, "--strict"}, 1, "error LM101"},
		{"pairs matching nothing", []string{"--pairs", noPairs}, 0, "warning pairs: pair no.such.module <-> other.module names a module without an entry"},
		{"pairs matching nothing, --strict", []string{"--pairs", noPairs, "--strict"}, 1, "warning pairs"},
		{"a layer not dumped, --strict", []string{"--pairs", notDumped, "--strict"}, 0, "info pairs: layer not dumped"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := execCompare(t, append([]string{"-tp", lf, "-gp", lf, "-o", t.TempDir()}, c.args...)...)
			if code != c.code || !strings.Contains(stdout, c.stdout) {
				t.Errorf("exit %d, want %d; stdout lacks %q?\n%s%s", code, c.code, c.stdout, stdout, stderr)
			}
			if strict := strings.Contains(stderr, "--strict: the mapping has"); strict != (c.code == 1) {
				t.Errorf("stderr %q: the --strict note must come with exit 1 alone", stderr)
			}
		})
	}
}
