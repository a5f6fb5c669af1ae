package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/seismo-agent/seismo/internal/config"
	"github.com/seismo-agent/seismo/internal/testbin"
	"github.com/seismo-agent/seismo/internal/testlog"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testbin.Remove()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// testConfig is the default config on a free loopback port, with the
// lifecycle and admin endpoints on (the tests reload and silence over HTTP).
func testConfig() *config.Config {
	c := config.Default()
	c.HTTP.ListenAddress = "127.0.0.1:0"
	c.HTTP.EnableLifecycle, c.HTTP.EnableAdminAPI = true, true
	c.DataDir = "unused"
	return &c
}

// recorder collects sd_notify states.
type recorder struct {
	mu     sync.Mutex
	states []string
	ch     chan string // if not nil, receives every state
}

func (r *recorder) notify(s string) {
	r.mu.Lock()
	r.states = append(r.states, s)
	r.mu.Unlock()
	if r.ch != nil {
		r.ch <- s
	}
}

func (r *recorder) count(s string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, x := range r.states {
		if x == s {
			n++
		}
	}
	return n
}

// startAgent runs a until the test ends and returns its base URL.
func startAgent(t *testing.T, a *agent) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return "http://" + a.web.Addr().String()
}

func do(t *testing.T, method, url string) (int, string) {
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

func newTestAgent(t *testing.T, opts agentOptions) *agent {
	t.Helper()
	if opts.logger == nil {
		opts.logger = slog.New(slog.DiscardHandler)
	}
	if opts.load == nil {
		opts.load = func() (*config.Config, error) { return testConfig(), nil }
	}
	a, err := newAgent(testConfig(), opts)
	require.NoError(t, err)
	return a
}

// TestHealthyWhileMainLoopIsBlocked blocks the agent's main loop inside a
// reload (standing for evaluation work that does not finish) and shows that
// /-/healthy and /metrics still answer while it is blocked.
func TestHealthyWhileMainLoopIsBlocked(t *testing.T) {
	a := newTestAgent(t, agentOptions{})
	entered := make(chan struct{})
	release := make(chan struct{})
	a.addReloader(reloader{name: "stuck", prepare: func(context.Context, *config.Config) (func(), error) {
		close(entered)
		<-release
		return nil, nil
	}})
	base := startAgent(t, a)

	reloaded := make(chan int, 1)
	go func() {
		resp, err := http.Post(base+"/-/reload", "", nil)
		if err != nil {
			reloaded <- -1
			return
		}
		resp.Body.Close()
		reloaded <- resp.StatusCode
	}()
	<-entered // the main loop is now stuck until release

	code, body := do(t, "GET", base+"/-/healthy")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "healthy")
	code, body = do(t, "GET", base+"/metrics")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "seismo_build_info{")
	select {
	case <-reloaded:
		t.Fatal("reload finished while its prepare was still blocked")
	default:
	}

	close(release)
	require.Equal(t, http.StatusOK, <-reloaded)
}

