package tensor

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/layermap/layermap/mapping/compare/tensor/tensortest"
	"github.com/layermap/layermap/printparse/msprobe"
)

// allocated runs f and returns the bytes it allocated (tests using it do
// not run in parallel).
func allocated(f func()) uint64 {
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	f()
	runtime.ReadMemStats(&m1)
	return m1.TotalAlloc - m0.TotalAlloc
}

// rowBudget is what one comparison may allocate, whatever the tensors'
// declared sizes: two chunks, two read buffers, headers (see stream.go).
const rowBudget = 4 << 20

func ptFile(t testing.TB, dir, name string, p tensortest.PT) string {
	t.Helper()
	b, err := p.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	writeFile(t, path, b)
	return path
}

// TestStreamedMemoryBound compares two contiguous 4M-element float32
// files (16 MiB each) and checks that the comparison allocates a small
// constant, not the tensors.
func TestStreamedMemoryBound(t *testing.T) {
	const n = 1 << 22
	nt, bt := pairData(n, 9)
	dir := t.TempDir()
	np := ptFile(t, dir, "n.pt", tensortest.PT{Class: "FloatStorage", Numel: n, Data: f32Bytes(nt.Data), Size: []int{1 << 11, 1 << 11}})
	bp := ptFile(t, dir, "b.pt", tensortest.PT{Class: "FloatStorage", Numel: n, Data: f32Bytes(bt.Data), Size: []int{1 << 11, 1 << 11}})
	want := Compare(nt, bt, Options{}).Cells()
	nt, bt = nil, nil
	var m Metrics
	if got := allocated(func() { m = CompareFiles(np, bp, Options{}) }); got > rowBudget {
		t.Errorf("comparing 2×16 MiB allocated %d bytes, budget %d", got, rowBudget)
	}
	if m.Cells() != want {
		t.Errorf("streamed %q, in memory %q", m.Cells(), want)
	}
}

// TestBroadcastView: a file of a few hundred bytes whose stride-0 view
// claims 2^24 elements is compared without materialising the view; one
// claiming more than 2^31 elements is refused before any work.
func TestBroadcastView(t *testing.T) {
	dir := t.TempDir()
	one := func(name string, v float64, size []int) string {
		return ptFile(t, dir, name, tensortest.PT{Class: "FloatStorage", Numel: 1, Data: f32Bytes([]float64{v}), Size: size, Stride: make([]int, len(size))})
	}
	np, bp := one("n.pt", 1.5, []int{1 << 12, 1 << 12}), one("b.pt", 1.25, []int{1 << 12, 1 << 12})
	if st, _ := os.Stat(np); st.Size() > 1000 {
		t.Fatalf("fixture is %d bytes", st.Size())
	}
	var m Metrics
	if got := allocated(func() { m = CompareFiles(np, bp, Options{}) }); got > rowBudget {
		t.Errorf("comparing two 2^24-element broadcast views allocated %d bytes", got)
	}
	// Every lane sums 2^20 equal squares exactly: ‖n−b‖ = 0.25·2^12.
	want := [6]string{"1.0", "1024.0", "0.25", "0.20000000298", "0.0", "0.0"}
	if m.Cells() != want {
		t.Errorf("got %q (%v), want %q", m.Cells(), m.Err, want)
	}
	huge := one("h.pt", 1, []int{1 << 28, 1 << 4})
	start := time.Now()
	m = CompareFiles(huge, huge, Options{})
	if m.Status != StatusReadNone || !strings.Contains(fmt.Sprint(m.Err), "broadcast") || time.Since(start) > time.Second {
		t.Errorf("2^32-element broadcast: %s %v after %v", m.Status, m.Err, time.Since(start))
	}
}

