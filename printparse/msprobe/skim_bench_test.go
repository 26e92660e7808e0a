package msprobe_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/layermap/layermap/printparse/msprobe"
)

// BenchmarkSkim measures Skim over the generated 64 MB dump.
func BenchmarkSkim(b *testing.B) {
	data := benchDump(b)
	p := filepath.Join(b.TempDir(), "dump.json")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := msprobe.Skim(p, func(*msprobe.SkimEntry) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSkimSequential is BenchmarkSkim without skimming ahead (one
// goroutine).
func BenchmarkSkimSequential(b *testing.B) {
	data := benchDump(b)
	p := filepath.Join(b.TempDir(), "dump.json")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := msprobe.SkimSequential(p, func(*msprobe.SkimEntry) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
}
