package htmlview

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/layermap/layermap/infer"
	"github.com/layermap/layermap/printparse"
)

const encNPU = `M(
  (a): A(
    (layers): ModuleList(
      (0-2): 3 x L(
        (x): Linear(in_features=2, out_features=2, bias=False)
        (y): Linear(in_features=2, out_features=2, bias=False)
      )
    )
  )
  (b): Linear(in_features=2, out_features=2, bias=False)
)
`

const encBench = `M(
  (a): A(
    (layers): ModuleList(
      (0-2): 3 x L(
        (xy): Linear(in_features=2, out_features=4, bias=False)
      )
    )
  )
  (c): Linear(in_features=2, out_features=2, bias=False)
)
`

// decoded is a side rebuilt from the JSON the way the page does.
type decoded struct {
	paths  []string
	class  []string
	groups [][2]int
}

func decodeSide(s []string, js jsonSide) decoded {
	n := len(js.N)
	d := decoded{paths: make([]string, n), class: make([]string, n)}
	parent := make([]int, n)
	var st, rem []int
	for i := 0; i < n; i++ {
		for len(st) > 0 && rem[len(rem)-1] == 0 {
			st, rem = st[:len(st)-1], rem[:len(rem)-1]
		}
		parent[i] = -1
		if len(st) > 0 {
			parent[i] = st[len(st)-1]
			rem[len(rem)-1]--
		}
		st, rem = append(st, i), append(rem, js.K[i])
		switch {
		case parent[i] < 0:
		case parent[i] == 0:
			d.paths[i] = s[js.N[i]]
		default:
			d.paths[i] = d.paths[parent[i]] + "." + s[js.N[i]]
		}
		d.class[i] = s[js.C[i]]
	}
	for j := 0; j < len(js.G); j += 2 {
		d.groups = append(d.groups, [2]int{js.G[j], js.G[j+1]})
	}
	return d
}

func TestEncodeRoundTrip(t *testing.T) {
	npu, err := printparse.ParseText([]byte(encNPU), "npu.txt", printparse.Options{})
	if err != nil {
		t.Fatal(err)
	}
	bench, err := printparse.ParseText([]byte(encBench), "bench.txt", printparse.Options{})
	if err != nil {
		t.Fatal(err)
	}
	v := &View{Title: "t", Mode: ModeSuggest, NPU: NewSide("NPU", npu), Bench: NewSide("bench", bench)}
	mf, err := NewMappingFile("m.yaml", "L:\n  x: xy\n")
	if err != nil {
		t.Fatal(err)
	}
	v.Mapping = mf
	for _, p := range []string{"a", "a.layers", "a.layers.0", "a.layers.1", "a.layers.2"} {
		v.Pairs = append(v.Pairs, Pair{NPU: nodes(v.NPU.Lookup(p)), Bench: nodes(v.Bench.Lookup(p)), Band: Sure, Score: 0.9, Reasons: []string{"name", "class"}})
	}
	for _, l := range []string{"0", "1", "2"} {
		v.Pairs = append(v.Pairs, Pair{NPU: nodes(v.NPU.Lookup("a.layers."+l+".x"), v.NPU.Lookup("a.layers."+l+".y")),
			Bench: nodes(v.Bench.Lookup("a.layers." + l + ".xy")), Kind: Fused, Band: Check, Note: "xy fuses x and y"})
	}
	v.NPU.Why[v.NPU.Lookup("b")] = "no partner"
	v.NPU.Result[v.NPU.Lookup("a.layers.1")] = Error
	var buf bytes.Buffer
	if _, err := writeData(&buf, v); err != nil {
		t.Fatal(err)
	}
	var j jsonView
	if err := json.Unmarshal(buf.Bytes(), &j); err != nil {
		t.Fatal(err)
	}
	for k, tr := range []*printparse.Tree{npu, bench} {
		d := decodeSide(j.S, j.Sides[k])
		i := 0
		tr.Walk(func(n *printparse.Node) bool {
			if d.paths[i] != n.Path || d.class[i] != n.Class {
				t.Errorf("side %d node %d: decoded %q %q, tree %q %q", k, i, d.paths[i], d.class[i], n.Path, n.Class)
			}
			i++
			return true
		})
		if len(d.groups) != 1 || d.paths[d.groups[0][0]] != "a.layers.0" || d.groups[0][1] != 3 {
			t.Errorf("side %d: repeat groups %v, want a.layers.0 x 3", k, d.groups)
		}
	}
	// the tree once: no string of the table is a path of two segments or more
	for _, s := range j.S {
		if strings.Count(s, ".") >= 1 && (strings.HasPrefix(s, "a.") || strings.HasPrefix(s, "b.")) {
			t.Errorf("string table holds a path: %q", s)
		}
	}
	// pairs, with the fused ones' second NPU module
	nd, bd := decodeSide(j.S, j.Sides[0]), decodeSide(j.S, j.Sides[1])
	var got []string
	a, b := 0, 0
	for i := range j.P.A {
		a, b = a+j.P.A[i], b+j.P.B[i]
		got = append(got, nd.paths[a]+"="+bd.paths[b]+":"+string(j.P.Band[i])+string(j.P.Kind[i]))
	}
	want := "a=a:s1 a.layers=a.layers:s1 a.layers.0=a.layers.0:s1 a.layers.0.x=a.layers.0.xy:cf a.layers.1=a.layers.1:s1 a.layers.1.x=a.layers.1.xy:cf a.layers.2=a.layers.2:s1 a.layers.2.x=a.layers.2.xy:cf"
	if g := strings.Join(got, " "); g != want {
		t.Errorf("pairs\n%s\nwant\n%s", g, want)
	}
	if len(j.P.XA) != 6 || nd.paths[j.P.XA[1]] != "a.layers.0.y" {
		t.Errorf("more NPU modules of the fused pairs: %v", j.P.XA)
	}
	if r := j.Sides[0].Res; r[indexOf(nd.paths, "a.layers.1")] != 'e' || strings.Count(r, "e") != 1 {
		t.Errorf("results %q", r)
	}
	// msprobe's resolver, given "L: x: xy", sends x to xy (its fused
	// partner is not 1:1, so the page is told) and y nowhere
	var rx []string
	for i := 0; i < len(j.RX); i += 2 {
		to := "-"
		if j.RX[i+1] >= 0 {
			to = bd.paths[j.RX[i+1]]
		}
		rx = append(rx, nd.paths[j.RX[i]]+"->"+to)
	}
	if g := strings.Join(rx, " "); !strings.Contains(g, "a.layers.0.x->a.layers.0.xy") || strings.Contains(g, "a.layers.0.y->a") {
		t.Errorf("resolver exceptions: %s", g)
	}
	if j.Map == nil || len(j.Map.Blocks) != 1 || j.Map.Blocks[0][1].(float64) != 2 || j.Map.Indent != 2 {
		t.Errorf("mapping blocks %+v", j.Map)
	}
	if !infer.GenericClass("ModuleList") || len(j.Generic) != 1 || j.S[j.Generic[0]] != "ModuleList" {
		t.Errorf("generic classes %v", j.Generic)
	}
}

