// Package testkit is the one helper layermap's tests use to find their
// inputs and check their golden files.
//
// Inputs live in the repository: the corpus copies under the top-level
// testdata/corpus (mirroring the shared corpus's paths, with its provenance
// files), the seed templates under testdata/seed-templates, and each
// package's own testdata folder. Nothing outside the module is read, so the
// tests pass on a plain clone.
//
// Golden files are compared byte for byte; the one -update flag (go test
// ./PKG -update) rewrites them instead. Review the diff before committing.
package testkit

import (
	"bytes"
	"encoding/csv"
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files instead of comparing with them (review the diff)")

// Updating reports whether the test run was given -update.
func Updating() bool { return *update }

// Root returns the module root (the directory holding go.mod), searched
// upwards from the test's working directory.
func Root(tb testing.TB) string {
	tb.Helper()
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			tb.Fatal("no go.mod above the working directory")
		}
		dir = parent
	}
}

// Testdata returns <module root>/testdata/<rel...> and fails the test when
// it does not exist.
func Testdata(tb testing.TB, rel ...string) string {
	tb.Helper()
	p := filepath.Join(append([]string{Root(tb), "testdata"}, rel...)...)
	if _, err := os.Stat(p); err != nil {
		tb.Fatalf("test input missing: %v", err)
	}
	return p
}

// Corpus returns <module root>/testdata/corpus/<rel...>: the copy of the
// shared corpus file or folder at corpus/<rel...>. It fails the test when
// the path does not exist.
func Corpus(tb testing.TB, rel ...string) string {
	tb.Helper()
	return Testdata(tb, append([]string{"corpus"}, rel...)...)
}

// FilesNamed returns the files called name below root, in walk order,
// and fails the test when it finds fewer than least.
func FilesNamed(tb testing.TB, root, name string, least int) []string {
	tb.Helper()
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == name {
			files = append(files, p)
		}
		return err
	})
	if err != nil || len(files) < least {
		tb.Fatalf("%d files %s below %s, want at least %d (%v)", len(files), name, root, least, err)
	}
	return files
}

// SeedTemplate returns the path of msprobe's seed template name (without
// .yaml) under testdata/seed-templates.
func SeedTemplate(tb testing.TB, name string) string {
	tb.Helper()
	return Testdata(tb, "seed-templates", name+".yaml")
}

// Golden compares got with the golden file at path and reports the first
// differing line. Under -update it writes got to path instead, creating the
// folder.
func Golden(tb testing.TB, path string, got []byte) {
	tb.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			tb.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		tb.Errorf("output differs from %s (run go test -update and review the diff):\n%s", path, FirstDiff(string(want), string(got)))
	}
}

// FirstDiff describes the first line where want and got differ, or returns
// "" when they are equal.
func FirstDiff(want, got string) string { return DiffLines(want, got, 1) }

// DiffLines describes the first most lines where want and got differ
// (line number, want and got quoted) and, for most > 1, how many more
// differ and the line counts when they differ; "" when they are equal.
func DiffLines(want, got string, most int) string {
	if want == got {
		return ""
	}
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	bad := 0
	for i := 0; i < len(w) || i < len(g); i++ {
		var a, c string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			c = g[i]
		}
		if a == c && i < len(w) && i < len(g) {
			continue
		}
		if bad++; bad <= most {
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			b.WriteString("line " + strconv.Itoa(i+1) + ":\n  want " + strconv.Quote(a) + "\n  got  " + strconv.Quote(c))
		}
	}
	if most > 1 && bad > most {
		b.WriteString("\n(" + strconv.Itoa(bad-most) + " more lines differ)")
	}
	if most > 1 && len(w) != len(g) {
		b.WriteString("\n(want " + strconv.Itoa(len(w)) + " lines, got " + strconv.Itoa(len(g)) + ")")
	}
	return b.String()
}

