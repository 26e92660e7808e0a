package msprobe

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/layermap/layermap/printparse/testkit"
)

// TestEntryMember: every scan mode gives each entry its position among
// the keys of "data" (EntryNames, SkimEntry.Index), the entries msprobe
// skips counted, on the corpus and on a dump whose skipped names come
// first, between and last.
func TestEntryMember(t *testing.T) {
	t.Parallel()
	files := testkit.FilesNamed(t, testkit.Corpus(t, "msprobe"), "dump.json", 1)
	dir := t.TempDir()
	body := `{"output": [{"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2], "Max": 1.0, "Min": 0.0, "Mean": 0.5, "Norm": 1.0}]}`
	data := ""
	for i, name := range []string{"skipped", "Tensor.add.0.forward", "Tensor.odd.0.sideways", "x", "Tensor.add.1.forward", "Functional.relu.0.backward", "last"} {
		if i > 0 {
			data += ", "
		}
		data += fmt.Sprintf("%q: %s", name, body)
	}
	p := filepath.Join(dir, "dump.json")
	if err := os.WriteFile(p, []byte(`{"task": "statistics", "level": "L1", "framework": "pytorch", "dump_data_dir": null, "data": {`+data+`}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	files = append(files, p)
	skipped := 0
	for _, f := range files {
		names, err := EntryNames(f)
		if err != nil {
			continue // a corpus file the scan refuses too
		}
		var skim []string
		if _, err := Skim(f, func(e *SkimEntry) error {
			if e.Index != len(skim) {
				t.Fatalf("%s: skim index %d, want %d", f, e.Index, len(skim))
			}
			skim = append(skim, string(e.Name))
			return nil
		}); err == nil && len(skim) != len(names) {
			t.Errorf("%s: skim gives %d names, EntryNames %d", f, len(skim), len(names))
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, mode := range []scanMode{{}, {pipelined: true}, {pipelined: true, reuse: true}} {
			seen := 0
			_, err := scan(strings.NewReader(string(src)), f, nil, func(e *Entry) error {
				if e.Member < 0 || e.Member >= len(names) || names[e.Member] != e.Name {
					t.Errorf("%s %+v: entry %q has member %d of %d names", f, mode, e.Name, e.Member, len(names))
				}
				seen++
				return nil
			}, mode)
			if err != nil {
				break
			}
			skipped += len(names) - seen
		}
	}
	if skipped == 0 {
		t.Error("no entry skipped: the skipped names are not tested")
	}
}
