package resolve

import (
	"os"
	"path/filepath"
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
