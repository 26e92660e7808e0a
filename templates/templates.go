// Package templates holds layermap's built-in layer_mapping templates: the
// four msprobe seed templates for Qwen2.5 and Qwen2.5-VL, verbatim, the
// layermap team's corrected and version-drift variants of them, and both
// directions of Llama, Qwen3, Qwen3-MoE, Mixtral, DeepSeek-V3, GLM-4.5,
// Qwen2-VL and Qwen3-VL (megatron-core or MindSpeed-MM vs transformers, each
// citing the conversion table it follows). It detects
// which templates apply to a pair of module trees and evaluates every
// template line against the trees, so that infer can use the lines as priors.
//
// A template file is a layer_mapping.yaml in msprobe's own format (a map from
// an NPU-side class name, or TopLayer, to "npu_child_path: bench_child_path"
// lines) preceded by a header of "# key: value" comment lines: name, kind
// (seed or expert), corrects (the seed an expert template corrects), npu,
// bench, description and provenance. Continuation lines of a header value
// start with "#   ". A seed file's header ends with the line
// "# --- verbatim seed below ---"; everything after it is the seed byte for
// byte.
//
// One extension over msprobe: a key may contain the placeholder "{i}" as a
// whole path segment (and then so does its value). Such a line stands for
// one line per list index present in the tree, written out by Apply and
// Expand; it is how a template escapes a class rule shared by two places.
// In MindSpeed-MM, TransformerLayer is the class of both the vision blocks
// and the text layers, which need different renames; msprobe keys rules by
// class only, so the expert template keeps the class block for the vision
// tower and gives the text layers longer keys at their uniquely named
// ancestor (MMGPTModel: "decoder.layers.{i}.self_attention:
// layers.{i}.self_attn"), which consume the levels below and so escape the
// class rule.
//
// Use: Detect ranks the templates for a pair of trees; Apply says which
// lines apply where (the priors); Expand writes a template out for one tree
// (indices expanded, drifted class names replaced by the tree's); Adapt fits
// a template's TopLayer rule to trees without the wrappers it assumes.
package templates

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/layermap/layermap/mapping"
	"github.com/layermap/layermap/printparse/source"
)

//go:embed data/*.yaml
var files embed.FS

// Template kinds.
const (
	KindSeed   = "seed"   // shipped by msprobe's documentation, verbatim
	KindExpert = "expert" // corrected or extended by the layermap team
)

// IndexPlaceholder in a line's key and value stands for every list index
// present in the tree at that place.
const IndexPlaceholder = "{i}"

// SeedMarker ends the header of a seed template; the seed follows verbatim.
const SeedMarker = "# --- verbatim seed below ---"

// Template is one built-in layer_mapping template.
type Template struct {
	// Name identifies the template (the file name without ".yaml").
	Name string
	// Description says which model, layout and versions it is for.
	Description string
	// NPUFramework is the framework whose classes key the template
	// (msprobe's NPU side, -tp); BenchFramework is the other side (-gp).
	NPUFramework, BenchFramework string
	// Lines in file order.
	Lines []Line
	// Kind is KindSeed or KindExpert.
	Kind string
	// Corrects names the seed template an expert template corrects ("" for
	// seeds).
	Corrects string
	// Provenance says where the template comes from and, for expert
	// templates, what was changed and why.
	Provenance string
	// File is the embedded file name ("qwen2.5_..._to_....yaml").
	File string
	// Text is the file as embedded: a valid msprobe layer_mapping.yaml.
	Text []byte
	// Adapted is empty for a built-in template; for one that Adapt fitted
	// to a pair of trees it says what was changed.
	Adapted string
}

// Line is one "key: value" rule of a template.
type Line struct {
	// Class is the NPU-side class (or TopLayer) whose children the line
	// renames.
	Class string
	// Key is the NPU child path (dotted when it spans several levels); it
	// may contain IndexPlaceholder.
	Key string
	// Value is the bench child path.
	Value string
	// Line is the 1-based line of the key in the template file.
	Line int
}

// Indexed reports whether the line holds IndexPlaceholder.
func (l Line) Indexed() bool { return strings.Contains(l.Key, IndexPlaceholder) }

// String renders the line as "Class: key -> value".
func (l Line) String() string { return fmt.Sprintf("%s: %s -> %s", l.Class, l.Key, l.Value) }

// Direction renders the template's direction as "NPU -> bench".
func (t *Template) Direction() string { return t.NPUFramework + " -> " + t.BenchFramework }

// Classes returns the template's class keys in file order, TopLayer
// included.
func (t *Template) Classes() []string {
	var out []string
	seen := map[string]bool{}
	for _, l := range t.Lines {
		if !seen[l.Class] {
			seen[l.Class] = true
			out = append(out, l.Class)
		}
	}
	return out
}

// builtin parses the embedded files once.
var builtin = sync.OnceValues(func() ([]*Template, error) { return load(files) })

// All returns every built-in template, sorted by name. Each call returns
// fresh copies, so callers may modify the result.
func All() []*Template {
	ts, err := builtin()
	if err != nil {
		// The embedded files are checked by the package tests.
		panic(err)
	}
	out := make([]*Template, len(ts))
	for i, t := range ts {
		c := *t
		c.Lines, c.Text = slices.Clone(t.Lines), slices.Clone(t.Text)
		out[i] = &c
	}
	return out
}

