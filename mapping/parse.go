package mapping

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/layermap/layermap/printparse/source"
	"gopkg.in/yaml.v3"
)

// Severity ranks a diagnostic or finding.
type Severity int

// Severities, lowest first.
const (
	Info Severity = iota
	Warning
	Error
)

// String returns "info", "warning" or "error".
func (s Severity) String() string {
	switch s {
	case Info:
		return "info"
	case Warning:
		return "warning"
	}
	return "error"
}

// MarshalText renders the severity as its name (for JSON output).
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// ParseSeverity is the inverse of Severity.String.
func ParseSeverity(s string) (Severity, error) {
	switch s {
	case "info":
		return Info, nil
	case "warning":
		return Warning, nil
	case "error":
		return Error, nil
	}
	return Error, fmt.Errorf("unknown severity %q (want info, warning or error)", s)
}

// Diagnostic is one problem in a mapping file that msprobe would accept
// silently. Code is stable (see the table in the package documentation).
type Diagnostic struct {
	Pos      Pos
	Code     string
	Severity Severity
	Msg      string
	// Related lists other positions the message refers to (the other
	// duplicate, the block that wins).
	Related []Pos
}

// String renders "file:line:col: severity CODE: msg".
func (d Diagnostic) String() string {
	return fmt.Sprintf("%s: %s %s: %s", d.Pos, d.Severity, d.Code, d.Msg)
}

// Load reads and parses the mapping file at path; see Parse. It also warns
// about file names msprobe's file checks refuse.
func Load(path string) (*Mapping, []Diagnostic, error) {
	data, err := source.ReadFile(path, source.MaxMappingYAML)
	if err != nil {
		return nil, nil, err // *source.Error: "path: expected ..., found ..."
	}
	m, diags, err := Parse(data, path)
	if err != nil {
		return nil, nil, err
	}
	diags = append(diags, checkFileName(path)...)
	return m, diags, nil
}

// ParseStrict is Parse for layermap's own mapping files (the built-in
// templates): a file must hold exactly the rules it shows, so every
// error diagnostic, a duplicate key even with the same value (LM002), a
// class key that is not a string (LM009) and an empty or null block
// (LM012, LM013) is an error at its position ("file:line:col: LM001:
// duplicate class ..."), as is a file without rules. The other warnings
// and advice (a value msprobe cuts at "(", an identity rule) are allowed.
func ParseStrict(data []byte, name string) (*Mapping, error) {
	m, diags, err := Parse(data, name)
	if err != nil {
		return nil, err
	}
	var first *Diagnostic
	for i := range diags {
		d := &diags[i]
		if !strictFails(d) {
			continue
		}
		if first == nil || d.Pos.Line < first.Pos.Line || d.Pos.Line == first.Pos.Line && d.Pos.Col < first.Pos.Col {
			first = d
		}
	}
	if first != nil {
		return nil, &source.Error{File: first.Pos.File, Line: first.Pos.Line, Col: first.Pos.Col, Msg: first.Code + ": " + first.Msg}
	}
	if len(m.Rules()) == 0 {
		return nil, &source.Error{File: name, Line: 1, Expected: "at least one rule", Found: "none"}
	}
	return m, nil
}

func strictFails(d *Diagnostic) bool {
	switch d.Code {
	case CodeDuplicateKey, CodeClassNotString, CodeCellNull, CodeEmptyClass:
		return true
	}
	return d.Severity == Error
}

// msprobe's FileChecker accepts real paths matching this pattern only.
var msprobePathRE = lazyRegexp(`^[a-zA-Z0-9_./:-]+$`)

func checkFileName(path string) []Diagnostic {
	var out []Diagnostic
	pos := Pos{File: path}
	if !strings.HasSuffix(path, ".yaml") {
		out = append(out, Diagnostic{Pos: pos, Code: CodeFileSuffix, Severity: Error,
			Msg: fmt.Sprintf("msprobe loads only files ending in .yaml; %q is refused", filepath.Base(path))})
	}
	if abs, err := filepath.Abs(path); err == nil {
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			abs = real
		}
		if !msprobePathRE().MatchString(abs) {
			out = append(out, Diagnostic{Pos: pos, Code: CodeFilePath, Severity: Error,
				Msg: fmt.Sprintf("msprobe refuses paths with characters outside [a-zA-Z0-9_.:/-]: %q", abs)})
		}
	}
	return out
}