func indexOf(xs []string, s string) int {
	for i, x := range xs {
		if x == s {
			return i
		}
	}
	return -1
}

// The page's data cannot end its <script> element early.
func TestWriteEscapes(t *testing.T) {
	tr, err := printparse.ParseText([]byte("M(\n  (x): Linear(in_features=2, out_features=2, bias=False)\n)\n"), "a</script><script>alert(1)</script>.txt", printparse.Options{})
	if err != nil {
		t.Fatal(err)
	}
	v := &View{Title: "</title><script>x</script>", Mode: ModeSuggest, NPU: NewSide("NPU", tr), Bench: NewSide("bench", tr)}
	var buf bytes.Buffer
	if err := Write(&buf, v); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	if n := strings.Count(page, "<script"); n != 2 {
		t.Errorf("%d <script tags, want the data and the code", n)
	}
	if strings.Contains(page, "alert(1)</script>") || strings.Contains(page, "<title></title><script>") {
		t.Error("input text breaks out of the page's elements")
	}
}

// appendJSONString writes a string as json.Marshal does: plain cells as
// they are, every escape (quotes, backslashes, HTML's <>&, control bytes,
// DEL, non-ASCII, invalid UTF-8, U+2028) through json.Marshal.
func TestAppendJSONString(t *testing.T) {
	t.Parallel()
	check := func(s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		got, err := appendJSONString([]byte("x"), s)
		if err != nil || string(got) != "x"+string(want) {
			t.Errorf("appendJSONString(%q) = %s, %v; want x%s", s, got, err, want)
		}
	}
	for _, s := range []string{"", "pass", "Module.a.b.Linear.forward.0.output.0", "[2, 3]", "1.5e-06", "N/A",
		`say "hi"`, `a\b`, "<script>", "a&b", "x>y", "tab\there", "nl\n", "del\x7f", "héllo", "\xff\xfe", "a\u2028b", "\x00"} {
		check(s)
	}
	r := rand.New(rand.NewPCG(3, 4))
	alphabet := []byte("aZ09 .,:[]-_\"\\<>&\t\n\x01\x7f\xc3\xa9\xe2\x80\xa8\xff")
	for range 20_000 {
		b := make([]byte, r.IntN(12))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		check(string(b))
	}
}
