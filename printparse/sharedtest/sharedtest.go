// Package sharedtest locates the material that layermap's tests read from
// outside the module: the shared corpus of real structure dumps and msprobe
// fixtures, and the shared docs (seed templates). Both live in a folder
// named shared beside the module root (../shared from the directory that
// holds go.mod), on a developer's checkout and in CI alike.
package sharedtest

import (
	"os"
	"path/filepath"
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
