package compare

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/layermap/layermap/printparse/testkit"
)

// TestMD5ModeGuess: the table's mode is guessed from the NPU dump's first
// tensor (peekMD5) and the table is written again in the other mode when
// the dumps' md5 keys, read whole, say otherwise (compareTable). msprobe
// decides by md5_find alone: md5 mode when both dumps hold an "md5" key
// on a first-level item of some entry (spec §2.4).
//
// Guessed statistics: the synth_md5 pair with the first tensor's md5 set
// to "00000000" on both sides (an empty tensor's CRC-32), which the guess
// takes for no md5. md5_find sees the key, and msprobe keeps an md5 as
// written (spec §3.1 step 5), so its table is the synth_md5 golden with
// that row's two md5 cells "00000000": equal, the row passes as before.
//
// Guessed md5: the first tensor is nested in a list (not first-level)
// and carries the only md5 keys, which md5_find does not see: msprobe
// writes the statistics table, which shows no md5, so the table is the
// one of the same pair without those keys.
func TestMD5ModeGuess(t *testing.T) {
	t.Parallel()
	root := testkit.Corpus(t, "msprobe", "golden", "synth_md5")
	zeroed := func(dir string) (npu, bench string) {
		for i, side := range []string{"npu", "bench"} {
			b, err := os.ReadFile(filepath.Join(root, side, "dump.json"))
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Count(b, []byte(`"md5": "58be2ff7"`)) != 1 {
				t.Fatalf("%s: the first tensor's md5 is not the fixture's", side)
			}
			b = bytes.Replace(b, []byte(`"md5": "58be2ff7"`), []byte(`"md5": "00000000"`), 1)
			p := filepath.Join(dir, side, "dump.json")
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				npu = p
			} else {
				bench = p
			}
		}
		return npu, bench
	}
	golden := func(pattern string) []byte {
		m, _ := filepath.Glob(filepath.Join(root, pattern))
		if len(m) != 1 {
			t.Fatalf("golden %s: %v", pattern, m)
		}
		b, err := os.ReadFile(m[0])
		if err != nil {
			t.Fatal(err)
		}
		return b
	}

	t.Run("guessed statistics, CSV", func(t *testing.T) {
		t.Parallel()
		npu, bench := zeroed(t.TempDir())
		want := golden("output/*.csv")
		if bytes.Count(want, []byte(",58be2ff7,58be2ff7,")) != 1 {
			t.Fatal("the golden's first row does not hold the md5s")
		}
		want = bytes.Replace(want, []byte(",58be2ff7,58be2ff7,"), []byte(",00000000,00000000,"), 1)
		rep, got := runGuess(t, Options{Target: npu, Golden: bench})
		diffCSV(t, "md5 table", got, want)
		if m := rep.Ranks[0].Summary.Mode; m != "md5" {
			t.Errorf("mode %s, want md5", m)
		}
	})
	t.Run("guessed statistics, xlsx", func(t *testing.T) {
		t.Parallel()
		npu, bench := zeroed(t.TempDir())
		m, _ := filepath.Glob(filepath.Join(root, "output_xlsx", "*.xlsx"))
		if len(m) != 1 {
			t.Fatalf("xlsx golden: %v", m)
		}
		want, err := xlsxCells(m[0])
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range want[2:3] { // the sheet's name, the header, the first row
			for c, v := range r {
				if v == "s:58be2ff7" {
					r[c] = "s:00000000"
				}
			}
		}
		rep, _ := runGuess(t, Options{Target: npu, Golden: bench, XLSX: true})
		got, err := xlsxCells(rep.Ranks[0].Files[0])
		if err != nil {
			t.Fatal(err)
		}
		if g, w := rowsText(got), rowsText(want); g != w {
			t.Errorf("xlsx cells differ:\n%s", testkit.DiffLines(w, g, 4))
		}
	})

	t.Run("guessed md5", func(t *testing.T) {
		t.Parallel()
		tensor := func(max, md5 string) string {
			s := `{"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2, 3], "Max": ` + max + `, "Min": -1.0, "Mean": 0.25, "Norm": 2.5, "requires_grad": false`
			if md5 != "" {
				s += `, "md5": "` + md5 + `"`
			}
			return s + "}"
		}
		data := func(md5 bool, max string) string {
			a, b := "", ""
			if md5 {
				a, b = "0a1b2c3d", "4e5f6a7b"
			}
			return `"Torch.cat.0.forward": {"input_args": [[` + tensor("1.5", a) + `, ` + tensor("2.5", b) + `]], "input_kwargs": {}, "output": [` + tensor(max, "") + `]}, ` +
				`"Functional.relu.0.forward": {"input_args": [` + tensor(max, "") + `], "input_kwargs": {}, "output": [` + tensor(max, "") + `]}`
		}
		dir := t.TempDir()
		_, got := runGuess(t, Options{Target: testkit.DumpDir(t, dir, "npu", data(true, "2.5")), Golden: testkit.DumpDir(t, dir, "bench", data(true, "2.75"))})
		rep, want := runGuess(t, Options{Target: testkit.DumpDir(t, dir, "npu0", data(false, "2.5")), Golden: testkit.DumpDir(t, dir, "bench0", data(false, "2.75"))})
		if rep.Ranks[0].Summary.Mode != "statistics" || !bytes.Contains(want, []byte("Max diff")) {
			t.Fatalf("the pair without md5 keys: %s mode", rep.Ranks[0].Summary.Mode)
		}
		diffCSV(t, "statistics table", got, want)
	})
}

// runGuess runs the compare opt names into a folder of its own and
// returns its report and its table.
func runGuess(t *testing.T, opt Options) (*Report, []byte) {
	t.Helper()
	opt.OutDir, opt.Stamp = t.TempDir(), time.Date(2026, 12, 2, 12, 2, 52, 0, time.Local)
	rep, err := Run(opt)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Ranks) != 1 || len(rep.Ranks[0].Files) != 1 {
		t.Fatalf("ranks %+v", rep.Ranks)
	}
	b, err := os.ReadFile(rep.Ranks[0].Files[0])
	if err != nil {
		t.Fatal(err)
	}
	return rep, b
}

// rowsText is xlsxCells' rows, a line each.
func rowsText(rows [][]string) string {
	var b strings.Builder
	for _, r := range rows {
		b.WriteString(strings.Join(r, " | "))
		b.WriteByte('\n')
	}
	return b.String()
}
