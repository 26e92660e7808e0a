package cmd

import (
	"bytes"
	"io"
	"maps"
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

// rankDump writes a rank folder (dump.json, construct.json, stack.json)
// whose "data" objects hold the members "name=max" (a Linear-like forward
// entry: one input, one output with that Max); "|" starts another "data"
// key. extra, when set, replaces the text after the last "data" object.
func rankDump(t *testing.T, dir, members string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("{\n \"task\": \"statistics\",\n \"level\": \"mix\",\n \"framework\": \"pytorch\",\n \"dump_data_dir\": null")
	tensor := func(max string) string {
		return `{"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2, 4], "Max": ` + max + `, "Min": -1.0, "Mean": 0.5, "Norm": 2.0, "requires_grad": false}`
	}
	construct := map[string]bool{}
	for _, data := range strings.Split(members, "|") {
		b.WriteString(",\n \"data\": {")
		for i, m := range strings.Fields(data) {
			name, max, _ := strings.Cut(m, "=")
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString("\n  \"" + name + "\": {\n   \"input_args\": [\n    " + tensor("1.5") + "\n   ],\n   \"output\": [\n    " + tensor(max) + "\n   ]\n  }")
			construct[name] = true
		}
		b.WriteString("\n }")
	}
	b.WriteString("\n}\n")
	write(t, filepath.Join(dir, "dump.json"), []byte(b.String()))
	var c []string
	for name := range construct {
		c = append(c, `"`+name+`": null`)
	}
	write(t, filepath.Join(dir, "construct.json"), []byte("{"+strings.Join(c, ", ")+"}"))
	write(t, filepath.Join(dir, "stack.json"), []byte("{}"))
	return dir
}

// tables returns the compare tables an output folder holds, by file
// name without the time stamp.
func tables(t *testing.T, dir string) map[string]string {
	t.Helper()
	ents, _ := os.ReadDir(dir)
	out := map[string]string{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[strings.TrimRight(strings.SplitN(e.Name(), "2", 2)[0], "_")] = string(b)
	}
	return out
}

// A dump.json whose "data" repeats a key is compared as msprobe (Python's
// json.load) reads it: the entry at its first place with its last body;
// a second "data" replaces the first. Either side, any join.
func TestHostileRepeatedKeys(t *testing.T) {
	const a, b, c = "Module.fc1.Linear.forward.0", "Module.fc2.Linear.forward.0", "Module.fc3.Linear.forward.0"
	tests := []struct{ name, file, python string }{
		{"a key given twice", a + "=1 " + b + "=2 " + a + "=9 " + c + "=4", a + "=9 " + b + "=2 " + c + "=4"},
		{"three times", a + "=1 " + a + "=2 " + b + "=5 " + a + "=7", a + "=7 " + b + "=5"},
		{"two data keys", a + "=1 " + c + "=2|" + b + "=3 " + a + "=8", b + "=3 " + a + "=8"},
	}
	other := a + "=2 " + b + "=2 " + c + "=4"
	for _, tc := range tests {
		for _, side := range []string{"npu", "bench"} {
			// -dm and -lm also index both dumps for the N:1 detection
			for _, flags := range [][]string{nil, {"-fm"}, {"-dm", "dm.yaml"}, {"-lm", "map.yaml"}} {
				t.Run(tc.name+" "+side+" "+strings.Join(flags, ""), func(t *testing.T) {
					t.Parallel()
					dir := t.TempDir()
					extra := flags
					switch { // the mapping files
					case len(flags) == 2 && flags[0] == "-dm":
						extra = []string{flags[0], write(t, filepath.Join(dir, flags[1]), []byte(b+".input.0: "+c+".input.0\n"))}
					case len(flags) == 2:
						extra = []string{flags[0], write(t, filepath.Join(dir, flags[1]), []byte("Linear:\n  fc2: fc3\n"))}
					}
					rep := rankDump(t, filepath.Join(dir, "rep"), tc.file)
					py := rankDump(t, filepath.Join(dir, "py"), tc.python)
					oth := rankDump(t, filepath.Join(dir, "other"), other)
					run := func(d string) (int, map[string]string) {
						out := filepath.Join(dir, "out-"+filepath.Base(d))
						os.Mkdir(out, 0o755)
						args := []string{"-tp", d, "-gp", oth, "-o", out}
						if side == "bench" {
							args = []string{"-tp", oth, "-gp", d, "-o", out}
						}
						code, _, stderr := execCompare(t, append(args, extra...)...)
						if code == ExitBadInput {
							t.Fatalf("compare %s: %s", d, stderr)
						}
						return code, tables(t, out)
					}
					gc, got := run(rep)
					wc, want := run(py)
					if gc != wc || got["compare_result"] == "" || !maps.Equal(got, want) { // (-lm also writes the data mapping)
						t.Errorf("exit %d, tables:\n%v\nwant exit %d, tables:\n%v", gc, got, wc, want)
					}
				})
			}
		}
	}
}

// Bad JSON, paths and names: exit 2, the file and line named, what was
// expected said, and nothing written.
func TestHostileDumps(t *testing.T) {
	const a, b = "Module.fc1.Linear.forward.0", "Module.fc2.Linear.forward.0"
	pair := func(t *testing.T, dir string) (npu, bench string) {
		return rankDump(t, filepath.Join(dir, "npu"), a+"=1 "+b+"=2"), rankDump(t, filepath.Join(dir, "bench"), a+"=1 "+b+"=3")
	}
	edit := func(t *testing.T, path string, f func([]byte) []byte) {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		write(t, path, f(data))
	}
	appendTo := func(s string) func([]byte) []byte { return func(b []byte) []byte { return append(b, s...) } }
	badNumber := func(b []byte) []byte { return bytes.Replace(b, []byte(`"Min": -1.0`), []byte(`"Min": -1.0.5`), 1) } // on the first entry's line 9
	noData := func(b []byte) []byte { return bytes.Replace(b, []byte(`"data"`), []byte(`"datum"`), 1) }
	compare := func(change func(t *testing.T, npu, bench string)) func(t *testing.T, dir string) ([]string, io.Reader) {
		return func(t *testing.T, dir string) ([]string, io.Reader) {
			npu, bench := pair(t, dir)
			change(t, npu, bench)
			out := emptyOut(t, dir)
			return []string{"compare", "-tp", npu, "-gp", bench, "-o", out}, nil
		}
	}
	tree := func(change func(t *testing.T, npu string)) func(t *testing.T, dir string) ([]string, io.Reader) {
		return func(t *testing.T, dir string) ([]string, io.Reader) {
			npu, _ := pair(t, dir)
			change(t, npu)
			return []string{"tree", npu}, nil
		}
	}
	runHostile(t, []hostileCase{
		{"dump.json with trailing garbage", compare(func(t *testing.T, npu, _ string) {
			edit(t, filepath.Join(npu, "dump.json"), appendTo("{}"))
		}), ExitBadInput, []string{"npu/dump.json:25: expected end of file after the dump object, found '{'"}},
		{"construct.json with trailing garbage", tree(func(t *testing.T, npu string) {
			edit(t, filepath.Join(npu, "construct.json"), appendTo("\n]"))
		}), ExitBadInput, []string{"npu/construct.json:2: expected end of file, found ']'"}},
		{"stack.json with trailing garbage", compare(func(t *testing.T, npu, _ string) {
			edit(t, filepath.Join(npu, "stack.json"), appendTo(" x"))
		}), ExitBadInput, []string{"npu/stack.json:1: expected end of file"}},
		// msprobe loads the NPU dump.json whole, then the bench one, and
		// stack.json after both (compare's get_compare_framework, then
		// ParseData.parse): the first syntax error of that order is the
		// one reported, whatever the table reached first
		{"stack.json and both dump.json bad", compare(func(t *testing.T, npu, bench string) {
			edit(t, filepath.Join(npu, "stack.json"), appendTo(" x"))
			edit(t, filepath.Join(npu, "dump.json"), appendTo("{}"))
			edit(t, filepath.Join(bench, "dump.json"), appendTo("{}"))
		}), ExitBadInput, []string{"npu/dump.json:25: expected end of file, found '{'"}},
		{"stack.json and the bench dump.json bad", compare(func(t *testing.T, npu, bench string) {
			edit(t, filepath.Join(npu, "stack.json"), appendTo(" x"))
			edit(t, filepath.Join(bench, "dump.json"), appendTo("{}"))
		}), ExitBadInput, []string{"bench/dump.json:25: expected end of file, found '{'"}},
		{"a bad bench body before a bad NPU body", compare(func(t *testing.T, npu, bench string) {
			edit(t, filepath.Join(bench, "dump.json"), badNumber)
			edit(t, filepath.Join(npu, "dump.json"), func(b []byte) []byte {
				i := bytes.LastIndex(b, []byte(`"Norm": 2.0`))
				return append(b[:i:i], append([]byte(`"Norm": 2.0 2`), b[i+len(`"Norm": 2.0`):]...)...)
			})
		}), ExitBadInput, []string{"npu/dump.json:20: expected ',' or '}', found a number"}},
		{"a bad bench body and no NPU data", compare(func(t *testing.T, npu, bench string) {
			edit(t, filepath.Join(npu, "dump.json"), noData)
			edit(t, filepath.Join(bench, "dump.json"), badNumber)
		}), ExitBadInput, []string{"bench/dump.json:9: expected ',' or '}', found '.'"}},
		{"a bad NPU body and no bench data", compare(func(t *testing.T, npu, bench string) {
			edit(t, filepath.Join(bench, "dump.json"), noData)
			edit(t, filepath.Join(npu, "dump.json"), badNumber)
		}), ExitBadInput, []string{"npu/dump.json:9: expected ',' or '}', found '.'"}},
		{"an NPU dump.json that is a folder and a bad bench body", compare(func(t *testing.T, npu, bench string) {
			os.Remove(filepath.Join(npu, "dump.json"))
			os.Mkdir(filepath.Join(npu, "dump.json"), 0o755)
			edit(t, filepath.Join(bench, "dump.json"), badNumber)
		}), ExitBadInput, []string{"npu/dump.json: expected a regular file, found a folder"}},
		{"a bad bench body and the tasks differ", compare(func(t *testing.T, npu, bench string) {
			edit(t, filepath.Join(npu, "dump.json"), func(b []byte) []byte { return bytes.Replace(b, []byte(`"statistics"`), []byte(`"tensor"`), 1) })
			edit(t, filepath.Join(bench, "dump.json"), badNumber)
		}), ExitBadInput, []string{"bench/dump.json:9: expected ',' or '}', found '.'"}},
		{"invalid UTF-8 in a dump.json string", compare(func(t *testing.T, _, bench string) {
			edit(t, filepath.Join(bench, "dump.json"), func(b []byte) []byte { return bytes.Replace(b, []byte("float32"), []byte("float\xff32"), 1) })
		}), ExitBadInput, []string{"bench/dump.json:9: expected UTF-8 text in the string, found byte 0xff"}},
		{"invalid UTF-8 in an entry name", tree(func(t *testing.T, npu string) {
			edit(t, filepath.Join(npu, "dump.json"), func(b []byte) []byte { return bytes.Replace(b, []byte("fc2"), []byte("f\xc3c2"), 1) })
		}), ExitBadInput, []string{"npu/dump.json:15: expected UTF-8 text in the string, found byte 0xc3"}},
		{"invalid UTF-8 in construct.json", tree(func(t *testing.T, npu string) {
			write(t, filepath.Join(npu, "construct.json"), []byte("{\n\"Module.f\xe9.Linear.forward.0\": null}"))
		}), ExitBadInput, []string{"npu/construct.json:2: expected UTF-8 text in the string, found byte 0xe9"}},
		{"a byte-order mark", compare(func(t *testing.T, npu, _ string) {
			edit(t, filepath.Join(npu, "dump.json"), func(b []byte) []byte { return append([]byte("\xef\xbb\xbf"), b...) })
		}), ExitBadInput, []string{"npu/dump.json:1: expected '{' starting the dump object, found a UTF-8 byte-order mark (BOM)"}},
		{"dump.json is a folder", compare(func(t *testing.T, npu, _ string) {
			os.Remove(filepath.Join(npu, "dump.json"))
			os.Mkdir(filepath.Join(npu, "dump.json"), 0o755)
		}), ExitBadInput, []string{"npu/dump.json: expected a regular file, found a folder"}},
		{"a looping symbolic link", func(t *testing.T, dir string) ([]string, io.Reader) {
			_, bench := pair(t, dir)
			loop := filepath.Join(dir, "loop")
			os.Symlink(loop, loop)
			return []string{"compare", "-tp", loop, "-gp", bench, "-o", dir}, nil
		}, ExitBadInput, []string{"loop: expected a dump folder or file, found a symbolic link that loops"}},
		{"a looping rank folder link", func(t *testing.T, dir string) ([]string, io.Reader) {
			step := filepath.Join(dir, "step")
			os.MkdirAll(step, 0o755)
			os.Symlink(filepath.Join(step, "rank0"), filepath.Join(step, "rank0"))
			return []string{"tree", step}, nil
		}, ExitBadInput, []string{"step/rank0: expected a rank folder, found a symbolic link that loops"}},
		{"a rank folder against a step folder", func(t *testing.T, dir string) ([]string, io.Reader) {
			npu, _ := pair(t, dir)
			rankDump(t, filepath.Join(dir, "step", "rank0"), a+"=1")
			return []string{"compare", "-tp", npu, "-gp", filepath.Join(dir, "step"), "-o", dir}, nil
		}, ExitBadInput, []string{"/step: expected a rank folder (holding dump.json) like", "found a step folder (holding rank folders): pass one of its rank folders to -gp"}},
		{"compare.json with trailing garbage", func(t *testing.T, dir string) ([]string, io.Reader) {
			npu, bench := pair(t, dir)
			cj := write(t, filepath.Join(dir, "compare.json"), []byte(`{"npu_path": "`+npu+`/dump.json", "bench_path": "`+bench+`/dump.json"}`+"\n\nnot json\n"))
			return []string{"compare", "-i", cj, "-o", dir}, nil
		}, ExitBadInput, []string{"compare.json:3: expected end of file after the JSON object"}},
		{"an entry name msprobe refuses under -lm", func(t *testing.T, dir string) ([]string, io.Reader) {
			npu, bench := pair(t, dir)
			edit(t, filepath.Join(npu, "dump.json"), func(b []byte) []byte {
				return bytes.Replace(b, []byte(`"`+a+`"`), []byte(`"fc1.forward"`), 1)
			})
			write(t, filepath.Join(npu, "stack.json"), []byte(`{"fc1.forward": []}`)) // msprobe reads no names with an empty stack.json
			lm := write(t, filepath.Join(dir, "map.yaml"), []byte("Linear:\n  fc1: fc2\n"))
			return []string{"compare", "-tp", npu, "-gp", bench, "-lm", lm, "-o", dir}, nil
		}, ExitBadInput, []string{`npu/dump.json:7: expected an entry name of at least four '.'-separated fields (msprobe refuses it), found "fc1.forward"`}},
		{"suggest -o into a missing folder", func(t *testing.T, dir string) ([]string, io.Reader) {
			npu, bench := pair(t, dir)
			return []string{"suggest", npu, bench, "-o", filepath.Join(dir, "no", "such", "map.yaml")}, nil
		}, ExitBadInput, []string{"no/such: expected an existing folder for map.yaml, found nothing there"}},
	})
}

// construct.json and stack.json repeating a key read as Python reads
// them too: the last value (tree, and compare's stack column).
func TestHostileRepeatedKeysSmallFiles(t *testing.T) {
	const a, b = "Module.fc1.Linear.forward.0", "Module.fc2.Linear.forward.0"
	dir := t.TempDir()
	rep := rankDump(t, filepath.Join(dir, "rep"), a+"=1 "+b+"=2")
	py := rankDump(t, filepath.Join(dir, "py"), a+"=1 "+b+"=2")
	write(t, filepath.Join(rep, "construct.json"), []byte(`{"`+a+`": null, "`+b+`": null, "`+b+`": "Module.blk.Block.forward.0"}`))
	write(t, filepath.Join(py, "construct.json"), []byte(`{"`+a+`": null, "`+b+`": "Module.blk.Block.forward.0"}`))
	write(t, filepath.Join(rep, "stack.json"), []byte(`{"`+a+`": ["File a.py, line 1, in f"], "`+a+`": ["File b.py, line 2, in g"]}`))
	write(t, filepath.Join(py, "stack.json"), []byte(`{"`+a+`": ["File b.py, line 2, in g"]}`))
	for _, args := range [][]string{{"tree"}, {"tree", "--json"}} {
		var want, got bytes.Buffer
		if code := Execute(append(args, py), nil, &want, io.Discard); code != ExitOK {
			t.Fatalf("%v on the Python reading: exit %d", args, code)
		}
		Execute(append(args, rep), nil, &got, io.Discard)
		if strings.ReplaceAll(got.String(), rep, py) != want.String() {
			t.Errorf("%v:\n%s\nwant\n%s", args, got.String(), want.String())
		}
	}
	oth := rankDump(t, filepath.Join(dir, "other"), a+"=1 "+b+"=3")
	for _, d := range []string{rep, py} {
		out := filepath.Join(dir, "out-"+filepath.Base(d))
		os.Mkdir(out, 0o755)
		if code, _, stderr := execCompare(t, "-tp", d, "-gp", oth, "-o", out); code == ExitBadInput {
			t.Fatal(stderr)
		}
	}
	if got, want := tables(t, filepath.Join(dir, "out-rep")), tables(t, filepath.Join(dir, "out-py")); got["compare_result"] != want["compare_result"] || !strings.Contains(got["compare_result"], "b.py") {
		t.Errorf("stack column:\n%s\nwant\n%s", got["compare_result"], want["compare_result"])
	}
}

// emptyOut makes the output folder dir/out for a command that must fail
// and checks, when the test ends, that it wrote nothing there.
func emptyOut(t *testing.T, dir string) string {
	t.Helper()
	out := filepath.Join(dir, "out")
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if ents, _ := os.ReadDir(out); len(ents) > 0 {
			t.Errorf("files left in the output folder: %v", ents)
		}
	})
	return out
}
