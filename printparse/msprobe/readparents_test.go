package msprobe

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/layermap/layermap/printparse/nametable"
	"github.com/layermap/layermap/printparse/testkit"
)

// TestReadParentsLikeReadConstruct: streaming the parents of some entries
// gives what ReadConstruct gives for them, on the corpus construct.json
// files and on the Megatron variant.
func TestReadParentsLikeReadConstruct(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(testkit.Testdata(t, "demo", "dumps"), "*", "construct.json"))
	dir := t.TempDir()
	meg := filepath.Join(dir, "construct.json")
	os.WriteFile(meg, []byte(`{"a.0.forward": ["Module.m.M.forward.0", 3], "megatron_micro_step_number": 2, "b.0.forward": [null, 1], "c": null}`), 0o644)
	files = append(files, meg)
	if len(files) < 3 {
		t.Fatalf("construct files: %v", files)
	}
	for _, f := range files {
		all, err := ReadConstruct(f)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]bool{}
		for k := range all {
			if strings.Contains(k, ".0.") || k == "c" {
				want[k] = true
			}
		}
		got, err := ReadParents(f, want)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for k, v := range all {
			if strings.Contains(k, ".0.") || k == "c" {
				n++
				if got[k] != v {
					t.Errorf("%s: %s: %q, ReadConstruct %q", f, k, got[k], v)
				}
			}
		}
		if n == 0 || len(got) != n {
			t.Errorf("%s: %d parents, want %d", f, len(got), n)
		}
	}
}

// TestReadConstructPlain: the streamed reader of the common construct.json
// gives the tree's map on the corpus files, and leaves the rest to it.
func TestReadConstructPlain(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(testkit.Testdata(t, "demo", "dumps"), "*", "construct.json"))
	if len(files) < 2 {
		t.Fatalf("construct files: %v", files)
	}
	for _, f := range files {
		got, ok := constructPlain(f)
		want, err := constructTree(f)
		if !ok || err != nil || !maps.Equal(got, want) || len(got) == 0 {
			t.Errorf("%s: streamed %d parents (%v), tree %d (%v)", f, len(got), ok, len(want), err)
		}
	}
	dir := t.TempDir()
	for _, in := range []string{`{"a": ["b", 1]}`, `{"megatron_micro_step_number": 1}`, `{"a": "b",}`, `{"a": nullx}`, `{"a": 1}`, `{"a": "b"} x`, `[]`} {
		p := filepath.Join(dir, "construct.json")
		os.WriteFile(p, []byte(in), 0o644)
		if m, ok := constructPlain(p); ok {
			t.Errorf("%s: streamed %v, want the tree's reading", in, m)
		}
	}
	for _, in := range []string{`{}`, ` {"a": null, "b": "c", "a": "d"} `, `{"\u0041": "\"x"}`} {
		p := filepath.Join(dir, "construct.json")
		os.WriteFile(p, []byte(in), 0o644)
		want, err := constructTree(p)
		if got, ok := constructPlain(p); !ok || err != nil || !maps.Equal(got, want) {
			t.Errorf("%s: streamed %v (%v), tree %v (%v)", in, got, ok, want, err)
		}
	}
}

