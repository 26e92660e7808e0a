package printparse

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/layermap/layermap/printparse/source"
)

// outline lists every node but the root as "path Class", with "*a-b" for
// repeat-group members, one per line.
func outline(t *Tree) string {
	var b strings.Builder
	t.Walk(func(n *Node) bool {
		if n == t.Root {
			return true
		}
		fmt.Fprintf(&b, "%s %s", n.Path, n.Class)
		if n.Repeat != nil {
			fmt.Fprintf(&b, " *%d-%d", n.Repeat.First, n.Repeat.Last)
		}
		b.WriteByte('\n')
		return true
	})
	return b.String()
}

func render(t *testing.T, tree *Tree, o RenderOptions) string {
	t.Helper()
	var b strings.Builder
	if err := Render(&b, tree, o); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

const small = `Net(
  (fc): Linear(in_features=8, out_features=16, bias=True)
  (act): SiLU()
)
`

func TestParseText(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		index    int
		outline  string   // "" skips the check
		render   string   // "" skips the check; "=" means the input itself
		warnings []string // "line: msg" prefixes
	}{
		{name: "basic", in: small, render: "=", outline: "fc Linear\nact SiLU\n"},
		{name: "crlf bom trailing spaces", in: "\ufeff" + strings.ReplaceAll(strings.ReplaceAll(small, "\n", "  \r\n"), ")  \r\n", ")\r\n"),
			render: small, outline: "fc Linear\nact SiLU\n"},
		{name: "tab per level", in: "Net(\n\t(m): M(\n\t\t(fc): Linear(in_features=1, out_features=2, bias=False)\n\t)\n)\n",
			render: "Net(\n  (m): M(\n    (fc): Linear(in_features=1, out_features=2, bias=False)\n  )\n)\n", outline: "m M\nm.fc Linear\n"},
		{name: "rank prefix and log lines", in: "[rank0]: loading\n[rank0]: Net(\n[rank0]:   (fc): Linear(in_features=8, out_features=16, bias=True)\n[rank0]:   (act): SiLU()\n[rank0]: )\n[rank0]: step 1 loss 2.0\n",
			render: small},
		{name: "timestamp on every line", in: "2024-05-01 10:00:00,101 INFO Net(\n2024-05-01 10:00:00,102 INFO   (fc): Linear(in_features=8, out_features=16, bias=True)\n2024-05-01 10:00:01,003 INFO   (act): SiLU()\n2024-05-01 10:00:01,004 INFO )\n",
			render: small},
		{name: "interleaved foreign line skipped", in: "0: Net(\n0:   (fc): Linear(in_features=8, out_features=16, bias=True)\nW1202 something else\n0:   (act): SiLU()\n0: )\n",
			render: small, warnings: []string{"3: skipped 1 lines inside the dump that lack its `0:` prefix"}},
		{name: "ray worker prefix", in: "(RayTrainWorker pid=812, ip=10.0.0.3) Net(\n(RayTrainWorker pid=812, ip=10.0.0.3)   (fc): Linear(in_features=8, out_features=16, bias=True)\n(RayTrainWorker pid=812, ip=10.0.0.3)   (act): SiLU()\n(RayTrainWorker pid=812, ip=10.0.0.3) )\n",
			render: small},
		{name: "model printed inside a dict", in: "{'policy': Net(\n  (fc): Linear(in_features=8, out_features=16, bias=True)\n  (act): SiLU()\n)}\n", render: small},
		{name: "rank tag on every line, logger text on the first", in: "[rank0]: model: Net(\n[rank0]:   (fc): Linear(in_features=8, out_features=16, bias=True)\n[rank0]:   (act): SiLU()\n[rank0]: )\n", render: small},
		{name: "first-line logger prefix", in: "[INFO:swift] model: Net(\n  (fc): Linear(in_features=8, out_features=16, bias=True)\n  (act): SiLU()\n)\nDone.\n", render: small},
		{name: "indented block (docstring)", in: "    Net(\n      (fc): Linear(in_features=8, out_features=16, bias=True)\n      (act): SiLU()\n    )\n", render: small},
		{name: "the same dump twice", in: small + "epoch 2\n" + small, render: small, warnings: []string{"1: the input holds 2 identical dumps (lines 1, 6); read the first"}},
		{name: "second dump by index", in: small + "some log\n" + strings.ReplaceAll(small, "Net(", "Other("), index: 1, outline: "fc Linear\nact SiLU\n",
			render: strings.ReplaceAll(small, "Net(", "Other(")},
		{name: "list of two models", in: "[DistributedDataParallel(\n  (module): A(\n    (fc): Linear(in_features=1, out_features=2, bias=True)\n  )\n), DistributedDataParallel(\n  (module): B()\n)]\n",
			render: "=", outline: "0 DistributedDataParallel\n0.module A\n0.module.fc Linear\n1 DistributedDataParallel\n1.module B\n"},
		{name: "repeat groups nested", in: "M(\n  (layers): ModuleList(\n    (0-1): 2 x L(\n      (experts): ModuleList(\n        (0-2): 3 x E(\n          (w): Linear(in_features=4, out_features=4, bias=False)\n        )\n      )\n    )\n    (2): L2()\n  )\n)\n",
			render: "=", outline: `layers ModuleList
layers.0 L *0-1
layers.0.experts ModuleList
layers.0.experts.0 E *0-2
layers.0.experts.0.w Linear
layers.0.experts.1 E *0-2
layers.0.experts.1.w Linear
layers.0.experts.2 E *0-2
layers.0.experts.2.w Linear
layers.1 L *0-1
layers.1.experts ModuleList
layers.1.experts.0 E *0-2
layers.1.experts.0.w Linear
layers.1.experts.1 E *0-2
layers.1.experts.1.w Linear
layers.1.experts.2 E *0-2
layers.1.experts.2.w Linear
layers.2 L2
`},
		{name: "ModuleDict key that looks like a range", in: "M(\n  (d): ModuleDict(\n    (0-3): Linear(in_features=1, out_features=1, bias=True)\n  )\n)\n",
			render: "=", outline: "d ModuleDict\nd.0-3 Linear\n"},
		{name: "None child and dotted class", in: "M(\n  (skip): None\n  (q): lora.Linear(\n    (base_layer): Linear(in_features=2, out_features=2, bias=False)\n  )\n)\n",
			render: "=", outline: "skip None\nq lora.Linear\nq.base_layer Linear\n"},
		{name: "extra line plus children (old PEFT)", in: "M(\n  (q): Linear(\n    in_features=2, out_features=3, bias=True\n    (lora_A): ModuleDict(\n      (default): Linear(in_features=2, out_features=8, bias=False)\n    )\n  )\n)\n",
			render: "=", outline: "q Linear\nq.lora_A ModuleDict\nq.lora_A.default Linear\n"},
		{name: "multi-line extra_repr (ParameterList)", in: "M(\n  (p): ParameterList(\n      (0): Parameter containing: [torch.float32 of size 2x2]\n      (1): Parameter containing: [torch.float32 of size 2x2]\n  )\n  (one): ParameterDict(  (default): Parameter containing: [torch.FloatTensor of size 64x32027])\n)\n",
			render: "=", outline: "p ParameterList\none ParameterDict\n"},
		{name: "missing final paren", in: "M(\n  (a): A(\n    (fc): Linear(in_features=1, out_features=2, bias=True)\n  )\n",
			render:   "M(\n  (a): A(\n    (fc): Linear(in_features=1, out_features=2, bias=True)\n  )\n)\n",
			warnings: []string{"4: the input ends without the closing `)` of the root M from line 1; assumed it ends at line 4"}},
		{name: "missing final paren of a list", in: "[DDP(\n  (module): M()\n",
			render:   "[DDP(\n  (module): M()\n)]\n",
			warnings: []string{"2: the input ends without the closing `)]` of 0 (DDP) from line 1; assumed it ends at line 2"}},
		{name: "final paren missing, log continues", in: "M(\n  (a): A(\n    (fc): Linear(in_features=1, out_features=2, bias=True)\n  )\nEpoch 1: loss=3.2\n",
			outline:  "a A\na.fc Linear\n",
			warnings: []string{"4: the dump stops (line 5 is not part of it) without the closing `)` of the root M from line 1; assumed it ends at line 4"}},
		{name: "elision resynchronised by indentation", in: "M(\n  (a): A(\n    (b): B(\n      (c): C()\n...\n  (d): D()\n)\n",
			outline:  "a A\na.b B\na.b.c C\nd D\n",
			warnings: []string{"5: `...` stands for lines left out of the dump: the subtree of a.b (B) is incomplete; judging by the indentation of line 6, b (B), a (A) end inside the omitted lines"}},
		{name: "diff marker", in: "M(\n  (a): A(\n-   (fc): Linear(in_features=1, out_features=2, bias=True)\n  )\n)\n",
			outline: "a A\na.fc Linear\n", warnings: []string{"3: ignored the `-` in front of this line"}},
		{name: "hard-wrapped line", in: "M(\n  (fc): Linear(in_features=1, out_f\neatures=2, bias=True)\n)\n",
			render: "M(\n  (fc): Linear(in_features=1, out_features=2, bias=True)\n)\n", warnings: []string{"3: joined this line to line 2"}},
		{name: "wrapped line without the rank prefix", in: "[rank0]: M(\n[rank0]:   (a): A()\n[rank0]:   (fc): Linear(in_features=1, out_f\neatures=2, bias=True)\n[rank0]: )\n",
			render: "M(\n  (a): A()\n  (fc): Linear(in_features=1, out_features=2, bias=True)\n)\n", warnings: []string{"4: joined this line to line 3"}},
		{name: "line cut inside the name", in: "M(\n  (a): A()\n  (linear_q\nkv): Linear(in_features=1, out_features=2, bias=True)\n)\n",
			render: "M(\n  (a): A()\n  (linear_qkv): Linear(in_features=1, out_features=2, bias=True)\n)\n", warnings: []string{"4: joined this line to line 3"}},
		{name: "re-indented 4 spaces", in: "M(\n    (a): A(\n        (fc): Linear(in_features=1, out_features=2, bias=True)\n    )\n)\n",
			render:   "M(\n  (a): A(\n    (fc): Linear(in_features=1, out_features=2, bias=True)\n  )\n)\n",
			warnings: []string{"2: indentation is not 2 spaces per level (here column 4, expected 2; 3 such lines)"}},
		{name: "quoted parens in a one-liner", in: "M(\n  (g): GELU(approximate=')(')\n  (c): Conv3d(3, 8, kernel_size=(2, 14, 14), stride=(2, 14, 14), bias=False)\n)\n",
			render: "=", outline: "g GELU\nc Conv3d\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			idx := tc.index
			if idx == 0 {
				idx = -1
			}
			tree, err := ParseText([]byte(tc.in), "in.txt", Options{Index: idx})
			if err != nil {
				t.Fatal(err)
			}
			if tc.outline != "" {
				if got := outline(tree); got != tc.outline {
					t.Errorf("outline\n got:\n%s\nwant:\n%s", got, tc.outline)
				}
			}
			if tc.render != "" {
				want := tc.render
				if want == "=" {
					want = tc.in
				}
				if got := render(t, tree, RenderOptions{}); got != want {
					t.Errorf("render\n got:\n%s\nwant:\n%s", got, want)
				}
			}
			checkWarnings(t, tree, tc.warnings)
			tree.Walk(func(n *Node) bool {
				if n.Parent != nil && joinPath(n.Parent.Path, n.Name) != n.Path {
					t.Errorf("%s: path does not extend parent %q", n.Path, n.Parent.Path)
				}
				return true
			})
		})
	}
}

