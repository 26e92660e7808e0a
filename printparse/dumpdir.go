package printparse

import (
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/layermap/layermap/printparse/msprobe"
	"github.com/layermap/layermap/printparse/scan"
	"github.com/layermap/layermap/printparse/source"
)

// Load reads a model structure from path: a directory (or its dump.json,
// construct.json or debug.json) is an msprobe dump folder (LoadDumpDir), a
// file is print(model) text (ParseText), "-" is print(model) text read
// from opts.Stdin. It is the one tree loader of every command.
func Load(path string, opts Options) (*Tree, error) {
	if path == "-" {
		if opts.Stdin == nil {
			return nil, &source.Error{File: "<stdin>", Expected: "print(model) text on standard input", Found: "no input"}
		}
		data, err := source.ReadText(opts.Stdin, "<stdin>", source.MaxText, textWhat)
		if err != nil {
			return nil, err
		}
		return ParseText(data, "<stdin>", opts)
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, source.PathError(path, "a print(model) text file or an msprobe dump folder", err)
	}
	do := DumpOptions{Params: opts.DumpParams}
	isDump := st.IsDir()
	if base := filepath.Base(path); base == "dump.json" || base == "construct.json" || base == "debug.json" {
		isDump = true
	}
	if isDump && opts.Index > 0 {
		// an index picks among the dumps of a text; it was ignored here
		flag := opts.IndexFlag
		if flag == "" {
			flag = "--index"
		}
		return nil, &source.Error{File: path, Expected: flag + " 0 or none (an msprobe dump folder holds one model structure)",
			Found: fmt.Sprintf("%s %d", flag, opts.Index)}
	}
	if st.IsDir() {
		return LoadDumpDirWith(path, do)
	}
	if base := filepath.Base(path); base == "dump.json" || base == "construct.json" || base == "debug.json" {
		return LoadDumpDirWith(filepath.Dir(path), do)
	}
	data, err := source.ReadTextFile(path, source.MaxText, textWhat)
	if err != nil {
		return nil, err
	}
	return ParseText(data, path, opts)
}

// LoadDumpDir reads the module tree of an msprobe dump: a rank or proc
// folder (holding dump.json and, normally, construct.json), or a step
// folder holding exactly one rank. There is one node per module path found
// in dump.json entry names (Module.{path}.{Class}.forward.{n}, backward,
// parameters_grad; Cell. for MindSpore) and in construct.json; each node's
// class comes from its entry names, and children are in order of first
// appearance in dump.json (construct.json-only modules follow, sorted).
// Modules that no entry names (the model itself, FSDP wrappers msprobe
// skips) get an empty Class. Root is synthetic. Consecutive ModuleList
// children of identical structure share a Repeat, as PyTorch would print
// them. Params stay nil (see LoadDumpDirWith).
func LoadDumpDir(path string) (*Tree, error) { return LoadDumpDirWith(path, DumpOptions{}) }

// DumpOptions selects what LoadDumpDirWith reads besides the module names.
type DumpOptions struct {
	// Params fills Node.Params with the parameter shapes of each module's
	// first forward call. It parses every entry body, which takes about
	// 1.7 times as long as reading the names alone (a 1 GB dump.json: ~11 s
	// instead of ~6 s).
	Params bool
}

