package msprobe

import (
	"math/rand/v2"
	"testing"
)

// TestPlainLen checks the word-at-a-time scan against the byte table on
// runs ending in every stop byte at every offset.
func TestPlainLen(t *testing.T) {
	naive := func(b []byte) int {
		i := 0
		for i < len(b) && !stringStop[b[i]] {
			i++
		}
		return i
	}
	r := rand.New(rand.NewPCG(1, 2))
	for n := 0; n < 40; n++ {
		for stop := 0; stop < 256; stop++ {
			b := make([]byte, n+9)
			for i := range b {
				b[i] = byte(0x20 + r.IntN(0x5f))
				if b[i] == '"' || b[i] == '\\' {
					b[i] = 'a'
				}
			}
			b[n] = byte(stop)
			if r.IntN(2) == 0 && n+1 < len(b) {
				b[n+1] = byte(r.IntN(256)) // anything after the first stop
			}
			if got, want := plainLen(b), naive(b); got != want {
				t.Fatalf("plainLen(%q) = %d, want %d", b, got, want)
			}
			if got, want := plainLen(b[:n]), naive(b[:n]); got != want {
				t.Fatalf("plainLen(%q) = %d, want %d", b[:n], got, want)
			}
		}
	}
}
