package compare

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/layermap/layermap/mapping"
	"github.com/layermap/layermap/printparse/testkit"
)

// tensorLeaf is a tensor-mode leaf of shape dims whose file is dataName.
func tensorLeaf(dataName string, dims ...int) *jnode {
	l := withShape(&jnode{obj: true}, dims...)
	l.keys, l.vals = append([]string{"type", "dtype"}, l.keys...), append([]*jnode{jstr("torch.Tensor"), jstr("torch.float32")}, l.vals...)
	for _, k := range []string{"Max", "Min", "Mean", "Norm"} {
		l.set(k, jnum(1))
	}
	l.set("requires_grad", &jnode{raw: []byte("true")})
	l.set("data_name", jstr(dataName))
	return l
}

// linearEntry is a forward entry of a linear module at path: its input
// x, output y and weight w of the shapes given, each leaf's data_name its
// row name + ".pt" unless bad names another for that row suffix.
func linearEntry(path string, x, y, w []int, bad map[string]string) fxEntry {
	name := "Module." + path + ".forward.0"
	leaf := func(suffix string, dims []int) *jnode {
		dn := name + suffix + ".pt"
		if b, ok := bad[suffix]; ok {
			dn = b
		}
		return tensorLeaf(dn, dims...)
	}
	return fxEntry{name: name, in: []*jnode{leaf(".input.0", x)}, out: []*jnode{leaf(".output.0", y)},
		params: map[string]*jnode{"weight": leaf(".parameters.weight", w)}}
}

// fillers are entries both sides hold before the one a test is about,
// so that its item stands well past the first entry.
func fillers(n int) []fxEntry {
	var es []fxEntry
	for i := range n {
		es = append(es, linearEntry(fmt.Sprintf("filler.%d.Linear", i), []int{2, 3}, []int{2, 3}, []int{3, 3}, nil))
	}
	return es
}

// itemLine is the line of the item whose data_name is dataName in the
// dump.json at path, counted as a reader of the file counts it: the line
// of the brace that opens the item.
func itemLine(t *testing.T, path, dataName string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	want := fmt.Sprintf("%q", dataName)
	for i, l := range lines {
		if !strings.Contains(l, `"data_name": `+want) {
			continue
		}
		for j := i; j >= 0; j-- {
			if strings.HasSuffix(strings.TrimRight(lines[j], " "), "{") {
				return j + 1
			}
		}
	}
	t.Fatalf("%s holds no item named %s", path, want)
	return 0
}

// refusal is the error compare stops at for the item whose data_name is
// dataName, at line in the dump.json at path.
func refusal(path string, line int, dataName string) string {
	return fmt.Sprintf("%s:%d: expected a data_name naming a file inside dump_tensor_data (msprobe writes plain file names), found %q (contains a path separator): data_name escapes dump_tensor_data",
		path, line, dataName)
}

