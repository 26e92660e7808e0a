package msprobe

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/layermap/layermap/printparse/testkit"
)

func TestModuleEntry(t *testing.T) {
	tests := []struct{ name, path, class, dir string }{
		{"Module.0.module.module.decoder.layers.3.TransformerLayer.forward.0", "0.module.module.decoder.layers.3", "TransformerLayer", "forward"},
		{"Module.conv1.Conv2d.backward.12", "conv1", "Conv2d", "backward"},
		{"Module.bn1.BatchNorm2d.parameters_grad.0", "bn1", "BatchNorm2d", "parameters_grad"},
		{"Module.enc.fc1.Linear.parameters_grad", "enc.fc1", "Linear", "parameters_grad"},
		{"Cell.network_with_loss.module.embedding.word_embeddings.VocabParallelEmbedding.forward.0", "network_with_loss.module.embedding.word_embeddings", "VocabParallelEmbedding", "forward"},
		{"Tensor.add.0.forward", "", "", ""},
		{"Functional.conv2d.0.backward", "", "", ""},
		{"Module1", "", "", ""},
		{"Module.Linear.forward.0", "", "", ""},
		{"Module.fc.Linear.forward.x", "", "", ""},
	}
	for _, tc := range tests {
		p, c, d, ok := ModuleEntry(tc.name)
		if p != tc.path || c != tc.class || d != tc.dir || ok != (tc.path != "") {
			t.Errorf("%s: got (%q, %q, %q, %v), want (%q, %q, %q)", tc.name, p, c, d, ok, tc.path, tc.class, tc.dir)
		}
	}
}

// SplitName is msprobe's split_data_name_components.
func TestSplitName(t *testing.T) {
	tests := []struct{ name, op, call, dir string }{
		{"Functional.linear.0.forward", "Functional.linear", "0.forward", "forward"},
		{"Module.fc.Linear.forward.0", "Module.fc.Linear", "forward.0", "forward"},
		{"Tensor.add.3.backward", "Tensor.add", "3.backward", "backward"},
		{"Module.fc.Linear.parameters_grad", "Module.fc.Linear", "parameters_grad", "parameters_grad"},
		{"Module.fc.Linear.parameters_grad.0", "Module.fc.Linear.parameters_grad", "parameters_grad", "parameters_grad"},
		{"x.forward", "", "x.forward", "forward"},
		{"forward", "", ".forward", "forward"},
		{"parameters_grad", "", "parameters_grad", "parameters_grad"},
		{"Tensor.weird_entry", "", "", ""},
		// forward is looked for in both parts before backward, and
		// parameters_grad before either.
		{"a.backward.forward", "a", "backward.forward", "forward"},
		{"a.forward.backward", "a", "forward.backward", "forward"},
		{"a.parameters_grad.forward", "a.parameters_grad", "parameters_grad", "parameters_grad"},
		{"a.backward.7", "a", "backward.7", "backward"},
		{"backward", "", ".backward", "backward"},
		{"a.forwards.0", "", "", ""},
		{"a.Forward.0", "", "", ""},
		{"", "", "", ""},
	}
	for _, tc := range tests {
		op, call, dir := SplitName(tc.name)
		if op != tc.op || call != tc.call || dir != tc.dir {
			t.Errorf("SplitName(%q) = (%q, %q, %q), want (%q, %q, %q)", tc.name, op, call, dir, tc.op, tc.call, tc.dir)
		}
	}
}

