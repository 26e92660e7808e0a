// Package tensor loads the tensor files of msprobe's tensor-mode dumps
// (torch .pt files and MindSpore .npy files) and computes the six
// real-data metrics of msprobe's compare table (Cosine, EucDist,
// MaxAbsErr, MaxRelativeErr, One Thousandth Err Ratio, Five Thousandths
// Err Ratio) the way msprobe computes and prints them.
//
// The semantics follow msprobe's core/compare/npy_compare.py and
// multiprocessing_compute.py (CompareRealData) as described in
// shared/docs/msprobe-compare.md §4.4–4.6: validation order, error
// markers, the dtype msprobe computes the relative error in, numpy's
// rounding of each step and Python's float formatting.
//
// Files are streamed: Open (or Folder.Open, which keeps data names and
// symbolic links inside the dump's tensor folder and refuses FIFOs and
// devices at once) reads a file's header and checks every size it
// declares against the stored bytes; the comparison then reads both
// tensors chunk by chunk, so a comparison holds a few MiB whatever the
// tensors' sizes (see the budgets in stream.go and pt.go). Broadcast and
// strided views are read through their strides, never materialised. The
// dot products keep the order in which OpenBLAS sums them, chunk
// boundaries included (dot.go).
package tensor

import "fmt"

// Tensor is a tensor held in memory (tests, small inputs; the comparison
// of files streams them, see File), as msprobe holds it after reading:
// torch bfloat16 and float8 tensors are already widened to float32 (what
// msprobe's reader does before handing them to numpy); every other dtype
// keeps its own name.
type Tensor struct {
	// Dtype is the numpy dtype name msprobe computes with: "float16",
	// "float32", "float64", "int8", "int16", "int32", "int64", "uint8",
	// "uint16", "uint32", "uint64" or "bool".
	Dtype string
	// Source is the dtype as stored in the file ("torch.bfloat16",
	// "torch.float32", "<f4", "|b1"...), for messages.
	Source string
	// Shape is the shape, row-major; empty for a 0-d tensor.
	Shape []int
	// Data holds every element in row-major order, exactly (each supported
	// dtype converts to float64 without loss, except 64-bit integers
	// beyond 2^53, which round as numpy's astype(float) does).
	Data []float64
}

// Size is the number of elements (1 for a 0-d tensor).
func (t *Tensor) Size() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// Squeeze returns t with every size-1 dimension removed, as numpy's
// np.squeeze (shape [1] becomes 0-d, [1, 3] becomes [3]). The data is
// shared.
func (t *Tensor) Squeeze() *Tensor {
	out := *t
	out.Shape = make([]int, 0, len(t.Shape))
	for _, d := range t.Shape {
		if d != 1 {
			out.Shape = append(out.Shape, d)
		}
	}
	return &out
}

// String describes the tensor briefly, for messages.
func (t *Tensor) String() string {
	return fmt.Sprintf("%s%v", t.Dtype, t.Shape)
}

// isFloat tells whether dtype is one numpy treats as floating point.
func isFloat(dtype string) bool {
	switch dtype {
	case "float16", "float32", "float64":
		return true
	}
	return false
}

// knownDtype reports whether dtype is one this package computes with.
func knownDtype(dtype string) bool {
	switch dtype {
	case "float16", "float32", "float64", "int8", "int16", "int32", "int64",
		"uint8", "uint16", "uint32", "uint64", "bool":
		return true
	}
	return false
}
