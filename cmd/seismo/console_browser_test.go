package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/seismo-agent/seismo/demo"
	"github.com/seismo-agent/seismo/internal/testlog"
)

var updateScreenshots = flag.Bool("update-screenshots", false, "rewrite docs/console/*.png from the browser test")

// chromiumPath finds Debian's chromium; without it the browser tests skip,
// except under CI=true, where a missing browser is a failure.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is required under CI=true (apt-get install chromium)")
	}
	t.Skip("chromium not installed")
	return ""
}

// shopTarget is a loopback scrape target replaying the thread-pool outage:
// while the fault is on, p99 latency and the queue rise and CPU stays flat
// (the workers are waiting, not computing), at a steady request rate.
type shopTarget struct {
	fault   atomic.Bool
	scrapes atomic.Int64
	start   time.Time
}

func (s *shopTarget) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	n := s.scrapes.Add(1)
	el := time.Since(s.start).Seconds()
	wiggle := math.Sin(float64(n)) // deterministic noise, so baselines have a spread
	p99, queue := 0.12+0.004*wiggle, 1+wiggle
	if s.fault.Load() {
		p99, queue = 2.4+0.05*wiggle, 60+wiggle
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	fmt.Fprintf(w, "shop_request_duration_p99_seconds %g\nshop_queue_length %g\n", p99, queue)
	fmt.Fprintf(w, "process_cpu_seconds_total %g\nshop_requests_total %g\n", 0.2*el, 30*el)
}

const consoleRules = `groups:
  - name: shop
    interval: 1s
    rules:
      - anomaly: SaturationWithoutCPU
        detector:
          type: decoupling
          symptom: max(shop_request_duration_p99_seconds)
          resource: sum(rate(process_cpu_seconds_total[5s]))
          traffic: sum(rate(shop_requests_total[5s]))
          warm_up: 15
          baseline: 1m
          lag: 0s
          confirm: 2
        labels: {severity: page}
        annotations:
          summary: "Requests are waiting, not computing: {{ $summary }}"
        draft: {component: Storefront, impact: degraded_performance}
      - alert: QueueBacklog
        expr: shop_queue_length > 20
        labels: {severity: page}
        annotations: {summary: "{{ $value }} requests queued"}
`

const consoleConfig = `data_dir: state
http:
  listen_address: 127.0.0.1:0
  route_prefix: %q
  enable_admin_api: true
log:
  level: warn
collectors:
  scrape_interval: 1s
  scrape_timeout: 900ms
  host: {enabled: false}
  cgroup: {enabled: false}
  scrape_configs:
    - job_name: shop
      static_configs: [{targets: [%q]}]
rules:
  files: [shop.rules.yml]
  evaluation_interval: 1s
  builtin: {enabled: false}
notify:
  route:
    receiver: hook
    group_by: [severity]
    group_wait: 1s
    group_interval: 1s
    repeat_interval: 1h
  drafts:
    receivers: [hook]
  receivers:
    - name: hook
      webhook_configs:
        - url: %s
`

// startConsoleAgent runs an agent in-process over target with the given
// route prefix and webhook URL, and returns its base URL (prefix
// included).
func startConsoleAgent(t *testing.T, target, hook, prefix string) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "shop.rules.yml"), []byte(consoleRules), 0o600))
	cfgFile := filepath.Join(dir, "seismo.yml")
	require.NoError(t, os.WriteFile(cfgFile, fmt.Appendf(nil, consoleConfig, prefix, target, hook), 0o600))
	var logs testlog.Buffer
	a, err := newAgentFromFile(cfgFile, &logs)
	require.NoError(t, err)
	base := startAgent(t, a) + strings.TrimRight(prefix, "/")
	t.Cleanup(func() {
		if t.Failed() {
			_, rules := do(t, "GET", base+"/api/v1/rules")
			t.Logf("agent log:\n%s\nrules: %s", logs.String(), rules)
		}
	})
	return base
}

// hookEvents collects what the webhook receiver got.
type hookEvents struct {
	mu  sync.Mutex
	evs []demo.Event
}

func (h *hookEvents) alerts(name string) (firing, total int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, e := range h.evs {
		if e.Alert != nil && e.Alert.Labels["alertname"] == name {
			total++
			if e.Alert.Status == "firing" {
				firing++
			}
		}
	}
	return firing, total
}