// TestStridedViews: transposed, offset, row-broadcast and Fortran-order
// layouts give the same cells as the contiguous tensor they describe.
func TestStridedViews(t *testing.T) {
	const rows, cols = 37, 300 // the transposed storage spans blocks
	nt, bt := pairData(rows*cols, 3)
	nt.Shape, bt.Shape = []int{rows, cols}, []int{rows, cols}
	want := Compare(nt, bt, Options{BLASThreads: 2}).Cells()
	dir := t.TempDir()
	contig := ptFile(t, dir, "c.pt", tensortest.PT{Class: "FloatStorage", Numel: rows * cols, Data: f32Bytes(nt.Data), Size: []int{rows, cols}})
	tr := make([]float64, rows*cols+5)
	for i := 0; i < rows; i++ {
		for j := 0; j < cols; j++ {
			tr[5+j*rows+i] = bt.Data[i*cols+j]
		}
	}
	for _, tc := range []struct {
		name string
		p    tensortest.PT
		npy  []byte
	}{
		{name: "transposed with offset", p: tensortest.PT{Class: "FloatStorage", Numel: len(tr), Data: f32Bytes(tr), Offset: 5, Size: []int{rows, cols}, Stride: []int{1, rows}}},
		{name: "transposed deflated", p: tensortest.PT{Class: "FloatStorage", Numel: len(tr), Data: f32Bytes(tr), Offset: 5, Size: []int{rows, cols}, Stride: []int{1, rows}, Deflate: true}},
		{name: "contiguous deflated parameter", p: tensortest.PT{Class: "FloatStorage", Numel: rows * cols, Data: f32Bytes(bt.Data), Size: []int{rows, cols}, Deflate: true, Parameter: true}},
		{name: "fortran npy", npy: tensortest.NPYBytes("<f4", true, []int{rows, cols}, f32Bytes(tr[5:]))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, "b.npy")
			if tc.npy != nil {
				writeFile(t, path, tc.npy)
			} else {
				path = ptFile(t, dir, "b.pt", tc.p)
			}
			m := CompareFiles(contig, path, Options{BLASThreads: 2})
			if m.Cells() != want {
				t.Errorf("got %q (%v), want %q", m.Cells(), m.Err, want)
			}
		})
	}
	// A row broadcast (stride 0 outside, 1 inside) reads each row again.
	row := ptFile(t, dir, "r.pt", tensortest.PT{Class: "DoubleStorage", Numel: 3, Data: f64Bytes(1, 2, 3), Size: []int{4, 3}, Stride: []int{0, 1}})
	full := ptFile(t, dir, "f.pt", tensortest.PT{Class: "DoubleStorage", Numel: 12, Data: f64Bytes(1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3), Size: []int{4, 3}})
	if m := CompareFiles(row, full, Options{}); m.EucDist.String() != "0.0" || m.Status != StatusOK {
		t.Errorf("row broadcast: %q %v", m.Cells(), m.Err)
	}
}

func f64Bytes(vals ...float64) []byte {
	b, _ := tensortest.StorageBytes("torch.float64", vals)
	return b
}

// rezip rewrites a .pt archive record by record: edit may change the
// header (sizes, method) and the raw, possibly compressed, bytes.
func rezip(t *testing.T, b []byte, edit func(h *zip.FileHeader, raw []byte) []byte) []byte {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	zw := zip.NewWriter(&out)
	for _, f := range zr.File {
		rc, err := f.OpenRaw()
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(rc)
		h := f.FileHeader
		raw = edit(&h, raw)
		w, err := zw.CreateRaw(&h)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(raw)
	}
	zw.Close()
	return out.Bytes()
}

