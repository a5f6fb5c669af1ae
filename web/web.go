// Package web is the agent's HTTP server: /metrics, /-/healthy, /-/ready,
// POST /-/reload, and a mux on which subsystems mount their API handlers
// with Handle (read-only) and HandleAdmin (handlers that change state).
//
// Access control follows Prometheus: TLS, basic-auth users and response
// headers come from an exporter-toolkit web config file, a bearer token may
// be accepted besides, and the lifecycle (POST /-/reload) and admin
// (HandleAdmin) endpoints answer 403 unless enabled. All of it is swapped
// at once by SetAccess on reload. Every request body, header and
// connection is bounded (see Options).
//
// Health, readiness and /metrics are answered by the server itself, from
// state it holds, and never wait for evaluation work or for a free API slot:
// a health check served by saturated workers is how one of the outages that
// seismo exists to prevent got worse. Mounted handlers run in a pool of a
// bounded number of concurrent slots; when all are busy a request waits,
// blocked, in the pool's bounded queue for a bounded time, and gets 503
// with Retry-After past either bound. The API (Handle, HandleAdmin) and
// the console (HandleConsole) have a pool each, so that a flood of API
// clients cannot keep an operator's console waiting, nor the reverse.
package web

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"golang.org/x/time/rate"
)

// Options configures a Server.
type Options struct {
	// ListenAddress is host:port; port 0 picks a free port (see Addr).
	ListenAddress string
	// MaxConcurrentRequests bounds requests in flight to handlers mounted
	// with Handle and HandleAdmin (the API pool); more wait in the queue.
	// 0 means 64.
	MaxConcurrentRequests int
	// MaxQueuedRequests bounds the requests that wait for a slot when all
	// are busy; more get 503 with Retry-After at once. A waiting request
	// has read only its headers and is blocked, not runnable, so it costs
	// no CPU. 0 means 1024; negative means no queue.
	MaxQueuedRequests int
	// QueueTimeout bounds how long a request waits in the queue before it
	// gets 503 with Retry-After. 0 means 5s.
	QueueTimeout time.Duration
	// Console bounds the handlers mounted with HandleConsole, in a pool of
	// their own; zero fields take the defaults of DefaultConsolePool.
	Console PoolLimits
	// Reload is called by POST /-/reload and must apply a new config the
	// same way SIGHUP does, returning its error. Nil disables the endpoint.
	Reload func(ctx context.Context) error
	// Set receives the server's own metrics (seismo_http_*). Required.
	Set *metrics.Set
	// Logger is required.
	Logger *slog.Logger
	// ShutdownTimeout bounds how long Run waits for requests in flight
	// after its context ends. 0 means 5s.
	ShutdownTimeout time.Duration
	// RoutePrefix, when not empty ("/seismo"), serves every endpoint under
	// that path (see withPrefix).
	RoutePrefix string
	// Access is the initial access control; nil means NewAccess of the
	// zero AccessConfig (plain HTTP, no authentication, lifecycle and admin
	// endpoints off).
	Access *Access
	// Limits bound each connection and request; zero fields take the
	// defaults of DefaultLimits.
	Limits Limits
}

// Limits bound what one client can make the server hold.
type Limits struct {
	// ReadHeaderTimeout bounds reading a request's headers (slowloris).
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds reading a whole request, body included.
	ReadTimeout time.Duration
	// WriteTimeout bounds the time from the end of the request headers to
	// the end of the response. A handler that streams must extend its own
	// deadline with http.ResponseController.SetWriteDeadline.
	WriteTimeout time.Duration
	// IdleTimeout closes keep-alive connections idle this long.
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds the request line and headers.
	MaxHeaderBytes int
	// MaxRequestBodyBytes bounds every request body; more is refused with
	// 413.
	MaxRequestBodyBytes int64
}

