package compare

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/layermap/layermap/mapping/resolve"
	"github.com/layermap/layermap/printparse/msprobe"
	"github.com/layermap/layermap/printparse/testkit"
)

// TestCallOf: a module entry's position among its module's calls of a
// direction, the last for a repeated name, -1 for a name that is none of
// them.
func TestCallOf(t *testing.T) {
	t.Parallel()
	known := []string{
		"Module.a.A.forward.0", "Tensor.add.0.forward", "Module.a.A.forward.1", "Module.b.B.forward.0",
		"Module.a.A.backward.0", "Module.a.A.forward.2", "Module.a.A.forward.1",
	}
	d, err := readNames(msprobe.Paths{}, &Config{}, msprobe.NamesOf(known))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		entry, path, dir string
		want             int
	}{
		{"Module.a.A.forward.0", "a", "forward", 0},
		{"Module.a.A.forward.2", "a", "forward", 2},
		{"Module.a.A.forward.1", "a", "forward", 3}, // repeated: the last
		{"Module.a.A.backward.0", "a", "backward", 0},
		{"Module.b.B.forward.0", "b", "forward", 0},
		{"Module.a.A.forward.9", "a", "forward", -1},
		{"Module.b.B.forward.0", "a", "forward", -1},
		{"Module.a.A.forward.0", "a", "backward", -1},
	} {
		if got := d.callOf(tt.entry, tt.path, tt.dir); got != tt.want {
			t.Errorf("callOf(%s, %s, %s) = %d, want %d", tt.entry, tt.path, tt.dir, got, tt.want)
		}
	}
}

// TestReadBothNamesErrors: a side that cannot be read fails the plan, and
// when both cannot, the NPU side's error is the one reported.
func TestReadBothNamesErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, text string) msprobe.Paths {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return msprobe.Paths{Dir: dir, DumpJSON: p}
	}
	good := write("good.json", `{"task": "statistics", "level": "L0", "framework": "pytorch", "data": {"Module.a.A.forward.0": {}}}`)
	badNPU := write("npu.json", `{"task": "statistics", "data": {"Module.a.A.forward.0": {}`)
	badBench := write("bench.json", `{"task": "statistics", "data": [}`)
	for _, tt := range []struct {
		name       string
		npu, bench msprobe.Paths
		want       string // in the error; "" for none
	}{
		{"both read", good, good, ""},
		{"bench fails", good, badBench, "bench.json"},
		{"npu fails", badNPU, good, "npu.json"},
		{"both fail", badNPU, badBench, "npu.json"},
	} {
		nn, bn, err := readBothNames(tt.npu, tt.bench, &Config{}, [2]*msprobe.Names{})
		switch {
		case tt.want == "" && (err != nil || nn.names.Len() != 1 || bn.names.Len() != 1):
			t.Errorf("%s: %v, %v, %v", tt.name, nn, bn, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: error %v, want one about %s", tt.name, err, tt.want)
		}
	}
}

