package resolve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/layermap/layermap/printparse"
	"github.com/layermap/layermap/printparse/msprobe"
	"github.com/layermap/layermap/printparse/source"
)

// ReadDumpInput reads what layer mapping needs from a dump folder (a rank
// folder, a dump.json, or a step folder with one rank): the entry names of
// dump.json in order, construct.json and stack.json loaded raw as msprobe's
// get_stack_construct_by_dump_json_path does (a new-format stack.json
// therefore gives no stack entries), and the framework.
func ReadDumpInput(path string) (DumpInput, error) {
	in, _, err := readDump(path, false)
	return in, err
}

// readDump is ReadDumpInput; with rows it also returns the row names of
// every entry, read in the same pass over dump.json when the file has no
// entries Scan leaves out.
func readDump(path string, rows bool) (DumpInput, *rowTable, error) {
	fail := func(err error) (DumpInput, *rowTable, error) { return DumpInput{}, nil, err }
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
	var rt *rowTable
	if rows {
		var names []string
		reset := func() { rt, names = newRowTable(), nil }
		reset()
		h, repeats, err := msprobe.ScanFileExactReuse(paths.DumpJSON, reset, func(e *msprobe.Entry) error {
			name := strings.Clone(e.Name)
			rt.add(name, e)
			names = append(names, name)
			return nil
		})
		if err != nil {
			return fail(err)
		}
		rt.done()
		if len(h.Skipped) == 0 && !h.FrameworkMissing && (h.Framework == "pytorch" || h.Framework == "mindspore") {
			in.Names, in.Framework, in.allNames = names, h.Framework, !repeats
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
		if in.Construct, err = msprobe.ReadConstructSized(paths.ConstructJSON, len(in.Names)); err != nil {
			return fail(err)
		}
		in.ConstructEmpty = len(in.Construct) == 0
	}
	if paths.StackJSON != "" {
		if in.Stack, in.StackEmpty, err = readStackRaw(paths.StackJSON, in.Names); err != nil {
			return fail(err)
		}
	}
	return in, rt, nil
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
	items, err := ItemsFromDump(in)
	if err != nil {
		return nil, err
	}
	return TrieFromItems(in.Source, items), nil
}

// dumpTree is printparse.LoadDumpDir of the folder in was read from,
// built from in's names and construct.json when they are what
// LoadDumpDir reads.
func dumpTree(in DumpInput) (*printparse.Tree, error) {
	if !in.allNames || in.Paths.Debug || in.Paths.ConstructJSON == "" {
		return printparse.LoadDumpDir(in.path)
	}
	return printparse.DumpTreeOf(in.path, in.Source, in.Names, in.Construct, nil)
}

// readDumpNames returns the keys of dump.json's "data" in order and the
// framework (msprobe.DetectFramework).
func readDumpNames(path string) ([]string, string, error) {
	names, err := msprobe.EntryNames(path)
	if err != nil {
		return nil, "", err
	}
	fw, err := msprobe.DetectFramework(path)
	if err != nil {
		return nil, "", err
	}
	return names, fw, nil
}

// readStackRaw loads stack.json as msprobe's layer mapping does: a plain
// object whose values are looked up by entry name. Only the values of
// names are kept (a grouped stack.json has none). empty reports an object
// without members (or null).
func readStackRaw(path string, names []string) (_ map[string]StackEntry, empty bool, _ error) {
	data, err := source.ReadFile(path, source.MaxTreeJSON)
	if err != nil {
		return nil, false, fmt.Errorf("read: %w", err)
	}
	if err := source.CheckUTF8(path, data); err != nil {
		return nil, false, err
	}
	raw, members, ok := stackMembers(data, names)
	if !ok {
		// not an object (or not JSON): json.Unmarshal's reading, or error
		var m map[string]json.RawMessage
		if err := json.Unmarshal(data, &m); err != nil {
			return nil, false, source.JSONError(path, data, "a JSON object", err)
		}
		raw, members = map[string][]byte{}, len(m)
		for _, k := range names {
			if v, ok := m[k]; ok {
				raw[k] = v
			}
		}
	}
	out := make(map[string]StackEntry, len(raw))
	for k, v := range raw {
		e := StackEntry{Raw: strings.TrimSpace(string(v))}
		var frames []string
		if err := json.Unmarshal(v, &frames); err == nil && e.Raw != "null" {
			e.Frames, e.Valid = frames, true
		}
		if jsonFalsy(e.Raw) {
			e.Valid, e.Frames = true, nil
		}
		out[k] = e
	}
	return out, members == 0, nil
}

// stackMembers reads a JSON object as json.Unmarshal into a map of raw
// values does, without copying the values: the text of the values of the
// keys among names (a repeated key's last), and whether it has members.
// ok is false when data is not valid JSON or not an object.
func stackMembers(data []byte, names []string) (raw map[string][]byte, members int, ok bool) {
	if !json.Valid(data) {
		return nil, 0, false
	}
	i := skipSpace(data, 0)
	if data[i] != '{' {
		return nil, 0, false
	}
	// Wanted keys: the names. Grouped files have keys without a '.', as
	// names seldom are: the set of all names is made only for a key with a
	// '.'.
	var all map[string]bool
	dotless := map[string]bool{}
	for _, n := range names {
		if strings.IndexByte(n, '.') < 0 {
			dotless[n] = true
		}
	}
	want := func(k string) bool {
		if strings.IndexByte(k, '.') < 0 {
			return dotless[k]
		}
		if all == nil {
			all = make(map[string]bool, len(names))
			for _, n := range names {
				all[n] = true
			}
		}
		return all[k]
	}
	raw = map[string][]byte{}
	// data is valid JSON: each member is a string key, ':', a value, and
	// ',' or '}' (whitespace between).
	for i = skipSpace(data, i+1); data[i] != '}'; members++ {
		end := stringEnd(data, i)
		key := string(data[i+1 : end-1])
		if bytes.IndexByte(data[i:end], '\\') >= 0 {
			if err := json.Unmarshal(data[i:end], &key); err != nil {
				return nil, 0, false
			}
		}
		i = skipSpace(data, skipSpace(data, end)+1)
		vend := valueEnd(data, i)
		if want(key) {
			raw[key] = data[i:vend]
		}
		if i = skipSpace(data, vend); data[i] == ',' {
			i = skipSpace(data, i+1)
		}
	}
	return raw, members, true
}

// skipSpace returns the index of the first byte at or after i that is not
// JSON whitespace.
func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\n' || data[i] == '\t' || data[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the index after the string that starts at i (valid
// JSON).
func stringEnd(data []byte, i int) int {
	for i++; ; {
		j := bytes.IndexAny(data[i:], `"\`)
		if data[i+j] == '"' {
			return i + j + 1
		}
		i += j + 2 // an escape: its next byte is never the closing quote
	}
}

// valueEnd returns the index after the value that starts at i (valid
// JSON).
func valueEnd(data []byte, i int) int {
	switch data[i] {
	case '"':
		return stringEnd(data, i)
	case '{', '[':
		depth := 0
		for {
			j := bytes.IndexAny(data[i:], `"{}[]`)
			i += j
			switch data[i] {
			case '"':
				i = stringEnd(data, i)
				continue
			case '{', '[':
				depth++
			default:
				if depth--; depth == 0 {
					return i + 1
				}
			}
			i++
		}
	}
	for i < len(data) && !strings.ContainsRune(",}] \n\t\r", rune(data[i])) {
		i++
	}
	return i
}

// jsonFalsy reports whether Python would find the JSON value falsy.
func jsonFalsy(raw string) bool {
	switch strings.Join(strings.Fields(raw), "") {
	case "null", `""`, "[]", "{}", "0", "false", "0.0":
		return true
	}
	return false
}
