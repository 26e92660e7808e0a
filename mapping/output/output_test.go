package output

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/layermap/layermap/printparse/source"
	_ "github.com/layermap/layermap/printparse/testkit" // the -update flag of go test ./... -update
)

var t0 = time.Date(2026, 12, 2, 12, 3, 52, 0, time.Local)

// ls lists the names in dir, sorted.
func ls(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

func read(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var csvName = Name{Prefix: "compare_result_", Suffix: ".csv", Stamped: true}

func TestCommit(t *testing.T) {
	dir := t.TempDir()
	s := NewSet()
	a, err := s.Create(dir, csvName, 0o640)
	if err != nil {
		t.Fatal(err)
	}
	a.Write([]byte("a,b\n"))
	if _, err := s.WriteFile(dir, Name{Prefix: "data_mapping_", Suffix: ".yaml", Stamped: true}, []byte("x: y\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	if _, err := s.WriteFile(dir, Name{Prefix: "draft.yaml"}, []byte("A:\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := ls(t, dir); len(got) != 3 || !strings.HasPrefix(got[0], ".layermap-") {
		t.Fatalf("before Commit: %v, want three temporaries", got)
	}
	if err := s.Commit(t0); err != nil {
		t.Fatal(err)
	}
	want := []string{"compare_result_20261202120352.csv", "data_mapping_20261202120352.yaml", "draft.yaml"}
	if got := ls(t, dir); !slices.Equal(got, want) {
		t.Fatalf("after Commit: %v, want %v", got, want)
	}
	if p := a.Path(); p != filepath.Join(dir, want[0]) || read(t, p) != "a,b\n" {
		t.Errorf("Path %s holds %q", p, read(t, p))
	}
	if st, _ := os.Stat(filepath.Join(dir, want[0])); st.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want 0640", st.Mode().Perm())
	}
	if st, _ := os.Stat(filepath.Join(dir, want[2])); st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", st.Mode().Perm())
	}
	if got := s.Files(); len(got) != 3 {
		t.Errorf("Files() = %v", got)
	}
}

// Two runs in the same second, or back to back within it, into one
// folder: the second moves to the next free second, every file of it
// together; no table is replaced.
func TestStampCollision(t *testing.T) {
	dir := t.TempDir()
	run := func(body string) []string {
		s := NewSet()
		s.WriteFile(dir, Name{Prefix: "compare_result_rank0_", Suffix: ".csv", Stamped: true}, []byte(body), 0o640)
		s.WriteFile(dir, Name{Prefix: "compare_result_rank1_", Suffix: ".csv", Stamped: true}, []byte(body), 0o640)
		if err := s.Commit(t0); err != nil {
			t.Fatal(err)
		}
		return s.Files()
	}
	first, second, third := run("1"), run("2"), run("3")
	for i, files := range [][]string{first, second, third} {
		stamp := t0.Add(time.Duration(i) * time.Second).Format(StampLayout)
		for j, f := range files {
			if want := filepath.Join(dir, "compare_result_rank"+string(rune('0'+j))+"_"+stamp+".csv"); f != want {
				t.Errorf("run %d file %d: %s, want %s", i+1, j, f, want)
			}
			if got := read(t, f); got != string(rune('1'+i)) {
				t.Errorf("%s holds %q: another run's table", f, got)
			}
		}
	}
	// a taken name of one file moves the whole set
	os.WriteFile(filepath.Join(dir, "compare_result_rank1_"+t0.Add(3*time.Second).Format(StampLayout)+".csv"), []byte("other"), 0o644)
	fourth := run("4")
	if want := t0.Add(4 * time.Second).Format(StampLayout); !strings.Contains(fourth[0], want) || !strings.Contains(fourth[1], want) {
		t.Errorf("set split over stamps: %v", fourth)
	}
	if n := len(ls(t, dir)); n != 9 {
		t.Errorf("%d files, want 9 (4 runs of 2 and the other file): %v", n, ls(t, dir))
	}
}

// Two sets committed concurrently into one folder keep both tables.
func TestConcurrentSets(t *testing.T) {
	dir := t.TempDir()
	const n = 8
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		go func() {
			s := NewSet()
			s.WriteFile(dir, csvName, []byte(strings.Repeat("x", i+1)), 0o640)
			errs <- s.Commit(t0)
		}()
	}
	for i := 0; i < n; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	got := ls(t, dir)
	if len(got) != n {
		t.Fatalf("%d files, want %d: %v", len(got), n, got)
	}
	sizes := map[int]bool{}
	for _, f := range got {
		sizes[len(read(t, filepath.Join(dir, f)))] = true
	}
	if len(sizes) != n {
		t.Errorf("a table was replaced: sizes %v", sizes)
	}
}

// A failure after part of the set is in place leaves nothing: not the
// files already renamed, not the temporaries, and a replaced fixed-name
// file is restored.
func TestCommitFailureLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "sub")
	os.Mkdir(sub, 0o755)
	old := filepath.Join(dir, "draft.yaml")
	os.WriteFile(old, []byte("old draft\n"), 0o644)
	s := NewSet()
	s.WriteFile(dir, csvName, []byte("table"), 0o640)
	s.WriteFile(dir, Name{Prefix: "draft.yaml"}, []byte("new draft\n"), 0o644)
	s.WriteFile(sub, Name{Prefix: "reverse.yaml"}, []byte("reverse\n"), 0o644)
	// the last rename fails: its target is a folder
	os.Mkdir(filepath.Join(sub, "reverse.yaml"), 0o755)
	err := s.Commit(t0)
	var se *source.Error
	if !errors.As(err, &se) || se.File != filepath.Join(sub, "reverse.yaml") {
		t.Fatalf("Commit: %v, want an error naming %s", err, filepath.Join(sub, "reverse.yaml"))
	}
	if got, want := ls(t, dir), []string{"draft.yaml", "sub"}; !slices.Equal(got, want) {
		t.Errorf("left in the folder: %v, want %v", got, want)
	}
	if got := ls(t, sub); !slices.Equal(got, []string{"reverse.yaml"}) {
		t.Errorf("left in sub: %v", got)
	}
	if got := read(t, old); got != "old draft\n" {
		t.Errorf("replaced file not restored: %q", got)
	}
	if err := s.Commit(t0); err == nil {
		t.Error("a failed set committed on a second try")
	}
}

