package htmlview_test

import (
	"bytes"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"

	"github.com/layermap/layermap/cmd/htmlview"
	"github.com/layermap/layermap/cmd/htmlview/htmltest"
	"github.com/layermap/layermap/infer"
	"github.com/layermap/layermap/mapping/compare"
	"github.com/layermap/layermap/printparse"
	"github.com/layermap/layermap/printparse/testkit"
	"github.com/layermap/layermap/printparse/treetest"
)

func TestMain(m *testing.M) {
	if spec := os.Getenv(htmlChildEnv); spec != "" {
		os.Exit(htmlBenchChild(spec))
	}
	code := m.Run()
	htmltest.Close()
	os.Exit(code)
}

// suggestView runs suggest on two inputs and builds its view.
func suggestView(t testing.TB, npuPath, benchPath string) *htmlview.View {
	t.Helper()
	npu, bench := treetest.Load(t, npuPath), treetest.Load(t, benchPath)
	r, err := infer.Suggest(npu, bench, infer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	v, err := htmlview.FromSuggest(npu, bench, r)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// suggestPage writes the suggest view of two inputs and returns its path.
func suggestPage(t testing.TB, npuPath, benchPath string) string {
	t.Helper()
	return writePage(t, suggestView(t, npuPath, benchPath))
}

// writePage writes a view to a temporary file and returns its path.
func writePage(t testing.TB, v *htmlview.View) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "view.html")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := htmlview.Write(f, v); err != nil {
		t.Fatal(err)
	}
	return out
}

// compareView runs compare on two dump folders with a layer mapping (none
// when mapText is empty), the view collected as compare --html does, and
// returns the view and the page compare wrote beside the table.
func compareView(t testing.TB, npuDir, benchDir, mapText string) (*htmlview.View, string) {
	t.Helper()
	return compareRun(t, npuDir, benchDir, mapText, compareOpts{})
}

// compareOpts vary compareRun: the sink's row budget (0: the default),
// an XLSX table (the sink then gets cells, not CSV lines).
type compareOpts struct {
	budget int
	xlsx   bool
}