// browserErrors collects JavaScript exceptions, console.error calls and
// failed loads the browser reports.
type browserErrors struct {
	mu   sync.Mutex
	list []string
}

func (b *browserErrors) add(s string) { b.mu.Lock(); b.list = append(b.list, s); b.mu.Unlock() }
func (b *browserErrors) get() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.list...)
}

// newBrowser starts headless chromium with a fresh profile and no network
// beyond what the pages load.
func newBrowser(t *testing.T, errs *browserErrors) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 800),
	)
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelB := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelB(); cancelA() })
	// The first call starts the browser; it must not run under a timeout.
	require.NoError(t, chromedp.Listen(bctx, func(ev any) {
		switch e := ev.(type) {
		case *runtime.EventExceptionThrown:
			msg := e.ExceptionDetails.Text
			if x := e.ExceptionDetails.Exception; x != nil {
				msg += " " + x.Description
			}
			errs.add("exception: " + msg)
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError {
				var parts []string
				for _, a := range e.Args {
					parts = append(parts, string(a.Value)+a.Description)
				}
				errs.add("console.error: " + strings.Join(parts, " "))
			}
		case *cdplog.EventEntryAdded:
			if e.Entry.Level == cdplog.EntryLevelError {
				errs.add("log: " + e.Entry.Text + " " + e.Entry.URL)
			}
		}
	}))
	ctx, cancel := context.WithTimeout(bctx, 30*time.Second)
	defer cancel()
	_, err := chromedp.Call(ctx, runtime.Enable, cdp.Empty{})
	require.NoError(t, err)
	_, err = chromedp.Call(ctx, cdplog.Enable, cdp.Empty{})
	require.NoError(t, err)
	return bctx
}

// browse runs browser actions with a deadline.
func browse(t *testing.T, bctx context.Context, timeout time.Duration, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(bctx, timeout)
	defer cancel()
	require.NoError(t, chromedp.Do(ctx, steps...))
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](t *testing.T, bctx context.Context, expr string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(bctx, 10*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	require.NoError(t, err)
	return v
}

// attr returns an attribute of the first element sel selects.
func attr(t *testing.T, bctx context.Context, sel, name string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(bctx, 10*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.CSS(sel), name))
	require.NoError(t, err)
	require.True(t, v.Exists, "%s has no %s", sel, name)
	return v.Value
}

// text returns the text of the first element sel selects.
func text(t *testing.T, bctx context.Context, sel string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(bctx, 10*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	require.NoError(t, err)
	return s
}

func screenshot(t *testing.T, bctx context.Context, name string) {
	t.Helper()
	if !*updateScreenshots {
		return
	}
	browse(t, bctx, 5*time.Second, chromedp.Sleep(300*time.Millisecond))
	ctx, cancel := context.WithTimeout(bctx, 20*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	require.NoError(t, err)
	dir := filepath.Join("..", "..", "docs", "console")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, name), png, 0o644))
}

