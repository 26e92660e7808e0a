package resolve

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/layermap/layermap/printparse/msprobe"
)

// FuzzDataMapDeferred: for any pair of dumps, a deferred data mapping
// (the rows left to the reader of the dumps) is the one made with the
// rows read first: EntryPairs over the NPU entries read in order gives
// Each's pairs, and EntryPair with the bench rows gives Lookup's answer for
// every NPU row; where the rows are read first and nothing fails, the
// skim does not fail either.
func FuzzDataMapDeferred(f *testing.F) {
	t := `{"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2], "Max": 1.0, "Min": 0.0, "Mean": 0.5, "Norm": 1.0, "requires_grad": false}`
	f.Add(`"Tensor.add.0.forward": {"input_args": [`+t+`, `+t+`], "output": [`+t+`]}, "Tensor.add.0.backward": {"input": [`+t+`]}`,
		`"Tensor.add.0.forward": {"input_args": [`+t+`], "output": [null, `+t+`]}, "Tensor.add.0.backward": {"input": [`+t+`, `+t+`]}`)
	f.Add(`"Module.m.M.forward.0": {"input_args": [`+t+`], "input_kwargs": {"k": `+t+`}, "output": [`+t+`]}, "Tensor.bw.1.backward": {"input": [`+t+`]}, "Tensor.bw.0.backward": {"input": [`+t+`, `+t+`]}`,
		`"Module.m.M.forward.0": {"input_args": [`+t+`], "output": [`+t+`]}, "Tensor.bw.1.backward": {"input": [`+t+`, `+t+`]}, "Tensor.bw.0.backward": {"input": [`+t+`]}`)
	f.Add(`"Tensor.a.0.forward": {"input_args": [`+t+`, `+t+`, `+t+`]}, "Tensor.a.0.forward.x": {"output": [`+t+`]}`, `"Tensor.a.0.forward": {"output": [`+t+`]}`)
	f.Add(`"Functional.linear.0.forward": {"parameters": {"weight": `+t+`, "bias": `+t+`}, "output": [`+t+`]}`, `"Functional.linear.0.forward": {"parameters": {"weight": `+t+`}, "output": [`+t+`]}, "Functional.linear.1.forward": {"output": [`+t+`]}`)
	f.Fuzz(func(t *testing.T, npuData, benchData string) {
		dir := t.TempDir()
		npu, ok1 := fuzzDumpDir(t, filepath.Join(dir, "npu"), npuData)
		bench, ok2 := fuzzDumpDir(t, filepath.Join(dir, "bench"), benchData)
		if !ok1 || !ok2 {
			return
		}
		eager, err := ReadSides(npu, bench, true)
		if err != nil {
			return
		}
		var names []string
		for _, it := range eager.NPU.Items() {
			names = append(names, it.Name)
		}
		dm, err := eager.DataMapping(nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		lazy, err := ReadSides(npu, bench, false)
		if err != nil {
			t.Fatalf("rows read first: no error; skimmed: %v", err)
		}
		d, err := lazy.DataMapping(nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !d.Deferred() {
			return
		}
		got := entryPairsOf(t, d, filepath.Join(npu, "dump.json"), eager.side[1].rows, eager.side[1].names.Strings(), eager.side[0].rows, names)
		diffPairs(t, got, dm.Pairs())
	})
}

// fuzzDumpDir writes a pytorch statistics dump folder whose "data" holds
// the members data, with a construct.json naming every entry without a
// parent and a stack.json of the new format; false when data does not
// make a dump whose entry names can be read.
func fuzzDumpDir(t *testing.T, dir, data string) (string, bool) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "dump.json")
	dump := `{"task": "statistics", "level": "mix", "framework": "pytorch", "dump_data_dir": null, "data": {` + data + `}}`
	if err := os.WriteFile(p, []byte(dump), 0o644); err != nil {
		t.Fatal(err)
	}
	names, err := msprobe.EntryNames(p)
	if err != nil || len(names) == 0 {
		return "", false
	}
	construct := map[string]any{}
	for _, n := range names {
		construct[n] = nil
	}
	b, _ := json.Marshal(construct)
	for name, body := range map[string][]byte{"construct.json": b, "stack.json": []byte(`{"0": [[], []]}`)} {
		if err := os.WriteFile(filepath.Join(dir, name), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir, true
}
