package msprobe

import (
	"strconv"
	"strings"
)

// ParseShape reads a shape as msprobe writes it: Python's str of a list
// ("[4, 2048]", "[]"; a tensor's shape) or of a tuple ("(3,)", "()"; a
// slice's, see appendNPShape). ok is false for anything else: None, text,
// an empty or negative size.
func ParseShape(s string) (dims []int, ok bool) {
	s = strings.TrimSpace(s)
	if len(s) < 2 {
		return nil, false
	}
	tuple := s[0] == '(' && s[len(s)-1] == ')'
	if !tuple && (s[0] != '[' || s[len(s)-1] != ']') {
		return nil, false
	}
	body := strings.TrimSpace(s[1 : len(s)-1])
	if tuple {
		body = strings.TrimSuffix(body, ",") // "(3,)"
	}
	dims = []int{}
	if body == "" {
		return dims, true
	}
	for f := range strings.SplitSeq(body, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 0 || f == "" || f[0] == '+' || f[0] == '-' {
			return nil, false
		}
		dims = append(dims, n)
	}
	return dims, true
}

// FormatShape writes a shape as msprobe writes a tensor's: Python's str
// of a list of ints.
func FormatShape(dims []int) string {
	b := make([]byte, 0, 2+8*len(dims))
	b = append(b, '[')
	for i, n := range dims {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = strconv.AppendInt(b, int64(n), 10)
	}
	return string(append(b, ']'))
}
