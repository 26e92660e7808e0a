package tensor

import (
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
)

// Budgets of the streamed reading. A comparison holds, per side, one
// chunk of decoded elements, one read buffer and, for a view that is not
// contiguous in its storage, a block cache; none depends on the size a
// file declares.
const (
	// chunkLen is the number of elements compared per step (a multiple of
	// 16, the width of the dot-product kernel's blocks): 256 KiB of float64
	// per side.
	chunkLen = 1 << 15
	// readBuf is the read buffer of a contiguous stream.
	readBuf = 128 << 10
	// cacheBlock and cacheBlocks size the block cache of a strided view:
	// 4 MiB per side at most, allocated as blocks are touched.
	cacheBlock  = 4 << 10
	cacheBlocks = 1024
	// tileLen is the elements of a tile of a transposed-like view (whose
	// smallest stride is not the innermost dimension's): 4 MiB of float64
	// per side, read as runs along the smallest-stride dimension.
	tileLen = 1 << 19
	// maxVirtual bounds the elements of a view that claims more elements
	// than its storage holds (a broadcast, stride-0 view): such a view
	// costs time but no memory, and a file of a few hundred bytes must not
	// buy hours. msprobe dumps tensor.clone().contiguous(), which is never
	// broadcast; 2^31 is the largest tensor the comparison must handle.
	maxVirtual = 1 << 31
	// maxDims bounds the rank of a tensor (torch and numpy allow 64).
	maxDims = 64
)

// stream yields a tensor's elements in row-major order.
type stream interface {
	// read fills dst with the next len(dst) elements; the read that
	// delivers the last element also runs the end-of-data checks (CRC,
	// trailing compressed data).
	read(dst []float64) error
	close() error
}

// vdim is one dimension of a view.
type vdim struct{ size, stride int }

// view is the elements a tensor takes from its storage: from element
// offset on, dims outermost first. Dimensions of size 1 are dropped and
// neighbours that step through storage as one are merged, so every
// dimension left has size >= 2.
type view struct {
	offset int
	dims   []vdim
	numel  int
}

// makeView checks a (offset, size, stride) view against a storage of
// storageNumel elements, overflow-safely, before anything is read.
func makeView(offset int, size, stride []int, storageNumel int) (view, error) {
	if len(size) != len(stride) {
		return view{}, fmt.Errorf("size %v and stride %v differ in rank", size, stride)
	}
	if len(size) > maxDims {
		return view{}, fmt.Errorf("expected at most %d dimensions, found %d", maxDims, len(size))
	}
	if offset < 0 {
		return view{}, fmt.Errorf("negative storage offset %d", offset)
	}
	n := 1
	for k, d := range size {
		if d < 0 || stride[k] < 0 {
			return view{}, fmt.Errorf("negative size or stride in size %v stride %v", size, stride)
		}
		if d > 0 && n > (1<<62)/d {
			return view{}, fmt.Errorf("size %v overflows", size)
		}
		n *= d
	}
	v := view{offset: offset, numel: n}
	if n == 0 {
		return v, nil
	}
	last := offset // the highest element the view reaches
	for k, d := range size {
		if d > 1 && stride[k] > 0 {
			if stride[k] > storageNumel || d-1 > storageNumel/stride[k] {
				return view{}, fmt.Errorf("size %v stride %v reach past the storage of %d elements", size, stride, storageNumel)
			}
			last += (d - 1) * stride[k]
			if last >= storageNumel {
				break
			}
		}
	}
	if last >= storageNumel {
		return view{}, fmt.Errorf("size %v stride %v offset %d reach past the storage of %d elements", size, stride, offset, storageNumel)
	}
	if n > storageNumel && n > maxVirtual {
		return view{}, fmt.Errorf("view of %d elements over a storage of %d: a broadcast view is compared up to %d elements", n, storageNumel, maxVirtual)
	}
	for k, d := range size {
		if d == 1 {
			continue
		}
		if m := len(v.dims); m > 0 && v.dims[m-1].stride == stride[k]*d {
			v.dims[m-1] = vdim{v.dims[m-1].size * d, stride[k]}
			continue
		}
		v.dims = append(v.dims, vdim{d, stride[k]})
	}
	return v, nil
}

