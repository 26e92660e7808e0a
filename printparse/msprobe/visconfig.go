package msprobe

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/layermap/layermap/printparse/source"
)

// NodeMatch is one manual match of msprobe's graph view: an NPU node and
// the bench node the user paired it with, each a module path when the node
// names a module ("Module.layers.0.mlp.MLP.forward.0" -> "layers.0.mlp"),
// else the node name as written (an API call).
type NodeMatch struct {
	NPU, Bench string
}

// ParseVisConfig reads the manual matches of msprobe's .vis.config: a JSON
// object of NPU graph node -> bench graph node, as save_matched_relations
// writes it (the reverse links included), or a state object holding one
// under "manualMatchNodes" or "npuMatchNodes". Matches come in key order.
// name is the input in errors, which are *source.Error.
func ParseVisConfig(data []byte, name string) ([]NodeMatch, error) {
	var top map[string]json.RawMessage
	data = bytes.TrimLeft(data, "\ufeff")
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, source.JSONError(name, data, "a .vis.config JSON object of NPU node -> bench node", err)
	}
	obj := top
	for _, k := range []string{"manualMatchNodes", "npuMatchNodes"} {
		if raw, ok := top[k]; ok {
			obj = nil
			if err := json.Unmarshal(raw, &obj); err != nil {
				return nil, &source.Error{File: name, Expected: fmt.Sprintf("%q to be an object of NPU node -> bench node", k), Found: jsonKind(raw)}
			}
			break
		}
	}
	// the other members of a state object
	state := map[string]bool{"run": true, "npuUnMatchNodes": true, "benchUnMatchNodes": true, "benchMatchNodes": true}
	var out []NodeMatch
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		var v string
		if err := json.Unmarshal(obj[k], &v); err != nil {
			if state[k] {
				continue
			}
			return nil, &source.Error{File: name, Expected: fmt.Sprintf("a bench node name (a string) for %q", k), Found: jsonKind(obj[k])}
		}
		out = append(out, NodeMatch{NPU: graphNode(k), Bench: graphNode(v)})
	}
	return out, nil
}

// graphNode turns a graph node name into a module path when it names a
// module.
func graphNode(name string) string {
	if p, _, _, ok := ModuleEntry(name); ok {
		return p
	}
	return name
}

// jsonKind describes a JSON value for "found ..." messages.
func jsonKind(raw json.RawMessage) string {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 {
		return "nothing"
	}
	switch t[0] {
	case '{':
		return "an object"
	case '[':
		return "a list"
	case '"':
		return "a string"
	case 'n':
		return "null"
	}
	return string(t)
}
