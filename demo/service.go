// Package demo is the demo service used by "seismo demo" and the end-to-end
// tests: a small web application instrumented under the metric names that
// seismo's built-in rule pack expects, whose worker pool and rate limiter can
// be broken on purpose to replay the outages seismo exists to catch.
//
// Faults act on the mechanism, never on the metrics: pool-shrink parks all
// but one or two workers so that requests queue while the CPU idles, and
// limiter-global makes the per-client rate limiter share one bucket between
// every client. The third outage, a traffic surge, comes from the load
// generator in package loadgen against a pool that also serves /healthz.
package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/VictoriaMetrics/metrics"

	"github.com/seismo-agent/seismo/internal/rusage"
)

// Fault names one way to break the service.
type Fault string

// The fault switches. Surge is not among them: it is load, driven by
// package loadgen.
const (
	// FaultPoolShrink parks all but Options.ShrunkWorkers workers.
	FaultPoolShrink Fault = "pool-shrink"
	// FaultLimiterGlobal keys every request to one shared rate-limit bucket
	// and clears the limiter table every Options.LimiterClearEvery.
	FaultLimiterGlobal Fault = "limiter-global"
)

// ErrUnknownFault is returned for a fault name the service does not know.
var ErrUnknownFault = errors.New("unknown fault")

// Faults lists every fault switch.
func Faults() []Fault { return []Fault{FaultPoolShrink, FaultLimiterGlobal} }

// ParseFault returns the fault named s.
func ParseFault(s string) (Fault, error) {
	f := Fault(s)
	if !slices.Contains(Faults(), f) {
		return "", fmt.Errorf("%w %q (known: %s, %s)", ErrUnknownFault, s, FaultPoolShrink, FaultLimiterGlobal)
	}
	return f, nil
}

// ClientHeader is the request header that identifies a client to the rate
// limiter and in the client label.
const ClientHeader = "X-Client-ID"

// Routes served by the service.
const (
	// RouteCatalog is cacheable: answered from memory without a worker.
	RouteCatalog = "/catalog"
	// RouteSearch and RouteCheckout are uncacheable: each takes a worker for
	// CPUWork of computation and BackendWait of waiting on a backend.
	RouteSearch   = "/search"
	RouteCheckout = "/checkout"
	// RouteHealth is served through the same worker pool, so it fails when
	// the pool is saturated (as in the surge outage).
	RouteHealth = "/healthz"
	// RouteMetrics exposes the service's metrics.
	RouteMetrics = "/metrics"
	// RouteAdminFault lists (GET) or sets (POST ?name=...&on=1|0) faults.
	RouteAdminFault = "/admin/fault"
)

// Options configure a Service. Zero values take the defaults listed.
type Options struct {
	// Workers is the size of the worker pool (default 8).
	//
	// The defaults size the service for the demo: 8 workers each held
	// ~100 ms per uncacheable request serve ~80 such requests per second,
	// comfortably above the load generator's default of 50 req/s (60 %
	// uncacheable) and well below five times it.
	Workers int
	// ShrunkWorkers is how many workers stay active under pool-shrink
	// (default 1).
	ShrunkWorkers int
	// QueueSize bounds the requests waiting for a worker; beyond it requests
	// get 503 at once (default 64).
	QueueSize int
	// Timeout bounds a request's wait for a worker plus its work; past it the
	// request gets 504 (default 1s).
	Timeout time.Duration
	// CPUWork is the computation per uncacheable request (default 2ms).
	CPUWork time.Duration
	// BackendWait is the time an uncacheable request holds its worker
	// waiting on a (simulated) database, using no CPU (default 100ms).
	BackendWait time.Duration
	// ClientRate and ClientBurst configure each client's token bucket
	// (default 5 req/s, burst 10: five times what each of the load
	// generator's 50 clients sends by default). A negative ClientRate turns
	// the limiter off.
	ClientRate  float64
	ClientBurst int
	// LimiterClearEvery is how often the limiter table is wiped while
	// limiter-global is on, letting a burst through each time (default 5s).
	LimiterClearEvery time.Duration
	// MaxClients bounds the distinct values of the client label and the
	// limiter table; further clients share the label "other" (default 200).
	MaxClients int
	// CatalogPages is how many cached pages /catalog serves (default 100).
	CatalogPages int
	// WorkCPU makes process_cpu_seconds_total count the service's own
	// computation only (CPUWork per uncacheable request served) instead of
	// the whole process's CPU time. seismo demo run sets it: its process
	// also runs the load generator and the agent, whose CPU (the agent's
	// rises as it fires alerts and writes drafts) would read as the
	// service's and could hide, for the length of the detector's lag, that
	// latency left CPU behind. Serving overhead (parsing, the cached
	// route, 429s) is not counted.
	WorkCPU bool
	// Now returns the current time (default time.Now).
	Now func() time.Time
	// Logger receives fault changes (default: discarded).
	Logger *slog.Logger
}

