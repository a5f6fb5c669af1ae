package web

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// start runs a Server on a free loopback port until the test ends and
// returns it with its base URL.
func start(t *testing.T, opts Options) (*Server, string) {
	t.Helper()
	opts.ListenAddress = "127.0.0.1:0"
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Set == nil {
		opts.Set = metrics.NewSet()
	}
	s, err := New(opts)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
		require.NoError(t, s.Close())
	})
	return s, "http://" + s.Addr().String()
}

// get returns the status and body of a request; client errors fail the
// test.
func get(t *testing.T, method, url string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// TestHealthAnswersWhileAPIIsSaturated holds every API slot with a handler
// that does not return, and shows that health, readiness and /metrics still
// answer while it is held, and that further API requests are shed with 503
// instead of queueing.
func TestHealthAnswersWhileAPIIsSaturated(t *testing.T) {
	entered := make(chan struct{})
	release := make(chan struct{})
	set := metrics.NewSet()
	s, base := start(t, Options{MaxConcurrentRequests: 1, Set: set})
	s.Handle("GET /api/v1/slow", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-release
		io.WriteString(w, "done")
	}))
	s.SetReady(true)

	slow := make(chan int, 1)
	go func() {
		resp, err := http.Get(base + "/api/v1/slow")
		if err != nil {
			slow <- -1
			return
		}
		resp.Body.Close()
		slow <- resp.StatusCode
	}()
	<-entered // the only API slot is now taken and will stay taken

	tests := []struct {
		name, method, path string
		code               int
		body               string
	}{
		{"healthy", "GET", "/-/healthy", 200, "healthy"},
		{"ready", "GET", "/-/ready", 200, "ready"},
		{"metrics", "GET", "/metrics", 200, "go_goroutines"},
		{"api shed", "GET", "/api/v1/slow", 503, "too many concurrent requests"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := get(t, tt.method, base+tt.path)
			require.Equal(t, tt.code, code)
			require.Contains(t, body, tt.body)
		})
	}
	select {
	case <-slow:
		t.Fatal("the blocked handler returned before it was released")
	default:
	}
	require.Equal(t, uint64(1), set.GetOrCreateCounter("seismo_http_requests_rejected_total").Get())

	close(release)
	require.Equal(t, 200, <-slow)
}

func TestReady(t *testing.T) {
	s, base := start(t, Options{})
	code, _ := get(t, "GET", base+"/-/ready")
	require.Equal(t, http.StatusServiceUnavailable, code, "not ready before SetReady(true)")
	s.SetReady(true)
	code, _ = get(t, "GET", base+"/-/ready")
	require.Equal(t, http.StatusOK, code)
	s.SetReady(false)
	code, _ = get(t, "GET", base+"/-/ready")
	require.Equal(t, http.StatusServiceUnavailable, code)
}

func TestReload(t *testing.T) {
	tests := []struct {
		name   string
		reload func(context.Context) error
		method string
		code   int
		body   string
	}{
		{"success", func(context.Context) error { return nil }, "POST", 200, "config reloaded"},
		{"failure names the error", func(context.Context) error {
			return errors.New("seismo.yml:3:1: bogus: unknown key")
		}, "POST", 500, "reload failed: seismo.yml:3:1: bogus: unknown key"},
		{"GET is not allowed", func(context.Context) error { return nil }, "GET", 405, ""},
		{"no reload function", nil, "POST", 501, "not enabled"},
	}
	lifecycle, err := NewAccess(AccessConfig{EnableLifecycle: true})
	require.NoError(t, err)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, base := start(t, Options{Reload: tt.reload, Access: lifecycle})
			code, body := get(t, tt.method, base+"/-/reload")
			require.Equal(t, tt.code, code)
			require.Contains(t, body, tt.body)
		})
	}
}

func TestMetrics(t *testing.T) {
	sub := metrics.NewSet()
	sub.NewCounter("seismo_test_things_total").Add(3)
	s, base := start(t, Options{})
	s.RegisterMetrics(sub)
	s.Handle("GET /api/v1/x", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTeapot)
	}))
	get(t, "GET", base+"/api/v1/x")
	code, body := get(t, "GET", base+"/metrics")
	require.Equal(t, 200, code)
	for _, want := range []string{
		"go_goroutines ",
		"process_resident_memory_bytes ",
		"seismo_test_things_total 3\n",
		`seismo_http_requests_total{handler="GET /api/v1/x",code="418"} 1` + "\n",
		`seismo_http_request_duration_seconds_count{handler="GET /api/v1/x"} 1` + "\n",
	} {
		require.Contains(t, body, want)
	}
}

func TestNewReportsAddressInUse(t *testing.T) {
	s, _ := start(t, Options{})
	addr := s.Addr().String()
	_, err := New(Options{ListenAddress: addr, Logger: slog.New(slog.DiscardHandler), Set: metrics.NewSet()})
	require.Error(t, err)
	require.True(t, strings.HasPrefix(err.Error(), "listen on "+addr+":"), err.Error())
}

func TestCloseWithoutRunIsIdempotent(t *testing.T) {
	s, err := New(Options{ListenAddress: "127.0.0.1:0", Logger: slog.New(slog.DiscardHandler), Set: metrics.NewSet()})
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.NoError(t, s.Close())
}

func TestNewRequiresLoggerAndSet(t *testing.T) {
	_, err := New(Options{ListenAddress: "127.0.0.1:0"})
	require.ErrorContains(t, err, "Logger and Set are required")
}

// BenchmarkHealthy measures /-/healthy through the server's mux and
// instrumentation, without the network.
func BenchmarkHealthy(b *testing.B) {
	s, err := New(Options{ListenAddress: "127.0.0.1:0", Logger: slog.New(slog.DiscardHandler), Set: metrics.NewSet()})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	req := httptest.NewRequest("GET", "/-/healthy", nil)
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		s.srv.Handler.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Fatal(w.Code)
		}
	}
}

// TestShutdownCutsOffHangingRequests: a request that does not finish within
// ShutdownTimeout is cut off and Run still returns nil.
func TestShutdownCutsOffHangingRequests(t *testing.T) {
	never := make(chan struct{})
	s, err := New(Options{
		ListenAddress:   "127.0.0.1:0",
		Logger:          slog.New(slog.DiscardHandler),
		Set:             metrics.NewSet(),
		ShutdownTimeout: time.Millisecond, // the request below never finishes on its own
	})
	require.NoError(t, err)
	entered := make(chan struct{})
	s.Handle("GET /api/v1/hang", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		select {
		case <-r.Context().Done(): // the connection was closed
		case <-never:
		}
	}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	clientDone := make(chan error, 1)
	go func() {
		resp, err := http.Get("http://" + s.Addr().String() + "/api/v1/hang")
		if err == nil {
			resp.Body.Close()
		}
		clientDone <- err
	}()
	<-entered
	cancel()
	require.NoError(t, <-done)
	require.Error(t, <-clientDone, "the hanging request was cut off")
	close(never)
}
