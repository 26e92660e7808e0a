package compare

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRanksSideBySide: the rank pairs of a step folder, run side by side,
// are reported in rank order; a rank whose dump is broken fails the run
// with its own error.
func TestRanksSideBySide(t *testing.T) {
	demo := filepath.Join("..", "..", "testdata", "demo", "dumps")
	dir := t.TempDir()
	for _, side := range []struct{ name, src string }{{"npu", "llamafactory"}, {"bench", "mindspeed-mm"}} {
		for r := 0; r < 5; r++ {
			rank := filepath.Join(dir, side.name, "rank"+string(rune('0'+r)))
			if err := os.MkdirAll(rank, 0o755); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(filepath.Join(demo, side.src, "dump.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(rank, "dump.json"), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	run := func() (*Report, error) {
		return Run(Options{Target: filepath.Join(dir, "npu"), Golden: filepath.Join(dir, "bench"), OutDir: t.TempDir(),
			Stamp: time.Unix(0, 0)})
	}
	rep, err := run()
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Ranks) != 5 {
		t.Fatalf("%d ranks", len(rep.Ranks))
	}
	for i, r := range rep.Ranks {
		if r.Rank != "rank"+string(rune('0'+i)) || len(r.Files) != 1 || r.Summary.Rows == 0 {
			t.Errorf("rank %d: %+v", i, r)
		}
	}
	bad := filepath.Join(dir, "bench", "rank3", "dump.json")
	b, _ := os.ReadFile(bad)
	os.WriteFile(bad, b[:len(b)/2], 0o644)
	if _, err := run(); err == nil || !strings.Contains(err.Error(), filepath.Join("rank3", "dump.json")) {
		t.Errorf("broken rank3: error %v", err)
	}
}
