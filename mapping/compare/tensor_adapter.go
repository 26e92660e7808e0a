package compare

import (
	"errors"
	"strings"
	"sync"

	"github.com/layermap/layermap/mapping/compare/tensor"
	"github.com/layermap/layermap/printparse/msprobe"
)

// TensorFiles computes tensor-mode metrics from the two rank folders'
// dump_tensor_data files with package tensor. A data_name that would
// leave its folder is refused: the row gets msprobe's read-failure cells
// and Err reports the first such name.
type TensorFiles struct {
	NPU, Bench msprobe.Paths
	mu         sync.Mutex
	err        error
}

// NewTensorFiles is the default Options.NewTensor.
func NewTensorFiles(npu, bench msprobe.Paths) (TensorComparer, error) {
	return &TensorFiles{NPU: npu, Bench: bench}, nil
}

// Metrics implements TensorComparer.
func (tf *TensorFiles) Metrics(npu, bench, group *msprobe.Item) [6]Metric {
	bn, bname := "N/A", "N/A"
	if bench != nil {
		bn, bname = dataName(bench), bench.Name
	}
	opts := tensor.Options{NPUName: npu.Name, BenchName: bname, Workers: 1}
	if group != nil && strings.Contains(npu.Name, "output") {
		opts.NPUValidLen = tf.validLen(group)
	}
	m, err := tensor.CompareDataNames(tf.NPU, tf.Bench, dataName(npu), bn, opts)
	if err != nil && errors.Is(err, msprobe.ErrUnsafeDataName) {
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

// validLen is msprobe's dirty_valid_len of an NPU entry from its group
// tensor row: the sum of the integer/bool tensor in dump_tensor_data, or
// nil (msprobe's -1, no cleaning) when there is no such file, it cannot be
// read, or it is not an integer tensor or sums to less than 0.
func (tf *TensorFiles) validLen(group *msprobe.Item) *int {
	name := dataName(group)
	if name == "" || name == "-1" || name == "N/A" {
		return nil
	}
	p, err := tf.NPU.TensorPath(name)
	if err != nil {
		return nil
	}
	t, err := tensor.Load(p)
	if err != nil {
		return nil
	}
	n, err := tensor.ValidLen(t)
	if err != nil {
		return nil
	}
	return &n
}

// Err is the first refused data_name.
func (tf *TensorFiles) Err() error {
	tf.mu.Lock()
	defer tf.mu.Unlock()
	return tf.err
}