// PoolLimits bound one pool of mounted handlers: requests in flight, and
// the requests that wait, blocked, for a slot and for how long.
type PoolLimits struct {
	// MaxConcurrentRequests is the number of slots; 0 takes the default.
	MaxConcurrentRequests int
	// MaxQueuedRequests bounds the requests waiting for a slot; 0 takes
	// the default, negative means no queue (503 at once).
	MaxQueuedRequests int
	// QueueTimeout bounds the wait; 0 takes the default.
	QueueTimeout time.Duration
	// MaxRequestsPerSecond paces the requests let into the slots, with
	// bursts of up to a second's worth; a request beyond the pace waits in
	// the queue like one that found every slot busy. Slots alone do not
	// bound what a flood of cheap requests costs: a cached page frees its
	// slot in microseconds, so closed-loop clients are answered thousands
	// of times a second and take the CPU that queries and rule evaluation
	// need. 0 takes the default; negative means no pacing.
	MaxRequestsPerSecond float64
}

// DefaultConsolePool is what the console's pool takes for a zero field.
// Pages are rendered at most once a second per URL and served from that
// rendering to every other request (web/ui), so a slot is mostly held for
// copying a cached page: a few slots serve a room of operators. The queue
// holds, blocked and without CPU, more requests than people will ever
// have consoles open, so that only a flood fills it, and the wait is the
// API's. An open console asks for its page every 5s, plus a few requests
// when it loads: 100 requests a second serve hundreds of open consoles.
// Paced, each request is a wake-up of its own, about 0.5 ms of CPU on a
// small VM, so 100 a second cost about 5 % of a CPU, where an unpaced
// flood of cached pages took the whole CPU the agent had.
func DefaultConsolePool() PoolLimits {
	return PoolLimits{MaxConcurrentRequests: 4, MaxQueuedRequests: 256, QueueTimeout: 5 * time.Second, MaxRequestsPerSecond: 100}
}

func (p PoolLimits) withDefaults(d PoolLimits) PoolLimits {
	p.MaxConcurrentRequests = cmp.Or(max(p.MaxConcurrentRequests, 0), d.MaxConcurrentRequests)
	switch {
	case p.MaxQueuedRequests == 0:
		p.MaxQueuedRequests = d.MaxQueuedRequests
	case p.MaxQueuedRequests < 0:
		p.MaxQueuedRequests = 0
	}
	p.QueueTimeout = cmp.Or(max(p.QueueTimeout, 0), d.QueueTimeout)
	if p.MaxRequestsPerSecond == 0 {
		p.MaxRequestsPerSecond = d.MaxRequestsPerSecond
	}
	p.MaxRequestsPerSecond = max(p.MaxRequestsPerSecond, 0) // 0 from here on: no pacing
	return p
}

// DefaultLimits are the limits a zero Limits field takes.
func DefaultLimits() Limits {
	return Limits{
		ReadHeaderTimeout:   10 * time.Second,
		ReadTimeout:         30 * time.Second,
		WriteTimeout:        2 * time.Minute,
		IdleTimeout:         2 * time.Minute,
		MaxHeaderBytes:      64 << 10,
		MaxRequestBodyBytes: 1 << 20,
	}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	l.ReadHeaderTimeout = cmp.Or(l.ReadHeaderTimeout, d.ReadHeaderTimeout)
	l.ReadTimeout = cmp.Or(l.ReadTimeout, d.ReadTimeout)
	l.WriteTimeout = cmp.Or(l.WriteTimeout, d.WriteTimeout)
	l.IdleTimeout = cmp.Or(l.IdleTimeout, d.IdleTimeout)
	l.MaxHeaderBytes = cmp.Or(l.MaxHeaderBytes, d.MaxHeaderBytes)
	l.MaxRequestBodyBytes = cmp.Or(l.MaxRequestBodyBytes, d.MaxRequestBodyBytes)
	return l
}

