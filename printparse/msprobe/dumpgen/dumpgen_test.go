package dumpgen_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/layermap/layermap/printparse/msprobe"
	"github.com/layermap/layermap/printparse/msprobe/dumpgen"
	"github.com/layermap/layermap/printparse/testkit"
)

// The golden file was checked to be byte-identical to Python's
// json.dumps(json.loads(it), indent=1) + "\n", i.e. msprobe's formatting.
func TestGolden(t *testing.T) {
	var buf bytes.Buffer
	if _, err := dumpgen.Write(&buf, dumpgen.Options{Seed: 3, Layers: 1, Hidden: 64, Tensor: true}); err != nil {
		t.Fatal(err)
	}
	testkit.Golden(t, "testdata/tensor_layer1.golden.json", buf.Bytes())
}

func scan(t *testing.T, b []byte) ([]msprobe.Entry, msprobe.Header) {
	t.Helper()
	var es []msprobe.Entry
	h, err := msprobe.Scan(bytes.NewReader(b), "dump.json", func(e *msprobe.Entry) error {
		es = append(es, *e)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return es, h
}

func TestReadableAndCounted(t *testing.T) {
	for _, o := range []dumpgen.Options{
		{Seed: 1, Layers: 3},
		{Seed: 1, Layers: 2, Tensor: true},
		{Seed: 1, Layers: 2, MD5: true},
		{Seed: 2, TargetBytes: 2 << 20, Hidden: 256},
		{Seed: 1, Layers: 4, Foreach: 2, Tensor: true},
		{Seed: 3, TargetBytes: 4 << 20, Hidden: 256, Foreach: 8},
	} {
		var buf bytes.Buffer
		st, err := dumpgen.Write(&buf, o)
		if err != nil {
			t.Fatal(err)
		}
		es, h := scan(t, buf.Bytes())
		rows := 0
		for _, e := range es {
			rows += len(e.Items)
		}
		if st.Entries != h.Entries || st.Entries != len(es) || st.Rows != rows || st.Bytes != int64(buf.Len()) {
			t.Errorf("%+v: stats %+v, scanned %d entries %d rows %d bytes", o, st, len(es), rows, buf.Len())
		}
		if o.TargetBytes > 0 && st.Bytes < o.TargetBytes {
			t.Errorf("%+v: %d bytes, want at least %d", o, st.Bytes, o.TargetBytes)
		}
		if h.MD5 != o.MD5 || (h.Task == "tensor") != o.Tensor {
			t.Errorf("%+v: header %+v", o, h)
		}
		most := 0
		for _, e := range es {
			most = max(most, len(e.Items))
		}
		if o.Foreach > 0 && most < 3*9*o.Foreach {
			t.Errorf("%+v: %d rows at most an entry, want an optimizer step's %d", o, most, 3*9*o.Foreach)
		}
		if o.Tensor {
			for _, e := range es {
				for _, it := range e.Items {
					if it.Type == "torch.Tensor" && it.DataName != it.Name+".pt" {
						t.Fatalf("tensor row %s has data_name %s", it.Name, it.DataName)
					}
				}
			}
		}
	}
}

// A bench dump (Perturb > 0) has the same entries and rows as the NPU dump
// of the same seed, with different statistics.
func TestPerturbAligned(t *testing.T) {
	var npu, bench bytes.Buffer
	if _, err := dumpgen.Write(&npu, dumpgen.Options{Seed: 9, Layers: 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := dumpgen.Write(&bench, dumpgen.Options{Seed: 9, Layers: 2, Perturb: 0.01}); err != nil {
		t.Fatal(err)
	}
	a, _ := scan(t, npu.Bytes())
	b, _ := scan(t, bench.Bytes())
	if len(a) != len(b) {
		t.Fatalf("%d vs %d entries", len(a), len(b))
	}
	same, diff := 0, 0
	for i := range a {
		if a[i].Name != b[i].Name || len(a[i].Items) != len(b[i].Items) {
			t.Fatalf("entry %d: %s vs %s", i, a[i].Name, b[i].Name)
		}
		for j := range a[i].Items {
			x, y := a[i].Items[j], b[i].Items[j]
			if x.Name != y.Name || x.Dtype != y.Dtype || x.Shape != y.Shape {
				t.Fatalf("row %s vs %s", x.Name, y.Name)
			}
			if x.Type == "torch.Tensor" && x.Stats[0].Kind == msprobe.Number && !x.Stats[0].IsInt() {
				if x.Stats[0].Text == y.Stats[0].Text {
					same++
				} else {
					diff++
				}
			}
		}
	}
	if diff == 0 || same > 0 {
		t.Errorf("perturbation: %d float maxima differ, %d equal", diff, same)
	}
	if !strings.Contains(npu.String(), "\"Module.model.layers.1.mlp.down_proj.Linear.parameters_grad.0\": {") {
		t.Error("expected parameter-gradient entries")
	}
}

// Diverge leaves everything before layer DivergeLayer's first output
// unchanged and changes the statistics from there on.
func TestDiverge(t *testing.T) {
	var a, b bytes.Buffer
	if _, err := dumpgen.Write(&a, dumpgen.Options{Seed: 4, Layers: 3, Hidden: 64}); err != nil {
		t.Fatal(err)
	}
	if _, err := dumpgen.Write(&b, dumpgen.Options{Seed: 4, Layers: 3, Hidden: 64, Diverge: 0.5, DivergeLayer: 1}); err != nil {
		t.Fatal(err)
	}
	x, _ := scan(t, a.Bytes())
	y, _ := scan(t, b.Bytes())
	first := ""
	for i := range x {
		for j := range x[i].Items {
			if x[i].Items[j].Stats[0].Text != y[i].Items[j].Stats[0].Text && first == "" {
				first = x[i].Items[j].Name
			}
		}
	}
	if first != "Module.model.layers.1.LlamaDecoderLayer.forward.0.output.0" {
		t.Errorf("first differing row %q", first)
	}
}
