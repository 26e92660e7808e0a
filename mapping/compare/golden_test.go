package compare

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"
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

// diffCSV reports the first differing cells of two CSV texts.
func diffCSV(t *testing.T, name string, got, want []byte) {
	t.Helper()
	if bytes.Equal(got, want) {
		return
	}
	gl := strings.Split(string(got), "\n")
	wl := strings.Split(string(want), "\n")
	shown := 0
	for i := 0; i < len(gl) || i < len(wl); i++ {
		var g, w string
		if i < len(gl) {
			g = gl[i]
		}
		if i < len(wl) {
			w = wl[i]
		}
		if g != w {
			t.Errorf("%s line %d:\n got: %s\nwant: %s", name, i+1, g, w)
			shown++
			if shown >= 8 {
				break
			}
		}
	}
	if len(gl) != len(wl) {
		t.Errorf("%s: %d lines, want %d", name, len(gl), len(wl))
	}
}
