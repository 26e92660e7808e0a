package compare

import (
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
