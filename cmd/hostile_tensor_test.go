package cmd

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/layermap/layermap/mapping/compare/tensor/tensortest"
)

// tensorRank writes a tensor-mode rank folder: one entry per data name
// (its output row), and the .pt files given under dump_tensor_data.
func tensorRank(t *testing.T, dir string, dataNames []string, files map[string][]byte) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(`{"task": "tensor", "level": "mix", "framework": "pytorch", "dump_data_dir": "./dump_tensor_data", "data": {`)
	for i, dn := range dataNames {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString("\n \"Module.fc" + string(rune('0'+i)) + ".Linear.forward.0\": {\"output\": [{\"type\": \"torch.Tensor\", \"dtype\": \"torch.float32\", \"shape\": [4], " +
			"\"Max\": 1.0, \"Min\": 0.0, \"Mean\": 0.5, \"Norm\": 1.0, \"requires_grad\": false, \"data_name\": \"" + dn + "\"}]}")
	}
	b.WriteString("\n}}\n")
	write(t, filepath.Join(dir, "dump.json"), []byte(b.String()))
	for name, data := range files {
		write(t, filepath.Join(dir, "dump_tensor_data", name), data)
	}
	return dir
}

// manyRank writes a tensor-mode rank folder of n entries, Module.fc0 to
// fc39 (more than the compare's join takes at once; from the 41st
// Module.fc0 and on again, a repeated key), each with one output row
// reading a.pt, b.pt for entry 7, or the data name given.
func manyRank(t *testing.T, dir string, n int, dataNames map[int]string, files map[string][]byte) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(`{"task": "tensor", "level": "mix", "framework": "pytorch", "dump_data_dir": "./dump_tensor_data", "data": {`)
	for i := range n {
		dn, ok := dataNames[i]
		switch {
		case ok:
		case i == 7:
			dn = "b.pt"
		default:
			dn = "a.pt"
		}
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "\n \"Module.fc%d.Linear.forward.0\": {\"output\": [{\"type\": \"torch.Tensor\", \"dtype\": \"torch.float32\", \"shape\": [4], "+
			"\"Max\": 1.0, \"Min\": 0.0, \"Mean\": 0.5, \"Norm\": 1.0, \"requires_grad\": false, \"data_name\": %q}]}", i%40, dn)
	}
	b.WriteString("\n}}\n")
	write(t, filepath.Join(dir, "dump.json"), []byte(b.String()))
	for name, data := range files {
		write(t, filepath.Join(dir, "dump_tensor_data", name), data)
	}
	return dir
}

