package infer

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/layermap/layermap/mapping"
	"github.com/layermap/layermap/printparse"
)

// mutatedPrint rewrites a print(model) text: with the given seed it
// renames some module attributes and drops some single-line leaves. The
// result is still a valid dump of a different, related model.
func mutatedPrint(text string, seed uint64) string {
	rng := rand.New(rand.NewPCG(seed, 7))
	names := []string{"proj", "norm", "attn", "block", "dense", "head", "mixer", "ffn", "ln_f", "wte"}
	var out []string
	for _, line := range strings.Split(text, "\n") {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "(") && strings.Contains(t, "): ") {
			end := strings.Index(t, ")")
			name := t[1:end]
			leaf := strings.HasSuffix(t, ")") && !strings.HasSuffix(t, "(")
			switch r := rng.IntN(10); {
			case r == 0 && leaf && !isNumber(name) && !strings.Contains(name, "-"):
				continue // drop a leaf
			case r == 1 && !isNumber(name) && !strings.Contains(name, "-"):
				line = strings.Replace(line, "("+name+")", "("+names[rng.IntN(len(names))]+"_"+name+")", 1)
			}
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}

// TestMutatedPairs drafts pair A with one side mutated, many times: the
// alignment may be anything, but the YAML must always make msprobe's
// resolver reproduce it (both directions), and every conflict be proven.
// -short tries 4 seeds of 24.
func TestMutatedPairs(t *testing.T) {
	t.Parallel()
	npu, bench := pairs[0].load(t)
	texts := map[string]string{}
	for _, side := range []struct{ name, rel string }{{"npu", pairs[0].npu}, {"bench", pairs[0].bench}} {
		texts[side.name] = readCorpus(t, side.rel)
	}
	seeds := uint64(24)
	if testing.Short() {
		seeds = 4 // the sweep is long under -race
	}
	for seed := uint64(1); seed <= seeds; seed++ {
		for _, which := range []string{"npu", "bench"} {
			mt := mutatedPrint(texts[which], seed)
			if mt == texts[which] {
				t.Fatalf("seed %d %s: nothing mutated", seed, which)
			}
			m, err := printparse.ParseText([]byte(mt), "mutated-"+which, printparse.Options{Index: -1})
			if err != nil {
				t.Fatalf("seed %d %s: mutated text does not parse: %v", seed, which, err)
			}
			a, b := m, bench
			if which == "bench" {
				a, b = npu, m
			}
			for _, tmpl := range []string{TemplateNone, TemplateAuto} {
				r, err := Suggest(a, b, Options{Template: tmpl})
				if err != nil {
					t.Fatal(err)
				}
				if r.Forward.Proven != 1 || r.Reverse.Proven != 1 {
					t.Errorf("seed %d %s template %s: proven %.3f / %.3f; sidecar %v / %v", seed, which, tmpl, r.Forward.Proven, r.Reverse.Proven, first(r.Forward.Sidecar), first(r.Reverse.Sidecar))
				}
				for _, c := range append(r.Forward.Conflicts, r.Reverse.Conflicts...) {
					if !c.Proven {
						t.Errorf("seed %d %s template %s: conflict %s not proven", seed, which, tmpl, c.Class)
					}
				}
			}
		}
	}
}

func first(p []mapping.ModulePair) []mapping.ModulePair {
	if len(p) > 2 {
		return p[:2]
	}
	return p
}
