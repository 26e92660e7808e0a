// Command layermap drafts, validates and applies msprobe layer_mapping.yaml
// files for comparing two training runs of the same model.
package main

import (
	"os"

	"github.com/layermap/layermap/cmd"
	"github.com/layermap/layermap/cmd/iostreams"
)

func main() {
	os.Exit(cmd.Run(iostreams.System(), os.Args[1:]))
}
