package mapping

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/layermap/layermap/mapping/dump"
)

// ReadDumpInput reads what layer mapping needs from a dump folder (a rank
// folder, a dump.json, or a step folder with one rank): the entry names of
// dump.json in order, construct.json and stack.json loaded raw as msprobe's
// get_stack_construct_by_dump_json_path does (a new-format stack.json
// therefore gives no stack entries), and the framework.
func ReadDumpInput(path string) (DumpInput, error) {
	dir, err := dump.FindRankDir(path)
	if err != nil {
		return DumpInput{}, err
	}
	paths, err := dump.Locate(dir)
	if err != nil {
		return DumpInput{}, err
	}
	in := DumpInput{Source: dir}
	if paths.StackJSON == "" && paths.ConstructJSON == "" {
		in.ConstructEmpty, in.StackEmpty = true, true
	} else if paths.StackJSON == "" || paths.ConstructJSON == "" {
		return DumpInput{}, fmt.Errorf("%s: stack.json or construct.json not found (msprobe refuses a folder with only one of them)", dir)
	}
	if in.Names, in.Framework, err = readDumpNames(paths.DumpJSON); err != nil {
		return DumpInput{}, err
	}
	if paths.ConstructJSON != "" {
		if in.Construct, err = dump.ReadConstruct(paths.ConstructJSON); err != nil {
			return DumpInput{}, err
		}
		in.ConstructEmpty = len(in.Construct) == 0
	}
	if paths.StackJSON != "" {
		if in.Stack, in.StackEmpty, err = readStackRaw(paths.StackJSON); err != nil {
			return DumpInput{}, err
		}
	}
	return in, nil
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
	items, err := ItemsFromDump(in)
	if err != nil {
		return nil, err
	}
	return TrieFromItems(in.Source, items), nil
}

// readDumpNames returns the keys of dump.json's "data" in order and the
// framework: the "framework" field when it is pytorch or mindspore, else
// detected from the value types as detect_framework_by_dump_json does.
func readDumpNames(path string) ([]string, string, error) {
	names, err := dump.EntryNames(path)
	if err != nil {
		return nil, "", err
	}
	h, err := dump.ReadHeader(path)
	if err != nil {
		return nil, "", err
	}
	if !h.FrameworkMissing && (h.Framework == "pytorch" || h.Framework == "mindspore") {
		return names, h.Framework, nil
	}
	fw, err := detectFramework(path)
	if err != nil {
		return nil, "", err
	}
	return names, fw, nil
}

func detectFramework(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("dump: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<30)
	for sc.Scan() {
		l := sc.Bytes()
		if bytes.Contains(l, []byte(`"type": "mindspore`)) {
			return "mindspore", nil
		}
		if bytes.Contains(l, []byte(`"type": "torch`)) {
			return "pytorch", nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return "", fmt.Errorf("%s: expected a MindSpore or PyTorch dump (no framework field and no typed values)", path)
}

func readJSONObject(path string) (map[string]json.RawMessage, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line := 1 + bytes.Count(data[:min(int(se.Offset), len(data))], []byte("\n"))
			return nil, fmt.Errorf("%s:%d: expected a JSON object: %w", path, line, err)
		}
		return nil, fmt.Errorf("%s: expected a JSON object: %w", path, err)
	}
	return m, nil
}

// readStackRaw loads stack.json as msprobe's layer mapping does: a plain
// object whose values are looked up by entry name.
func readStackRaw(path string) (map[string]StackEntry, bool, error) {
	raw, err := readJSONObject(path)
	if err != nil {
		return nil, false, err
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
	return out, len(raw) == 0, nil
}

// jsonFalsy reports whether Python would find the JSON value falsy.
func jsonFalsy(raw string) bool {
	switch strings.Join(strings.Fields(raw), "") {
	case "null", `""`, "[]", "{}", "0", "false", "0.0":
		return true
	}
	return false
}