// TestDeflatedStorage: a deflated record is read lazily (a 16 MiB
// storage from 16 KiB), its declared size is checked against what
// deflate can expand the stored bytes to, and a record that holds less
// than it claims fails when streamed.
func TestDeflatedStorage(t *testing.T) {
	const n = 1 << 22
	dir := t.TempDir()
	zeros := make([]byte, 4*n)
	big := tensortest.PT{Class: "FloatStorage", Numel: n, Data: zeros, Size: []int{n}, Deflate: true}
	b, err := big.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	zeros = nil
	if len(b) > 1<<20 {
		t.Fatalf("fixture is %d bytes", len(b))
	}
	p := filepath.Join(dir, "z.pt")
	writeFile(t, p, b)
	var m Metrics
	if got := allocated(func() { m = CompareFiles(p, p, Options{}) }); got > rowBudget+1<<20 {
		t.Errorf("a 16 MiB deflated storage allocated %d bytes", got)
	}
	if m.Cells() != [6]string{"1.0", "0.0", "0.0", "0.0", "1.0", "1.0"} {
		t.Errorf("zeros: %q %v", m.Cells(), m.Err)
	}
	tests := []struct {
		name, want string
		edit       func(h *zip.FileHeader, raw []byte) []byte
	}{
		{"claims 2^28 floats from 1 KiB", "more than deflate expands to", func(h *zip.FileHeader, raw []byte) []byte {
			if strings.HasSuffix(h.Name, "data/0") {
				h.UncompressedSize64, h.CompressedSize64 = 1<<30, 1024
				return raw[:1024]
			}
			return raw
		}},
		{"holds less than it claims", "reading", func(h *zip.FileHeader, raw []byte) []byte {
			if strings.HasSuffix(h.Name, "data/0") {
				h.UncompressedSize64 += 4096
			}
			return raw
		}},
		{"corrupt CRC", "checksum", func(h *zip.FileHeader, raw []byte) []byte {
			if strings.HasSuffix(h.Name, "data/0") {
				h.CRC32++
			}
			return raw
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bad := filepath.Join(dir, "bad.pt")
			writeFile(t, bad, rezip(t, b, tt.edit))
			start := time.Now()
			m := CompareFiles(bad, p, Options{})
			if m.Status != StatusReadNone || !strings.Contains(fmt.Sprint(m.Err), tt.want) {
				t.Errorf("got %s %v, want an error containing %q", m.Status, m.Err, tt.want)
			}
			if time.Since(start) > 5*time.Second {
				t.Errorf("took %v", time.Since(start))
			}
		})
	}
	// A strided view needs random access: a large compressed storage is
	// refused rather than decompressed into memory.
	const rows, cols = 5 << 10, 1 << 10 // 20 MiB
	sp := ptFile(t, dir, "s.pt", tensortest.PT{Class: "FloatStorage", Numel: rows * cols, Data: make([]byte, 4*rows*cols),
		Size: []int{rows, cols}, Stride: []int{1, rows}, Deflate: true})
	if _, err := Open(sp); err == nil || !strings.Contains(err.Error(), "strided view over a compressed storage") {
		t.Errorf("strided view over 20 MiB deflated: %v", err)
	}
}

// TestHostileArchives: the archive and pickle budgets hold.
func TestHostileArchives(t *testing.T) {
	good := ptBytes(t, "torch.float32", []int{2}, []float64{1, 2})
	withPickle := func(pkl []byte) []byte {
		return editPickle(t, good, func([]byte) []byte { return pkl })
	}
	markBomb := func(n int) []byte {
		return append(append([]byte("\x80\x02"), bytes.Repeat([]byte("("), n)...), '.')
	}
	// A directory of 40,000 entries (about 2 MB) is refused unbuffered.
	var many bytes.Buffer
	zw := zip.NewWriter(&many)
	for i := 0; i < 40000; i++ {
		zw.CreateHeader(&zip.FileHeader{Name: fmt.Sprintf("archive/extra/%08d", i), Method: zip.Store})
	}
	zw.Close()
	tests := []struct {
		name, want string
		data       []byte
	}{
		{"MARK bomb within the budget", "unpickling", markBomb(maxPickle - 3)},
		{"MARK bomb over the budget", "record exceeds", markBomb(1 << 20)},
		{"BINBYTES8 claiming 2^40 bytes", "unpickling", append([]byte("\x80\x04\x8e"), 0, 0, 0, 0, 0, 1, 0, 0, '.')},
		{"self-referencing dict in the hooks", "nested more than", withPickleSelfRef(t)},
		{"forbidden global in the hooks", "global builtins.eval", withHooks(t, "builtins", "eval")},
		{"zip directory of 40,000 entries", "zip directory", many.Bytes()},
		{"truncated archive", "zip archive", good[:len(good)/2]},
	}
	dir := t.TempDir()
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := tt.data
			if strings.HasPrefix(tt.name, "MARK") || strings.HasPrefix(tt.name, "BINBYTES8") {
				data = withPickle(tt.data)
			}
			p := filepath.Join(dir, fmt.Sprintf("h%d.pt", i))
			writeFile(t, p, data)
			var err error
			if got := allocated(func() { _, err = Open(p) }); got > 16<<20 {
				t.Errorf("allocated %d bytes", got)
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), p) {
				t.Errorf("error %v, want one naming the file and containing %q", err, tt.want)
			}
		})
	}
}

