// Package web is the agent's HTTP server: /metrics, /-/healthy, /-/ready,
// POST /-/reload, and a mux on which subsystems mount their API handlers
// with Handle.
//
// Health, readiness and /metrics are answered by the server itself, from
// state it holds, and never wait for evaluation work or for a free API slot:
// a health check served by saturated workers is how one of the outages that
// seismo exists to prevent got worse. Mounted handlers share a bounded
// number of concurrent slots and get 503 when all are busy.
package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/VictoriaMetrics/metrics"
)

// Options configures a Server.
type Options struct {
	// ListenAddress is host:port; port 0 picks a free port (see Addr).
	ListenAddress string
	// MaxConcurrentRequests bounds requests in flight to handlers mounted
	// with Handle; more get 503 at once. 0 means 64.
	MaxConcurrentRequests int
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
}

// Server is the agent's HTTP server. Create it with New, mount handlers with
// Handle before or while it runs, and serve with Run. Its methods are safe
// for concurrent use.
type Server struct {
	opts     Options
	logger   *slog.Logger
	listener net.Listener
	mux      *http.ServeMux
	slots    chan struct{}
	ready    atomic.Bool
	srv      *http.Server

	mu   sync.Mutex
	sets []*metrics.Set // written on /metrics; see RegisterMetrics

	closeOnce sync.Once
	closeErr  error

	rejected *metrics.Counter
}

// New binds the listen address (so "address already in use" is reported at
// start-up, before anything runs) and returns a Server that is not yet
// serving.
func New(opts Options) (*Server, error) {
	if opts.Logger == nil || opts.Set == nil {
		return nil, errors.New("web: Logger and Set are required")
	}
	if opts.MaxConcurrentRequests <= 0 {
		opts.MaxConcurrentRequests = 64
	}
	if opts.ShutdownTimeout <= 0 {
		opts.ShutdownTimeout = 5 * time.Second
	}
	ln, err := net.Listen("tcp", opts.ListenAddress)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", opts.ListenAddress, err)
	}
	s := &Server{
		opts:     opts,
		logger:   opts.Logger,
		listener: ln,
		mux:      http.NewServeMux(),
		slots:    make(chan struct{}, opts.MaxConcurrentRequests),
		rejected: opts.Set.NewCounter(`seismo_http_requests_rejected_total`),
	}
	s.srv = &http.Server{
		Handler:           s.mux,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
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

// Handle mounts h on pattern (http.ServeMux syntax, e.g.
// "GET /api/v1/alerts"). Mounted handlers share the concurrency limit and
// are instrumented as seismo_http_requests_total{handler=pattern}. It panics
// on a conflicting pattern, like http.ServeMux.
func (s *Server) Handle(pattern string, h http.Handler) {
	s.mux.Handle(pattern, s.instrument(pattern, s.limit(h)))
}

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

// limit gives h one of the shared slots, or answers 503 at once when all are
// busy: queueing would only make a saturated agent slower.
func (s *Server) limit(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case s.slots <- struct{}{}:
			defer func() { <-s.slots }()
			h.ServeHTTP(w, r)
		default:
			s.rejected.Inc()
			w.Header().Set("Retry-After", "1")
			http.Error(w, "too many concurrent requests", http.StatusServiceUnavailable)
		}
	})
}

// instrument counts requests by handler and status code, and times them.
func (s *Server) instrument(handler string, h http.Handler) http.Handler {
	label := strings.ReplaceAll(handler, `"`, `'`)
	duration := s.opts.Set.NewPrometheusHistogram(fmt.Sprintf(`seismo_http_request_duration_seconds{handler=%q}`, label))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		h.ServeHTTP(rw, r)
		duration.UpdateDuration(start)
		s.opts.Set.GetOrCreateCounter(fmt.Sprintf(`seismo_http_requests_total{handler=%q,code="%d"}`, label, rw.code)).Inc()
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
