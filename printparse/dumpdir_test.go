package printparse

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/layermap/layermap/printparse/msprobe"
	"github.com/layermap/layermap/printparse/source"
	"github.com/layermap/layermap/printparse/testkit"
)

// msprobeFixtures lists every corpus folder holding a construct.json, with
// the outcome expected of LoadDumpDir and why.
var msprobeFixtures = map[string]struct {
	err string // "" for a tree; else a substring of the error
	why string
}{
	"examples/quick_start/gpu_dump/step0/proc2016":                               {why: "real ResNet50 mix-level dump"},
	"examples/quick_start/gpu_dump/step1/proc2016":                               {why: "real ResNet50 mix-level dump"},
	"golden/qwen25vl_llamafactory_vs_mindspeed_reverse_template/npu/proc12360":   {why: "LLaMA-Factory Qwen2.5-VL, pair A"},
	"golden/qwen25vl_llamafactory_vs_mindspeed_reverse_template/bench/proc12353": {why: "MindSpeed-MM Qwen2.5-VL, a list of models, pair A"},
	"golden/da_unmatched/npu":                                                    {why: "the demo's LLaMA-Factory Qwen2.5-VL dump, its first 70 entries"},
	"golden/da_unmatched/bench":                                                  {why: "the demo's MindSpeed-MM Qwen2.5-VL dump, its first 60 entries"},
	"test/msprobe_test/resources/layer_mapping/mindspore":                        {why: "MindSpore Cell. names"},
	"test/msprobe_test/resources/layer_mapping/pytorch":                          {why: "PyTorch Module. names"},
	"test/msprobe_test/mindspore_ut/compare/dump_file/mindspore_data":            {why: "MindSpore Cell. names"},
	"test/msprobe_test/mindspore_ut/compare/dump_file/pytorch_data":              {why: "PyTorch Module. names"},
	"golden/synth_multirank/npu/step0/rank0":                                     {err: "expected module entries", why: "API entries only (an L1-style dump): there is no module tree"},
	"golden/synth_multirank/npu/step0/rank1":                                     {err: "expected module entries", why: "API entries only"},
	"golden/synth_multirank/bench/step0/rank0":                                   {err: "expected module entries", why: "API entries only"},
	"golden/synth_multirank/bench/step0/rank1":                                   {err: "expected module entries", why: "API entries only"},
	"test/msprobe_test/visualization_ut/input/step0/rank0":                       {err: "expected module entries", why: "a layout fixture whose only entry is \"api\""},
	"test/msprobe_test/visualization_ut/input_format_correct/step0/rank0":        {err: "expected module entries", why: "a layout fixture whose only entry is \"api\""},
	"test/msprobe_test/visualization_ut/input_format_correct/step0/rank1":        {err: "expected module entries", why: "a layout fixture"},
	"test/msprobe_test/visualization_ut/input_format_correct/step1/rank0":        {err: "expected module entries", why: "a layout fixture"},
	"test/msprobe_test/visualization_ut/input_format_correct/step2/rank0":        {err: "expected module entries", why: "a layout fixture"},
}