// TestConsoleInBrowser loads every console page in headless chromium
// against an agent behind a route prefix that is watching the thread-pool
// outage: it creates a silence through the form, sees the alert with its
// explanation and chart appear without a reload, sees the silenced alert
// kept out of the webhook until the silence is expired through the page,
// copies a draft, and checks the browser reported no error. A second agent
// without a prefix checks every page at the root.
func TestConsoleInBrowser(t *testing.T) {
	errs := &browserErrors{}
	bctx := newBrowser(t, errs)

	shop := &shopTarget{start: time.Now()}
	target := httptest.NewServer(shop)
	defer target.Close()
	recv := demo.NewReceiver(nil)
	hookSrv := httptest.NewServer(recv)
	defer hookSrv.Close()
	hook := &hookEvents{}
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case e := <-recv.Events():
				hook.mu.Lock()
				hook.evs = append(hook.evs, e)
				hook.mu.Unlock()
			case <-stop:
				return
			}
		}
	}()
	hostport := strings.TrimPrefix(target.URL, "http://")
	base := startConsoleAgent(t, hostport, hookSrv.URL+"/", "/seismo")
	require.True(t, strings.HasSuffix(base, "/seismo"))

	// A silence for the queue alert, made through the form before the
	// outage starts.
	browse(t, bctx, 30*time.Second,
		chromedp.Navigate(base+"/silences"),
		chromedp.WaitVisible(chromedp.CSS(`#silence-form`)),
		chromedp.SetValue(chromedp.CSS(`#silence-form input[name=matchers]`), `alertname="QueueBacklog"`),
		chromedp.SetValue(chromedp.CSS(`#silence-form input[name=duration]`), `1h`),
		chromedp.SetValue(chromedp.CSS(`#silence-form input[name=createdBy]`), `oncall`),
		chromedp.SetValue(chromedp.CSS(`#silence-form input[name=comment]`), `known backlog, INC-42`),
		chromedp.Click(chromedp.CSS(`#silence-form button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`#silence-result.ok`)),
		chromedp.WaitVisible(chromedp.CSS(`tr.active button.expire`)),
	)
	require.Contains(t, text(t, bctx, `table.silences`), `alertname="QueueBacklog"`)
	require.Contains(t, text(t, bctx, `table.silences`), `known backlog, INC-42`)

	// The rules page shows the detector warming up; the outage starts once
	// it has learned its baseline.
	browse(t, bctx, 30*time.Second, chromedp.Navigate(base+"/rules"), chromedp.WaitVisible(chromedp.CSS(`table.rules`)))
	require.Eventually(t, func() bool {
		return strings.Contains(text(t, bctx, `#content`), "100% warm")
	}, time.Minute, 200*time.Millisecond, "the detector warms up")

	// The alerts page is open before the outage; the alert must appear by
	// the page's own refresh, not by a reload (the marker survives).
	browse(t, bctx, 30*time.Second,
		chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(chromedp.CSS(`#content h1`)),
	)
	eval[int](t, bctx, `window.seismoMarker = 42`)
	shop.fault.Store(true)
	browse(t, bctx, 90*time.Second, chromedp.WaitVisible(chromedp.CSS(`article.firing[data-alert="SaturationWithoutCPU"] figure.chart svg`)))
	browse(t, bctx, 20*time.Second, chromedp.WaitVisible(chromedp.CSS(`article.firing[data-alert="QueueBacklog"] a.badge.silenced`)))
	require.Zero(t, eval[int](t, bctx, `document.querySelectorAll('article[data-alert="SaturationWithoutCPU"] .silenced').length`))
	require.Equal(t, 42, eval[int](t, bctx, `window.seismoMarker`), "the page refreshed itself without a reload")

	card := text(t, bctx, `article[data-alert="SaturationWithoutCPU"]`)
	for _, want := range []string{"Requests are waiting, not computing", "Likely cause:", "not on CPU", "p99 latency", "CPU", "traffic", "severity=\"page\""} {
		require.Contains(t, card, want)
	}
	points := attr(t, bctx, `article[data-alert="SaturationWithoutCPU"] svg polyline`, "points")
	require.Greater(t, strings.Count(points, ","), 5, "the chart draws the signal's history")
	bands := eval[int](t, bctx, `document.querySelectorAll('article[data-alert="SaturationWithoutCPU"] svg polygon').length`)
	spans := eval[int](t, bctx, `document.querySelectorAll('article[data-alert="SaturationWithoutCPU"] svg rect[fill="#f4b4b4"]').length`)
	require.Positive(t, bands, "the baseline band is drawn")
	require.Positive(t, spans, "the firing span is drawn")
	silenceHref := attr(t, bctx, `article[data-alert="SaturationWithoutCPU"] a.button`, "href")
	require.True(t, strings.HasPrefix(silenceHref, "/seismo/silences?matchers="), silenceHref)
	screenshot(t, bctx, "alerts.png")

	// The webhook got the decoupling alert but not the silenced one.
	require.Eventually(t, func() bool { f, _ := hook.alerts("SaturationWithoutCPU"); return f > 0 }, 30*time.Second, 100*time.Millisecond)
	_, queued := hook.alerts("QueueBacklog")
	require.Zero(t, queued, "the silenced alert was not notified")

	// Phone width.
	if *updateScreenshots {
		browse(t, bctx, 20*time.Second, chromedp.EmulateViewport(390, 844), chromedp.Navigate(base+"/"),
			chromedp.WaitVisible(chromedp.CSS(`article[data-alert="SaturationWithoutCPU"] svg`)))
		screenshot(t, bctx, "alerts-phone.png")
		browse(t, bctx, 10*time.Second, chromedp.EmulateViewport(1280, 800))
	}
	browse(t, bctx, 20*time.Second, chromedp.EmulateViewport(390, 844), chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(chromedp.CSS(`article[data-alert="SaturationWithoutCPU"] svg`)))
	overflow := eval[bool](t, bctx, `document.documentElement.scrollWidth > window.innerWidth + 1`)
	browse(t, bctx, 10*time.Second, chromedp.EmulateViewport(1280, 800))
	require.False(t, overflow, "the alerts page fits a phone's width")

	// Rules.
	browse(t, bctx, 30*time.Second, chromedp.Navigate(base+"/rules"), chromedp.WaitVisible(chromedp.CSS(`table.rules`)))
	rulesText := text(t, bctx, `#content`)
	for _, want := range []string{"SaturationWithoutCPU", "decoupling", "QueueBacklog", "firing", "ok", "100% warm"} {
		require.Contains(t, rulesText, want)
	}
	screenshot(t, bctx, "rules.png")

	// Drafts: the Identified draft (the detector names the cause), copied.
	browse(t, bctx, 30*time.Second, chromedp.Navigate(base+"/drafts"),
		chromedp.WaitVisible(chromedp.CSS(`section.incident .draft button.copy`)))
	require.Contains(t, text(t, bctx, `section.incident`), "Storefront")
	require.Contains(t, text(t, bctx, `section.incident .draft`), "has been identified")
	screenshot(t, bctx, "drafts.png")
	browse(t, bctx, 10*time.Second, chromedp.Click(chromedp.CSS(`section.incident .draft button.copy`)))
	require.Eventually(t, func() bool {
		return eval[string](t, bctx, `document.querySelector('section.incident .draft button.copy').textContent`) == "Copied"
	}, 10*time.Second, 100*time.Millisecond, "the copy button reports success")

	// Status: version, targets with their last scrape, the config.
	browse(t, bctx, 30*time.Second, chromedp.Navigate(base+"/status"), chromedp.WaitVisible(chromedp.CSS(`table.targets`)))
	require.Contains(t, text(t, bctx, `table.targets`), hostport)
	require.Contains(t, text(t, bctx, `table.targets`), "up")
	require.Contains(t, text(t, bctx, `pre.config`), "route_prefix: /seismo")
	screenshot(t, bctx, "status.png")

	// Expire the silence through the page: the queue alert now reaches the
	// webhook, so it was the silence that held it back.
	browse(t, bctx, 30*time.Second, chromedp.Navigate(base+"/silences"),
		chromedp.WaitVisible(chromedp.CSS(`tr.active button.expire`)))
	screenshot(t, bctx, "silences.png")
	browse(t, bctx, 30*time.Second, chromedp.Click(chromedp.CSS(`tr.active button.expire`)),
		chromedp.WaitNotPresent(chromedp.CSS(`tr.active`)))
	require.Eventually(t, func() bool { f, _ := hook.alerts("QueueBacklog"); return f > 0 }, 30*time.Second, 100*time.Millisecond,
		"the queue alert is notified once its silence is expired")

	// Without a prefix every page answers at the root, its links too.
	root := startConsoleAgent(t, hostport, hookSrv.URL+"/", "")
	for _, page := range []string{"/", "/rules", "/drafts", "/silences", "/status"} {
		browse(t, bctx, 30*time.Second, chromedp.Navigate(root+page), chromedp.WaitVisible(chromedp.CSS(`#content`)))
		nav := eval[[]string](t, bctx, `Array.from(document.querySelectorAll('nav a')).map(a => a.getAttribute('href'))`)
		require.Equal(t, []string{"/", "/rules", "/drafts", "/silences", "/status"}, nav)
	}
	// One refresh cycle at the root, so its script ran too.
	browse(t, bctx, 30*time.Second, chromedp.Sleep(6*time.Second))
	require.Empty(t, errs.get(), "the browser reported errors")
}