// DetectFramework on msprobe's own fixtures of detect_framework_by_dump_json.
func TestDetectFramework(t *testing.T) {
	dir := testkit.Corpus(t, "msprobe", "test", "msprobe_test", "core_ut", "common", "test_dump_file")
	tests := []struct{ file, want, err string }{
		{"ms_dump_no_framework.json", "mindspore", ""},
		{"pt_dump_no_framework.json", "pytorch", ""},
		{"dump_no_pt_no_ms.json", "", "expected a MindSpore or PyTorch dump, found no framework field and no typed values"},
	}
	for _, tc := range tests {
		got, err := DetectFramework(filepath.Join(dir, tc.file))
		if got != tc.want || (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: %q, %v; want %q, %q", tc.file, got, err, tc.want, tc.err)
		}
	}
	p := filepath.Join(t.TempDir(), "dump.json")
	os.WriteFile(p, []byte("{\n \"data\": {\"x\": {\"type\":\t\"torch.Tensor\"}},\n \"framework\": \"mindspore\"\n}\n"), 0o644)
	if got, err := DetectFramework(p); got != "mindspore" || err != nil {
		t.Errorf("framework after data: %q, %v", got, err)
	}
	os.WriteFile(p, []byte("{\n \"data\": {\"x\": {\"type\":\t\"torch.Tensor\"}}\n}\n"), 0o644)
	if got, err := DetectFramework(p); got != "pytorch" || err != nil {
		t.Errorf(`"type":\s*"torch: %q, %v`, got, err)
	}
	// msprobe tries pattern_ms on a line before pattern_pt, on the lines
	// of a Python text file (\n, \r\n and \r end them)
	for _, tc := range []struct{ text, want string }{
		{`{"data": {"a": {"type": "torch.Tensor"}, "b": {"type": "mindspore.Tensor"}}}`, "mindspore"},
		{"{\r \"data\": {\"x\": {\"type\":\r\"torch.Tensor\"}, \"y\": {\"type\": \"mindspore.Tensor\"}}\r}", "mindspore"},
		{"{\r\n \"data\": {\"x\": {\"type\":\r\n\"torch.Tensor\"}}\r\n}", ""},
	} {
		os.WriteFile(p, []byte(tc.text), 0o644)
		got, err := DetectFramework(p)
		if got != tc.want || (err == nil) != (tc.want != "") || err != nil && !errors.Is(err, ErrNoFramework) {
			t.Errorf("%q: %q, %v; want %q", tc.text, got, err, tc.want)
		}
	}
}

// TestLastIndex checks the word-at-a-time scan against strings.LastIndexByte
// with dots and other bytes (also above ASCII) at every place and end.
func TestLastIndex(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	alphabet := []byte{'.', 'a', '0', '/', '-', 0x2e | 0x80, 0xae, 0xff, 0x00, 0x2d, 0x2f}
	for n := 0; n < 40; n++ {
		for trial := 0; trial < 200; trial++ {
			b := make([]byte, n)
			for i := range b {
				b[i] = 'x'
				if r.IntN(4) == 0 {
					b[i] = alphabet[r.IntN(len(alphabet))]
				}
			}
			s := string(b)
			for end := 0; end <= n; end++ {
				if got, want := lastIndex(s, end), strings.LastIndexByte(s[:end], '.'); got != want {
					t.Fatalf("lastIndex(%q, %d) = %d, want %d", s, end, got, want)
				}
			}
		}
	}
}

// splitNameRef is split_data_name_components as msprobe writes it, with
// strings.Split.
func splitNameRef(name string) (op, call, dir string) {
	parts := strings.Split(name, ".")
	last := parts[len(parts)-1]
	second := ""
	if len(parts) > 1 {
		second = parts[len(parts)-2]
	}
	if last == StateParametersGrad || second == StateParametersGrad {
		if len(parts) == 1 {
			return "", StateParametersGrad, StateParametersGrad
		}
		return strings.Join(parts[:len(parts)-1], "."), StateParametersGrad, StateParametersGrad
	}
	for _, d := range []string{"forward", "backward"} {
		if last == d || second == d {
			return strings.Join(parts[:max(len(parts)-2, 0)], "."), second + "." + last, d
		}
	}
	return "", "", ""
}

func FuzzSplitName(f *testing.F) {
	for _, s := range []string{"Functional.linear.0.forward", "Module.fc.Linear.forward.0", "a.parameters_grad.forward",
		"a.forward.backward", "forward", "x.backward", "Tensor.weird_entry", "..forward", "a..backward", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		op, call, dir := SplitName(name)
		wop, wcall, wdir := splitNameRef(name)
		if op != wop || call != wcall || dir != wdir {
			t.Errorf("SplitName(%q) = (%q, %q, %q), want (%q, %q, %q)", name, op, call, dir, wop, wcall, wdir)
		}
	})
}