func TestParseTextErrors(t *testing.T) {
	two := small + strings.ReplaceAll(small, "Net(", "[Other(")
	tests := []struct {
		name  string
		in    string
		index int
		want  string // the whole error text
	}{
		{"empty", "", -1, "in.txt: expected a print(model) dump (a line ending in `ClassName(` followed by `  (name): ...` lines), found empty input"},
		{"binary", "\x7fELF\x02\x01\x01\x00\x00M(\n  (a): A()\n)\n", -1, "in.txt: expected text holding a print(model) dump, found binary data (a NUL byte in its first 8 KiB)"},
		{"no dump", "hello\nworld\n", -1, "in.txt:1: expected a print(model) dump (a line ending in `ClassName(` followed by `  (name): ...` lines), found `hello` and no dump after it"},
		{"several dumps", two, -1, "in.txt: expected one print(model) dump; pass --index N (0-based) to pick one, found 2: #0 at line 1 Net, #1 at line 5 [Other]"},
		{"index out of range", two, 2, "in.txt: expected dump #2 (--index is 0-based), found 2: #0 at line 1 Net, #1 at line 5 [Other]"},
		{"bad repeat count", "M(\n  (l): ModuleList(\n    (0-27): 27 x L()\n  )\n)\n", -1, "in.txt:3: expected a repeat count equal to the index range, as in `(0-27): 28 x`, found `(0-27): 27 x`"},
		{"lines missing", "M(\n  (a): A(\n    (b): B(\n      (c): C()\n      (d): D()\n      (e): E()\n  (f): F()\n)\n", -1,
			"in.txt:7: expected a child of a.b (B) or the `)` closing it at column 6 (lines missing from the dump?), found `(f): F()` at column 2"},
		{"stray text after children", "M(\n  (a): A()\n  garbage here\n)\n", -1, "in.txt:3: expected `(name): Class(...)` or `)` inside the root M, found `garbage here`"},
		{"custom repr never closes", "M(\n  (a): A(x=B(\n    (t): T()\n", -1, "in.txt:2: expected the `)` that closes `A(` by balance, found end of input"},
		{"cut after class name", "M(\n  (a): VeryLongClassNa\n  (b): B()\n)\n", -1, "in.txt:2: expected `(` after the class name `VeryLongClassNa`, found end of line"},
		{"bad closer", "M(\n  (a): A()\n) trailing\n", -1, "in.txt:3: expected `)` closing the root M, found `) trailing`"},
		{"expansion over the node cap", "M(\n  (l): ModuleList(\n    (0-9): 10 x L(\n      (e): ModuleList(\n        (0-99): 100 x E()\n      )\n    )\n  )\n)\n", -1,
			"in.txt:3: expected at most 1000 modules after expanding repeat groups, found `(0-9): 10 x L(` needing 1022"},
		// 10 and 20 digits: no longer read as an extra_repr line with a warning
		{"ten-digit repeat count", "M(\n  (l): ModuleList(\n    (0-9999999999): 10000000000 x L()\n  )\n)\n", -1,
			"in.txt:3: expected at most 1000 modules after expanding repeat groups, found `(0-9999999999): 10000000000 x L(` needing more"},
		{"repeat count beyond int64", "M(\n  (l): ModuleList(\n    (0-99999999999999999999): 100000000000000000000 x L()\n  )\n)\n", -1,
			"in.txt:3: expected at most 1000 modules after expanding repeat groups, found `(0-99999999999999999999): 100000000000000000000 x`"},
		// 18 digits fit an int: 11 nodes x (count-1) would overflow
		{"huge count in a big block", "M(\n  (l): ModuleList(\n    (0-999999999999999998): 999999999999999999 x L(\n      (a): A()\n      (b): B()\n      (c): C()\n      (d): D()\n      (e): E()\n      (f): F()\n      (g): G()\n      (h): H()\n      (i): I()\n      (j): J()\n    )\n  )\n)\n", -1,
			"in.txt:3: expected at most 1000 modules after expanding repeat groups, found `(0-999999999999999998): 999999999999999999 x L(` needing more"},
		{"count alone over the cap", "M(\n  (l): ModuleList(\n    (0-1001): 1002 x L()\n  )\n)\n", -1,
			"in.txt:3: expected at most 1000 modules after expanding repeat groups, found `(0-1001): 1002 x L(` needing more"},
		{"just over the cap", "M(\n  (l): ModuleList(\n    (0-998): 999 x L()\n  )\n)\n", -1,
			"in.txt:3: expected at most 1000 modules after expanding repeat groups, found `(0-998): 999 x L(` needing 1001"},
		{"duplicate child", "M(\n  (a): A()\n  (b): B()\n  (a): C()\n)\n", -1, "in.txt:4: expected a child name not used before in the root M (nn.Module children have unique names), found `(a)` again (first at line 2)"},
		{"index repeated after a group", "M(\n  (l): ModuleList(\n    (0-2): 3 x A()\n    (2): B()\n  )\n)\n", -1, "in.txt:4: expected a child name not used before in l (ModuleList) (nn.Module children have unique names), found `(2)` again (first at line 3)"},
		{"cut off", "M(\n  (a): A(\n    (fc): Linear(in_features=1, out_features=2, bias=True)\n", -1,
			"in.txt:3: expected `)` closing a (A) from line 2 (the dump is cut off with 2 modules open), found end of input"},
		{"cut off, log continues", "x\nM(\n  (a): A(\n    (b): B(\n      (fc): Linear(in_features=1, out_features=2, bias=True)\nEpoch 1: loss=3.2\n", -1,
			"in.txt:6: expected `)` closing a.b (B) from line 4 (the dump is cut off with 3 modules open), found `Epoch 1: loss=3.2` (line 6)"},
		{"opening line missing", "M(\n  (a): A()\n    (fc): Linear(in_features=1, out_features=2, bias=True)\n  )\n  (b): B()\n)\n", -1,
			"in.txt:5: expected the end of the dump after line 4 closed the root M (an opening line missing?), found `(b): B()`"},
		{"re-indented and unbalanced", "M(\n(a): A(\n(b): B()\n", -1, "in.txt:3: expected `)` closing a (A) from line 2, found end of input"},
	}
	var many strings.Builder
	for i := range 9 {
		fmt.Fprintf(&many, "M%d(\n  (a): A()\n)\n", i)
	}
	tests = append(tests, struct {
		name  string
		in    string
		index int
		want  string
	}{"many dumps", many.String(), -1, "in.txt: expected one print(model) dump; pass --index N (0-based) to pick one, found 9: #0 at line 1 M0, #1 at line 4 M1, #2 at line 7 M2, #3 at line 10 M3, #4 at line 13 M4, #5 at line 16 M5, ... (2 more), #8 at line 25 M8"})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseText([]byte(tc.in), "in.txt", Options{Index: tc.index, MaxNodes: 1000})
			var pe *source.Error
			if !errors.As(err, &pe) {
				t.Fatalf("want *source.Error, got %v", err)
			}
			if err.Error() != tc.want {
				t.Errorf("\n got %s\nwant %s", err, tc.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is not one line")
			}
		})
	}
}

