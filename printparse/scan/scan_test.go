package scan

import (
	"reflect"
	"strings"
	"testing"

	_ "github.com/layermap/layermap/printparse/testkit" // the -update flag of go test ./... -update
)

func TestDecodeAndLines(t *testing.T) {
	tests := []struct {
		data string
		want []string
		ok   bool
	}{
		{"a\nb\n", []string{"a", "b"}, true},
		{"a\r\nb\r\n", []string{"a", "b"}, true},
		{"a\rb\r", []string{"a", "b"}, true}, // classic Mac
		{"\ufeffNet(\n", []string{"Net("}, true},
		{"\xff\xfeN\x00e\x00t\x00(\x00\n\x00", []string{"Net("}, true}, // UTF-16LE
		{"\xfe\xff\x00N\x00(\x00\n", []string{"N("}, true},             // UTF-16BE
		{"Net(\x00\x01", nil, false},
	}
	for _, tc := range tests {
		src, ok := Decode([]byte(tc.data))
		if ok != tc.ok {
			t.Errorf("Decode(%q) ok = %v", tc.data, ok)
			continue
		}
		if got := Lines(src).Strings(); ok && !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Lines(Decode(%q)) = %q, want %q", tc.data, got, tc.want)
		}
	}
}

func TestFindHeader(t *testing.T) {
	tests := []struct {
		name string
		text string
		want Header
		ok   bool
	}{
		{"plain", "Net(\n  (fc): Linear(in_features=4, out_features=8, bias=True)\n)", Header{Class: "Net"}, true},
		{"first-line prefix", "model = Net(\n  (fc): Linear()\n)", Header{Class: "Net", First: "model = "}, true},
		{"rank prefix", "[rank0]: Net(\n[rank0]:   (fc): Linear()\n[rank0]: )", Header{Class: "Net", Prefix: "[rank0]: "}, true},
		{"timestamp prefix", "2024-01-01 10:00:01 Net(\n2024-01-01 10:00:02   (fc): Linear()\n", Header{Class: "Net", Prefix: "2024-01-01 10:00:01 ", Loose: true}, true},
		{"list", "[Float16Module(\n  (module): GPTModel(\n", Header{Class: "Float16Module", List: true}, true},
		{"mbridge comments", "GPTModel /* n_params=1 */ (\n  (embedding): E()  /* n_params=2 */\n", Header{Class: "GPTModel", Comment: true}, true},
		{"child line is no root", "  (fc): Linear(\n    (x): Y()\n", Header{}, false},
		{"no child follows", "Net(\nhello\n", Header{}, false},
	}
	for _, tc := range tests {
		h, ok := FindHeader(Lines(tc.text), 0)
		if ok != tc.ok || h != tc.want {
			t.Errorf("%s: FindHeader = %+v, %v; want %+v, %v", tc.name, h, ok, tc.want, tc.ok)
		}
	}
}

func TestParseChild(t *testing.T) {
	tests := []struct {
		line string
		want Child
		ok   bool
	}{
		{"(fc): Linear(in_features=4, out_features=8, bias=True)", Child{Key: "fc", Class: "Linear", Body: "in_features=4, out_features=8, bias=True", Leaf: true}, true},
		{"(layers): ModuleList(", Child{Key: "layers", Class: "ModuleList", Open: true}, true},
		{"(0-27): 28 x Block(", Child{Key: "0-27", First: 0, Last: 27, Count: 28, Class: "Block", Open: true}, true},
		{"(0-27): 27 x Block(", Child{Key: "0-27", First: 0, Last: 27, Count: 27, Class: "Block", Open: true, BadCount: "(0-27): 27 x"}, true},
		{"(act): None", Child{Key: "act", Class: "None", None: true}, true},
		{"(lora_A): ModuleDict(", Child{Key: "lora_A", Class: "ModuleDict", Open: true}, true},
		{"(fc): Linear(in_features=4,", Child{Key: "fc", Class: "Linear", Body: "in_features=4,", Partial: true}, true},
		{"(peft.x): lora.Linear(", Child{Key: "peft.x", Class: "lora.Linear", Open: true}, true},
		{"(fc) Linear()", Child{}, false},
		{"(fc): 3 apples", Child{}, false},
	}
	for _, tc := range tests {
		c, ok := ParseChild(tc.line)
		if ok != tc.ok || c != tc.want {
			t.Errorf("ParseChild(%q) = %+v, %v; want %+v, %v", tc.line, c, ok, tc.want, tc.ok)
		}
	}
}

