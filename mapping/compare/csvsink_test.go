package compare

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/layermap/layermap/mapping/output"
)

// TestCSVSink: the table's files hold exactly the rows written, split
// into parts of MaxCSVRows rows each with the header (stamped, as msprobe
// names them); a Reset with writes under way leaves only what is written
// after it, and a dropped table leaves no file. Rows are long enough that
// the Writer's buffers are being written while the sink resets or drops.
func TestCSVSink(t *testing.T) {
	t.Parallel()
	header := []string{"NPU Name", "Bench Name"}
	at := time.Date(2026, 12, 5, 10, 30, 0, 0, time.Local)
	stamp := at.Format(output.StampLayout)
	row := func(i int) string {
		return fmt.Sprintf("Tensor.add.%d.forward.input.0,%s\n", i, strings.Repeat("x", i%300))
	}
	// longRow: forty rows of 5 KB in a thousand near the start and near a
	// part's end, which a group of forty writes in several runs (putRuns),
	// up to the part's end and past it
	longRow := func(i int) string {
		if i%1000 >= 960 && (i < 3000 || i >= MaxCSVRows-3000) {
			return fmt.Sprintf("Tensor.add.%d.forward.input.0,%s\n", i, strings.Repeat("y", 5000+i%7))
		}
		return row(i)
	}
	// resetAfter writes rows [from, to), resets the table, writes the
	// header again as each pass does, then rows [from2, to2).
	resetAfter := func(from, to, from2, to2 int) func(*testing.T, *CSVSink) {
		return func(t *testing.T, s *CSVSink) {
			writeRows(t, s, row, from, to)
			if err := s.Reset(); err != nil {
				t.Fatal(err)
			}
			if err := s.Header(header); err != nil {
				t.Fatal(err)
			}
			writeRows(t, s, row, from2, to2)
		}
	}
	for _, tc := range []struct {
		name  string
		write func(t *testing.T, s *CSVSink) // after the header
		want  map[string][]int               // file name -> rows, or nil: no file
	}{
		{"one part", func(t *testing.T, s *CSVSink) { writeRows(t, s, row, 0, 20_000) },
			map[string][]int{"t.csv": span(0, 20_000)}},
		{"two parts", func(t *testing.T, s *CSVSink) { writeRows(t, s, row, 0, MaxCSVRows+3) },
			map[string][]int{"t" + stamp + "_part_1.csv": span(0, MaxCSVRows), "t" + stamp + "_part_2.csv": span(MaxCSVRows, MaxCSVRows+3)}},
		{"two parts, rows in place", func(t *testing.T, s *CSVSink) { writeGroups(t, s, row, 0, MaxCSVRows+3, 7) },
			map[string][]int{"t" + stamp + "_part_1.csv": span(0, MaxCSVRows), "t" + stamp + "_part_2.csv": span(MaxCSVRows, MaxCSVRows+3)}},
		{"a part filled in place", func(t *testing.T, s *CSVSink) { writeGroups(t, s, row, 0, MaxCSVRows+3, 8) },
			map[string][]int{"t" + stamp + "_part_1.csv": span(0, MaxCSVRows), "t" + stamp + "_part_2.csv": span(MaxCSVRows, MaxCSVRows+3)}},
		{"a part filled in runs", func(t *testing.T, s *CSVSink) { writeGroups(t, s, longRow, 0, MaxCSVRows+70, 40) },
			map[string][]int{"t" + stamp + "_part_1.csv": span(0, MaxCSVRows), "t" + stamp + "_part_2.csv": span(MaxCSVRows, MaxCSVRows+70)}},
		{"one part, rows in place", func(t *testing.T, s *CSVSink) { writeGroups(t, s, row, 0, 20_000, 3) },
			map[string][]int{"t.csv": span(0, 20_000)}},
		{"reset", resetAfter(0, 20_000, 7, 9), map[string][]int{"t.csv": span(7, 9)}},
		{"reset after parts", resetAfter(0, MaxCSVRows+3, 1, 2), map[string][]int{"t.csv": span(1, 2)}},
		{"drop", func(t *testing.T, s *CSVSink) {
			writeRows(t, s, row, 0, 20_000)
			s.Drop()
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if testing.Short() && strings.Contains(tc.name, "parts") {
				t.Skip("a million rows: not in -short")
			}
			dir, es := writeTable(t, func(set *output.Set, dir string) (*CSVSink, error) {
				return NewCSVSink(set, dir, output.Name{Prefix: "t", Suffix: ".csv"})
			}, header, tc.write, tc.want != nil, at)
			var names, wantNames []string
			for _, e := range es {
				names = append(names, e.Name())
			}
			for n := range tc.want {
				wantNames = append(wantNames, n)
			}
			slices.Sort(wantNames)
			if !slices.Equal(names, wantNames) {
				t.Fatalf("files %q, want %q", names, wantNames)
			}
			for n, rows := range tc.want {
				var want strings.Builder
				want.WriteString("NPU Name,Bench Name\n")
				for _, i := range rows {
					if strings.Contains(tc.name, "runs") {
						want.WriteString(longRow(i))
					} else {
						want.WriteString(row(i))
					}
				}
				got, err := os.ReadFile(filepath.Join(dir, n))
				if err != nil {
					t.Fatal(err)
				}
				if string(got) != want.String() {
					t.Fatalf("%s: %d bytes, want %d (the rows written since the header or the last Reset)", n, len(got), want.Len())
				}
			}
		})
	}
}

// tableSink is a table's sink as TestCSVSink and TestXLSXSink drive it.
type tableSink interface {
	Header(cols []string) error
	Finish() error
}

// writeTable starts a sink (newSink) in a set over a new folder, gives
// it header, has write fill it, finishes it when finish, commits the set
// stamped at, and returns the folder and the files in it.
func writeTable[S tableSink](t *testing.T, newSink func(*output.Set, string) (S, error), header []string, write func(*testing.T, S), finish bool, at time.Time) (string, []os.DirEntry) {
	t.Helper()
	dir := t.TempDir()
	set := output.NewSet()
	s, err := newSink(set, dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Header(header); err != nil {
		t.Fatal(err)
	}
	write(t, s)
	if finish {
		if err := s.Finish(); err != nil {
			t.Fatal(err)
		}
	}
	if err := set.Commit(at); err != nil {
		t.Fatal(err)
	}
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return dir, es
}

func writeRows(t *testing.T, s *CSVSink, row func(int) string, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		if err := s.Line([]byte(row(i)), RowMark{}); err != nil {
			t.Fatal(err)
		}
	}
}

// writeGroups writes rows [from, to) in groups of n as the join writes
// them inline (putRuns): in place when they go to one part, else by Line.
func writeGroups(t *testing.T, s *CSVSink, row func(int) string, from, to, n int) {
	t.Helper()
	for i := from; i < to; i += n {
		k := min(n, to-i)
		err := putRuns(s, k, func(b []byte, j int) []byte { return append(b, row(i+j)...) },
			func(j int) error { return s.Line([]byte(row(i+j)), RowMark{}) })
		if err != nil {
			t.Fatal(err)
		}
	}
}

func span(from, to int) []int {
	out := make([]int, 0, to-from)
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}
