package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/layermap/layermap/cmd/htmlview/htmltest"
	"github.com/layermap/layermap/printparse/testkit"
)

// pickAndMatch selects a module on each side by path through the page's
// search box, picks it with the details panel's button, and matches.
func pickAndMatch(t *testing.T, p *htmltest.Page, npuPath, benchPath string, children bool) {
	t.Helper()
	for k, path := range []string{npuPath, benchPath} {
		p.Do(t,
			chromedp.SetValue(chromedp.ID("search"), path),
			chromedp.SendKeys(chromedp.ID("search"), "\r"),
		)
		// Enter steps through the matches; the module is the one whose path
		// is exactly the query, on side k.
		for range 20 {
			got := htmltest.Eval[string](t, p, `document.querySelector('#details .path') ? document.querySelector('#details .path').textContent : ''`)
			side := htmltest.Eval[string](t, p, `document.querySelector('#details td') ? document.querySelector('#details td').textContent : ''`)
			if got == path && strings.HasPrefix(side, []string{"NPU", "bench"}[k]) {
				break
			}
			p.Do(t, chromedp.SendKeys(chromedp.ID("search"), "\r"))
		}
		p.Click(t, `document.querySelector('#details button[data-act="pick"]')`)
	}
	if !children {
		p.Click(t, `document.getElementById('kids')`)
	}
	p.Click(t, `document.querySelector('#manual button[data-act="match"]')`)
}

// runAll runs a layermap command line and returns its exit status and
// output, stdout then stderr.
func runAll(args ...string) (int, string) {
	code, out, errOut := run(args...)
	return code, out + errOut
}

// The round trip, through the commands: suggest --html writes the
// page; a manual match there gives layer_mapping lines; the mapping with
// them passes validate; compare pairs the rows of the two modules and its
// --html page shows them paired. The page's manual_pairs.yaml, and the same
// match as msprobe's .vis.config, read back with suggest --pairs-in, give
// the same line.
func TestBrowserManualRoundTrip(t *testing.T) {
	n, b := testkit.Testdata(t, "demo", "dumps", "llamafactory"), testkit.Testdata(t, "demo", "dumps", "mindspeed-mm")
	dir := t.TempDir()
	at := func(name string) string { return filepath.Join(dir, name) }
	if code, out := runAll("suggest", n, b, "-o", at("draft.yaml"), "--html", at("view.html")); code != 0 {
		t.Fatalf("suggest exit %d: %s", code, out)
	}
	p := htmltest.Open(t, at("view.html"))
	const npuQ, benchQ = "module.model.layers.0.self_attn.q_proj", "0.module.module.text_decoder.decoder.layers.0.self_attention.linear_qkv"
	pickAndMatch(t, p, npuQ, benchQ, true)
	type manualPair struct{ NPU, Bench, How, Line string }
	got := htmltest.Eval[[]manualPair](t, p, `layermapView.manual()`)
	if len(got) != 1 || got[0].How != "line" {
		t.Fatalf("page made %+v, want one pair expressed by one line", got)
	}
	lines := htmltest.Eval[string](t, p, `layermapView.manualLines()`)
	if shown := htmltest.Eval[string](t, p, `document.getElementById('outyaml').value`); shown != lines {
		t.Errorf("textarea shows %q, want %q", shown, lines)
	}
	write := func(name, text string) string { return testkit.WriteFile(t, dir, name, text) }
	merged := write("layer_mapping.yaml", htmltest.Eval[string](t, p, `layermapView.mergedMapping()`))
	manualPairs := write("manual_pairs.yaml", htmltest.Eval[string](t, p, `layermapView.manualPairsYAML()`))
	p.CheckClean(t)

	if code, out := runAll("validate", merged, "--npu", n, "--bench", b); code != 0 {
		t.Fatalf("validate exit %d on the page's mapping:\n%s", code, out)
	}
	if err := os.Mkdir(at("out"), 0o755); err != nil {
		t.Fatal(err)
	}
	if code, out := runAll("compare", "-tp", n, "-gp", b, "--mapping", merged, "-o", at("out"), "--html"); code > 1 {
		t.Fatalf("compare exit %d: %s", code, out)
	}
	csvs, _ := filepath.Glob(at("out/compare_result_*.csv"))
	pages, _ := filepath.Glob(at("out/compare_result_*.html"))
	if len(csvs) != 1 || len(pages) != 1 || strings.TrimSuffix(csvs[0], ".csv") != strings.TrimSuffix(pages[0], ".html") {
		t.Fatalf("compare --html wrote %v and %v, want a page named as the table", csvs, pages)
	}
	matched := 0
	for _, row := range testkit.ReadCSV(t, csvs[0]) {
		if strings.HasPrefix(row[0], "Module."+npuQ+".") && strings.HasPrefix(row[1], "Module."+benchQ+".") {
			matched++
		}
	}
	if matched == 0 {
		t.Errorf("compare with the page's mapping pairs no row of %s with %s", npuQ, benchQ)
	}
	cp := htmltest.Open(t, pages[0])
	if partner := htmltest.Eval[string](t, cp, `(() => { const i = layermapView.lookup(0, '`+npuQ+`'); layermapView.reveal(0, i); const a = document.querySelector('#details a.go'); return a ? a.textContent : ''; })()`); partner != benchQ {
		t.Errorf("compare's page pairs %s with %q, want %s", npuQ, partner, benchQ)
	}
	cp.CheckClean(t)

	// read back: the page's manual pairs, and the same match as msprobe's
	// .vis.config (graph node names, both directions)
	vis := write("match.vis.config", `{"Module.`+npuQ+`.Linear.forward.0": "Module.`+benchQ+`.ColumnParallelLinear.forward.0",
 "Module.`+benchQ+`.ColumnParallelLinear.forward.0": "Module.`+npuQ+`.Linear.forward.0"}`)
	want := strings.TrimSpace(strings.SplitN(lines, "\n", 3)[1])
	want = strings.TrimSuffix(want, "  # manual match (layermap view)")
	for _, in := range []string{manualPairs, vis} {
		code, out := runAll("suggest", n, b, "--pairs-in", in, "-o", at("again.yaml"))
		if code != 0 {
			t.Fatalf("suggest --pairs-in %s: exit %d: %s", in, code, out)
		}
		again, err := os.ReadFile(at("again.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(again), want+"  # manual match") || !strings.Contains(out, "1 layer_mapping lines, 0 sidecar pairs") {
			t.Errorf("suggest --pairs-in %s: the draft lacks %q or the summary says otherwise:\n%s", filepath.Base(in), want, out)
		}
	}
}
