package printparse

import "testing"

func TestIndexRange(t *testing.T) {
	tests := []struct {
		ids  []int
		want string
	}{
		{[]int{3}, "3"},
		{[]int{3, 3}, "3"},
		{[]int{0, 1, 2, 3}, "{0-3}"},
		{[]int{3, 0, 2, 1}, "{0-3}"},
		{[]int{0, 2, 5, 6, 7}, "{0,2,5-7}"},
		{[]int{0, 2, 4}, "{0,2,4}"},
		{[]int{5, 6, 0, 1, 9}, "{0-1,5-6,9}"},
	}
	for _, tc := range tests {
		if got := IndexRange(tc.ids); got != tc.want {
			t.Errorf("IndexRange(%v) = %q, want %q", tc.ids, got, tc.want)
		}
	}
}
