package msprobe

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/layermap/layermap/printparse/source"
	"github.com/layermap/layermap/printparse/testkit"
)

var errLineRE = regexp.MustCompile(`^dump\.json:(\d+): expected .+, found .+`)

// TestTruncated cuts a real dump at many offsets: every cut must give one
// "dump.json:line: expected ..., found ..." error, never a panic or a
// silent success.
func TestTruncated(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(testkit.Corpus(t, "msprobe"), "golden/synth_statistics/npu/dump.json"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Count(string(src), "\n") + 1
	end := strings.LastIndexByte(string(src), '}')
	for cut := 0; cut <= end; cut += 7 {
		_, err := Scan(strings.NewReader(string(src[:cut])), "dump.json", func(*Entry) error { return nil })
		if err == nil {
			t.Fatalf("cut at %d: no error", cut)
		}
		if strings.Contains(err.Error(), "\n") || !errLineRE.MatchString(err.Error()) {
			t.Fatalf("cut at %d: error %q", cut, err)
		}
		var de *source.Error
		if !errors.As(err, &de) || de.Line < 1 || de.Line > lines {
			t.Fatalf("cut at %d: line of %v", cut, err)
		}
		if cut > 20 && !strings.Contains(err.Error(), "found end of file") {
			t.Fatalf("cut at %d: %v", cut, err)
		}
	}
}

func TestMalformed(t *testing.T) {
	tests := []struct{ name, src, want string }{
		{"empty", ``, "dump.json:1: expected '{' starting the dump object, found end of file"},
		{"not an object", `[1]`, "dump.json:1: expected '{' starting the dump object, found '['"},
		{"lowercase nan", "{\"data\": {\"A.0.forward\": {\"output\": [{\"type\": \"t\", \"Max\": nan}]}}}", `dump.json:1: expected a value, found "nan"`},
		{"python True", "{\"data\": {\"A.0.forward\": {\"x\":\n True}}}", `dump.json:2: expected a value, found "True"`},
		{"trailing comma", "{\"data\": {\"A.0.forward\": {\"output\": [1,]}}}", `dump.json:1: expected a value, found ']'`},
		{"trailing comma in object", "{\"data\": {\"A.0.forward\": {\"output\": 1,}}}", `dump.json:1: expected an object key string, found '}'`},
		{"missing colon", "{\"data\": {\"A.0.forward\" {}}}", `dump.json:1: expected ':' after the entry name, found '{'`},
		{"missing comma", "{\"data\": {\"A.0.forward\": {}\n\"B.0.forward\": {}}}", `dump.json:2: expected ',' or '}' in "data", found a string`},
		{"unterminated string", "{\"data\": {\"A.0.forward", `dump.json:1: expected '"' closing the string, found end of file`},
		{"raw newline in string", "{\"data\": {\"A.0.\nforward\": {}}}", `dump.json:1: expected '"' closing the string, found control character 0x0a`},
		{"bad escape", `{"data": {"A.0.forward": {"x": "\q"}}}`, `dump.json:1: expected a valid escape sequence, found "\q"`},
		{"bad unicode escape", `{"data": {"A.0.forward": {"x": "\u12g4"}}}`, `dump.json:1: expected four hex digits after \u, found "12g4"`},
		{"leading zero", `{"data": {"A.0.forward": {"x": 01}}}`, `dump.json:1: expected ',' or '}', found a number`},
		{"dot without digits", `{"data": {"A.0.forward": {"x": 1.}}}`, `dump.json:1: expected a digit after '.', found '}'`},
		{"exponent without digits", `{"data": {"A.0.forward": {"x": 1e+}}}`, `dump.json:1: expected a digit in the exponent, found '}'`},
		{"lone minus", `{"data": {"A.0.forward": {"x": -}}}`, `dump.json:1: expected a digit, found '}'`},
		{"plus sign", `{"data": {"A.0.forward": {"x": +1}}}`, `dump.json:1: expected a value, found '+'`},
		{"word after Infinity", `{"data": {"A.0.forward": {"x": Infinityx}}}`, `dump.json:1: expected ',' or '}', found 'x'`},
		{"minus word", `{"data": {"A.0.forward": {"x": -Inf}}}`, `dump.json:1: expected a number or -Infinity, found "Inf"`},
		{"extra data", "{\"data\": {}}\n{}", `dump.json:2: expected end of file after the dump object, found '{'`},
		{"data not object", `{"task": "x", "data": [1]}`, `dump.json:1: expected an object as the value of "data", found '['`},
		{"no data", "{\"task\": \"x\"\n}", `dump.json:2: expected a "data" key in the dump object, found none`},
		{"entry body not object", "{\"data\": {\n\"A.0.forward\": 3}}", `dump.json:2: entry "A.0.forward": expected an object as the entry body, found a number`},
		{"formula entry name", "{\"data\": {\n\"=cmd|x.0.forward\": {}}}", `dump.json:2: expected an entry name without a leading formula character (+ - = % @; msprobe refuses it), found "=cmd|x.0.forward"`},
		{"formula after semicolon", "{\"data\": {\"a;@x.0.forward\": {}}}", `dump.json:1: expected an entry name without a leading formula character (+ - = % @; msprobe refuses it), found "a;@x.0.forward"`},
		{"full-width formula", "{\"data\": {\"＝x.0.forward\": {}}}", `found "＝x.0.forward"`},
		{"shape not a list", "{\"data\": {\"A.0.forward\": {\"input_args\": [{\"type\": \"t\", \n\"shape\": \"2x3\"}]}}}", `dump.json:2: entry "A.0.forward": expected "shape" to be a list, found a string`},
		{"requires_grad not bool", "{\"data\": {\"A.0.forward\": {\"output\": [{\"type\": \"t\", \"requires_grad\": null}]}}}", `dump.json:1: entry "A.0.forward": expected "requires_grad" to be true or false, found null`},
		{"formula value", "{\"data\": {\"A.0.forward\": {\"input_kwargs\": {\"k\": {\"type\": \"str\", \"value\": \"-x\"}}}}}", `dump.json:1: entry "A.0.forward": expected "value" to have no leading formula character (+ - = % @; msprobe refuses it), found "-x"`},
		{"inputs not a list", "{\"data\": {\"A.0.forward\": {\"output\": 5}}}", `dump.json:1: entry "A.0.forward": expected a list or object of inputs/outputs, found a number`},
		{"deep nesting", `{"data": {"A.0.forward": {"x": ` + strings.Repeat("[", 20000) + `}}}`, `dump.json:1: expected at most 10000 levels of nesting, found more`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := scanString("dump.json", tt.src)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v\nwant %s", err, tt.want)
			}
			var de *source.Error
			if !errors.As(err, &de) {
				t.Errorf("not an *source.Error: %T", err)
			}
		})
	}
}

