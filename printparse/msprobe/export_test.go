package msprobe

import "io"

// ScanSequential is Scan without the decoding goroutine, for benchmarks.
func ScanSequential(r io.Reader, source string, fn func(*Entry) error) (Header, error) {
	return scan(r, source, nil, fn, scanMode{})
}

// ScanSequentialFlat is ScanSequential with the fast path of the
// flattening (flat.go) on or off.
func ScanSequentialFlat(r io.Reader, source string, flat bool, fn func(*Entry) error) (Header, error) {
	return scan(r, source, nil, fn, scanMode{noFlat: !flat})
}

// SkimSequential is Skim without skimming ahead, for benchmarks.
func SkimSequential(path string, fn func(*SkimEntry) error) (Header, error) {
	return skimWith(path, nil, skimWorkers{n: 1}, fn)
}

// RowNamesDiffer reports how scanning data for its rows' names only
// differs from the full scan (see ScanFileRowNames), "" when it does not.
func RowNamesDiffer(data []byte, name string) string { return rowNamesDiffer(data, name) }