func TestUTF16(t *testing.T) {
	for _, be := range []bool{false, true} {
		var b []byte
		if be {
			b = append(b, 0xfe, 0xff)
		} else {
			b = append(b, 0xff, 0xfe)
		}
		for _, r := range strings.ReplaceAll(small, "\n", "\r\n") {
			if be {
				b = append(b, byte(r>>8), byte(r))
			} else {
				b = append(b, byte(r), byte(r>>8))
			}
		}
		tree, err := ParseText(b, "ps.txt", Options{Index: -1})
		if err != nil {
			t.Fatal(err)
		}
		if got := render(t, tree, RenderOptions{}); got != small {
			t.Errorf("big endian %v: got\n%s", be, got)
		}
	}
}

func TestRepeatMembersShareGroup(t *testing.T) {
	tree, err := ParseText([]byte("M(\n  (l): ModuleList(\n    (0-1): 2 x L(\n      (e): ModuleList(\n        (0-2): 3 x E()\n      )\n    )\n  )\n)\n"), "in", Options{Index: -1})
	if err != nil {
		t.Fatal(err)
	}
	l0, l1 := tree.Lookup("l.0"), tree.Lookup("l.1")
	if l0.Repeat == nil || l0.Repeat != l1.Repeat || *l0.Repeat != (Repeat{First: 0, Last: 1, Count: 2, Line: 3}) {
		t.Fatalf("outer group: %+v %+v", l0.Repeat, l1.Repeat)
	}
	e00, e02, e10 := tree.Lookup("l.0.e.0"), tree.Lookup("l.0.e.2"), tree.Lookup("l.1.e.0")
	if e00.Repeat != e02.Repeat || e00.Repeat == e10.Repeat || *e10.Repeat != *e00.Repeat {
		t.Fatalf("inner groups must be shared within a parent and distinct across copies")
	}
	if tree.Lookup("l.1.e.2").Parent != tree.Lookup("l.1.e") {
		t.Fatalf("clone parent links broken")
	}
}

