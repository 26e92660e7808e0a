package cmd

import "flag"

// update makes the golden-file tests of this package rewrite their goldens
// under testdata/ instead of comparing: go test ./cmd -update.
var update = flag.Bool("update", false, "rewrite the golden files under testdata/")
