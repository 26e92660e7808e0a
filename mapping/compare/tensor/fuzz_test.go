package tensor

import (
	"os"
	"path/filepath"
	"testing"
)

func addFixtures(f *testing.F, glob string) {
	files, err := filepath.Glob(glob)
	if err != nil || len(files) == 0 {
		f.Fatalf("no seed files for %s: %v", glob, err)
	}
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

// FuzzReadNPY: arbitrary bytes never panic the .npy reader, and whatever
// it accepts is a consistent tensor.
func FuzzReadNPY(f *testing.F) {
	addFixtures(f, "testdata/real/*.npy")
	f.Add(npyBytes(f, "bool", []int{2, 2}, []float64{1, 0, 1, 1}))
	f.Fuzz(func(t *testing.T, b []byte) {
		tn, err := ReadNPY(b)
		if err != nil {
			return
		}
		if tn.Size() != len(tn.Data) || !knownDtype(tn.Dtype) {
			t.Fatalf("inconsistent tensor %v with %d values", tn, len(tn.Data))
		}
	})
}

// FuzzReadPT: arbitrary bytes never panic the torch.save reader, and
// whatever it accepts is a consistent tensor.
func FuzzReadPT(f *testing.F) {
	addFixtures(f, "testdata/real/*.pt")
	f.Add(ptBytes(f, "torch.float16", []int{2, 1}, []float64{1, -2}))
	f.Add(ptBytes(f, "torch.float32", []int{0, 3}, nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		tn, err := ReadPT(b)
		if err != nil {
			return
		}
		if tn.Size() != len(tn.Data) || !knownDtype(tn.Dtype) {
			t.Fatalf("inconsistent tensor %v with %d values", tn, len(tn.Data))
		}
	})
}