// editPickle rewrites a .pt archive's data.pkl.
func editPickle(t *testing.T, b []byte, edit func(pkl []byte) []byte) []byte {
	return rezip(t, b, func(h *zip.FileHeader, raw []byte) []byte {
		if !strings.HasSuffix(h.Name, "data.pkl") {
			return raw
		}
		pkl := edit(raw)
		h.CRC32 = crc32.ChecksumIEEE(pkl)
		h.CompressedSize64, h.UncompressedSize64 = uint64(len(pkl)), uint64(len(pkl))
		return pkl
	})
}

// withHooks is a tensor whose backward_hooks slot calls module.name.
func withHooks(t *testing.T, module, name string) []byte {
	return editPickle(t, ptBytes(t, "torch.float32", []int{1}, []float64{1}), func(pkl []byte) []byte {
		return bytes.Replace(pkl, []byte("collections\nOrderedDict\n"), []byte(module+"\n"+name+"\n"), 1)
	})
}

// withPickleSelfRef is a tensor whose hooks argument is a dict holding
// itself.
func withPickleSelfRef(t *testing.T) []byte {
	return editPickle(t, ptBytes(t, "torch.float32", []int{1}, []float64{1}), func(raw []byte) []byte {
		// Replace the OrderedDict() call by d = {}; d[1] = d.
		call := bytes.Index(raw, []byte("ccollections\nOrderedDict\n"))
		end := bytes.Index(raw[call:], []byte(")R")) + call + 2
		self := []byte("}r\xff\x00\x00\x00K\x01h\xffs")
		return append(append(append([]byte{}, raw[:call]...), self...), raw[end:]...)
	})
}

