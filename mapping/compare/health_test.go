package compare

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/layermap/layermap/printparse/testkit"
)

// TestMappingHealth: the hand-written mapping with a typo'd class
// and a bad target, and a pairs entry naming no module: each is reported
// with its file:line, the rows the bad target sends nowhere are counted,
// the compared rows are told apart from msprobe's pass count, and
// --strict makes the run fail.
func TestMappingHealth(t *testing.T) {
	root := testkit.Corpus(t, "msprobe", "golden", "qwen25vl_llamafactory_vs_mindspeed_reverse_template")
	text, err := os.ReadFile(filepath.Join(root, "layer_mapping.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bad := strings.Replace(string(text), "Qwen2_5_VLMLP:", "Qwen2_5_VLMPL:", 1)      // a typo'd class (line 25)
	bad = strings.Replace(bad, "  proj: linear_proj\n", "  proj: linear_projj\n", 1) // a bad target (line 23)
	lm := filepath.Join(dir, "lm.yaml")
	if err := os.WriteFile(lm, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	pairs := filepath.Join(dir, "pairs.yaml")
	if err := os.WriteFile(pairs, []byte("- npu: module.visual.merger.ln_q\n  bench: 0.module.module.image_encoder.projector.layernorm\n- npu: module.no.such.module\n  bench: 0.module.nothing\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(strict bool) *Report {
		rep, err := Run(Options{Target: filepath.Join(root, "npu", "proc12360"), Golden: filepath.Join(root, "bench", "proc12353"),
			OutDir: t.TempDir(), LayerMappingFile: lm, PairsFile: pairs, Strict: strict, Stamp: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	rep := run(false)
	want := map[string]string{
		lm + ":25:1":   "LM101",
		lm + ":23:9":   "LM103",
		pairs + ":3:3": "pairs",
	}
	for pos, code := range want {
		found := false
		for _, f := range rep.Health {
			if strings.HasPrefix(f.Pos, pos) && f.Code == code {
				found = true
			}
		}
		if !found {
			t.Errorf("no %s finding at %s in %v", code, pos, rep.Health)
		}
	}
	s := rep.Ranks[0].Summary
	nowhere := 0
	for _, n := range s.SentNowhere {
		if strings.Contains(n.Rule, "linear_projj") {
			nowhere = n.Rows
		}
	}
	if nowhere == 0 {
		t.Errorf("sent nowhere %+v: want the rows the bad target sends nowhere", s.SentNowhere)
	}
	if s.Compared+s.NPUUnmatched != s.Rows || s.Pass <= s.ComparedResults.Pass || s.ComparedResults.Pass+s.ComparedResults.Warning+s.ComparedResults.Error != s.Compared {
		t.Errorf("rows %d, compared %d (%+v), unmatched %d, pass %d: the compared rows must be told apart from msprobe's pass count",
			s.Rows, s.Compared, s.ComparedResults, s.NPUUnmatched, s.Pass)
	}
	var text2 strings.Builder
	rep.WriteText(&text2)
	for _, w := range []string{"mapping health:", "LM101", "linear_projj", "compared: "} {
		if !strings.Contains(text2.String(), w) {
			t.Errorf("summary lacks %q:\n%s", w, text2.String())
		}
	}
	if found, _ := rep.Findings(); found != (s.Error > 0) {
		t.Errorf("without --strict, health findings must not decide the exit status")
	}
	if found, notes := run(true).Findings(); !found || !strings.Contains(strings.Join(notes, " "), "--strict") {
		t.Errorf("--strict: found %v, notes %v; want the health findings to fail the run", found, notes)
	}
}