// Names returns the names of all built-in templates, sorted.
func Names() []string {
	var out []string
	for _, t := range All() {
		out = append(out, t.Name)
	}
	return out
}

// Get returns the built-in template called name (a trailing ".yaml" is
// accepted).
func Get(name string) (*Template, error) {
	name = strings.TrimSuffix(name, ".yaml")
	for _, t := range All() {
		if t.Name == name {
			return t, nil
		}
	}
	return nil, fmt.Errorf("no template %q (known: %s)", name, strings.Join(Names(), ", "))
}

func load(fsys fs.FS) ([]*Template, error) {
	names, err := fs.Glob(fsys, "data/*.yaml")
	if err != nil {
		return nil, err
	}
	var out []*Template
	seen := map[string]string{}
	for _, n := range names {
		b, err := fs.ReadFile(fsys, n)
		if err != nil {
			return nil, err
		}
		t, err := Parse(path.Base(n), b)
		if err != nil {
			return nil, err
		}
		if want := strings.TrimSuffix(path.Base(n), ".yaml"); t.Name != want {
			return nil, fmt.Errorf("%s:1: expected header name %q, found %q", t.File, want, t.Name)
		}
		if prev, dup := seen[t.Name]; dup {
			return nil, fmt.Errorf("%s: template name %q already used by %s", t.File, t.Name, prev)
		}
		seen[t.Name] = t.File
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Parse reads one template file: the header comment and the mapping,
// read by mapping.ParseStrict (file names the source in errors,
// "file:line[:col]: ..."). Unlike msprobe, which keeps the last of
// duplicate classes or keys silently, strict parsing rejects them, and
// every key and value must be a non-empty string; a key with
// IndexPlaceholder must hold it once as a whole segment, as its value.
func Parse(file string, data []byte) (*Template, error) {
	t := &Template{File: file, Text: data}
	if err := t.parseHeader(data); err != nil {
		return nil, err
	}
	m, err := mapping.ParseStrict(data, file)
	if err != nil {
		return nil, err
	}
	for _, c := range m.Classes {
		for _, r := range c.Rules {
			l := Line{Class: c.Class, Key: r.Key, Value: r.Value, Line: r.KeyPos.Line}
			if l.Indexed() || strings.Contains(l.Value, IndexPlaceholder) {
				if !onePlaceholderSeg(l.Key) || !onePlaceholderSeg(l.Value) {
					return nil, &source.Error{File: file, Line: l.Line, Expected: IndexPlaceholder + " once as a whole path segment in both key and value",
						Found: fmt.Sprintf("%q: %q", l.Key, l.Value)}
				}
			}
			t.Lines = append(t.Lines, l)
		}
	}
	return t, nil
}

// parseHeader reads the leading "# key: value" comment block.
func (t *Template) parseHeader(data []byte) error {
	fields := map[string]*string{
		"name": &t.Name, "kind": &t.Kind, "corrects": &t.Corrects, "npu": &t.NPUFramework,
		"bench": &t.BenchFramework, "description": &t.Description, "provenance": &t.Provenance,
	}
	var cur *string
	for i, raw := range bytes.Split(data, []byte("\n")) {
		line := strings.TrimRight(string(raw), "\r")
		if line == SeedMarker || !strings.HasPrefix(line, "#") {
			break
		}
		if strings.HasPrefix(line, "#   ") && cur != nil {
			*cur += "\n" + strings.TrimSpace(line[1:])
			continue
		}
		key, val, ok := strings.Cut(strings.TrimSpace(line[1:]), ":")
		p := fields[key]
		if !ok || p == nil {
			return fmt.Errorf("%s:%d: expected a header line \"# key: value\" (key one of name, kind, corrects, npu, bench, description, provenance), found %q", t.File, i+1, line)
		}
		if *p != "" {
			return fmt.Errorf("%s:%d: expected header key %q once, found it again", t.File, i+1, key)
		}
		*p = strings.TrimSpace(val)
		cur = p
	}
	for _, k := range []string{"name", "kind", "npu", "bench", "description", "provenance"} {
		if *fields[k] == "" {
			return fmt.Errorf("%s:1: expected header key %q, found none", t.File, k)
		}
	}
	if t.Kind != KindSeed && t.Kind != KindExpert {
		return fmt.Errorf("%s:1: expected kind %s or %s, found %q", t.File, KindSeed, KindExpert, t.Kind)
	}
	if t.Kind == KindSeed && !bytes.Contains(data, []byte("\n"+SeedMarker+"\n")) {
		return fmt.Errorf("%s:1: expected the line %q in a seed template, found none", t.File, SeedMarker)
	}
	return nil
}

// Verbatim returns the part of a seed template below SeedMarker (the seed as
// msprobe shipped it); for expert templates it returns the whole text.
func (t *Template) Verbatim() []byte {
	_, after, ok := bytes.Cut(t.Text, []byte(SeedMarker+"\n"))
	if !ok {
		return t.Text
	}
	return after
}

// onePlaceholderSeg reports whether IndexPlaceholder is exactly one whole
// segment of the dotted path p.
func onePlaceholderSeg(p string) bool {
	n := 0
	for _, seg := range strings.Split(p, ".") {
		if seg == IndexPlaceholder {
			n++
		} else if strings.Contains(seg, IndexPlaceholder) {
			return false
		}
	}
	return n == 1
}
