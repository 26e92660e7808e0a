package compare

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/layermap/layermap/mapping/compare/tensor/tensortest"
)

// fixTensor is one tensor of a golden tensors.json.
type fixTensor = tensortest.Spec

// writePT writes a tensor as torch.save (zip layout of torch >= 1.6) does.
func writePT(t *testing.T, path string, ft fixTensor) {
	t.Helper()
	vals, err := ft.Floats()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	b, err := tensortest.PTBytes(ft.Dtype, ft.Shape, vals)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// tensorFixture rebuilds a golden tensor-mode dump folder (dump.json plus
// dump_tensor_data from tensors.json) under dir.
func tensorFixture(t *testing.T, src, dir string) {
	t.Helper()
	copyFile(t, filepath.Join(src, "dump.json"), dir)
	m, err := tensortest.ReadSpecs(filepath.Join(src, "tensors.json"))
	if err != nil {
		t.Fatal(err)
	}
	td := filepath.Join(dir, "dump_tensor_data")
	if err := os.MkdirAll(td, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, ft := range m {
		writePT(t, filepath.Join(td, name), ft)
	}
}