func TestReloadIsBuildThenSwap(t *testing.T) {
	good := testConfig()
	good.Log.Level = "debug"
	tests := []struct {
		name        string
		load        func() (*config.Config, error)
		failPrepare string // name of the reloader whose prepare fails
		wantErr     string
		wantCommits []string
		wantOK      float64
	}{
		{
			name:    "invalid config is rejected before any prepare",
			load:    func() (*config.Config, error) { return nil, errors.New("seismo.yml:3:1: bogus: unknown key") },
			wantErr: "bogus: unknown key",
			wantOK:  0,
		},
		{
			name:        "one failed prepare commits nothing",
			load:        func() (*config.Config, error) { return good, nil },
			failPrepare: "second",
			wantErr:     "second: cannot build",
			wantOK:      0,
		},
		{
			name:        "all prepared, all committed in order",
			load:        func() (*config.Config, error) { return good, nil },
			wantCommits: []string{"first", "second", "third"},
			wantOK:      1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := time.Unix(1_700_000_000, 0)
			a := newTestAgent(t, agentOptions{load: tt.load, now: func() time.Time { return clock }})
			defer a.web.Close()
			old := a.config()
			var commits []string
			for _, name := range []string{"first", "second", "third"} {
				a.addReloader(reloader{name: name, prepare: func(_ context.Context, cfg *config.Config) (func(), error) {
					require.Same(t, good, cfg, "prepare gets the new config")
					if name == tt.failPrepare {
						return nil, errors.New("cannot build")
					}
					return func() { commits = append(commits, name) }, nil
				}})
			}
			clock = clock.Add(time.Minute)

			err := a.reload(context.Background())
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				require.Same(t, old, a.config(), "the old config keeps running")
				require.Equal(t, float64(1_700_000_000), a.reloadSuccess.Get(), "timestamp of the last success is kept")
			} else {
				require.NoError(t, err)
				require.Same(t, good, a.config())
				require.Equal(t, float64(1_700_000_060), a.reloadSuccess.Get())
			}
			require.Equal(t, tt.wantCommits, commits)
			require.Equal(t, tt.wantOK, a.reloadOK.Get())
		})
	}
}

// TestReloadWaitsForAnEmptyConfigFile: a SIGHUP while an editor or a
// config manager rewrites the config in place finds the file truncated.
// The reload reads it again until it has keys, and refuses it if it
// stays empty (or holds comments only), keeping the running config:
// loaded as it was, it swapped every rule and receiver for the defaults.
func TestReloadWaitsForAnEmptyConfigFile(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/seismo.yml"
	full := "data_dir: state\nhttp: {listen_address: 127.0.0.1:0}\nlog: {level: debug}\n"
	var afterRead func() // the writer's next step, run after a read
	load := func() (*config.Config, error) {
		cfg, err := config.Load(config.LoadOptions{File: path})
		if afterRead != nil {
			afterRead()
			afterRead = nil
		}
		return cfg, err
	}
	a := newTestAgent(t, agentOptions{load: load})
	defer a.web.Close()
	running := a.config()

	for _, empty := range []string{"", "# being written\n"} {
		require.NoError(t, os.WriteFile(path, []byte(empty), 0o600))
		err := a.reload(context.Background())
		require.ErrorContains(t, err, "sets no key, where the running config set some")
		require.Same(t, running, a.config(), "the running config stays")
		require.Equal(t, 0.0, a.reloadOK.Get())
	}

	// Written between two reads: the reload takes the written file.
	require.NoError(t, os.WriteFile(path, nil, 0o600))
	afterRead = func() { require.NoError(t, os.WriteFile(path, []byte(full), 0o600)) }
	require.NoError(t, a.reload(context.Background()))
	require.Equal(t, "debug", a.config().Log.Level)
	require.False(t, a.config().FileEmpty)

	// A config that was empty from the start may be reloaded empty.
	require.NoError(t, os.WriteFile(path, nil, 0o600))
	e := newTestAgent(t, agentOptions{load: load})
	defer e.web.Close()
	first, err := load()
	require.NoError(t, err)
	require.True(t, first.FileEmpty)
	e.mu.Lock()
	e.cfg = first
	e.mu.Unlock()
	require.NoError(t, e.reload(context.Background()))
}

// TestReloadMetricRecovers checks that the metric goes 1 → 0 → 1 across a
// bad and a good reload, as seen on /metrics.
func TestReloadMetricRecovers(t *testing.T) {
	var bad bool
	var mu sync.Mutex
	a := newTestAgent(t, agentOptions{load: func() (*config.Config, error) {
		mu.Lock()
		defer mu.Unlock()
		if bad {
			return nil, errors.New("bad config")
		}
		return testConfig(), nil
	}})
	base := startAgent(t, a)
	metric := func() string {
		_, body := do(t, "GET", base+"/metrics")
		for line := range strings.Lines(body) {
			if strings.HasPrefix(line, "seismo_config_last_reload_successful ") {
				return strings.TrimSpace(line)
			}
		}
		return ""
	}
	require.Equal(t, "seismo_config_last_reload_successful 1", metric())
	mu.Lock()
	bad = true
	mu.Unlock()
	code, body := do(t, "POST", base+"/-/reload")
	require.Equal(t, http.StatusInternalServerError, code)
	require.Contains(t, body, "bad config")
	require.Equal(t, "seismo_config_last_reload_successful 0", metric())
	mu.Lock()
	bad = false
	mu.Unlock()
	code, _ = do(t, "POST", base+"/-/reload")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "seismo_config_last_reload_successful 1", metric())
}

