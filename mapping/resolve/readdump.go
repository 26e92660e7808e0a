package resolve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/layermap/layermap/printparse"
	"github.com/layermap/layermap/printparse/msprobe"
	"github.com/layermap/layermap/printparse/offheap"
	"github.com/layermap/layermap/printparse/source"
)

// ReadDumpInput reads what layer mapping needs from a dump folder (a rank
// folder, a dump.json, or a step folder with one rank): the entry names of
// dump.json in order, construct.json and stack.json loaded raw as msprobe's
// get_stack_construct_by_dump_json_path does (a new-format stack.json
// therefore gives no stack entries), and the framework.
func ReadDumpInput(path string) (DumpInput, error) {
	in, _, _, err := readDump(path, noRows)
	return in, err
}

// rowsMode is what readDump reads of dump.json besides the entry names.
type rowsMode uint8

const (
	noRows   rowsMode = iota // the names only (msprobe.EntryNames)
	withRows                 // the rows' names too (a rowTable), in the same pass
	// rowsLater reads the names, offsets and odd flags with a skim and
	// leaves the rows to whoever reads the file next; it reads withRows
	// where the skim cannot stand in for the scan (see skimEntries).
	rowsLater
)

// readDump is ReadDumpInput; withRows it also returns the row names of
// every entry, read in the same pass over dump.json when the file has no
// entries Scan leaves out; rowsLater, either those or the skim's entries.
func readDump(path string, mode rowsMode) (DumpInput, *rowTable, *skimmed, error) {
	fail := func(err error) (DumpInput, *rowTable, *skimmed, error) { return DumpInput{}, nil, nil, err }
	dir, err := msprobe.FindRankDir(path)
	if err != nil {
		return fail(err)
	}
	paths, err := msprobe.Locate(dir)
	if err != nil {
		return fail(err)
	}
	in := DumpInput{Source: dir, Paths: paths, path: path}
	if paths.StackJSON == "" && paths.ConstructJSON == "" {
		in.ConstructEmpty, in.StackEmpty = true, true
	} else if paths.StackJSON == "" || paths.ConstructJSON == "" {
		missing, have := "construct.json", "stack.json"
		if paths.StackJSON == "" {
			missing, have = have, missing
		}
		return fail(fmt.Errorf("%s: expected %s beside %s (msprobe refuses a folder with only one of them), found none", dir, missing, have))
	}
	var sk *skimmed
	if mode == rowsLater {
		if sk, err = skimEntries(paths); err != nil {
			return fail(err)
		}
		if sk != nil {
			in.Names, in.Framework, in.allNames, in.noRepeats = sk.names, sk.framework, true, true
		} else {
			mode = withRows
		}
	}
	var rt *rowTable
	if mode == withRows {
		var h msprobe.Header
		var repeats bool
		if rt, h, repeats, err = scanRowTable(paths.DumpJSON); err != nil {
			return fail(err)
		}
		names := msprobe.NamesOf(rt.done())
		if len(h.Skipped) == 0 && !h.FrameworkMissing && (h.Framework == "pytorch" || h.Framework == "mindspore") {
			in.Names, in.Framework, in.allNames, in.scanned = names, h.Framework, !repeats, !paths.Debug
		}
		in.noRepeats = !repeats
	}
	if in.Names == nil {
		if in.Names, in.Framework, err = readDumpNames(paths.DumpJSON); err != nil {
			return fail(err)
		}
		in.allNames = true
	}
	if paths.ConstructJSON != "" {
		if in.Parents, err = msprobe.ReadParentIndexOf(paths.ConstructJSON, in.Names); err != nil {
			return fail(err)
		}
		in.ConstructEmpty = in.Parents.Len() == 0
	}
	if paths.StackJSON != "" {
		if in.Stack, in.StackEmpty, err = readStackRaw(paths.StackJSON, in.Names); err != nil {
			return fail(err)
		}
	}
	return in, rt, sk, nil
}

// scanRowTable reads the rows' names of every entry of a dump.json (a
// "data" repeating keys as json.load reads it) into a table not yet done.
func scanRowTable(path string) (_ *rowTable, _ msprobe.Header, repeats bool, _ error) {
	var rt *rowTable
	reset := func() { rt = newRowTable() }
	reset()
	h, repeats, err := msprobe.ScanFileRowNames(path, reset, func(e *msprobe.Entry) error {
		rt.add(strings.Clone(e.Name), e)
		return nil
	})
	return rt, h, repeats, err
}

