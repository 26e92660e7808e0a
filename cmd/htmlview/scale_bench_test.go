package htmlview_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/layermap/layermap/cmd/htmlview"
	"github.com/layermap/layermap/cmd/htmlview/htmltest"
	"github.com/layermap/layermap/mapping/compare"
	"github.com/layermap/layermap/printparse/msprobe/dumpgen"
	"github.com/layermap/layermap/printparse/testkit"
)

// BenchmarkCompareHTML runs compare --html end to end on generated dump
// pairs, each compare in a child process (the test binary re-executed)
// as `layermap compare` runs, and compare without --html beside it:
//   - gen: dumpgen's synthetic transformer, bench perturbed by 1%; its
//     model grows with the size (LAYERMAP_BENCH_SIZES, default "64M");
//   - steps: the Qwen2.5-VL demo dumps scaled by dumpgen.Scale to 32
//     layers per tower and as many forward passes as the size asks: one
//     model, a longer dump (LAYERMAP_BENCH_QWEN, default "27M").
//
// Pairs are written to LAYERMAP_BENCH_DIR when set (kept between runs,
// the layout mapping/compare's benchmarks use), else to a temporary
// folder. It reports the page's size (page-MB), the --html child's peak
// resident set (peak-RSS-MB) and how much it exceeds the plain child's
// (extra-RSS-MB), the CPU time of both (cpu-s, plain-cpu-s), and, with
// Chromium, the time from opening the page to its first painted trees
// (ms-first-paint).
func BenchmarkCompareHTML(b *testing.B) {
	for _, size := range benchSizes("LAYERMAP_BENCH_SIZES", "64M") {
		b.Run("gen/size="+sizeName(size), func(b *testing.B) { benchHTML(b, genPair(b, size)) })
	}
	for _, size := range benchSizes("LAYERMAP_BENCH_QWEN", "27M") {
		b.Run("steps/size="+sizeName(size), func(b *testing.B) { benchHTML(b, stepsPair(b, size)) })
	}
}

func benchHTML(b *testing.B, p [2]string) {
	var cpu, plainCPU time.Duration
	var rss, plainRSS, page int64
	var path string
	for b.Loop() {
		for _, html := range []bool{false, true} {
			out := b.TempDir()
			c, m := runHTMLChild(b, htmlChild{NPU: p[0], Bench: p[1], Out: out, HTML: html})
			if !html {
				plainCPU, plainRSS = plainCPU+c, max(plainRSS, m)
				continue
			}
			cpu, rss = cpu+c, max(rss, m)
			pages, _ := filepath.Glob(filepath.Join(out, "*.html"))
			if len(pages) != 1 {
				b.Fatalf("compare --html wrote %v", pages)
			}
			st, err := os.Stat(pages[0])
			if err != nil {
				b.Fatal(err)
			}
			page, path = st.Size(), pages[0]
		}
	}
	n := float64(b.N)
	b.ReportMetric(float64(page)/1e6, "page-MB")
	b.ReportMetric(float64(rss)/(1<<20), "peak-RSS-MB")
	b.ReportMetric(float64(rss-plainRSS)/(1<<20), "extra-RSS-MB")
	b.ReportMetric(cpu.Seconds()/n, "cpu-s")
	b.ReportMetric(plainCPU.Seconds()/n, "plain-cpu-s")
	if htmltest.ChromiumPath() != "" {
		pg := htmltest.Open(b, path)
		htmltest.Poll(b, pg, `performance.getEntriesByName('lm-painted').length > 0`)
		b.ReportMetric(htmltest.Eval[float64](b, pg, `performance.getEntriesByName('lm-painted')[0].startTime`), "ms-first-paint")
		pg.CheckClean(b)
	}
}

// htmlChild is what a benchmark child compares.
type htmlChild struct {
	NPU, Bench, Out string
	HTML            bool
}

const htmlChildEnv = "LAYERMAP_HTML_BENCH_CHILD"

// htmlBenchChild runs one compare as `layermap compare [--html]` does.
func htmlBenchChild(spec string) int {
	var c htmlChild
	if err := json.Unmarshal([]byte(spec), &c); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	opt := compare.Options{Target: c.NPU, Golden: c.Bench, OutDir: c.Out}
	if c.HTML {
		opt.Views = compare.ViewFunc(func(d compare.ViewDumps) compare.ViewSink { return htmlview.NewCompareSink(d, nil) })
	}
	if _, err := compare.Run(opt); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(testkit.PeakRSS())
	return 0
}

// runHTMLChild compares in a child process and returns its CPU time and
// peak RSS (as the child reads it: testkit.PeakRSS).
func runHTMLChild(b *testing.B, c htmlChild) (time.Duration, int64) {
	spec, _ := json.Marshal(c)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), htmlChildEnv+"="+string(spec))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("compare child: %v", err)
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	rss, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	if err != nil || rss == 0 {
		rss = ru.Maxrss * 1024
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), rss
}

func benchSizes(env, def string) []int64 { return dumpgen.Sizes(os.Getenv(env), def) }

func sizeName(n int64) string { return dumpgen.SizeName(n) }

// benchPairDir returns the folder of a generated pair (npu/ and bench/),
// writing it with make unless LAYERMAP_BENCH_DIR has it already.
func benchPairDir(b *testing.B, name string, make func(npu, bench string) error) [2]string {
	root := os.Getenv("LAYERMAP_BENCH_DIR")
	if root == "" {
		root = b.TempDir()
	}
	dir := filepath.Join(root, name)
	p := [2]string{filepath.Join(dir, "npu"), filepath.Join(dir, "bench")}
	if _, err := os.Stat(filepath.Join(p[1], "dump.json")); err == nil {
		return p
	}
	if err := make(p[0], p[1]); err != nil {
		b.Fatal(err)
	}
	return p
}

func genPair(b *testing.B, size int64) [2]string {
	return benchPairDir(b, "gen-"+sizeName(size), func(npu, bench string) error {
		return dumpgen.WriteSyntheticPair(npu, bench, size, dumpgen.StatisticsPair)
	})
}

func stepsPair(b *testing.B, size int64) [2]string {
	tmpl, err := filepath.Abs(filepath.Join("..", "..", "testdata", "demo", "dumps"))
	if err != nil {
		b.Fatal(err)
	}
	return benchPairDir(b, "qwen25vl-"+sizeName(size), func(npu, bench string) error {
		return dumpgen.WriteQwenPair(tmpl, npu, bench, size)
	})
}