// A write failing in the middle of a run (the folder removed under it)
// and Abort: nothing is left.
func TestAbortLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	s := NewSet()
	f, _ := s.Create(dir, csvName, 0o640)
	f.Write([]byte("part 1"))
	s.WriteFile(dir, Name{Prefix: "x.yaml"}, []byte("x"), 0o644)
	s.Abort()
	if got := ls(t, dir); len(got) != 0 {
		t.Errorf("left after Abort: %v", got)
	}
	if err := s.Commit(t0); err == nil {
		t.Error("Commit after Abort succeeded")
	}
}

func TestMissingFolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "no", "such")
	_, err := NewSet().Create(dir, Name{Prefix: "x.yaml"}, 0o644)
	want := dir + ": expected an existing folder for x.yaml, found nothing there"
	var se *source.Error
	if !errors.As(err, &se) || err.Error() != want {
		t.Errorf("Create: %v, want %q", err, want)
	}
	if _, err := os.Stat(filepath.Dir(dir)); !errors.Is(err, fs.ErrNotExist) {
		t.Error("the missing folder was created")
	}
}

func TestDropTruncateRename(t *testing.T) {
	dir := t.TempDir()
	s := NewSet()
	a, _ := s.Create(dir, csvName, 0o640)
	a.Write([]byte("first try"))
	a.Truncate()
	a.Write([]byte("second"))
	a.Rename(Name{Prefix: "compare_result_", Suffix: "_part_1.csv", Stamped: true})
	b, _ := s.Create(dir, Name{Prefix: "empty_", Suffix: ".csv", Stamped: true}, 0o640)
	b.Drop()
	if err := s.Commit(t0); err != nil {
		t.Fatal(err)
	}
	if got, want := ls(t, dir), []string{"compare_result_20261202120352_part_1.csv"}; !slices.Equal(got, want) {
		t.Fatalf("%v, want %v", got, want)
	}
	if got := read(t, a.Path()); got != "second" {
		t.Errorf("%q, want %q", got, "second")
	}
}