// TestReadNamesKnown: the N:1 plan's names are the same whether it
// skims a dump or is given the names the layer mapping read (read in
// place there: what it keeps must be copies), with and without
// renumbered backward entries.
func TestReadNamesKnown(t *testing.T) {
	t.Parallel()
	// modules called again, in both directions, and backward APIs
	var members []string
	for _, n := range []string{"Module.a.A.forward.0", "Tensor.add.0.forward", "Module.b.B.forward.0", "Module.a.A.forward.1",
		"Module.a.A.backward.0", "Tensor.add.0.backward", "Module.b.B.forward.1", "Tensor.add.1.backward", "Module.a.A.backward.1",
		"Module.a.A.parameters_grad", "Module.b.B.backward.0", "Module.a.A.forward.2"} {
		members = append(members, `"`+n+`": {}`)
	}
	calls := filepath.Join(t.TempDir(), "calls")
	if err := os.Mkdir(calls, 0o755); err != nil {
		t.Fatal(err)
	}
	testkit.WriteFile(t, calls, "dump.json", `{"task": "statistics", "level": "mix", "framework": "pytorch", "data": {`+strings.Join(members, ", ")+`}}`)
	for _, dir := range []string{testkit.Testdata(t, "demo", "dumps", "llamafactory"), testkit.Testdata(t, "demo", "dumps", "mindspeed-mm"), calls} {
		side := filepath.Base(dir)
		p, err := msprobe.Locate(dir)
		if err != nil {
			t.Fatal(err)
		}
		list, err := msprobe.EntryNames(p.DumpJSON)
		if err != nil {
			t.Fatal(err)
		}
		for _, fuzzy := range []bool{false, true} {
			cfg := &Config{Fuzzy: fuzzy}
			skimmed, err := readNames(p, cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			known, err := readNames(p, cfg, msprobe.NamesOf(list))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(known.names.Strings(), skimmed.names.Strings()) || !maps.Equal(known.prefix, skimmed.prefix) ||
				!maps.EqualFunc(known.calls, skimmed.calls, slices.Equal) || len(known.calls) == 0 {
				t.Errorf("%s (fuzzy %v): the names given read as %d modules, %d prefixes; skimmed %d, %d",
					side, fuzzy, len(known.calls), len(known.prefix), len(skimmed.calls), len(skimmed.prefix))
			}
		}
	}
}

// TestIndexSidesNames: the names the detection's indexes keep of the
// dumps they skim are those readNames skims, of a dump that repeats keys
// too (read again with its plan), and none of a side indexed from known
// entries.
func TestIndexSidesNames(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name string, members ...string) string {
		d := filepath.Join(dir, name)
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for i, m := range members {
			if i > 0 {
				b.WriteString(",\n")
			}
			fmt.Fprintf(&b, "  %q: {\"input_args\": [], \"output\": [{\"type\": \"torch.Tensor\", \"dtype\": \"torch.float32\", \"shape\": [%d]}]}", m, i+1)
		}
		testkit.WriteFile(t, d, "dump.json", "{\"task\": \"statistics\", \"level\": \"mix\", \"framework\": \"pytorch\", \"data\": {\n"+b.String()+"\n}}\n")
		return d
	}
	repeats := write("repeats", "Module.a.A.forward.0", "Tensor.add.0.forward", "Module.a.A.forward.0", "Module.b.B.forward.0", "Tensor.add.0.forward")
	plain := write("plain", "Module.a.A.forward.0", "Module.a.A.backward.0", "Tensor.add.0.backward")
	for _, dir := range []string{testkit.Testdata(t, "demo", "dumps", "llamafactory"), testkit.Testdata(t, "demo", "dumps", "mindspeed-mm"), repeats, plain} {
		p, err := msprobe.Locate(dir)
		if err != nil {
			t.Fatal(err)
		}
		cfg := &Config{}
		want, err := readNames(p, cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		ixs := indexSides(*cfg, p, p, nil, nil)
		got := ixs.names()
		ixs.close()
		for side, n := range got {
			if n == nil || !slices.Equal(n.Strings(), want.names.Strings()) {
				t.Errorf("%s, side %d: the index kept %v, readNames skims %v", filepath.Base(dir), side, n.Strings(), want.names.Strings())
			}
		}
	}
	// a side indexed from known entries keeps no names
	p, err := msprobe.Locate(plain)
	if err != nil {
		t.Fatal(err)
	}
	known := resolve.Entries{Names: &msprobe.Names{}}
	if _, err := msprobe.Skim(p.DumpJSON, func(e *msprobe.SkimEntry) error {
		known.Names.Add(e.Name)
		known.Offsets = append(known.Offsets, e.Offset)
		known.Odd = append(known.Odd, e.Odd)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	ixs := indexSides(Config{}, p, p, &known, nil)
	got := ixs.names()
	ixs.close()
	if got[0] != nil || got[1] == nil {
		t.Errorf("known NPU entries: names %v, %v; want none, then the bench's", got[0], got[1])
	}
}
