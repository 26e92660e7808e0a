package cmd

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/layermap/layermap/cmd/htmlview/htmltest"
	"github.com/layermap/layermap/printparse/testkit"
)

// TestBrowserCountsAgree: one suggest run of the demo pair states one set
// of counts (infer.Counts: modules msprobe dumps, paired, N:1 parts, pairs
// of containers) in its text report, --report json, the HTML summary, and
// validate of its draft states the same coverage (review item 14). With
// manual matches read back (--pairs-in, msprobe's .vis.config) every
// output counts the pairs they make, and the report no longer lists their
// modules as unmatched (review item 16).
func TestBrowserCountsAgree(t *testing.T) {
	npu, bench := testkit.Testdata(t, "demo", "qwen25vl-mindspeed-mm.txt"), testkit.Testdata(t, "demo", "qwen25vl-llamafactory.txt")
	const qkv, q = "0.module.module.text_decoder.decoder.layers.0.self_attention.linear_qkv", "module.model.layers.0.self_attn.q_proj"
	vis := filepath.Join(t.TempDir(), "graph.vis.config")
	if err := os.WriteFile(vis, fmt.Appendf(nil, `{"Module.%s.ColumnParallelLinear.forward.0": "Module.%s.Linear.forward.0"}`, qkv, q), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		extra []string
	}{{"draft", nil}, {"manual matches", []string{"--pairs-in", vis}}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			at := func(name string) string { return filepath.Join(dir, name) }
			args := append([]string{"suggest", npu, bench, "-o", at("m.yaml"), "--html", at("view.html")}, tc.extra...)
			code, text, errOut := run(args...)
			if code != ExitOK {
				t.Fatalf("suggest exit %d: %s", code, errOut)
			}
			code, js, errOut := run(append([]string{"suggest", npu, bench, "-o", at("m2.yaml"), "--report", "json"}, tc.extra...)...)
			if code != ExitOK {
				t.Fatalf("suggest --report json exit %d: %s", code, errOut)
			}
			var doc struct {
				Pairs     []json.RawMessage
				Unmatched struct{ NPU, Bench []string }
				Counts    struct {
					NPU, Bench struct {
						Modules, Paired, Unmatched int
						Parts                      int `json:"n1_parts"`
					}
					Pairs      int
					Containers int `json:"container_pairs"`
				}
			}
			if err := json.Unmarshal([]byte(js), &doc); err != nil {
				t.Fatal(err)
			}
			c := doc.Counts
			if c.Pairs != len(doc.Pairs) || c.NPU.Paired+c.NPU.Unmatched != c.NPU.Modules || c.NPU.Paired == 0 || c.Containers >= c.Pairs {
				t.Fatalf("counts %+v do not add up (%d pairs listed)", c, len(doc.Pairs))
			}
			// the text report
			for _, want := range []string{
				fmt.Sprintf("have a bench partner (%d of %d)", c.NPU.Paired, c.NPU.Modules),
				fmt.Sprintf("pairs (%d: %d of them pairs of containers", c.Pairs, c.Containers),
				fmt.Sprintf("unmatched NPU modules (%d of the %d modules msprobe dumps", c.NPU.Unmatched, c.NPU.Modules),
				fmt.Sprintf("unmatched bench modules (%d of the %d modules msprobe dumps, %d of them N:1 parts", c.Bench.Unmatched, c.Bench.Modules, c.Bench.Parts),
			} {
				if !strings.Contains(text, want) {
					t.Errorf("text report lacks %q", want)
				}
			}
			// validate of the draft: the same modules, and the resolver
			// pairs what the draft pairs (it proves every pair)
			code, vout, _ := run("validate", at("m.yaml"), "--npu", npu, "--bench", bench, "--format", "json")
			if code != ExitOK {
				t.Fatalf("validate exit %d: %s", code, vout)
			}
			var vdoc struct{ Coverage struct{ Matched, Total int } }
			if err := json.Unmarshal([]byte(vout), &vdoc); err != nil {
				t.Fatal(err)
			}
			if vdoc.Coverage.Matched != c.NPU.Paired || vdoc.Coverage.Total != c.NPU.Modules {
				t.Errorf("validate coverage %d/%d, suggest %d/%d", vdoc.Coverage.Matched, vdoc.Coverage.Total, c.NPU.Paired, c.NPU.Modules)
			}
			// the HTML summary
			p := htmltest.Open(t, at("view.html"))
			sum := htmltest.Eval[string](t, p, `document.getElementById('summary').textContent`)
			for _, want := range []string{
				fmt.Sprintf("%d modules msprobe dumps, %d paired, %d unmatched", c.NPU.Modules, c.NPU.Paired, c.NPU.Unmatched),
				fmt.Sprintf("%d modules msprobe dumps, %d paired, %d unmatched (%d of them N:1 parts", c.Bench.Modules, c.Bench.Paired, c.Bench.Unmatched, c.Bench.Parts),
				fmt.Sprintf("pairs%d (%d of them pairs of containers", c.Pairs, c.Containers),
			} {
				if !strings.Contains(sum, want) {
					t.Errorf("HTML summary lacks %q:\n%s", want, sum)
				}
			}
			if m := regexp.MustCompile(`(\d+) sure, (\d+) check, (\d+) unsure`).FindStringSubmatch(sum); m != nil {
				n := 0
				for _, s := range m[1:] {
					k, _ := strconv.Atoi(s)
					n += k
				}
				if tc.extra == nil && n != c.Pairs {
					t.Errorf("HTML bands count %d pairs, want %d", n, c.Pairs)
				}
			}
			p.CheckClean(t)
			if tc.extra == nil {
				return
			}
			// the manual match and its line's other instances are pairs,
			// not unmatched modules
			for _, u := range doc.Unmatched.NPU {
				if strings.HasSuffix(u, "self_attention.linear_qkv") && strings.Contains(u, "text_decoder") {
					t.Errorf("%s still unmatched after the manual match", u)
				}
			}
		})
	}
}
