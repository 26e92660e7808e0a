package compare

import (
	"archive/zip"
	"bytes"
	stdflate "compress/flate"
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

// TestParallelDeflateStream decodes what parallelDeflate writes with 1
// and 4 workers, whatever the machine's CPUs, in writes of random sizes
// (zero-length ones too), with text that repeats across the blocks'
// edges: the bytes written, one deflate stream, nothing after its final
// block.
func TestParallelDeflateStream(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	text := []byte(strings.Repeat(`<row r="7"><c r="A7" t="inlineStr"><is><t>Tensor.__mul__.0.forward.output.0</t></is></c></row>`, 13*deflateBlock/95))
	for _, workers := range []int{1, 4} {
		for _, size := range []int{0, 1, deflateBlock - 1, deflateBlock, deflateBlock + 1, 2 * deflateBlock, 7*deflateBlock + 12345, len(text)} {
			t.Run(fmt.Sprintf("%d workers/%d bytes", workers, size), func(t *testing.T) {
				var out bytes.Buffer
				d := newParallelDeflate(&out)
				d.n = workers
				for rest := text[:size]; ; {
					n := min(rng.IntN(3*deflateBlock/2), len(rest)) // 0 now and then
					if _, err := d.Write(rest[:n]); err != nil {
						t.Fatal(err)
					}
					if rest = rest[n:]; len(rest) == 0 {
						break
					}
				}
				if err := d.Close(); err != nil {
					t.Fatal(err)
				}
				in := bytes.NewReader(out.Bytes()) // a ByteReader: flate reads no further than the stream
				got, err := io.ReadAll(stdflate.NewReader(in))
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, text[:size]) {
					t.Fatalf("decoded %d bytes, wrote %d", len(got), size)
				}
				if in.Len() != 0 {
					t.Fatalf("%d bytes after the final block", in.Len())
				}
			})
		}
	}
}

// TestParallelDeflateWriteError: once the file fails, Write says so (the
// rest of a sheet is not compressed for nothing), and so does Close, once
// or twice; a Write after Close fails.
func TestParallelDeflateWriteError(t *testing.T) {
	t.Parallel()
	d := newParallelDeflate(&failingWriter{n: 100})
	d.n = 2
	block := make([]byte, deflateBlock)
	var err error
	for k := 0; k < 64 && err == nil; k++ {
		_, err = d.Write(block)
	}
	if !errors.Is(err, errDiskFull) {
		t.Fatalf("64 MB written, Write: %v, want %v", err, errDiskFull)
	}
	for range 2 {
		if err := d.Close(); !errors.Is(err, errDiskFull) {
			t.Fatalf("Close: %v, want %v", err, errDiskFull)
		}
	}
	if _, err := d.Write(block); !errors.Is(err, errDeflateClosed) {
		t.Fatalf("Write after Close: %v", err)
	}
	// closed twice without an error: the second Close writes nothing
	var out bytes.Buffer
	d = newParallelDeflate(&out)
	d.Write(make([]byte, 3*deflateBlock))
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	n := out.Len()
	if err := d.Close(); err != nil || out.Len() != n {
		t.Fatalf("second Close: %v, %d bytes more", err, out.Len()-n)
	}
}
