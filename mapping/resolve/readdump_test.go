package resolve

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A rank folder with only one of stack.json and construct.json names the
// missing one (it said "stack.json or construct.json not found").
func TestReadDumpInputHalfStructure(t *testing.T) {
	dump := []byte(`{"task": "statistics", "level": "mix", "framework": "pytorch", "dump_data_dir": null, "data": {}}`)
	tests := []struct {
		name string
		have string // the one structure file written
		want string // after the folder
	}{
		{"stack only", "stack.json", ": expected construct.json beside stack.json (msprobe refuses a folder with only one of them), found none"},
		{"construct only", "construct.json", ": expected stack.json beside construct.json (msprobe refuses a folder with only one of them), found none"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "dump.json"), dump, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, tc.have), []byte("{}"), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := ReadDumpInput(dir)
			if err == nil || err.Error() != dir+tc.want {
				t.Errorf("got %v, want %s%s", err, dir, tc.want)
			}
		})
	}
}

// With several of a folder's files malformed, the error is dump.json's,
// then construct.json's, then stack.json's; with rows (ReadSides'
// reading) and without. A skim checks the structure of dump.json but not
// the bodies, whose errors are then the compare's to report.
func TestReadDumpErrorOrder(t *testing.T) {
	t.Parallel()
	const (
		goodDump      = `{"task": "statistics", "level": "mix", "framework": "pytorch", "dump_data_dir": null, "data": {"Tensor.add.0.forward": {}}}`
		goodConstruct = `{"Tensor.add.0.forward": null}`
		goodStack     = `{"0": [["Tensor.add.0.forward"], []]}`
		bad           = `{"x": [}`
		badBody       = `{"task": "statistics", "level": "mix", "framework": "pytorch", "dump_data_dir": null, "data": {"Tensor.add.0.forward": {"x": 1.}}}`
	)
	tests := []struct {
		name                   string
		dump, construct, stack string
		want                   string // the file named first in the error
		skimmed                string // the same, when dump.json is skimmed
	}{
		{"all bad", bad, bad, bad, "dump.json", "dump.json"},
		{"dump and construct", bad, bad, goodStack, "dump.json", "dump.json"},
		{"dump and stack", bad, goodConstruct, bad, "dump.json", "dump.json"},
		{"construct and stack", goodDump, bad, bad, "construct.json", "construct.json"},
		{"stack", goodDump, goodConstruct, bad, "stack.json", "stack.json"},
		{"body and construct", badBody, bad, goodStack, "dump.json", "construct.json"},
	}
	for _, tc := range tests {
		dir := t.TempDir()
		for name, body := range map[string]string{"dump.json": tc.dump, "construct.json": tc.construct, "stack.json": tc.stack} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		for _, mode := range []rowsMode{noRows, withRows, rowsLater} {
			_, _, _, err := readDump(dir, mode)
			file := tc.want
			if mode == rowsLater {
				file = tc.skimmed
			}
			if want := filepath.Join(dir, file) + ":"; err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Errorf("%s (mode %d): got %v, want an error starting %s", tc.name, mode, err, want)
			}
		}
	}
}