func TestRenderOptions(t *testing.T) {
	in := "M(\n  (l): ModuleList(\n    (0-1): 2 x L(\n      (fc): Linear(in_features=1, out_features=1, bias=True)\n    )\n  )\n  (h): Linear(in_features=1, out_features=2, bias=False)\n)\n"
	tree, err := ParseText([]byte(in), "in", Options{Index: -1})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		o    RenderOptions
		want string
	}{
		{RenderOptions{}, in},
		{RenderOptions{Expand: true}, "M(\n  (l): ModuleList(\n    (0): L(\n      (fc): Linear(in_features=1, out_features=1, bias=True)\n    )\n    (1): L(\n      (fc): Linear(in_features=1, out_features=1, bias=True)\n    )\n  )\n  (h): Linear(in_features=1, out_features=2, bias=False)\n)\n"},
		{RenderOptions{Depth: 1}, "M(\n  (l): ModuleList(...)\n  (h): Linear(in_features=1, out_features=2, bias=False)\n)\n"},
		{RenderOptions{Depth: 2}, "M(\n  (l): ModuleList(\n    (0-1): 2 x L(...)\n  )\n  (h): Linear(in_features=1, out_features=2, bias=False)\n)\n"},
	}
	for _, tc := range tests {
		if got := render(t, tree, tc.o); got != tc.want {
			t.Errorf("%+v:\n got:\n%s\nwant:\n%s", tc.o, got, tc.want)
		}
	}
}

