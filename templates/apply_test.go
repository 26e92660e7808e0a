package templates

import (
	"fmt"
	"strings"
	"testing"

	"github.com/layermap/layermap/printparse/treetest"
)

// TestApplyRules exercises each rule of Apply's definition on small trees:
// longest key first, shadowing by an ancestor's longer key, indexed lines,
// drift to two tree classes, the "(" cut, and absent classes.
func TestApplyRules(t *testing.T) {
	npu := treetest.Parse(t, "inline", `Top(
  (blocks): ModuleList(
    (0): Block(
      (attn): XSdpaAttention(
        (o): Linear()
      )
    )
    (1): Block(
      (attn): XFlashAttention2(
        (o): Linear()
      )
    )
  )
  (head): Linear()
  (extra): Block(
    (attn): Other()
  )
)`)
	bench := treetest.Parse(t, "inline", `Top(
  (layers): ModuleList(
    (0-1): 2 x Layer(
      (self_attn): A(
        (out): Linear()
      )
    )
  )
  (lm): Linear()
)`)
	tp, err := Parse("t.yaml", []byte(`# name: t
# kind: expert
# npu: N
# bench: B
# description: d
# provenance: p
TopLayer:
  blocks: layers
  head: lm(cut here)
  blocks.{i}.attn: layers.{i}.self_attn
Block:
  attn: nope
XAttention:
  o: out
Missing:
  a: b
`))
	if err != nil {
		t.Fatal(err)
	}
	applied, unapplied := tp.Apply(npu, bench)
	var got []string
	for _, a := range applied {
		got = append(got, fmt.Sprintf("%s|%s|%s|%s|hits=%d|misses=%d", a.Line.Class, a.Key, a.Value, a.TreeClass, len(a.Hits), len(a.Misses)))
	}
	want := []string{
		"TopLayer|blocks|layers||hits=1|misses=0",
		"TopLayer|head|lm||hits=1|misses=0",
		"TopLayer|blocks.0.attn|layers.0.self_attn||hits=1|misses=0",
		"TopLayer|blocks.1.attn|layers.1.self_attn||hits=1|misses=0",
		"XAttention|o|out|XFlashAttention2|hits=1|misses=0",
		"XAttention|o|out|XSdpaAttention|hits=1|misses=0",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("applied:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Block's "attn: nope" fires only at extra.attn (the layers' attn is
	// consumed by TopLayer's longer key) and misses there; Missing is absent.
	var un []string
	for _, l := range unapplied {
		un = append(un, l.String())
	}
	if w := "Block: attn -> nope\nMissing: a -> b"; strings.Join(un, "\n") != w {
		t.Errorf("unapplied:\n%s\nwant:\n%s", strings.Join(un, "\n"), w)
	}

	var exp []string
	for _, l := range tp.Expand(npu) {
		exp = append(exp, fmt.Sprintf("%s: %s: %s", l.Class, l.Key, l.Value))
	}
	wantExp := []string{
		"TopLayer: blocks: layers",
		"TopLayer: head: lm(cut here)",
		"TopLayer: blocks.0.attn: layers.0.self_attn",
		"TopLayer: blocks.1.attn: layers.1.self_attn",
		"Block: attn: nope",
		"XFlashAttention2: o: out",
		"XSdpaAttention: o: out",
		"Missing: a: b",
	}
	if strings.Join(exp, "\n") != strings.Join(wantExp, "\n") {
		t.Errorf("Expand:\n%s\nwant:\n%s", strings.Join(exp, "\n"), strings.Join(wantExp, "\n"))
	}
}