// contiguous reports whether the view is one run of storage elements.
func (v view) contiguous() bool {
	return len(v.dims) == 0 || len(v.dims) == 1 && v.dims[0].stride == 1
}

// storage is where a tensor's elements are stored.
type storage struct {
	elem  format
	numel int
	// ra reads the stored element bytes from base on; nil when they can
	// only be read in sequence (a compressed zip record).
	ra   io.ReaderAt
	base int64
	// seq opens the element bytes for sequential reading from element 0
	// (compressed records); the reader checks the record's CRC and size
	// when drained.
	seq func() (io.ReadCloser, error)
	// crc, when set, is the CRC-32 of the stored record the elements fill
	// exactly, checked by a contiguous stream of the whole record.
	crc *uint32
}

func (s *storage) bytes() int64 { return int64(s.numel) * int64(s.elem.size()) }

// open streams v's elements from s.
func (s *storage) open(v view) (stream, error) {
	es := int64(s.elem.size())
	if v.contiguous() {
		start, n := int64(v.offset)*es, int64(v.numel)*es
		r := &seqReader{elem: s.elem, left: v.numel, raw: make([]byte, min(readBuf, max(n, es)))}
		if s.ra != nil {
			r.r = io.NewSectionReader(s.ra, s.base+start, n)
			if s.crc != nil && start == 0 && n == s.bytes() {
				r.crc, r.want = crc32.NewIEEE(), *s.crc
			}
			return r, nil
		}
		rc, err := s.seq()
		if err != nil {
			return nil, err
		}
		if _, err := io.CopyN(io.Discard, rc, start); err != nil {
			rc.Close()
			return nil, fmt.Errorf("reading the storage: %w", noEOF(err))
		}
		r.r, r.rc = rc, rc
		return r, nil
	}
	if s.ra == nil {
		return nil, errors.New("a strided view needs random access to its storage")
	}
	return newStridedReader(s, v), nil
}

// noEOF turns the EOF of a short read into ErrUnexpectedEOF.
func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// seqReader streams a contiguous run of elements.
type seqReader struct {
	r    io.Reader
	rc   io.ReadCloser // a compressed record, drained at the end
	elem format
	left int
	raw  []byte
	crc  hash.Hash32
	want uint32
}

func (s *seqReader) read(dst []float64) error {
	if len(dst) > s.left {
		return fmt.Errorf("read past the end of the tensor")
	}
	es := s.elem.size()
	for len(dst) > 0 {
		k := min(len(dst), len(s.raw)/es)
		b := s.raw[:k*es]
		if _, err := io.ReadFull(s.r, b); err != nil {
			return fmt.Errorf("reading the tensor data: %w", noEOF(err))
		}
		if s.crc != nil {
			s.crc.Write(b)
		}
		s.elem.decode(dst[:k], b)
		dst = dst[k:]
		s.left -= k
	}
	if s.left == 0 {
		return s.finish()
	}
	return nil
}

// finish runs the end-of-data checks once the last element is read.
func (s *seqReader) finish() error {
	if s.crc != nil {
		got := s.crc.Sum32()
		s.crc = nil
		if got != s.want {
			return fmt.Errorf("storage record fails its CRC-32 check (%08x, expected %08x)", got, s.want)
		}
	}
	if s.rc != nil {
		// Drain the record so archive/zip checks its size and CRC; what is
		// left is bounded by the record's declared size.
		if _, err := io.Copy(io.Discard, s.rc); err != nil {
			return fmt.Errorf("reading the storage: %w", err)
		}
	}
	return nil
}

func (s *seqReader) close() error {
	if s.rc != nil {
		return s.rc.Close()
	}
	return nil
}

