package ui

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/seismo-agent/seismo/web"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// jsonHandler answers every request with {"status":"success","data":data}.
func jsonHandler(data any) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"status": "success", "data": data})
	})
}

var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func testOptions() Options {
	active := now.Add(-5 * time.Minute)
	return Options{
		Alerts: jsonHandler(map[string]any{"alerts": []map[string]any{
			{"labels": map[string]string{"alertname": "Plain", "job": "<script>alert(1)</script>"}, "state": "firing", "activeAt": active, "value": "3e+00",
				"annotations": map[string]string{"summary": "plain one"}},
			{"labels": map[string]string{"alertname": "Slow", "severity": "page"}, "state": "firing", "activeAt": active.Add(time.Minute), "value": "1e+00",
				"annotations": map[string]string{},
				"explanation": map[string]any{"detector": "decoupling", "kind": "saturation_without_cpu", "score": 1, "summary": "p99 up, CPU flat",
					"cause": "waiting on workers", "signals": []map[string]any{{"name": "symptom", "unit": "s", "current": 2.4, "expected": 0.12, "lower": 0.1, "upper": 0.14}}}},
			{"labels": map[string]string{"alertname": "Queue"}, "state": "firing", "activeAt": active.Add(2 * time.Minute), "value": "0e+00",
				"keepFiringSince": now.Add(-90 * time.Second), "heldBy": "lingering", "annotations": map[string]string{},
				"explanation": map[string]any{"detector": "auto", "kind": "dip", "evidence": "changes", "score": 0.7, "direction": "down",
					"summary": "Queue: value 0, expected 0 (normal 0 to 4); it moves from sample to sample far more than usual"}},
			{"labels": map[string]string{"alertname": "Inflight", "instance": "a"}, "state": "firing", "activeAt": active, "value": "1.2e+02",
				"suppressedBy": "Queue", "suppressedHang": true, "annotations": map[string]string{}},
			{"labels": map[string]string{"alertname": "Errors", "instance": "a"}, "state": "firing", "activeAt": active, "value": "1e-01",
				"suppressedBy": "Surge", "annotations": map[string]string{}},
			{"labels": map[string]string{"alertname": "Warm"}, "state": "warming_up", "value": "0e+00"},
		}}),
		Rules:    jsonHandler(map[string]any{"groups": []any{}}),
		Silences: jsonHandler([]any{}),
		Drafts: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, `{"status":"error","error":"boom"}`, http.StatusInternalServerError)
		}),
		Chart: func(w io.Writer, alert labels.Labels) error {
			_, err := io.WriteString(w, `<svg class="test-chart" data-for="`+alert.Get("alertname")+`"><polyline points="1,2 3,4"/></svg>`)
			return err
		},
		SilencedBy: func(ls labels.Labels) []string {
			if ls.Get("alertname") == "Plain" {
				return []string{"s1"}
			}
			return nil
		},
		Status: func() Status { return Status{Version: "1.2.3", StartedAt: now.Add(-time.Hour), LastReloadOK: true} },
		Config: func() ([]byte, error) { return []byte("password: <secret>\n"), nil },
		Targets: func() []Target {
			return []Target{{Job: "shop", Instance: "a:1", Health: "down", LastScrape: now.Add(-2 * time.Second), LastError: "connection refused"}}
		},
		Now: func() time.Time { return now },
	}
}

// serve mounts the console on a real web.Server and returns its base URL;
// the API pool has apiSlots slots (0: the default) and no queue.
func serve(t *testing.T, opts Options, prefix string, apiSlots int) (*web.Server, string) {
	t.Helper()
	s, err := web.New(web.Options{ListenAddress: "127.0.0.1:0", Set: metrics.NewSet(), Logger: slog.New(slog.DiscardHandler),
		RoutePrefix: prefix, MaxConcurrentRequests: apiSlots, MaxQueuedRequests: -1})
	require.NoError(t, err)
	opts.Prefix = s.RoutePrefix()
	c, err := New(opts)
	require.NoError(t, err)
	for p, h := range c.Routes() {
		s.HandleConsole(p, h)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done) })
	return s, "http://" + s.Addr().String() + s.RoutePrefix()
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

