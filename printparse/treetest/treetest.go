// Package treetest reads module trees for tests, failing the test on an
// error (package testkit cannot: printparse's own tests import it).
package treetest

import (
	"testing"

	"github.com/layermap/layermap/printparse"
)

// Load reads the structure at path, a print(model) text or an msprobe
// dump folder, as printparse.Load does without --index.
func Load(tb testing.TB, path string) *printparse.Tree {
	tb.Helper()
	t, err := printparse.Load(path, printparse.Options{Index: -1})
	if err != nil {
		tb.Fatal(err)
	}
	return t
}

// Parse reads the print(model) text text; name names it in errors.
func Parse(tb testing.TB, name, text string) *printparse.Tree {
	tb.Helper()
	t, err := printparse.ParseText([]byte(text), name, printparse.Options{Index: -1})
	if err != nil {
		tb.Fatal(err)
	}
	return t
}
