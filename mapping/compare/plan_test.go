package compare

import (
	"errors"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/layermap/layermap/printparse/msprobe"
	"github.com/layermap/layermap/printparse/msprobe/dumpgen"
	"github.com/layermap/layermap/printparse/testkit"
)

// TestHeldIndex: the bench index the N:1 detection built goes to the
// compare's first join, only for the file it indexes as read without a
// repeats plan, and once.
func TestHeldIndex(t *testing.T) {
	t.Parallel()
	np, bp := reversePaths(t)
	tests := []struct {
		name  string
		bench Bench
		cfg   Config
		want  bool
	}{
		{"same file", BenchFile(bp.DumpJSON), Config{}, true},
		{"another file", BenchFile(np.DumpJSON), Config{}, false},
		{"in memory", Source(func(func(*msprobe.Entry) error) error { return nil }), Config{}, false},
		{"repeats plan", BenchFile(bp.DumpJSON), Config{BenchRepeats: &msprobe.Repeats{}}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			nix, bix, err := indexSides(Config{}, np, bp, nil, nil).take(&cfg, np, bp)
			if err != nil {
				t.Fatal(err)
			}
			nix.close()
			if bix.n == 0 || nix.n == 0 {
				t.Fatalf("indexes of %d and %d entries", nix.n, bix.n)
			}
			h := &heldIndex{path: bp.DumpJSON, ix: bix}
			got := h.take(tc.bench, &cfg)
			if (got != nil) != tc.want {
				t.Fatalf("take = %v, want an index: %v", got, tc.want)
			}
			if got != nil {
				if got.cfg != &cfg || got.n != bix.n {
					t.Errorf("taken index: cfg %p (want %p), %d entries", got.cfg, &cfg, got.n)
				}
				got.reset(true)
				if refs, err := got.lookup(bix.keyOf(0, firstName(t, bp.DumpJSON)).prefix+".input.0", nil); err != nil || len(refs) == 0 {
					t.Errorf("lookup in the taken index: %v, %v", refs, err)
				}
				got.close()
			}
			if again := h.take(tc.bench, &cfg); again != nil {
				t.Error("the index was taken twice")
			}
			h.close()
		})
	}
}

// reversePaths are the dump folders of the golden Qwen2.5-VL pair (NPU
// LLaMA-Factory, bench MindSpeed-MM).
func reversePaths(t *testing.T) (np, bp msprobe.Paths) {
	t.Helper()
	root := testkit.Corpus(t, "msprobe/golden/qwen25vl_llamafactory_vs_mindspeed_reverse_template")
	np, err := msprobe.Locate(filepath.Join(root, "npu/proc12360"))
	if err != nil {
		t.Fatal(err)
	}
	bp, err = msprobe.Locate(filepath.Join(root, "bench/proc12353"))
	if err != nil {
		t.Fatal(err)
	}
	return np, bp
}

func firstName(t *testing.T, path string) string {
	t.Helper()
	names, err := msprobe.EntryNames(path)
	if err != nil || len(names) == 0 {
		t.Fatalf("%s: %v, %d names", path, err, len(names))
	}
	return names[0]
}

// TestReadersStats: in md5 mode the bench readers (and their forks) read
// without statistics, in the other modes with them; the N:1 detection's
// indexes keep them whatever the mode (it compares them).
func TestReadersStats(t *testing.T) {
	t.Parallel()
	np, bp := reversePaths(t)
	noStats := func(t *testing.T, src benchSource) bool {
		fb, ok := src.(*fileBench)
		if !ok {
			t.Fatalf("source %T", src)
		}
		fork, err := fb.fork()
		if err != nil {
			t.Fatal(err)
		}
		defer fork.close()
		if fork.(*fileBench).noStats != fb.noStats {
			t.Errorf("fork: noStats %v, its reader's %v", fork.(*fileBench).noStats, fb.noStats)
		}
		return fb.noStats
	}
	for _, mode := range []Mode{Statistics, MD5, Tensor} {
		cfg := Config{Mode: mode}
		src, err := BenchFile(bp.DumpJSON).openBench(&cfg)
		if err != nil {
			t.Fatal(err)
		}
		if got := noStats(t, src); got != (mode == MD5) {
			t.Errorf("%v: the bench reader reads without statistics: %v", mode, got)
		}
		src.close()
		nix, bix, err := indexSides(cfg, np, bp, nil, nil).take(&cfg, np, bp)
		if err != nil {
			t.Fatal(err)
		}
		if noStats(t, nix.src) || noStats(t, bix.src) {
			t.Errorf("%v: the detection's indexes read without statistics", mode)
		}
		nix.close()
		bix.close()
	}
}

// TestIndexSidesClose: closing indexes nobody took stops their skims and
// waits for them, so that a failed rank pair (a data mapping refused
// while the N:1 detection skims the dumps) leaves nothing reading its
// dumps. Not parallel: it counts the process's goroutines.
func TestIndexSidesClose(t *testing.T) {
	dir := t.TempDir()
	npu, bench := filepath.Join(dir, "npu"), filepath.Join(dir, "bench")
	if err := dumpgen.WriteSyntheticPair(npu, bench, 8<<20, dumpgen.StatisticsPair); err != nil {
		t.Fatal(err)
	}
	np, err := msprobe.Locate(npu)
	if err != nil {
		t.Fatal(err)
	}
	bp, err := msprobe.Locate(bench)
	if err != nil {
		t.Fatal(err)
	}
	before := runtime.NumGoroutine()
	ixs := indexSides(Config{}, np, bp, nil, nil)
	ixs.close()
	select {
	case <-ixs.done:
	default:
		t.Fatal("close returned before the skims ended")
	}
	if ixs.npu != nil || ixs.bench != nil {
		t.Error("the indexes nobody took were kept")
	}
	testkit.NoGoroutineLeft(t, before)
	// a skim told to stop reads no further
	var stop atomic.Bool
	stop.Store(true)
	if ix, err := newSideIndex("bench", BenchFile(bp.DumpJSON), &Config{}, true, false, &stop); !errors.Is(err, errStopped) {
		t.Errorf("a stopped index: built %v, error %v; want %v", ix != nil, err, errStopped)
		if ix != nil {
			ix.close()
		}
	}
	// closing them once taken leaves them to the taker
	ixs = indexSides(Config{}, np, bp, nil, nil)
	cfg := Config{}
	nix, bix, err := ixs.take(&cfg, np, bp)
	if err != nil {
		t.Fatal(err)
	}
	ixs.close()
	if nix.n == 0 || bix.n == 0 || ixs.npu != nix || ixs.bench != bix {
		t.Errorf("taken indexes of %d and %d entries, kept %v", nix.n, bix.n, ixs.npu == nix && ixs.bench == bix)
	}
	nix.close()
	bix.close()
}
