package msprobe_test

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/layermap/layermap/printparse/msprobe"
	"github.com/layermap/layermap/printparse/msprobe/dumpgen"
	"github.com/layermap/layermap/printparse/testkit"
)

// TestReuseKeepsNames: the names ScanReuse gives (the entry's, its op,
// call and direction, each row's and its Entry) stay what Scan gives
// after the scan has reused its buffers, batch after batch, and the
// collector has run: nothing the caller may keep points into them.
func TestReuseKeepsNames(t *testing.T) {
	t.Parallel()
	inputs := map[string][]byte{}
	for _, p := range testkit.FilesNamed(t, testkit.Corpus(t), "dump.json", 2) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		inputs[p] = b
	}
	var gen bytes.Buffer
	if _, err := dumpgen.Write(&gen, dumpgen.Options{Seed: 5, TargetBytes: 4 << 20}); err != nil {
		t.Fatal(err)
	}
	inputs["generated"] = gen.Bytes()
	names := func(e *msprobe.Entry) []string {
		out := []string{e.Name, e.OpNoNumber, e.CallDirection, e.Direction}
		for i := range e.Items {
			out = append(out, e.Items[i].Entry, e.Items[i].Name, e.Items[i].DataName)
		}
		return out
	}
	for name, data := range inputs {
		var kept, want [][]string
		_, rerr := msprobe.ScanReuse(bytes.NewReader(data), "dump.json", func(e *msprobe.Entry) error {
			kept = append(kept, names(e))
			return nil
		})
		runtime.GC()
		_, err := msprobe.Scan(bytes.NewReader(data), "dump.json", func(e *msprobe.Entry) error {
			want = append(want, names(e))
			return nil
		})
		if fmt.Sprint(rerr) != fmt.Sprint(err) {
			t.Fatalf("%s: ScanReuse: %v, Scan: %v", name, rerr, err)
		}
		if name == "generated" && len(want) < 4*64 {
			t.Fatalf("%s: %d entries, want batches of them", name, len(want))
		}
		if got, exp := strings.Join(slices.Concat(kept...), "\n"), strings.Join(slices.Concat(want...), "\n"); got != exp {
			t.Errorf("%s: names kept from ScanReuse differ from Scan's", name)
		}
	}
}
