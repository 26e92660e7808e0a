package dumpgen

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The benchmarks' dump pairs, written the same way wherever they are
// measured so that a folder of pairs (LAYERMAP_BENCH_DIR) serves them all.

// Sizes parses a comma-separated list of sizes per side such as
// "64M,256M,1G" (M and G are binary units); an empty list is def.
// Entries that do not parse are left out.
func Sizes(list, def string) []int64 {
	if list == "" {
		list = def
	}
	var out []int64
	for _, f := range strings.Split(list, ",") {
		f, mul := strings.TrimSpace(f), int64(1)
		switch {
		case strings.HasSuffix(f, "G"):
			mul, f = 1<<30, strings.TrimSuffix(f, "G")
		case strings.HasSuffix(f, "M"):
			mul, f = 1<<20, strings.TrimSuffix(f, "M")
		}
		if n, err := strconv.ParseInt(f, 10, 64); err == nil {
			out = append(out, n*mul)
		}
	}
	return out
}

// SizeName names a size per side as the benchmarks do: "64MB", "1GB".
func SizeName(n int64) string {
	if n >= 1<<30 && n%(1<<30) == 0 {
		return fmt.Sprintf("%dGB", n>>30)
	}
	return fmt.Sprintf("%dMB", n>>20)
}

// PairKind is what the entries of a synthetic pair hold.
type PairKind int

const (
	StatisticsPair PairKind = iota // statistics (summary_mode statistics)
	MD5Pair                        // statistics and an md5 a tensor (summary_mode md5)
	TensorPair                     // tensor mode: a data_name a tensor
	ForeachPair                    // statistics, an optimizer step after every 32 layers (Options.Foreach)
)

// WriteSyntheticPair writes the synthetic pair of size bytes per side:
// npuDir/dump.json and benchDir/dump.json from Write with seed 7, the bench
// side's statistics perturbed by 1%, its entries of kind. An md5 pair's
// bench is the NPU side instead but from decoder layer 2's output on,
// 30% off there (Diverge): its md5s agree up to the divergence and
// differ after it, as two runs' do.
func WriteSyntheticPair(npuDir, benchDir string, size int64, kind PairKind) error {
	bench := Options{Perturb: 0.01}
	if kind == MD5Pair {
		bench = Options{Diverge: 0.3, DivergeLayer: 2}
	}
	for _, s := range []struct {
		dir string
		o   Options
	}{{npuDir, Options{}}, {benchDir, bench}} {
		if err := os.MkdirAll(s.dir, 0o755); err != nil {
			return err
		}
		f, err := os.Create(filepath.Join(s.dir, "dump.json"))
		if err != nil {
			return err
		}
		w := bufio.NewWriterSize(f, 1<<20)
		o := s.o
		o.Seed, o.TargetBytes, o.MD5, o.Tensor = 7, size, kind == MD5Pair, kind == TensorPair
		if kind == ForeachPair {
			o.Foreach = 32
		}
		_, err = Write(w, o)
		if err == nil {
			err = w.Flush()
		}
		if err2 := f.Close(); err == nil {
			err = err2
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// WriteQwenPair scales the real Qwen2.5-VL dump folders under templates
// (llamafactory/ to npuDir, mindspeed-mm/ to benchDir) to 32 layers per
// tower and as many forward passes as size bytes per side ask: one model,
// a longer dump.
func WriteQwenPair(templates, npuDir, benchDir string, size int64) error {
	return ScalePair(filepath.Join(templates, "llamafactory"), filepath.Join(templates, "mindspeed-mm"), npuDir, benchDir, 32, size)
}

// ScalePair scales the dump folders npuTemplate to npuDir and
// benchTemplate to benchDir (Scale, seeds 3 and 5), each to layers layers
// (0: the template's) and size bytes.
func ScalePair(npuTemplate, benchTemplate, npuDir, benchDir string, layers int, size int64) error {
	for _, s := range []struct {
		tmpl, out string
		seed      uint64
	}{{npuTemplate, npuDir, 3}, {benchTemplate, benchDir, 5}} {
		if _, err := Scale(s.tmpl, s.out, ScaleOptions{Seed: s.seed, Layers: layers, TargetBytes: size}); err != nil {
			return err
		}
	}
	return nil
}