// skimmed is a dump.json's entries as a skim gives them, for a side whose
// rows are read by the compare's own pass over the file.
type skimmed struct {
	names     *msprobe.Names
	offs      []int64 // off the heap: it would count twice there, in the goal
	odd       []bool  // all false (a file with an odd entry is scanned); off the heap too
	framework string
}

// skimEntries skims a dump.json for its entries where the skim gives
// what the names-only scan would, and the rows can be left to a later
// reader: a dump.json (not a debug.json) that repeats no key, states its
// framework, and has no odd entry (every row is its entry's name followed
// by a structural suffix). nil: scan the file instead. The skim checks
// the structure around the bodies, not the bodies: their syntax errors
// are the later reader's to find.
func skimEntries(paths msprobe.Paths) (*skimmed, error) {
	if paths.Debug {
		return nil, nil
	}
	sk, later, err := skimDump(paths.DumpJSON)
	if !later || err != nil {
		return nil, err
	}
	return sk, nil
}

// skimDump skims a dump.json whole: its entry names (as msprobe.SkimExact
// leaves them, read again after a repeated key) and their keys' offsets,
// and whether the rows can be left to a later reader (skimEntries: no key
// repeated, a framework stated, no odd entry; offs, odd and framework
// are then set, offs and odd off the heap).
func skimDump(path string) (sk *skimmed, later bool, err error) {
	sk = &skimmed{names: &msprobe.Names{}}
	repeats, odd := false, false
	var offs offheap.List[int64]
	defer offs.Release()
	h, err := msprobe.SkimExact(path, func() {
		repeats = true
		sk.names = &msprobe.Names{}
		offs.Release()
	}, func(e *msprobe.SkimEntry) error {
		odd = odd || e.Odd
		sk.names.Add(e.Name)
		offs.Add(e.Offset)
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	sk.names.Done()
	if repeats || odd || h.FrameworkMissing || h.Framework != "pytorch" && h.Framework != "mindspore" {
		return sk, false, nil
	}
	var freeOffs, freeOdd func()
	sk.offs, freeOffs = offs.Table()
	sk.odd, freeOdd = offheap.Make[bool](sk.names.Len())
	offheap.Cleanup(sk, freeOffs)
	offheap.Cleanup(sk, freeOdd)
	sk.framework = h.Framework
	return sk, true, nil
}

// SkimEntries skims the dump.json at path once for its entry names, as
// msprobe.SkimExact gives them, and for its entries (the names, the
// offsets of their keys, no odd one) where a reader may leave the rows to
// compare's pass over the file as it leaves them to its own skim: nil
// where skimEntries says the file must be scanned instead (a "data" that
// repeats keys, an odd entry, no framework).
func SkimEntries(path string) (*msprobe.Names, *Entries, error) {
	sk, later, err := skimDump(path)
	if err != nil {
		return nil, nil, err
	}
	if !later {
		return sk.names, nil, nil
	}
	return sk.names, &Entries{Names: sk.names, Offsets: sk.offs, Odd: sk.odd, skim: sk}, nil
}

// TrieFromDump builds the scope trie msprobe builds from one dump folder:
// every dump.json entry parsed into its full scope (construct.json parents,
// old-format stack.json frames), backward entries on their forward twin's
// scope, ParallelTransformer layers rebased.
func TrieFromDump(path string) (*Trie, error) {
	in, err := ReadDumpInput(path)
	if err != nil {
		return nil, err
	}
	return trieFromInput(in)
}

func trieFromInput(in DumpInput) (*Trie, error) {
	d, err := parseDump(in)
	if err != nil {
		return nil, err
	}
	if d == nil {
		return NewTrie(in.Source), nil
	}
	return trieOfDump(in.Source, d), nil
}

// dumpTree is printparse.LoadDumpDir of the folder in was read from,
// built from in's names and construct.json when they are what
// LoadDumpDir reads.
func dumpTree(in DumpInput) (*printparse.Tree, error) {
	if !in.allNames || in.Paths.Debug || in.Paths.ConstructJSON == "" {
		return printparse.LoadDumpDir(in.path)
	}
	return printparse.DumpTreeOf(in.path, in.Source, in.Names, in.Parents, nil)
}

// readDumpNames returns the keys of dump.json's "data" in order and the
// framework (msprobe.DetectFramework).
func readDumpNames(path string) (*msprobe.Names, string, error) {
	names, err := msprobe.EntryNames(path)
	if err != nil {
		return nil, "", err
	}
	fw, err := msprobe.DetectFramework(path)
	if err != nil {
		return nil, "", err
	}
	return msprobe.NamesOf(names), fw, nil
}

// readStackRaw loads stack.json as msprobe's layer mapping does: a plain
// object whose values are looked up by entry name. Only the values of
// names are kept (a grouped stack.json has none). empty reports an object
// without members (or null).
func readStackRaw(path string, names *msprobe.Names) (_ map[string]StackEntry, empty bool, _ error) {
	out := map[string]StackEntry{}
	// A stack.json of the per-entry format repeats a few stacks for all
	// of a dump's entries: each distinct value is decoded once, and its
	// entry shared (read only).
	seen := map[string]StackEntry{}
	add := func(k string, v []byte) {
		e, ok := seen[string(v)]
		if !ok {
			e = stackEntry(v)
			seen[string(v)] = e
		}
		out[k] = e
	}
	empty, ok := stackMembers(path, names, add)
	if !ok {
		// not an object (or not JSON): read whole for the error
		data, err := source.ReadFile(path, source.MaxTreeJSON)
		if err != nil {
			return nil, false, fmt.Errorf("read: %w", err)
		}
		if err := source.CheckUTF8(path, data); err != nil {
			return nil, false, err
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(data, &m); err != nil {
			return nil, false, source.JSONError(path, data, "a JSON object", err)
		}
		clear(out)
		empty = len(m) == 0
		for i := range names.Len() {
			k := names.At(i)
			if v, ok := m[k]; ok {
				add(k, v)
			}
		}
	}
	return out, empty, nil
}

// stackEntry decodes one stack.json value.
func stackEntry(v []byte) StackEntry {
	e := StackEntry{Raw: strings.TrimSpace(string(v))}
	var frames []string
	if err := json.Unmarshal(v, &frames); err == nil && e.Raw != "null" {
		e.Frames, e.Valid = frames, true
	}
	if jsonFalsy(e.Raw) {
		e.Valid, e.Frames = true, nil
	}
	return e
}

// wantedKeys tells whether a stack.json key is among names.
func wantedKeys(names *msprobe.Names) func(key string) bool {
	return func(k string) bool {
		_, ok := names.Find(k)
		return ok
	}
}

// decodeKey decodes a JSON key as written (quotes kept) as
// json.Unmarshal does; ok is false where it cannot.
func decodeKey(k []byte) (key string, ok bool) {
	if bytes.IndexByte(k, '\\') < 0 {
		return string(k[1 : len(k)-1]), true
	}
	err := json.Unmarshal(k, &key)
	return key, err == nil
}

// stackMembers reads stack.json, a JSON object, as json.load does, once
// and without holding it (tens of MB, where a grouped file has no value
// any name wants): it calls fn with each key among names and the text of
// its value (valid until fn returns), in file order (a repeated key's
// last comes last), and reports whether the object has no member. ok is
// false when the file is not one object in valid JSON and UTF-8 (the
// lexer's reading: JSON and Python's bare NaN and Infinity), or cannot
// be read (what fn was given is then moot).
func stackMembers(path string, names *msprobe.Names, fn func(key string, v []byte)) (empty, ok bool) {
	f, err := source.Open(path, source.MaxTreeJSON)
	if err != nil {
		return false, false
	}
	defer f.Close()
	want := wantedKeys(names)
	empty, bad := true, false
	var buf []byte // a value the reading no longer holds
	ok = msprobe.FileMembers(f, func(k, v []byte, start, end int64) {
		empty = false
		key, kok := decodeKey(k)
		bad = bad || !kok
		if bad || !want(key) {
			return
		}
		if v == nil {
			buf = slices.Grow(buf[:0], int(end-start))[:end-start]
			if _, err := f.ReadAt(buf, start); err != nil {
				bad = true
				return
			}
			v = buf
		}
		fn(key, v)
	})
	if !ok || bad {
		return false, false
	}
	return empty, true
}

// jsonFalsy reports whether Python would find the JSON value falsy.
func jsonFalsy(raw string) bool {
	switch strings.Join(strings.Fields(raw), "") {
	case "null", `""`, "[]", "{}", "0", "false", "0.0":
		return true
	}
	return false
}