// LoadDumpDirWith is LoadDumpDir with options.
func LoadDumpDirWith(path string, o DumpOptions) (*Tree, error) {
	dir, err := msprobe.FindRankDir(path)
	if err != nil {
		return nil, err
	}
	dumpFile := filepath.Join(dir, "dump.json")
	if _, err := os.Stat(dumpFile); err != nil {
		if alt := filepath.Join(dir, "debug.json"); fileExists(alt) {
			return nil, &source.Error{File: alt, Expected: "a dump.json with module entries", Found: "debug.json (msprobe's single-point save has no module tree)"}
		}
		return nil, source.PathError(dumpFile, "the dump.json of an msprobe dump folder", err)
	}
	t := &Tree{Source: path, Kind: KindMsprobe, Root: &Node{}}
	b := treeBuilder{t: t, index: map[string]*Node{"": t.Root}}
	nEntries := -1
	if o.Params {
		// One pass gives the names in order and the parameter shapes.
		b.params = map[string]bool{}
		var hdr msprobe.Header
		reset := func() { // read again: what the first reading found goes
			t.Root, t.Warnings = &Node{}, nil
			b = treeBuilder{t: t, index: map[string]*Node{"": t.Root}, params: map[string]bool{}}
		}
		hdr, err = msprobe.ScanFileExact(dumpFile, reset, func(e *msprobe.Entry) error {
			n, err := b.addEntry(e.Name, dumpFile)
			if err != nil {
				return err
			}
			if n != nil && e.Direction == "forward" && !b.params[n.Path] {
				b.params[n.Path] = true
				n.Params = entryParams(e)
			}
			return nil
		})
		nEntries = hdr.Entries
		if err != nil {
			// msprobe's compare would refuse this file; its names may
			// still be readable. Start again from the names.
			t.Root = &Node{}
			t.Warnings = []Warning{{Msg: "no parameter shapes: " + err.Error()}}
			b = treeBuilder{t: t, index: map[string]*Node{"": t.Root}}
		}
	}
	if !o.Params || err != nil {
		names, err := msprobe.EntryNames(dumpFile)
		if err != nil {
			var de *source.Error
			if errors.As(err, &de) {
				return nil, err // "dump.json:LINE: expected ..., found ...", no prefix before it
			}
			return nil, fmt.Errorf("reading module names: %w", err)
		}
		if err := b.addNames(dumpFile, slices.All(names)); err != nil {
			return nil, err
		}
		nEntries = len(names)
	}
	constructFile := filepath.Join(dir, "construct.json")
	parents, err := msprobe.ReadParentIndex(constructFile)
	return b.finish(dumpFile, constructFile, parents, err, nEntries)
}

// DumpTreeOf is LoadDumpDir for a caller that has read the rank folder
// dir (FindRankDir of path) already: names are its dump.json keys in
// order as msprobe.EntryNames gives them, parents and constructErr what
// msprobe.ReadParentIndex (or ReadParentIndexOf) gave for its
// construct.json.
func DumpTreeOf(path, dir string, names *msprobe.Names, parents *msprobe.ParentIndex, constructErr error) (*Tree, error) {
	dumpFile := filepath.Join(dir, "dump.json")
	t := &Tree{Source: path, Kind: KindMsprobe, Root: &Node{}}
	b := treeBuilder{t: t, index: map[string]*Node{"": t.Root}}
	if err := b.addNames(dumpFile, names.All()); err != nil { // read in place: addEntry copies what it keeps
		return nil, err
	}
	return b.finish(dumpFile, filepath.Join(dir, "construct.json"), parents, constructErr, names.Len())
}

// addNames adds the modules of dump.json's keys, each with its position.
func (b *treeBuilder) addNames(dumpFile string, names iter.Seq2[int, string]) error {
	for i, name := range names {
		if _, err := b.addEntry(name, dumpFile); err != nil {
			err.Line = msprobe.EntryLine(dumpFile, i)
			return err
		}
	}
	return nil
}

// finish adds the modules construct.json names (read with err) and
// groups repeated children.
func (b *treeBuilder) finish(dumpFile, constructFile string, parents *msprobe.ParentIndex, err error, nEntries int) (*Tree, error) {
	t := b.t
	switch {
	case errors.Is(err, fs.ErrNotExist):
		t.Warnings = append(t.Warnings, Warning{Msg: "no construct.json beside " + dumpFile + ": the tree holds the modules dump.json names"})
	case err != nil:
		var se *source.Error
		if errors.As(err, &se) {
			return nil, err // "construct.json:LINE: expected ..., found ..."
		}
		return nil, fmt.Errorf("reading module parents: %w", err)
	default:
		var extra []string
		for s := range parents.Modules() {
			if p, _, _, ok := msprobe.ModuleEntry(s); ok && (b.index[p] == nil || b.index[p].Class == "") {
				extra = append(extra, strings.Clone(s))
			}
		}
		sort.Strings(extra)
		for _, s := range extra {
			if _, err := b.addEntry(s, constructFile); err != nil {
				return nil, err
			}
		}
	}
	groupRepeats(t.Root, map[*Node]string{})
	if b.modules == 0 {
		return nil, &source.Error{File: dumpFile, Expected: "module entries (`Module.{path}.{Class}.forward.{n}`; dump at level L0 or mix)",
			Found: fmt.Sprintf("none among its %d entries", nEntries)}
	}
	return t, nil
}

