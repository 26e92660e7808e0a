package cmd

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/layermap/layermap/printparse/source"
)

// hostileCase is one row of issue 9's table: input built by the test, the
// command, and what must come out: the exit status and a one-line error
// naming the file (and line) and what was expected.
type hostileCase struct {
	name  string
	setup func(t *testing.T, dir string) (args []string, stdin io.Reader)
	code  int
	want  []string // substrings of stderr
}

// runHostile runs each case and checks its status, its message and that
// the message is one short line.
func runHostile(t *testing.T, tests []hostileCase) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			args, in := tc.setup(t, dir)
			if in == nil {
				in = strings.NewReader("")
			}
			var out, errb bytes.Buffer
			code := Execute(args, in, &out, &errb)
			msg := errb.String()
			if code != tc.code {
				t.Fatalf("layermap %s: exit %d, want %d; stderr %q", strings.Join(args, " "), code, tc.code, clip(msg))
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("stderr %q does not hold %q", clip(msg), w)
				}
			}
			if tc.code == ExitBadInput {
				if lines := strings.Count(strings.TrimSuffix(msg, "\n"), "\n") + 1; lines != 1 || len(msg) > 400 {
					t.Errorf("error is %d lines, %d bytes; want one short line: %q", lines, len(msg), clip(msg))
				}
			}
		})
	}
}

func clip(s string) string {
	if len(s) > 600 {
		return s[:300] + " … " + s[len(s)-300:]
	}
	return s
}

func write(t *testing.T, path string, data []byte) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// nested is a print(model) text of modules nested depth deep, printed
// without indentation; closed adds the closing lines.
func nested(depth int, closed bool) []byte {
	var b bytes.Buffer
	b.WriteString("Model(\n")
	for range depth {
		b.WriteString("(m): Mod(\n")
	}
	b.WriteString("(x): Linear(in_features=1, out_features=1, bias=True)\n")
	if closed {
		b.WriteString(strings.Repeat(")\n", depth+1))
	}
	return b.Bytes()
}

