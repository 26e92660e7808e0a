package dumpgen

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
)

// Shuffle writes dstDir/dump.json: srcDir's dump.json with the members of
// its "data" object in a random order (seed), every value and the other
// top-level members as they are. It is a dump whose entries come in an
// order of their own, as a bench dump does whose framework or schedule
// orders the calls otherwise than the NPU side's. The dump is held
// parsed while it is written: about seven times its size.
func Shuffle(srcDir, dstDir string, seed uint64) error {
	d, err := readJSON(filepath.Join(srcDir, "dump.json"))
	if err != nil {
		return err
	}
	if d.kind != '{' {
		return errors.New("dump.json: expected an object")
	}
	rng := rand.New(rand.NewPCG(seed, 0x5f1e))
	for i, k := range d.keys {
		if data := d.vals[i]; k == "data" && data.kind == '{' {
			rng.Shuffle(len(data.keys), func(a, b int) {
				data.keys[a], data.keys[b] = data.keys[b], data.keys[a]
				data.vals[a], data.vals[b] = data.vals[b], data.vals[a]
			})
		}
	}
	if err := os.MkdirAll(dstDir, 0o755); err != nil {
		return err
	}
	return writeFile(filepath.Join(dstDir, "dump.json"), func(w *scaler) { w.value(d) })
}
