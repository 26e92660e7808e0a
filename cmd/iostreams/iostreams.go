// Package iostreams is the standard input and output of a layermap run,
// as the gh CLI's pkg/iostreams: the three streams and whether stderr is
// a terminal, which tests can override to cover the progress output.
package iostreams

import (
	"bytes"
	"io"
	"os"
)

// IOStreams are the streams a command reads and writes.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer

	stderrTTY *bool // override of the detection
}

// System returns the process's standard streams.
func System() *IOStreams {
	return &IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
}

// Test returns streams over buffers: standard input reads in, what is
// written goes to out and errOut. Stderr is not a terminal unless
// SetStderrTTY says so.
func Test() (ios *IOStreams, in, out, errOut *bytes.Buffer) {
	in, out, errOut = &bytes.Buffer{}, &bytes.Buffer{}, &bytes.Buffer{}
	return &IOStreams{In: in, Out: out, ErrOut: errOut}, in, out, errOut
}

// SetStderrTTY overrides whether stderr counts as a terminal.
func (s *IOStreams) SetStderrTTY(tty bool) { s.stderrTTY = &tty }

// IsStderrTTY reports whether stderr is a terminal (a character device),
// or what SetStderrTTY set.
func (s *IOStreams) IsStderrTTY() bool {
	if s.stderrTTY != nil {
		return *s.stderrTTY
	}
	f, ok := s.ErrOut.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// ProgressOut is where progress on long work goes: stderr when it is a
// terminal, else nil (no progress in logs and pipes).
func (s *IOStreams) ProgressOut() io.Writer {
	if s.IsStderrTTY() {
		return s.ErrOut
	}
	return nil
}
