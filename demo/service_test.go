package demo

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/seismo-agent/seismo/demo/loadgen"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// env is a demo service on a loopback port under load.
type env struct {
	t      *testing.T
	svc    *Service
	base   string
	client *http.Client
	gen    *loadgen.Generator
}

// window is what the service did while the generator sent some requests.
type window struct {
	delta
	seconds float64
}

// cpuRate is the process CPU time used per second of the window.
func (w window) cpuRate() float64 {
	return (w.to.value("process_cpu_seconds_total") - w.from.value("process_cpu_seconds_total")) / w.seconds
}

// pollEvery and pollFor bound every wait for a condition.
const (
	pollEvery = 20 * time.Millisecond
	pollFor   = 10 * time.Second
)

func startEnv(t *testing.T, opts Options, load loadgen.Options) *env {
	t.Helper()
	svc, err := NewService(opts)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	e := &env{
		t:      t,
		svc:    svc,
		base:   "http://" + ln.Addr().String(),
		client: &http.Client{Transport: &http.Transport{}, Timeout: 5 * time.Second},
	}
	svcCtx, stopSvc := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- svc.Serve(svcCtx, ln) }()

	load.Target = e.base
	load.Duration = 30 * time.Second // an upper bound: the test ends it sooner
	e.gen, err = loadgen.New(load)
	require.NoError(t, err)
	genCtx, stopGen := context.WithCancel(context.Background())
	genDone := make(chan struct{})
	go func() {
		defer close(genDone)
		_, _ = e.gen.Run(genCtx)
	}()
	t.Cleanup(func() {
		stopGen()
		<-genDone
		stopSvc()
		require.NoError(t, <-served)
		e.client.CloseIdleConnections()
	})
	return e
}

// until polls cond until it holds, failing the test after pollFor.
func (e *env) until(what string, cond func() bool) {
	e.t.Helper()
	deadline := time.Now().Add(pollFor)
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			e.t.Fatalf("gave up waiting for %s", what)
		}
		<-tick.C
	}
}

// window scrapes, lets the generator send n more requests, and scrapes again.
func (e *env) window(n int64) window {
	e.t.Helper()
	start := time.Now()
	from := scrapeMetrics(e.t, e.client, e.base)
	target := e.gen.Report().Sent + n
	e.until("load to be sent", func() bool { return e.gen.Report().Sent >= target })
	to := scrapeMetrics(e.t, e.client, e.base)
	return window{delta{from, to}, time.Since(start).Seconds()}
}

// probeTimeout is how long a health check waits, as a load balancer's probe
// would; it is shorter than the service's own request timeout.
const probeTimeout = 250 * time.Millisecond

// health probes /healthz and returns the status, or 0 when the probe timed
// out or failed.
func (e *env) health() int {
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.base+RouteHealth, nil)
	require.NoError(e.t, err)
	resp, err := e.client.Do(req)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

func (e *env) gauge(name string) float64 {
	return scrapeMetrics(e.t, e.client, e.base).value(name)
}

func uncached(l map[string]string) bool {
	return l["route"] == RouteSearch || l["route"] == RouteCheckout
}

func share(part, whole float64) float64 {
	if whole == 0 {
		return 0
	}
	return part / whole
}

