package cmd

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/layermap/layermap/printparse/testkit"
)

// pathRow is one bad path given to one verb: the arguments, the path the
// one-line error must start with, and, when the row cannot be built here,
// why it is skipped.
type pathRow struct {
	name  string
	args  []string
	named string
	skip  string
}

// TestPathErrors sweeps every verb's input and output paths with the paths
// users get wrong: a missing file, a folder where a file is expected, a
// file it may not read, an -o it may not write in, an -o under a file.
// Each must exit 2 with one line "PATH[:LINE]: expected X, found Y" (no
// Go "open PATH: ..." errors) and write nothing.
func TestPathErrors(t *testing.T) {
	c, root := testkit.Corpus(t), testkit.Root(t)
	npu := filepath.Join(root, "testdata/demo/qwen25vl-mindspeed-mm.txt")
	bench := filepath.Join(root, "testdata/demo/qwen25vl-llamafactory.txt")
	lm := filepath.Join(root, "mapping/testdata/seed/qwen2.5-vl_mindspeed-mm_to_llamafactory.yaml")
	g := filepath.Join(c, "msprobe/golden/synth_statistics")
	gNPU, gBench := filepath.Join(g, "npu"), filepath.Join(g, "bench")
	asRoot := os.Geteuid() == 0

	// inputs: each slot takes the bad path p; folder says p is a folder
	// (compare wants both dump sides of one kind)
	type slot struct {
		verb, name string
		args       func(p string, folder bool, out string) []string
	}
	other := func(dir string, folder bool) string {
		if folder {
			return dir
		}
		return filepath.Join(dir, "dump.json")
	}
	inputs := []slot{
		{"tree", "INPUT", func(p string, _ bool, _ string) []string { return []string{"tree", p} }},
		{"suggest", "NPU", func(p string, _ bool, out string) []string {
			return []string{"suggest", p, bench, "-o", out + "/d.yaml"}
		}},
		{"suggest", "BENCH", func(p string, _ bool, out string) []string { return []string{"suggest", npu, p, "-o", out + "/d.yaml"} }},
		{"suggest", "--pairs-in", func(p string, _ bool, out string) []string {
			return []string{"suggest", npu, bench, "--pairs-in", p, "-o", out + "/d.yaml"}
		}},
		{"validate", "MAPPING", func(p string, _ bool, _ string) []string {
			return []string{"validate", p, "--npu", npu, "--bench", bench}
		}},
		{"validate", "--npu", func(p string, _ bool, _ string) []string {
			return []string{"validate", lm, "--npu", p, "--bench", bench}
		}},
		{"validate", "--bench", func(p string, _ bool, _ string) []string { return []string{"validate", lm, "--npu", npu, "--bench", p} }},
		{"compare", "-tp", func(p string, folder bool, out string) []string {
			return []string{"compare", "-tp", p, "-gp", other(gBench, folder), "-o", out}
		}},
		{"compare", "-gp", func(p string, folder bool, out string) []string {
			return []string{"compare", "-tp", other(gNPU, folder), "-gp", p, "-o", out}
		}},
		{"compare", "--mapping", func(p string, _ bool, out string) []string {
			return []string{"compare", "-tp", gNPU, "-gp", gBench, "--mapping", p, "-o", out}
		}},
		{"compare", "--pairs", func(p string, _ bool, out string) []string {
			return []string{"compare", "-tp", gNPU, "-gp", gBench, "--pairs", p, "-o", out}
		}},
		{"compare", "-dm", func(p string, _ bool, out string) []string {
			return []string{"compare", "-tp", gNPU, "-gp", gBench, "-dm", p, "-o", out}
		}},
		{"compare", "-i", func(p string, _ bool, out string) []string { return []string{"compare", "-i", p, "-o", out} }},
		// templates reads no file: a path given to it is refused as such
		{"templates", "ARG", func(p string, _ bool, _ string) []string { return []string{"templates", p} }},
	}
	// outputs: each slot takes the folder o its file goes in (compare: the
	// output folder)
	type outSlot struct {
		verb, name string
		args       func(o, dir string) []string
		named      func(o string) string // the path the error names
	}
	inFolder := func(o string) string { return o }
	outputs := []outSlot{
		{"suggest", "-o", func(o, _ string) []string { return []string{"suggest", npu, bench, "-o", o + "/d.yaml"} }, inFolder},
		{"suggest", "-O", func(o, dir string) []string {
			return []string{"suggest", npu, bench, "-o", dir + "/ok.yaml", "--reverse", "-O", o + "/r.yaml"}
		}, inFolder},
		{"suggest", "--pairs", func(o, dir string) []string {
			return []string{"suggest", npu, bench, "-o", dir + "/ok.yaml", "--pairs", o + "/p.yaml"}
		}, inFolder},
		{"suggest", "--html", func(o, dir string) []string {
			return []string{"suggest", npu, bench, "-o", dir + "/ok.yaml", "--html", o + "/v.html"}
		}, inFolder},
		{"compare", "-o", func(o, _ string) []string { return []string{"compare", "-tp", gNPU, "-gp", gBench, "-o", o} }, inFolder},
		{"compare", "-o (a folder to create)", func(o, _ string) []string {
			return []string{"compare", "-tp", gNPU, "-gp", gBench, "-o", o + "/new"}
		}, func(o string) string { return o + "/new" }},
	}

	type build func(t *testing.T, dir string) pathRow
	var rows []struct {
		name  string
		build build
	}
	add := func(name string, b build) {
		rows = append(rows, struct {
			name  string
			build build
		}{name, b})
	}
	for _, s := range inputs {
		prefix := s.verb + " " + s.name + ": "
		add(prefix+"missing file", func(t *testing.T, dir string) pathRow {
			p := filepath.Join(dir, "missing", "dump.json")
			return pathRow{args: s.args(p, false, dir+"/out"), named: p}
		})
		add(prefix+"folder", func(t *testing.T, dir string) pathRow {
			p := filepath.Join(dir, "folder")
			mkdir(t, p)
			return pathRow{args: s.args(p, true, dir+"/out"), named: p}
		})
		add(prefix+"unreadable file", func(t *testing.T, dir string) pathRow {
			// a copy of a file the slot reads, so that only the mode is wrong
			src, name := npu, "model.txt"
			switch s.name {
			case "-tp", "-gp":
				src, name = filepath.Join(gNPU, "dump.json"), "dump.json"
			case "MAPPING", "--mapping", "--pairs-in", "--pairs", "-dm", "-i", "ARG":
				src, name = lm, "mapping.yaml"
			}
			p := filepath.Join(dir, "unreadable", name)
			b, err := os.ReadFile(src)
			if err != nil {
				t.Fatal(err)
			}
			write(t, p, b)
			if err := os.Chmod(p, 0); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Chmod(p, 0o644) })
			r := pathRow{args: s.args(p, false, dir+"/out"), named: p}
			if asRoot && s.verb != "templates" {
				r.skip = "running as root, which reads a file of mode 000"
			}
			return r
		})
	}
	for _, s := range outputs {
		prefix := s.verb + " " + s.name + ": "
		add(prefix+"folder it may not write in", func(t *testing.T, dir string) pathRow {
			o := filepath.Join(dir, "readonly")
			mkdir(t, o)
			if err := os.Chmod(o, 0o555); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Chmod(o, 0o755) })
			if asRoot {
				// root writes in a folder of mode 555; procfs takes no new
				// file even from root
				if runtime.GOOS != "linux" {
					return pathRow{skip: "running as root, which writes in a folder of mode 555, and no /proc here"}
				}
				o = "/proc/self"
			}
			return pathRow{args: s.args(o, dir), named: s.named(o)}
		})
		add(prefix+"a file where its folder should be", func(t *testing.T, dir string) pathRow {
			o := write(t, filepath.Join(dir, "plain-file"), []byte("x\n"))
			return pathRow{args: s.args(o, dir), named: s.named(o)}
		})
	}

	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			r := row.build(t, dir)
			if r.skip != "" {
				t.Skip(r.skip)
			}
			before := regularFiles(t, dir)
			var out, errb bytes.Buffer
			code := Execute(r.args, strings.NewReader(""), &out, &errb)
			msg := errb.String()
			if code != ExitBadInput {
				t.Fatalf("layermap %s: exit %d, want %d; stderr %q", strings.Join(r.args, " "), code, ExitBadInput, clip(msg))
			}
			checkPathMessage(t, msg, r.named)
			if after := regularFiles(t, dir); !slices.Equal(before, after) {
				t.Errorf("files before the run %q, after %q: the run wrote something", before, after)
			}
		})
	}
}

// pathMessage is the one-line form of a bad path: "layermap: PATH[:LINE]:
// expected X, found Y" (templates: "templates: expected ..., found ...").
var pathMessage = regexp.MustCompile(`^layermap: (.+?)(:\d+)*: expected (.+), found (.+)\n$`)

// rawFS matches Go's file-system errors ("open PATH: ...", "stat PATH:
// ...", "mkdir PATH: ...") that the messages must not show.
var rawFS = regexp.MustCompile(`\b(open|stat|lstat|mkdir|readdirent|read|createtemp) /`)

func checkPathMessage(t *testing.T, msg, named string) {
	t.Helper()
	m := pathMessage.FindStringSubmatch(msg)
	switch {
	case m == nil:
		t.Errorf("stderr %q: want one line \"layermap: PATH: expected ..., found ...\"", clip(msg))
	case m[1] != named && m[1] != "templates":
		t.Errorf("stderr %q names %q, want %q", clip(msg), m[1], named)
	case rawFS.MatchString(msg):
		t.Errorf("stderr %q holds a raw Go file-system error", clip(msg))
	}
}

// regularFiles lists the regular files under dir.
func regularFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // a folder of mode 000 or 555 the row made
		}
		if d.Type().IsRegular() {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func mkdir(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
}
