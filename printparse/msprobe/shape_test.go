package msprobe

import (
	"fmt"
	"testing"
)

func TestParseShape(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string // fmt of the dims, "bad" for !ok
	}{
		{"[4, 2048]", "[4 2048]"},
		{"[]", "[]"},
		{" [ 1 ,2 ] ", "[1 2]"},
		{"(3,)", "[3]"},
		{"(2, 2)", "[2 2]"},
		{"()", "[]"},
		{"[3,]", "bad"},
		{"[-1]", "bad"},
		{"[+1]", "bad"},
		{"[a]", "bad"},
		{"None", "bad"},
		{"", "bad"},
		{"[4, 2)", "bad"},
	} {
		d, ok := ParseShape(tc.in)
		got := fmt.Sprint(d)
		if !ok {
			got = "bad"
		}
		if got != tc.want {
			t.Errorf("ParseShape(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
	for _, d := range [][]int{nil, {}, {7}, {4, 2048, 1}} {
		s := FormatShape(d)
		back, ok := ParseShape(s)
		if !ok || fmt.Sprint(back) != fmt.Sprint(append([]int{}, d...)) {
			t.Errorf("FormatShape(%v) = %q reads back as %v, %v", d, s, back, ok)
		}
	}
	if s := FormatShape([]int{4, 2048}); s != "[4, 2048]" {
		t.Errorf("FormatShape = %q, want Python's str of the list", s)
	}
}
