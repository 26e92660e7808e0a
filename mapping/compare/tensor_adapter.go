package compare

import (
	"errors"
	"sync"

	"github.com/layermap/layermap/mapping/compare/tensor"
	"github.com/layermap/layermap/mapping/dump"
)

// TensorFiles computes tensor-mode metrics from the two rank folders'
// dump_tensor_data files with package tensor. A data_name that would
// leave its folder is refused: the row gets msprobe's read-failure cells
// and Err reports the first such name.
type TensorFiles struct {
	NPU, Bench dump.Paths
	mu         sync.Mutex
	err        error
}

// NewTensorFiles is the default Options.NewTensor.
func NewTensorFiles(npu, bench dump.Paths) (TensorComparer, error) {
	return &TensorFiles{NPU: npu, Bench: bench}, nil
}

// Metrics implements TensorComparer.
func (tf *TensorFiles) Metrics(npu, bench *dump.Item) [6]Metric {
	bn, bname := "N/A", "N/A"
	if bench != nil {
		bn, bname = dataName(bench), bench.Name
	}
	m, err := tensor.CompareDataNames(tf.NPU, tf.Bench, dataName(npu), bn,
		tensor.Options{NPUName: npu.Name, BenchName: bname, Workers: 1})
	if err != nil && errors.Is(err, dump.ErrUnsafeDataName) {
		tf.mu.Lock()
		if tf.err == nil {
			tf.err = err
		}
		tf.mu.Unlock()
	}
	var out [6]Metric
	for i, v := range m.Values() {
		if f, ok := v.Float(); ok {
			out[i] = Metric{Value: f, IsNum: true, Text: v.String()}
		} else {
			out[i] = Metric{Text: v.String()}
		}
	}
	return out
}

// Err is the first refused data_name.
func (tf *TensorFiles) Err() error {
	tf.mu.Lock()
	defer tf.mu.Unlock()
	return tf.err
}