func TestKindDims(t *testing.T) {
	in := `M(
  (a): Linear(in_features=8, out_features=16, bias=True)
  (b): ColumnParallelLinear(in_features=12, out_features=36, bias=False, TP=1)
  (c): RowParallelLinear()
  (d): Linear4bit(in_features=4096, out_features=1024, bias=False)
  (e): Qwen2RMSNorm((3584,), eps=1e-06)
  (f): MixedFusedLayerNorm(torch.Size([256]), eps=1e-12, elementwise_affine=True)
  (g): LayerNorm((1280,), eps=1e-06, elementwise_affine=True)
  (h): Embedding(151936, 3584)
  (i): VocabParallelEmbedding(num_embeddings=119696, embedding_dim=4096)
  (j): Conv3d(3, 1280, kernel_size=(2, 14, 14), stride=(2, 14, 14), bias=False)
  (k): Dropout(p=0.0, inplace=False)
  (l): IdentityOp()
  (m): SiLU()
  (n): GELU(approximate='none')
  (o): SiLUActivation()
  (p): Qwen2RotaryEmbedding()
  (q): lora.Linear(
    (base_layer): Linear(in_features=2, out_features=2, bias=False)
  )
  (r): LanguageModelEmbedding(
    (word_embeddings): VocabParallelEmbedding()
  )
  (s): TELayerNormColumnParallelLinear(in_features=2304, out_features=6912, bias=True, TP=1)
  (t): FusedScaleMaskSoftmax()
  (u): MoEGate()
  (v): FusedLayerNorm(16.38 k, 1.27% Params, 0 MACs, 0.00% MACs, 128.75 us, 0.01% latency, 0.0 FLOPS, torch.Size([8192]), eps=1e-05, elementwise_affine=True)
  (w): Embedding(1, 0.00% Params, 0 MACs, 0.00% MACs, 489.23 us, 0.03% latency, 0.0 FLOPS, 1024, 8192)
  (x): Qwen2RMSNorm((0,), eps=1e-06)
  (y): Linear(in=4096, out=32000, bias=False)
  (z): LayerNormMLP()
  (sw): SwiGLUBlock(
    (w): Linear(in_features=1, out_features=2, bias=False)
  )
)
`
	want := map[string]string{
		"a": "Linear [8 16]", "b": "Linear [12 36]", "c": "Linear []", "d": "Linear [4096 1024]",
		"e": "Norm [3584]", "f": "Norm [256]", "g": "Norm [1280]", "h": "Embedding [151936 3584]",
		"i": "Embedding [119696 4096]", "j": "Conv [3 1280 2 14 14]", "k": "Dropout []", "l": "Identity []",
		"m": "Activation []", "n": "Activation []", "o": "Activation []", "p": "Other []", "q": "Linear []",
		"q.base_layer": "Linear [2 2]", "r": "Container []", "s": "Linear [2304 6912]", "t": "Activation []",
		"u": "Other []", "v": "Norm [8192]", "w": "Embedding [1024 8192]", "x": "Norm []", // ZeRO-3 partitioned: (0,) is no size "y": "Linear [4096 32000]",
		"z": "Other []", "sw": "Container []",
	}
	tree, err := ParseText([]byte(in), "in", Options{Index: -1})
	if err != nil {
		t.Fatal(err)
	}
	if got := tree.Root.Kind(); got != KindContainer {
		t.Errorf("root kind %s", got)
	}
	for path, w := range want {
		n := tree.Lookup(path)
		if n == nil {
			t.Fatalf("%s missing", path)
		}
		d := n.Dims()
		if d == nil {
			d = []int{}
		}
		if got := fmt.Sprintf("%s %v", n.Kind(), d); got != w {
			t.Errorf("%s (%s): got %s, want %s", path, n.Class, got, w)
		}
	}
}

func TestSplitFields(t *testing.T) {
	got := splitFields("(3584,), eps=1e-06, name='a,b', kernel_size=(2, 14, 14), ")
	want := []Field{{"", "(3584,)"}, {"eps", "1e-06"}, {"name", "'a,b'"}, {"kernel_size", "(2, 14, 14)"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestLookup(t *testing.T) {
	tree, err := ParseText([]byte("M(\n  (a): A(\n    (0-1): 2 x B()\n  )\n)\n"), "in", Options{Index: -1})
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{"": "M", "a": "A", "a.0": "B", "a.1": "B", "a.2": "", "a.": "", ".a": "", "b": "", "a.0.x": ""} {
		got := ""
		if n := tree.Lookup(path); n != nil {
			got = n.Class
		}
		if got != want {
			t.Errorf("Lookup(%q) = %q, want %q", path, got, want)
		}
	}
}
