package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
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

// holdSlot mounts GET /api/v1/slow, a handler that does not return until
// the test releases it, and returns the release function.
func holdSlot(t *testing.T, s *Server) (entered <-chan struct{}, release func()) {
	t.Helper()
	in := make(chan struct{}, 16)
	rel := make(chan struct{})
	s.Handle("GET /api/v1/slow", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in <- struct{}{}
		<-rel
		io.WriteString(w, "done")
	}))
	var once sync.Once
	release = func() { once.Do(func() { close(rel) }) }
	t.Cleanup(release)
	return in, release
}

// getAsync requests url in the background and sends its status code (-1
// on a client error) on the returned channel.
func getAsync(ctx context.Context, url string) <-chan int {
	return getAsyncFrom(ctx, http.DefaultClient, url)
}

// getAsyncFrom is getAsync with the given client.
func getAsyncFrom(ctx context.Context, c *http.Client, url string) <-chan int {
	res := make(chan int, 1)
	go func() {
		req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
		if err != nil {
			res <- -1
			return
		}
		resp, err := c.Do(req)
		if err != nil {
			res <- -1
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		res <- resp.StatusCode
	}()
	return res
}

// waitQueued waits until n requests wait for a slot of pool p. It fails
// the test if that takes a minute (a request that went to another pool
// never queues here), rather than spin until the test binary times out.
func waitQueued(t *testing.T, p *pool, n int64) {
	t.Helper()
	giveUp := time.Now().Add(time.Minute)
	for p.queued.Load() != n {
		if t.Context().Err() != nil || time.Now().After(giveUp) {
			t.Fatalf("never %d queued requests in the %s pool (%d queued)", n, p.name, p.queued.Load())
		}
		time.Sleep(time.Millisecond)
	}
}

// TestHealthAnswersWhileAPIIsSaturated takes every API slot and fills the
// queue with handlers that do not return, and shows that health,
// readiness and /metrics still answer, and that further API requests are
// shed at once with 503 and Retry-After.
func TestHealthAnswersWhileAPIIsSaturated(t *testing.T) {
	set := metrics.NewSet()
	s, base := start(t, Options{MaxConcurrentRequests: 1, MaxQueuedRequests: 1, QueueTimeout: time.Hour, Set: set})
	entered, release := holdSlot(t, s)
	s.SetReady(true)

	slow := getAsync(t.Context(), base+"/api/v1/slow")
	<-entered // the only API slot is now taken and will stay taken
	queued := getAsync(t.Context(), base+"/api/v1/slow")
	waitQueued(t, s.api, 1) // and the queue is full

	tests := []struct {
		name, method, path string
		code               int
		body               string
	}{
		{"healthy", "GET", "/-/healthy", 200, "healthy"},
		{"ready", "GET", "/-/ready", 200, "ready"},
		{"metrics", "GET", "/metrics", 200, `seismo_http_requests_queued{pool="api"} 1`},
		{"api shed", "GET", "/api/v1/slow", 503, "too many concurrent requests, and the queue is full"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := http.Get(base + tt.path)
			require.NoError(t, err)
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.Equal(t, tt.code, resp.StatusCode)
			require.Contains(t, string(b), tt.body)
			if tt.code == 503 {
				require.Equal(t, "1", resp.Header.Get("Retry-After"))
			}
		})
	}
	select {
	case <-slow:
		t.Fatal("the blocked handler returned before it was released")
	default:
	}
	require.Equal(t, uint64(1), set.GetOrCreateCounter(`seismo_http_requests_rejected_total{pool="api"}`).Get())
	require.Equal(t, uint64(1), set.GetOrCreateCounter(`seismo_http_requests_rejected_by_reason_total{pool="api",reason="queue_full"}`).Get())

	release()
	require.Equal(t, 200, <-slow)
	require.Equal(t, 200, <-queued, "the queued request is served once a slot frees")
	require.Equal(t, int64(0), s.api.queued.Load())
}

