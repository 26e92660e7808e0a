package tensor

import (
	"fmt"
	"slices"
)

// Part is one tensor of a combined operand: a data name in a folder.
type Part struct {
	Folder   *Folder
	DataName string
}

// Combine says how parts make one tensor: concatenated along Axis (of
// the parts' unsqueezed shapes), stacked along a new leading axis, or
// summed elementwise.
type Combine struct {
	Axis       int
	Stack, Sum bool
}

// CompareCombined compares two operands that are each one tensor or
// several combined (an N:1 group: fused projections, grouped experts,
// tensor-parallel shards), streaming every file chunk by chunk as
// CompareDataNames does; the combined operand is never materialised.
// The parts of a concatenation must agree on every dimension but the
// axis, the parts of a sum on the whole shape.
func CompareCombined(npu, bench []Part, npuHow, benchHow Combine, opts Options) (Metrics, error) {
	nn, bn := names(npu), names(bench)
	b, closeB, err := openCombined(bench, benchHow)
	if err != nil {
		return readFailed(nn, bn, err), unsafeName(err)
	}
	defer closeB()
	n, closeN, err := openCombined(npu, npuHow)
	if err != nil {
		return readFailed(nn, bn, err), unsafeName(err)
	}
	defer closeN()
	return compareOperands(n, b, nn, bn, opts), nil
}

func names(ps []Part) string {
	if len(ps) == 1 {
		return ps[0].DataName
	}
	s := "["
	for i, p := range ps {
		if i > 0 {
			s += " ; "
		}
		s += p.DataName
	}
	return s + "]"
}

// openCombined opens the parts and returns them as one operand.
func openCombined(ps []Part, how Combine) (operand, func(), error) {
	var files []*File
	done := func() {
		for _, f := range files {
			f.Close()
		}
	}
	for _, p := range ps {
		f, err := p.Folder.Open(p.DataName)
		if err != nil {
			done()
			return operand{}, nil, err
		}
		files = append(files, f)
	}
	if len(files) == 1 {
		return fileOperand(files[0]), done, nil
	}
	op, err := combinedOperand(files, how)
	if err != nil {
		done()
		return operand{}, nil, err
	}
	return op, done, nil
}

// combinedOperand is files combined by how.
func combinedOperand(files []*File, how Combine) (operand, error) {
	first := files[0]
	dtype := first.Dtype
	for _, f := range files[1:] {
		if f.Dtype != dtype {
			return operand{}, fmt.Errorf("%s: dtype %s, but %s: %s; expected one dtype in the parts", f.Path, f.Dtype, first.Path, dtype)
		}
	}
	if how.Sum {
		for _, f := range files[1:] {
			if !slices.Equal(f.Shape, first.Shape) {
				return operand{}, fmt.Errorf("%s: shape %v, but %s: %v; expected one shape in a sum", f.Path, f.Shape, first.Path, first.Shape)
			}
		}
		return operand{dtype: dtype, shape: squeezed(first.Shape), size: first.Size(),
			open: func() (stream, error) {
				return openAll(files, func(ss []stream) stream { return &sumStream{parts: ss} })
			}}, nil
	}
	axis := how.Axis
	shape := slices.Clone(first.Shape)
	if how.Stack {
		axis, shape = 0, append([]int{0}, first.Shape...)
	}
	if axis < 0 || axis >= len(shape) {
		return operand{}, fmt.Errorf("%s: axis %d out of its %d dimensions", first.Path, axis, len(first.Shape))
	}
	blocks := make([]int, len(files))
	outer := 1
	for _, d := range shape[:axis] {
		outer *= d
	}
	shape[axis] = 0
	size := 0
	for i, f := range files {
		s := f.Shape
		if how.Stack {
			s = append([]int{1}, f.Shape...)
		}
		if len(s) != len(shape) {
			return operand{}, fmt.Errorf("%s: %d dimensions, expected %d", f.Path, len(s), len(shape))
		}
		for d := range s {
			if d != axis && s[d] != shape[d] && !(how.Stack && d == 0) {
				return operand{}, fmt.Errorf("%s: shape %v does not concatenate with %s: %v along axis %d", f.Path, f.Shape, first.Path, first.Shape, axis)
			}
		}
		shape[axis] += s[axis]
		blocks[i] = f.Size() / max(outer, 1)
		size += f.Size()
	}
	if outer == 0 {
		size = 0
	}
	return operand{dtype: dtype, shape: squeezed(shape), size: size,
		open: func() (stream, error) {
			return openAll(files, func(ss []stream) stream { return &concatStream{parts: ss, blocks: blocks} })
		}}, nil
}

// openAll opens every file's stream and wraps them.
func openAll(files []*File, wrap func([]stream) stream) (stream, error) {
	ss := make([]stream, 0, len(files))
	for _, f := range files {
		s, err := f.stream()
		if err != nil {
			for _, o := range ss {
				o.close()
			}
			return nil, err
		}
		ss = append(ss, s)
	}
	return wrap(ss), nil
}

// concatStream reads its parts in turn, blocks[i] elements of part i
// each time: the elements of the parts concatenated along an axis, in
// row-major order (each part's stream is read in its own order).
type concatStream struct {
	parts  []stream
	blocks []int
	cur    int // part being read
	left   int // elements of the current block still to read
}

func (c *concatStream) read(dst []float64) error {
	for len(dst) > 0 {
		if c.left == 0 {
			c.left = c.blocks[c.cur]
		}
		n := min(len(dst), c.left)
		if n > 0 {
			if err := c.parts[c.cur].read(dst[:n]); err != nil {
				return err
			}
		}
		dst, c.left = dst[n:], c.left-n
		if c.left == 0 {
			c.cur = (c.cur + 1) % len(c.parts)
		}
	}
	return nil
}

func (c *concatStream) close() error {
	var first error
	for _, p := range c.parts {
		if err := p.close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// sumStream adds its parts elementwise.
type sumStream struct {
	parts []stream
	buf   []float64
}

func (s *sumStream) read(dst []float64) error {
	if err := s.parts[0].read(dst); err != nil {
		return err
	}
	if cap(s.buf) < len(dst) {
		s.buf = make([]float64, len(dst))
	}
	buf := s.buf[:len(dst)]
	for _, p := range s.parts[1:] {
		if err := p.read(buf); err != nil {
			return err
		}
		for i, v := range buf {
			dst[i] += v
		}
	}
	return nil
}

func (s *sumStream) close() error {
	var first error
	for _, p := range s.parts {
		if err := p.close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}
