// Package sharedtest locates the material that layermap's tests read from
// outside the module: the shared corpus of real structure dumps and msprobe
// fixtures, and the shared docs (seed templates). Both live in a folder
// named shared beside the module root (../shared from the directory that
// holds go.mod), on a developer's checkout and in CI alike.
package sharedtest

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// ModuleRoot returns the directory holding go.mod, searched upwards from
// the working directory of the test.
func ModuleRoot(tb testing.TB) string {
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

// Path returns <module root>/../shared/<rel...> and fails the test when it
// does not exist: the shared material is part of every checkout that runs
// the tests.
func Path(tb testing.TB, rel ...string) string {
	tb.Helper()
	p := filepath.Join(append([]string{ModuleRoot(tb), "..", "shared"}, rel...)...)
	if _, err := os.Stat(p); err != nil {
		tb.Fatalf("shared material missing: %v", err)
	}
	return p
}

// Corpus returns <module root>/../shared/corpus/<rel...> (see Path).
func Corpus(tb testing.TB, rel ...string) string {
	tb.Helper()
	return Path(tb, append([]string{"corpus"}, rel...)...)
}

// Golden compares got with the golden file at path and reports the first
// differing line; with update set it (re)writes the file instead, creating
// its folder. Review the diff of a rewritten golden before committing it.
func Golden(tb testing.TB, path string, got []byte, update bool) {
	tb.Helper()
	if update {
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
func FirstDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b {
			return "line " + strconv.Itoa(i+1) + ":\n  want " + a + "\n  got  " + b
		}
	}
	return ""
}
