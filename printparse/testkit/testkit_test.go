package testkit

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

func TestFirstDiff(t *testing.T) {
	tests := []struct{ want, got, diff string }{
		{"a\nb\n", "a\nb\n", ""},
		{"a\nb\n", "a\nc\n", "line 2:\n  want \"b\"\n  got  \"c\""},
		{"a\n", "a", "line 2:\n  want \"\"\n  got  \"\""},
		{"", "x", "line 1:\n  want \"\"\n  got  \"x\""},
	}
	for _, tc := range tests {
		if d := FirstDiff(tc.want, tc.got); d != tc.diff {
			t.Errorf("FirstDiff(%q, %q) = %q, want %q", tc.want, tc.got, d, tc.diff)
		}
	}
}

func TestDiffLines(t *testing.T) {
	tests := []struct {
		want, got string
		most      int
		diff      string
	}{
		{"a\nb\nc", "a\nb\nc", 3, ""},
		{"a\nb\nc", "x\nb\ny", 3, "line 1:\n  want \"a\"\n  got  \"x\"\nline 3:\n  want \"c\"\n  got  \"y\""},
		{"a\nb\nc", "x\ny\nz", 2, "line 1:\n  want \"a\"\n  got  \"x\"\nline 2:\n  want \"b\"\n  got  \"y\"\n(1 more lines differ)"},
		{"a\nb", "a", 5, "line 2:\n  want \"b\"\n  got  \"\"\n(want 2 lines, got 1)"},
		{"a\nb", "x\ny", 1, "line 1:\n  want \"a\"\n  got  \"x\""},
	}
	for _, tc := range tests {
		if d := DiffLines(tc.want, tc.got, tc.most); d != tc.diff {
			t.Errorf("DiffLines(%q, %q, %d) = %q, want %q", tc.want, tc.got, tc.most, d, tc.diff)
		}
	}
}

func TestGolden(t *testing.T) {
	if Updating() {
		t.Skip("-update rewrites goldens; nothing to check here")
	}
	path := filepath.Join(t.TempDir(), "x.golden")
	ft := &fakeTB{TB: t}
	Golden(ft, path, []byte("x\n"))
	if !ft.fatal {
		t.Error("a missing golden file must fail the test")
	}
}

// fakeTB records failures instead of failing the enclosing test.
type fakeTB struct {
	testing.TB
	fatal, failed bool
}

func (f *fakeTB) Helper()               {}
func (f *fakeTB) Fatalf(string, ...any) { f.fatal = true }
func (f *fakeTB) Errorf(string, ...any) { f.failed = true }
func (f *fakeTB) Fatal(...any)          { f.fatal = true }

// TestEveryTestPackageLinksTestkit keeps `go test ./... -update` working:
// the -update flag is defined here, so a test binary that does not link
// this package would refuse the flag. A package with no golden file
// imports it blank.
func TestEveryTestPackageLinksTestkit(t *testing.T) {
	const self = "github.com/layermap/layermap/printparse/testkit"
	root := Root(t)
	has := map[string]bool{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); p != root && (n == "testdata" || strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, "_test.go") {
			return nil
		}
		dir := filepath.Dir(p)
		if _, ok := has[dir]; !ok {
			has[dir] = false
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, im := range f.Imports {
			if path, _ := strconv.Unquote(im.Path.Value); path == self {
				has[dir] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for dir, ok := range has {
		rel, _ := filepath.Rel(root, dir)
		if !ok && rel != filepath.Join("printparse", "testkit") {
			t.Errorf("%s: no test file imports %s (add `import _ %q` so that go test ./... -update runs)", rel, self, self)
		}
	}
}

func TestPeakRSS(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("no /proc/self/status on this system")
	}
	before := PeakRSS()
	if before <= 0 {
		t.Fatalf("PeakRSS() = %d, want the resident set", before)
	}
	buf := make([]byte, before+64<<20)
	for i := 0; i < len(buf); i += 4096 {
		buf[i] = 1
	}
	after := PeakRSS()
	if after < before+60<<20 {
		t.Errorf("PeakRSS() after touching %d MB = %d MB, was %d MB", len(buf)>>20, after>>20, before>>20)
	}
	runtime.KeepAlive(buf)
}