// StringConstants returns the string constants declared in the non-test Go
// files of the package in dir, by name (to check that a table describes
// every code the package defines).
func StringConstants(tb testing.TB, dir string) map[string]string {
	tb.Helper()
	pkgs, err := parser.ParseDir(token.NewFileSet(), dir, func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	if err != nil {
		tb.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range pkgs {
		for _, f := range p.Files {
			for _, d := range f.Decls {
				g, ok := d.(*ast.GenDecl)
				if !ok || g.Tok != token.CONST {
					continue
				}
				for _, s := range g.Specs {
					vs := s.(*ast.ValueSpec)
					for i, n := range vs.Names {
						if i >= len(vs.Values) {
							continue
						}
						if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
							if v, err := strconv.Unquote(lit.Value); err == nil {
								out[n.Name] = v
							}
						}
					}
				}
			}
		}
	}
	return out
}

// CheckCodeTable fails the test unless codes lists, once each and in
// order, the value of every constant named Code* whose value starts with
// "LM" in the package in dir: a help text or table generated from codes
// then names every code there is.
func CheckCodeTable(tb testing.TB, dir string, codes []string) {
	tb.Helper()
	consts := map[string]bool{}
	for name, v := range StringConstants(tb, dir) {
		if strings.HasPrefix(name, "Code") && strings.HasPrefix(v, "LM") {
			consts[v] = true
		}
	}
	seen := map[string]bool{}
	prev := ""
	for _, c := range codes {
		if !consts[c] || seen[c] || c <= prev {
			tb.Errorf("code %s in the table: unknown, repeated or out of order", c)
		}
		seen[c], prev = true, c
	}
	for c := range consts {
		if !seen[c] {
			tb.Errorf("code %s is not in the table", c)
		}
	}
}

// ReadCSV reads the CSV file at path whole (a comparison table), failing
// the test when it cannot be read or parsed; every record must have as
// many fields as the first.
func ReadCSV(tb testing.TB, path string) [][]string {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	return rows
}

// ReadDir reads every file of dir (an output folder) by name, failing the
// test when it cannot.
func ReadDir(tb testing.TB, dir string) map[string][]byte {
	tb.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	m := map[string][]byte{}
	for _, e := range es {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			tb.Fatal(err)
		}
		m[e.Name()] = b
	}
	return m
}

// PeakRSS returns this process's peak resident set in bytes (VmHWM of
// /proc/self/status), or 0 where that file is missing. A benchmark child
// reports it itself: the parent's getrusage ru_maxrss of a child also
// counts the parent's own pages, which the child shares between fork and
// exec, so it reports the parent's resident set when that is the larger.
func PeakRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}

// WriteFile writes text to dir/name and returns its path.
func WriteFile(tb testing.TB, dir, name, text string) string {
	tb.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		tb.Fatal(err)
	}
	return p
}

// DumpDir writes a pytorch statistics dump folder into dir/name: a
// dump.json whose "data" holds the members data (JSON text without the
// braces), and empty stack.json and construct.json. It returns the
// folder.
func DumpDir(tb testing.TB, dir, name, data string) string {
	tb.Helper()
	d := filepath.Join(dir, name)
	if err := os.MkdirAll(d, 0o755); err != nil {
		tb.Fatal(err)
	}
	dump := `{"task": "statistics", "level": "mix", "framework": "pytorch", "dump_data_dir": null, "data": {` + data + `}}`
	for file, text := range map[string]string{"dump.json": dump, "stack.json": "{}", "construct.json": "{}"} {
		WriteFile(tb, d, file, text)
	}
	return d
}

// Tensor is a dump.json tensor item with statistics and the given
// data_name.
func Tensor(dataName string) string {
	return `{"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2], "Max": 1.0, "Min": 0.0, "Mean": 0.5, "Norm": 1.0, "requires_grad": false, "data_name": ` + strconv.Quote(dataName) + `}`
}

// NoGoroutineLeft fails tb unless the process's goroutines come back to
// before (runtime.NumGoroutine, counted before the work) within a
// second: goroutines the work left blocked would stay.
func NoGoroutineLeft(tb testing.TB, before int) {
	tb.Helper()
	for range 100 {
		if runtime.NumGoroutine() <= before {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	tb.Errorf("%d goroutines left, %d before", runtime.NumGoroutine(), before)
}