// TestRewrite: a rewrite replaces the content, keeps the file writable
// and leaves one temporary; a failed one leaves the file as it was; one
// after Abort writes nothing.
func TestRewrite(t *testing.T) {
	upper := func(w io.Writer, r io.Reader) error {
		b, err := io.ReadAll(r)
		if err != nil {
			return err
		}
		_, err = w.Write(bytes.ToUpper(b))
		return err
	}
	failing := func(w io.Writer, r io.Reader) error {
		w.Write([]byte("half"))
		return errors.New("edit failed")
	}
	dir := t.TempDir()
	s := NewSet()
	f, _ := s.Create(dir, csvName, 0o640)
	f.Write([]byte("one,"))
	if err := f.Rewrite(upper); err != nil {
		t.Fatal(err)
	}
	if err := f.Rewrite(failing); err == nil || err.Error() != "edit failed" {
		t.Fatalf("Rewrite: %v, want the edit's error", err)
	}
	f.Write([]byte("two"))
	if got := ls(t, dir); len(got) != 1 {
		t.Fatalf("%v, want one temporary", got)
	}
	if err := s.Commit(t0); err != nil {
		t.Fatal(err)
	}
	if got := read(t, f.Path()); got != "ONE,two" {
		t.Errorf("%q, want %q", got, "ONE,two")
	}

	dir = t.TempDir()
	s = NewSet()
	f, _ = s.Create(dir, csvName, 0o640)
	f.Write([]byte("x"))
	s.Abort()
	if err := f.Rewrite(upper); err == nil {
		t.Error("Rewrite after Abort succeeded")
	}
	if got := ls(t, dir); len(got) != 0 {
		t.Errorf("left after Abort: %v", got)
	}
}

// helperEnv makes the test binary run signalHelper instead of the tests.
const helperEnv = "LAYERMAP_OUTPUT_SIGNAL_HELPER"

func TestMain(m *testing.M) {
	if dir := os.Getenv(helperEnv); dir != "" {
		signalHelper(dir)
		return
	}
	os.Exit(m.Run())
}

// signalHelper writes part of a set into dir, says so on stdout and waits
// to be killed.
func signalHelper(dir string) {
	s := NewSet()
	f, err := s.Create(dir, csvName, 0o640)
	if err != nil {
		os.Exit(3)
	}
	f.Write([]byte("rows"))
	s.WriteFile(dir, Name{Prefix: "data_mapping_", Suffix: ".yaml", Stamped: true}, []byte("x: y\n"), 0o640)
	os.Stdout.WriteString("ready\n")
	time.Sleep(time.Minute)
	os.Exit(4)
}

// SIGTERM or SIGINT in the middle of a run removes its temporaries and
// ends the process with 128 + the signal number.
func TestSignalRemovesTemporaries(t *testing.T) {
	for _, tc := range []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGTERM, 143}, {syscall.SIGINT, 130}} {
		t.Run(tc.sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), helperEnv+"="+dir)
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			if line, _ := bufio.NewReader(out).ReadString('\n'); line != "ready\n" {
				cmd.Process.Kill()
				t.Fatalf("helper said %q", line)
			}
			if n := len(ls(t, dir)); n != 2 {
				t.Errorf("%d temporaries before the signal, want 2", n)
			}
			cmd.Process.Signal(tc.sig)
			err = cmd.Wait()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != tc.code {
				t.Errorf("exit %v, want status %d", err, tc.code)
			}
			if got := ls(t, dir); len(got) != 0 {
				t.Errorf("left after %v: %v", tc.sig, got)
			}
		})
	}
}