func (o *Options) applyDefaults() {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	defDur := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	def(&o.Workers, 8)
	def(&o.ShrunkWorkers, 1)
	def(&o.QueueSize, 64)
	def(&o.ClientBurst, 10)
	def(&o.MaxClients, 200)
	def(&o.CatalogPages, 100)
	defDur(&o.Timeout, time.Second)
	defDur(&o.CPUWork, 2*time.Millisecond)
	defDur(&o.BackendWait, 100*time.Millisecond)
	defDur(&o.LimiterClearEvery, 5*time.Second)
	if o.ClientRate == 0 {
		o.ClientRate = 5
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// Validate reports every invalid option, each naming its field.
func (o *Options) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...)))
	}
	if o.Workers < 1 {
		bad("workers", "must be at least 1, got %d", o.Workers)
	}
	if o.ShrunkWorkers < 1 || o.ShrunkWorkers > o.Workers {
		bad("shrunk_workers", "must be between 1 and workers (%d), got %d", o.Workers, o.ShrunkWorkers)
	}
	if o.QueueSize < 1 {
		bad("queue_size", "must be at least 1, got %d", o.QueueSize)
	}
	if o.Timeout < 0 || o.CPUWork < 0 || o.BackendWait < 0 || o.LimiterClearEvery < 0 {
		bad("timeout/cpu_work/backend_wait/limiter_clear_every", "durations must not be negative")
	}
	if o.ClientRate > 0 && o.ClientBurst < 1 {
		bad("client_burst", "must be at least 1, got %d", o.ClientBurst)
	}
	if o.MaxClients < 1 {
		bad("max_clients", "must be at least 1, got %d", o.MaxClients)
	}
	if o.CatalogPages < 1 {
		bad("catalog_pages", "must be at least 1, got %d", o.CatalogPages)
	}
	return errors.Join(errs...)
}

// Service is the demo web application. Create it with NewService and run it
// with Serve; SetFault may be called at any time from any goroutine.
type Service struct {
	opts     Options
	log      *slog.Logger
	pool     *pool
	limiter  *limiter
	units    int
	set      *metrics.Set
	pages    [][]byte
	mux      *http.ServeMux
	inFlight atomic.Int64
	served   atomic.Bool
	// sink keeps the result of the CPU work so that it cannot be optimised
	// away.
	sink atomic.Uint32
	// computed counts the uncacheable requests whose work was done (for
	// WorkCPU).
	computed atomic.Int64

	faultMu sync.Mutex
	faults  map[Fault]bool

	// requests caches counters by (route, code, client).
	requests  sync.Map
	latency   map[string]*metrics.PrometheusHistogram
	clientsMu sync.Mutex
	clients   map[string]struct{}
}

