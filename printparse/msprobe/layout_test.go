package msprobe

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/layermap/layermap/printparse/testkit"
)

// mkTree creates files (paths ending in "/" are folders) under a temp dir.
func mkTree(t *testing.T, paths ...string) string {
	t.Helper()
	root := t.TempDir()
	for _, p := range paths {
		full := filepath.Join(root, p)
		if strings.HasSuffix(p, "/") {
			if err := os.MkdirAll(full, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestFindRankDir(t *testing.T) {
	tests := []struct {
		name    string
		files   []string
		arg     string // relative to the temp root
		want    string // relative; "" when an error is expected
		wantErr string
	}{
		{"rank folder", []string{"step0/rank0/dump.json"}, "step0/rank0", "step0/rank0", ""},
		{"debug folder", []string{"step0/rank0/debug.json"}, "step0/rank0", "step0/rank0", ""},
		{"dump.json file", []string{"step0/rank0/dump.json"}, "step0/rank0/dump.json", "step0/rank0", ""},
		{"step with one rank", []string{"step0/rank3/dump.json", "step0/notes.txt"}, "step0", "step0/rank3", ""},
		{"step with bare rank", []string{"step0/rank/dump.json"}, "step0", "step0/rank", ""},
		{"step with one proc", []string{"step0/proc2016/dump.json"}, "step0", "step0/proc2016", ""},
		{"rank wins over proc", []string{"step0/rank0/dump.json", "step0/proc1/dump.json"}, "step0", "step0/rank0", ""},
		// tree, suggest and validate read one rank: the advice fits them too
		{"two ranks", []string{"step0/rank0/dump.json", "step0/rank1/dump.json"}, "step0", "", "=ROOT/step0: expected one rank folder, found 2 (rank0, rank1); pass one of them (compare also pairs whole step folders rank by rank)"},
		{"two procs", []string{"step0/proc1/dump.json", "step0/proc2/dump.json"}, "step0", "", "=ROOT/step0: expected a dump.json, rank folders or exactly one proc{pid} folder, found 2 proc folders (proc1, proc2)"},
		{"rank01 is not a rank", []string{"step0/rank01/dump.json"}, "step0", "", "found rank01"},
		{"bare proc is not a proc", []string{"step0/proc/dump.json"}, "step0", "", "found proc"},
		// the folder named once (was "DIR holds no dump.json: DIR: expected rank folders ...")
		{"empty", []string{"step0/"}, "step0", "", "=ROOT/step0: expected a dump.json, rank folders (rank0, rank1, ...) or one proc{pid} folder, found an empty folder"},
		{"other file", []string{"x.txt"}, "x.txt", "", `found a file named "x.txt"`},
		{"missing", []string{"step0/"}, "nope", "", "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := mkTree(t, tt.files...)
			got, err := FindRankDir(filepath.Join(root, tt.arg))
			if exact, ok := strings.CutPrefix(tt.wantErr, "="); ok {
				if want := strings.ReplaceAll(exact, "ROOT", root); err == nil || err.Error() != want {
					t.Fatalf("err = %v, want %s", err, want)
				}
				return
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := filepath.Join(root, tt.want); got != want {
				t.Errorf("got %s, want %s", got, want)
			}
		})
	}
}

func TestFindRankDirCorpus(t *testing.T) {
	c := testkit.Corpus(t, "msprobe")
	tests := []struct{ arg, want, wantErr string }{
		{"examples/quick_start/gpu_dump/step0", "examples/quick_start/gpu_dump/step0/proc2016", ""},
		{"golden/synth_multirank/npu/step0/rank1", "golden/synth_multirank/npu/step0/rank1", ""},
		{"golden/synth_multirank/npu/step0", "", "found 2 (rank0, rank1)"},
		// step1 holds rank0 and a malformed step1 folder: rank0 is the one.
		{"test/msprobe_test/visualization_ut/input/step1", "test/msprobe_test/visualization_ut/input/step1/rank0", ""},
	}
	for _, tt := range tests {
		got, err := FindRankDir(filepath.Join(c, tt.arg))
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: err = %v, want %q", tt.arg, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != filepath.Join(c, tt.want) {
			t.Errorf("%s: got %q, %v; want %s", tt.arg, got, err, tt.want)
		}
	}
}

func TestStepRanks(t *testing.T) {
	root := mkTree(t, "s/rank10/dump.json", "s/rank2/dump.json", "s/rank/dump.json", "s/rank0/dump.json",
		"s/rank01/", "s/proc5/", "s/x.txt")
	ranks, err := StepRanks(filepath.Join(root, "s"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range ranks {
		names = append(names, r.Name)
	}
	if want := []string{"rank", "rank0", "rank2", "rank10"}; !reflect.DeepEqual(names, want) {
		t.Errorf("ranks %v, want %v", names, want)
	}
	if ranks[0].Rank != -1 || ranks[3].Rank != 10 {
		t.Errorf("rank numbers %d %d", ranks[0].Rank, ranks[3].Rank)
	}

	c := testkit.Corpus(t, "msprobe")
	npu, err := StepRanks(filepath.Join(c, "golden/synth_multirank/npu/step0"))
	if err != nil {
		t.Fatal(err)
	}
	bench, err := StepRanks(filepath.Join(c, "golden/synth_multirank/bench/step0"))
	if err != nil {
		t.Fatal(err)
	}
	pairs, err := PairRanks(npu, bench)
	if err != nil {
		t.Fatal(err)
	}
	if len(pairs) != 2 || pairs[1].NPU.Name != "rank1" || pairs[1].Bench.Name != "rank1" {
		t.Errorf("pairs %+v", pairs)
	}
	if _, err := PairRanks(npu, bench[:1]); err == nil || !strings.Contains(err.Error(), "target has 2 (rank0, rank1), golden has 1 (rank0)") {
		t.Errorf("count mismatch err = %v", err)
	}
	procs, err := StepRanks(filepath.Join(c, "examples/quick_start/gpu_dump/step1"))
	if err != nil || len(procs) != 1 || !procs[0].Proc || procs[0].Rank != 2016 {
		t.Errorf("proc step: %+v %v", procs, err)
	}
}

func TestLocate(t *testing.T) {
	c := testkit.Corpus(t, "msprobe")
	dir := filepath.Join(c, "examples/quick_start/gpu_dump/step0/proc2016")
	p, err := Locate(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := Paths{
		Dir:           dir,
		DumpJSON:      filepath.Join(dir, "dump.json"),
		StackJSON:     filepath.Join(dir, "stack.json"),
		ConstructJSON: filepath.Join(dir, "construct.json"),
		TensorDir:     filepath.Join(dir, "dump_tensor_data"),
	}
	if p != want {
		t.Errorf("Locate = %+v, want %+v", p, want)
	}
	root := mkTree(t, "r/debug.json", "e/readme.md")
	p, err = Locate(filepath.Join(root, "r"))
	if err != nil || !p.Debug || p.StackJSON != "" || filepath.Base(p.DumpJSON) != "debug.json" {
		t.Errorf("debug Locate = %+v, %v", p, err)
	}
	if _, err := Locate(filepath.Join(root, "e")); err == nil || !strings.Contains(err.Error(), "expected dump.json or debug.json, found readme.md") {
		t.Errorf("empty Locate err = %v", err)
	}
}

func TestTensorPath(t *testing.T) {
	p := Paths{Dir: "/d", TensorDir: "/d/dump_tensor_data"}
	tests := []struct {
		name, want string
		bad        bool
	}{
		{"Functional.linear.0.forward.input.0.pt", "/d/dump_tensor_data/Functional.linear.0.forward.input.0.pt", false},
		{"x..pt", "/d/dump_tensor_data/x..pt", false},
		{"../x.pt", "", true},
		{"..", "", true},
		{".", "", true},
		{"/etc/passwd", "", true},
		{"a/b.pt", "", true},
		{`a\b.pt`, "", true},
		{"a\x00.pt", "", true},
		{"", "", true},
		{"-1", "", true},
	}
	for _, tt := range tests {
		got, err := p.TensorPath(tt.name)
		if tt.bad {
			if !errors.Is(err, ErrUnsafeDataName) {
				t.Errorf("%q: err = %v, want ErrUnsafeDataName", tt.name, err)
			}
			continue
		}
		if err != nil || got != filepath.FromSlash(tt.want) {
			t.Errorf("%q: got %q, %v", tt.name, got, err)
		}
	}
}

// TestCheckDataNameLine: a refused data_name is placed at the line where
// its item starts in the dump file, whichever reader gave the item: a
// scan of the file, or an EntryReader reading entries by offset (in file
// order or not) with their lines or without them, where the items'
// lines count from their entry and are counted in the file only for the
// message. The entries are indented as msprobe writes them or one to a
// line, with entries of over a read chunk between them.
func TestCheckDataNameLine(t *testing.T) {
	// dump writes a tensor dump of n entries, each a long one (many
	// inputs) or one refused item; want maps each refused data_name to
	// the line its item starts on.
	dump := func(t *testing.T, n int, compact bool) (path string, want map[string]int) {
		var b strings.Builder
		line := 1
		put := func(s string) {
			if compact {
				b.WriteString(strings.TrimSpace(s))
				return
			}
			b.WriteString(s + "\n")
			line++
		}
		newline := func() {
			if compact {
				b.WriteString("\n")
				line++
			}
		}
		item := func(dataName string) {
			put(`    {`)
			put(`     "type": "torch.Tensor",`)
			put(`     "dtype": "torch.float32",`)
			put(`     "shape": [`)
			put(`      2`)
			put(`     ],`)
			put(`     "Max": 1.0, "Min": 0.0, "Mean": 0.5, "Norm": 1.0,`)
			put(`     "requires_grad": true,`)
			put(`     "data_name": "` + dataName + `"`)
		}
		want = map[string]int{}
		put(`{`)
		put(` "task": "tensor", "level": "L1", "framework": "pytorch", "dump_data_dir": "./dump_tensor_data",`)
		put(` "data": {`)
		newline()
		for i := range n {
			name := fmt.Sprintf("Functional.relu.%d.forward", i)
			put(` "` + name + `": {`)
			put(`   "input_args": [`)
			if i%2 == 0 { // over a read chunk of inputs
				for k := range 600 {
					item(fmt.Sprintf("%s.input.%d.pt", name, k))
					put(`    },`)
				}
			}
			want[fmt.Sprintf("../%s.pt", name)] = line
			item(fmt.Sprintf("../%s.pt", name))
			put(`    }`)
			put(`   ]`)
			if i < n-1 {
				put(`  },`)
			} else {
				put(`  }`)
			}
			newline()
		}
		put(` }`)
		put(`}`)
		dir := t.TempDir()
		path = filepath.Join(dir, DumpJSONName)
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return path, want
	}
	// byOffset reads each entry of the file at path by its offset, in
	// reverse file order when backwards, given its line when withLine.
	byOffset := func(withLine, backwards bool) func(t *testing.T, path string, fn func(*Entry) error) {
		return func(t *testing.T, path string, fn func(*Entry) error) {
			var ents []SkimEntry
			if _, err := Skim(path, func(e *SkimEntry) error {
				ents = append(ents, SkimEntry{Index: e.Index, Offset: e.Offset, Line: e.Line})
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			r, err := NewEntryReader(path)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			for k := range ents {
				i := k
				if backwards {
					i = len(ents) - 1 - k
				}
				end, line := int64(-1), 0
				if i+1 < len(ents) {
					end = ents[i+1].Offset
				}
				if withLine {
					line = ents[i].Line
				}
				if err := r.Read(i, ents[i].Offset, end, line, fn); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	for _, c := range []struct {
		name string
		read func(t *testing.T, path string, fn func(*Entry) error)
	}{
		{"scan", func(t *testing.T, path string, fn func(*Entry) error) {
			if _, err := ScanFile(path, fn); err != nil {
				t.Fatal(err)
			}
		}},
		{"by offset, with lines", byOffset(true, false)},
		{"by offset, without lines", byOffset(false, false)},
		{"by offset, without lines, backwards", byOffset(false, true)},
	} {
		for _, compact := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s, compact %v", c.name, compact), func(t *testing.T) {
				path, want := dump(t, 6, compact)
				p, err := Locate(filepath.Dir(path))
				if err != nil {
					t.Fatal(err)
				}
				got := map[string]string{}
				c.read(t, path, func(e *Entry) error {
					for k := range e.Items {
						if err := p.CheckDataName(&e.Items[k]); err != nil {
							got[e.Items[k].DataName] = err.Error()
						}
					}
					return nil
				})
				if len(got) != len(want) {
					t.Errorf("%d refusals, want %d: %v", len(got), len(want), got)
				}
				for dn, line := range want {
					w := fmt.Sprintf("%s:%d: expected a data_name naming a file inside dump_tensor_data (msprobe writes plain file names), found %q (contains a path separator): data_name escapes dump_tensor_data", path, line, dn)
					if got[dn] != w {
						t.Errorf("%s: %q\nwant %q", dn, got[dn], w)
					}
				}
			})
		}
	}
}