// The scanner removes the prefix and indentation and counts what it skips.
func TestScanner(t *testing.T) {
	lines := Lines("[rank0]: Net(\n[rank0]:   (fc): Linear()\n\nnoise from another process\n[rank0]:\n[rank0]: )\n")
	h, ok := FindHeader(lines, 0)
	if !ok {
		t.Fatal("no header")
	}
	s := NewScanner(lines, h)
	var got []Line
	for i := 1; i < s.Len(); i++ {
		if l, ok := s.Line(i, true); ok {
			got = append(got, l)
		}
	}
	want := []Line{{Num: 2, Indent: 2, Text: "(fc): Linear()"}, {Num: 6, Text: ")"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("lines %+v, want %+v", got, want)
	}
	if s.Blank != 2 || s.FirstBlank != 3 || s.Skipped != 1 || s.FirstSkip != 4 {
		t.Errorf("blank %d (first %d), skipped %d (first %d); want 2 (3), 1 (4)", s.Blank, s.FirstBlank, s.Skipped, s.FirstSkip)
	}
	s.Pos = 1
	if l, ok := s.Peek(); !ok || l.Num != 4 || l.Text != "noise from another process" {
		t.Errorf("Peek = %+v, %v: want the unprefixed line 4 (a terminal-wrapped continuation)", l, ok)
	}
}

func TestClip(t *testing.T) {
	long := strings.Repeat("é", 60)
	if got := Clip(long); !strings.HasSuffix(got, "…") || len(got) > 84 || !strings.HasPrefix(long, strings.TrimSuffix(got, "…")) {
		t.Errorf("Clip cut a UTF-8 sequence or did not shorten: %q", got)
	}
	if got := Clip("a\tb\x7f"); got != "a b " {
		t.Errorf("Clip = %q", got)
	}
}

// FuzzScan runs every scanner entry point on arbitrary text: no panic, and
// a Header found is one the Scanner can read.
func FuzzScan(f *testing.F) {
	f.Add([]byte("Net(\n  (fc): Linear(in_features=4, out_features=8, bias=True)\n)\n"))
	f.Add([]byte("[rank0]: [Float16Module(\n[rank0]:   (0-3): 4 x Block(\n"))
	f.Add([]byte("GPTModel /* n */ (\n  (e): E( /* x */\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		src, ok := Decode(data)
		if !ok {
			return
		}
		lines := Lines(src)
		for i := range lines.Len() {
			ParseChild(strings.TrimLeft(lines.Line(i), " \t"))
			Balance(lines.Line(i))
			h, ok := FindHeader(lines, i)
			if !ok {
				continue
			}
			s := NewScanner(lines, h)
			for k := i + 1; k < s.Len(); k++ {
				s.Pos = k
				s.Line(k, true)
				s.Peek()
			}
		}
	})
}

func TestBrackets(t *testing.T) {
	if got := SplitTop("(3584,), eps=1e-06, name='a,b', d={1: (2, 3)}", ','); !reflect.DeepEqual(got, []string{"(3584,)", " eps=1e-06", " name='a,b'", " d={1: (2, 3)}"}) {
		t.Errorf("SplitTop = %q", got)
	}
	if got := MatchParen("x(a, (b), 'c)')) tail", 1, true); got != 14 {
		t.Errorf("MatchParen with quotes = %d, want 14", got)
	}
	if got := MatchParen("x(it's) y)", 1, false); got != 6 {
		t.Errorf("MatchParen without quotes = %d, want 6", got)
	}
	if got := Balance("Net(a=(1, 2), b='('"); got != 1 {
		t.Errorf("Balance = %d, want 1", got)
	}
}

func TestNextWith(t *testing.T) {
	lines := Lines("a\n\nb(\nc\r\n(d\n\n" + strings.Repeat("x\n", 100) + "y(")
	for _, tc := range []struct{ from, want int }{{0, 2}, {2, 2}, {3, 4}, {5, 106}, {106, 106}, {107, -1}} {
		if got := lines.NextWith(tc.from, '('); got != tc.want {
			t.Errorf("NextWith(%d) = %d, want %d", tc.from, got, tc.want)
		}
	}
	if got := Lines("").Len(); got != 0 {
		t.Errorf("Lines(\"\").Len() = %d", got)
	}
}

func TestClassTokenUnicode(t *testing.T) {
	for s, want := range map[string]int{
		"Linear(":      6,
		"lora.Linear(": 11,
		"Modèl(":       6, // Python 3 identifiers may be Unicode
		"模型(":          6, // two 3-byte letters
		"Mod\xffel(":   6, // invalid UTF-8 stays in the name: the parser reports it
		"：Model(":      0, // a full-width colon is no identifier
		"2Model(":      0,
		"_x.(":         2,
	} {
		if got := ClassToken(s); got != want {
			t.Errorf("ClassToken(%q) = %d, want %d", s, got, want)
		}
	}
	if got := Invalid("ok é \xff"); got != 6 {
		t.Errorf("Invalid = %d, want 6", got)
	}
}