// compareRun is compareView with options.
func compareRun(t testing.TB, npuDir, benchDir, mapText string, o compareOpts) (*htmlview.View, string) {
	t.Helper()
	dir := t.TempDir()
	opt := compare.Options{Target: npuDir, Golden: benchDir, OutDir: dir, XLSX: o.xlsx}
	var mf *htmlview.MappingFile
	if mapText != "" {
		var err error
		if mf, err = htmlview.NewMappingFile("layer_mapping.yaml", mapText); err != nil {
			t.Fatal(err)
		}
		opt.LayerMappingFile = filepath.Join(t.TempDir(), "layer_mapping.yaml")
		if err := os.WriteFile(opt.LayerMappingFile, []byte(mapText), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var sink *htmlview.CompareSink
	opt.Views = compare.ViewFunc(func(d compare.ViewDumps) compare.ViewSink {
		sink = htmlview.NewCompareSink(d, mf)
		if o.budget > 0 {
			sink.Budget = o.budget
		}
		return sink
	})
	rep, err := compare.Run(opt)
	if err != nil {
		t.Fatal(err)
	}
	rr := rep.Ranks[0]
	page := rr.Files[len(rr.Files)-1]
	if !strings.HasSuffix(page, ".html") || !strings.HasPrefix(filepath.Base(page), "compare_result_") {
		t.Fatalf("compare wrote %v, want the page beside the table", rr.Files)
	}
	v, err := sink.View(&rr)
	if err != nil {
		t.Fatal(err)
	}
	return v, page
}

// comparePage writes the compare view (see compareView) and returns the page.
func comparePage(t testing.TB, npuDir, benchDir, mapText string) string {
	t.Helper()
	_, page := compareView(t, npuDir, benchDir, mapText)
	return page
}

// draft returns suggest's forward draft for two inputs, as YAML.
func draft(t testing.TB, npuPath, benchPath string) string {
	t.Helper()
	r, err := infer.Suggest(treetest.Load(t, npuPath), treetest.Load(t, benchPath), infer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := r.Forward.Mapping.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// shot saves a screenshot for a human to look at: under $LM_SHOTS when
// set, else in the test's temporary folder.
func shot(t *testing.T, p *htmltest.Page, name string) []byte {
	t.Helper()
	png := p.Screenshot(t)
	dir := os.Getenv("LM_SHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
		t.Fatal(err)
	}
	return png
}

func count(t *testing.T, p *htmltest.Page, css string) int {
	t.Helper()
	return htmltest.Eval[int](t, p, "document.querySelectorAll("+strconv.Quote(css)+").length")
}

// waitFor waits until a JavaScript condition holds (the panes redraw on
// the next animation frame).
func waitFor(t *testing.T, p *htmltest.Page, cond string) bool {
	t.Helper()
	_, err := chromedp.Run(p.Ctx, chromedp.Poll[bool](cond, chromedp.WithPollingTimeout(3*time.Second)))
	return err == nil
}

func text(t *testing.T, p *htmltest.Page, js string) string {
	t.Helper()
	return htmltest.Eval[string](t, p, js)
}

// The suggest page of the demo print(model) pair: both trees, the pairs,
// a repeat group that expands, a pair followed to the other side, the
// partner lit on hover, the conflicts.
func TestBrowserSuggestPage(t *testing.T) {
	p := htmltest.Open(t, suggestPage(t, testkit.Testdata(t, "demo", "qwen25vl-mindspeed-mm.txt"), testkit.Testdata(t, "demo", "qwen25vl-llamafactory.txt")))
	if a, b := count(t, p, "#scroll0 .row"), count(t, p, "#scroll1 .row"); a < 10 || b < 10 {
		t.Fatalf("rows shown: NPU %d, bench %d", a, b)
	}
	if s := text(t, p, `document.getElementById('summary').textContent`); !strings.Contains(s, "TransformerLayer") || !strings.Contains(s, "wants") {
		t.Errorf("summary shows no TransformerLayer conflict: %q", s)
	}
	// expand a collapsed repeat group
	h0 := text(t, p, `document.getElementById('spacer0').style.height`)
	p.Click(t, `[...document.querySelectorAll('#scroll0 .row')].find(r => r.querySelector('.grp') && r.querySelector('.tw').textContent === '▸').querySelector('.tw')`)
	if h1 := text(t, p, `document.getElementById('spacer0').style.height`); h1 == h0 {
		t.Errorf("expanding a repeat group left the NPU tree at %s", h0)
	}
	if n := count(t, p, "#scroll0 .grp"); n == 0 {
		t.Error("no repeat group row (print(model) collapses (0-27): 28 x ...)")
	}
	// hover a paired NPU row: its partner lights up
	type pt struct{ X, Y float64 }
	p.Do(t, chromedp.Evaluate[chromedp.Void](`layermapView.reveal(0, layermapView.lookup(0, '0.module.module.text_decoder'))`))
	at := htmltest.Eval[pt](t, p, `(() => { const r = [...document.querySelectorAll('#scroll0 .row')].find(r => r.textContent.includes('(text_decoder)')).querySelector('.cl').getBoundingClientRect(); return {X: r.left + 5, Y: r.top + r.height / 2}; })()`)
	p.Do(t, chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, at.X, at.Y))
	if !waitFor(t, p, `document.querySelectorAll('#scroll1 .row.hl').length > 0`) {
		t.Error("hovering text_decoder lit up no bench row")
	}
	// follow the pair
	p.Click(t, `[...document.querySelectorAll('#scroll0 .row')].find(r => r.textContent.includes('(text_decoder)')).querySelector('.cl')`)
	partner := text(t, p, `document.querySelector('#details a.go').textContent`)
	p.Click(t, `document.querySelector('#details a.go')`)
	if got := text(t, p, `document.querySelector('#details .path').textContent`); got != partner || partner != "module.model" {
		t.Errorf("following the pair of text_decoder selected %q, want its partner %q (module.model)", got, partner)
	}
	if !waitFor(t, p, `document.querySelectorAll('#scroll1 .row.sel').length === 1`) {
		t.Error("the partner is not the selected bench row")
	}
	shot(t, p, "suggest.png")
	p.CheckClean(t)
}

// The compare page of the demo msprobe dumps (a corpus pair): rows
// coloured with msprobe's colours, the first divergence opened from the
// summary on both sides, the table rows of the selected module.
func TestBrowserComparePage(t *testing.T) {
	n, b := testkit.Testdata(t, "demo", "dumps/llamafactory"), testkit.Testdata(t, "demo", "dumps/mindspeed-mm")
	p := htmltest.Open(t, comparePage(t, n, b, draft(t, n, b)))
	if count(t, p, "#firstdiv a.go") != 2 {
		t.Fatal("the summary has no first divergence with links to both sides")
	}
	p.Click(t, `document.querySelector('#firstdiv a.go')`)
	// the classified first divergence: the patch embedding's projection,
	// whose inputs agree and whose weights and outputs do not
	if got := text(t, p, `document.querySelector('#details .path').textContent`); got != "module.visual.patch_embed.proj" {
		t.Errorf("first divergence opened %q, want module.visual.patch_embed.proj (the root cause)", got)
	}
	if !waitFor(t, p, `document.querySelectorAll('#scroll0 .row.sel').length === 1`) || count(t, p, "#scroll1 .row.r-p, #scroll1 .row.r-w, #scroll1 .row.r-e") == 0 {
		t.Error("the divergence is not selected on the NPU side, or the bench side shows no result colour")
	}
	if count(t, p, "#scroll0 .row.r-w, #scroll0 .row.r-e") == 0 {
		t.Error("no NPU row coloured warning or error")
	}
	if n := count(t, p, "#details .rows tr"); n < 3 {
		t.Errorf("the selected module shows %d table rows, want its inputs, outputs and API calls", n)
	}
	if s := text(t, p, `document.querySelector('#details .rows').textContent`); !strings.Contains(s, "Module.module.visual.patch_embed.proj.Conv3d.forward.0.output.0") {
		t.Errorf("the rows of module.visual.patch_embed.proj miss the diverging output row: %.300s", s)
	}
	shot(t, p, "compare.png")
	p.CheckClean(t)
}

// The layout: header on top, the two trees side by side with the link
// gutter between them and the panel on the right, rows in both panes, and
// msprobe's warning/error colours on screen.
func TestBrowserLayout(t *testing.T) {
	n, b := testkit.Testdata(t, "demo", "dumps/llamafactory"), testkit.Testdata(t, "demo", "dumps/mindspeed-mm")
	p := htmltest.Open(t, comparePage(t, n, b, draft(t, n, b)))
	// a module with an error row among its table rows (Tensor.mean.3.forward
	// runs in it), opened by search
	p.Do(t, chromedp.Evaluate[chromedp.Void](`(() => { const s = document.getElementById('search'); s.value = 'module.visual.blocks.1.norm2'; s.dispatchEvent(new KeyboardEvent('keydown', {key: 'Enter'})); })()`))
	waitFor(t, p, `document.querySelectorAll('#scroll0 .row.sel').length === 1`)
	type box struct{ L, T, R, B float64 }
	rect := func(id string) box {
		return htmltest.Eval[box](t, p, `(() => { const r = document.getElementById('`+id+`').getBoundingClientRect(); return {L: r.left, T: r.top, R: r.right, B: r.bottom}; })()`)
	}
	top, p0, g, p1, side := rect("top"), rect("pane0"), rect("gutter"), rect("pane1"), rect("side")
	if !(top.B <= p0.T && p0.R <= g.L+1 && g.R <= p1.L+1 && p1.R <= side.L+1 && p0.L == 0 && side.R >= 1590) {
		t.Errorf("layout: header %v, NPU %v, gutter %v, bench %v, panel %v", top, p0, g, p1, side)
	}
	if p0.R-p0.L < 400 || p1.R-p1.L < 400 || p0.B-p0.T < 800 {
		t.Errorf("panes too small: NPU %v, bench %v", p0, p1)
	}
	// the selected module's table rows, an error row among them
	p.Do(t, chromedp.Evaluate[chromedp.Void](`document.querySelector('#details .rows').scrollIntoView({block: 'nearest'})`))
	img, err := png.Decode(bytes.NewReader(shot(t, p, "layout.png")))
	if err != nil {
		t.Fatal(err)
	}
	colours := map[string][3]uint8{"warning": {0xFF, 0xDC, 0x7F}, "error": {0xFF, 0x70, 0x4D}, "unmatched": {0xC7, 0xC7, 0xC7}}
	for name, c := range colours {
		seen := 0
		bd := img.Bounds()
		for y := bd.Min.Y; y < bd.Max.Y; y += 2 {
			for x := bd.Min.X; x < bd.Max.X; x += 2 {
				r, g, b, _ := img.At(x, y).RGBA()
				if uint8(r>>8) == c[0] && uint8(g>>8) == c[1] && uint8(b>>8) == c[2] {
					seen++
				}
			}
		}
		if seen < 50 {
			t.Errorf("msprobe's %s colour #%02X%02X%02X covers %d sampled pixels, want rows of it", name, c[0], c[1], c[2], seen)
		}
	}
	// the gutter draws the links
	if n := htmltest.Eval[int](t, p, `(() => { const c = document.getElementById('gutter'); const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data; let n = 0; for (let i = 3; i < d.length; i += 4) if (d[i]) n++; return n; })()`); n < 200 {
		t.Errorf("the gutter draws %d pixels of links", n)
	}
	p.CheckClean(t)
}

// The compare page of msprobe's quick-start ResNet50 dumps (step 0 against
// step 1, a corpus pair compared by name): both trees, every module
// paired, result colours, the first divergence opened.
func TestBrowserCorpusQuickStart(t *testing.T) {
	n := testkit.Corpus(t, "msprobe", "examples", "quick_start", "gpu_dump", "step0", "proc2016")
	b := testkit.Corpus(t, "msprobe", "examples", "quick_start", "gpu_dump", "step1", "proc2016")
	v, page := compareView(t, n, b, "")
	if len(v.Pairs) < 50 {
		t.Fatalf("%d module pairs, want the ResNet50's modules paired by name", len(v.Pairs))
	}
	p := htmltest.Open(t, page)
	if a, c := count(t, p, "#scroll0 .row"), count(t, p, "#scroll1 .row"); a < 10 || c < 10 {
		t.Fatalf("rows shown: NPU %d, bench %d", a, c)
	}
	if count(t, p, "#scroll0 .row.un") != 0 {
		t.Error("a module of one ResNet50 is grey against the same model")
	}
	if v.Summary.First != nil {
		p.Click(t, `document.querySelector('#firstdiv a.go')`)
		if !waitFor(t, p, `document.querySelectorAll('#scroll0 .row.sel').length === 1 && document.querySelectorAll('#details .rows tr').length > 1`) {
			t.Error("the first divergence did not open with its rows")
		}
	}
	if count(t, p, "#scroll0 .row.r-p, #scroll0 .row.r-w, #scroll0 .row.r-e") == 0 {
		t.Error("no row carries a compare result colour")
	}
	shot(t, p, "quickstart.png")
	p.CheckClean(t)
}

// A page over its row budget says so: the summary counts the rows left
// out and names the table file that has them all, and a module that lost
// rows says how many of its rows it shows.
func TestBrowserLeftOutRows(t *testing.T) {
	n, b := testkit.Testdata(t, "demo", "dumps/llamafactory"), testkit.Testdata(t, "demo", "dumps/mindspeed-mm")
	v, page := compareRun(t, n, b, "", compareOpts{budget: 40_000})
	var cut *printparse.Node
	for node, total := range v.Table.Total {
		if len(v.Table.Rows[node]) > 0 && total > len(v.Table.Rows[node]) && (cut == nil || node.Path < cut.Path) {
			cut = node
		}
	}
	if cut == nil {
		t.Fatal("no module lost rows to the budget")
	}
	p := htmltest.Open(t, page)
	if s := text(t, p, `(document.getElementById('tabnote') || {}).textContent || ''`); s != v.Table.Note || !strings.Contains(s, "table rows are on this page") {
		t.Errorf("summary note %q, want %q", s, v.Table.Note)
	}
	p.Do(t, chromedp.Evaluate[chromedp.Void](`layermapView.reveal(0, layermapView.lookup(0, '`+cut.Path+`'))`))
	want := fmt.Sprintf("%d of %d rows shown", len(v.Table.Rows[cut]), v.Table.Total[cut])
	if !waitFor(t, p, `(document.querySelector('#details .cut') || {}).textContent !== undefined`) {
		t.Fatalf("%s: the module's rows do not say that rows were left out", cut.Path)
	}
	if s := text(t, p, `document.querySelector('#details .cut').textContent`); !strings.HasPrefix(s, want) || !strings.Contains(s, "has them all") {
		t.Errorf("%s: %q, want %q and where the rest is", cut.Path, s, want)
	}
	if got := count(t, p, "#details .rows tr"); got != len(v.Table.Rows[cut])+1 {
		t.Errorf("%s: %d table lines, want the header and %d rows", cut.Path, got, len(v.Table.Rows[cut]))
	}
	p.CheckClean(t)
}
