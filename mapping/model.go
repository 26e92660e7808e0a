package mapping

import "fmt"

// TopLayer is msprobe's pseudo-class of the model root: its rules rename the
// first path segments below the root.
const TopLayer = "TopLayer"

// Pos is a position in a mapping file. Line and Col are 1-based; a zero
// Line means the position is unknown (a rule built in memory).
type Pos struct {
	File string
	Line int
	Col  int
}

// String renders the position as "file:line:col" (parts that are unknown
// are left out).
func (p Pos) String() string {
	switch {
	case p.Line == 0:
		return p.File
	case p.Col == 0:
		return fmt.Sprintf("%s:%d", p.File, p.Line)
	}
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
}

// Mapping is one layer_mapping.yaml: a map from an NPU-side class name (or
// TopLayer) to the renames of that class's children. It keeps every block and
// every rule as written, duplicates included; Effective gives the view msprobe
// applies.
type Mapping struct {
	// Source is the file the mapping was read from (or will be written to).
	Source string
	// Header holds the comment lines at the top of the file, without "# ".
	Header string
	// Classes in file order (or first-Add order).
	Classes []*ClassRules
}

// ClassRules is one top-level block: the renames of the children of every
// NPU module whose class is Class.
type ClassRules struct {
	Class   string
	Pos     Pos
	Rules   []*Rule
	Comment string // comment on or above the class line, without "# "
	// Null reports that the block's value was null ("Cell:" with nothing
	// after it). msprobe drops a null Cell block and crashes on others.
	Null bool
	// NotString reports that PyYAML would load the class key as a non-string
	// (an int, bool, ...): msprobe accepts it and it never matches.
	NotString bool
}

// Rule is one "npu_child_path: bench_child_path" line.
type Rule struct {
	Key, Value       string
	KeyPos, ValuePos Pos
	Comment          string // trailing or preceding comment, without "# "
	// Class is the block the rule belongs to.
	Class *ClassRules
}

// Target is the value as msprobe applies it: everything from the first "("
// on is cut off.
func (r *Rule) Target() string { return cutParen(r.Value) }

// Level is the number of NPU path segments the key spans.
func (r *Rule) Level() int { return countSegs(r.Key) }

// String renders the rule as "Class: key -> value".
func (r *Rule) String() string {
	cls := ""
	if r.Class != nil {
		cls = r.Class.Class
	}
	return fmt.Sprintf("%s: %s -> %s", cls, r.Key, r.Value)
}

// New returns an empty mapping.
func New() *Mapping { return &Mapping{} }

// Add appends the rule key: value to the block of class, creating the block
// after the existing ones when it is new. Rules keep insertion order. The
// comment is written after the rule line by Marshal.
func (m *Mapping) Add(class, key, value, comment string) *Rule {
	c := m.Lookup(class)
	if c == nil {
		c = &ClassRules{Class: class}
		m.Classes = append(m.Classes, c)
	}
	r := &Rule{Key: key, Value: value, Comment: comment, Class: c}
	c.Rules = append(c.Rules, r)
	return r
}

// Lookup returns the first block of class, or nil.
func (m *Mapping) Lookup(class string) *ClassRules {
	for _, c := range m.Classes {
		if c.Class == class {
			return c
		}
	}
	return nil
}

// Rules returns every rule of every block in file order.
func (m *Mapping) Rules() []*Rule {
	var out []*Rule
	for _, c := range m.Classes {
		out = append(out, c.Rules...)
	}
	return out
}

// Effective returns the rules msprobe applies, per class, the way PyYAML's
// safe_load and msprobe's preprocessing see the file: a repeated class block
// replaces the earlier one whole, a repeated key keeps its last value, a
// "Cell" block replaces TopLayer (a null Cell is dropped), non-string class
// keys are kept (they never match). The rules of a class are in file order.
func (m *Mapping) Effective() map[string][]*Rule {
	out := map[string][]*Rule{}
	var cell *ClassRules
	for _, c := range m.Classes {
		if c.NotString {
			continue
		}
		if c.Class == "Cell" {
			cell = c
			continue
		}
		out[c.Class] = dedupRules(c.Rules)
	}
	if cell != nil && !cell.Null {
		out[TopLayer] = dedupRules(cell.Rules)
	}
	return out
}

// dedupRules keeps the last rule of each key at the position of the first,
// as a Python dict does.
func dedupRules(rules []*Rule) []*Rule {
	idx := map[string]int{}
	var out []*Rule
	for _, r := range rules {
		if i, ok := idx[r.Key]; ok {
			out[i] = r
			continue
		}
		idx[r.Key] = len(out)
		out = append(out, r)
	}
	return out
}