// Server is the agent's HTTP server. Create it with New, mount handlers with
// Handle before or while it runs, and serve with Run. Its methods are safe
// for concurrent use.
type Server struct {
	opts     Options
	logger   *slog.Logger
	listener net.Listener
	mux      *http.ServeMux
	api      *pool // Handle, HandleAdmin
	console  *pool // HandleConsole
	ready    atomic.Bool
	srv      *http.Server
	access   atomic.Pointer[Access]
	// bcrypt admits one password check at a time, so wrong passwords
	// cannot take more than one core.
	bcrypt chan struct{}

	patMu    sync.Mutex
	patterns []string // mounted with Handle or HandleAdmin

	mu   sync.Mutex
	sets []*metrics.Set // written on /metrics; see RegisterMetrics

	closeOnce sync.Once
	closeErr  error

	unauthorized *metrics.Counter
	forbidden    *metrics.Counter
}

// New binds the listen address (so "address already in use" is reported at
// start-up, before anything runs) and returns a Server that is not yet
// serving.
func New(opts Options) (*Server, error) {
	if opts.Logger == nil || opts.Set == nil {
		return nil, errors.New("web: Logger and Set are required")
	}
	// The API is not paced: its queries hold their slots long enough
	// that the slots pace it.
	api := PoolLimits{MaxConcurrentRequests: opts.MaxConcurrentRequests, MaxQueuedRequests: opts.MaxQueuedRequests, QueueTimeout: opts.QueueTimeout}.withDefaults(
		PoolLimits{MaxConcurrentRequests: 64, MaxQueuedRequests: 1024, QueueTimeout: 5 * time.Second, MaxRequestsPerSecond: -1})
	opts.MaxConcurrentRequests, opts.MaxQueuedRequests, opts.QueueTimeout = api.MaxConcurrentRequests, api.MaxQueuedRequests, api.QueueTimeout
	opts.Console = opts.Console.withDefaults(DefaultConsolePool())
	if opts.ShutdownTimeout <= 0 {
		opts.ShutdownTimeout = 5 * time.Second
	}
	opts.Limits = opts.Limits.withDefaults()
	if opts.Access == nil {
		a, err := NewAccess(AccessConfig{})
		if err != nil {
			return nil, err
		}
		opts.Access = a
	}
	ln, err := net.Listen("tcp", opts.ListenAddress)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", opts.ListenAddress, err)
	}
	s := &Server{
		opts:         opts,
		logger:       opts.Logger,
		mux:          http.NewServeMux(),
		api:          newPool("api", api, opts.Set),
		console:      newPool("console", opts.Console, opts.Set),
		bcrypt:       make(chan struct{}, 1),
		unauthorized: opts.Set.NewCounter(`seismo_http_requests_unauthorized_total`),
		forbidden:    opts.Set.NewCounter(`seismo_http_requests_forbidden_total`),
	}
	s.listener = &switchListener{Listener: ln, s: s}
	s.access.Store(opts.Access)
	s.srv = &http.Server{
		Handler:           s.front(s.mux),
		ReadHeaderTimeout: opts.Limits.ReadHeaderTimeout,
		ReadTimeout:       opts.Limits.ReadTimeout,
		WriteTimeout:      opts.Limits.WriteTimeout,
		IdleTimeout:       opts.Limits.IdleTimeout,
		MaxHeaderBytes:    opts.Limits.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(opts.Logger.Handler(), slog.LevelDebug),
	}
	s.mux.Handle("GET /-/healthy", s.instrument("/-/healthy", http.HandlerFunc(s.healthy)))
	s.mux.Handle("GET /-/ready", s.instrument("/-/ready", http.HandlerFunc(s.readyHandler)))
	s.mux.Handle("GET /metrics", s.instrument("/metrics", http.HandlerFunc(s.metrics)))
	s.mux.Handle("POST /-/reload", s.instrument("/-/reload", http.HandlerFunc(s.reload)))
	if p := strings.TrimRight(opts.RoutePrefix, "/"); p != "" {
		s.srv.Handler = s.withPrefix(p, s.srv.Handler)
	}
	return s, nil
}