func TestPages(t *testing.T) {
	_, base := serve(t, testOptions(), "/ops/seismo", 0)
	tests := []struct {
		path      string
		want, not []string
	}{
		{"/", []string{
			`<meta name="seismo-prefix" content="/ops/seismo">`, `href="/ops/seismo/static/console.css"`, `href="/ops/seismo/rules"`,
			"p99 up, CPU flat", "waiting on workers", "2.4 s", "120 ms", `class="test-chart" data-for="Slow"`,
			"plain one", `job="&lt;script&gt;alert(1)&lt;/script&gt;"`, "since 5m0s ago",
			"Detector auto · shape dip · evidence changes · score", "it moves from sample to sample far more than usual",
			"held (lingering), quiet 1m30s ago", "false since 2026-03-01 11:58:30Z: held while the series lingers away from the normal it had when the alert fired",
			`href="/ops/seismo/silences?matchers=alertname%3d%22Slow%22%2c%20severity%3d%22page%22"`,
			`title="Not sent: its series stopped moving with that of Queue's alert on the same target, one hang, and that alert is the page">suppressed by Queue</span>`,
			`title="Not sent while Surge fires for the same target: the rule's suppressed_by names it as the cause">suppressed by Surge</span>`,
			`title="Alerts not sent while this one is the page: one cause">Also stands for: Inflight{instance=&#34;a&#34;}</p>`,
		}, []string{"<script>alert(1)", "Warm"}},
		{"/?fragment=1", []string{"p99 up, CPU flat"}, []string{"<html", "<nav"}},
		{"/rules", []string{"No rules are loaded."}, nil},
		{"/drafts", []string{"Could not read: /api/v1/drafts: 500 boom"}, nil},
		{"/silences?matchers=alertname%3D%22X%22", []string{`value="alertname=&#34;X&#34;"`, "No silences."}, nil},
		{"/status", []string{"1.2.3", "up 1h0m0s", "password: &lt;secret&gt;", "connection refused", "2.0s ago", "t-down"}, nil},
		{"/static/console.js", []string{`document.querySelector('meta[name="seismo-prefix"]')`}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			code, body := get(t, base+tt.path)
			require.Equal(t, http.StatusOK, code)
			for _, w := range tt.want {
				require.Contains(t, body, w)
			}
			for _, n := range tt.not {
				require.NotContains(t, body, n)
			}
		})
	}
	// The explained alert leads, although the plain one is older.
	_, body := get(t, base+"/")
	require.Less(t, strings.Index(body, `data-alert="Slow"`), strings.Index(body, `data-alert="Plain"`))
	require.Equal(t, 1, strings.Count(body, `class="badge silenced" href="/ops/seismo/silences" title="silence s1"`), "only the silenced alert says so")
	// Queue's alert stands for the one it holds back; nothing stands for
	// Errors, whose cause (Surge) has no alert here.
	require.Equal(t, 1, strings.Count(body, "Also stands for:"), body)
	require.Less(t, strings.Index(body, `data-alert="Queue"`), strings.Index(body, "Also stands for:"))
	require.Less(t, strings.Index(body, "Also stands for:"), strings.Index(body, `data-alert="Plain"`))
}

// TestAlertsPageAsksForActiveAlerts: the alerts page reads only firing and
// pending alerts from the API (an agent with thousands of rules warming up
// would otherwise encode and decode all of them per page) and counts the
// others from data.omitted.
func TestAlertsPageAsksForActiveAlerts(t *testing.T) {
	opts := testOptions()
	var asked atomic.Value
	opts.Alerts = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Store(r.URL.Query()["state"])
		jsonHandler(map[string]any{"alerts": []any{}, "omitted": 5000}).ServeHTTP(w, r)
	})
	_, base := serve(t, opts, "", 0)
	code, body := get(t, base+"/")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, []string{"firing", "pending"}, asked.Load())
	require.Contains(t, body, "No alert is firing or pending. (5000 warming up or recently resolved.)")
}

