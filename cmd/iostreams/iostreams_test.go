package iostreams

import (
	"os"
	"testing"

	_ "github.com/layermap/layermap/printparse/testkit" // the -update flag of go test ./... -update
)

func TestStderrTTY(t *testing.T) {
	ios, _, _, errOut := Test()
	if ios.IsStderrTTY() || ios.ProgressOut() != nil {
		t.Error("a buffer is a terminal")
	}
	ios.SetStderrTTY(true)
	if !ios.IsStderrTTY() || ios.ProgressOut() != errOut {
		t.Error("the override does not make stderr a terminal")
	}
	f, err := os.CreateTemp(t.TempDir(), "err")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if (&IOStreams{ErrOut: f}).IsStderrTTY() {
		t.Error("a regular file is a terminal")
	}
	if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
		defer tty.Close()
		if !(&IOStreams{ErrOut: tty}).IsStderrTTY() {
			t.Error("/dev/tty is not a terminal")
		}
	}
}