// TestOutages breaks the service by each mechanism under load and checks
// that the mechanism, and its recovery, shows in the scraped metrics.
func TestOutages(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		load loadgen.Options
		// n is the number of requests per measured window.
		n      int64
		inject func(e *env)
		// settled holds once the fault has taken hold.
		settled func(e *env) bool
		normal  func(t *testing.T, w window)
		fault   func(t *testing.T, normal, fault window)
		remove  func(e *env)
		// recovered holds for a window after the fault is removed.
		recovered func(e *env, w window) bool
	}{
		{
			name: "pool-shrink: queue grows while CPU stays flat, cached route keeps working",
			opts: Options{Workers: 8, ShrunkWorkers: 1, Timeout: 300 * time.Millisecond,
				CPUWork: 2 * time.Millisecond, BackendWait: 40 * time.Millisecond, ClientRate: -1},
			load:   loadgen.Options{Curve: loadgen.Curve{Base: 60}},
			n:      60,
			inject: func(e *env) { require.NoError(e.t, e.svc.SetFault(FaultPoolShrink, true)) },
			settled: func(e *env) bool {
				return e.gauge("http_server_queue_length") >= 3
			},
			normal: func(t *testing.T, w window) {
				require.Zero(t, w.requests(nil, is5xx))
				require.EqualValues(t, 8, w.to.value("http_server_workers"))
				require.Less(t, w.quantile(0.9, RouteSearch), 0.25)
			},
			fault: func(t *testing.T, normal, fault window) {
				require.EqualValues(t, 1, fault.to.value("http_server_workers"))
				require.GreaterOrEqual(t, fault.to.value("http_server_queue_length"), 3.0)
				require.Positive(t, fault.requests(nil, func(l map[string]string) bool { return uncached(l) && is5xx(l) }),
					"uncached requests time out")
				require.Positive(t, fault.requests(match{"route": RouteCatalog, "code": "200"}, nil), "cached route keeps answering")
				require.Zero(t, fault.requests(match{"route": RouteCatalog}, is5xx), "cached route never fails")
				require.Greater(t, fault.quantile(0.9, RouteSearch), 0.25, "latency near the timeout")
				// CPU does not rise with the queue: the machine is idle,
				// not busy (a small absolute slack absorbs scheduler noise).
				require.LessOrEqual(t, fault.cpuRate(), 1.5*normal.cpuRate()+0.05,
					"cpu rate normal %.3f, under fault %.3f", normal.cpuRate(), fault.cpuRate())
			},
			remove: func(e *env) { require.NoError(e.t, e.svc.SetFault(FaultPoolShrink, false)) },
			recovered: func(e *env, w window) bool {
				return w.requests(nil, is5xx) == 0 && w.to.value("http_server_queue_length") <= 2
			},
		},
		{
			name: "limiter-global: 429s across most clients, bursts get through",
			opts: Options{Workers: 16, Timeout: time.Second, CPUWork: 500 * time.Microsecond, BackendWait: 5 * time.Millisecond,
				ClientRate: 5, ClientBurst: 5, LimiterClearEvery: time.Second},
			load:    loadgen.Options{Curve: loadgen.Curve{Base: 100}},
			n:       100,
			inject:  func(e *env) { require.NoError(e.t, e.svc.SetFault(FaultLimiterGlobal, true)) },
			settled: func(e *env) bool { return true },
			normal: func(t *testing.T, w window) {
				require.Less(t, share(w.requests(match{"code": "429"}, nil), w.requests(nil, nil)), 0.01)
				require.GreaterOrEqual(t, len(w.byClient("")), 40, "most of the 50 clients are active")
			},
			fault: func(t *testing.T, normal, fault window) {
				total := fault.requests(nil, nil)
				require.Greater(t, share(fault.requests(match{"code": "429"}, nil), total), 0.5)
				active, limited := fault.byClient(""), fault.byClient("429")
				require.GreaterOrEqual(t, float64(len(limited)), 0.8*float64(len(active)),
					"%d of %d clients limited", len(limited), len(active))
				require.Positive(t, fault.requests(match{"code": "200"}, func(l map[string]string) bool { return l["route"] != RouteHealth }),
					"bursts get through after the limiter table is cleared")
				require.Zero(t, fault.requests(nil, is5xx))
			},
			remove: func(e *env) { require.NoError(e.t, e.svc.SetFault(FaultLimiterGlobal, false)) },
			recovered: func(e *env, w window) bool {
				return share(w.requests(match{"code": "429"}, nil), w.requests(nil, nil)) < 0.01
			},
		},
		{
			name: "one abusive client: only it is limited (the storm's look-alike)",
			opts: Options{Workers: 16, Timeout: time.Second, CPUWork: 500 * time.Microsecond, BackendWait: 5 * time.Millisecond,
				ClientRate: 5, ClientBurst: 5},
			load:    loadgen.Options{Curve: loadgen.Curve{Base: 100}},
			n:       100,
			inject:  func(e *env) { e.gen.SetHotShare(0.3) },
			settled: func(e *env) bool { return true },
			normal: func(t *testing.T, w window) {
				require.Zero(t, w.requests(match{"code": "429"}, nil))
			},
			fault: func(t *testing.T, normal, fault window) {
				limited := fault.byClient("429")
				require.Contains(t, limited, loadgen.ClientID(0))
				require.LessOrEqual(t, len(limited), 2, "limited clients: %v", limited)
				require.GreaterOrEqual(t, limited[loadgen.ClientID(0)], 0.9*fault.requests(match{"code": "429"}, nil))
			},
			remove: func(e *env) { e.gen.SetHotShare(0) },
			recovered: func(e *env, w window) bool {
				return share(w.requests(match{"code": "429"}, nil), w.requests(nil, nil)) < 0.01
			},
		},
		{
			name: "surge: 5xx, timeouts and failing health checks from a saturated pool",
			opts: Options{Workers: 4, QueueSize: 32, Timeout: 300 * time.Millisecond,
				CPUWork: time.Millisecond, BackendWait: 40 * time.Millisecond, ClientRate: -1},
			load: loadgen.Options{Curve: loadgen.Curve{Base: 40}, Routes: []loadgen.Route{
				{Method: http.MethodGet, Path: RouteSearch, Weight: 2},
				{Method: http.MethodPost, Path: RouteCheckout, Weight: 1},
			}},
			n:       40,
			inject:  func(e *env) { e.gen.Surge(5, 500*time.Millisecond) },
			settled: func(e *env) bool { return e.health() != http.StatusOK },
			normal: func(t *testing.T, w window) {
				require.Zero(t, w.requests(nil, is5xx))
			},
			fault: func(t *testing.T, normal, fault window) {
				require.Greater(t, share(fault.requests(nil, is5xx), fault.requests(nil, nil)), 0.2)
				require.Positive(t, fault.requests(match{"code": "503"}, nil), "queue overflows")
				require.Positive(t, fault.requests(match{"code": "504"}, nil), "queued requests time out")
				rate := func(w window) float64 { return w.requests(nil, nil) / w.seconds }
				require.Greater(t, rate(fault), 2*rate(normal), "request rate steps up")
			},
			remove: func(e *env) { e.gen.EndSurge() },
			recovered: func(e *env, w window) bool {
				return w.requests(nil, is5xx) == 0 && e.health() == http.StatusOK
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := startEnv(t, tt.opts, tt.load)
			e.window(tt.n / 2) // warm up connections

			normal := e.window(tt.n)
			require.Equal(t, http.StatusOK, e.health())
			tt.normal(t, normal)

			t0 := time.Now()
			tt.inject(e)
			e.until("the fault to take hold", func() bool { return tt.settled(e) })
			t.Logf("settled after %v", time.Since(t0))
			fault := e.window(tt.n)
			tt.fault(t, normal, fault)
			t.Logf("fault window %v", time.Since(t0))

			tt.remove(e)
			e.until("recovery", func() bool { return tt.recovered(e, e.window(tt.n/2)) })
			t.Logf("recovered %v", time.Since(t0))
		})
	}
}