// stridedReader streams a view that is not one run of its storage,
// without materialising it. When the innermost dimension steps by 0 or 1
// element it reads each row as a run (row mode); when another dimension
// q has the smallest stride (a transpose), it fills tiles in row-major
// order: all indices of the dimensions after q for a range of q, read as
// runs along q (tile mode); otherwise element by element through a block
// cache.
type stridedReader struct {
	st    *storage
	v     view
	es    int
	left  int
	cache blockCache
	raw   []byte
	// row mode: index in each dimension but the innermost, and in it
	idx   []int
	inner int
	// tile mode
	tiled  bool
	q      int       // the tiled dimension
	innerN int       // elements of the dimensions after q
	a      int       // where the next tile starts along q
	tile   []float64 // the current tile
	tpos   int       // its next element
	run    []float64 // one run along q
	sub    []int     // index in the dimensions after q
}

func newStridedReader(s *storage, v view) *stridedReader {
	r := &stridedReader{st: s, v: v, es: s.elem.size(), idx: make([]int, len(v.dims)-1), left: v.numel,
		cache: blockCache{ra: s.ra, base: s.base, size: s.bytes()},
		raw:   make([]byte, readBuf)}
	last := len(v.dims) - 1
	if st := v.dims[last].stride; st == 0 || st == 1 {
		return r
	}
	q := -1
	for k, d := range v.dims {
		if d.stride > 0 && (q < 0 || d.stride < v.dims[q].stride) {
			q = k
		}
	}
	if q < 0 || q == last {
		return r
	}
	innerN := 1
	for _, d := range v.dims[q+1:] {
		innerN *= d.size
	}
	if innerN > tileLen/2 {
		return r
	}
	r.tiled, r.q, r.innerN, r.sub = true, q, innerN, make([]int, last-q)
	return r
}

func (r *stridedReader) read(dst []float64) error {
	if len(dst) > r.left {
		return fmt.Errorf("read past the end of the tensor")
	}
	r.left -= len(dst)
	if r.tiled {
		for len(dst) > 0 {
			if r.tpos == len(r.tile) {
				if err := r.fill(); err != nil {
					return err
				}
			}
			n := copy(dst, r.tile[r.tpos:])
			r.tpos += n
			dst = dst[n:]
		}
		return nil
	}
	in := r.v.dims[len(r.v.dims)-1]
	for len(dst) > 0 {
		row := r.v.offset
		for k, j := range r.idx {
			row += j * r.v.dims[k].stride
		}
		run := min(in.size-r.inner, len(dst))
		var err error
		if in.stride == 0 { // broadcast: one element repeated
			if err = r.readRun(dst[:1], row, 1); err == nil {
				for i := 1; i < run; i++ {
					dst[i] = dst[0]
				}
			}
		} else {
			err = r.readRun(dst[:run], row+r.inner*in.stride, in.stride)
		}
		if err != nil {
			return err
		}
		dst = dst[run:]
		r.inner += run
		if r.inner == in.size {
			r.inner = 0
			odometer(r.idx, r.v.dims)
		}
	}
	return nil
}

// odometer advances idx, a row-major index into dims, by one.
func odometer(idx []int, dims []vdim) {
	for k := len(idx) - 1; k >= 0; k-- {
		idx[k]++
		if idx[k] < dims[k].size {
			return
		}
		idx[k] = 0
	}
}

// fill reads the next tile: for the current indices of the dimensions
// before q, the range [a, a+h) of q and every index after q, in
// row-major order.
func (r *stridedReader) fill() error {
	dq := r.v.dims[r.q]
	h := min(dq.size-r.a, tileLen/r.innerN)
	base := r.v.offset + r.a*dq.stride
	for k, j := range r.idx[:r.q] {
		base += j * r.v.dims[k].stride
	}
	if cap(r.tile) < tileLen {
		r.tile = make([]float64, tileLen)
		r.run = make([]float64, tileLen/2)
	}
	tile, run := r.tile[:h*r.innerN], r.run[:h]
	after := r.v.dims[r.q+1:]
	clear(r.sub)
	for p := 0; p < r.innerN; p++ {
		off := base
		for m, j := range r.sub {
			off += j * after[m].stride
		}
		if err := r.readRun(run, off, dq.stride); err != nil {
			return err
		}
		for i, x := range run {
			tile[i*r.innerN+p] = x
		}
		odometer(r.sub, after)
	}
	r.a += h
	if r.a == dq.size {
		r.a = 0
		odometer(r.idx[:r.q], r.v.dims[:r.q])
	}
	r.tile, r.tpos = tile, 0
	return nil
}