// Addr is the address the server listens on (useful with port 0).
func (s *Server) Addr() net.Addr { return s.listener.Addr() }

// Handle mounts a handler that only reads on pattern (http.ServeMux syntax,
// e.g. "GET /api/v1/alerts"). Handlers mounted with Handle and HandleAdmin
// run in the API pool (MaxConcurrentRequests and its queue) and are
// instrumented as seismo_http_requests_total{handler=pattern}. It panics
// on a conflicting pattern, like http.ServeMux.
func (s *Server) Handle(pattern string, h http.Handler) {
	s.addPattern(pattern)
	s.mux.Handle(pattern, s.instrument(pattern, s.api.limit(h)))
}

// HandleConsole mounts a console page (read-only, for people) like Handle,
// but in the console's own pool (Options.Console), so that API clients
// holding every API slot and queue place do not keep it waiting, and a
// flood of console requests takes no API slot.
func (s *Server) HandleConsole(pattern string, h http.Handler) {
	s.addPattern(pattern)
	s.mux.Handle(pattern, s.instrument(pattern, s.console.limit(h)))
}

// HandleAdmin mounts a handler that changes state (creates or deletes
// silences, for example), like Handle, but answers 403 unless the access
// in force enables the admin API (http.enable_admin_api).
func (s *Server) HandleAdmin(pattern string, h http.Handler) {
	s.addPattern(pattern)
	s.mux.Handle(pattern, s.instrument(pattern, s.gate(h, func(a *Access) bool { return a.cfg.EnableAdminAPI },
		"the admin API is disabled: set http.enable_admin_api: true to allow this request")))
}

// Patterns lists what Handle and HandleAdmin mounted, in order, so that
// tests can visit every endpoint.
func (s *Server) Patterns() []string {
	s.patMu.Lock()
	defer s.patMu.Unlock()
	return slices.Clone(s.patterns)
}

func (s *Server) addPattern(p string) {
	s.patMu.Lock()
	defer s.patMu.Unlock()
	s.patterns = append(s.patterns, p)
}

// SetAccess puts a in force for every request from now on and for every
// new connection (TLS turned on or off, new certificates). Connections
// already open keep the TLS session they negotiated.
func (s *Server) SetAccess(a *Access) { s.access.Store(a) }

// TLS reports whether new connections are served with TLS.
func (s *Server) TLS() bool { return s.access.Load().TLS() }

// RegisterMetrics adds a subsystem's metric set to /metrics. Gauge callbacks
// in it run on every scrape and must not wait for locks held during
// evaluation work.
func (s *Server) RegisterMetrics(set *metrics.Set) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sets = append(s.sets, set)
}

// SetReady sets what /-/ready answers: 200 once the agent has started every
// subsystem, 503 before and while shutting down.
func (s *Server) SetReady(ready bool) { s.ready.Store(ready) }

// Run serves until ctx ends, then shuts down gracefully: requests in flight
// get ShutdownTimeout to finish and are then cut off. It returns nil once
// stopped, and an error only if serving failed.
func (s *Server) Run(ctx context.Context) error {
	errc := make(chan error, 1)
	go func() { errc <- s.srv.Serve(s.listener) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve http on %s: %w", s.Addr(), err)
	case <-ctx.Done():
	}
	s.SetReady(false)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opts.ShutdownTimeout)
	defer cancel()
	err := s.srv.Shutdown(sctx)
	<-errc // Serve returns ErrServerClosed once Shutdown starts
	if err != nil {
		// A client that holds a request open is not the agent's failure:
		// cut it off and stop cleanly.
		s.logger.Warn("requests still running at shutdown were cut off", "timeout", s.opts.ShutdownTimeout, "err", err)
		s.Close()
	}
	return nil
}