func TestHostilePrints(t *testing.T) {
	deep := func(depth int, closed bool) func(t *testing.T, dir string) ([]string, io.Reader) {
		return func(t *testing.T, dir string) ([]string, io.Reader) {
			return []string{"tree", write(t, filepath.Join(dir, "deep.txt"), nested(depth, closed))}, nil
		}
	}
	depthErr := "deep.txt:4098: expected modules nested at most 4096 deep"
	runHostile(t, []hostileCase{
		{"nested 40k deep, no indentation", deep(40_000, true), ExitBadInput, []string{depthErr, "m.m.m.m.m.m.…(4084 more).m.m.m.m.m.m (Mod)"}},
		{"nested 100k deep", deep(100_000, true), ExitBadInput, []string{depthErr}},
		{"unclosed 100k deep", deep(100_000, false), ExitBadInput, []string{depthErr}},
		{"unclosed 4000 deep: short error", deep(4000, false), ExitBadInput, []string{"deep.txt:4002: expected `)` closing m.m.m.m.m.m.…(3988 more).m.m.m.m.m.m (Mod) from line 4001"}},
		{"nested 4096 deep is read", deep(4095, true), ExitOK, nil},
		{"paths over their budget", func(t *testing.T, dir string) ([]string, io.Reader) {
			// 2,000 levels of 60-byte names, then 3,000 leaves: 360 MB of paths from 140 KB
			var b bytes.Buffer
			b.WriteString("Model(\n")
			name := strings.Repeat("n", 60)
			for range 2000 {
				b.WriteString("(" + name + "): Mod(\n")
			}
			b.WriteString("(0-2999): 3000 x Linear(in_features=1, out_features=1, bias=True)\n")
			return []string{"tree", write(t, filepath.Join(dir, "wide.txt"), b.Bytes())}, nil
		}, ExitBadInput, []string{"wide.txt:2002: expected module paths of at most 256 MiB in all"}},
		{"/dev/zero", func(t *testing.T, dir string) ([]string, io.Reader) {
			return []string{"tree", "/dev/zero"}, nil
		}, ExitBadInput, []string{"/dev/zero: expected a regular file, found a character device"}},
		{"zeros on standard input", func(t *testing.T, dir string) ([]string, io.Reader) {
			return []string{"tree", "-"}, zeros{}
		}, ExitBadInput, []string{"<stdin>: expected text holding a print(model) dump, found binary data"}},
		{"3 GB non-text file", func(t *testing.T, dir string) ([]string, io.Reader) {
			p := filepath.Join(dir, "big.bin")
			f, err := os.Create(p)
			if err != nil {
				t.Fatal(err)
			}
			f.Write([]byte("PK\x03\x04\x00\x00"))
			if err := f.Truncate(3 << 30); err != nil { // sparse: no disk used
				t.Skip(err)
			}
			f.Close()
			return []string{"tree", p}, nil
		}, ExitBadInput, []string{"big.bin: expected text holding a print(model) dump, found binary data (a NUL byte in its first 8 KiB)"}},
		{"text over the size budget", func(t *testing.T, dir string) ([]string, io.Reader) {
			p := filepath.Join(dir, "big.txt")
			f, err := os.Create(p)
			if err != nil {
				t.Fatal(err)
			}
			f.Write(bytes.Repeat([]byte("log line\n"), source.TextBlock))
			if err := f.Truncate(source.MaxText + 1); err != nil {
				t.Skip(err)
			}
			f.Close()
			return []string{"tree", p}, nil
		}, ExitBadInput, []string{"big.txt: expected a file of at most 256 MiB, found 256.0 MiB"}},
		{"invalid UTF-8 in a class name", func(t *testing.T, dir string) ([]string, io.Reader) {
			return []string{"tree", write(t, filepath.Join(dir, "m.txt"), []byte("Mod\xffel(\n  (fc): Linear(in_features=1, out_features=1, bias=True)\n)\n"))}, nil
		}, ExitBadInput, []string{"m.txt:1:4: expected UTF-8 text, found byte 0xff"}},
		{"invalid UTF-8 in a child line", func(t *testing.T, dir string) ([]string, io.Reader) {
			return []string{"tree", write(t, filepath.Join(dir, "m.txt"), []byte("Model(\n  (f\xe9c): Linear(in_features=1, out_features=1, bias=True)\n)\n"))}, nil
		}, ExitBadInput, []string{"m.txt:2:5: expected UTF-8 text, found byte 0xe9"}},
		{"Unicode class names are read whole", func(t *testing.T, dir string) ([]string, io.Reader) {
			return []string{"tree", write(t, filepath.Join(dir, "m.txt"), []byte("模型：Modèl(\n  (fc): Linéar(in_features=1, out_features=1, bias=True)\n)\n"))}, nil
		}, ExitOK, nil},
	})
}

// zeros is /dev/zero as a reader: endless NUL bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// nestDump writes an msprobe rank folder whose one entry names a module
// depth levels deep.
func nestDump(t *testing.T, dir string, depth int) string {
	name := "Module." + strings.TrimSuffix(strings.Repeat("m.", depth), ".") + ".Mod.forward.0"
	tensor := `{"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2], "Max": 1.0, "Min": 0.0, "Mean": 0.5, "Norm": 1.0, "requires_grad": false}`
	write(t, filepath.Join(dir, "dump.json"), []byte(`{"task": "statistics", "level": "mix", "framework": "pytorch", "dump_data_dir": null, "data": {
 "`+name+`": {"input_args": [`+tensor+`], "output": [`+tensor+`]}}}`))
	write(t, filepath.Join(dir, "construct.json"), []byte(`{"`+name+`": null}`))
	write(t, filepath.Join(dir, "stack.json"), []byte(`{}`))
	return dir
}

func TestHostileDumpTrees(t *testing.T) {
	runHostile(t, []hostileCase{
		{"suggest on one module nested 2,000 deep", func(t *testing.T, dir string) ([]string, io.Reader) {
			d := nestDump(t, filepath.Join(dir, "nest"), 2000)
			return []string{"suggest", d, d, "-o", filepath.Join(dir, "map.yaml")}, nil
		}, ExitOK, nil},
		{"a module nested 100,000 deep", func(t *testing.T, dir string) ([]string, io.Reader) {
			return []string{"tree", nestDump(t, filepath.Join(dir, "nest"), 100_000)}, nil
		}, ExitBadInput, []string{"nest/dump.json:2: expected modules nested at most 4096 deep", "naming a module at depth 100000"}},
	})
}
