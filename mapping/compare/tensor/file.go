package tensor

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/layermap/layermap/printparse/msprobe"
	"github.com/layermap/layermap/printparse/source"
)

// File is an opened tensor file: its header is read and the sizes it
// declares are checked against the stored bytes; its elements are read
// only when compared, chunk by chunk, so memory does not grow with the
// tensor.
type File struct {
	// Path is the file as opened (after resolving symbolic links).
	Path string
	// Dtype is the numpy dtype msprobe computes with: "float16",
	// "float32", "float64", "int8", "int16", "int32", "int64", "uint8",
	// "uint16", "uint32", "uint64" or "bool" (torch bfloat16 and float8
	// read as float32, as msprobe's reader widens them).
	Dtype string
	// Source is the dtype as stored ("torch.bfloat16", "<f4", "|b1"...).
	Source string
	// Shape is the shape, row-major; empty for a 0-d tensor.
	Shape []int

	st     storage
	v      view
	closer io.Closer
}

// Size is the number of elements (1 for a 0-d tensor).
func (f *File) Size() int { return f.v.numel }

// Close releases the file.
func (f *File) Close() error {
	if f.closer == nil {
		return nil
	}
	return f.closer.Close()
}

func (f *File) stream() (stream, error) {
	s, err := f.st.open(f.v)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Path, err)
	}
	return &namedStream{s, f.Path}, nil
}

// namedStream prefixes a stream's errors with the file's path.
type namedStream struct {
	stream
	path string
}

func (n *namedStream) read(dst []float64) error {
	if err := n.stream.read(dst); err != nil {
		return fmt.Errorf("%s: %w", n.path, err)
	}
	return nil
}

// ReadAll reads every element into memory, refusing a tensor of more
// than maxElems elements; the comparison itself never needs this.
func (f *File) ReadAll(maxElems int) (*Tensor, error) {
	if f.Size() > maxElems {
		return nil, fmt.Errorf("%s: %d elements, more than the %d asked for", f.Path, f.Size(), maxElems)
	}
	t := &Tensor{Dtype: f.Dtype, Source: f.Source, Shape: append([]int{}, f.Shape...), Data: make([]float64, f.Size())}
	if len(t.Data) == 0 {
		return t, nil
	}
	s, err := f.stream()
	if err != nil {
		return nil, err
	}
	defer s.close()
	if err := s.read(t.Data); err != nil {
		return nil, err
	}
	return t, nil
}

// Open opens one tensor file for streaming: a torch.save file when path
// ends in ".pt" (the zip format of torch >= 1.6), a NumPy .npy file when
// it ends in ".npy". Like msprobe's readers it refuses a file whose
// suffix is neither, a .pt file that does not hold a single tensor, and
// dtypes numpy cannot hold (complex, quantized, strings). Anything but a
// regular file (a FIFO, a device, a folder) is refused at once.
func Open(path string) (*File, error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil, err
	}
	t, err := openAs(real, filepath.Ext(path))
	if err != nil && real != path {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if t != nil {
		t.Path = path
	}
	return t, err
}

// openAs opens the regular file path as a tensor file of suffix ext.
func openAs(path, ext string) (*File, error) {
	var parse func(io.ReaderAt, int64) (*File, error)
	switch strings.ToLower(ext) {
	case ".pt":
		parse = parsePT
	case ".npy":
		parse = parseNPY
	default:
		return nil, fmt.Errorf("%s: expected a .pt or .npy tensor file", path)
	}
	fh, size, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	t, err := parse(fh, size)
	if err != nil {
		fh.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	t.Path, t.closer = path, fh
	return t, nil
}

// Load reads a whole tensor file into memory (small tensors, tests); the
// comparison streams with Open instead.
func Load(path string, maxElems int) (*Tensor, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.ReadAll(maxElems)
}

// openRegular opens path for reading when it is a regular file
// (source.Open: a FIFO, device or folder is refused at once, without
// blocking).
func openRegular(path string) (*os.File, int64, error) {
	fh, err := source.Open(path, 0)
	if err != nil {
		return nil, 0, err
	}
	st, err := fh.Stat()
	if err != nil {
		fh.Close()
		return nil, 0, err
	}
	return fh, st.Size(), nil
}

// Folder is one side's dump_tensor_data folder, where data names are
// opened: a name must stay inside it, also through symbolic links.
type Folder struct {
	paths msprobe.Paths
	real  string // the folder's resolved path
	err   error  // why it cannot be resolved
}

// NewFolder resolves p's tensor folder once for every file opened in it.
func NewFolder(p msprobe.Paths) *Folder {
	d := &Folder{paths: p}
	if p.TensorDir == "" {
		d.err = fmt.Errorf("no tensor folder for %s: %w", p.Dir, fs.ErrNotExist)
		return d
	}
	d.real, d.err = filepath.EvalSymlinks(p.TensorDir)
	return d
}

// ErrOutside is wrapped by Folder.Open's error for a file whose real path
// (a symbolic link resolved) lies outside the tensor folder.
var ErrOutside = errors.New("resolves outside the dump's tensor folder")

// Open opens the tensor file a data_name names. A data_name that would
// leave the folder is refused with an error wrapping
// msprobe.ErrUnsafeDataName; a symbolic link resolving outside it with
// one wrapping ErrOutside; a file that does not exist with one wrapping
// fs.ErrNotExist (what msprobe itself tolerates).
func (d *Folder) Open(dataName string) (*File, error) {
	path, err := d.paths.TensorPath(dataName)
	if err != nil {
		return nil, err
	}
	if d.err != nil {
		return nil, fmt.Errorf("%s: %w", path, d.err)
	}
	st, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	real := filepath.Join(d.real, dataName)
	if st.Mode()&fs.ModeSymlink != 0 {
		target, err := filepath.EvalSymlinks(path)
		if err != nil {
			// A dangling or looping link is a broken file, not a missing one.
			return nil, fmt.Errorf("%s: symbolic link does not resolve: %v", path, errors.Unwrap(err))
		}
		rel, err := filepath.Rel(d.real, target)
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
			return nil, fmt.Errorf("%s: symbolic link to %s: %w", path, target, ErrOutside)
		}
		real = target
	}
	t, err := openAs(real, filepath.Ext(dataName))
	if err != nil {
		if st.Mode()&fs.ModeSymlink != 0 {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return nil, err
	}
	t.Path = path
	return t, nil
}