// TestPoolsAreSeparate fills one pool's only slot and its queue with
// requests that do not return, and shows that a handler of the other pool
// is still served at once, while the full pool sheds: the console stays
// usable while API clients hold every API slot and queue place, and a
// flood of console requests takes nothing from the API.
func TestPoolsAreSeparate(t *testing.T) {
	tests := []struct {
		name               string
		flood              string // pool whose slot and queue are taken
		slow, shed, served string // paths: blocked, shed, served
		servedBody         string
	}{
		{"api full, console served", "api", "/api/v1/slow", "/api/v1/fast", "/", "console page"},
		{"console full, api served", "console", "/slow", "/", "/api/v1/fast", "api answer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := metrics.NewSet()
			one := PoolLimits{MaxConcurrentRequests: 1, MaxQueuedRequests: 1, QueueTimeout: time.Hour}
			s, base := start(t, Options{MaxConcurrentRequests: one.MaxConcurrentRequests, MaxQueuedRequests: one.MaxQueuedRequests,
				QueueTimeout: one.QueueTimeout, Console: one, Set: set})
			in := make(chan struct{}, 2)
			rel := make(chan struct{})
			var once sync.Once
			release := func() { once.Do(func() { close(rel) }) }
			t.Cleanup(release)
			blocked := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				in <- struct{}{}
				<-rel
				io.WriteString(w, "done")
			})
			s.Handle("GET /api/v1/slow", blocked)
			s.Handle("GET /api/v1/fast", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "api answer") }))
			s.HandleConsole("GET /slow", blocked)
			s.HandleConsole("GET /{$}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "console page") }))
			full, other := s.api, s.console
			if tt.flood == "console" {
				full, other = other, full
			}

			slow := getAsync(t.Context(), base+tt.slow)
			<-in // the flooded pool's only slot is taken and stays taken
			require.Len(t, full.slots, 1, "the blocked request holds the %s pool's slot", tt.flood)
			queued := getAsync(t.Context(), base+tt.slow)
			waitQueued(t, full, 1) // and its queue is full
			code, body := get(t, "GET", base+tt.shed)
			require.Equal(t, http.StatusServiceUnavailable, code, "the flooded pool sheds: %s", body)
			require.Contains(t, body, "the queue is full")

			code, body = get(t, "GET", base+tt.served)
			require.Equal(t, http.StatusOK, code, "the other pool serves: %s", body)
			require.Equal(t, tt.servedBody, body)

			_, m := get(t, "GET", base+"/metrics")
			require.Contains(t, m, fmt.Sprintf(`seismo_http_requests_queued{pool=%q} 1`, tt.flood))
			require.Contains(t, m, fmt.Sprintf(`seismo_http_requests_in_flight{pool=%q} 1`, tt.flood))
			require.Contains(t, m, fmt.Sprintf(`seismo_http_requests_rejected_by_reason_total{pool=%q,reason="queue_full"} 1`, tt.flood))
			require.Equal(t, int64(0), other.queued.Load())
			require.Empty(t, other.slots, "the served request has given its slot back")
			require.Zero(t, other.rejected.Get())

			select {
			case <-slow:
				t.Fatal("the blocked handler returned before it was released")
			default:
			}
			release()
			require.Equal(t, 200, <-slow)
			require.Equal(t, 200, <-queued, "the queued request is served once a slot frees")
		})
	}
}

// TestPacedPool: a paced pool lets a request into a slot only on its turn;
// until then the request waits in the queue although slots are free, and
// gets 503 past the queue timeout. The API pool is not paced.
func TestPacedPool(t *testing.T) {
	set := metrics.NewSet()
	s, base := start(t, Options{Set: set, Console: PoolLimits{MaxConcurrentRequests: 4, MaxQueuedRequests: 1,
		QueueTimeout: 10 * time.Millisecond, MaxRequestsPerSecond: 1.0 / 3600}})
	s.HandleConsole("GET /{$}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "console page") }))
	s.Handle("GET /api/v1/fast", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "api answer") }))

	code, body := get(t, "GET", base+"/")
	require.Equal(t, http.StatusOK, code, "the first request is the burst: %s", body)
	code, body = get(t, "GET", base+"/")
	require.Equal(t, http.StatusServiceUnavailable, code, "the next turn is an hour away: %s", body)
	require.Contains(t, body, "no slot freed within 10ms")
	require.Equal(t, uint64(1), set.GetOrCreateCounter(`seismo_http_requests_rejected_by_reason_total{pool="console",reason="queue_timeout"}`).Get())
	require.Empty(t, s.console.slots, "every slot was free")
	require.Equal(t, int64(0), s.console.queued.Load())

	for range 3 {
		code, body = get(t, "GET", base+"/api/v1/fast")
		require.Equal(t, http.StatusOK, code, body)
	}
}

