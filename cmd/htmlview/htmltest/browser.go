// Package htmltest drives the HTML view in headless Chromium for tests:
// one browser per test binary, one tab per page, every console error and
// every request that is not the page's own file:// URL recorded.
package htmltest

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// ChromiumPath returns the browser to run: $LAYERMAP_CHROMIUM, else the
// first of chromium, chromium-browser, google-chrome on $PATH, else "".
func ChromiumPath() string {
	if p := os.Getenv("LAYERMAP_CHROMIUM"); p != "" {
		return p
	}
	for _, n := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	return ""
}

var (
	once     sync.Once
	allocCtx context.Context
	allocErr error
	userDir  string
	stop     context.CancelFunc
)

// browser starts the shared headless Chromium (its context makes tabs) with the flags that work in
// a closed sandbox (no GPU, no sandbox, no background networking).
func browser() (context.Context, error) {
	once.Do(func() {
		path := ChromiumPath()
		if path == "" {
			allocErr = fmt.Errorf("no Chromium found: install Debian's chromium (apt-get install chromium) or set LAYERMAP_CHROMIUM")
			return
		}
		userDir, allocErr = os.MkdirTemp("", "layermap-chromium-")
		if allocErr != nil {
			return
		}
		opts := append(chromedp.DefaultExecAllocatorOptions[:],
			chromedp.ExecPath(path),
			chromedp.UserDataDir(userDir),
			chromedp.NoSandbox,
			chromedp.DisableGPU,
			chromedp.WindowSize(1600, 1000),
			chromedp.Flag("disable-quic", true),
			chromedp.Flag("disable-component-update", true),
			chromedp.Flag("disable-sync", true),
			chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND"),
		)
		actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
		var cancelB context.CancelFunc
		allocCtx, cancelB = chromedp.NewContext(actx)
		stop = func() { cancelB(); cancelA() }
		allocErr = chromedp.Do(allocCtx) // starts the browser; each page is a tab of it
	})
	return allocCtx, allocErr
}

// Close ends the shared browser and removes its profile folder; call it
// from TestMain after the tests ran.
func Close() {
	if stop != nil {
		stop()
	}
	if userDir != "" {
		os.RemoveAll(userDir)
	}
}

// Page is one tab showing one HTML file.
type Page struct {
	Ctx      context.Context
	URL      string
	mu       sync.Mutex
	errs     []string
	requests []string
	cancel   context.CancelFunc
}

// Open loads the HTML file at path from a file:// URL in a new tab, or
// skips the test with one line when no browser can be had. The tab closes
// when the test ends.
func Open(t testing.TB, path string) *Page {
	t.Helper()
	actx, err := browser()
	if err != nil {
		t.Skip("browser tests skipped: " + err.Error())
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	u := (&url.URL{Scheme: "file", Path: abs}).String()
	ctx, cancel := chromedp.NewContext(actx)
	ctx, cancelT := context.WithTimeout(ctx, 60*time.Second)
	p := &Page{Ctx: ctx, URL: u, cancel: func() { cancelT(); cancel() }}
	err = chromedp.Listen(ctx, func(ev any) {
		p.mu.Lock()
		defer p.mu.Unlock()
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeWarning {
				var parts []string
				for _, a := range ev.Args {
					parts = append(parts, string(a.Value)+a.Description)
				}
				p.errs = append(p.errs, "console."+string(ev.Type)+": "+strings.Join(parts, " "))
			}
		case *runtime.EventExceptionThrown:
			d := ev.ExceptionDetails
			msg := d.Text
			if d.Exception != nil {
				msg += " " + d.Exception.Description
			}
			p.errs = append(p.errs, fmt.Sprintf("exception at %d:%d: %s", d.LineNumber, d.ColumnNumber, msg))
		case *network.EventRequestWillBeSent:
			if ev.Request.URL != u && !strings.HasPrefix(ev.Request.URL, "blob:") {
				p.requests = append(p.requests, ev.Request.URL)
			}
		}
	})
	t.Cleanup(p.cancel)
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(u), chromedp.WaitReady(chromedp.ID("main"))); err != nil {
		t.Fatalf("load %s: %v (errors: %v)", u, err, p.Errors())
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool]("window.layermapView !== undefined")); err != nil {
		t.Fatalf("load %s: the view did not start: %v (errors: %v)", u, err, p.Errors())
	}
	return p
}

// Click clicks the element the JavaScript expression expr finds (the
// view redraws its rows on every frame, so a click at coordinates could
// land on a newer row), failing the test when it finds none.
func (p *Page) Click(t testing.TB, expr string) {
	t.Helper()
	if !Eval[bool](t, p, `(() => { const e = `+expr+`; if (!e) return false; e.click(); return true; })()`) {
		t.Fatalf("nothing to click: %s", expr)
	}
}

// Errors returns the console errors and uncaught exceptions so far.
func (p *Page) Errors() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.errs...)
}

// Requests returns the URLs the page asked for besides its own file.
func (p *Page) Requests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.requests...)
}

// Do runs chromedp actions in the tab, failing the test on error.
func (p *Page) Do(t testing.TB, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(p.Ctx, actions...); err != nil {
		t.Fatalf("%v (page errors: %v)", err, p.Errors())
	}
}

// Eval evaluates a JavaScript expression in the page and returns its value.
func Eval[T any](t testing.TB, p *Page, js string) T {
	t.Helper()
	v, err := chromedp.Run(p.Ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("evaluate %s: %v (page errors: %v)", js, err, p.Errors())
	}
	return v
}

// Poll waits until a JavaScript condition holds in the page.
func Poll(t testing.TB, p *Page, cond string) {
	t.Helper()
	if _, err := chromedp.Run(p.Ctx, chromedp.Poll[bool](cond, chromedp.WithPollingTimeout(10*time.Second))); err != nil {
		t.Fatalf("waiting for %s: %v (page errors: %v)", cond, err, p.Errors())
	}
}

// Screenshot captures the viewport as PNG.
func (p *Page) Screenshot(t testing.TB) []byte {
	t.Helper()
	b, err := chromedp.Run(p.Ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// CheckClean fails the test when the page logged an error or asked for
// anything over the network.
func (p *Page) CheckClean(t testing.TB) {
	t.Helper()
	if e := p.Errors(); len(e) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(e, "\n"))
	}
	if r := p.Requests(); len(r) > 0 {
		t.Errorf("network requests from a self-contained page:\n%s", strings.Join(r, "\n"))
	}
}