// entryParams reads the parameter rows of a module's forward entry.
func entryParams(e *msprobe.Entry) []Param {
	var out []Param
	for i := range e.Items {
		it := &e.Items[i]
		if it.State != "parameters" {
			continue
		}
		name := it.Name
		if k := strings.LastIndex(name, ".parameters."); k >= 0 {
			name = name[k+len(".parameters."):]
		}
		shape, _ := msprobe.ParseShape(it.Shape)
		out = append(out, Param{Name: name, Shape: shape})
	}
	return out
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

type treeBuilder struct {
	t       *Tree
	index   map[string]*Node
	modules int
	clash   map[string]bool
	params  map[string]bool // paths whose Params are read
}

// addEntry adds the module an entry names; it returns its node, or nil for
// an entry that names no module. A module nested deeper than
// source.MaxDepth is an error (its Line left for the caller to fill). It
// keeps copies of what it keeps of name, which may be read in place.
func (b *treeBuilder) addEntry(name, file string) (*Node, *source.Error) {
	path, class, _, ok := msprobe.ModuleEntry(name)
	if !ok {
		return nil, nil
	}
	if depth := strings.Count(path, ".") + 1; depth > source.MaxDepth {
		return nil, &source.Error{File: file, Expected: fmt.Sprintf("modules nested at most %d deep (no real model nests more than a few dozen levels)", source.MaxDepth),
			Found: fmt.Sprintf("entry `%s` naming a module at depth %d", scan.Clip(name), depth)}
	}
	n := b.node(path)
	switch {
	case n.Class == "":
		n.Class = strings.Clone(class)
		b.modules++
	case n.Class != class:
		if b.clash == nil {
			b.clash = map[string]bool{}
		}
		if !b.clash[path] {
			b.clash[strings.Clone(path)] = true
			b.t.Warnings = append(b.t.Warnings, Warning{Msg: fmt.Sprintf("%s: module %s is named with class %s and %s; kept %s", file, path, n.Class, class, n.Class)})
		}
	}
	return n, nil
}

// node returns the node at path, creating it and its missing ancestors.
func (b *treeBuilder) node(path string) *Node {
	if n := b.index[path]; n != nil {
		return n
	}
	path = strings.Clone(path) // kept: the caller's may be read in place
	parentPath, name := "", path
	if k := strings.LastIndexByte(path, '.'); k >= 0 {
		parentPath, name = path[:k], path[k+1:]
	}
	parent := b.node(parentPath)
	n := &Node{Name: name, Path: path, Parent: parent}
	parent.Children = append(parent.Children, n)
	b.index[path] = n
	return n
}

// groupRepeats marks runs of structurally identical consecutive children of
// ModuleLists as repeat groups, as PyTorch's ModuleList repr groups them, so
// that an msprobe tree renders and aligns like a print(model) tree.
func groupRepeats(n *Node, sig map[*Node]string) {
	for _, c := range n.Children {
		groupRepeats(c, sig)
	}
	if n.Parent == nil || !(n.Class == "ModuleList" || n.Class == "" && len(n.Children) > 1 && numericChildren(n)) {
		return
	}
	for i := 0; i < len(n.Children); {
		j := i + 1
		a, _ := scan.Atoi(n.Children[i].Name)
		for j < len(n.Children) {
			b, ok := scan.Atoi(n.Children[j].Name)
			if !ok || b != a+(j-i) || signature(n.Children[j], sig) != signature(n.Children[i], sig) {
				break
			}
			j++
		}
		if _, ok := scan.Atoi(n.Children[i].Name); ok && j-i > 1 {
			r := &Repeat{First: a, Last: a + j - i - 1, Count: j - i}
			for _, c := range n.Children[i:j] {
				c.Repeat = r
			}
		}
		i = j
	}
}

func numericChildren(n *Node) bool {
	for _, c := range n.Children {
		if _, ok := scan.Atoi(c.Name); !ok {
			return false
		}
	}
	return true
}

// signature is a node's structure without its own name: class, children's
// names and signatures.
func signature(n *Node, memo map[*Node]string) string {
	if s, ok := memo[n]; ok {
		return s
	}
	var b strings.Builder
	b.WriteString(n.Class)
	b.WriteByte('(')
	for _, c := range n.Children {
		b.WriteString(c.Name)
		b.WriteByte(':')
		b.WriteString(signature(c, memo))
		b.WriteByte(',')
	}
	b.WriteByte(')')
	memo[n] = b.String()
	return memo[n]
}
