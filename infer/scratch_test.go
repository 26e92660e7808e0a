package infer

import (
	"os"
	"testing"

	"github.com/layermap/layermap/printparse"
)

func load(t *testing.T, p string) *printparse.Tree {
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := printparse.ParseText(data, p, printparse.Options{Index: -1})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func TestScratch(t *testing.T) {
	a := os.Getenv("A")
	b := os.Getenv("B")
	if a == "" {
		t.Skip()
	}
	r, err := Suggest(load(t, a), load(t, b), Options{Template: os.Getenv("TPL")})
	if err != nil {
		t.Fatal(err)
	}
	y, _ := r.Mapping.Marshal()
	os.Stdout.Write(y)
	y, _ = r.Reverse.Marshal()
	os.Stdout.Write([]byte("----- reverse\n"))
	os.Stdout.Write(y)
	WriteReport(os.Stdout, r, "text")
}
