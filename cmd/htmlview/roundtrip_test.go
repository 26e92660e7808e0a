package htmlview_test

import (
	"encoding/csv"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/layermap/layermap/cmd"
	"github.com/layermap/layermap/cmd/htmlview"
	"github.com/layermap/layermap/cmd/htmlview/htmltest"
	"github.com/layermap/layermap/mapping"
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
		click(t, p, `document.querySelector('#details button[data-act="pick"]')`)
	}
	if !children {
		click(t, p, `document.getElementById('kids')`)
	}
	click(t, p, `document.querySelector('#manual button[data-act="match"]')`)
}

// The round trip: a manual match in the page gives layer_mapping
// lines; the mapping with them passes validate, and compare pairs the rows
// of the two modules. The page's lines are the ones Manual derives.
func TestBrowserManualRoundTrip(t *testing.T) {
	n, b := testkit.Testdata(t, "demo", "dumps/llamafactory"), testkit.Testdata(t, "demo", "dumps/mindspeed-mm")
	draftText := draft(t, n, b)
	p := htmltest.Open(t, suggestPage(t, n, b))
	const npuQ, benchQ = "module.model.layers.0.self_attn.q_proj", "0.module.module.text_decoder.decoder.layers.0.self_attention.linear_qkv"
	pickAndMatch(t, p, npuQ, benchQ, true)
	type manualPair struct{ NPU, Bench, How, Line string }
	got := htmltest.Eval[[]manualPair](t, p, `layermapView.manual()`)
	if out := os.Getenv("LM_SHOT"); out != "" {
		os.WriteFile(out, p.Screenshot(t), 0o644)
	}
	if len(got) != 1 || got[0].How != "line" {
		t.Fatalf("page made %+v, want one pair expressed by one line", got)
	}
	lines := htmltest.Eval[string](t, p, `layermapView.manualLines()`)
	merged := htmltest.Eval[string](t, p, `layermapView.mergedMapping()`)
	shown := htmltest.Eval[string](t, p, `document.getElementById('outyaml').value`)
	if shown != lines {
		t.Errorf("textarea shows %q, want %q", shown, lines)
	}
	p.CheckClean(t)

	// Go derives the same line from the same pair.
	m, _, err := mapping.Parse([]byte(draftText), "draft.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r := htmlview.Manual(loadTree(t, n), loadTree(t, b), m, []mapping.ModulePair{{NPU: npuQ, Bench: benchQ}})
	if len(r.Lines) != 1 || got[0].Line != r.Lines[0].Class+": "+r.Lines[0].Key+": "+r.Lines[0].Value {
		t.Fatalf("page line %q, Manual: %+v", got[0].Line, r)
	}
	if len(r.Extended) != 1 || r.Extended[0].NPU != "module.model.layers.1.self_attn.q_proj" {
		t.Errorf("the class rule should also pair layer 1; extended: %+v", r.Extended)
	}

	dir := t.TempDir()
	mapFile := filepath.Join(dir, "layer_mapping.yaml")
	if err := os.WriteFile(mapFile, []byte(merged), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb strings.Builder
	if code := cmd.Execute([]string{"validate", mapFile, "--npu", n, "--bench", b}, nil, &out, &errb); code != 0 {
		t.Fatalf("validate exit %d on the page's mapping:\n%s\n%s\n--- mapping:\n%s", code, out.String(), errb.String(), merged)
	}
	if code := cmd.Execute([]string{"compare", "-tp", n, "-gp", b, "--mapping", mapFile, "-o", dir}, nil, &out, &errb); code > 1 {
		t.Fatalf("compare exit %d: %s", code, errb.String())
	}
	csvs, _ := filepath.Glob(filepath.Join(dir, "compare_result_*.csv"))
	if len(csvs) != 1 {
		t.Fatalf("compare wrote %v", csvs)
	}
	rows := readCSV(t, csvs[0])
	matched := 0
	for _, row := range rows {
		if strings.HasPrefix(row[0], "Module."+npuQ+".") && strings.HasPrefix(row[1], "Module."+benchQ+".") {
			matched++
		}
	}
	if matched == 0 {
		t.Errorf("compare with the page's mapping pairs no row of %s with %s", npuQ, benchQ)
	}
}

func readCSV(t testing.TB, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := csv.NewReader(f)
	var rows [][]string
	for {
		rec, err := r.Read()
		if err == io.EOF {
			return rows
		}
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, rec)
	}
}

var _ = slices.Contains[[]string]
