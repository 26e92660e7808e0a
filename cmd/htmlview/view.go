// Package htmlview writes the self-contained HTML view of two model trees:
// both trees side by side, collapsed as print(model) collapses repeat
// groups, the pairs between them with their confidence and reasons, the
// compare Result colours (msprobe's), conflicts, a summary with the first
// divergence, the compare table rows of a selected module, and manual
// matching that offers the layer_mapping lines (or sidecar pairs) to add.
//
// The page is one file: the data as compact JSON (each tree once, as
// pre-order arrays of interned names and classes, so no path is written
// out), the script and the styles inline. It needs no server and no
// network and opens from a file:// URL. Only the rows in view are in the
// DOM, so a model of 100k modules stays fluid.
//
// cmd builds a View with FromSuggest, or collects one as compare writes
// its table with a CompareSink, and writes it with Write. Manual matches the page offers, and msprobe's own .vis.config
// manual matches, are read back with infer.ReadManual and turned into
// layer_mapping lines or sidecar pairs with infer.Manual.
package htmlview

import (
	"strings"

	"github.com/layermap/layermap/infer"
	"github.com/layermap/layermap/mapping"
	"github.com/layermap/layermap/printparse"
)

// Mode says which command wrote the page.
type Mode string

// Modes of a View.
const (
	ModeSuggest Mode = "suggest"
	ModeCompare Mode = "compare"
)

// Result is a module's compare outcome, msprobe's Result column.
type Result uint8

// Results, worst last.
const (
	NoResult Result = iota // not compared (suggest, or no row)
	Pass
	Warning
	Error
)

// ParseResult reads a Result cell of msprobe's table ("pass", "Warning",
// "error", md5's "diff"); anything else is NoResult.
func ParseResult(s string) Result {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "pass":
		return Pass
	case "warning":
		return Warning
	case "error", "diff":
		return Error
	}
	return NoResult
}

// Band is suggest's confidence in a pair.
type Band string

// Confidence bands.
const (
	Sure   Band = "sure"
	Check  Band = "check"
	Unsure Band = "unsure"
)

// Kind is the shape of a pair.
type Kind string

// Pair kinds.
const (
	OneToOne Kind = "1:1"
	Fused    Kind = "fused"    // N:1, one side fuses modules the other keeps apart
	Absorbed Kind = "absorbed" // one side's module is part of the other's
	Experts  Kind = "experts"  // MoE experts, one module per expert against a grouped one
	Root     Kind = "root"     // the two models (msprobe pairs them itself)
	ByHand   Kind = "manual"   // matched by hand (suggest --pairs-in)
)

// View is what the page shows.
type View struct {
	Title string
	Mode  Mode
	// NPU and Bench are the two sides; NPU is msprobe's -tp side, whose
	// classes key the layer mapping.
	NPU, Bench *Side
	Pairs      []Pair
	Conflicts  []Conflict
	Summary    Summary
	// Mapping is the NPU-keyed layer mapping the page's manual matches
	// extend (suggest's draft, compare's --mapping); nil when there is none.
	Mapping *MappingFile
	// Table holds the compare rows by module (compare only).
	Table *Table
}

// Side is one model tree.
type Side struct {
	Label string // "NPU (-tp)", "bench (-gp)"
	Tree  *printparse.Tree
	// Why says why a module has no partner.
	Why map[*printparse.Node]string
	// Result is each module's compare outcome.
	Result map[*printparse.Node]Result
	// Inner is the worst outcome of the API calls made directly inside a
	// module (they are not tree nodes).
	Inner map[*printparse.Node]Result

	byPath map[string]*printparse.Node
}

// NewSide wraps a tree.
func NewSide(label string, t *printparse.Tree) *Side {
	return &Side{Label: label, Tree: t, Why: map[*printparse.Node]string{}, Result: map[*printparse.Node]Result{}, Inner: map[*printparse.Node]Result{}}
}

// Lookup returns the module at a full path ("" is the root), or nil.
func (s *Side) Lookup(path string) *printparse.Node {
	if s.byPath == nil {
		s.byPath = map[string]*printparse.Node{}
		s.Tree.Walk(func(n *printparse.Node) bool {
			s.byPath[n.Path] = n
			return true
		})
	}
	return s.byPath[path]
}

// Pair links modules of the two sides: one on each side for a 1:1 pair,
// several on one side for a fused (N:1) pair.
type Pair struct {
	NPU, Bench []*printparse.Node
	Kind       Kind
	Band       Band // "" when the pair was not scored (compare)
	// Score is the alignment score in [0, 1], Margin how far it is ahead
	// of the runner-up.
	Score, Margin float64
	Reasons       []string
	Note          string // fused/split note, sizes that differ, ...
	// Proven reports that msprobe's resolver, given the mapping, pairs them.
	Proven bool
}

// Conflict is a class whose instances need different renames, and how
// the draft resolved it.
type Conflict struct {
	Class      string
	Reverse    bool // a conflict of the reverse (bench-keyed) draft
	Instances  []ConflictInstance
	Resolution string
	Proven     bool
}

// ConflictInstance is one place a conflicting class occurs.
type ConflictInstance struct {
	Path  string   // key-side module path, a repeat group as "layers.{0-7}"
	Wants []string // the renames it needs, "key: value"
}

// Summary is the page's summary panel besides the counts it computes.
type Summary struct {
	// Facts are label/value lines ("coverage", "75.0% (51 of 68)").
	Facts [][2]string
	// Notes are free lines (structural notes, warnings).
	Notes []string
	First *Divergence
	// Counts are a suggest run's counts (infer.Counts: modules msprobe
	// dumps, paired, N:1 parts, pairs of containers); the page adds the
	// matches made on it. Without them the page counts its tree nodes.
	Counts *infer.Counts
}

// Divergence is the first divergence compare found.
type Divergence struct {
	NPU, Bench           *printparse.Node // modules to open (the API's module for an API entry)
	NPUEntry, BenchEntry string
	Row                  string
	Messages             []string
}

// MappingFile is a layer_mapping.yaml as written, with the parsed model.
type MappingFile struct {
	Name    string // file name offered for download
	Text    string
	Mapping *mapping.Mapping
}

// NewMappingFile parses text as a layer mapping.
func NewMappingFile(name, text string) (*MappingFile, error) {
	m, _, err := mapping.Parse([]byte(text), name)
	if err != nil {
		return nil, err
	}
	return &MappingFile{Name: name, Text: text, Mapping: m}, nil
}

// Table is msprobe's comparison table grouped by module.
type Table struct {
	Header []string
	// Rows holds each NPU module's rows: its own, then those of the API
	// calls made directly inside it.
	Rows map[*printparse.Node][]Row
	// Total is, for each module some of whose rows were left out, the
	// number of its rows in the table file.
	Total map[*printparse.Node]int
	// Note says what was left out, if anything; File names the table file
	// that has every row.
	Note, File string
}

// Row is one table row.
type Row struct {
	Cells  []string
	Result Result
	API    bool // a row of an API call inside the module
}
