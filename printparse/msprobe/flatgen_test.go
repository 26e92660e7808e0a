package msprobe_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/layermap/layermap/printparse/msprobe"
	"github.com/layermap/layermap/printparse/msprobe/dumpgen"
)

// TestFlatMatchesTreeGenerated compares the fast path with the tree path,
// and the names mode of the scan with the full one, on generated dumps:
// statistics (parameters_grad and backward entries, kwargs, nulls), tensor
// mode (a data_name on every tensor) and md5 mode.
func TestFlatMatchesTreeGenerated(t *testing.T) {
	t.Parallel()
	for _, o := range []dumpgen.Options{
		{Seed: 1, Layers: 2},
		{Seed: 2, Layers: 1, Tensor: true},
		{Seed: 3, Layers: 1, MD5: true},
		{Seed: 4, Layers: 1, Perturb: 0.01},
	} {
		var buf bytes.Buffer
		if _, err := dumpgen.Write(&buf, o); err != nil {
			t.Fatal(err)
		}
		render := func(on bool) string {
			var b strings.Builder
			h, err := msprobe.ScanSequentialFlat(bytes.NewReader(buf.Bytes()), "dump.json", on, func(e *msprobe.Entry) error {
				fmt.Fprintf(&b, "%+v\n", *e)
				return nil
			})
			fmt.Fprintf(&b, "%+v %v\n", h, err)
			return b.String()
		}
		for _, name := range []string{"dump.json", msprobe.DebugJSONName} {
			if d := msprobe.RowNamesDiffer(buf.Bytes(), name); d != "" {
				t.Errorf("%+v as %s: names mode differs: %s", o, name, d)
			}
		}
		fast, slow := render(true), render(false)
		if fast != slow {
			fl, sl := strings.Split(fast, "\n"), strings.Split(slow, "\n")
			for k := range min(len(fl), len(sl)) {
				if fl[k] != sl[k] {
					t.Fatalf("%+v: fast path differs:\nfast: %s\ntree: %s", o, fl[k], sl[k])
				}
			}
			t.Fatalf("%+v: fast path differs in length", o)
		}
	}
}
