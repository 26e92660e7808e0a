package compare

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/layermap/layermap/printparse/testkit"
)

// goldenTime turns the timestamp in a golden file name into the time the
// run must use so that our file name equals msprobe's.
func goldenTime(t testing.TB, name string) time.Time {
	t.Helper()
	base := strings.TrimSuffix(filepath.Base(name), filepath.Ext(name))
	ts := base[strings.LastIndexByte(base, '_')+1:]
	tm, err := time.ParseInLocation("20060102150405", ts, time.Local)
	if err != nil {
		t.Fatalf("timestamp in %s: %v", name, err)
	}
	return tm
}

// diffCSV reports the first lines where two CSV texts differ.
func diffCSV(t *testing.T, name string, got, want []byte) {
	t.Helper()
	if d := testkit.DiffLines(string(want), string(got), 8); d != "" {
		t.Errorf("%s differs:\n%s", name, d)
	}
}
