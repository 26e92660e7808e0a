package printparse

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/layermap/layermap/printparse/scan"
	"github.com/layermap/layermap/printparse/source"
	"github.com/layermap/layermap/printparse/testkit"
)

// FuzzParseText checks that no input makes the parser panic, that every
// failure is a one-line *source.Error whose line lies in the input (0 only for
// errors about the whole input), and that a tree read without repairs
// renders to text that parses back to the same rendering.
func FuzzParseText(f *testing.F) {
	prints := filepath.Join(testkit.Corpus(f), "prints")
	filepath.WalkDir(prints, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".txt") {
			if data, err := os.ReadFile(p); err == nil {
				f.Add(data, int8(-1))
			}
		}
		return err
	})
	f.Add([]byte(small), int8(0))
	f.Add([]byte("[A(\n  (m): B()\n), C(\n  (m): D(\n    (0-1): 2 x E()\n  )\n)]\n"), int8(-1))
	f.Add([]byte("0: M(\n0:   (a): A(x=B(\n0:     (t): T()\n0:   ), y=1)\n0: )\n"), int8(-1))
	f.Fuzz(func(t *testing.T, data []byte, index int8) {
		idx := int(index)
		if idx < -1 {
			idx = -1
		}
		tree, err := ParseText(data, "f", Options{Index: idx, MaxNodes: 20000})
		if err != nil {
			var pe *source.Error
			if !errors.As(err, &pe) {
				t.Fatalf("error is not a *source.Error: %v", err)
			}
			nlines := scan.Lines(string(data)).Len()
			if pe.Line < 0 || pe.Line > nlines+1 {
				t.Fatalf("error line %d outside the %d-line input: %v", pe.Line, nlines, err)
			}
			if pe.Line == 0 && !strings.Contains(pe.Expected, "dump") {
				t.Fatalf("line 0 on an error about one line: %v", err)
			}
			if strings.ContainsAny(err.Error(), "\n\r") {
				t.Fatalf("multi-line error %q", err)
			}
			return
		}
		tree.Walk(func(n *Node) bool {
			n.Kind()
			n.Dims()
			if n.Parent != nil && n.Path != joinPath(n.Parent.Path, n.Name) {
				t.Fatalf("path %q under %q named %q", n.Path, n.Parent.Path, n.Name)
			}
			return true
		})
		var js bytes.Buffer
		if err := WriteJSON(&js, tree); err != nil {
			t.Fatal(err)
		}
		if !json.Valid(js.Bytes()) {
			t.Fatalf("invalid JSON:\n%s", js.String())
		}
		var r1 bytes.Buffer
		if err := Render(&r1, tree, RenderOptions{}); err != nil {
			t.Fatal(err)
		}
		if len(tree.Warnings) > 0 || bytes.Count(r1.Bytes(), []byte("\n")) < 2 {
			return // repaired, or a root that PyTorch would print on one line
		}
		again, err := ParseText(r1.Bytes(), "r", Options{Index: 0, MaxNodes: 20000})
		if err != nil {
			t.Fatalf("rendering does not parse back: %v\n%s", err, r1.String())
		}
		var r2 bytes.Buffer
		Render(&r2, again, RenderOptions{})
		if r1.String() != r2.String() {
			t.Fatalf("render is not stable:\n%s\n---\n%s", r1.String(), r2.String())
		}
	})
}
