package compare

import "testing"

func TestProgressBar(t *testing.T) {
	for _, c := range []struct {
		done, total int64
		want        string
	}{
		{0, 100 << 20, "[..............................]   0% 0/100 MB"},
		{50 << 20, 100 << 20, "[###############...............]  50% 50/100 MB"},
		{200 << 20, 100 << 20, "[##############################] 100% 100/100 MB"}, // read past the size it had: capped
		{5 << 20, 0, "5 MB"},
		// a small dump read "100% 0/0 MB"
		{300 << 10, 300 << 10, "[##############################] 100% 300/300 KB"},
		{1000, 300 << 10, "[..............................]   0% 1/300 KB"},
		// a multi-GB dump
		{1 << 30, 3 << 30, "[##########....................]  33% 1.0/3.0 GB"},
		{3 << 29, 0, "1.5 GB"},
	} {
		if got := progressBar(c.done, c.total); got != c.want {
			t.Errorf("progressBar(%d, %d) = %q, want %q", c.done, c.total, got, c.want)
		}
	}
}