// Close closes the listener and all connections at once. It is idempotent
// and safe to call whether or not Run was called.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.closeErr = s.srv.Close()
		if err := s.listener.Close(); err != nil && !errors.Is(err, net.ErrClosed) && s.closeErr == nil {
			s.closeErr = err
		}
	})
	return s.closeErr
}

func (s *Server) healthy(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	io.WriteString(w, "seismo is healthy.\n")
}

func (s *Server) readyHandler(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if !s.ready.Load() {
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, "seismo is not ready.\n")
		return
	}
	io.WriteString(w, "seismo is ready.\n")
}

func (s *Server) metrics(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	metrics.WriteProcessMetrics(w)
	s.opts.Set.WritePrometheus(w)
	s.mu.Lock()
	sets := s.sets
	s.mu.Unlock()
	for _, set := range sets {
		set.WritePrometheus(w)
	}
}

func (s *Server) reload(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if !s.access.Load().cfg.EnableLifecycle {
		s.forbidden.Inc()
		http.Error(w, "the lifecycle API is disabled: set http.enable_lifecycle: true to allow POST /-/reload", http.StatusForbidden)
		return
	}
	if s.opts.Reload == nil {
		http.Error(w, "reload is not enabled", http.StatusNotImplemented)
		return
	}
	if err := s.opts.Reload(r.Context()); err != nil {
		http.Error(w, "reload failed: "+err.Error(), http.StatusInternalServerError)
		return
	}
	io.WriteString(w, "config reloaded\n")
}

