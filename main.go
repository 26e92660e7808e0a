// Command layermap drafts, validates and applies msprobe layer_mapping.yaml
// files for comparing two training runs of the same model.
package main

import (
	"os"

	"github.com/layermap/layermap/cmd"
)

func main() {
	os.Exit(cmd.Execute(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
