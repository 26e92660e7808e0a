package msprobe

import (
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"testing/iotest"
)

// TestPlainLen checks the word-at-a-time scan against the byte table on
// runs ending in every stop byte at every offset, over several words.
func TestPlainLen(t *testing.T) {
	naive := func(b []byte) int {
		i := 0
		for i < len(b) && !stringStop[b[i]] {
			i++
		}
		return i
	}
	r := rand.New(rand.NewPCG(1, 2))
	for n := 0; n < 72; n++ {
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

// checkSkipNumber: skipNumber ends where readNumber does, with its
// error, whether the input comes whole or a byte at a time.
func checkSkipNumber(t *testing.T, in string) {
	t.Helper()
	for _, oneByte := range []bool{false, true} {
		lexer := func() *lexer {
			var r io.Reader = strings.NewReader(in)
			if oneByte {
				r = iotest.OneByteReader(r)
			}
			return newLexer(r, "x")
		}
		want, got := lexer(), lexer()
		_, _, werr := want.readNumber(nil)
		gerr := got.skipNumber()
		if fmt.Sprint(gerr) != fmt.Sprint(werr) {
			t.Fatalf("%q (one byte %v): skipNumber error %v, readNumber %v", in, oneByte, gerr, werr)
		}
		if werr == nil && got.read+int64(got.pos) != want.read+int64(want.pos) {
			t.Fatalf("%q (one byte %v): skipNumber ends at %d, readNumber at %d", in, oneByte, got.read+int64(got.pos), want.read+int64(want.pos))
		}
	}
}

func TestSkipNumber(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"0", "-0", "12", "01", "1.5", "1.", "1.x", "-", "-x", "-Infinity", "-Inf", "-Infinity1",
		"1e5", "1E+5", "1e-", "1e", "1ex", "2.5e-3,", "-12.75E+10]", ".5", "x", "", "00.1", "1.2.3", "123456789012345678901234567890"} {
		checkSkipNumber(t, in)
	}
	// a number of any length is skipped in the lexer's buffer as it is
	long := "1" + strings.Repeat("0", 1<<20) + ".5e" + strings.Repeat("7", 1<<20) + "]"
	checkSkipNumber(t, long)
	lx := newLexer(strings.NewReader(long), "x")
	if err := lx.skipNumber(); err != nil || len(lx.buf) > 64<<10 {
		t.Errorf("skipNumber of %d bytes: %v, buffer %d bytes; want no error and the first 64 KB buffer", len(long), err, len(lx.buf))
	}
}

func FuzzSkipNumber(f *testing.F) {
	for _, s := range []string{"0", "-1.5e-3", "-Infinity", "1e", "01", "-", "1.x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if c := strings.TrimLeft(s, " "); c == "" || c[0] != '-' && (c[0] < '0' || c[0] > '9') {
			return // skipValue calls it on '-' or a digit
		}
		checkSkipNumber(t, strings.TrimLeft(s, " "))
	})
}