func TestReadyWaitsForEveryService(t *testing.T) {
	rec := &recorder{ch: make(chan string, 16)}
	a := newTestAgent(t, agentOptions{notify: rec.notify})
	started := []chan struct{}{make(chan struct{}), make(chan struct{})}
	for i, ch := range started {
		a.addService(service{name: string(rune('a' + i)), started: ch, run: func(ctx context.Context) error {
			<-ctx.Done()
			return nil
		}})
	}
	base := startAgent(t, a)

	code, _ := do(t, "GET", base+"/-/ready")
	require.Equal(t, http.StatusServiceUnavailable, code, "no service has started")
	close(started[1])
	code, _ = do(t, "GET", base+"/-/healthy")
	require.Equal(t, http.StatusOK, code, "healthy does not wait for readiness")
	close(started[0])
	require.Equal(t, "READY=1", <-rec.ch)
	code, _ = do(t, "GET", base+"/-/ready")
	require.Equal(t, http.StatusOK, code)
}

func TestServiceFailureStopsAgent(t *testing.T) {
	a := newTestAgent(t, agentOptions{})
	a.addService(service{name: "collectors", run: func(context.Context) error {
		return errors.New("scrape loop broke")
	}})
	a.addService(service{name: "rules", run: func(ctx context.Context) error {
		<-ctx.Done()
		return ctx.Err() // returning the context's error counts as a clean stop
	}})
	err := a.run(context.Background())
	require.EqualError(t, err, "collectors: scrape loop broke")
}

// TestWatchdogPingsFromMainLoop runs the main loop in a synctest bubble:
// with WatchdogSec=10s it pings every 5s, and a loop stuck in a reload stops
// pinging (so systemd restarts a hung agent).
func TestWatchdogPingsFromMainLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		release := make(chan struct{})
		a := newTestAgent(t, agentOptions{notify: rec.notify, watchdog: 10 * time.Second})
		defer a.web.Close()
		a.addReloader(reloader{name: "stuck", prepare: func(context.Context, *config.Config) (func(), error) {
			<-release
			return nil, nil
		}})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- a.loop(ctx) }()

		time.Sleep(21 * time.Second)
		synctest.Wait()
		require.Equal(t, 4, rec.count("WATCHDOG=1"), "pings at 5s, 10s, 15s, 20s")
		require.Equal(t, 1, rec.count("READY=1"))

		a.hangup()
		time.Sleep(30 * time.Second)
		synctest.Wait()
		require.Equal(t, 4, rec.count("WATCHDOG=1"), "no pings while the loop is stuck")

		close(release)
		time.Sleep(5 * time.Second)
		synctest.Wait()
		require.Greater(t, rec.count("WATCHDOG=1"), 4, "pings resume")

		cancel()
		require.NoError(t, <-done)
	})
}