// latencyBuckets are the upper bounds of the request duration histogram.
var latencyBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// NewService validates opts and builds a service. It calibrates the CPU work
// per request once per process (a few milliseconds).
func NewService(opts Options) (*Service, error) {
	opts.applyDefaults()
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("demo service options: %w", err)
	}
	s := &Service{
		opts:    opts,
		log:     opts.Logger.With("component", "demo_service"),
		pool:    newPool(opts.Workers, opts.QueueSize),
		limiter: newLimiter(opts.ClientRate, opts.ClientBurst, opts.MaxClients, opts.LimiterClearEvery),
		units:   cpuUnits(opts.CPUWork),
		set:     metrics.NewSet(),
		faults:  make(map[Fault]bool),
		latency: make(map[string]*metrics.PrometheusHistogram),
		clients: make(map[string]struct{}),
	}
	for i := range opts.CatalogPages {
		s.pages = append(s.pages, fmt.Appendf(nil, "catalog page %d: %s\n", i, strings.Repeat("item ", 50)))
	}
	s.initMetrics()
	s.mux = http.NewServeMux()
	s.mux.Handle("GET "+RouteCatalog, s.instrument(RouteCatalog, true, s.serveCatalog))
	s.mux.Handle(RouteSearch, s.instrument(RouteSearch, true, s.pooled(s.work)))
	s.mux.Handle(RouteCheckout, s.instrument(RouteCheckout, true, s.pooled(s.work)))
	s.mux.Handle("GET "+RouteHealth, s.instrument(RouteHealth, false, s.pooled(func(context.Context) {})))
	s.mux.HandleFunc("GET "+RouteMetrics, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		s.set.WritePrometheus(w)
	})
	s.mux.HandleFunc("GET "+RouteAdminFault, s.serveFaults)
	s.mux.HandleFunc("POST "+RouteAdminFault, s.serveSetFault)
	return s, nil
}

func (s *Service) initMetrics() {
	s.set.NewGauge("http_server_queue_length", func() float64 { return float64(s.pool.queued()) })
	s.set.NewGauge("http_server_requests_in_flight", func() float64 { return float64(s.inFlight.Load()) })
	s.set.NewGauge("http_server_workers", func() float64 { return float64(s.pool.active.Load()) })
	s.set.NewGauge("http_server_workers_busy", func() float64 { return float64(s.pool.busy.Load()) })
	for _, f := range Faults() {
		s.set.NewGauge(fmt.Sprintf(`demo_fault_active{fault=%q}`, f), func() float64 {
			if s.FaultActive(f) {
				return 1
			}
			return 0
		})
	}
	for _, r := range []string{RouteCatalog, RouteSearch, RouteCheckout, RouteHealth} {
		s.latency[r] = s.set.NewPrometheusHistogramExt(fmt.Sprintf(`http_request_duration_seconds{route=%q}`, r), latencyBuckets)
	}
	s.set.RegisterMetricsWriter(func(w io.Writer) {
		cpu, _ := rusage.Self()
		if s.opts.WorkCPU {
			cpu = time.Duration(s.computed.Load()) * s.opts.CPUWork
		}
		metrics.WriteCounterFloat64(w, "process_cpu_seconds_total", cpu.Seconds())
	})
}

// Handler returns the service's HTTP handler, for tests that serve it
// themselves.
func (s *Service) Handler() http.Handler { return s.mux }

