package compare

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/layermap/layermap/printparse/source"
)

// asked lists the match sources a run was given, for the summary: each is
// counted even when it matched nothing ("name" is always there), but for
// those set aside: -fm beside a mapping (Config.fuzzyJoin), -dm beside a
// layer mapping (readInputs).
func asked(opt Options, in inputs) map[string]bool {
	return map[string]bool{"name": true, "fuzzy": opt.Fuzzy && !in.mapped(), "data_mapping": in.dataMapping != nil,
		"layer_mapping": opt.LayerMappingFile != "", "pairs": opt.PairsFile != ""}
}

// countAsked puts a 0 in s.MatchedBy for every source the run was given
// that matched nothing.
func (rep *Report) countAsked(s *Summary) {
	for k, on := range rep.asked {
		if _, ok := s.MatchedBy[k]; on && k != "name" && !ok {
			if s.MatchedBy == nil {
				s.MatchedBy = map[string]int{}
			}
			s.MatchedBy[k] = 0
		}
	}
}

// Err reports a rank pair with nothing to compare (a side without an entry
// msprobe can compare): an input problem, never a clean run.
func (rep *Report) Err() error {
	for _, r := range rep.Ranks {
		if r.Summary != nil && (r.Summary.Rows == 0 || r.Summary.BenchRows == 0) {
			return &source.Error{Msg: fmt.Sprintf("%s vs %s: no valid data to compare", r.Target, r.Golden)}
		}
	}
	return nil
}

// Findings tells whether the run found problems (exit status 1): a rank
// with error rows, or one where no NPU row found a bench partner (msprobe
// marks an unmatched row pass, so such a table is no clean run; notes says
// so for each).
func (rep *Report) Findings() (found bool, notes []string) {
	for _, r := range rep.Ranks {
		if r.Summary == nil {
			continue
		}
		if r.Summary.NPUUnmatched >= r.Summary.Rows {
			notes = append(notes, fmt.Sprintf("%s vs %s: expected NPU rows with a bench partner, found none of %d: nothing was compared, whatever the pass count says; check --mapping, -dm, --pairs or which dumps were paired",
				r.Target, r.Golden, r.Summary.Rows))
			found = true
		}
		if r.Summary.Error > 0 {
			found = true
		}
	}
	if rep.strict && rep.healthFailed() {
		notes = append(notes, fmt.Sprintf("--strict: the mapping has %d health findings (see the summary)", len(rep.Health)))
		found = true
	}
	return found, notes
}

