package compare

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/layermap/layermap/mapping"
	"github.com/layermap/layermap/printparse/testkit"
)

// TestMappingHealth: the hand-written mapping with a typo'd class
// and a bad target, and a pairs entry naming no module: each is reported
// with its file:line, the rows the bad target sends nowhere are counted,
// the compared rows are told apart from msprobe's pass count, and
// --strict makes the run fail.
func TestMappingHealth(t *testing.T) {
	text := reverseTemplateMapping(t)
	dir := t.TempDir()
	bad := strings.Replace(text, "Qwen2_5_VLMLP:", "Qwen2_5_VLMPL:", 1)              // a typo'd class (line 25)
	bad = strings.Replace(bad, "  proj: linear_proj\n", "  proj: linear_projj\n", 1) // a bad target (line 23)
	lm := writeText(t, dir, "lm.yaml", bad)
	pairs := writeText(t, dir, "pairs.yaml", "- npu: module.visual.merger.ln_q\n  bench: 0.module.module.image_encoder.projector.layernorm\n- npu: module.no.such.module\n  bench: 0.module.nothing\n")
	run := func(strict bool) *Report {
		return runReverseTemplate(t, lm, pairs, strict)
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

// TestSentNowhereBlame: a rule is blamed only for the rows of the module
// it names, never for those of a module below it that no rule names
// (q_proj below self_attn -> self_attention: an N:1 part); the rows of
// N:1 group calls are the fusion's; every count has at least as many
// rows as entries.
func TestSentNowhereBlame(t *testing.T) {
	text := reverseTemplateMapping(t)
	dir := t.TempDir()
	write := func(name, body string) string { return writeText(t, dir, name, body) }
	good := write("good.yaml", text)
	bad := write("bad.yaml", strings.Replace(text, "  proj: linear_proj\n", "  proj: linear_projj\n", 1))
	var groups []mapping.ModulePair
	for _, l := range []string{"0", "1"} {
		groups = append(groups, mapping.ModulePair{Kind: mapping.KindQKV, Layout: mapping.LayoutInterleaved,
			NPUParts: []string{"module.model.layers." + l + ".self_attn.q_proj", "module.model.layers." + l + ".self_attn.k_proj", "module.model.layers." + l + ".self_attn.v_proj"},
			Bench:    "0.module.module.text_decoder.decoder.layers." + l + ".self_attention.linear_qkv"})
	}
	qkv := writePairs(t, dir, groups...)
	type sum struct {
		blamed   map[string]int // rule substring -> rows
		unnamed  int            // rows of modules no rule names
		qkvFused int            // NPU rows of the groups' calls (q/k/v and the APIs they call), marked fused
	}
	run := func(lm, pairs string) sum {
		rep := runReverseTemplate(t, lm, pairs, false)
		s := sum{blamed: map[string]int{}}
		for _, n := range rep.Ranks[0].Summary.SentNowhere {
			if n.Rows < n.Entries || n.Entries == 0 {
				t.Errorf("%+v: fewer rows than entries, or none", n)
			}
			if n.Rule == "" {
				s.unnamed += n.Rows
			} else {
				s.blamed[n.Rule] += n.Rows
			}
		}
		rows := testkit.ReadCSV(t, rep.Ranks[0].Files[0])
		msg := col(rows, "Err_message")
		for _, r := range rows[1:] {
			if strings.Contains(r[msg], "fused: qkv") || strings.Contains(r[msg], "fused: inputs only (qkv") {
				s.qkvFused++
			}
		}
		return s
	}
	plain, fused, wrong := run(good, ""), run(good, qkv), run(bad, "")
	for name, s := range map[string]sum{"the mapping as msprobe ships it": plain, "with the qkv groups": fused} {
		if len(s.blamed) != 0 {
			t.Errorf("%s: rules blamed %v; every rule of it is right", name, s.blamed)
		}
	}
	if plain.unnamed == 0 || fused.qkvFused == 0 || plain.unnamed-fused.unnamed != fused.qkvFused {
		t.Errorf("unnamed rows %d without the groups, %d with them, %d rows of the groups' calls: the groups' rows must leave the count",
			plain.unnamed, fused.unnamed, fused.qkvFused)
	}
	if len(wrong.blamed) != 1 || wrong.blamed["Qwen2_5_VLVisionSdpaAttention: proj -> linear_projj"] == 0 {
		t.Errorf("a bad target: blamed %v, want the rule with linear_projj alone", wrong.blamed)
	}
}

// TestHealthLayerNotDumped: keys, targets and pairs that name a layer
// index the dumps do not hold (a scope-limited dump, a smaller model
// than the print the mapping was drafted from) are info "layer not
// dumped", not errors, and do not fail --strict; a typo next to them
// still does.
func TestHealthLayerNotDumped(t *testing.T) {
	text := reverseTemplateMapping(t)
	dir := t.TempDir()
	write := func(name, body string) string { return writeText(t, dir, name, body) }
	// the dumps hold layers 0 and 1 (lines 39-40 and 41-42 below)
	layers := "  layers.7.post_attention_layernorm: decoder.layers.7.pre_mlp_layernorm\n  layers.1.input_layernorm: decoder.layers.9.input_layernorm\n"
	typo := "  layers.1.post_attention_layernrm: decoder.layers.1.pre_mlp_layernorm\n"
	base := strings.Replace(text, "  layers: decoder.layers\n", "  layers: decoder.layers\n"+layers, 1)
	notDumped := "- npu: module.model.layers.7.mlp\n  bench: 0.module.module.text_decoder.decoder.layers.7.mlp\n" +
		"- npu: [module.model.layers.5.mlp.gate_proj, module.model.layers.5.mlp.up_proj]\n  bench: 0.module.module.text_decoder.decoder.layers.5.mlp.linear_fc1\n  kind: gate_up\n"
	pairs := write("pairs.yaml", notDumped)
	typoPairs := write("typo_pairs.yaml", notDumped+"- npu: module.model.layers.0.mlpp\n  bench: 0.module.module.text_decoder.decoder.layers.0.mlp\n")
	for _, c := range []struct {
		name, lm, pairs string
		want            map[string]string // file:line -> "severity code"
		failed          bool              // --strict fails on the health
	}{
		{name: "layers not dumped", lm: write("layers.yaml", base), pairs: pairs, want: map[string]string{
			"layers.yaml:39": "info LM102", "layers.yaml:40": "info LM103", "pairs.yaml:1": "info pairs", "pairs.yaml:3": "info pairs",
		}},
		{name: "and a typo in each", lm: write("typo.yaml", strings.Replace(base, layers, layers+typo, 1)), pairs: typoPairs, want: map[string]string{
			"typo.yaml:39": "info LM102", "typo.yaml:41": "error LM102", "typo_pairs.yaml:1": "info pairs", "typo_pairs.yaml:6": "warning pairs",
		}, failed: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			rep := runReverseTemplate(t, c.lm, c.pairs, false)
			got := map[string]string{}
			for _, f := range rep.Health {
				pos := filepath.Base(f.Pos)
				if i := strings.LastIndexByte(pos, ':'); strings.Count(pos, ":") == 2 {
					pos = pos[:i]
				}
				got[pos] = f.Severity + " " + f.Code
				if f.Severity == "info" && f.Code != "LM108" && f.Code != "LM110" && f.Code != "LM111" && !strings.HasPrefix(f.Msg, "layer not dumped: ") {
					t.Errorf("%s: info without the reason", f)
				}
			}
			for pos, want := range c.want {
				if got[pos] != want {
					t.Errorf("%s: %q, want %q (all: %v)", pos, got[pos], want, rep.Health)
				}
			}
			if rep.healthFailed() != c.failed {
				t.Errorf("health failed %v, want %v", rep.healthFailed(), c.failed)
			}
		})
	}
}

// reverseTemplateDir is msprobe's Qwen2.5-VL golden compared with its
// reverse layer_mapping template.
func reverseTemplateDir(t *testing.T) string {
	return testkit.Corpus(t, "msprobe", "golden", "qwen25vl_llamafactory_vs_mindspeed_reverse_template")
}

// reverseTemplateMapping is that golden's layer_mapping.yaml.
func reverseTemplateMapping(t *testing.T) string {
	text, err := os.ReadFile(filepath.Join(reverseTemplateDir(t), "layer_mapping.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return string(text)
}

// runReverseTemplate compares that golden's dumps with the layer mapping
// lm and the pairs file pairs ("": none).
func runReverseTemplate(t *testing.T, lm, pairs string, strict bool) *Report {
	t.Helper()
	root := reverseTemplateDir(t)
	rep, err := Run(Options{Target: filepath.Join(root, "npu", "proc12360"), Golden: filepath.Join(root, "bench", "proc12353"),
		OutDir: t.TempDir(), LayerMappingFile: lm, PairsFile: pairs, Strict: strict, Stamp: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// writeText writes body to dir/name and returns its path.
func writeText(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