func FuzzReadParents(f *testing.F) {
	f.Add([]byte(`{"a": "b", "c": null, "d": ["e", 1]}`))
	f.Add([]byte(`{}`))
	f.Add([]byte("{\n \"t.0.forward\": \"Module.a.A.forward.0\",\n \"Module.a.A.forward.0\": null,\n \"megatron_micro_step_number\": 2\n}"))
	f.Add([]byte(`{"Module.a.A.forward.\u0030": "\"x", "a": ["Module.b", 1], "a": "b", "Module.a.A.forward.0": 3}`))
	f.Add([]byte(`{"a" : "b" , "c":null,"d":"e\u0041", "Tensor.x.0.forward": "Module.\u00e9"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(t.TempDir(), "construct.json")
		os.WriteFile(p, data, 0o644)
		all, err := ReadConstruct(p)
		want := map[string]bool{}
		for k := range all {
			want[k] = true
		}
		got, err2 := ReadParents(p, want)
		if err == nil && err2 == nil {
			for k, v := range all {
				if got[k] != v {
					t.Fatalf("%s: %q, ReadConstruct %q", k, got[k], v)
				}
			}
		}
		// a reader climbing the parents answers each generation alike
		first := map[string]bool{}
		for k := range want {
			if len(first) < 3 {
				first[k] = true
			}
		}
		checkParentReader(t, p, first)
		want["a"], want["t.0.forward"], want["Module.a.A.forward.0"] = true, true, true
		checkFastParents(t, p, want)
	})
}

// checkParentReader fails unless a ParentReader of the file answers every
// generation as ReadParents does (values and errors): first want, then
// each name's parent, as a caller climbing the file would ask.
func checkParentReader(t *testing.T, path string, want map[string]bool) {
	t.Helper()
	got, pr, err := ReadParentsKeeping(path, want)
	defer pr.Release()
	for round := 0; ; round++ {
		exp, expErr := ReadParents(path, want)
		if fmt.Sprint(err) != fmt.Sprint(expErr) || !maps.Equal(got, exp) {
			t.Fatalf("%s, round %d, want %v: %v, %v; ReadParents %v, %v", path, round, slices.Sorted(maps.Keys(want)), got, err, exp, expErr)
		}
		if err != nil || round == 4 {
			return
		}
		next := map[string]bool{}
		for _, p := range got {
			next[p] = true
		}
		if len(next) == 0 {
			return
		}
		want = next
		got, err = pr.Parents(want)
	}
}

// TestParentReader: the reader's later generations are ReadParents' on
// the testdata construct.json files and on files made to differ: names
// that are no module, repeated module entries (one value bad), values
// that are not parents, the Megatron form, escapes, names not there.
func TestParentReader(t *testing.T) {
	t.Parallel()
	for _, f := range testkit.FilesNamed(t, testkit.Testdata(t), "construct.json", 15) {
		all, err := ReadConstruct(f)
		if err != nil {
			continue
		}
		want := map[string]bool{}
		for k := range all {
			if !strings.HasPrefix(k, "Module.") && !strings.HasPrefix(k, "Cell.") {
				want[k] = true
			}
		}
		checkParentReader(t, f, want)
	}
	dir := t.TempDir()
	for i, tt := range []struct {
		src  string
		want []string
	}{
		{`{"t.0.forward": "Module.a.A.forward.0", "Module.a.A.forward.0": "Module.r.R.forward.0", "Module.r.R.forward.0": null}`, []string{"t.0.forward"}},
		{`{"t.0.forward": "p", "p": "Module.a.A.forward.0", "Module.a.A.forward.0": "q", "q": null}`, []string{"t.0.forward"}},
		{`{"t.0.forward": "Module.a.A.forward.0", "Module.a.A.forward.0": 3}`, []string{"t.0.forward"}},
		{`{"t.0.forward": "Module.a.A.forward.0", "Module.a.A.forward.0": 3, "Module.a.A.forward.0": "Module.r.R.forward.0"}`, []string{"t.0.forward"}},
		{`{"t.0.forward": "Module.a.A.forward.0", "Module.a.A.forward.0": "x", "Module.a.A.forward.0": [1]}`, []string{"t.0.forward"}},
		{`{"t.0.forward": ["Module.a.A.forward.0", 1], "megatron_micro_step_number": 2, "Module.a.A.forward.0": [null, 1]}`, []string{"t.0.forward"}},
		{`{"t.0.forward": ["Module.a.A.forward.0", 1], "Module.a.A.forward.0": ["Module.r.R.forward.0" 1]}`, []string{"t.0.forward"}},
		{`{"t.0.forward": "Module.a.A.forward.0", "Module.a.A.forward.\u0030": "Module.\"r\".forward.0"}`, []string{"t.0.forward"}},
		{`{"t.0.forward": "Module.gone.G.forward.0"}`, []string{"t.0.forward", "u.0.forward"}},
		{` { "t.0.forward" :
  "Module.a.A.forward.0" ,
 "Module.a.A.forward.0"
  :
   "Module.r.R.forward.0" } `, []string{"t.0.forward"}},
	} {
		p := filepath.Join(dir, fmt.Sprintf("c%d.json", i))
		os.WriteFile(p, []byte(tt.src), 0o644)
		want := map[string]bool{}
		for _, w := range tt.want {
			want[w] = true
		}
		checkParentReader(t, p, want)
	}
}

// checkFastParents fails unless readParents' fast path gives what the
// general reading gives: the parents, the error, and (keeping) the value
// offsets and names of the module entries.
func checkFastParents(t *testing.T, path string, want map[string]bool) {
	t.Helper()
	got, err := readParentsFast(path, want, nil, true)
	exp, expErr := readParentsFast(path, want, nil, false)
	if fmt.Sprint(err) != fmt.Sprint(expErr) || !maps.Equal(got, exp) {
		t.Fatalf("%s, want %v: fast %v, %v; general %v, %v", path, slices.Sorted(maps.Keys(want)), got, err, exp, expErr)
	}
	k1 := &ParentReader{path: path, at: nametable.New()}
	k2 := &ParentReader{path: path, at: nametable.New()}
	defer k1.Release()
	defer k2.Release()
	got, err = readParentsFast(path, want, k1, true)
	exp, expErr = readParentsFast(path, want, k2, false)
	if fmt.Sprint(err) != fmt.Sprint(expErr) || !maps.Equal(got, exp) {
		t.Fatalf("%s keeping, want %v: fast %v, %v; general %v, %v", path, slices.Sorted(maps.Keys(want)), got, err, exp, expErr)
	}
	if k1.values.Len() != k2.values.Len() {
		t.Fatalf("%s: fast kept %d values, general %d", path, k1.values.Len(), k2.values.Len())
	}
	for i := range k1.values.Len() {
		if a, b := k1.values.At(i), k2.values.At(i); a != b {
			t.Fatalf("%s: kept value %d at %d, general at %d", path, i, a, b)
		}
	}
	k1.at.Done()
	k2.at.Done()
	if k1.at.Len() != k2.at.Len() {
		t.Fatalf("%s: fast kept %d names, general %d", path, k1.at.Len(), k2.at.Len())
	}
}

// TestReadParentsFast: the fast path of the common member agrees with the
// general reading on members it takes and members it leaves: escapes,
// Megatron's [parent, microStep], null, repeated and non-module keys,
// odd spacing, bad bytes, truncation, members across the read buffer.
func TestReadParentsFast(t *testing.T) {
	dir := t.TempDir()
	wantNames := []string{"a", "t.0.forward", "Tensor.__add__.0.forward", "Module.a.A.forward.0", "Module.a.A.forward.\u00e9", `Module.a."q".forward.0`, "megatron_micro_step_number", "c"}
	srcs := []string{
		`{}`, ` { } `, `{`, `{"`, `[]`, `{"a": "b"}`, `{"a": "b",}`, `{"a": "b" "c": "d"}`, `{"a" "b"}`,
		`{"a": null}`, `{"a": nul}`, `{"a": nullx}`, `{"a": null , "c": "d"}`, `{"a": "b"} x`, `{"a": "b"`, `{"a": "b`, `{"a": "b",`,
		`{"t.0.forward": "Module.a.A.forward.0", "Module.a.A.forward.0": "Module.r.R.forward.0", "Module.r.R.forward.0": null}`,
		`{"t.0.forward": ["Module.a.A.forward.0", 3], "megatron_micro_step_number": 2, "Module.a.A.forward.0": [null, 1]}`,
		`{"megatron_micro_step_number": "x", "a": "b"}`, `{"megatron_micro_step_number": null}`,
		`{"Module.a.A.forward.\u0030": "\"x\"", "Module.a.\"q\".forward.0": "y\\z", "t.0.forward": "a\/b"}`,
		`{"Module.a.A.forward.é": "Module.é", "a": "é"}`, "{\"a\": \"b\xff\"}", "{\"a\xff\": \"b\"}",
		"{\"a\": \"b\tc\"}", "{\"a\tb\": \"c\"}", "{\"a\":\t\"b\",\t\"c\":\"d\"}", "{\r\n \"a\": \"b\",\r\n \"c\": null\r\n}",
		"{\n \"a\": \"b\",\n\n   \"c\": \"d\"\n}", "{\n \"a\": \"b\",\n \n}", "{\n \"a\": \"b\",\n x\n}",
		`{"a": "b", "a": "c", "Module.a.A.forward.0": "x", "Module.a.A.forward.0": 3}`,
		`{"a": 1, "c": [1, 2], "t.0.forward": {"x": "y"}, "Tensor.__add__.0.forward": true}`,
		`{"a": "Module.a.A.forward.0", "c": ["Module.a.A.forward.0" 1]}`, `{"a"  :  "b"  ,  "c"  :  null  }`,
		`{"a": "bc", "c": "bc", "bc": "bcd", "d": "b", "e": "bc\u0041", "bc\u0041": "bc", "bc": "bc", "f": "", "": ""}`,
		"{\"a\": \"bc\", \"c\": \"bc\x01\"}", "{\"a\": \"bc\", \"bc\x01\": \"d\"}", "{\"a\": \"bc\", \"c\": \"bc", "{\"a\": \"bc\", \"bc",
		"{\"a\": \"bc\", \"c\": \"b\x01\"}", "{\"a\": \"bc\", \"b\x01\": \"d\"}", `{"a": "bc", "\\": "d"}`, `{"a": "bc", "c": "\\"}`,
	}
	var big strings.Builder
	big.WriteString("{\n")
	for i := range 3000 {
		fmt.Fprintf(&big, "%s\"Module.m.blocks.%d.M.forward.0\": \"Module.m.blocks.%d.P.forward.0\",\n", strings.Repeat(" ", i%11), i, i/7)
		fmt.Fprintf(&big, " \"Tensor.__add__.%d.forward\": %s,\n", i, []string{"null", `"a"`, `["b", 1]`, `"c\u0041"`}[i%4])
	}
	big.WriteString(" \"a\": \"end\"\n}\n")
	srcs = append(srcs, big.String(), big.String()[:big.Len()-3], strings.Replace(big.String(), "blocks.2999", "blocks.2999\x01", 1))
	for i, src := range srcs {
		p := filepath.Join(dir, fmt.Sprintf("c%d.json", i))
		os.WriteFile(p, []byte(src), 0o644)
		want := map[string]bool{}
		for _, w := range wantNames {
			want[w] = true
		}
		for j := 0; j < 3000; j += 13 {
			want[fmt.Sprintf("Module.m.blocks.%d.M.forward.0", j)] = true
			want[fmt.Sprintf("Tensor.__add__.%d.forward", j)] = j%2 == 0
		}
		checkFastParents(t, p, want)
		checkFastParents(t, p, map[string]bool{})
	}
}
