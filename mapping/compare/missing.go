package compare

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"

	"github.com/layermap/layermap/printparse/msprobe"
)

// missingTensors counts the tensor-mode rows whose .npy/.pt file is not in
// dump_tensor_data: msprobe fills them with "unsupported" and says nothing
// in the table, so a dump copied without its tensor folder looks compared.
type missingTensors struct {
	TensorComparer
	npu, bench msprobe.Paths
	rows       atomic.Int64
	sides      [2]missingSide // NPU, bench
}

// missingSide counts one side's rows without their tensor file.
type missingSide struct {
	missing atomic.Int64
	mu      sync.Mutex
	example placedErr // the file of the row first in the table
}

// Metrics implements TensorComparer.
func (m *missingTensors) Metrics(at int64, npu, bench, group *msprobe.Item) ([6]Metric, error) {
	m.rows.Add(1)
	if p := m.absent(m.npu, npu); p != "" {
		m.sides[0].note(at, p)
	} else if bench != nil {
		if p := m.absent(m.bench, bench); p != "" {
			m.sides[1].note(at, p)
		}
	}
	return m.TensorComparer.Metrics(at, npu, bench, group)
}

// CombinedMetrics implements CombinedComparer when the wrapped comparer
// does (a combined row counts as one).
func (m *missingTensors) CombinedMetrics(at int64, npu, bench []TensorPart, how Combination, npuName, benchName string) ([6]Metric, error) {
	m.rows.Add(1)
	cc, ok := m.TensorComparer.(CombinedComparer)
	if !ok {
		return naMetrics(), nil
	}
	return cc.CombinedMetrics(at, npu, bench, how, npuName, benchName)
}

// absent returns the path of it's tensor file when it has one that does
// not exist ("" otherwise, also for data names msprobe refuses).
func (m *missingTensors) absent(p msprobe.Paths, it *msprobe.Item) string {
	if it.DataName == "" || it.DataName == "-1" {
		return ""
	}
	path, err := p.TensorPath(it.DataName)
	if err != nil {
		return ""
	}
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return path
	}
	return ""
}

// note counts the row at at (TensorComparer), its file path missing.
func (s *missingSide) note(at int64, path string) {
	s.missing.Add(1)
	s.mu.Lock()
	s.example.keepFirst(placedErr{at, errors.New(path)})
	s.mu.Unlock()
}

// Reset forgets the counts (Compare writes the table again), and the
// wrapped comparer's.
func (m *missingTensors) Reset() {
	m.rows.Store(0)
	for i := range m.sides {
		s := &m.sides[i]
		s.missing.Store(0)
		s.mu.Lock()
		s.example = placedErr{}
		s.mu.Unlock()
	}
	if r, ok := m.TensorComparer.(interface{ Reset() }); ok {
		r.Reset()
	}
}

// Err forwards the wrapped comparer's refusal of a data_name that leaves
// its folder (Run checks for it: without this method the wrapper
// hid it and such a dump was compared).
func (m *missingTensors) Err() error {
	if e, ok := m.TensorComparer.(interface{ Err() error }); ok {
		return e.Err()
	}
	return nil
}

// warn prints one line when rows lacked their tensor files, and one per
// unreadable file (the first few) with a count.
func (m *missingTensors) warn(w io.Writer) {
	if u, ok := m.TensorComparer.(interface{ Unreadable() (int, []error) }); ok {
		if n, errs := u.Unreadable(); n > 0 {
			for _, err := range errs {
				fmt.Fprintf(w, "layermap: warning: %v\n", err)
			}
			fmt.Fprintf(w, "layermap: warning: %s: %d tensor-mode rows have a tensor file that cannot be read; they are marked error\n", m.npu.Dir, n)
		}
	}
	for i, p := range []msprobe.Paths{m.npu, m.bench} {
		side := &m.sides[i]
		n := side.missing.Load()
		if n == 0 {
			continue
		}
		fmt.Fprintf(w, "layermap: warning: %s: %d of %d tensor-mode rows have no tensor file (e.g. %s): their metrics are \"unsupported\" and cannot show a precision problem; was the dump copied without dump_tensor_data?\n",
			p.Dir, n, m.rows.Load(), side.example.err)
	}
}
