package compare

import (
	"errors"
	"io/fs"
	"slices"
	"strings"
	"sync"

	"github.com/layermap/layermap/mapping/compare/tensor"
	"github.com/layermap/layermap/printparse/msprobe"
)

// TensorFiles computes tensor-mode metrics from the two rank folders'
// dump_tensor_data files with package tensor, streaming them. A data_name
// that would leave its folder is refused: the row gets msprobe's
// read-failure cells and Err reports the first such name. A file that
// exists but cannot be read (corrupt, truncated, not a tensor, a link
// out of the dump, a FIFO) makes its row an error row, and Unreadable
// lists it; a missing file gives msprobe's "unsupported" row, as msprobe
// does.
type TensorFiles struct {
	NPU, Bench *tensor.Folder
	// npuPaths and benchPaths place a refused data_name at its line
	npuPaths, benchPaths msprobe.Paths
	// The comparisons run side by side: what is reported is the first
	// rows' in the table (by their at), whichever finished first.
	mu         sync.Mutex
	err        placedErr   // the refused data_name
	unreadable []placedErr // the first maxUnreadable unreadable files
	nUnread    int
}

// placedErr is an error of the row at at in the table (TensorComparer).
type placedErr struct {
	at  int64
	err error
}

// before reports whether e's row comes before o's (ties by the text, so
// that the choice never depends on which was found first).
func (e placedErr) before(o placedErr) bool {
	return e.at < o.at || e.at == o.at && e.err.Error() < o.err.Error()
}

// keepFirst sets *e to o when *e holds none or o's row comes first.
func (e *placedErr) keepFirst(o placedErr) {
	if e.err == nil || o.before(*e) {
		*e = o
	}
}

// maxUnreadable is how many unreadable files TensorFiles keeps to name.
const maxUnreadable = 10

// NewTensorFiles builds the tensor-mode metric calculator of a rank pair.
func NewTensorFiles(npu, bench msprobe.Paths) (TensorComparer, error) {
	return &TensorFiles{NPU: tensor.NewFolder(npu), Bench: tensor.NewFolder(bench), npuPaths: npu, benchPaths: bench}, nil
}

// rowError is a row whose tensor file cannot be read: its text is
// msprobe's message for the row, its cause names the file.
type rowError struct {
	msg   string
	cause error
}

func (e *rowError) Error() string { return e.msg }
func (e *rowError) Unwrap() error { return e.cause }

// Metrics implements TensorComparer.
func (tf *TensorFiles) Metrics(at int64, npu, bench, group *msprobe.Item) ([6]Metric, error) {
	bn, bname := "N/A", "N/A"
	if bench != nil {
		bn, bname = dataName(bench), bench.Name
	}
	opts := tensor.Options{NPUName: npu.Name, BenchName: bname}
	if group != nil && strings.Contains(npu.Name, "output") {
		opts.NPUValidLen = tf.validLen(group)
	}
	// every row's data_name, matched or not, read or not: a name leaving
	// dump_tensor_data is refused wherever it stands
	if err := tf.checkDataName(at, tf.npuPaths, npu); err != nil {
		return tf.record(at, tensor.Metrics{}, err)
	}
	if bench != nil {
		if err := tf.checkDataName(at, tf.benchPaths, bench); err != nil {
			return tf.record(at, tensor.Metrics{}, err)
		}
	}
	m, err := tensor.CompareDataNames(tf.NPU, tf.Bench, dataName(npu), bn, opts)
	return tf.record(at, m, err)
}

// errRefusedLater stands for a refused data_name of a row after the
// one kept (TensorFiles.err): never reported, it is not placed.
var errRefusedLater = errors.New("data_name escapes dump_tensor_data (a row before it is reported)")

// checkDataName is p.CheckDataName of it, of the row at at. A refusal
// is placed in its dump file, which may read the file up to it, only
// when its row can come before the one kept: a dump refusing every row
// is read once, not once a row.
func (tf *TensorFiles) checkDataName(at int64, p msprobe.Paths, it *msprobe.Item) error {
	if !p.RefusesDataName(it) {
		return nil
	}
	tf.mu.Lock()
	later := tf.err.err != nil && at > tf.err.at
	tf.mu.Unlock()
	if later {
		return errRefusedLater
	}
	return p.CheckDataName(it)
}

