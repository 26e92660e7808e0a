package msprobe

import "strings"

// SplitName is msprobe's split of a dump.json entry name
// (ParseData.split_data_name_components): the name without call index and
// direction, the call index with the direction ("0.forward", "forward.0",
// "parameters_grad") and the direction ("forward", "backward",
// "parameters_grad"). opNoNumber is "" for a name msprobe skips (no
// direction in its last two dot-parts, or nothing before them). This is
// the one grammar of entry names: the comparator's keys, the module tree
// of a dump folder and --pairs all read names through it or ModuleEntry.
func SplitName(name string) (opNoNumber, callDirection, direction string) {
	lastDot := lastIndex(name, len(name))
	last := name[lastDot+1:]
	secondLast, secondDot := "", -1
	if lastDot >= 0 {
		secondDot = lastIndex(name, lastDot)
		secondLast = name[secondDot+1 : lastDot]
	}
	if last == StateParametersGrad || secondLast == StateParametersGrad {
		if lastDot < 0 {
			return "", StateParametersGrad, StateParametersGrad
		}
		return name[:lastDot], StateParametersGrad, StateParametersGrad
	}
	// Compared with constants, which compile to inline loads.
	var d string
	switch {
	case last == "forward" || secondLast == "forward":
		d = "forward"
	case last == "backward" || secondLast == "backward":
		d = "backward"
	default:
		return "", "", ""
	}
	// secondLast + "." + last is the tail after the second-last dot.
	if secondDot < 0 {
		if lastDot < 0 {
			return "", "." + last, d
		}
		return "", name, d
	}
	return name[:secondDot], name[secondDot+1:], d
}

// ModuleEntry splits a module entry name into the module path, class and
// direction: "Module.0.module.decoder.layers.3.TransformerLayer.forward.0"
// gives ("0.module.decoder.layers.3", "TransformerLayer", "forward"). It
// accepts the forward/backward forms, "Module.{path}.{Class}.parameters_grad.{k}"
// and the older "...parameters_grad", with the "Module." (PyTorch) or
// "Cell." (MindSpore) prefix. ok is false for API entries and malformed
// names.
func ModuleEntry(name string) (path, class, direction string, ok bool) {
	var rest string
	switch {
	case strings.HasPrefix(name, "Module."):
		rest = name[len("Module."):]
	case strings.HasPrefix(name, "Cell."):
		rest = name[len("Cell."):]
	default:
		return "", "", "", false
	}
	cut := func(s string) (string, string) { // s minus its last segment, last segment
		k := strings.LastIndexByte(s, '.')
		if k < 0 {
			return "", s
		}
		return s[:k], s[k+1:]
	}
	head, last := cut(rest)
	if last == StateParametersGrad {
		head, class = cut(head)
		if head == "" || class == "" {
			return "", "", "", false
		}
		return head, class, StateParametersGrad, true
	}
	if !IsDigits(last) {
		return "", "", "", false
	}
	head, dir := cut(head)
	if dir != "forward" && dir != "backward" && dir != StateParametersGrad {
		return "", "", "", false
	}
	head, class = cut(head)
	if head == "" || class == "" {
		return "", "", "", false
	}
	return head, class, dir, true
}

// IsDigits reports whether s is a non-empty run of ASCII digits (a call
// index).
func IsDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
