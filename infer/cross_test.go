package infer

import (
	"path/filepath"
	"testing"

	"github.com/layermap/layermap/printparse"
	"github.com/layermap/layermap/printparse/testkit"
)

// TestCorpusCross drafts every corpus print against the two sides of pair
// A (unrelated models included) in both roles. Whatever the alignment, the
// emitted YAML must make msprobe's resolver reproduce every aligned pair
// in both directions (or list it in the sidecar), every conflict must be
// proven, no pair may be sure without structural evidence, and the run
// must be deterministic.
func TestCorpusCross(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(testkit.Corpus(t), "prints", "*", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus prints: %v", err)
	}
	anchors := []string{pairs[0].npu, pairs[0].bench}
	for _, f := range files {
		other, err := printparse.Load(f, printparse.Options{Index: -1})
		if err != nil {
			continue // the parser's own tests cover unreadable dumps
		}
		if other.Root != nil && len(other.Root.Children) > 0 && countNodes(other) > 3000 {
			continue // MoE giants: covered by TestCorpusSelf
		}
		for _, a := range anchors {
			anchor, err := printparse.Load(filepath.Join(testkit.Corpus(t), a), printparse.Options{Index: -1})
			if err != nil {
				t.Fatal(err)
			}
			for _, order := range []string{"anchor-npu", "anchor-bench"} {
				npu, bench := anchor, other
				if order == "anchor-bench" {
					npu, bench = other, anchor
				}
				name := filepath.Base(f) + "/" + filepath.Base(a) + "/" + order
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					r, err := Suggest(npu, bench, Options{Template: TemplateNone})
					if err != nil {
						t.Fatal(err)
					}
					if r.Forward.Proven != 1 || r.Reverse.Proven != 1 {
						t.Errorf("proven %.3f / %.3f; sidecar %v / %v", r.Forward.Proven, r.Reverse.Proven, r.Forward.Sidecar, r.Reverse.Sidecar)
					}
					for _, c := range append(r.Forward.Conflicts, r.Reverse.Conflicts...) {
						if !c.Proven {
							t.Errorf("conflict %s not proven: %s", c.Class, c.Resolution)
						}
					}
					checkSureHasStructure(t, r)
				})
			}
		}
	}
}

func countNodes(t *printparse.Tree) int {
	n := 0
	t.Walk(func(*printparse.Node) bool { n++; return true })
	return n
}
