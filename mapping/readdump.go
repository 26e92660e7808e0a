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
		if in.Construct, err = readConstruct(paths.ConstructJSON); err != nil {
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

// readDumpNames streams dump.json and returns the keys of "data" in order
// and the framework (the "framework" field, else detected from the value
// types as detect_framework_by_dump_json does).
func readDumpNames(path string) ([]string, string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, "", fmt.Errorf("dump: %w", err)
	}
	defer f.Close()
	dec := json.NewDecoder(bufio.NewReaderSize(f, 1<<20))
	fail := func(err error) ([]string, string, error) {
		return nil, "", fmt.Errorf("%s: offset %d: %w", path, dec.InputOffset(), err)
	}
	if err := expectDelim(dec, '{'); err != nil {
		return fail(err)
	}
	var names []string
	framework := ""
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fail(err)
		}
		key, _ := tok.(string)
		switch key {
		case "data":
			if err := expectDelim(dec, '{'); err != nil {
				return fail(fmt.Errorf("\"data\": %w", err))
			}
			for dec.More() {
				tok, err := dec.Token()
				if err != nil {
					return fail(err)
				}
				names = append(names, tok.(string))
				var skip json.RawMessage
				if err := dec.Decode(&skip); err != nil {
					return fail(err)
				}
			}
			if _, err := dec.Token(); err != nil {
				return fail(err)
			}
		case "framework":
			var v any
			if err := dec.Decode(&v); err != nil {
				return fail(err)
			}
			framework, _ = v.(string)
		default:
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return fail(err)
			}
		}
	}
	if framework != "pytorch" && framework != "mindspore" {
		fw, err := detectFramework(path)
		if err != nil {
			return nil, "", err
		}
		framework = fw
	}
	return names, framework, nil
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

func expectDelim(dec *json.Decoder, d json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if got, ok := tok.(json.Delim); !ok || got != d {
		return fmt.Errorf("expected %q, found %v", string(d), tok)
	}
	return nil
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

// readConstruct loads construct.json: {entry: parent}, parent a string or
// null, or [parent, micro_step] when megatron_micro_step_number is present.
func readConstruct(path string) (map[string]string, error) {
	raw, err := readJSONObject(path)
	if err != nil {
		return nil, err
	}
	_, megatron := raw["megatron_micro_step_number"]
	out := make(map[string]string, len(raw))
	for k, v := range raw {
		if megatron && k == "megatron_micro_step_number" {
			continue
		}
		var s *string
		if err := json.Unmarshal(v, &s); err == nil {
			if s != nil {
				out[k] = *s
			} else {
				out[k] = ""
			}
			continue
		}
		var l []*string
		if megatron && json.Unmarshal(v, &l) == nil && len(l) == 2 {
			if l[0] != nil {
				out[k] = *l[0]
			} else {
				out[k] = ""
			}
			continue
		}
		return nil, fmt.Errorf("%s: entry %q: expected a parent name, null or [parent, micro_step], found %s", path, k, abbreviate(string(v)))
	}
	return out, nil
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

func abbreviate(s string) string {
	if len(s) > 60 {
		return s[:57] + "..."
	}
	return s
}