// Parse reads a layer_mapping.yaml. name names the file in positions and
// messages. The error is non-nil when msprobe could not use the file at all:
// a YAML syntax error, an empty document, a top level that is not a map of
// maps of strings, or keys and values PyYAML loads as non-strings (msprobe
// crashes on those). It is one line, "file:line:col: ...". The diagnostics
// list what msprobe would accept silently (see the package documentation).
func Parse(data []byte, name string) (*Mapping, []Diagnostic, error) {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		return nil, nil, source.YAMLError(name, data, err)
	}
	var next yaml.Node
	if err := dec.Decode(&next); err == nil {
		return nil, nil, &source.Error{File: name, Line: max(next.Line, 1), Expected: "a single YAML document", Found: "another (PyYAML's safe_load refuses it)"}
	} else if !errors.Is(err, io.EOF) {
		return nil, nil, source.YAMLError(name, data, err)
	}
	p := &parser{src: name}
	m := &Mapping{Source: name}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, nil, &source.Error{File: name, Line: 1, Col: 1, Expected: "a map of class names to maps of child paths", Found: "an empty document"}
	}
	top := resolveAlias(doc.Content[0])
	m.Header = strings.TrimSpace(trimComment(doc.HeadComment))
	if top.Kind != yaml.MappingNode {
		return nil, nil, p.errAt(top, "expected a map of class names to maps of child paths, found %s", Describe(top))
	}
	if m.Header == "" && len(top.Content) > 0 {
		// A comment right above the first key (no blank line) is the header.
		m.Header = strings.TrimSpace(trimComment(top.Content[0].HeadComment))
		top.Content[0].HeadComment = ""
	}
	classFirst := map[string]*ClassRules{}
	for i := 0; i+1 < len(top.Content); i += 2 {
		k, v := resolveAlias(top.Content[i]), resolveAlias(top.Content[i+1])
		if k.Kind != yaml.ScalarNode {
			return nil, nil, p.errAt(k, "expected a class name, found %s", Describe(k))
		}
		if isMerge(k) {
			return nil, nil, p.errAt(k, "YAML merge keys (<<) are not supported in layer mappings")
		}
		c := &ClassRules{Class: k.Value, Pos: p.pos(k), Comment: nodeComment(k)}
		if typ := scalarType(k); typ != "str" {
			c.NotString = true
			p.diag(c.Pos, CodeClassNotString, Warning, nil,
				"class key %s loads as a YAML 1.1 %s in PyYAML: msprobe accepts it but it never matches a class; quote it", k.Value, typ)
		}
		switch {
		case v.Kind == yaml.ScalarNode && scalarType(v) == "null":
			if c.Class != "Cell" {
				return nil, nil, p.errAt(v, "expected a map of child paths under %q, found null (msprobe crashes on it)", c.Class)
			}
			c.Null = true
			p.diag(c.Pos, CodeCellNull, Warning, nil, "empty Cell block: msprobe drops it silently")
		case v.Kind != yaml.MappingNode:
			return nil, nil, p.errAt(v, "expected a map of child paths under %q, found %s", c.Class, Describe(v))
		}
		if err := p.rules(c, v); err != nil {
			return nil, nil, err
		}
		if !c.NotString {
			if prev, ok := classFirst[c.Class]; ok {
				p.diag(c.Pos, CodeDuplicateClass, Error, []Pos{prev.Pos},
					"duplicate class %q (also at line %d): PyYAML keeps only the last block, so the rules at line %d are lost",
					c.Class, prev.Pos.Line, prev.Pos.Line)
			} else {
				classFirst[c.Class] = c
			}
		}
		if !c.Null && len(c.Rules) == 0 {
			p.diag(c.Pos, CodeEmptyClass, Info, nil, "class %q has no rules", c.Class)
		}
		m.Classes = append(m.Classes, c)
	}
	p.checkCell(m)
	return m, p.diags, nil
}

type parser struct {
	src   string
	diags []Diagnostic
}

func (p *parser) pos(n *yaml.Node) Pos { return Pos{File: p.src, Line: n.Line, Col: n.Column} }

func (p *parser) errAt(n *yaml.Node, format string, args ...any) error {
	return &source.Error{File: p.src, Line: n.Line, Col: n.Column, Msg: source.OneLine(fmt.Sprintf(format, args...))}
}

