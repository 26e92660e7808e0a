package compare

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/layermap/layermap/mapping/compare/tensor"
	"github.com/layermap/layermap/printparse/msprobe"
	"github.com/layermap/layermap/printparse/testkit"
)

// TestUnreadableTensorRows: a tensor file that exists but cannot be read
// (not a zip, a symbolic link out of the dump, a FIFO) makes its row an
// error row with msprobe's read-failure message, never a pass, and is
// listed by Unreadable; a missing file keeps msprobe's "unsupported" pass
// row; the run never hangs.
func TestUnreadableTensorRows(t *testing.T) {
	root := filepath.Join(testkit.Corpus(t, "msprobe"), "golden/synth_tensor_pt")
	tp := t.TempDir()
	tensorFixture(t, filepath.Join(root, "npu"), filepath.Join(tp, "npu"))
	tensorFixture(t, filepath.Join(root, "bench"), filepath.Join(tp, "bench"))
	npuData, benchData := filepath.Join(tp, "npu/dump_tensor_data"), filepath.Join(tp, "bench/dump_tensor_data")
	os.Remove(filepath.Join(benchData, "Tensor.mixed.0.forward.output.9.pt")) // missing, as in the fixture
	bad := map[string]string{                                                 // row → what its file became
		"Functional.linear.0.forward.input.0":  "not a zip",
		"Functional.relu.0.forward.output.0":   "symbolic link out of the dump",
		"Torch.special.0.forward.output.5":     "FIFO",
		"Module.fc.Linear.forward.0.output.0":  "symbolic link to dump.json",
		"Tensor.mixed.0.forward.output.5":      "truncated",
		"Functional.linear.0.forward.output.0": "folder",
	}
	writeFile := func(p string, b []byte) {
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(filepath.Join(tp, "outside.pt"), []byte("outside"))
	for row, how := range bad {
		p := filepath.Join(benchData, row+".pt")
		if how == "symbolic link out of the dump" || how == "FIFO" {
			p = filepath.Join(npuData, row+".pt")
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		os.Remove(p)
		switch how {
		case "not a zip":
			writeFile(p, []byte("not a zip"))
		case "truncated":
			writeFile(p, b[:len(b)-40])
		case "symbolic link out of the dump":
			err = os.Symlink("../../outside.pt", p)
		case "symbolic link to dump.json":
			err = os.Symlink("../dump.json", p)
		case "FIFO":
			err = syscall.Mkfifo(p, 0o644)
		case "folder":
			err = os.Mkdir(p, 0o755)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	out := t.TempDir()
	var tf *TensorFiles
	opt := Options{Target: filepath.Join(tp, "npu/dump.json"), Golden: filepath.Join(tp, "bench/dump.json"), OutDir: out,
		Stamp: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		newTensor: func(npu, bench msprobe.Paths) (TensorComparer, error) {
			tc, err := NewTensorFiles(npu, bench)
			tf = tc.(*TensorFiles)
			return tc, err
		}}
	done := make(chan error, 1)
	var rep *Report
	go func() {
		var err error
		rep, err = Run(opt)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("compare hangs")
	}
	recs := testkit.ReadCSV(t, rep.Ranks[0].Files[0])
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	seen := 0
	for _, r := range recs[1:] {
		name := r[col["NPU Name"]]
		how, isBad := bad[name]
		if name == "Tensor.mixed.0.forward.output.9" {
			if r[col["Cosine"]] != "unsupported" || strings.Contains(r[col["Err_message"]], "Dump file") {
				t.Errorf("missing file row: %q %q %q", r[col["Cosine"]], r[col["Result"]], r[col["Err_message"]])
			}
			continue
		}
		if !isBad {
			continue
		}
		seen++
		want := fmt.Sprintf(`["error: Dump file: %s.pt or %s.pt not found or read failed."`, name, name)
		if r[col["Result"]] != "error" || !strings.HasPrefix(r[col["Err_message"]], want) || r[col["Cosine"]] != "unsupported" {
			t.Errorf("%s (%s): Result %q, Err_message %q, Cosine %q", name, how, r[col["Result"]], r[col["Err_message"]], r[col["Cosine"]])
		}
	}
	if seen != len(bad) {
		t.Errorf("found %d of the %d unreadable rows", seen, len(bad))
	}
	n, errs := tf.Unreadable()
	if n != len(bad) || len(errs) != len(bad) {
		t.Fatalf("Unreadable: %d %v", n, errs)
	}
	for _, err := range errs {
		named := false
		for row := range bad {
			named = named || strings.Contains(err.Error(), row+".pt")
		}
		if !named {
			t.Errorf("%v does not name its file", err)
		}
	}
}

// TestTensorReportsFirstRows: the comparisons of a tensor-mode table run
// side by side, and what the run reports of their files (the refused
// data_name that fails it, the unreadable files it names, the missing
// file it gives as an example) is the table's first rows', by their
// place in it, in whatever order the comparisons finish. The items'
// lines run against the table's order here: a choice by line fails.
func TestTensorReportsFirstRows(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "dump.json"), []byte(`{"task": "tensor", "level": "L1", "framework": "pytorch", "dump_data_dir": "", "data": {}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "dump_tensor_data")
	if err := os.Mkdir(data, 0o755); err != nil {
		t.Fatal(err)
	}
	p, err := msprobe.Locate(dir)
	if err != nil {
		t.Fatal(err)
	}
	// rows 0, 1, ... of the table: refused, unreadable and missing in
	// turn, their items on lines 1000, 997, ...
	const rows = 60
	var items []*msprobe.Item
	var refused, unreadable, missing []int
	for i := range rows {
		name := fmt.Sprintf("Tensor.add.%d.forward.input.0", i)
		it := &msprobe.Item{Name: name, Line: 1000 - 3*i, DataName: name + ".pt"}
		switch i % 3 {
		case 0:
			it.DataName = "../" + name + ".pt"
			refused = append(refused, i)
		case 1:
			if err := os.WriteFile(filepath.Join(data, it.DataName), []byte("not a zip"), 0o644); err != nil {
				t.Fatal(err)
			}
			unreadable = append(unreadable, i)
		case 2:
			missing = append(missing, i)
		}
		items = append(items, it)
	}
	for trial := range 8 {
		tc, err := NewTensorFiles(p, p)
		if err != nil {
			t.Fatal(err)
		}
		tf := tc.(*TensorFiles)
		mt := &missingTensors{TensorComparer: tf, npu: p, bench: p}
		order := rand.New(rand.NewPCG(uint64(trial), 1)).Perm(rows)
		if trial == 0 {
			slices.Reverse(order) // the last rows first
		}
		work := make(chan int)
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for i := range work {
					mt.Metrics(rowAt(i/7, i%7), items[i], items[i], nil) // groups of 7 rows
				}
			})
		}
		for _, i := range order {
			work <- i
		}
		close(work)
		wg.Wait()
		if err := tf.Err(); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("dump.json:%d:", items[refused[0]].Line)) {
			t.Errorf("trial %d: Err %v, want the refusal of row %d", trial, err, refused[0])
		}
		n, errs := tf.Unreadable()
		if n != len(unreadable) || len(errs) != maxUnreadable {
			t.Fatalf("trial %d: Unreadable %d, %d errors; want %d, %d", trial, n, len(errs), len(unreadable), maxUnreadable)
		}
		for k, err := range errs {
			if want := fmt.Sprintf("Tensor.add.%d.forward.input.0.pt", unreadable[k]); !strings.Contains(err.Error(), want) {
				t.Errorf("trial %d: unreadable %d: %v, want %s", trial, k, err, want)
			}
		}
		var w strings.Builder
		mt.warn(&w)
		if want := fmt.Sprintf("(e.g. %s)", filepath.Join(data, fmt.Sprintf("Tensor.add.%d.forward.input.0.pt", missing[0]))); !strings.Contains(w.String(), want) {
			t.Errorf("trial %d: warnings\n%s\nwant %s", trial, w.String(), want)
		}
		// Reset forgets them all (the table is written again)
		mt.Reset()
		w.Reset()
		if mt.warn(&w); tf.Err() != nil || w.Len() > 0 {
			t.Errorf("trial %d: after Reset: %v, %q", trial, tf.Err(), w.String())
		}
		last := missing[len(missing)-1]
		mt.Metrics(rowAt(100, 0), items[last], items[last], nil)
		w.Reset()
		if mt.warn(&w); !strings.Contains(w.String(), fmt.Sprintf("Tensor.add.%d.forward.input.0.pt)", last)) {
			t.Errorf("trial %d: after Reset, one row missing its file: %q", trial, w.String())
		}
	}
}

// TestTensorWarningFollowsTable: the missing file a compare gives as an
// example is the first row's in the table, which puts an entry's
// parameters before its outputs where msprobe's dump.json has them after.
func TestTensorWarningFollowsTable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("{\n \"task\": \"tensor\",\n \"level\": \"L0\",\n \"framework\": \"pytorch\",\n \"dump_data_dir\": \"./dump_tensor_data\",\n \"data\": {")
	for i := range 40 {
		if i > 0 {
			b.WriteString(",")
		}
		e := fmt.Sprintf("Module.fc%d.Linear.forward.0", i)
		fmt.Fprintf(&b, "\n  %q: {\n   \"input_args\": [{\"type\": \"int\", \"value\": 1}],\n   \"input_kwargs\": {},\n   \"output\": [\n    %s\n   ],\n   \"parameters\": {\n    \"weight\": %s\n   }\n  }", e, testkit.Tensor(e+".output.0.pt"), testkit.Tensor(e+".parameters.weight.pt"))
	}
	b.WriteString("\n }\n}\n")
	for _, side := range []string{"npu", "bench"} {
		if err := os.MkdirAll(filepath.Join(dir, side, "dump_tensor_data"), 0o755); err != nil {
			t.Fatal(err)
		}
		testkit.WriteFile(t, filepath.Join(dir, side), "dump.json", b.String())
	}
	for _, fuzzy := range []bool{false, true} {
		var w strings.Builder
		_, err := Run(Options{Target: filepath.Join(dir, "npu", "dump.json"), Golden: filepath.Join(dir, "bench", "dump.json"),
			OutDir: t.TempDir(), Fuzzy: fuzzy, Warnings: &w})
		if err != nil {
			t.Fatal(err)
		}
		want := "(e.g. " + filepath.Join(dir, "npu", "dump_tensor_data", "Module.fc0.Linear.forward.0.parameters.weight.pt") + ")"
		if !strings.Contains(w.String(), want) {
			t.Errorf("fuzzy %v: warnings\n%s\nwant %s", fuzzy, w.String(), want)
		}
	}
}

// TestTensorWarningsInRankOrder: the rank pairs of a step folder are
// compared side by side, and their tensor-mode warnings come in rank
// order, whichever pair finished first.
func TestTensorWarningsInRankOrder(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const ranks = 6
	for _, side := range []string{"npu", "bench"} {
		for r := range ranks {
			d := filepath.Join(dir, side, fmt.Sprintf("rank%d", r))
			if err := os.MkdirAll(filepath.Join(d, "dump_tensor_data"), 0o755); err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			for i := range 30 * (ranks - r) { // the later ranks finish first
				if i > 0 {
					b.WriteString(",\n")
				}
				e := fmt.Sprintf("Tensor.add.%d.forward", i)
				fmt.Fprintf(&b, "  %q: {\"input_args\": [%s], \"input_kwargs\": {}, \"output\": [%s]}", e, testkit.Tensor(e+".input.0.pt"), testkit.Tensor(e+".output.0.pt"))
			}
			testkit.WriteFile(t, d, "dump.json", "{\"task\": \"tensor\", \"level\": \"L1\", \"framework\": \"pytorch\", \"dump_data_dir\": \"./dump_tensor_data\", \"data\": {\n"+b.String()+"\n}}\n")
		}
	}
	for range 3 {
		var w strings.Builder
		if _, err := Run(Options{Target: filepath.Join(dir, "npu"), Golden: filepath.Join(dir, "bench"), OutDir: t.TempDir(), Warnings: &w}); err != nil {
			t.Fatal(err)
		}
		last := -1
		for _, line := range strings.Split(strings.TrimSpace(w.String()), "\n") {
			var r int
			if _, err := fmt.Sscanf(line[strings.Index(line, "rank"):], "rank%d:", &r); err != nil || r <= last {
				t.Fatalf("warnings out of rank order:\n%s", w.String())
			}
			last = r
		}
		if last != ranks-1 {
			t.Fatalf("warnings of %d ranks:\n%s", last+1, w.String())
		}
	}
}

// TestRefusalPlacedOnlyFirst: a refused data_name is placed in its dump
// file (which may read the file up to it) only when its row can come
// before the refusal kept; a later row's refusal is not placed, so that a
// dump refusing every row is not read once a row.
func TestRefusalPlacedOnlyFirst(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	testkit.WriteFile(t, dir, "dump.json", "{}")
	p, err := msprobe.Locate(dir)
	if err != nil {
		t.Fatal(err)
	}
	tf := &TensorFiles{npuPaths: p, benchPaths: p}
	item := func(line int) *msprobe.Item {
		return &msprobe.Item{Name: fmt.Sprintf("Tensor.add.%d.forward.input.0", line), DataName: "../x.pt", Line: line}
	}
	for _, c := range []struct {
		at, line int
		placed   bool // else errRefusedLater
	}{
		{5, 50, true},
		{7, 70, false}, // after the row kept
		{9, 90, false},
		{3, 30, true}, // before it: placed, and kept
		{4, 40, false},
		{3, 30, true}, // (the kept row itself)
	} {
		err := tf.checkDataName(int64(c.at), p, item(c.line))
		if placed := err != errRefusedLater; placed != c.placed {
			t.Errorf("row %d: %v, placed %v, want %v", c.at, err, placed, c.placed)
		}
		tf.record(int64(c.at), tensor.Metrics{}, err)
	}
	if err := tf.Err(); err == nil || !strings.Contains(err.Error(), "dump.json:30:") {
		t.Errorf("Err() = %v, want row 3's refusal at line 30", err)
	}
	if err := tf.checkDataName(1, p, &msprobe.Item{DataName: "x.pt"}); err != nil {
		t.Errorf("a plain data_name refused: %v", err)
	}
}