// front runs before the mux for every request: it sets the configured
// response headers, caps the body, and demands credentials when they are
// configured (except on the health endpoints when they are exempt).
func (s *Server) front(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := s.access.Load()
		for k, v := range a.web.headers {
			w.Header().Set(k, v)
		}
		if r.Body != nil {
			r.Body = http.MaxBytesReader(w, r.Body, s.opts.Limits.MaxRequestBodyBytes)
		}
		if a.AuthRequired() && !(a.cfg.AuthExemptHealth && isHealth(r)) && !a.authenticate(r.Context(), r, s.bcrypt) {
			s.unauthorized.Inc()
			a.challenge(w.Header())
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func isHealth(r *http.Request) bool {
	return (r.Method == http.MethodGet || r.Method == http.MethodHead) &&
		(r.URL.Path == "/-/healthy" || r.URL.Path == "/-/ready")
}

// gate answers 403 with msg unless allowed says the access in force permits
// h, then runs h in an API slot.
func (s *Server) gate(h http.Handler, allowed func(*Access) bool, msg string) http.Handler {
	limited := s.api.limit(h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !allowed(s.access.Load()) {
			s.forbidden.Inc()
			http.Error(w, msg, http.StatusForbidden)
			return
		}
		limited.ServeHTTP(w, r)
	})
}

// switchListener serves each new connection with the TLS config in force
// when it is accepted, or plain when there is none, so a reload can turn
// TLS on or rotate certificates without restarting the listener.
type switchListener struct {
	net.Listener
	s *Server
}

func (l *switchListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if cfg := l.s.access.Load().tlsConfig(); cfg != nil {
		return tls.Server(c, cfg), nil
	}
	return c, nil
}

// pool is a number of slots in which mounted handlers run, and a queue of
// requests waiting for one. Its metrics carry pool="name".
type pool struct {
	name   string
	lim    PoolLimits
	slots  chan struct{}
	pace   *rate.Limiter // nil: not paced
	queued atomic.Int64  // requests waiting for a slot or their turn

	// perClient bounds the requests one client (remote address) may have
	// waiting: a quarter of the queue, so that one client's flood cannot
	// fill the queue and leave everyone else 503s, and only a flood from
	// four addresses at once can. Its further requests are shed (see
	// overShare).
	perClient  int
	waitingMu  sync.Mutex
	waiting    map[string]int // waiting requests by client; no zero entries
	held       atomic.Int64   // requests over their client's share, held before their 503
	clientFull *metrics.Counter

	rejected     *metrics.Counter
	queueFull    *metrics.Counter
	queueTimeout *metrics.Counter
	queueWait    *metrics.PrometheusHistogram
}

// newPool makes a pool with limits lim (defaults applied) and registers
// its metrics in set. The names are those of the single pool seismo had
// before the console got its own, with a pool label, so that a sum over
// pool gives what they counted then.
func newPool(name string, lim PoolLimits, set *metrics.Set) *pool {
	p := &pool{
		name:         name,
		lim:          lim,
		slots:        make(chan struct{}, lim.MaxConcurrentRequests),
		rejected:     set.NewCounter(fmt.Sprintf(`seismo_http_requests_rejected_total{pool=%q}`, name)),
		queueFull:    set.NewCounter(fmt.Sprintf(`seismo_http_requests_rejected_by_reason_total{pool=%q,reason="queue_full"}`, name)),
		queueTimeout: set.NewCounter(fmt.Sprintf(`seismo_http_requests_rejected_by_reason_total{pool=%q,reason="queue_timeout"}`, name)),
		queueWait:    set.NewPrometheusHistogram(fmt.Sprintf(`seismo_http_request_queue_wait_seconds{pool=%q}`, name)),
		perClient:    max(1, lim.MaxQueuedRequests/4),
		waiting:      make(map[string]int),
		clientFull:   set.NewCounter(fmt.Sprintf(`seismo_http_requests_rejected_by_reason_total{pool=%q,reason="client_queue_full"}`, name)),
	}
	if lim.MaxRequestsPerSecond > 0 {
		p.pace = rate.NewLimiter(rate.Limit(lim.MaxRequestsPerSecond), max(1, int(lim.MaxRequestsPerSecond)))
	}
	set.NewGauge(fmt.Sprintf(`seismo_http_requests_queued{pool=%q}`, name), func() float64 { return float64(p.queued.Load()) })
	set.NewGauge(fmt.Sprintf(`seismo_http_requests_in_flight{pool=%q}`, name), func() float64 { return float64(len(p.slots)) })
	set.NewGauge(fmt.Sprintf(`seismo_http_max_concurrent_requests{pool=%q}`, name), func() float64 { return float64(cap(p.slots)) })
	return p
}

// limit runs h in one of the pool's slots, before h does any work. When
// all slots are busy, or the pool is paced and the request comes early,
// the request waits, blocked, in a queue of at most MaxQueuedRequests for
// at most QueueTimeout; past either bound it gets 503 with Retry-After.
// Waiting instead of answering at once paces clients that retry
// immediately: a flood of instant 503s costs the agent more CPU than the
// queries it sheds, and a blocked goroutine costs none.
func (p *pool) limit(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var turn *rate.Reservation // nil: not paced
		var early time.Duration    // how long before the request's turn
		if p.pace != nil {
			turn = p.pace.Reserve() // never refused: the burst is at least 1
			early = turn.Delay()
		}
		if early == 0 {
			select {
			case p.slots <- struct{}{}:
				defer func() { <-p.slots }()
				h.ServeHTTP(w, r)
				return
			default:
			}
		}
		giveBack := func() {
			if turn != nil {
				turn.Cancel()
			}
		}
		if p.queued.Add(1) > int64(p.lim.MaxQueuedRequests) {
			p.queued.Add(-1)
			giveBack()
			p.queueFull.Inc()
			p.shed(w, "too many concurrent requests, and the queue is full")
			return
		}
		client := clientOf(r)
		if !p.enter(client) {
			p.queued.Add(-1)
			giveBack()
			p.overShare(w, r, client)
			return
		}
		dequeue := func() { p.queued.Add(-1); p.leave(client) }
		start := time.Now()
		t := time.NewTimer(p.lim.QueueTimeout)
		defer t.Stop()
		var slot chan<- struct{} // nil, so never ready, until the turn comes
		turnCame := time.After(early)
		for {
			select {
			case <-turnCame:
				turnCame, slot = nil, p.slots
				continue
			case slot <- struct{}{}:
				dequeue()
				p.queueWait.UpdateDuration(start)
				defer func() { <-p.slots }()
				h.ServeHTTP(w, r)
			case <-t.C:
				dequeue()
				if slot == nil {
					giveBack()
				}
				p.queueTimeout.Inc()
				p.shed(w, fmt.Sprintf("too many concurrent requests: no slot freed within %s", p.lim.QueueTimeout))
			case <-r.Context().Done():
				dequeue()
				if slot == nil {
					giveBack()
				}
				p.shed(w, "request cancelled while queued") // the client has most likely left
			}
			return
		}
	})
}

