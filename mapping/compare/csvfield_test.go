package compare

import (
	"encoding/csv"
	"strings"
	"testing"
)

// TestNeedsQuote checks the word-at-a-time test against a byte scan for
// every byte value at every offset of short and long fields.
func TestNeedsQuote(t *testing.T) {
	for n := 1; n < 30; n++ {
		for pos := 0; pos < n; pos++ {
			for c := 0; c < 256; c++ {
				b := []byte(strings.Repeat("a", n))
				b[pos] = byte(c)
				want := strings.ContainsAny(string(b), ",\"\n\r")
				if got := needsQuote(b); got != want {
					t.Fatalf("needsQuote(%q) = %v, want %v", b, got, want)
				}
				if got := needsQuote(string(b)); got != want {
					t.Fatalf("needsQuote(string %q) = %v, want %v", b, got, want)
				}
			}
		}
	}
}

// TestAppendCSVField checks fields against encoding/csv's writer, which
// quotes the same four bytes and doubles quotes the same way.
func TestAppendCSVField(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		"", "plain", "[2, 4]", `"`, `""`, `a"b`, `"a"`, "a,\"b\"\nc", "x\ry", `['File "a.py", line 1, in f']`, `end"`,
	} {
		var w strings.Builder
		cw := csv.NewWriter(&w)
		if err := cw.Write([]string{s, ""}); err != nil {
			t.Fatal(err)
		}
		cw.Flush()
		want := strings.TrimSuffix(w.String(), ",\n")
		if s == "" {
			want = ""
		}
		if got := string(appendCSVField([]byte("x"), s))[1:]; got != want {
			t.Errorf("appendCSVField(%q) = %s, want %s", s, got, want)
		}
		if got := string(appendCSVField(nil, []byte(s))); got != want {
			t.Errorf("appendCSVField([]byte %q) = %s, want %s", s, got, want)
		}
	}
}
