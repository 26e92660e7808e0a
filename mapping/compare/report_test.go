package compare

import (
	"bytes"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/layermap/layermap/printparse/testkit"
)

func TestProgressBar(t *testing.T) {
	for _, c := range []struct {
		done, total int64
		want        string
	}{
		{0, 100 << 20, "[..............................]   0% 0/100 MB"},
		{50 << 20, 100 << 20, "[###############...............]  50% 50/100 MB"},
		{200 << 20, 100 << 20, "[##############################] 100% 100/100 MB"}, // read past the size it had: capped
		{5 << 20, 0, "5 MB"},
		// a small dump read "100% 0/0 MB"
		{300 << 10, 300 << 10, "[##############################] 100% 300/300 KB"},
		{1000, 300 << 10, "[..............................]   0% 1/300 KB"},
		// a multi-GB dump
		{1 << 30, 3 << 30, "[##########....................]  33% 1.0/3.0 GB"},
		{3 << 29, 0, "1.5 GB"},
	} {
		if got := progressBar(c.done, c.total); got != c.want {
			t.Errorf("progressBar(%d, %d) = %q, want %q", c.done, c.total, got, c.want)
		}
	}
}

// TestProgressStages: on a terminal, a layer-mapped compare shows what it
// does before its table's bar (it reads both dumps whole first); the line
// is cleared at the end.
func TestProgressStages(t *testing.T) {
	t.Parallel()
	root := testkit.Corpus(t, "msprobe")
	qw := filepath.Join(root, "golden/qwen25vl_llamafactory_vs_mindspeed_reverse_template")
	stages := []string{": reading both dumps for the layer mapping", ": resolving the layer mapping", ": looking for N:1 groups"}
	tests := []struct {
		name, lm   string
		wantStages bool
	}{
		{"layer mapping", filepath.Join(qw, "layer_mapping.yaml"), true},
		{"by name", "", false},
	}
	for _, tc := range tests {
		var progress bytes.Buffer
		opt := Options{Target: filepath.Join(qw, "npu"), Golden: filepath.Join(qw, "bench"), OutDir: t.TempDir(),
			LayerMappingFile: tc.lm, Progress: &progress, Warnings: io.Discard}
		if _, err := Run(opt); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		got := progress.String()
		last := -1
		for _, s := range stages {
			i := strings.Index(got, s)
			if (i >= 0) != tc.wantStages || tc.wantStages && i < last {
				t.Errorf("%s: stage %q at %d (after %d), want it shown: %v", tc.name, s, i, last, tc.wantStages)
			}
			last = i
		}
		if !strings.Contains(got, "\r\033[Kcompare proc12360 [") || !strings.Contains(got, "] 100%") || !strings.HasSuffix(got, "\r\033[K") {
			t.Errorf("%s: progress %q: want the bar to 100%%, then the line cleared", tc.name, got)
		}
	}
}