// TestNotChecked covers values msprobe accepts although they look odd:
// its body check skips parameters and lists inside objects.
func TestNotChecked(t *testing.T) {
	for _, data := range []string{
		`"A.0.forward": {"parameters": {"w": {"type": "t", "shape": 3, "requires_grad": 1}}}`,
		`"A.0.forward": {"input_args": [{"type": "t", "value": ["-x"]}]}`,
		`"A.0.forward": {"input_args": [], "input": [{"type": "t", "shape": null}]}`, // input checked only when input_args is empty...
	} {
		_, _, err := scanString("dump.json", dumpWith(data))
		if strings.Contains(data, `"input": [`) {
			// ... and here input_args is empty, so input is checked.
			if err == nil {
				t.Errorf("%s: accepted", data)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", data, err)
		}
	}
}

func TestCallbackError(t *testing.T) {
	stop := errors.New("stop here")
	n := 0
	_, err := ScanFile(filepath.Join(testkit.Corpus(t, "msprobe"), "golden/synth_statistics/npu/dump.json"), func(*Entry) error {
		n++
		if n == 3 {
			return stop
		}
		return nil
	})
	if err != stop || n != 3 {
		t.Errorf("err = %v after %d entries", err, n)
	}
}

func TestByteAtATime(t *testing.T) {
	p := filepath.Join(testkit.Corpus(t, "msprobe"), "golden/synth_statistics/npu/dump.json")
	src, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	_, want, _ := scanAll(t, p)
	var got []Item
	if _, err := Scan(&chunkReader{strings.NewReader(string(src)), 1}, "dump.json", func(e *Entry) error {
		got = append(got, e.Items...)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d items, want %d", len(got), len(want))
	}
	for i := range got {
		if row(got[i]) != row(want[i]) {
			t.Fatalf("item %d: %s\nwant %s", i, row(got[i]), row(want[i]))
		}
	}
}
