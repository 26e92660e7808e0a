package compare

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestParallelDeflate writes entries of every size around the block
// size, in writes of several sizes, through fastZip, and reads them back
// with archive/zip (which checks the CRC too).
func TestParallelDeflate(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, 3*deflateBlock+7)
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	xml := []byte(strings.Repeat(`<c r="A1" t="inlineStr"><is><t>Functional.linear.0.forward.input.0</t></is></c>`, 4*deflateBlock/80))
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"one byte", []byte("x")},
		{"block-1", xml[:deflateBlock-1]},
		{"block", xml[:deflateBlock]},
		{"block+1", xml[:deflateBlock+1]},
		{"xml", xml},
		{"random", random},
	} {
		for _, chunk := range []int{1 << 10, 64 << 10, 3 * deflateBlock} {
			t.Run(fmt.Sprintf("%s/writes of %d", tc.name, chunk), func(t *testing.T) {
				if chunk == 1<<10 && len(tc.data) > 2*deflateBlock {
					t.Skip("covered by the larger writes") // 1 KB writes of MBs: slow, nothing new
				}
				var file bytes.Buffer
				zw := fastZip(&file)
				w, err := zw.Create("sheet.xml")
				if err != nil {
					t.Fatal(err)
				}
				for rest := tc.data; len(rest) > 0; {
					n := min(chunk, len(rest))
					if _, err := w.Write(rest[:n]); err != nil {
						t.Fatal(err)
					}
					rest = rest[n:]
				}
				if err := zw.Close(); err != nil {
					t.Fatal(err)
				}
				zr, err := zip.NewReader(bytes.NewReader(file.Bytes()), int64(file.Len()))
				if err != nil {
					t.Fatal(err)
				}
				r, err := zr.File[0].Open()
				if err != nil {
					t.Fatal(err)
				}
				got, err := io.ReadAll(r)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, tc.data) {
					t.Fatalf("read back %d bytes, wrote %d", len(got), len(tc.data))
				}
			})
		}
	}
}

// TestParallelDeflateWriteError: an error of the file is Close's.
func TestParallelDeflateWriteError(t *testing.T) {
	t.Parallel()
	d := newParallelDeflate(&failingWriter{n: 100})
	if _, err := d.Write(make([]byte, 3*deflateBlock)); err != nil {
		t.Fatal(err) // the blocks are written later
	}
	if err := d.Close(); !errors.Is(err, errDiskFull) {
		t.Fatalf("Close: %v, want %v", err, errDiskFull)
	}
}
