package printparse

import (
	"bufio"
	"bytes"
	"encoding/json"
	"testing"
)

func TestJSONStringEscaping(t *testing.T) {
	for _, s := range []string{"", "plain", `q"b\s`, "tab\tnl\ncr\r\x00\x1f\x7f", "é中文…", "bad\xffutf8\xc3", "sep\u2028\u2029", "<&>"} {
		var b bytes.Buffer
		j := &jsonWriter{w: bufio.NewWriter(&b)}
		j.str(s)
		j.w.Flush()
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		enc.Encode(s)
		if got := b.String() + "\n"; got != want.String() {
			t.Errorf("%q: got %s want %s", s, got, want.String())
		}
	}
}

func TestWriteJSONDecodes(t *testing.T) {
	in := "[A(\n  (m): B(\n    (0-1): 2 x C(in_features=1, out_features=2)\n    ...\n  )\n  (n): None\n)]\n"
	tree, err := ParseText([]byte(in), "in", Options{Index: -1})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteJSON(&b, tree); err != nil {
		t.Fatal(err)
	}
	var got struct {
		List     bool
		Warnings []struct{ Line int }
		Root     struct {
			Class    string
			Children []struct {
				Path     string
				Children []struct {
					Path     string
					Elided   bool
					None     bool
					Elisions []struct{ Line, Before int }
					Children []struct {
						Path   string
						Kind   string
						Dims   []int
						Repeat struct{ First, Last, Count, Line int }
					}
				}
			}
		}
	}
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	m := got.Root.Children[0].Children[0]
	if !got.List || got.Root.Class != "" || m.Path != "0.m" || !m.Elided || len(m.Elisions) != 1 || m.Elisions[0].Before != 2 ||
		len(m.Children) != 2 || m.Children[1].Path != "0.m.1" || m.Children[1].Repeat.Count != 2 || m.Children[1].Repeat.Line != 3 ||
		!got.Root.Children[0].Children[1].None || len(got.Warnings) != 1 {
		t.Errorf("decoded JSON does not hold the tree: %+v", got)
	}
}