func TestAdminFault(t *testing.T) {
	tests := []struct {
		name     string
		method   string
		query    string
		wantCode int
		wantBody string
		wantOn   map[Fault]bool
	}{
		{"list", http.MethodGet, "", http.StatusOK, `"pool-shrink":false`, map[Fault]bool{}},
		{"switch on", http.MethodPost, "?name=pool-shrink&on=1", http.StatusOK, `"pool-shrink":true`, map[Fault]bool{FaultPoolShrink: true}},
		{"switch on limiter", http.MethodPost, "?name=limiter-global&on=true", http.StatusOK, `"limiter-global":true`, map[Fault]bool{FaultLimiterGlobal: true}},
		{"unknown fault", http.MethodPost, "?name=meteor&on=1", http.StatusBadRequest, `unknown fault "meteor"`, map[Fault]bool{}},
		{"bad switch", http.MethodPost, "?name=pool-shrink&on=maybe", http.StatusBadRequest, "on: want 1 or 0", map[Fault]bool{}},
		{"no other methods", http.MethodDelete, "?name=pool-shrink", http.StatusMethodNotAllowed, "", map[Fault]bool{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc, err := NewService(Options{Workers: 4, ShrunkWorkers: 2})
			require.NoError(t, err)
			rec := httptest.NewRecorder()
			svc.Handler().ServeHTTP(rec, httptest.NewRequest(tt.method, RouteAdminFault+tt.query, nil))
			require.Equal(t, tt.wantCode, rec.Code, rec.Body.String())
			require.Contains(t, rec.Body.String(), tt.wantBody)
			for _, f := range Faults() {
				require.Equal(t, tt.wantOn[f], svc.FaultActive(f), string(f))
			}
			if rec.Code == http.StatusOK {
				var states map[Fault]bool
				require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &states))
				require.Len(t, states, len(Faults()))
			}
			wantWorkers := "http_server_workers 4"
			if tt.wantOn[FaultPoolShrink] {
				wantWorkers = "http_server_workers 2"
			}
			rec = httptest.NewRecorder()
			svc.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, RouteMetrics, nil))
			require.Contains(t, rec.Body.String(), wantWorkers+"\n")
		})
	}
}

