package tensor

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/layermap/layermap/mapping/compare/tensor/tensortest"
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

// fuzzElems bounds the elements a fuzz input is streamed for: a view may
// legitimately claim up to maxVirtual elements of a tiny storage.
const fuzzElems = 1 << 16

// checkFile is what every fuzz input must satisfy once accepted: a
// consistent header, and a stream of its first elements that either
// succeeds or fails with an error (never a panic, never unbounded memory).
func checkFile(t *testing.T, tf *File) {
	n := 1
	for _, d := range tf.Shape {
		n *= d
	}
	if n != tf.Size() || !knownDtype(tf.Dtype) {
		t.Fatalf("inconsistent tensor %s%v with %d elements", tf.Dtype, tf.Shape, tf.Size())
	}
	if tf.Size() == 0 {
		return
	}
	s, err := tf.stream()
	if err != nil {
		return
	}
	defer s.close()
	buf := make([]float64, min(tf.Size(), fuzzElems))
	s.read(buf)
}

// FuzzReadNPY: arbitrary bytes never panic the .npy reader, and whatever
// it accepts streams consistently.
func FuzzReadNPY(f *testing.F) {
	addFixtures(f, "testdata/real/*.npy")
	f.Add(npyBytes(f, "bool", []int{2, 2}, []float64{1, 0, 1, 1}))
	f.Add(tensortest.NPYBytes("<f2", true, []int{2, 3}, make([]byte, 12)))
	f.Add(tensortest.NPYBytes(">i8", false, []int{3}, make([]byte, 24)))
	f.Fuzz(func(t *testing.T, b []byte) {
		tf, err := parseNPY(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			return
		}
		tf.Path = "fuzz.npy"
		checkFile(t, tf)
	})
}

// FuzzReadPT: arbitrary bytes never panic the torch.save reader, and
// whatever it accepts streams consistently.
func FuzzReadPT(f *testing.F) {
	addFixtures(f, "testdata/real/*.pt")
	f.Add(ptBytes(f, "torch.float16", []int{2, 1}, []float64{1, -2}))
	f.Add(ptBytes(f, "torch.float32", []int{0, 3}, nil))
	for _, p := range []tensortest.PT{
		{Class: "FloatStorage", Numel: 6, Data: make([]byte, 24), Size: []int{3, 2}, Stride: []int{1, 3}},
		{Class: "HalfStorage", Numel: 1, Data: make([]byte, 2), Size: []int{1 << 10, 4}, Stride: []int{0, 0}},
		{Class: "DoubleStorage", Numel: 4, Data: make([]byte, 32), Size: []int{4}, Deflate: true, Parameter: true},
	} {
		b, err := p.Bytes()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		tf, err := parsePT(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			return
		}
		tf.Path = "fuzz.pt"
		checkFile(t, tf)
	})
}

// FuzzReadPTPickle fuzzes data.pkl inside an otherwise valid archive
// (whose CRCs then hold, so mutations reach the unpickler and the view
// checks rather than the zip layer).
func FuzzReadPTPickle(f *testing.F) {
	base := tensortest.PT{Class: "FloatStorage", Numel: 16, Data: make([]byte, 64)}
	for _, p := range []tensortest.PT{
		{Size: []int{4, 4}},
		{Size: []int{2, 3}, Stride: []int{1, 2}, Offset: 3},
		{Size: []int{1 << 20, 8}, Stride: []int{0, 1}, Parameter: true},
	} {
		p.Class, p.Numel, p.Data = base.Class, base.Numel, base.Data
		pkl, err := p.EncodePickle()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(pkl)
	}
	f.Fuzz(func(t *testing.T, pkl []byte) {
		p := base
		p.Pickle = pkl
		b, err := p.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		tf, err := parsePT(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			return
		}
		tf.Path = "fuzz.pt"
		checkFile(t, tf)
	})
}
