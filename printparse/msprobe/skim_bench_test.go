package msprobe_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/layermap/layermap/printparse/msprobe"
)

// BenchmarkSkim measures Skim over the generated 64 MB dump: as it runs
// (skimming ahead on every CPU) and on one goroutine.
func BenchmarkSkim(b *testing.B) {
	p, data := benchFile(b)
	for _, c := range []struct {
		name string
		skim func(string, func(*msprobe.SkimEntry) error) (msprobe.Header, error)
	}{{"ahead", msprobe.Skim}, {"sequential", msprobe.SkimSequential}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.skim(p, func(*msprobe.SkimEntry) error { return nil }); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkScanFile measures the file scans over the generated 64 MB
// dump: the full one and the one for the rows' names only.
func BenchmarkScanFile(b *testing.B) {
	p, data := benchFile(b)
	for _, c := range []struct {
		name string
		scan func(string, func(), func(*msprobe.Entry) error) (msprobe.Header, error)
	}{
		{"exact", msprobe.ScanFileExact},
		{"names", func(p string, reset func(), fn func(*msprobe.Entry) error) (msprobe.Header, error) {
			h, _, err := msprobe.ScanFileRowNames(p, reset, fn)
			return h, err
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.scan(p, func() {}, func(*msprobe.Entry) error { return nil }); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// benchFile writes the generated 64 MB dump (benchDump) into a file.
func benchFile(b *testing.B) (path string, data []byte) {
	data = benchDump(b)
	path = filepath.Join(b.TempDir(), "dump.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		b.Fatal(err)
	}
	return path, data
}

// BenchmarkEntryReader measures EntryReader over every entry of the
// generated 64 MB dump, at the offsets a skim gives: Read, which builds
// the rows, and Rows, which counts them (a compare's count of the bench
// entries it did not pair).
func BenchmarkEntryReader(b *testing.B) {
	p, data := benchFile(b)
	var offs []int64
	if _, err := msprobe.Skim(p, func(e *msprobe.SkimEntry) error {
		offs = append(offs, e.Offset)
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	r, err := msprobe.NewEntryReader(p)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	end := func(i int) int64 {
		if i+1 < len(offs) {
			return offs[i+1]
		}
		return -1
	}
	b.Run("read", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			for i, off := range offs {
				if err := r.Read(i, off, end(i), 0, func(*msprobe.Entry) error { return nil }); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("rows", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			for i, off := range offs {
				if _, err := r.Rows(i, off, end(i), 0); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
