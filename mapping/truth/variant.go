package truth

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/layermap/layermap/printparse"
)

// Variants a pair can be scored on besides its own files. The truth rules
// are patterns over paths, so they label every variant without change.
const (
	// VariantExplicit prints every repeat-group member on its own, as
	// PyTorch before 1.13 did and as every msprobe dump folder is.
	VariantExplicit = "explicit"
	// VariantModuleDict is VariantExplicit with the layer lists printed as
	// ModuleDict (keys "0", "1", ...: never compressed, XTuner v1 style).
	VariantModuleDict = "moduledict"
	// VariantCut ("cut:K") keeps the first K members of every repeat group
	// on both sides (a big model cut down, like corpus pair A).
	VariantCut = "cut"
)

// A variant may chain several with "+", applied left to right:
// "cut:4+explicit" is the 4-layer cut printed layer by layer.

func checkVariant(v string) error {
	for _, x := range strings.Split(v, "+") {
		if _, _, err := parseVariant(x); err != nil {
			return err
		}
	}
	return nil
}

func parseVariant(v string) (kind string, k int, err error) {
	kind, arg, hasArg := strings.Cut(v, ":")
	switch kind {
	case VariantExplicit, VariantModuleDict:
		if !hasArg {
			return kind, 0, nil
		}
	case VariantCut:
		if k, err = strconv.Atoi(arg); err == nil && k > 0 {
			return kind, k, nil
		}
	}
	return "", 0, fmt.Errorf("unknown variant %q (want %s, %s or %s:K)", v, VariantExplicit, VariantModuleDict, VariantCut)
}

// PrintText reports whether both structures are print(model) text files,
// which the variants need (a dump folder is one already).
func (p *Pair) PrintText() bool {
	for _, f := range []string{p.NPUFile, p.BenchFile} {
		st, err := os.Stat(filepath.Join(p.Dir, f))
		if err != nil || st.IsDir() {
			return false
		}
	}
	return true
}

// Trees reads the pair's two structures.
func (p *Pair) Trees() (npu, bench *printparse.Tree, err error) {
	load := func(f string) (*printparse.Tree, error) {
		return printparse.Load(filepath.Join(p.Dir, f), printparse.Options{Index: -1})
	}
	if npu, err = load(p.NPUFile); err != nil {
		return nil, nil, err
	}
	if bench, err = load(p.BenchFile); err != nil {
		return nil, nil, err
	}
	return npu, bench, nil
}

// Variant returns trees derived from the pair's (see the Variant
// constants), both sides alike.
func Variant(npu, bench *printparse.Tree, v string) (*printparse.Tree, *printparse.Tree, error) {
	if first, rest, ok := strings.Cut(v, "+"); ok {
		npu, bench, err := Variant(npu, bench, first)
		if err != nil {
			return nil, nil, err
		}
		return Variant(npu, bench, rest)
	}
	kind, k, err := parseVariant(v)
	if err != nil {
		return nil, nil, err
	}
	conv := func(t *printparse.Tree) (*printparse.Tree, error) {
		if t.Kind != printparse.KindPrint {
			return nil, fmt.Errorf("variant %s needs print(model) text, %s is a dump folder", v, t.Source)
		}
		switch kind {
		case VariantCut:
			return cut(t, k)
		default:
			return explicit(t, kind == VariantModuleDict)
		}
	}
	if npu, err = conv(npu); err != nil {
		return nil, nil, err
	}
	if bench, err = conv(bench); err != nil {
		return nil, nil, err
	}
	return npu, bench, nil
}

// explicit renders t with every repeat group written out and reads it back.
// With dict, lists that held a repeat group print as ModuleDict.
func explicit(t *printparse.Tree, dict bool) (*printparse.Tree, error) {
	var buf bytes.Buffer
	if err := printparse.Render(&buf, t, printparse.RenderOptions{Expand: true}); err != nil {
		return nil, err
	}
	text := buf.Bytes()
	if dict {
		// msprobe paths of a ModuleDict's items are its keys, the same
		// segments as a ModuleList's indices; neither is ever dumped.
		text = []byte(strings.ReplaceAll(string(text), ": ModuleList(", ": ModuleDict("))
	}
	out, err := printparse.ParseText(text, t.Source+" ("+map[bool]string{false: VariantExplicit, true: VariantModuleDict}[dict]+")", printparse.Options{Index: -1})
	if err != nil {
		return nil, fmt.Errorf("re-reading the rendered %s: %w", t.Source, err)
	}
	return out, nil
}

// cut keeps the first k members of every repeat group: it reads t's text
// again (t stays as it is), drops the other members, and renders and reads
// the result, so that the tree is what a print of the smaller model gives.
func cut(t *printparse.Tree, k int) (*printparse.Tree, error) {
	var buf bytes.Buffer
	if err := printparse.Render(&buf, t, printparse.RenderOptions{}); err != nil {
		return nil, err
	}
	c, err := printparse.ParseText(buf.Bytes(), t.Source, printparse.Options{Index: -1})
	if err != nil {
		return nil, err
	}
	shrunk := map[*printparse.Repeat]bool{}
	c.Walk(func(n *printparse.Node) bool {
		kept := n.Children[:0]
		for _, ch := range n.Children {
			r := ch.Repeat
			if r == nil {
				kept = append(kept, ch)
				continue
			}
			if i, err := strconv.Atoi(ch.Name); err == nil && i-r.First < k {
				kept = append(kept, ch)
			}
			if !shrunk[r] && r.Count > k {
				r.Last, r.Count = r.First+k-1, k
			}
			shrunk[r] = true
		}
		n.Children = kept
		return true
	})
	buf.Reset()
	if err := printparse.Render(&buf, c, printparse.RenderOptions{}); err != nil {
		return nil, err
	}
	return printparse.ParseText(buf.Bytes(), t.Source+fmt.Sprintf(" (cut:%d)", k), printparse.Options{Index: -1})
}