// overShare sheds a request of a client that already has its share of
// the queue waiting. The 503 comes after a second (or the queue timeout,
// if shorter), for which the request is held, blocked: a client that
// retries at once is then paced as the queue paces it, instead of
// spinning on instant 503s that cost more CPU than the requests it
// floods with. Held requests are bounded like the queue; past that bound
// the 503 comes at once.
func (p *pool) overShare(w http.ResponseWriter, r *http.Request, client string) {
	p.clientFull.Inc()
	msg := fmt.Sprintf("too many requests from %s are already waiting (%d)", client, p.perClient)
	if p.held.Add(1) <= int64(p.lim.MaxQueuedRequests) {
		t := time.NewTimer(min(p.lim.QueueTimeout, time.Second))
		select {
		case <-t.C:
		case <-r.Context().Done():
		}
		t.Stop()
	}
	p.held.Add(-1)
	p.shed(w, msg)
}

// clientOf is the client a request is counted against: the host of its
// remote address. Behind a reverse proxy every request comes from the
// proxy, and the proxy's share is the whole queue's quarter; forwarded
// headers are not trusted, since any client can write them.
func clientOf(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// enter counts a waiting request of client, unless the client already has
// its share of the queue waiting.
func (p *pool) enter(client string) bool {
	p.waitingMu.Lock()
	defer p.waitingMu.Unlock()
	if p.waiting[client] >= p.perClient {
		return false
	}
	p.waiting[client]++
	return true
}

// leave counts a waiting request of client out (served, timed out or
// gone): the map holds only clients with requests waiting.
func (p *pool) leave(client string) {
	p.waitingMu.Lock()
	defer p.waitingMu.Unlock()
	if p.waiting[client]--; p.waiting[client] <= 0 {
		delete(p.waiting, client)
	}
}

// shed answers 503 with Retry-After.
func (p *pool) shed(w http.ResponseWriter, msg string) {
	p.rejected.Inc()
	w.Header().Set("Retry-After", "1")
	http.Error(w, msg, http.StatusServiceUnavailable)
}

// instrument counts requests by handler and status code, and times them.
func (s *Server) instrument(handler string, h http.Handler) http.Handler {
	label := strings.ReplaceAll(handler, `"`, `'`)
	duration := s.opts.Set.NewPrometheusHistogram(fmt.Sprintf(`seismo_http_request_duration_seconds{handler=%q}`, label))
	// Counters by status code, looked up without formatting their name on
	// every request (the shed 503s come by the thousand per second).
	var byCode sync.Map // int -> *metrics.Counter
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		h.ServeHTTP(rw, r)
		duration.UpdateDuration(start)
		c, ok := byCode.Load(rw.code)
		if !ok {
			c, _ = byCode.LoadOrStore(rw.code, s.opts.Set.GetOrCreateCounter(fmt.Sprintf(`seismo_http_requests_total{handler=%q,code="%d"}`, label, rw.code)))
		}
		c.(*metrics.Counter).Inc()
	})
}

type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	w.code = code
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach Flush and deadlines.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
