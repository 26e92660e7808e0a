package compare

import (
	"cmp"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/layermap/layermap/printparse/source"
	"github.com/layermap/layermap/printparse/testkit"
)

// copyTree copies the folder src to dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

// Two compares into one folder in the same second, one after the other
// and at once: no table replaces another (the later run moves to the next
// free second, all its files together).
func TestRunNamesNeverCollide(t *testing.T) {
	mr := filepath.Join(testkit.Corpus(t, "msprobe"), "golden", "synth_multirank")
	tm := time.Date(2026, 12, 2, 12, 4, 57, 0, time.Local)
	out := t.TempDir()
	opt := Options{Target: filepath.Join(mr, "npu", "step0"), Golden: filepath.Join(mr, "bench", "step0"),
		OutDir: out, Stamp: tm, Workers: 1}
	var mu sync.Mutex
	var reports []*Report
	runOnce := func() {
		rep, err := Run(opt)
		if err != nil {
			t.Error(err)
			return
		}
		mu.Lock()
		reports = append(reports, rep)
		mu.Unlock()
	}
	runOnce()
	runOnce() // back to back
	var wg sync.WaitGroup
	for range 2 { // at once
		wg.Add(1)
		go func() { defer wg.Done(); runOnce() }()
	}
	wg.Wait()
	got := names(t, out)
	if len(got) != 8 {
		t.Fatalf("%d files after 4 runs of 2 ranks, want 8: %v", len(got), got)
	}
	want, err := os.ReadFile(filepath.Join(out, "compare_result_rank0_20261202120457.csv"))
	if err != nil {
		t.Fatal(err)
	}
	for _, rep := range reports {
		stamp := ""
		for _, r := range rep.Ranks {
			if len(r.Files) != 1 {
				t.Fatalf("rank %s files %v", r.Rank, r.Files)
			}
			base := filepath.Base(r.Files[0])
			s := base[strings.LastIndexByte(base, '_')+1 : len(base)-len(".csv")]
			if stamp != "" && s != stamp {
				t.Errorf("one run's files carry two stamps: %v", rep.Ranks)
			}
			stamp = s
			if r.Rank == "rank0" {
				if b, _ := os.ReadFile(r.Files[0]); string(b) != string(want) {
					t.Errorf("%s differs from the first run's rank0 table", r.Files[0])
				}
			}
		}
	}
}

// A failure after part of the output set was written (rank 1's dump is
// truncated; rank 0's table and data mapping were already written) leaves
// nothing in the output folder.
func TestRunFailureLeavesNothing(t *testing.T) {
	src := filepath.Join(testkit.Corpus(t, "msprobe"), "golden", "synth_multirank")
	dir := t.TempDir()
	copyTree(t, src, dir)
	dump := filepath.Join(dir, "npu", "step0", "rank1", "dump.json")
	b, err := os.ReadFile(dump)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dump, b[:len(b)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	lm := filepath.Join(dir, "layer_mapping.yaml")
	if err := os.WriteFile(lm, []byte("Linear:\n  weight: weight\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Run(Options{Target: filepath.Join(dir, "npu", "step0"), Golden: filepath.Join(dir, "bench", "step0"), OutDir: out,
		LayerMappingFile: lm})
	var se *source.Error
	if !errors.As(err, &se) || se.File != dump {
		t.Fatalf("Run: %v, want an input error naming %s", err, dump)
	}
	if got := names(t, out); len(got) != 0 {
		t.Errorf("left in the output folder: %v", got)
	}
}

// A dump input that is a FIFO is refused at once, naming it: stack.json,
// construct.json, dump.json on either side, and compare does not hang.
func TestRunRefusesFIFO(t *testing.T) {
	src := filepath.Join(testkit.Corpus(t, "msprobe"), "golden", "synth_multirank")
	for _, rel := range []string{"npu/step0/rank0/dump.json", "bench/step0/rank0/dump.json", "npu/step0/rank0/stack.json"} {
		t.Run(rel, func(t *testing.T) {
			dir := t.TempDir()
			copyTree(t, src, dir)
			p := filepath.Join(dir, rel)
			os.Remove(p)
			if err := mkfifo(p); err != nil {
				t.Skip("no FIFOs here:", err)
			}
			done := make(chan error, 1)
			go func() {
				_, err := Run(Options{Target: filepath.Join(dir, "npu/step0/rank0"), Golden: filepath.Join(dir, "bench/step0/rank0"), OutDir: filepath.Join(dir, "out")})
				done <- err
			}()
			select {
			case err := <-done:
				want := p + ": expected a regular file, found a named pipe (FIFO)"
				var se *source.Error
				if !errors.As(err, &se) || !strings.Contains(err.Error(), want) {
					t.Errorf("Run: %v, want a source.Error containing %q", err, want)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("compare hangs on a FIFO")
			}
			if got := names(t, filepath.Join(dir, "out")); !slices.Equal(got, nil) {
				t.Errorf("left in the output folder: %v", got)
			}
		})
	}
}

// TestInLoadOrder: a dump.json's syntax error comes before the error a
// compare failed with, the NPU side's first, unless it is that error.
func TestInLoadOrder(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := func(name, text string) string { return testkit.WriteFile(t, dir, name, text) }
	good := file("good.json", `{"data": {}}`)
	bad1 := file("bad1.json", "{\"data\": {\n \"a\": [1,]}}")
	bad2 := file("bad2.json", "{\"data\": {}}\n\n x")
	folder := filepath.Join(dir, "folder.json")
	if err := os.Mkdir(folder, 0o755); err != nil {
		t.Fatal(err)
	}
	semantic := &source.Error{File: good, Line: 1, Msg: "expected a task"}
	atBad1 := &source.Error{File: bad1, Line: 2, Msg: "a richer message"}
	tests := []struct {
		name  string
		err   error
		dumps []string
		want  string // a substring; "" for err itself
	}{
		{"no syntax error", semantic, []string{good, good}, ""},
		{"the NPU side's first", semantic, []string{bad1, bad2}, "bad1.json:2: expected a value"},
		{"the bench side's", semantic, []string{good, bad2}, "bad2.json:3: expected end of file"},
		{"that very error", atBad1, []string{bad1, bad2}, ""},
		{"that very error, on the bench side", &source.Error{File: bad2, Line: 3}, []string{good, bad2}, ""},
		{"an NPU dump that cannot be read", semantic, []string{folder, bad2}, ""},
		{"no NPU path", semantic, []string{"", bad2}, "bad2.json:3:"},
		{"not about the inputs", errors.New("disk full"), []string{bad1}, ""},
	}
	for _, tc := range tests {
		got := inLoadOrder(tc.err, tc.dumps...)
		if tc.want == "" && got != tc.err || tc.want != "" && (got == nil || !strings.Contains(got.Error(), tc.want)) {
			t.Errorf("%s: inLoadOrder = %v; want %q", tc.name, got, cmp.Or(tc.want, tc.err.Error()))
		}
	}
}