// TestPacedClientLeaves: a client that gives up while it waits for its
// turn leaves the queue.
func TestPacedClientLeaves(t *testing.T) {
	s, base := start(t, Options{Console: PoolLimits{MaxConcurrentRequests: 4, MaxQueuedRequests: 1,
		QueueTimeout: time.Hour, MaxRequestsPerSecond: 1.0 / 3600}})
	s.HandleConsole("GET /{$}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "console page") }))
	code, _ := get(t, "GET", base+"/")
	require.Equal(t, http.StatusOK, code)

	ctx, cancel := context.WithCancel(t.Context())
	gone := getAsync(ctx, base+"/")
	waitQueued(t, s.console, 1) // waiting for its turn, with every slot free
	require.Empty(t, s.console.slots)
	cancel()
	require.Equal(t, -1, <-gone)
	waitQueued(t, s.console, 0)
}

// clientFrom returns an HTTP client whose connections come from the
// loopback address ip (all of 127.0.0.0/8 is loopback on Linux), so that
// a test can be several clients to the server.
func clientFrom(t *testing.T, ip string) *http.Client {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	tr := &http.Transport{DialContext: d.DialContext}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// TestQueueSharePerClient: one client can fill only its share (a quarter)
// of a pool's queue; its further requests are shed (after being held for
// a second, which paces a client that retries at once), while another
// client still finds a place in the queue and is served once a slot
// frees.
func TestQueueSharePerClient(t *testing.T) {
	set := metrics.NewSet()
	s, base := start(t, Options{MaxConcurrentRequests: 1, MaxQueuedRequests: 8, QueueTimeout: time.Hour, Set: set})
	entered, release := holdSlot(t, s)
	flooder, operator := clientFrom(t, "127.0.0.2"), clientFrom(t, "127.0.0.3")
	do := func(c *http.Client) <-chan int { return getAsyncFrom(t.Context(), c, base+"/api/v1/slow") }

	held := do(flooder)
	<-entered // the only slot is the flooder's
	var waiting []<-chan int
	for i := range 2 {
		waiting = append(waiting, do(flooder))
		waitQueued(t, s.api, int64(i+1))
	}
	select {
	case code := <-do(flooder):
		require.Equal(t, http.StatusServiceUnavailable, code, "the flooder's share (8/4) is full, the queue is not")
	case <-time.After(time.Minute):
		t.Fatal("the flooder's third waiting request was queued, not shed")
	}
	require.Equal(t, uint64(1), set.GetOrCreateCounter(`seismo_http_requests_rejected_by_reason_total{pool="api",reason="client_queue_full"}`).Get())
	require.Equal(t, int64(2), s.api.queued.Load())

	served := do(operator)
	waitQueued(t, s.api, 3) // the other client queues
	release()
	require.Equal(t, 200, <-held)
	for _, w := range waiting {
		require.Equal(t, 200, <-w)
	}
	require.Equal(t, 200, <-served)
	require.Empty(t, s.api.waiting, "no client is counted once nothing waits")
	require.Equal(t, int64(0), s.api.held.Load())
	require.Equal(t, uint64(0), set.GetOrCreateCounter(`seismo_http_requests_rejected_by_reason_total{pool="api",reason="queue_full"}`).Get())
}

// TestQueueTimeout shows that a request that waited QueueTimeout for a
// slot gets 503 with Retry-After, and that without a queue the excess is
// shed at once.
func TestQueueTimeout(t *testing.T) {
	tests := []struct {
		name   string
		queue  int
		reason string
		body   string
	}{
		{"waited too long", 1, "queue_timeout", "no slot freed within 10ms"},
		{"no queue", -1, "queue_full", "the queue is full"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := metrics.NewSet()
			s, base := start(t, Options{MaxConcurrentRequests: 1, MaxQueuedRequests: tt.queue, QueueTimeout: 10 * time.Millisecond, Set: set})
			entered, release := holdSlot(t, s)
			slow := getAsync(t.Context(), base+"/api/v1/slow")
			<-entered

			resp, err := http.Get(base + "/api/v1/slow")
			require.NoError(t, err)
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.NoError(t, err)
			require.Equal(t, 503, resp.StatusCode)
			require.Equal(t, "1", resp.Header.Get("Retry-After"))
			require.Contains(t, string(b), tt.body)
			require.Equal(t, uint64(1), set.GetOrCreateCounter(`seismo_http_requests_rejected_by_reason_total{pool="api",reason="`+tt.reason+`"}`).Get())
			require.Equal(t, int64(0), s.api.queued.Load())

			release()
			require.Equal(t, 200, <-slow)
		})
	}
}

// TestQueuedClientLeaves shows that a client that gives up while queued
// leaves the queue, so the place is free for another.
func TestQueuedClientLeaves(t *testing.T) {
	s, base := start(t, Options{MaxConcurrentRequests: 1, MaxQueuedRequests: 1, QueueTimeout: time.Hour})
	entered, release := holdSlot(t, s)
	slow := getAsync(t.Context(), base+"/api/v1/slow")
	<-entered

	ctx, cancel := context.WithCancel(t.Context())
	gone := getAsync(ctx, base+"/api/v1/slow")
	waitQueued(t, s.api, 1)
	cancel()
	require.Equal(t, -1, <-gone)
	waitQueued(t, s.api, 0)

	again := getAsync(t.Context(), base+"/api/v1/slow")
	waitQueued(t, s.api, 1)
	release()
	require.Equal(t, 200, <-slow)
	require.Equal(t, 200, <-again)
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