// WriteJSON writes the report as indented JSON.
func (rep *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// WriteText writes the run's summary as layermap prints it: per rank the
// mode, rows and files, the result counts, unmatched rows, the rows each
// match source found (a source the run was given shows even at 0), and
// the first divergence.
func (rep *Report) WriteText(w io.Writer) error {
	if len(rep.Health) > 0 {
		fmt.Fprintf(w, "mapping health: %d findings against the dumps\n", len(rep.Health))
		for _, f := range rep.Health {
			fmt.Fprintf(w, "  %s\n", f)
		}
	}
	for _, r := range rep.Ranks {
		s := r.Summary
		head := "compare"
		if r.Rank != "" {
			head += " " + r.Rank
		}
		if s.Rows == 0 || s.BenchRows == 0 {
			side := r.Target
			if s.Rows > 0 {
				side = r.Golden
			}
			fmt.Fprintf(w, "%s: no valid data found in %s (no entry msprobe can compare); no table written\n", head, side)
			continue
		}
		fmt.Fprintf(w, "%s: %s mode, %d rows -> %s\n", head, s.Mode, s.Rows, strings.Join(r.Files, ", "))
		fmt.Fprintf(w, "  result: %d pass, %d warning, %d error\n", s.Pass, s.Warning, s.Error)
		fmt.Fprintf(w, "  compared: %d rows (%d pass, %d warning, %d error); not compared: %d", s.Compared,
			s.ComparedResults.Pass, s.ComparedResults.Warning, s.ComparedResults.Error, s.Rows-s.Compared)
		if n := s.Rows - s.Compared - s.NPUUnmatched; n > 0 {
			fmt.Fprintf(w, " (%d of them N:1 parts and inputs-only rows)", n)
		}
		fmt.Fprintln(w)
		fmt.Fprintf(w, "  unmatched: %d NPU rows without a bench row, %d bench rows not compared\n", s.NPUUnmatched, s.BenchUnmatched)
		for _, n := range s.SentNowhere {
			if n.Rule == "" {
				fmt.Fprintf(w, "    %d rows (%d entries) of modules no rule names, below a module a rule renamed: no such module on the bench side (an N:1 part, a function there, or a missing rule; see LM110)\n", n.Rows, n.Entries)
				continue
			}
			fmt.Fprintf(w, "    %d rows (%d entries) sent nowhere by %s (%s)\n", n.Rows, n.Entries, n.Pos, n.Rule)
		}
		writeFused(w, r)
		var srcs []string
		for _, k := range []string{"name", "fuzzy", "data_mapping", "layer_mapping", "pairs", "group"} {
			if n, ok := s.MatchedBy[k]; ok {
				srcs = append(srcs, fmt.Sprintf("%s %d", strings.ReplaceAll(k, "_", " "), n))
			}
		}
		if len(srcs) > 0 {
			fmt.Fprintf(w, "  matched by: %s\n", strings.Join(srcs, ", "))
		}
		if len(s.Divergences) == 0 {
			fmt.Fprintln(w, "  first divergence: none (no compared output beyond its dtype's noise floor)")
			continue
		}
		for _, d := range s.Divergences {
			what := "API"
			if d.Module {
				what = "module"
			}
			label := "divergence" // listed in execution order, the first divergence among them
			if d == s.First {
				label = "first divergence"
			}
			fmt.Fprintf(w, "  %s, %s, %s (%s): %s (bench %s)\n", label, d.Direction, strings.ReplaceAll(d.Class, "_", " "), what, d.NPUEntry, d.BenchEntry)
			fmt.Fprintf(w, "    %s vs %s: %s\n", d.Row, d.BenchRow, d.Why)
			if len(d.Messages) > 0 {
				fmt.Fprintf(w, "    %s\n", strings.Join(d.Messages, "; "))
			}
			if d.Enclosing != "" {
				fmt.Fprintf(w, "    in %s (bench %s)\n", d.Enclosing, d.BenchEnclosing)
			}
			if d.Stack != "" {
				fmt.Fprintf(w, "    at %s\n", strings.ReplaceAll(d.Stack, "\n", " "))
			}
		}
	}
	return nil
}

// progressBar renders "[#####.....]  42% 1.2/2.9 GB", in the unit that
// suits the total (KB, MB or GB).
func progressBar(done, total int64) string {
	if total <= 0 {
		return byteSizes(done, -1)
	}
	done = min(done, total)
	const width = 30
	frac := float64(done) / float64(total)
	n := int(frac * width)
	return fmt.Sprintf("[%s%s] %3d%% %s", strings.Repeat("#", n), strings.Repeat(".", width-n),
		int(frac*100), byteSizes(done, total))
}

// byteSizes renders "done/total UNIT" ("done UNIT" when total < 0).
func byteSizes(done, total int64) string {
	ref := max(done, total)
	var f func(int64) string
	unit := "KB"
	switch {
	case ref >= 1<<30:
		f, unit = func(v int64) string { return fmt.Sprintf("%.1f", float64(v)/(1<<30)) }, "GB"
	case ref >= 1<<20:
		f, unit = func(v int64) string { return fmt.Sprint(v >> 20) }, "MB"
	default:
		f = func(v int64) string { return fmt.Sprint((v + 1023) >> 10) }
	}
	if total < 0 {
		return f(done) + " " + unit
	}
	return f(done) + "/" + f(total) + " " + unit
}

// writeFused writes the N:1 groups and shards of a rank pair and the rows
// they touched, per kind.
func writeFused(w io.Writer, r RankReport) {
	s := r.Summary
	if len(s.Fused) == 0 && len(r.Groups) == 0 && r.Shards == "" {
		return
	}
	kinds := make([]string, 0, len(s.Fused))
	for k := range s.Fused {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	var parts []string
	for _, k := range kinds {
		c := s.Fused[k]
		parts = append(parts, fmt.Sprintf("%s %d combined, %d shared inputs, %d inputs only, %d parts", k, c.Combined, c.Shared, c.InputsOnly, c.Parts))
	}
	head := fmt.Sprintf("  fused: %d N:1 groups", len(r.Groups))
	if r.Shards != "" {
		head += ", " + r.Shards + " as one (tensor parallel)"
	}
	if len(parts) > 0 {
		head += "; rows: " + strings.Join(parts, "; ")
	}
	fmt.Fprintln(w, head)
	for _, m := range s.FusedWarnings {
		fmt.Fprintf(w, "    warning: %s\n", m)
	}
}