// readRun decodes len(dst) elements from storage element off on, stride
// elements apart: a contiguous run in pieces of the read buffer (through
// the block cache when short), anything else element by element through
// the cache.
func (r *stridedReader) readRun(dst []float64, off, stride int) error {
	es := r.es
	if stride != 1 {
		for i := range dst {
			if err := r.cache.read(r.raw[:es], int64(off+i*stride)*int64(es)); err != nil {
				return err
			}
			r.st.elem.decode(dst[i:i+1], r.raw)
		}
		return nil
	}
	for done := 0; done < len(dst); {
		k := min(len(dst)-done, len(r.raw)/es)
		b := r.raw[:k*es]
		at := int64(off+done) * int64(es)
		var err error
		if len(b) <= cacheBlock {
			err = r.cache.read(b, at)
		} else if at+int64(len(b)) > r.cache.size {
			err = fmt.Errorf("read at %d past the storage of %d bytes", at, r.cache.size)
		} else if n, rerr := r.st.ra.ReadAt(b, r.st.base+at); n < len(b) {
			err = fmt.Errorf("reading the storage: %w", noEOF(rerr))
		}
		if err != nil {
			return err
		}
		r.st.elem.decode(dst[done:done+k], b)
		done += k
	}
	return nil
}

func (r *stridedReader) close() error { return nil }

// blockCache reads a byte range of a ReaderAt in aligned blocks, keeping
// at most cacheBlocks of them (replaced in clock order).
type blockCache struct {
	ra         io.ReaderAt
	base, size int64
	blocks     map[int64][]byte
	ring       []int64
	hand       int
}

// read fills dst from offset off of the range.
func (c *blockCache) read(dst []byte, off int64) error {
	if off < 0 || off+int64(len(dst)) > c.size {
		return fmt.Errorf("read at %d past the storage of %d bytes", off, c.size)
	}
	if c.blocks == nil {
		c.blocks = map[int64][]byte{}
	}
	for len(dst) > 0 {
		bi := off / cacheBlock
		b, ok := c.blocks[bi]
		if !ok {
			var err error
			if b, err = c.load(bi); err != nil {
				return err
			}
		}
		n := copy(dst, b[off-bi*cacheBlock:])
		dst = dst[n:]
		off += int64(n)
	}
	return nil
}

func (c *blockCache) load(bi int64) ([]byte, error) {
	var buf []byte
	if len(c.ring) < cacheBlocks {
		buf = make([]byte, cacheBlock)
		c.ring = append(c.ring, bi)
	} else {
		old := c.ring[c.hand]
		buf = c.blocks[old][:cacheBlock]
		delete(c.blocks, old)
		c.ring[c.hand] = bi
		c.hand = (c.hand + 1) % cacheBlocks
	}
	start := bi * cacheBlock
	buf = buf[:min(cacheBlock, c.size-start)]
	if n, err := c.ra.ReadAt(buf, c.base+start); n < len(buf) {
		return nil, fmt.Errorf("reading the storage: %w", noEOF(err))
	}
	c.blocks[bi] = buf
	return buf, nil
}

// sliceStream streams an in-memory tensor.
type sliceStream struct{ data []float64 }

func (s *sliceStream) read(dst []float64) error {
	if len(dst) > len(s.data) {
		return fmt.Errorf("read past the end of the tensor")
	}
	copy(dst, s.data)
	s.data = s.data[len(dst):]
	return nil
}

func (s *sliceStream) close() error { return nil }

// zeroFrom is msprobe's dirty-data cleaning as a stream: every element
// from index from on reads as 0 (the underlying elements are still read,
// so the file's checks still run).
type zeroFrom struct {
	stream
	pos, from int
}

func (z *zeroFrom) read(dst []float64) error {
	if err := z.stream.read(dst); err != nil {
		return err
	}
	for i := max(z.from-z.pos, 0); i < len(dst); i++ {
		dst[i] = 0
	}
	z.pos += len(dst)
	return nil
}