// TestRefusedDataNameLine: a data_name that would leave dump_tensor_data
// stops the compare at the line of its item in its own dump.json, on
// either side, whichever way that side is read: the bench side through
// its index (entries parsed from their offsets, in the NPU side's order
// or another, by the lookahead or the join), as a stream (-fm), held
// packed in memory (the fuzzy queue's older rows, the whole bench side
// beside N:1 groups under -fm), as N:1 parts, as tensor-parallel shards
// of sibling ranks. Nothing is written.
func TestRefusedDataNameLine(t *testing.T) {
	synth := filepath.Join(testkit.Corpus(t, "msprobe"), "golden/synth_tensor_pt")
	// a row name followed by a path: the row keeps its name (the
	// data_name's stem), so it pairs by name
	const escaping = "Tensor.mixed.0.forward.output.3./etc/passwd"
	// synthPair copies the synthetic tensor pair, the bench item of
	// Tensor.mixed.0.forward.output.3 (an entry in the middle of the
	// file) named dataName.
	synthPair := func(t *testing.T, dataName string) (npu, bench string) {
		dir := t.TempDir()
		npu, bench = filepath.Join(dir, "npu"), filepath.Join(dir, "bench")
		tensorFixture(t, filepath.Join(synth, "npu"), npu)
		tensorFixture(t, filepath.Join(synth, "bench"), bench)
		path := filepath.Join(bench, "dump.json")
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		b = bytes.Replace(b, []byte(`"data_name": "Tensor.mixed.0.forward.output.3.pt"`), []byte(fmt.Sprintf(`"data_name": %q`, dataName)), 1)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return npu, bench
	}
	// reversedPair is fillers on the NPU side and the same entries in
	// reverse order on the bench side, where the first filler's output
	// (the last bench entry) is named dataName.
	reversedPair := func(t *testing.T, dataName string) (npu, bench string) {
		dir := t.TempDir()
		es := fillers(6)
		npu = writeFixtureTask(t, filepath.Join(dir, "npu"), "tensor", es...)
		es[0] = linearEntry("filler.0.Linear", []int{2, 3}, []int{2, 3}, []int{3, 3}, map[string]string{".output.0": dataName})
		slices.Reverse(es)
		bench = writeFixtureTask(t, filepath.Join(dir, "bench"), "tensor", es...)
		return npu, bench
	}
	// behindPair is fillers on the bench side and the same with entries
	// between them on the NPU side, so that the bench side runs ahead of
	// the NPU side (the fuzzy match queues its rows), where the second
	// filler's output is named dataName.
	behindPair := func(t *testing.T, dataName string) (npu, bench string) {
		dir := t.TempDir()
		es := fillers(3)
		npu = writeFixtureTask(t, filepath.Join(dir, "npu"), "tensor", es[0],
			linearEntry("extra.0.Linear", []int{2, 3}, []int{2, 3}, []int{3, 3}, nil),
			linearEntry("extra.1.Linear", []int{2, 3}, []int{2, 3}, []int{3, 3}, nil), es[1], es[2])
		es[1] = linearEntry("filler.1.Linear", []int{2, 3}, []int{2, 3}, []int{3, 3}, map[string]string{".output.0": dataName})
		bench = writeFixtureTask(t, filepath.Join(dir, "bench"), "tensor", es...)
		return npu, bench
	}
	// groupPair is an NPU linear_fc1 against the bench's gate_proj and
	// up_proj (an N:1 group, in tensor mode), after fillers; bad names
	// the bench items' data_names by entry and row suffix.
	groupPair := func(t *testing.T, bad map[string]map[string]string) (npu, bench, pairs string) {
		dir := t.TempDir()
		npu = writeFixtureTask(t, filepath.Join(dir, "npu"), "tensor",
			append(fillers(3), linearEntry("mlp.linear_fc1.ColumnParallelLinear", []int{2, 3}, []int{2, 4}, []int{4, 3}, nil))...)
		bench = writeFixtureTask(t, filepath.Join(dir, "bench"), "tensor",
			append(fillers(3),
				linearEntry("mlp.gate_proj.Linear", []int{2, 3}, []int{2, 2}, []int{2, 3}, bad["gate_proj"]),
				linearEntry("mlp.up_proj.Linear", []int{2, 3}, []int{2, 2}, []int{2, 3}, bad["up_proj"]))...)
		pairs = writePairs(t, dir, mapping.ModulePair{NPU: "mlp.linear_fc1", BenchParts: []string{"mlp.gate_proj", "mlp.up_proj"}, Kind: mapping.KindGateUp})
		return npu, bench, pairs
	}
	// tpPair is a column-parallel projection, after fillers, whole in one
	// rank and split in two ranks; bad names the items' data_names of the
	// split ranks by rank and row suffix.
	const fc1 = "decoder.layers.0.mlp.linear_fc1.ColumnParallelLinear"
	tpPair := func(t *testing.T, bad map[int]map[string]string) (whole, split string) {
		dir := t.TempDir()
		whole, split = filepath.Join(dir, "tp1", "step0"), filepath.Join(dir, "tp2", "step0")
		writeFixtureTask(t, filepath.Join(whole, "rank0"), "tensor",
			append(fillers(3), linearEntry(fc1, []int{2, 3}, []int{2, 4}, []int{4, 3}, nil))...)
		for r := range 2 {
			writeFixtureTask(t, filepath.Join(split, fmt.Sprintf("rank%d", r)), "tensor",
				append(fillers(3), linearEntry(fc1, []int{2, 3}, []int{2, 2}, []int{2, 3}, bad[r]))...)
		}
		return whole, split
	}
	fc1Out := "Module." + fc1 + ".forward.0.output.0./etc/passwd"
	upOut := "Module.mlp.up_proj.Linear.forward.0.output.0./etc/passwd"
	fillerOut := "Module.filler.0.Linear.forward.0.output.0./etc/passwd"
	fillerOut1 := "Module.filler.1.Linear.forward.0.output.0./etc/passwd"
	gateIn := "Module.mlp.gate_proj.Linear.forward.0.input.0./etc/passwd"
	for _, c := range []struct {
		name string
		// setup makes the inputs; file and dataName name the refused item
		setup func(t *testing.T) (opt Options, file, dataName string)
	}{
		{name: "bench, indexed", setup: func(t *testing.T) (Options, string, string) {
			npu, bench := synthPair(t, escaping)
			return Options{Target: npu, Golden: bench}, filepath.Join(bench, "dump.json"), escaping
		}},
		{name: "bench, indexed, one entry cached", setup: func(t *testing.T) (Options, string, string) {
			npu, bench := synthPair(t, escaping)
			return Options{Target: npu, Golden: bench, cache: 1}, filepath.Join(bench, "dump.json"), escaping
		}},
		{name: "bench, indexed, in another order", setup: func(t *testing.T) (Options, string, string) {
			npu, bench := reversedPair(t, fillerOut)
			return Options{Target: npu, Golden: bench}, filepath.Join(bench, "dump.json"), fillerOut
		}},
		{name: "bench, indexed, data mapping", setup: func(t *testing.T) (Options, string, string) {
			npu, bench := synthPair(t, "../x.pt")
			dm := filepath.Join(t.TempDir(), "dm.yaml")
			if err := os.WriteFile(dm, []byte("Tensor.mixed.0.forward.output.3: ../x\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			return Options{Target: npu, Golden: bench, DataMappingFile: dm}, filepath.Join(bench, "dump.json"), "../x.pt"
		}},
		{name: "bench, held whole", setup: func(t *testing.T) (Options, string, string) {
			npu, bench := synthPair(t, escaping)
			return Options{Target: npu, Golden: bench, fullBench: true}, filepath.Join(bench, "dump.json"), escaping
		}},
		{name: "bench, fuzzy", setup: func(t *testing.T) (Options, string, string) {
			npu, bench := synthPair(t, escaping)
			return Options{Target: npu, Golden: bench, Fuzzy: true}, filepath.Join(bench, "dump.json"), escaping
		}},
		{name: "bench, fuzzy, queue packed", setup: func(t *testing.T) (Options, string, string) {
			npu, bench := behindPair(t, fillerOut1)
			return Options{Target: npu, Golden: bench, Fuzzy: true, fuzzyPack: 1}, filepath.Join(bench, "dump.json"), fillerOut1
		}},
		{name: "bench, N:1 part", setup: func(t *testing.T) (Options, string, string) {
			npu, bench, pairs := groupPair(t, map[string]map[string]string{"up_proj": {".output.0": upOut}})
			return Options{Target: npu, Golden: bench, PairsFile: pairs}, filepath.Join(bench, "dump.json"), upOut
		}},
		{name: "bench, N:1 shared input", setup: func(t *testing.T) (Options, string, string) {
			npu, bench, pairs := groupPair(t, map[string]map[string]string{"gate_proj": {".input.0": gateIn}})
			return Options{Target: npu, Golden: bench, PairsFile: pairs}, filepath.Join(bench, "dump.json"), gateIn
		}},
		{name: "bench, N:1 part, fuzzy", setup: func(t *testing.T) (Options, string, string) {
			npu, bench, pairs := groupPair(t, map[string]map[string]string{"up_proj": {".output.0": upOut}})
			return Options{Target: npu, Golden: bench, PairsFile: pairs, Fuzzy: true}, filepath.Join(bench, "dump.json"), upOut
		}},
		{name: "bench, tensor-parallel sibling", setup: func(t *testing.T) (Options, string, string) {
			whole, split := tpPair(t, map[int]map[string]string{1: {".output.0": fc1Out}})
			return Options{Target: whole, Golden: split, TP: TPSizes{1, 2}}, filepath.Join(split, "rank1", "dump.json"), fc1Out
		}},
		{name: "bench, tensor-parallel sibling, fuzzy", setup: func(t *testing.T) (Options, string, string) {
			whole, split := tpPair(t, map[int]map[string]string{1: {".output.0": fc1Out}})
			return Options{Target: whole, Golden: split, TP: TPSizes{1, 2}, Fuzzy: true}, filepath.Join(split, "rank1", "dump.json"), fc1Out
		}},
		{name: "bench, tensor-parallel first shard, fuzzy", setup: func(t *testing.T) (Options, string, string) {
			whole, split := tpPair(t, map[int]map[string]string{0: {".output.0": fc1Out}})
			return Options{Target: whole, Golden: split, TP: TPSizes{1, 2}, Fuzzy: true}, filepath.Join(split, "rank0", "dump.json"), fc1Out
		}},
		{name: "NPU, tensor-parallel sibling", setup: func(t *testing.T) (Options, string, string) {
			whole, split := tpPair(t, map[int]map[string]string{1: {".output.0": fc1Out}})
			return Options{Target: split, Golden: whole, TP: TPSizes{2, 1}}, filepath.Join(split, "rank1", "dump.json"), fc1Out
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			opt, file, dataName := c.setup(t)
			out := filepath.Join(t.TempDir(), "out")
			opt.OutDir, opt.Stamp = out, time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
			line := itemLine(t, file, dataName)
			if line < 30 {
				t.Fatalf("fixture: the refused item is on line %d, in the first entry", line)
			}
			_, err := Run(opt)
			if want := refusal(file, line, dataName); err == nil || err.Error() != want {
				t.Errorf("error\n%v\nwant\n%s", err, want)
			}
			if _, serr := os.Stat(out); !os.IsNotExist(serr) {
				t.Errorf("the refused compare created %s", out)
			}
		})
	}
}
