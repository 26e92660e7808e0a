package msprobe

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/layermap/layermap/printparse/testkit"
)

// scanBoth scans src sequentially, pipelined, and pipelined reusing the
// Items (rows copied and rendered after the scan: their strings must stay
// valid), and returns a transcript of each: every entry and row, the
// header, and the error.
func scanBoth(t *testing.T, name string, src []byte, stopAfter int) [3]string {
	var out [3]string
	for k, mode := range []scanMode{{}, {pipelined: true}, {pipelined: true, reuse: true}} {
		var b strings.Builder
		var kept [][]Item
		var heads []string
		n := 0
		h, err := scan(strings.NewReader(string(src)), name, nil, func(e *Entry) error {
			n++
			if stopAfter > 0 && n > stopAfter {
				return errors.New("callback stop")
			}
			orders := fmt.Sprint(e.ForwardCallOrder, e.BackwardCallOrder)
			if mode.reuse {
				orders = "(not counted)"
			}
			heads = append(heads, fmt.Sprintf("%s %d %d %s|%s|%s %v\n", e.Name, e.Index, e.Member, e.OpNoNumber, e.CallDirection, e.Direction, e.HasMD5))
			if k < 2 {
				heads[len(heads)-1] += orders + "\n"
			}
			kept = append(kept, append([]Item(nil), e.Items...))
			return nil
		}, mode)
		for i := range heads {
			b.WriteString(heads[i])
			for _, it := range kept[i] {
				b.WriteString(formatItem(it) + "\n")
			}
		}
		fmt.Fprintf(&b, "header %+v\nerr %v\n", h, err)
		out[k] = b.String()
	}
	return out
}

// TestPipelinedSameAsSequential checks that the pipelined scanner gives
// exactly what the sequential one gives, on the whole corpus, on every
// malformed input, on truncations and when the callback stops early.
func TestPipelinedSameAsSequential(t *testing.T) {
	var inputs []struct {
		name string
		src  []byte
		stop int
	}
	add := func(name string, src []byte, stop int) {
		inputs = append(inputs, struct {
			name string
			src  []byte
			stop int
		}{name, src, stop})
	}
	c := testkit.Corpus(t, "msprobe")
	filepath.WalkDir(c, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".json") && !strings.Contains(p, "tensors.json") {
			src, _ := os.ReadFile(p)
			add("dump.json", src, 0)
			add("dump.json", src, 3)
		}
		return nil
	})
	src, _ := os.ReadFile(filepath.Join(c, "golden/synth_statistics/npu/dump.json"))
	for cut := 0; cut < len(src); cut += 97 {
		add("dump.json", src[:cut], 0)
	}
	add("debug.json", []byte(`{"data": {"x.debug": [1, {"type": "int", "value": 1}], "y": []}}`), 0)
	for _, m := range []string{
		`{"data": {"A.0.forward": {"output": 5}}, "task": "x"}`,
		`{"data": {"=A.0.forward": {}}}`,
		`{"data": {"A.0.forward": {}, "B.0.forward": {"input_args": [{"type": "t", "shape": 1}]}}}`,
		`{"data": {"A.0.forward": {}, "B.0.forward": {"x": tru}}}`,
	} {
		add("dump.json", []byte(m), 0)
	}
	for _, in := range inputs {
		got := scanBoth(t, in.name, in.src, in.stop)
		noOrders := regexp.MustCompile(`(?m)^\d+ \d+\n`).ReplaceAllString(got[0], "")
		for k := 1; k < len(got); k++ {
			want := got[0]
			if k == 2 {
				want = noOrders
			}
			if got[k] != want {
				t.Fatalf("%s (%d bytes, stop %d): pipelined (reuse %v) differs:\n--- sequential\n%.2000s\n--- pipelined\n%.2000s", in.name, len(in.src), in.stop, k == 2, want, got[k])
			}
		}
	}
}

// A panicking callback must not leave the decoder goroutine blocked.
func TestPipelinedPanic(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(testkit.Corpus(t, "msprobe"), "golden/synth_statistics/npu/dump.json"))
	if err != nil {
		t.Fatal(err)
	}
	// (parallel tests waiting for this one to end are goroutines too)
	before := runtime.NumGoroutine()
	for i := 0; i < 20; i++ {
		func() {
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			scan(strings.NewReader(string(src)), "dump.json", nil, func(*Entry) error { panic("boom") }, scanMode{pipelined: true})
		}()
	}
	// Goroutines left blocked would pile up; give them a moment, then count.
	testkit.NoGoroutineLeft(t, before)
}
