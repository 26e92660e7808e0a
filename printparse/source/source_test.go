package source

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/layermap/layermap/printparse/testkit" // the -update flag of go test ./... -update
)

func TestErrorText(t *testing.T) {
	cause := errors.New("disk on fire")
	tests := []struct {
		err  *Error
		want string
	}{
		{&Error{File: "a.txt", Line: 3, Expected: "X", Found: "Y"}, "a.txt:3: expected X, found Y"},
		{&Error{File: "a.txt", Line: 3, Col: 7, Expected: "X", Found: "Y"}, "a.txt:3:7: expected X, found Y"},
		{&Error{File: "a.txt", Expected: "X", Found: "Y"}, "a.txt: expected X, found Y"},
		{&Error{File: "a.txt", Col: 7, Expected: "X"}, "a.txt: expected X"},
		{&Error{File: "a.txt", Line: 2, Msg: "free text"}, "a.txt:2: free text"},
		{&Error{File: "a.txt", Err: cause}, "a.txt: disk on fire"},
		{&Error{File: "a.txt", Line: 1, Msg: "read", Err: cause}, "a.txt:1: read: disk on fire"},
		{&Error{Msg: "no file"}, "no file"},
		{&Error{File: "a.txt"}, "a.txt"},
	}
	for _, tc := range tests {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("%+v: %q, want %q", *tc.err, got, tc.want)
		}
	}
	if e := (&Error{File: "a", Err: fs.ErrNotExist}); !errors.Is(e, fs.ErrNotExist) {
		t.Error("Error does not unwrap to its cause")
	}
}

func TestOpenRegular(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.txt")
	if err := os.WriteFile(p, []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := p + ".link"
	if err := os.Symlink(p, link); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{p, link} {
		b, err := ReadFile(path, 6)
		if err != nil || string(b) != "hello\n" {
			t.Errorf("ReadFile(%s) = %q, %v", path, b, err)
		}
	}
	_, err := Open(filepath.Join(t.TempDir(), "missing"), 0)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v, want fs.ErrNotExist", err)
	}
}

// The budget is checked against the file's size before anything is read.
func TestBudget(t *testing.T) {
	p := filepath.Join(t.TempDir(), "big.txt")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(3 << 30); err != nil { // sparse: nothing is written
		t.Fatal(err)
	}
	f.Close()
	_, err = ReadFile(p, MaxText)
	if want := p + ": expected a file of at most 256 MiB, found 3 GiB"; err == nil || err.Error() != want {
		t.Errorf("ReadFile: %v, want %q", err, want)
	}
	_, err = ReadAll(strings.NewReader("0123456789"), "<stdin>", 4)
	if want := "<stdin>: expected at most 4 B, found more"; err == nil || err.Error() != want {
		t.Errorf("ReadAll: %v, want %q", err, want)
	}
	if b, err := ReadAll(strings.NewReader("0123"), "<stdin>", 4); err != nil || string(b) != "0123" {
		t.Errorf("ReadAll at the limit: %q, %v", b, err)
	}
}

func TestBOM(t *testing.T) {
	tests := []struct {
		data string
		want string
	}{
		{"\xef\xbb\xbf{}", "a UTF-8 byte-order mark (BOM)"},
		{"\xff\xfe{\x00", "a UTF-16LE byte-order mark (BOM)"},
		{"\xfe\xff\x00{", "a UTF-16BE byte-order mark (BOM)"},
		{"\xff\xfe\x00\x00", "a UTF-32LE byte-order mark (BOM)"},
		{"{}", ""},
		{"", ""},
	}
	for _, tc := range tests {
		if got := BOM([]byte(tc.data)); got != tc.want {
			t.Errorf("BOM(%q) = %q, want %q", tc.data, got, tc.want)
		}
	}
}

func TestSize(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1 KiB", 1536: "1.5 KiB", 64 << 20: "64 MiB", 3 << 30: "3 GiB", 1 << 40: "1 TiB"} {
		if got := Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestReadText(t *testing.T) {
	dir := t.TempDir()
	text := strings.Repeat("a line of text\n", 2*TextBlock/15)
	utf16 := "\xff\xfeM\x00(\x00\n\x00"
	tests := []struct {
		name, data string
		limit      int64
		want       string // error text, "" for none
	}{
		{"short text", "Net(\n)\n", 0, ""},
		{"text longer than a block", text, 0, ""},
		{"UTF-16 with a BOM holds NULs", utf16, 0, ""},
		{"binary in the first block", "PK\x03\x04\x00rest", 0, "expected T, found binary data (a NUL byte in its first 8 KiB)"},
		{"binary checked before the size", "\x00" + text, 10, "expected T, found binary data"},
		{"over the budget", text, int64(len(text) - 1), "expected a file of at most"},
		{"exactly the budget", text, int64(len(text)), ""},
	}
	for _, tc := range tests {
		p := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_"))
		if err := os.WriteFile(p, []byte(tc.data), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, via := range []string{"file", "reader"} {
			var b []byte
			var err error
			if via == "file" {
				b, err = ReadTextFile(p, tc.limit, "T")
			} else {
				b, err = ReadText(strings.NewReader(tc.data), p, tc.limit, "T")
			}
			switch {
			case tc.want == "" && (err != nil || string(b) != tc.data):
				t.Errorf("%s (%s): %d bytes, %v; want the data back", tc.name, via, len(b), err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				if via == "reader" && strings.Contains(tc.want, "a file of at most") && err != nil {
					continue // a reader has no size to judge first: "at most N, found more"
				}
				t.Errorf("%s (%s): %v; want %q", tc.name, via, err, tc.want)
			}
		}
	}
}

func TestBinary(t *testing.T) {
	for s, want := range map[string]bool{"": false, "text": false, "a\x00b": true, "\xff\xfeM\x00": false, "\xfe\xff\x00M": false, "\xef\xbb\xbf\x00": true} {
		if got := Binary([]byte(s)); got != want {
			t.Errorf("Binary(%q) = %v, want %v", s, got, want)
		}
	}
}

// FuzzReadText: text comes back whole; binary input is refused after one
// block, naming it.
func FuzzReadText(f *testing.F) {
	f.Add([]byte("Net(\n)\n"), int64(0))
	f.Add([]byte("\xff\xfeN\x00"), int64(3))
	f.Add([]byte("a\x00b"), int64(100))
	f.Fuzz(func(t *testing.T, data []byte, limit int64) {
		b, err := ReadText(strings.NewReader(string(data)), "in", limit, "T")
		switch {
		case err == nil && string(b) != string(data):
			t.Fatalf("read %q, want %q", b, data)
		case err == nil && (Binary(data) || limit > 0 && int64(len(data)) > limit):
			t.Fatalf("accepted %q (limit %d)", data, limit)
		case err != nil && !strings.HasPrefix(err.Error(), "in: expected "):
			t.Fatalf("error %v", err)
		}
	})
}