func TestCorpusMsprobe(t *testing.T) {
	root := filepath.Join(testkit.Corpus(t), "msprobe")
	var dirs []string
	for _, p := range testkit.FilesNamed(t, root, "construct.json", 10) {
		rel, _ := filepath.Rel(root, filepath.Dir(p))
		dirs = append(dirs, filepath.ToSlash(rel))
	}
	for _, rel := range dirs {
		t.Run(rel, func(t *testing.T) {
			fx, ok := msprobeFixtures[rel]
			if !ok {
				t.Fatalf("not in the fixture table: add it with its expected outcome")
			}
			dir := filepath.Join(root, rel)
			tree, err := LoadDumpDir(dir)
			if fx.err != "" {
				if err == nil || !strings.Contains(err.Error(), fx.err) {
					t.Fatalf("want an error containing %q (%s), got %v", fx.err, fx.why, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			names, err := msprobe.EntryNames(filepath.Join(dir, "dump.json"))
			if err != nil {
				t.Fatal(err)
			}
			checkAgainstNames(t, tree, names)
		})
	}
}

// checkAgainstNames checks the tree against dump.json's module entry names:
// each names a node of that path and class; every other node is an
// ancestor of one; siblings are in order of first appearance.
func checkAgainstNames(t *testing.T, tree *Tree, names []string) {
	t.Helper()
	first := map[string]int{}
	named := map[string]bool{}
	for i, name := range names {
		path, class, _, ok := msprobe.ModuleEntry(name)
		if !ok {
			continue
		}
		named[path] = true
		n := tree.Lookup(path)
		if n == nil {
			t.Errorf("%s: no node %s", name, path)
			continue
		}
		if n.Class != class {
			t.Errorf("%s: node class %q", name, n.Class)
		}
		for p := path; ; {
			if _, seen := first[p]; !seen {
				first[p] = i
			}
			k := strings.LastIndexByte(p, '.')
			if k < 0 {
				break
			}
			p = p[:k]
		}
	}
	tree.Walk(func(n *Node) bool {
		if n.Parent == nil {
			if n.Class != "" || n.Path != "" {
				t.Errorf("root not synthetic: %+v", n)
			}
			return true
		}
		if n.Class == "" && len(n.Children) == 0 {
			t.Errorf("%s: unnamed leaf", n.Path)
		}
		for i := 1; i < len(n.Children); i++ {
			a, okA := first[n.Children[i-1].Path]
			b, okB := first[n.Children[i].Path]
			if okA && okB && a > b {
				t.Errorf("%s: child %s (first at entry %d) after %s (first at entry %d)", n.Path, n.Children[i].Name, b, n.Children[i-1].Name, a)
			}
		}
		return true
	})
}

func TestMsprobeStepFolderAndGolden(t *testing.T) {
	root := filepath.Join(testkit.Corpus(t), "msprobe")
	for _, c := range []struct{ step, rank, golden string }{
		{"examples/quick_start/gpu_dump/step0", "examples/quick_start/gpu_dump/step0/proc2016", "msprobe_quick_start_step0.txt"},
		{"golden/qwen25vl_llamafactory_vs_mindspeed_reverse_template/npu", "golden/qwen25vl_llamafactory_vs_mindspeed_reverse_template/npu/proc12360", "msprobe_qwen25vl_llamafactory.txt"},
		{"golden/qwen25vl_llamafactory_vs_mindspeed_reverse_template/bench", "golden/qwen25vl_llamafactory_vs_mindspeed_reverse_template/bench/proc12353", "msprobe_qwen25vl_mindspeed.txt"},
	} {
		a, err := Load(filepath.Join(root, c.step), Options{Index: -1})
		if err != nil {
			t.Fatal(err)
		}
		b, err := Load(filepath.Join(root, c.rank), Options{Index: -1})
		if err != nil {
			t.Fatal(err)
		}
		var ra, rb bytes.Buffer
		Render(&ra, a, RenderOptions{})
		Render(&rb, b, RenderOptions{})
		if ra.String() != rb.String() {
			t.Errorf("%s: step folder and rank folder give different trees", c.step)
		}
		testkit.Golden(t, filepath.Join("testdata", c.golden), rb.Bytes())
	}
	if _, err := LoadDumpDir(filepath.Join(root, "golden/synth_multirank/npu/step0")); err == nil {
		t.Errorf("a step folder with two ranks must be refused")
	}
}

// TestPairAPathsMatchMsprobe checks that the print(model) trees of pair A
// name modules exactly as msprobe did when it dumped the same models: every
// dumped module is a node of the print tree with the same path and class.
func TestPairAPathsMatchMsprobe(t *testing.T) {
	c := testkit.Corpus(t)
	g := filepath.Join(c, "msprobe/golden/qwen25vl_llamafactory_vs_mindspeed_reverse_template")
	for _, p := range [][2]string{
		{"prints/hf/qwen2_5_vl_3b-old-layout-deepspeed__msprobe-docs-llamafactory-qwen25vl.txt", "npu"},
		{"prints/mindspeed/qwen2_5_vl_3b-vlmmodel-ddp-list__msprobe-docs-mindspeed-mm-qwen25vl.txt", "bench"},
	} {
		pt, err := Load(filepath.Join(c, p[0]), Options{Index: -1})
		if err != nil {
			t.Fatal(err)
		}
		mt, err := Load(filepath.Join(g, p[1]), Options{Index: -1})
		if err != nil {
			t.Fatal(err)
		}
		count := 0
		mt.Walk(func(n *Node) bool {
			if n.Parent == nil {
				return true
			}
			pn := pt.Lookup(n.Path)
			switch {
			case pn == nil:
				t.Errorf("%s: msprobe module %s (%s) is not in the print tree", p[1], n.Path, n.Class)
			case n.Class != "" && pn.Class != n.Class:
				t.Errorf("%s: %s is %s in the print, %s in the dump", p[1], n.Path, pn.Class, n.Class)
			default:
				count++
			}
			return true
		})
		if count < 50 {
			t.Errorf("%s: only %d modules compared", p[1], count)
		}
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Load(filepath.Join(dir, "missing.txt"), Options{Index: -1}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	bad := filepath.Join(dir, "bad.txt")
	os.WriteFile(bad, []byte("M(\n  (a): A(x=B(\n"), 0o644)
	_, err := Load(bad, Options{Index: -1})
	var pe *source.Error
	if !errors.As(err, &pe) || pe.File != bad || pe.Line != 2 {
		t.Errorf("bad file: %v", err)
	}
}

// A cut or malformed dump.json is one "file:line: expected ..., found ..."
// error, nothing in front of the file name.
func TestLoadDumpDirErrors(t *testing.T) {
	demo := filepath.Join(testkit.Root(t), "testdata/demo/dumps/mindspeed-mm/dump.json")
	full, err := os.ReadFile(demo)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, dump string
		want       string // after the folder
	}{
		{"cut mid-way", string(full[:len(full)*2/3]), "/dump.json:5615: expected ',' or '}', found end of file (truncated?)"},
		{"cut in a string", "{\n \"task\": \"statis", "/dump.json:2: expected '\"' closing the string, found end of file (truncated?)"},
		{"no data key", "{\"task\": \"statistics\", \"level\": \"L0\"}\n", "/dump.json:1: expected a \"data\" key in the dump object, found none"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "dump.json"), []byte(tc.dump), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Load(dir, Options{Index: -1})
			if err == nil || err.Error() != dir+tc.want {
				t.Errorf("got %v\nwant %s%s", err, dir, tc.want)
			}
		})
	}
}

// An index picks among the dumps of a text file; on an msprobe folder
// anything but 0 is an error (it was ignored).
func TestLoadDumpDirIndex(t *testing.T) {
	dir := filepath.Join(testkit.Root(t), "testdata/demo/dumps/llamafactory")
	tests := []struct {
		path string
		opts Options
		want string // "" for success
	}{
		{dir, Options{Index: -1}, ""},
		{dir, Options{Index: 0}, ""},
		{dir, Options{Index: 1}, dir + ": expected --index 0 or none (an msprobe dump folder holds one model structure), found --index 1"},
		{dir, Options{Index: 3, IndexFlag: "--index-bench"}, dir + ": expected --index-bench 0 or none (an msprobe dump folder holds one model structure), found --index-bench 3"},
		{filepath.Join(dir, "dump.json"), Options{Index: 2}, filepath.Join(dir, "dump.json") + ": expected --index 0 or none (an msprobe dump folder holds one model structure), found --index 2"},
	}
	for _, tc := range tests {
		_, err := Load(tc.path, tc.opts)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("Load(%s, %+v): %q, want %q", tc.path, tc.opts, got, tc.want)
		}
	}
}

func TestLoadDumpDirSynthetic(t *testing.T) {
	write := func(dir, name, body string) {
		t.Helper()
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	entries := func(names ...string) string {
		var b strings.Builder
		b.WriteString(`{"task": "statistics", "level": "mix", "framework": "pytorch", "dump_data_dir": null, "data": {`)
		for i, n := range names {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(`"` + n + `": {"input_args": [], "input_kwargs": {}, "output": [{"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2], "Max": NaN, "Min": 0, "Mean": 0, "Norm": 0}]}`)
		}
		b.WriteString("}}")
		return b.String()
	}
	root := t.TempDir()

	// Post-order entries (children finish first), FSDP wrapper unnamed,
	// a ModuleList of identical layers, no construct.json.
	a := filepath.Join(root, "a", "step0", "rank0")
	write(a, "dump.json", entries(
		"Tensor.add.0.forward",
		"Module._fsdp_wrapped_module.layers.0.fc.Linear.forward.0",
		"Module._fsdp_wrapped_module.layers.0.Block.forward.0",
		"Module._fsdp_wrapped_module.layers.1.fc.Linear.forward.0",
		"Module._fsdp_wrapped_module.layers.1.Block.forward.0",
		"Module._fsdp_wrapped_module.head.Linear.forward.0",
		"Module._fsdp_wrapped_module.Transformer.forward.0",
		"Module._fsdp_wrapped_module.head.Linear.backward.0",
		"Module._fsdp_wrapped_module.layers.1.fc.Linear.parameters_grad.0",
		"Module._fsdp_wrapped_module.head.Embedding.forward.1",
	))
	tree, err := LoadDumpDir(filepath.Join(root, "a", "step0"))
	if err != nil {
		t.Fatal(err)
	}
	want := "?(\n  (_fsdp_wrapped_module): Transformer(\n    (layers): ?(\n      (0-1): 2 x Block(\n        (fc): Linear()\n      )\n    )\n    (head): Linear()\n  )\n)\n"
	if got := render(t, tree, RenderOptions{}); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	if tree.Kind != KindMsprobe || len(tree.Warnings) != 2 ||
		!strings.Contains(tree.Warnings[0].Msg, "module _fsdp_wrapped_module.head is named with class Linear and Embedding; kept Linear") ||
		!strings.Contains(tree.Warnings[1].Msg, "no construct.json") {
		t.Errorf("warnings: %+v", tree.Warnings)
	}

	// construct.json adds a module only it names (a parent of an API call).
	b := filepath.Join(root, "b")
	write(b, "dump.json", entries("Module.enc.fc.Linear.forward.0"))
	write(b, "construct.json", `{"Module.enc.fc.Linear.forward.0": "Module.enc.Encoder.forward.0", "Functional.relu.0.forward": "Module.enc.act.ReLU.forward.0", "Module.enc.Encoder.forward.0": null}`)
	tree, err = LoadDumpDir(b)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := outline(tree), "enc Encoder\nenc.fc Linear\nenc.act ReLU\n"; got != want || len(tree.Warnings) != 0 {
		t.Errorf("got:\n%s\nwant:\n%s\nwarnings %v", got, want, tree.Warnings)
	}

	// Only API entries: no module tree.
	c := filepath.Join(root, "c")
	write(c, "dump.json", entries("Tensor.add.0.forward", "Functional.linear.0.forward"))
	write(c, "construct.json", `{}`)
	if _, err := LoadDumpDir(c); err == nil || !strings.Contains(err.Error(), "expected module entries") || !strings.Contains(err.Error(), "none among its 2 entries") {
		t.Errorf("API-only dump: %v", err)
	}
	// A body msprobe's compare would refuse: the names still give a tree.
	d := filepath.Join(root, "d")
	write(d, "dump.json", `{"task": "statistics", "level": "L0", "framework": "pytorch", "dump_data_dir": null, "data": {"Module.fc.Linear.forward.0": {"input_args": [{"type": "torch.Tensor", "dtype": "torch.float32", "shape": "bad", "Max": 0, "Min": 0, "Mean": 0, "Norm": 0}], "input_kwargs": {}, "output": []}}}`)
	write(d, "construct.json", `{"Module.fc.Linear.forward.0": null}`)
	tree, err = LoadDumpDirWith(d, DumpOptions{Params: true})
	if err != nil {
		t.Fatal(err)
	}
	if tree.Lookup("fc") == nil || len(tree.Warnings) != 1 || !strings.HasPrefix(tree.Warnings[0].Msg, "no parameter shapes: ") {
		t.Errorf("fallback: %s %+v", outline(tree), tree.Warnings)
	}
	// A "data" repeating a key is read again (msprobe.ScanFileExact): the
	// warnings of the first reading go with it.
	f := filepath.Join(root, "f")
	write(f, "dump.json", entries("Module.head.Linear.forward.0", "Module.head.Embedding.forward.1", "Module.head.Linear.forward.0"))
	tree, err = LoadDumpDirWith(f, DumpOptions{Params: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(tree.Warnings) != 2 || !strings.Contains(tree.Warnings[0].Msg, "module head is named with class Linear and Embedding") {
		t.Errorf("read again: warnings %+v", tree.Warnings)
	}
	// msprobe's single-point save writes debug.json: no module tree.
	e := filepath.Join(root, "e")
	write(e, "debug.json", `{"task": "statistics", "level": "debug", "framework": "pytorch", "dump_data_dir": null, "data": {"x": {"type": "int", "value": 1}}}`)
	if _, err := LoadDumpDir(e); err == nil || !strings.Contains(err.Error(), "debug.json (msprobe's single-point save has no module tree)") {
		t.Errorf("debug.json: %v", err)
	}
	// A file inside the folder works like the folder.
	if tr, err := Load(filepath.Join(b, "dump.json"), Options{Index: -1}); err != nil || tr.Lookup("enc.fc") == nil {
		t.Errorf("dump.json path: %v", err)
	}
}

func TestMsprobeParams(t *testing.T) {
	dir := filepath.Join(testkit.Corpus(t), "msprobe/examples/quick_start/gpu_dump/step0/proc2016")
	plain, err := LoadDumpDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	tree, err := LoadDumpDirWith(dir, DumpOptions{Params: true})
	if err != nil {
		t.Fatal(err)
	}
	if plain.Lookup("conv1").Params != nil {
		t.Errorf("LoadDumpDir must not read parameters")
	}
	if render(t, plain, RenderOptions{}) != render(t, tree, RenderOptions{}) {
		t.Errorf("reading parameters changed the tree")
	}
	for path, want := range map[string]string{
		"conv1":                 "[64 3 7 7] []",
		"fc":                    "[1000 2048] [1000]",
		"layer1.0.downsample.0": "[256 64 1 1] []",
		"layer4.2.bn3":          "[2048] [2048]",
		"relu":                  "[] []",
		"layer1.0.conv1":        "[64 64 1 1] []",
		"layer1":                "[] []",
		"layer2.0.downsample.1": "[512] [512]",
		"layer3.5.conv2":        "[256 256 3 3] []",
		"layer1.0.downsample":   "[] []",
		"layer4.0.downsample.0": "[2048 1024 1 1] []",
		"layer4.0.downsample.1": "[2048] [2048]",
		"layer2.3.bn1":          "[128] [128]",
		"maxpool":               "[] []",
		"layer3.0.downsample.0": "[1024 512 1 1] []",
		"layer2.0.conv2":        "[128 128 3 3] []",
		"bn1":                   "[64] [64]",
		"layer1.2.conv3":        "[256 64 1 1] []",
		"layer4.1.conv1":        "[512 2048 1 1] []",
		"layer4.2.conv3":        "[2048 512 1 1] []",
		"layer3.0.bn2":          "[256] [256]",
		"layer2.0.downsample":   "[] []",
		"layer3.5":              "[] []",
		"layer4":                "[] []",
		"layer1.0":              "[] []",
		"layer1.0.bn1":          "[64] [64]",
		"layer1.0.bn2":          "[64] [64]",
		"layer1.0.bn3":          "[256] [256]",
		"layer1.0.conv2":        "[64 64 3 3] []",
		"layer1.0.conv3":        "[256 64 1 1] []",
		"layer1.0.downsample.1": "[256] [256]",
	} {
		n := tree.Lookup(path)
		if n == nil {
			t.Fatalf("%s missing", path)
		}
		w, b := n.ParamShape("weight"), n.ParamShape("bias")
		if w == nil {
			w = []int{}
		}
		if b == nil {
			b = []int{}
		}
		if got := fmt.Sprint(w) + " " + fmt.Sprint(b); got != want {
			t.Errorf("%s (%s): weight, bias %s, want %s", path, n.Class, got, want)
		}
	}
}
