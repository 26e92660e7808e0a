package msprobe

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// chunkReader gives at most n bytes a Read (1: a refill in the middle of
// every token).
type chunkReader struct {
	r io.Reader
	n int
}

func (c *chunkReader) Read(p []byte) (int, error) { return c.r.Read(p[:min(len(p), c.n)]) }

// skimBody skims body as the value of the entry name, read chunk bytes at
// a time (0: as much as the lexer takes), through skimLines or by the
// byte loop alone, and tells what it found.
func skimBody(body []byte, name string, chunk int, lines bool) string {
	var r io.Reader = bytes.NewReader(body)
	if chunk > 0 {
		r = &chunkReader{r, chunk}
	}
	lx := newLexer(r, "body")
	odd, stack, err := skimValueBy(lx, []byte(name), nil, lines)
	if err != nil {
		return fmt.Sprintf("error %v", err)
	}
	return fmt.Sprintf("odd %v, %d bytes, line %d, stack %q", odd, lx.read+int64(lx.pos), lx.line, stack)
}

// indented lays src out as json.dump(indent=1) does, one value a line
// (src is written compactly, with ", " and ": ").
func indented(src string) string {
	var b strings.Builder
	depth, inString := 0, false
	newline := func() {
		b.WriteByte('\n')
		b.WriteString(strings.Repeat(" ", depth))
	}
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case inString:
			b.WriteByte(c)
			if c == '\\' && i+1 < len(src) {
				i++
				b.WriteByte(src[i])
			} else if c == '"' {
				inString = false
			}
		case c == '"':
			inString = true
			b.WriteByte(c)
		case (c == '{' || c == '[') && i+1 < len(src) && src[i+1] != closerOf(c):
			depth++
			b.WriteByte(c)
			newline()
		case (c == '}' || c == ']') && i > 0 && src[i-1] != '{' && src[i-1] != '[':
			depth--
			newline()
			b.WriteByte(c)
		case c == ',' && i+1 < len(src) && src[i+1] == ' ':
			b.WriteByte(c)
			newline()
			i++
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// skimLinesCases are entry bodies, each laid out by indented, with the
// entry name they are skimmed for.
var skimLinesCases = []struct{ name, body string }{
	{"Tensor.add.0.forward", `{"input_args": [` + tensorA + `, null, 3, -1.5e-07, true, "s"], "input_kwargs": {}, "output": [` + tensorA + `]}`},
	{"Tensor.add.0.forward", `{"input_args": [{"type": "Tensor", "x": []}], "Tensor": 1, "aTensorb": {"y": [[], {}]}}`},
	{"Functional.linear.0.forward", `{"input_args": [` + tensorA + `], "output": [{"type": "torch.Tensor", "data_name": "Functional.linear.0.forward.output.0.pt", "Max": 1}]}`},
	{"Functional.linear.0.forward", `{"output": [{"data_name": "X.1.forward.output.0.pt"}, {"data_name": null}, {"data_name": 7}, {"data_name": [1]}]}`},
	{"A.0.forward", `{"input_kwargs": {"k\"ey": {"type": "str", "value": "a\\\"b}]"}, "path\\": "c:\\d\\"}}`},
	{"A.0.forward", `{"x": "\u00e9\u4e2d", "y": "no newline \n here", "z": "long string that runs past eight bytes and more, with [brackets] and {braces} and: colons, commas"}`},
	{"A.0.forward", `{"a": [1, [2, [3, [4]]]], "b": {"c": {"d": {"e": {}}}}, "f": NaN, "g": -Infinity, "h": 1E+300}`},
	{"input.0.forward", `{"input": [` + tensorA + `]}`},
	{"7.0.forward", `{"7": 1}`},
	{"", `{"": [""]}`},
	{"A.0.forward", `{"a": [1}, "b": 2}`},
	{"A.0.forward", `{"a": {1]}`},
	{"A.0.forward", `{"a" "b", "c": 1 2, ,, :: "d"}`},
	{"A.0.forward", `{"a": [1, 2]`},
	{"A.0.forward", `{"a": "unterminated`},
	{"A.0.forward", `"just a string"`},
	{"A.0.forward", `12345`},
	{"A.0.forward", `[]`},
	// Keys holding the first dot-part's first byte: "Mean", and one
	// holding the first dot-part.
	{"Mint.add.0.forward", `{"input_args": [` + tensorA + `], "Mi": 1, "output": [` + tensorA + `]}`},
	{"Mint.add.0.forward", `{"input_args": [` + tensorA + `], "xMintx": 1, "output": [` + tensorA + `]}`},
	// A data_name key under brackets of both kinds opened on earlier
	// lines, and closed after it.
	{"A.0.forward", `{"a": [` + tensorA + `, {"b": [{"c": {"data_name": "x"}, "d": [1, {"e": 2}]}]}], "f": {"g": [3]}}`},
	// Words that are not true, false, null or numbers.
	{"A.0.forward", `{"a": [` + tensorA + `, trueish, nullx, fals, -1.5e+07, 1.0E-5, 12/34, 1-2-3, abc:def, Tensor, n]}`},
	// Keys holding the first dot-part's first byte where the part may
	// start and where it may not, near its length, and keys like
	// data_name.
	{"Mint.add.0.forward", `{"input_args": [` + tensorA + `], "abcM": 1, "abM": 2, "Mabc": 3, "aMin": 4, "abcdeM": 5}`},
	{"Mint.add.0.forward", `{"input_args": [` + tensorA + `], "aMint": 1}`},
	{"Mint.add.0.forward", `{"input_args": [` + tensorA + `], "abcdefgMint": 1}`},
	{"Mint.add.0.forward", `{"input_args": [` + tensorA + `], "Mint": 1}`},
	{"Module.x.0.forward", `{"input_args": [` + tensorA + `], "data_nam": "x", "data_names": "x", "xdata_name": [1], "data_namE": {}, "Data_name": 2}`},
	// Bytes from 0x80 up in keys and values, and quotes and backslashes
	// at each place of a word.
	{"A.0.forward", `{"a": [` + tensorA + `, "é", "中文字符串很长很长很长"], "ключ": "значение", "k": "\\", "kk": "x\"", "kkkkkkk": "1234567\\"}`},
	// Long strings and numbers, past what a line window reads.
	{"A.0.forward", `{"a": [` + tensorA + `, "` + strings.Repeat("s", 300) + `", ` + strings.Repeat("7", 300) + `, true], "` + strings.Repeat("k", 200) + `": 1}`},
}

// TestSkimLines: skimLines changes nothing the byte loop finds (odd, the
// bytes taken, the line count, the error) on indented bodies, read whole
// and in chunks, with tabs, CRLF line ends and wider indents too, and on
// the demo dumps whole; and it takes the demo dumps' lines itself.
func TestSkimLines(t *testing.T) {
	t.Parallel()
	type body struct{ what, name, text string }
	var bodies []body
	for i, c := range skimLinesCases {
		text := indented(c.body)
		bodies = append(bodies,
			body{fmt.Sprintf("case %d", i), c.name, text},
			body{fmt.Sprintf("case %d, compact", i), c.name, c.body},
			body{fmt.Sprintf("case %d, tabs", i), c.name, strings.ReplaceAll(text, "\n ", "\n\t")},
			body{fmt.Sprintf("case %d, CRLF", i), c.name, strings.ReplaceAll(text, "\n", "\r\n")},
			body{fmt.Sprintf("case %d, indent 9", i), c.name, strings.ReplaceAll(text, "\n ", "\n         ")},
			// Room after each line for skimLines (skimLinesMin).
			body{fmt.Sprintf("case %d, padded", i), c.name, text + strings.Repeat(" ", skimLinesMin)},
		)
	}
	// Lines json.dump does not write (no comma after a value, or after
	// an empty object on its line), long enough for skimLines to run.
	pad := `  "pad": "` + strings.Repeat("p", 80) + `",` + "\n"
	for i, text := range []string{
		"{\n" + pad + ` "a": {}` + "\n" + ` "Tensor": 1,` + "\n" + pad + ` "b": []` + "\n" + ` "Tensor": 2` + "\n" + pad + `}`,
		"{\n" + pad + ` "a": 1` + "\n" + ` "Tensor": [` + "\n" + `  "Tensor"` + "\n" + `  "x": 2` + "\n" + ` ]` + "\n" + pad + `}`,
	} {
		bodies = append(bodies, body{fmt.Sprintf("raw %d", i), "Tensor.add.0.forward", text})
	}
	// Lines of every length up to past what a line window reads, each
	// starting at every offset of one.
	var ls strings.Builder
	ls.WriteString("{\n \"a\": [")
	for n := 1; n < 260; n += 3 {
		fmt.Fprintf(&ls, "\n  \"%s\",\n  %s,\n  {\"%s\": 1},\n%s%d,", strings.Repeat("x", n), strings.Repeat("1", n), strings.Repeat("y", n), strings.Repeat(" ", n), n)
	}
	ls.WriteString("\n  0\n ]\n}")
	bodies = append(bodies, body{"line lengths", "Tensor.add.0.forward", ls.String()})
	// Long enough for skimLines to run, and ending at each byte of its
	// last lines.
	long := indented(`{"input_args": [` + strings.Repeat(tensorA+", ", 40) + tensorA + `]}`)
	for cut := len(long) - 80; cut <= len(long); cut++ {
		bodies = append(bodies, body{fmt.Sprintf("long body cut at %d", cut), "Tensor.add.0.forward", long[:cut]})
	}
	// Nested beyond what skimLines holds in a word, indented; and
	// around maxNesting, a bracket a line.
	for _, depth := range []int{2, 61, 62, 63, 64, 65, 130} {
		text := indented(`{"a": [` + tensorA + `, ` + strings.Repeat(`[{"b": `, depth/2) + `1` + strings.Repeat(`}]`, depth/2) + `]}`)
		bodies = append(bodies, body{fmt.Sprintf("depth %d", depth), "Tensor.add.0.forward", text})
	}
	for _, depth := range []int{maxNesting - 1, maxNesting, maxNesting + 1} {
		text := "{\n" + strings.Repeat("[\n", depth-1) + `"` + strings.Repeat("p", 80) + `"` + strings.Repeat("\n]", depth-1) + "\n}"
		bodies = append(bodies, body{fmt.Sprintf("depth %d", depth), "Tensor.add.0.forward", text})
	}
	for _, d := range []string{"llamafactory", "mindspeed-mm"} {
		data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "demo", "dumps", d, "dump.json"))
		if err != nil {
			t.Fatal(err)
		}
		bodies = append(bodies, body{d, "Module.0.forward", string(data)}, body{d, "Tensor.0.forward", string(data)})
	}
	for _, b := range bodies {
		for _, chunk := range []int{0, 1, 7, 100, 1000} {
			want := skimBody([]byte(b.text), b.name, chunk, false)
			if got := skimBody([]byte(b.text), b.name, chunk, true); got != want {
				t.Errorf("%s as %q, chunks of %d: through skimLines\n%s\nbyte loop\n%s", b.what, b.name, chunk, got, want)
			}
		}
	}

	// skimLines itself takes every line of the demo dumps' "data" but
	// the entries' ends.
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "demo", "dumps", "mindspeed-mm", "dump.json"))
	if err != nil {
		t.Fatal(err)
	}
	start := bytes.Index(data, []byte("\"data\": {\n")) + len("\"data\": {")
	stack := []byte("{{")
	i, lines := start, 0
	for i < len(data)-skimLinesMin {
		j, st, line, _, _ := skimLines(data, i, []byte("Tensor"), stack, 0, true, true)
		if j == i {
			break
		}
		lines += line
		stack, i = st, j
	}
	if want := len(data) - skimLinesMin; i < want-200 {
		t.Errorf("skimLines stopped at byte %d of %d: %q", i, len(data), data[i:min(i+40, len(data))])
	}
	if want := bytes.Count(data[start:i], []byte("\n")); lines != want {
		t.Errorf("skimLines counted %d lines, want %d", lines, want)
	}
}

// FuzzSkimLines: on any body, skimLines changes nothing the byte loop
// finds.
func FuzzSkimLines(f *testing.F) {
	for _, c := range skimLinesCases {
		first, _, _ := strings.Cut(c.name, ".")
		f.Add([]byte(indented(c.body)), first, uint8(0))
	}
	f.Fuzz(func(t *testing.T, body []byte, first string, chunk uint8) {
		name := first + ".0.forward"
		// As is, and with room after each line for skimLines.
		for _, body := range [][]byte{body, append(body[:len(body):len(body)], bytes.Repeat([]byte(" "), skimLinesMin)...)} {
			want := skimBody(body, name, int(chunk), false)
			if got := skimBody(body, name, int(chunk), true); got != want {
				t.Errorf("through skimLines\n%s\nbyte loop\n%s", got, want)
			}
		}
	})
}