// TestFolderOpen: data names are opened inside the tensor folder only;
// links out of it, FIFOs, folders and broken links are refused at once
// (never a hang), and a missing file is told apart from a broken one.
func TestFolderOpen(t *testing.T) {
	root := t.TempDir()
	rank := filepath.Join(root, "rank0")
	p := msprobe.Paths{Dir: rank, TensorDir: filepath.Join(rank, msprobe.TensorDirName)}
	os.MkdirAll(p.TensorDir, 0o755)
	os.MkdirAll(filepath.Join(p.TensorDir, "sub"), 0o755)
	good := ptBytes(t, "torch.float32", []int{2}, []float64{1, 2})
	writeFile(t, filepath.Join(p.TensorDir, "a.pt"), good)
	writeFile(t, filepath.Join(p.TensorDir, "sub", "real.pt"), good)
	writeFile(t, filepath.Join(root, "secret.pt"), good)
	writeFile(t, filepath.Join(rank, "dump.json"), []byte("{}"))
	writeFile(t, filepath.Join(p.TensorDir, "notes.txt"), []byte("not a tensor"))
	link := func(target, name string) {
		if err := os.Symlink(target, filepath.Join(p.TensorDir, name)); err != nil {
			t.Fatal(err)
		}
	}
	link("sub/real.pt", "inside.pt")
	link("../../secret.pt", "outside.pt")
	link(filepath.Join(root, "secret.pt"), "absolute.pt")
	link("../dump.json", "json.pt")
	link("notes.txt", "text.pt")
	link("nowhere.pt", "dangling.pt")
	link("loop.pt", "loop.pt")
	link("/dev/zero", "zero.pt")
	if err := syscall.Mkfifo(filepath.Join(p.TensorDir, "fifo.pt"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(p.TensorDir, "dir.pt"), 0o755)
	tests := []struct {
		name string
		ok   bool
		is   error  // the error wraps it
		want string // the error contains it
	}{
		{"a.pt", true, nil, ""},
		{"inside.pt", true, nil, ""},
		{"outside.pt", false, ErrOutside, "secret.pt"},
		{"absolute.pt", false, ErrOutside, "secret.pt"},
		{"json.pt", false, ErrOutside, "dump.json"},
		{"zero.pt", false, ErrOutside, "/dev/zero"},
		{"text.pt", false, nil, "torch.save"},
		{"dangling.pt", false, nil, "does not resolve"},
		{"loop.pt", false, nil, "does not resolve"},
		{"fifo.pt", false, nil, "named pipe"},
		{"dir.pt", false, nil, "folder"},
		{"missing.pt", false, fs.ErrNotExist, ""},
		{"../secret.pt", false, msprobe.ErrUnsafeDataName, ""},
	}
	d := NewFolder(p)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			done := make(chan error, 1)
			go func() {
				f, err := d.Open(tt.name)
				if err == nil {
					f.Close()
				}
				done <- err
			}()
			var err error
			select {
			case err = <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("Open hangs")
			}
			if tt.ok != (err == nil) {
				t.Fatalf("error %v, want ok=%v", err, tt.ok)
			}
			if err == nil {
				return
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %v does not wrap %v", err, tt.is)
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), tt.name) && tt.is != msprobe.ErrUnsafeDataName {
				t.Errorf("error %q lacks %q or the file name", err, tt.want)
			}
			missing := errors.Is(err, fs.ErrNotExist)
			if missing != (tt.name == "missing.pt") {
				t.Errorf("error %v: counted as missing = %v", err, missing)
			}
		})
	}
	// Through CompareDataNames the refusals are read-failure rows, with
	// msprobe's message naming the two data names.
	m, err := CompareDataNames(d, d, "a.pt", "outside.pt", Options{})
	if err != nil || m.Status != StatusReadNone || !errors.Is(m.Err, ErrOutside) ||
		m.Message != "Dump file: a.pt or outside.pt not found or read failed." {
		t.Errorf("got %s %q %v / %v", m.Status, m.Message, m.Err, err)
	}
}

// TestStoredCRC: a flipped byte in a stored record is caught whether the
// view streams the whole record (checked at its end) or not (checked
// when opened).
func TestStoredCRC(t *testing.T) {
	dir := t.TempDir()
	flip := func(p tensortest.PT) string {
		b, err := p.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		b = bytes.Replace(b, f32Bytes([]float64{3}), f32Bytes([]float64{5}), 1)
		path := filepath.Join(dir, fmt.Sprintf("f%d.pt", len(p.Size)))
		writeFile(t, path, b)
		return path
	}
	data := f32Bytes([]float64{1, 2, 3, 4})
	whole := flip(tensortest.PT{Class: "FloatStorage", Numel: 4, Data: data, Size: []int{4}})
	part := flip(tensortest.PT{Class: "FloatStorage", Numel: 4, Data: data, Size: []int{2, 2}, Stride: []int{1, 2}})
	if m := CompareFiles(whole, whole, Options{}); m.Status != StatusReadNone || !strings.Contains(fmt.Sprint(m.Err), "CRC-32") {
		t.Errorf("whole record: %s %v", m.Status, m.Err)
	}
	if _, err := Open(part); err == nil || !strings.Contains(err.Error(), "CRC-32") {
		t.Errorf("strided view: %v", err)
	}
}