// Serve runs the worker pool and serves HTTP on ln until ctx is done, then
// shuts down gracefully and returns once every goroutine it started has
// exited. It closes ln. Serve may be called once.
func (s *Service) Serve(ctx context.Context, ln net.Listener) error {
	if !s.served.CompareAndSwap(false, true) {
		ln.Close()
		return errors.New("demo service: Serve called twice")
	}
	poolCtx, stopPool := context.WithCancel(context.Background())
	defer stopPool()
	poolDone := make(chan struct{})
	go func() {
		defer close(poolDone)
		s.pool.run(poolCtx)
	}()

	srv := &http.Server{
		Handler:           s.mux,
		ReadHeaderTimeout: 5 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()

	var err error
	select {
	case <-ctx.Done():
	case err = <-serveErr:
	}
	// Handlers end within Timeout at most; give them that long.
	shutdownCtx, cancel := context.WithTimeout(context.Background(), s.opts.Timeout+time.Second)
	defer cancel()
	if shErr := srv.Shutdown(shutdownCtx); shErr != nil && err == nil {
		err = fmt.Errorf("demo service shutdown: %w", shErr)
	}
	if ctx.Err() != nil {
		<-serveErr
	}
	stopPool()
	<-poolDone
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// SetFault switches fault f on or off.
func (s *Service) SetFault(f Fault, on bool) error {
	if _, err := ParseFault(string(f)); err != nil {
		return err
	}
	s.faultMu.Lock()
	defer s.faultMu.Unlock()
	if s.faults[f] == on {
		return nil
	}
	s.faults[f] = on
	switch f {
	case FaultPoolShrink:
		if on {
			s.pool.setActive(s.opts.ShrunkWorkers)
		} else {
			s.pool.setActive(s.opts.Workers)
		}
	case FaultLimiterGlobal:
		s.limiter.setGlobal(on, s.opts.Now())
	}
	s.log.Info("fault switched", "fault", string(f), "on", on)
	return nil
}

// FaultActive reports whether fault f is on.
func (s *Service) FaultActive(f Fault) bool {
	s.faultMu.Lock()
	defer s.faultMu.Unlock()
	return s.faults[f]
}

func (s *Service) faultStates() map[Fault]bool {
	m := make(map[Fault]bool)
	for _, f := range Faults() {
		m[f] = s.FaultActive(f)
	}
	return m
}

func (s *Service) serveFaults(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(s.faultStates())
}

func (s *Service) serveSetFault(w http.ResponseWriter, r *http.Request) {
	f, err := ParseFault(r.FormValue("name"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	on, err := strconv.ParseBool(r.FormValue("on"))
	if err != nil {
		http.Error(w, fmt.Sprintf("on: want 1 or 0, got %q", r.FormValue("on")), http.StatusBadRequest)
		return
	}
	if err := s.SetFault(f, on); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.serveFaults(w, r)
}

// statusWriter remembers the status code written.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// instrument counts and times requests to route, applying the rate limiter
// first when limited is set.
func (s *Service) instrument(route string, limited bool, h http.HandlerFunc) http.Handler {
	hist := s.latency[route]
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := s.opts.Now()
		s.inFlight.Add(1)
		defer s.inFlight.Add(-1)
		client := s.clientLabel(r.Header.Get(ClientHeader))
		sw := &statusWriter{ResponseWriter: w}
		if limited && !s.limiter.allow(client, start) {
			http.Error(sw, "rate limited", http.StatusTooManyRequests)
		} else {
			h(sw, r)
		}
		if sw.code == 0 {
			sw.code = http.StatusOK
		}
		hist.Update(s.opts.Now().Sub(start).Seconds())
		s.counter(route, sw.code, client).Inc()
	})
}

type requestKey struct {
	route  string
	code   int
	client string
}

func (s *Service) counter(route string, code int, client string) *metrics.Counter {
	k := requestKey{route, code, client}
	if c, ok := s.requests.Load(k); ok {
		return c.(*metrics.Counter)
	}
	c := s.set.GetOrCreateCounter(fmt.Sprintf(`http_requests_total{route=%q,code="%d",client=%q}`, route, code, client))
	s.requests.Store(k, c)
	return c
}

// clientLabel maps a client header to a bounded, safe label value.
func (s *Service) clientLabel(id string) string {
	if id == "" {
		return "anonymous"
	}
	if len(id) > 64 || strings.ContainsFunc(id, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.')
	}) {
		return "invalid"
	}
	s.clientsMu.Lock()
	defer s.clientsMu.Unlock()
	if _, ok := s.clients[id]; ok {
		return id
	}
	if len(s.clients) >= s.opts.MaxClients {
		return "other"
	}
	s.clients[id] = struct{}{}
	return id
}

func (s *Service) serveCatalog(w http.ResponseWriter, r *http.Request) {
	i, _ := strconv.Atoi(r.URL.Query().Get("item"))
	i = max(0, i) % len(s.pages)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Cache", "hit")
	_, _ = w.Write(s.pages[i])
}

// work is the body of an uncacheable request: real computation, then a wait
// on a backend during which the worker is held but the CPU is free.
func (s *Service) work(ctx context.Context) {
	s.sink.Add(uint32(burn(s.units)))
	s.computed.Add(1)
	t := time.NewTimer(s.opts.BackendWait)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// pooled runs fn on a worker within Timeout and answers 200, 503 when the
// queue is full or the service stops, or 504 when the deadline passes first.
func (s *Service) pooled(fn func(ctx context.Context)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), s.opts.Timeout)
		defer cancel()
		j := &job{ctx: ctx, fn: fn, done: make(chan struct{})}
		if err := s.pool.submit(j); err != nil {
			http.Error(w, "server busy: queue full", http.StatusServiceUnavailable)
			return
		}
		select {
		case <-j.done:
			if !j.ran || ctx.Err() != nil {
				http.Error(w, "request not served", http.StatusServiceUnavailable)
				return
			}
			_, _ = io.WriteString(w, "ok\n")
		case <-ctx.Done():
			http.Error(w, "timed out waiting for a worker", http.StatusGatewayTimeout)
		}
	}
}