func (p *parser) diag(pos Pos, code string, sev Severity, related []Pos, format string, args ...any) {
	p.diags = append(p.diags, Diagnostic{Pos: pos, Code: code, Severity: sev, Msg: source.OneLine(fmt.Sprintf(format, args...)), Related: related})
}

func (p *parser) rules(c *ClassRules, v *yaml.Node) error {
	if v.Kind != yaml.MappingNode {
		return nil
	}
	first := map[string]*Rule{}
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, val := resolveAlias(v.Content[i]), resolveAlias(v.Content[i+1])
		if k.Kind != yaml.ScalarNode {
			return p.errAt(k, "expected a child path under %q, found %s", c.Class, Describe(k))
		}
		if isMerge(k) {
			return p.errAt(k, "YAML merge keys (<<) are not supported in layer mappings")
		}
		if typ := scalarType(k); typ != "str" {
			return p.errAt(k, "expected a child path (string) under %q, found %s %s: msprobe crashes on it; quote it", c.Class, typ, k.Value)
		}
		if val.Kind != yaml.ScalarNode {
			return p.errAt(val, "expected a bench path (string) for %q, found %s", k.Value, Describe(val))
		}
		if typ := scalarType(val); typ != "str" {
			return p.errAt(val, "expected a bench path (string) for %q, found %s %q: msprobe crashes on it; quote it", k.Value, typ, val.Value)
		}
		r := &Rule{Key: k.Value, Value: val.Value, KeyPos: p.pos(k), ValuePos: p.pos(val), Class: c}
		r.Comment = nodeComment(k)
		if lc := nodeComment(val); lc != "" {
			r.Comment = lc
		}
		if prev, ok := first[r.Key]; ok {
			if prev.Value == r.Value {
				p.diag(r.KeyPos, CodeDuplicateKey, Warning, []Pos{prev.KeyPos},
					"duplicate key %q under %q (also at line %d) with the same value", r.Key, c.Class, prev.KeyPos.Line)
			} else {
				p.diag(r.KeyPos, CodeDuplicateKey, Error, []Pos{prev.KeyPos},
					"duplicate key %q under %q (also at line %d): PyYAML keeps the last value %q, %q at line %d is lost",
					r.Key, c.Class, prev.KeyPos.Line, r.Value, prev.Value, prev.KeyPos.Line)
			}
		} else {
			first[r.Key] = r
		}
		p.checkRule(r)
		c.Rules = append(c.Rules, r)
	}
	return nil
}

func (p *parser) checkRule(r *Rule) {
	switch {
	case r.Key == "":
		p.diag(r.KeyPos, CodeEmptyKey, Error, nil, "empty child path: the rule never fires")
	case hasSpace(r.Key):
		p.diag(r.KeyPos, CodeSpace, Error, nil, "child path %q contains whitespace: it never matches a module or API name", r.Key)
	case hasEmptySeg(r.Key):
		p.diag(r.KeyPos, CodeEmptySegment, Error, nil, "child path %q has an empty segment (leading, trailing or doubled '.'): it never matches", r.Key)
	}
	t := r.Target()
	if t != r.Value {
		if strings.TrimRight(t, " \t") != t || t == "" {
			p.diag(r.ValuePos, CodeParen, Error, nil,
				"msprobe cuts the value at '(' and uses %q, which never matches", t)
		} else {
			p.diag(r.ValuePos, CodeParen, Warning, nil,
				"msprobe cuts the value at '(' and uses only %q", t)
		}
		return
	}
	switch {
	case r.Value == "":
		p.diag(r.ValuePos, CodeEmptyValue, Error, nil, "empty bench path for %q: msprobe appends an empty segment and the items never match", r.Key)
	case hasSpace(r.Value):
		p.diag(r.ValuePos, CodeSpace, Error, nil, "bench path %q contains whitespace: it never matches a module or API name", r.Value)
	case hasEmptySeg(r.Value):
		p.diag(r.ValuePos, CodeEmptySegment, Error, nil, "bench path %q has an empty segment (leading, trailing or doubled '.'): it never matches", r.Value)
	case r.Value == r.Key:
		p.diag(r.KeyPos, CodeIdentity, Info, nil, "identity rule %q: children keep their name without a rule", r.Key)
	}
}