// TestViewChecks: declared views are checked against the storage before
// anything is read.
func TestViewChecks(t *testing.T) {
	tests := []struct {
		name         string
		offset       int
		size, stride []int
		numel        int
		want         string
	}{
		{"past the end", 2, []int{3}, []int{1}, 4, "reach past"},
		{"stride past the end", 0, []int{2, 2}, []int{1 << 40, 1}, 4, "reach past"},
		{"overflowing size", 0, []int{1 << 40, 1 << 40}, []int{0, 0}, 1, "overflows"},
		{"negative stride", 0, []int{2}, []int{-1}, 4, "negative"},
		{"rank mismatch", 0, []int{2}, []int{1, 1}, 4, "rank"},
		{"broadcast beyond 2^31", 0, []int{1 << 31, 2}, []int{0, 0}, 1, "broadcast"},
	}
	for _, tt := range tests {
		if _, err := makeView(tt.offset, tt.size, tt.stride, tt.numel); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
	v, err := makeView(0, []int{1, 1 << 31, 1}, []int{0, 0, 0}, 1)
	if err != nil || v.numel != 1<<31 || len(v.dims) != 1 {
		t.Errorf("2^31 broadcast: %+v %v", v, err)
	}
}

// TestPermutedViews reads every permutation of a 4-d tensor's storage
// layout, a column broadcast and a step-2 slice back through their
// strides, element for element (row, tile and element modes).
func TestPermutedViews(t *testing.T) {
	shape := []int{3, 5, 4, 6}
	n := 3 * 5 * 4 * 6
	want := make([]float64, n) // element i of the row-major tensor is i
	for i := range want {
		want[i] = float64(i)
	}
	dir := t.TempDir()
	var perms [][]int
	var permute func(p []int, k int)
	permute = func(p []int, k int) {
		if k == len(p) {
			perms = append(perms, slices.Clone(p))
			return
		}
		for i := k; i < len(p); i++ {
			p[k], p[i] = p[i], p[k]
			permute(p, k+1)
			p[k], p[i] = p[i], p[k]
		}
	}
	permute([]int{0, 1, 2, 3}, 0)
	for _, perm := range perms {
		// Storage holds the tensor with its dimensions in perm order.
		pshape := make([]int, 4)
		for k, d := range perm {
			pshape[k] = shape[d]
		}
		pstride := tensortest.ContiguousStride(pshape)
		stride := make([]int, 4)
		for k, d := range perm {
			stride[d] = pstride[k]
		}
		const offset = 7
		store := make([]float64, n+offset)
		idx := make([]int, 4)
		for i := 0; i < n; i++ {
			off := offset
			for k := range idx {
				off += idx[k] * stride[k]
			}
			store[off] = want[i]
			for k := 3; k >= 0; k-- {
				if idx[k]++; idx[k] < shape[k] {
					break
				}
				idx[k] = 0
			}
		}
		p := ptFile(t, dir, "p.pt", tensortest.PT{Class: "DoubleStorage", Numel: len(store), Data: f64Bytes(store...), Offset: offset, Size: shape, Stride: stride})
		got, err := Load(p, n)
		if err != nil || !slices.Equal(got.Data, want) {
			t.Errorf("perm %v stride %v: %v %v", perm, stride, err, got)
		}
	}
	for _, tc := range []struct {
		name         string
		store        []float64
		size, stride []int
		want         []float64
	}{
		{"column broadcast", []float64{1, 2, 3}, []int{3, 2}, []int{1, 0}, []float64{1, 1, 2, 2, 3, 3}},
		{"step-2 slice", []float64{0, 1, 2, 3, 4, 5, 6, 7}, []int{2, 2}, []int{4, 2}, []float64{0, 2, 4, 6}},
		{"step-2 transpose", []float64{0, 1, 2, 3, 4, 5, 6, 7}, []int{2, 2}, []int{2, 4}, []float64{0, 4, 2, 6}},
	} {
		p := ptFile(t, dir, "s.pt", tensortest.PT{Class: "DoubleStorage", Numel: len(tc.store), Data: f64Bytes(tc.store...), Size: tc.size, Stride: tc.stride})
		got, err := Load(p, 100)
		if err != nil || !slices.Equal(got.Data, tc.want) {
			t.Errorf("%s: %v %v, want %v", tc.name, err, got, tc.want)
		}
	}
}
