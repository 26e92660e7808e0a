package compare

import (
	"cmp"
	"strings"
	"sync"
	"unsafe"

	"github.com/layermap/layermap/printparse/msprobe"
)

// dumpNames is what the N:1 plan needs of one dump's entries without
// parsing them: every name in file order with its compare-key prefix
// (renumbered for backward entries), each module's calls per direction,
// and construct.json's parents. It is built only for runs that compare
// groups.
type dumpNames struct {
	names     *msprobe.Names
	prefix    map[int32]string      // renumbered compare-key prefixes
	calls     map[moduleDir][]int32 // a module's entries of a direction, file order
	construct string                // construct.json ("" without one)
	parents   *msprobe.ParentIndex  // construct.json, read on first use
	kids      map[string][]int32    // parent entry -> API entries called in it (built on first use)
	err       error
}

// readNames skims a dump.json (and reads construct.json beside it);
// known, when not nil, are its names as SkimExact gives them.
func readNames(p msprobe.Paths, cfg *Config, known *msprobe.Names) (*dumpNames, error) {
	d := &dumpNames{prefix: map[int32]string{}, calls: map[moduleDir][]int32{}}
	namer := newKeyNamer(!cfg.Fuzzy, cfg.Debug)
	defer func() { namer.release() }()
	reset := func() { // a "data" repeating keys: read again as Python does
		d = &dumpNames{prefix: map[int32]string{}, calls: map[moduleDir][]int32{}}
		namer.release()
		namer = newKeyNamer(!cfg.Fuzzy, cfg.Debug)
	}
	// index keeps nothing of name, which is read in place: a renumbered
	// prefix is a string of its own, and a module's path and direction
	// are copied once (a map assignment keeps the key it is given)
	kept := map[string]string{}
	keep := func(s string) string {
		k, ok := kept[s]
		if !ok {
			k = strings.Clone(s)
			kept[k] = k
		}
		return k
	}
	index := func(i int32, name string) {
		ek, ok := namer.entryKey(name)
		if ok && ek.renumbered {
			d.prefix[i] = ek.prefix
		}
		if path, _, dir, ok := msprobe.ModuleEntry(name); ok {
			k := moduleDir{keep(path), keep(dir)}
			d.calls[k] = append(d.calls[k], i)
		}
	}
	if known != nil {
		d.names = known // read only: shared, not copied
		for i, name := range known.All() {
			index(int32(i), name)
		}
	} else {
		if _, err := msprobe.SkimExact(p.DumpJSON, reset, func(e *msprobe.SkimEntry) error {
			if d.names == nil {
				d.names = &msprobe.Names{}
			}
			index(int32(d.names.Len()), unsafe.String(unsafe.SliceData(e.Name), len(e.Name)))
			d.names.Add(e.Name)
			return nil
		}); err != nil {
			return nil, err
		}
		d.names.Done()
	}
	d.construct = p.ConstructJSON
	return d, nil
}

// readBothNames reads the names of both dumps (readNames), one goroutine
// a side; the NPU side's error comes first. known are the names of each
// side as SkimExact gives them, nil where not known.
func readBothNames(np, bp msprobe.Paths, cfg *Config, known [2]*msprobe.Names) (nn, bn *dumpNames, err error) {
	var bErr error
	var wg sync.WaitGroup
	wg.Go(func() { bn, bErr = readNames(bp, cfg, known[1]) })
	nn, err = readNames(np, cfg, known[0])
	wg.Wait()
	if err = cmp.Or(err, bErr); err != nil {
		return nil, nil, err
	}
	return nn, bn, nil
}

// name is entry i's name.
func (d *dumpNames) name(i int32) string { return d.names.At(int(i)) }

// keyPrefix is entry i's compare-key prefix.
func (d *dumpNames) keyPrefix(i int32) string {
	if p, ok := d.prefix[i]; ok {
		return p
	}
	return d.name(i)
}

// moduleCalls lists a module's entries of one direction ("forward",
// "backward", "parameters_grad") in file order.
func (d *dumpNames) moduleCalls(path, dir string) []int32 { return d.calls[moduleDir{path, dir}] }

// moduleDir is a module path and a direction.
type moduleDir struct{ path, dir string }

// callOf returns the position of the module entry named entry among the
// calls of its module in direction dir (the last, for a repeated name),
// or -1.
func (d *dumpNames) callOf(entry, path, dir string) int {
	calls := d.moduleCalls(path, dir)
	for k := len(calls) - 1; k >= 0; k-- {
		if d.names.Is(int(calls[k]), entry) {
			return k
		}
	}
	return -1
}

// apiChildren lists the API entries construct.json places directly in
// entry (not modules), by API and direction ("Functional.linear|forward"),
// each list in file order.
func (d *dumpNames) apiChildren(entry string) map[string][]int32 {
	if d.construct == "" || d.err != nil {
		return nil
	}
	if d.kids == nil {
		if d.parents, d.err = msprobe.ReadParentIndex(d.construct); d.err != nil {
			return nil
		}
		d.kids = map[string][]int32{}
		for i, n := range d.names.All() { // a parent is a string of its own
			if !isModule(n) {
				if par := d.parents.Parent(n); par != "" {
					d.kids[par] = append(d.kids[par], int32(i))
				}
			}
		}
	}
	out := map[string][]int32{}
	for _, c := range d.kids[entry] {
		k := apiKey(d.name(c))
		out[k] = append(out[k], c)
	}
	return out
}

// siblings lists the modules with calls in direction dir whose path has
// the same parent path as path (path excluded), in the order of their
// first call.
func (d *dumpNames) siblings(path, dir string) []string {
	parent := ""
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		parent = path[:i+1]
	}
	type first struct {
		path string
		at   int32
	}
	var out []first
	for k, calls := range d.calls {
		p, dr := k.path, k.dir
		if dr != dir || p == path || !strings.HasPrefix(p, parent) || strings.Contains(p[len(parent):], ".") {
			continue
		}
		out = append(out, first{p, calls[0]})
	}
	// file order of the first calls
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].at < out[j-1].at; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	paths := make([]string, len(out))
	for i, f := range out {
		paths[i] = f.path
	}
	return paths
}