// checkCell reports msprobe's Cell -> TopLayer alias.
func (p *parser) checkCell(m *Mapping) {
	var cell, top *ClassRules
	for _, c := range m.Classes {
		if c.NotString {
			continue
		}
		switch c.Class {
		case "Cell":
			cell = c
		case TopLayer:
			if top == nil {
				top = c
			}
		}
	}
	if cell == nil || cell.Null {
		return
	}
	if top != nil {
		p.diag(top.Pos, CodeCellOverrides, Error, []Pos{cell.Pos},
			"msprobe replaces the TopLayer block with the legacy Cell block at line %d: these rules are lost", cell.Pos.Line)
		return
	}
	p.diag(cell.Pos, CodeCellAlias, Info, nil, "legacy key Cell: msprobe renames it to TopLayer")
}

func resolveAlias(n *yaml.Node) *yaml.Node {
	for i := 0; n.Kind == yaml.AliasNode && n.Alias != nil && i < 100; i++ {
		n = n.Alias
	}
	return n
}

func isMerge(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) == 0 && n.Value == "<<"
}

// Describe names what a YAML node is, for "found ..." in messages: "a
// map", "a list", "an alias", "nothing", "the string \"x\"" or the type
// PyYAML loads a plain scalar as ("int \"3\"", "bool \"yes\"").
func Describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a map"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if t := scalarType(n); t != "str" {
			return fmt.Sprintf("%s %q", t, n.Value)
		}
		return fmt.Sprintf("the string %q", n.Value)
	case yaml.AliasNode:
		return "an alias"
	}
	return "nothing"
}

func nodeComment(n *yaml.Node) string {
	if c := trimComment(n.LineComment); c != "" {
		return c
	}
	return trimComment(n.HeadComment)
}

// trimComment strips the "#" markers of a yaml.v3 comment block.
func trimComment(c string) string {
	if c == "" {
		return ""
	}
	lines := strings.Split(c, "\n")
	for i, l := range lines {
		l = strings.TrimSpace(l)
		l = strings.TrimPrefix(l, "#")
		lines[i] = strings.TrimPrefix(l, " ")
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

func hasSpace(s string) bool { return strings.ContainsAny(s, " \t\r\n") }

func hasEmptySeg(s string) bool {
	for _, seg := range strings.Split(s, ".") {
		if seg == "" {
			return true
		}
	}
	return false
}

func cutParen(s string) string {
	if i := strings.IndexByte(s, '('); i >= 0 {
		return s[:i]
	}
	return s
}

func countSegs(s string) int { return strings.Count(s, ".") + 1 }

// scalarType tells what PyYAML's SafeLoader (YAML 1.1) makes of a scalar:
// "str", "int", "float", "bool", "null", "timestamp", "binary", ... An
// explicit tag wins; quoted and block scalars are strings.
func scalarType(n *yaml.Node) string {
	if n.Style&yaml.TaggedStyle != 0 {
		switch t := n.Tag; t {
		case "!!str", "tag:yaml.org,2002:str":
			return "str"
		default:
			return strings.TrimPrefix(strings.TrimPrefix(t, "tag:yaml.org,2002:"), "!!")
		}
	}
	if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		return "str"
	}
	return PyYAMLType(n.Value)
}

// lazyRegexp compiles pattern on first use: most runs never read a
// mapping file, and none should pay for its patterns at start.
func lazyRegexp(pattern string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(pattern) })
}

// PyYAML's implicit resolvers (yaml/resolver.py, YAML 1.1).
var (
	pyBool  = lazyRegexp(`^(?:yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$`)
	pyFloat = lazyRegexp(`^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9_]+(?:[eE][-+][0-9]+)?|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$`)
	pyInt   = lazyRegexp(`^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$`)
	pyNull  = lazyRegexp(`^(?:~|null|Null|NULL|)$`)
	pyTime  = lazyRegexp(`^(?:[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]|[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?(?:[Tt]|[ \t]+)[0-9][0-9]?:[0-9][0-9]:[0-9][0-9](?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?)$`)
)

// PyYAMLType returns the type PyYAML's safe_load gives an untagged plain
// scalar: "bool", "float", "int", "null", "timestamp", "value" or "str".
func PyYAMLType(s string) string {
	switch {
	case pyBool().MatchString(s):
		return "bool"
	case pyFloat().MatchString(s):
		return "float"
	case pyInt().MatchString(s):
		return "int"
	case pyNull().MatchString(s):
		return "null"
	case pyTime().MatchString(s):
		return "timestamp"
	case s == "=":
		return "value"
	}
	return "str"
}