func ptOf(t *testing.T, vals ...float64) []byte {
	t.Helper()
	b, err := tensortest.PTBytes("torch.float32", []int{len(vals)}, vals)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Tensor files through the command line: nothing is read outside the
// dump, a file that cannot be loaded is an error row with a warning
// naming it, a view claiming 2^28 elements is computed from its 4 bytes.
func TestHostileTensors(t *testing.T) {
	good := func(t *testing.T) []byte { return ptOf(t, 1, 2, 3, 4) }
	names := []string{"a.pt", "b.pt"}
	pair := func(t *testing.T, dir string, npuFiles map[string][]byte) (npu, bench string) {
		bench = tensorRank(t, filepath.Join(dir, "bench"), names, map[string][]byte{"a.pt": good(t), "b.pt": good(t)})
		npu = tensorRank(t, filepath.Join(dir, "npu"), names, npuFiles)
		return npu, bench
	}
	compare := func(npuFiles func(t *testing.T, dir string) map[string][]byte) func(t *testing.T, dir string) ([]string, io.Reader) {
		return func(t *testing.T, dir string) ([]string, io.Reader) {
			npu, bench := pair(t, dir, npuFiles(t, dir))
			out := filepath.Join(dir, "out")
			os.Mkdir(out, 0o755)
			return []string{"compare", "-tp", npu, "-gp", bench, "-o", out}, nil
		}
	}
	f32 := make([]byte, 4)
	binary.LittleEndian.PutUint32(f32, math.Float32bits(2))
	runHostile(t, []hostileCase{
		{"a symbolic link out of the dump", func(t *testing.T, dir string) ([]string, io.Reader) {
			outside := write(t, filepath.Join(dir, "elsewhere", "secret.pt"), good(t))
			args, in := compare(func(t *testing.T, dir string) map[string][]byte { return map[string][]byte{"b.pt": good(t)} })(t, dir)
			os.Symlink(outside, filepath.Join(dir, "npu", "dump_tensor_data", "a.pt"))
			return args, in
		}, ExitFindings, []string{"a.pt", "resolves outside the dump's tensor folder", "1 tensor-mode rows have a tensor file that cannot be read"}},
		{"a corrupt archive", compare(func(t *testing.T, dir string) map[string][]byte {
			return map[string][]byte{"a.pt": []byte("PK\x03\x04 not a zip"), "b.pt": good(t)}
		}), ExitFindings, []string{"a.pt", "cannot be read"}},
		{"a 2^28-element broadcast of one float", compare(func(t *testing.T, dir string) map[string][]byte {
			pt, err := tensortest.PT{Class: "FloatStorage", Numel: 1, Data: f32, Size: []int{1 << 28}, Stride: []int{0}}.Bytes()
			if err != nil {
				t.Fatal(err)
			}
			return map[string][]byte{"a.pt": pt, "b.pt": good(t)}
		}), ExitOK, nil},
		{"an escaping data_name on an unmatched row", func(t *testing.T, dir string) ([]string, io.Reader) {
			bench := tensorRank(t, filepath.Join(dir, "bench"), names[:1], map[string][]byte{"a.pt": good(t)})
			npu := tensorRank(t, filepath.Join(dir, "npu"), []string{"a.pt", "../."}, map[string][]byte{"a.pt": good(t)})
			out := emptyOut(t, dir)
			return []string{"compare", "-tp", npu, "-gp", bench, "-o", out}, nil
		}, ExitBadInput, []string{`npu/dump.json:3: expected a data_name naming a file inside dump_tensor_data (msprobe writes plain file names), found "../." (contains a path separator)`}},
		{"tensor files missing on the bench side", func(t *testing.T, dir string) ([]string, io.Reader) {
			bench := tensorRank(t, filepath.Join(dir, "bench"), names, map[string][]byte{"a.pt": good(t)})
			npu := tensorRank(t, filepath.Join(dir, "npu"), names, map[string][]byte{"a.pt": good(t), "b.pt": good(t)})
			return []string{"compare", "-tp", npu, "-gp", bench, "-o", dir}, nil
		}, ExitOK, []string{"bench: 1 of 2 tensor-mode rows have no tensor file (e.g. ", "bench/dump_tensor_data/b.pt"}},
		{"a repeated key on the NPU side, tensor files missing on the bench side", func(t *testing.T, dir string) ([]string, io.Reader) {
			bench := manyRank(t, filepath.Join(dir, "bench"), 40, nil, map[string][]byte{"a.pt": good(t)})
			npu := manyRank(t, filepath.Join(dir, "npu"), 41, nil, map[string][]byte{"a.pt": good(t), "b.pt": good(t)})
			return []string{"compare", "-tp", npu, "-gp", bench, "-o", dir}, nil
		}, ExitOK, []string{"bench: 1 of ", "rows have no tensor file (e.g. ", "bench/dump_tensor_data/b.pt"}},
		{"an escaping data_name in a body a repeated key replaces", func(t *testing.T, dir string) ([]string, io.Reader) {
			files := map[string][]byte{"a.pt": good(t), "b.pt": good(t)}
			bench := manyRank(t, filepath.Join(dir, "bench"), 40, nil, files)
			npu := manyRank(t, filepath.Join(dir, "npu"), 41, map[int]string{0: "../."}, files)
			return []string{"compare", "-tp", npu, "-gp", bench, "-o", dir}, nil
		}, ExitOK, nil},
	})
}
