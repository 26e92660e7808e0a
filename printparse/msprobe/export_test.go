package msprobe

import "io"

// ScanSequential is Scan without the decoding goroutine, for benchmarks.
func ScanSequential(r io.Reader, source string, fn func(*Entry) error) (Header, error) {
	return scan(r, source, nil, fn, false, false)
}