// record keeps a comparison's refused name or unreadable file, of the row
// at at, and returns its cells.
func (tf *TensorFiles) record(at int64, m tensor.Metrics, err error) ([6]Metric, error) {
	var rowErr error
	switch {
	case err != nil:
		tf.mu.Lock()
		tf.err.keepFirst(placedErr{at, err})
		tf.mu.Unlock()
	case m.Status == tensor.StatusReadNone && !errors.Is(m.Err, fs.ErrNotExist):
		tf.mu.Lock()
		tf.nUnread++
		tf.unreadable = firstRows(tf.unreadable, placedErr{at, m.Err}, maxUnreadable)
		tf.mu.Unlock()
		rowErr = &rowError{msg: m.Message, cause: m.Err}
	}
	var out [6]Metric
	for i, v := range m.Values() {
		if f, ok := v.Float(); ok {
			out[i] = Metric{Value: f, IsNum: true, Text: v.String()}
		} else {
			out[i] = Metric{Text: v.String()}
		}
	}
	return out, rowErr
}

// CombinedMetrics implements CombinedComparer: the parts' files are
// combined as they stream (tensor.CompareCombined).
func (tf *TensorFiles) CombinedMetrics(at int64, npu, bench []TensorPart, how Combination, npuName, benchName string) ([6]Metric, error) {
	parts := func(ps []TensorPart, own *tensor.Folder) []tensor.Part {
		out := make([]tensor.Part, len(ps))
		for i, p := range ps {
			out[i] = tensor.Part{Folder: own, DataName: dataName(&p.Item)}
			if p.Rank != nil {
				out[i].Folder = tensor.NewFolder(*p.Rank)
			}
		}
		return out
	}
	for _, side := range []struct {
		ps  []TensorPart
		own msprobe.Paths
	}{{npu, tf.npuPaths}, {bench, tf.benchPaths}} {
		for _, p := range side.ps {
			paths := side.own
			if p.Rank != nil {
				paths = *p.Rank
			}
			if err := tf.checkDataName(at, paths, &p.Item); err != nil {
				return tf.record(at, tensor.Metrics{}, err)
			}
		}
	}
	c := tensor.Combine{Axis: how.Axis, Stack: how.Stack, Sum: how.Sum}
	np, bp := parts(npu, tf.NPU), parts(bench, tf.Bench)
	nc, bc := tensor.Combine{}, tensor.Combine{}
	if len(np) > 1 {
		nc = c
	}
	if len(bp) > 1 {
		bc = c
	}
	m, err := tensor.CompareCombined(np, bp, nc, bc, tensor.Options{NPUName: npuName, BenchName: benchName})
	return tf.record(at, m, err)
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
	f, err := tf.NPU.Open(name)
	if err != nil {
		return nil
	}
	defer f.Close()
	n, err := tensor.ValidLen(f)
	if err != nil {
		return nil
	}
	return &n
}

// Reset forgets the unreadable files counted and the name refused
// (Compare writes the table again: the rows come again, those of a
// dump.json repeating keys as Python reads it).
func (tf *TensorFiles) Reset() {
	tf.mu.Lock()
	defer tf.mu.Unlock()
	tf.nUnread, tf.unreadable, tf.err = 0, nil, placedErr{}
}

// Err is the refused data_name of the row first in the table.
func (tf *TensorFiles) Err() error {
	tf.mu.Lock()
	defer tf.mu.Unlock()
	return tf.err.err
}

// Unreadable returns how many rows had a tensor file that exists but
// could not be read, and the causes of the first few in the table (each
// naming its file).
func (tf *TensorFiles) Unreadable() (int, []error) {
	tf.mu.Lock()
	defer tf.mu.Unlock()
	errs := make([]error, len(tf.unreadable))
	for i, e := range tf.unreadable {
		errs[i] = e.err
	}
	return tf.nUnread, errs
}

// firstRows adds e to kept, the first rows' errors in table order, and
// keeps at most n.
func firstRows(kept []placedErr, e placedErr, n int) []placedErr {
	i := len(kept)
	for i > 0 && e.before(kept[i-1]) {
		i--
	}
	if i >= n {
		return kept
	}
	if len(kept) == n {
		kept = kept[:n-1]
	}
	return slices.Insert(kept, i, e)
}