func TestReloadRequestAfterStopFailsAtOnce(t *testing.T) {
	a := newTestAgent(t, agentOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.NoError(t, a.run(ctx))
	err := a.requestReload(context.Background())
	require.ErrorIs(t, err, errAgentStopped)
}

// TestShutdownIsOrdered stops services one at a time in the order they were
// added, while /-/healthy still answers and /-/ready already says 503.
func TestShutdownIsOrdered(t *testing.T) {
	rec := &recorder{}
	a := newTestAgent(t, agentOptions{notify: rec.notify})
	var mu sync.Mutex
	var events []string
	event := func(e string) {
		mu.Lock()
		events = append(events, e)
		mu.Unlock()
	}
	draining := make(chan struct{})
	release := make(chan struct{})
	for _, name := range []string{"collectors", "rules", "notify"} {
		a.addService(service{name: name, run: func(ctx context.Context) error {
			<-ctx.Done()
			event(name + " stopping")
			if name == "rules" {
				close(draining)
				<-release
			}
			event(name + " stopped")
			return nil
		}})
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.run(ctx) }()
	base := "http://" + a.web.Addr().String()
	code, _ := do(t, "GET", base+"/-/healthy")
	require.Equal(t, http.StatusOK, code)

	cancel()
	<-draining // rules is draining; notify has not been asked to stop
	code, _ = do(t, "GET", base+"/-/healthy")
	require.Equal(t, http.StatusOK, code, "healthy answers during the drain")
	code, _ = do(t, "GET", base+"/-/ready")
	require.Equal(t, http.StatusServiceUnavailable, code, "not ready during the drain")
	close(release)

	require.NoError(t, <-done)
	require.Equal(t, []string{
		"collectors stopping", "collectors stopped",
		"rules stopping", "rules stopped",
		"notify stopping", "notify stopped",
	}, events)
	require.Equal(t, 1, rec.count("STOPPING=1"))
}

// TestFailedServiceStopsTheRestInOrder: a failing service ends the agent
// with its error, and the others are still stopped in order.
func TestFailedServiceStopsTheRestInOrder(t *testing.T) {
	a := newTestAgent(t, agentOptions{})
	var mu sync.Mutex
	var stopped []string
	for _, name := range []string{"a", "b", "c"} {
		a.addService(service{name: name, run: func(ctx context.Context) error {
			if name == "b" {
				return errors.New("broke")
			}
			<-ctx.Done()
			mu.Lock()
			stopped = append(stopped, name)
			mu.Unlock()
			return nil
		}})
	}
	require.EqualError(t, a.run(context.Background()), "b: broke")
	require.Equal(t, []string{"a", "c"}, stopped)
}

// TestConsolePoolFromConfig: http.console sizes the console's pool apart
// from the API's (as /metrics shows), and a reload that changes either
// warns that it needs a restart and leaves the pools as they are.
func TestConsolePoolFromConfig(t *testing.T) {
	cfg := testConfig()
	cfg.HTTP.MaxConcurrentRequests = 7
	cfg.HTTP.Console.MaxConcurrentRequests = 3
	next := testConfig()
	next.HTTP.MaxConcurrentRequests = 7
	next.HTTP.Console.MaxConcurrentRequests = 5
	var logs testlog.Buffer
	a, err := newAgent(cfg, agentOptions{logger: slog.New(slog.NewTextHandler(&logs, nil)),
		load: func() (*config.Config, error) { return next, nil }})
	require.NoError(t, err)
	a.addReloader(httpReloader(a))
	base := startAgent(t, a)

	pools := func() string {
		_, body := do(t, "GET", base+"/metrics")
		var lines []string
		for l := range strings.Lines(body) {
			if strings.HasPrefix(l, "seismo_http_max_concurrent_requests{") {
				lines = append(lines, strings.TrimSpace(l))
			}
		}
		return strings.Join(lines, "\n")
	}
	want := "seismo_http_max_concurrent_requests{pool=\"api\"} 7\nseismo_http_max_concurrent_requests{pool=\"console\"} 3"
	require.Equal(t, want, pools())

	code, body := do(t, "POST", base+"/-/reload")
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, logs.String(), "http.console (slots, queue or pace) changed; restart seismo to apply it")
	require.NotContains(t, logs.String(), `"http.max_concurrent_requests, max_queued_requests`, "the API's pool did not change")
	require.Equal(t, want, pools(), "a reload does not resize the pools")
}