// TestMetricNames pins the names and labels the built-in rule pack relies
// on, and checks that the latency histogram is a classic cumulative one.
func TestMetricNames(t *testing.T) {
	e := startEnv(t, Options{Workers: 2, CPUWork: 100 * time.Microsecond, BackendWait: time.Millisecond},
		loadgen.Options{Curve: loadgen.Curve{Base: 100}})
	w := e.window(30)
	require.Equal(t, http.StatusOK, e.health())
	s := scrapeMetrics(t, e.client, e.base)
	for _, name := range []string{
		"http_requests_total", "http_request_duration_seconds_bucket", "http_request_duration_seconds_sum",
		"http_request_duration_seconds_count", "http_server_queue_length", "http_server_requests_in_flight",
		"http_server_workers", "process_cpu_seconds_total",
	} {
		require.NotEmpty(t, s[name], name)
	}
	for _, x := range s["http_requests_total"] {
		require.ElementsMatch(t, []string{"route", "code", "client"}, keys(x.labels))
	}
	require.Positive(t, w.requests(match{"route": RouteSearch, "code": "200", "client": "client-00"}, nil)+
		w.requests(match{"route": RouteCatalog, "code": "200", "client": "client-00"}, nil)+
		w.requests(match{"route": RouteCheckout, "code": "200", "client": "client-00"}, nil), "client label from the header")
	require.Positive(t, s.sum("http_requests_total", match{"route": RouteHealth, "client": "anonymous"}, nil))
	require.Positive(t, s.value("process_cpu_seconds_total"))
	for _, route := range []string{RouteCatalog, RouteSearch, RouteCheckout, RouteHealth} {
		inf := s.sum("http_request_duration_seconds_bucket", match{"route": route, "le": "+Inf"}, nil)
		require.Equal(t, s.sum("http_request_duration_seconds_count", match{"route": route}, nil), inf, route)
		prev := -1.0
		for _, b := range latencyBuckets {
			n := s.sum("http_request_duration_seconds_bucket", match{"route": route, "le": strings.TrimSuffix(strconvF(b), ".0")}, nil)
			require.GreaterOrEqual(t, n, prev, "cumulative buckets for %s at le=%g", route, b)
			prev = n
		}
		require.GreaterOrEqual(t, inf, prev)
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestClientLabel(t *testing.T) {
	svc, err := NewService(Options{MaxClients: 2})
	require.NoError(t, err)
	tests := []struct{ id, want string }{
		{"", "anonymous"},
		{"client-01", "client-01"},
		{"bad id\"}", "invalid"},
		{strings.Repeat("x", 65), "invalid"},
		{"client-02", "client-02"},
		{"client-03", "other"}, // over MaxClients
		{"client-01", "client-01"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, svc.clientLabel(tt.id), tt.id)
	}
}

func TestNewServiceValidates(t *testing.T) {
	_, err := NewService(Options{Workers: -1, ShrunkWorkers: 5, QueueSize: -2, MaxClients: -1, CatalogPages: -1, Timeout: -time.Second})
	require.Error(t, err)
	for _, field := range []string{"workers", "shrunk_workers", "queue_size", "max_clients", "catalog_pages", "timeout"} {
		require.ErrorContains(t, err, field+"")
	}
	_, err = ParseFault("pool-shrink")
	require.NoError(t, err)
	_, err = ParseFault("surge")
	require.ErrorIs(t, err, ErrUnknownFault)
}

// With WorkCPU the service's CPU counter is its own computation, CPUWork
// per uncacheable request served, and does not move while the rest of the
// process burns CPU.
func TestWorkCPU(t *testing.T) {
	const cpuWork = 3 * time.Millisecond
	svc, err := NewService(Options{WorkCPU: true, CPUWork: cpuWork, BackendWait: time.Millisecond})
	require.NoError(t, err)
	scrape := func() float64 {
		rec := httptest.NewRecorder()
		svc.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, RouteMetrics, nil))
		for _, line := range strings.Split(rec.Body.String(), "\n") {
			if v, ok := strings.CutPrefix(line, "process_cpu_seconds_total "); ok {
				f, err := strconv.ParseFloat(v, 64)
				require.NoError(t, err)
				return f
			}
		}
		t.Fatal("no process_cpu_seconds_total")
		return 0
	}
	require.Zero(t, scrape())
	burn(cpuUnits(50 * time.Millisecond)) // the rest of the process
	require.Zero(t, scrape())
	for range 4 {
		svc.work(context.Background())
	}
	require.InDelta(t, 4*cpuWork.Seconds(), scrape(), 1e-9)
}
