package validate

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/layermap/layermap/mapping"
)

// maxGroups bounds each unmatched list in text output.
const maxGroups = 40

// Summary is the one-line verdict.
func (r *Report) Summary() string {
	e, w, i := r.Counts()
	s := fmt.Sprintf("%s: %d error%s, %d warning%s, %d info; coverage %s of the NPU modules msprobe dumps (paired by its resolver with this mapping)",
		r.Mapping, e, plural(e, "", "s"), w, plural(w, "", "s"), i, fmtCoverage(r.Coverage))
	if r.Entries != nil {
		s += fmt.Sprintf(", %s of NPU dump entries", fmtCoverage(*r.Entries))
	}
	return s
}

// WriteText writes the short human report: the summary line, findings
// grouped by check with their positions, then the unmatched lists.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", r.Summary())
	fmt.Fprintf(&b, "  NPU %s, bench %s\n", r.NPU, r.Bench)
	if r.Bands.Total() > 0 {
		fmt.Fprintf(&b, "  drafted lines: %d sure, %d check, %d unsure\n", r.Bands.Sure, r.Bands.Check, r.Bands.Unsure)
	}
	last := ""
	for _, f := range r.Findings {
		if f.Check != last {
			fmt.Fprintf(&b, "\n%s:\n", f.Check)
			last = f.Check
		}
		fmt.Fprintf(&b, "  %s\n", f)
	}
	writeGroups(&b, "unmatched NPU modules", r.UnmatchedNPU)
	writeGroups(&b, "bench modules nothing maps to", r.UnmatchedBench)
	_, err := io.WriteString(w, b.String())
	return err
}

func writeGroups(b *strings.Builder, title string, gs []Group) {
	if len(gs) == 0 {
		return
	}
	n := 0
	for _, g := range gs {
		n += g.Count
	}
	fmt.Fprintf(b, "\n%s (%d in %d group%s):\n", title, n, len(gs), plural(len(gs), "", "s"))
	for i, g := range gs {
		if i == maxGroups {
			fmt.Fprintf(b, "  ... %d more groups\n", len(gs)-maxGroups)
			break
		}
		fmt.Fprintf(b, "  %s  %s\n", g.Path, g.Class)
	}
}

type jsonPos struct {
	File string `json:"file"`
	Line int    `json:"line,omitempty"`
	Col  int    `json:"col,omitempty"`
}

type jsonFinding struct {
	Code     string           `json:"code"`
	Check    string           `json:"check"`
	Severity mapping.Severity `json:"severity"`
	jsonPos
	Msg     string    `json:"message"`
	Related []jsonPos `json:"related,omitempty"`
}

type jsonGroup struct {
	Path  string `json:"path"`
	Class string `json:"class"`
	Count int    `json:"count"`
}

type jsonReport struct {
	Summary struct {
		Mapping  string `json:"mapping"`
		NPU      string `json:"npu"`
		Bench    string `json:"bench"`
		Errors   int    `json:"errors"`
		Warnings int    `json:"warnings"`
		Infos    int    `json:"infos"`
	} `json:"summary"`
	Findings []jsonFinding `json:"findings"`
	Coverage jsonCoverage  `json:"coverage"`
	// Bands counts the drafted lines per confidence band (none for a
	// hand-written file).
	Bands *jsonBands `json:"bands,omitempty"`
	// Entries is the dump-entry coverage (both sides dump folders only).
	Entries   *jsonCoverage `json:"entries,omitempty"`
	Unmatched struct {
		NPU   []jsonGroup `json:"npu"`
		Bench []jsonGroup `json:"bench"`
	} `json:"unmatched"`
}

type jsonBands struct {
	Sure   int `json:"sure"`
	Check  int `json:"check"`
	Unsure int `json:"unsure"`
}

type jsonCoverage struct {
	Matched int     `json:"matched"`
	Total   int     `json:"total"`
	Ratio   float64 `json:"ratio"`
}

func toJSONCoverage(c Coverage) *jsonCoverage {
	return &jsonCoverage{Matched: c.Matched, Total: c.Total, Ratio: float64(int(c.Ratio()*1e6+0.5)) / 1e6}
}

func toJSONPos(p mapping.Pos) jsonPos { return jsonPos{File: p.File, Line: p.Line, Col: p.Col} }

func toJSONGroups(gs []Group) []jsonGroup {
	out := make([]jsonGroup, 0, len(gs))
	for _, g := range gs {
		out = append(out, jsonGroup(g))
	}
	return out
}

// WriteJSON writes the report as one JSON document with summary, findings,
// coverage and unmatched.
func (r *Report) WriteJSON(w io.Writer) error {
	var j jsonReport
	j.Summary.Mapping, j.Summary.NPU, j.Summary.Bench = r.Mapping, r.NPU, r.Bench
	j.Summary.Errors, j.Summary.Warnings, j.Summary.Infos = r.Counts()
	j.Findings = make([]jsonFinding, 0, len(r.Findings))
	for _, f := range r.Findings {
		jf := jsonFinding{Code: f.Code, Check: f.Check, Severity: f.Severity, jsonPos: toJSONPos(f.Pos), Msg: f.Msg}
		for _, p := range f.Related {
			jf.Related = append(jf.Related, toJSONPos(p))
		}
		j.Findings = append(j.Findings, jf)
	}
	j.Coverage = *toJSONCoverage(r.Coverage)
	if r.Entries != nil {
		j.Entries = toJSONCoverage(*r.Entries)
	}
	if r.Bands.Total() > 0 {
		j.Bands = &jsonBands{Sure: r.Bands.Sure, Check: r.Bands.Check, Unsure: r.Bands.Unsure}
	}
	j.Unmatched.NPU, j.Unmatched.Bench = toJSONGroups(r.UnmatchedNPU), toJSONGroups(r.UnmatchedBench)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(j)
}

// WriteGitHub writes one GitHub Actions workflow command per finding
// ("::error file=...,line=...,col=...,title=CODE check::message"), then a
// notice with the summary.
func (r *Report) WriteGitHub(w io.Writer) error {
	var b strings.Builder
	for _, f := range r.Findings {
		level := "error"
		switch f.Severity {
		case mapping.Warning:
			level = "warning"
		case mapping.Info:
			level = "notice"
		}
		var props []string
		if f.Pos.File != "" {
			props = append(props, "file="+ghProp(f.Pos.File))
		}
		if f.Pos.Line > 0 {
			props = append(props, fmt.Sprintf("line=%d", f.Pos.Line))
		}
		if f.Pos.Col > 0 {
			props = append(props, fmt.Sprintf("col=%d", f.Pos.Col))
		}
		props = append(props, "title="+ghProp(f.Code+" "+f.Check))
		fmt.Fprintf(&b, "::%s %s::%s\n", level, strings.Join(props, ","), ghData(f.Msg))
	}
	fmt.Fprintf(&b, "::notice title=layermap validate::%s\n", ghData(r.Summary()))
	_, err := io.WriteString(w, b.String())
	return err
}

// ghData escapes a workflow command message.
func ghData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

// ghProp escapes a workflow command property value.
func ghProp(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}
