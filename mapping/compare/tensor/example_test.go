package tensor_test

import (
	"fmt"

	"github.com/layermap/layermap/mapping/compare/tensor"
)

// A float16 NPU output against its float32 bench: msprobe's six cells as
// the CSV holds them, and what the Result checkers may fold.
func ExampleCompare() {
	npu := &tensor.Tensor{Dtype: "float16", Shape: []int{4}, Data: []float64{1, 2.0009765625, 0, -4}}
	bench := &tensor.Tensor{Dtype: "float32", Shape: []int{4}, Data: []float64{1, 2, 0, -4}}
	m := tensor.Compare(npu, bench, tensor.Options{})
	fmt.Println(m.Cells())
	if f, ok := m.OneThousandth.Float(); ok {
		fmt.Println("1‰ ratio", f, "status", m.Status)
	}
	fmt.Println(m.Message)
	// Output:
	// [1.0 0.0009765625 0.0009765625 0.00048828125 1.0 1.0]
	// 1‰ ratio 1 status ok
	// Dtype of NPU and bench tensor do not match.
}