// TestConsoleHasItsOwnSlots takes the server's only API slot (with no
// API queue): API requests are turned away with 503, while console pages,
// in their own pool, and /-/healthy are still served.
func TestConsoleHasItsOwnSlots(t *testing.T) {
	s, base := serve(t, testOptions(), "", 1)
	release := make(chan struct{})
	entered := make(chan struct{})
	s.Handle("GET /api/v1/slow", http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		close(entered)
		<-release
	}))
	done := make(chan struct{})
	go func() {
		defer close(done)
		resp, err := http.Get(base + "/api/v1/slow")
		if err == nil {
			resp.Body.Close()
		}
	}()
	<-entered
	code, _ := get(t, base+"/api/v1/slow")
	require.Equal(t, http.StatusServiceUnavailable, code, "with no queue, the API is turned away at once")
	for _, page := range []string{"/", "/rules", "/status", "/static/console.css"} {
		code, body := get(t, base+page)
		require.Equal(t, http.StatusOK, code, "%s while the API is full: %s", page, body)
	}
	code, _ = get(t, base+"/-/healthy")
	require.Equal(t, http.StatusOK, code)
	close(release)
	<-done
}

// TestPageCache counts renderings: the same URL within CacheFor is
// rendered once, concurrent requests for it share one rendering, another
// URL or a later time renders again, and a negative CacheFor renders
// every time.
func TestPageCache(t *testing.T) {
	var mu sync.Mutex
	clock := now
	renders := 0
	gate := make(chan struct{})
	opts := testOptions()
	opts.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	opts.Rules = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		renders++
		mu.Unlock()
		<-gate
		jsonHandler(map[string]any{"groups": []any{}}).ServeHTTP(w, r)
	})
	count := func() int { mu.Lock(); defer mu.Unlock(); return renders }
	_, base := serve(t, opts, "", 0)

	// Eight clients at once while the first rendering is held: one renders.
	codes := make(chan int, 8)
	for range 8 {
		go func() {
			resp, err := http.Get(base + "/rules")
			if err != nil {
				codes <- -1
				return
			}
			resp.Body.Close()
			codes <- resp.StatusCode
		}()
	}
	for count() == 0 {
		runtime.Gosched()
	}
	close(gate)
	for range 8 {
		require.Equal(t, http.StatusOK, <-codes)
	}
	require.Equal(t, 1, count(), "concurrent requests share one rendering")

	code, body := get(t, base+"/rules")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "No rules are loaded.")
	require.Equal(t, 1, count(), "served from the cache within CacheFor")

	get(t, base+"/rules?fragment=1")
	require.Equal(t, 2, count(), "another URL renders")

	mu.Lock()
	clock = clock.Add(time.Second)
	mu.Unlock()
	get(t, base+"/rules")
	require.Equal(t, 3, count(), "rendered again after CacheFor")

	opts.CacheFor = -1
	_, base = serve(t, opts, "", 0)
	get(t, base+"/rules")
	get(t, base+"/rules")
	require.Equal(t, 5, count(), "no cache")
}

// TestDraftsPageMarksWithdrawn: an incident withdrawn as a monitoring gap
// says so beside its phase; one that resolved does not.
func TestDraftsPageMarksWithdrawn(t *testing.T) {
	opts := testOptions()
	opts.Drafts = jsonHandler([]map[string]any{
		{"id": "a1", "component": "checkout", "phase": "resolved", "withdrawn": true},
		{"id": "b2", "component": "search", "phase": "resolved"},
	})
	_, base := serve(t, opts, "", 0)
	code, body := get(t, base+"/drafts")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, 1, strings.Count(body, `>withdrawn</span>`), body)
	require.Less(t, strings.Index(body, "checkout"), strings.Index(body, `>withdrawn</span>`))
	require.Less(t, strings.Index(body, `>withdrawn</span>`), strings.Index(body, "search"))
}

// TestHoldsBack: a suppressed alert is listed under the alert of its
// cause's rule whose labels agree with its own, not under that rule's
// alert for another instance.
func TestHoldsBack(t *testing.T) {
	mk := func(name, instance, by string) *alertView {
		a := &alertView{}
		a.Labels = map[string]string{"alertname": name, "instance": instance, "severity": "page"}
		a.SuppressedBy = by
		return a
	}
	qa, qb := mk("Queue", "a", ""), mk("Queue", "b", "")
	ia, ib, wa := mk("Inflight", "a", "Queue"), mk("Inflight", "b", "Queue"), mk("Workers", "a", "Queue")
	holdsBack([]*alertView{qa, qb, ia, ib, wa})
	require.Equal(t, []string{`Inflight{instance="a", severity="page"}`, `Workers{instance="a", severity="page"}`}, qa.HoldsBack)
	require.Equal(t, []string{`Inflight{instance="b", severity="page"}`}, qb.HoldsBack)
	require.Empty(t, ia.HoldsBack)
}
