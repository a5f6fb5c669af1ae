package collectors

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// fixtureConfig collects host and cgroup data from the v2 fixtures only.
func fixtureConfig(interval time.Duration) Config {
	cfg := DefaultConfig()
	cfg.ProcPath, cfg.SysPath = "testdata/v2/proc", "testdata/v2/sys"
	cfg.ScrapeInterval, cfg.ScrapeTimeout = interval, interval
	return cfg
}

func upTimes(t *testing.T, all map[string][]point, job string) []int64 {
	t.Helper()
	for k, ps := range all {
		if strings.Contains(k, `__name__="up"`) && strings.Contains(k, `job="`+job+`"`) {
			var ts []int64
			for _, p := range ps {
				ts = append(ts, p.t)
			}
			return ts
		}
	}
	return nil
}

func TestSchedulerIntervalsOffsetsAndReload(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now() // synctest's epoch, aligned to the second
		st := newTestStore(t)
		set := metrics.NewSet()
		s, err := New(Options{Config: fixtureConfig(10 * time.Second), Store: st, Metrics: set})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- s.Run(ctx) }()

		time.Sleep(35 * time.Second)
		synctest.Wait()
		all := series(t, st, name("up"))
		node, cg := upTimes(t, all, "node"), upTimes(t, all, "cgroup")
		require.Len(t, node, 3+boolInt(offsetOf(t, node, start) < 5*time.Second))
		require.Len(t, cg, 3+boolInt(offsetOf(t, cg, start) < 5*time.Second))
		for i := 1; i < len(node); i++ {
			require.Equal(t, int64(10_000), node[i]-node[i-1], "node ticks every interval")
		}
		// The offset is a pure function of job and target: a second scheduler
		// would pick the same phase.
		l := (&job{spec: jobSpecs(fixtureConfig(10 * time.Second))[0], s: s}).newLoop(`{instance="localhost", job="node"}`, labels.FromStrings("instance", "localhost", "job", "node"))
		require.Equal(t, l.offset, offsetOf(t, node, start))
		require.Contains(t, metricText(set), `seismo_collector_success{job="node",instance="localhost"} 1`)

		// Reload: cgroup job unchanged, host job removed, host re-added under
		// a new name.
		cfg := fixtureConfig(10 * time.Second)
		cfg.Host.JobName = "host"
		before := len(upTimes(t, series(t, st, name("up")), "cgroup"))
		require.NoError(t, s.ApplyConfig(cfg))
		synctest.Wait()
		all = series(t, st, name("up"))
		nodeUp := all[`{__name__="up", instance="localhost", job="node"}`]
		require.True(t, value.IsStaleNaN(nodeUp[len(nodeUp)-1].v), "a removed job's series are marked stale")
		require.NotContains(t, metricText(set), `job="node"`, "a removed job's metrics are deleted")

		time.Sleep(20 * time.Second)
		synctest.Wait()
		all = series(t, st, name("up"))
		cgAfter := upTimes(t, all, "cgroup")
		require.Equal(t, before+2, len(cgAfter), "the unchanged job kept its schedule")
		require.NotEmpty(t, upTimes(t, all, "host"))
		for _, p := range all[`{__name__="up", instance="localhost", job="cgroup"}`] {
			require.Equal(t, 1.0, p.v, "no staleness marker for an unchanged job")
		}

		// A bad config changes nothing.
		bad := cfg
		bad.ScrapeInterval = 0
		require.Error(t, s.ApplyConfig(bad))

		cancel()
		require.NoError(t, <-done)
		all = series(t, st, name("up"))
		for k, ps := range all {
			if strings.Contains(k, `job="node"`) {
				continue
			}
			require.True(t, value.IsStaleNaN(ps[len(ps)-1].v), "%s is stale after shutdown", k)
		}
	})
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func offsetOf(t *testing.T, ts []int64, start time.Time) time.Duration {
	t.Helper()
	require.NotEmpty(t, ts)
	return time.Duration(ts[0]-start.UnixMilli()) * time.Millisecond % (10 * time.Second)
}

func TestSchedulerCollectorTimeout(t *testing.T) {
	// A collector that blocks past the timeout gets up 0 and the timeout
	// reason, on fake time.
	synctest.Test(t, func(t *testing.T) {
		st := newTestStore(t)
		set := metrics.NewSet()
		cfg := DefaultConfig()
		cfg.Host.Enabled, cfg.Cgroup.Enabled = false, false
		s, err := New(Options{Config: cfg, Store: st, Metrics: set})
		require.NoError(t, err)
		j := &job{spec: jobSpec{name: "slow", kind: "custom", interval: 10 * time.Second, timeout: time.Second}, s: s, loops: map[string]*loop{}}
		j.m = newJobMetrics(set, "slow")
		ls := labels.FromStrings("instance", "x", "job", "slow")
		l := j.newLoop(ls.String(), ls)
		l.runner = &collectorRunner{target: ls, c: CollectorFunc(func(ctx context.Context, _ time.Time) ([]Sample, error) {
			<-ctx.Done()
			return nil, failf(ReasonTimeout, "%v", ctx.Err())
		})}
		ctx, cancel := context.WithCancel(t.Context())
		l.start(ctx)
		time.Sleep(25 * time.Second)
		synctest.Wait()
		require.Equal(t, 0.0, lastValue(t, st, name("up")))
		require.Contains(t, metricText(set), `seismo_collector_errors_total{job="slow",reason="timeout"} 2`)
		cancel()
		l.stop()
	})
}

// TestSchedulerFileSDTargets runs a scrape job on real time whose targets
// come from a file_sd file: replacing the file moves the job to the new
// target and marks the old target's series stale.
func TestSchedulerFileSDTargets(t *testing.T) {
	hits := make(chan string, 100)
	serve := func(name string) *httptest.Server {
		return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case hits <- name + " " + r.URL.Path:
			default:
			}
			w.Write([]byte("m 1\n"))
		}))
	}
	a, b := serve("a"), serve("b")
	defer a.Close()
	defer b.Close()
	dir := t.TempDir()
	writeTargets := func(target, path string) {
		tmp := filepath.Join(dir, "t.tmp")
		require.NoError(t, os.WriteFile(tmp, []byte(`[{"targets": ["`+target+`"], "labels": {"team": "x", "__metrics_path__": "`+path+`", "__meta_dc": "eu"}}]`), 0o600))
		require.NoError(t, os.Rename(tmp, filepath.Join(dir, "targets.json")))
	}
	writeTargets(hostPort(t, a.URL), "/metrics")

	cfg := DefaultConfig()
	cfg.Host.Enabled, cfg.Cgroup.Enabled = false, false
	cfg.ScrapeInterval, cfg.ScrapeTimeout = time.Second, time.Second
	cfg.ScrapeConfigs = []ScrapeConfig{{JobName: "app", FileSDConfigs: []FileSDConfig{{Files: []string{filepath.Join(dir, "*.json")}, RefreshInterval: time.Hour}}}}
	require.NoError(t, cfg.Resolve(""))
	st := newTestStore(t)
	s, err := New(Options{Config: cfg, Store: st})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.Run(ctx) }()
	wait := func(name string) {
		t.Helper()
		for {
			select {
			case got := <-hits:
				if got == name {
					return
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("target %s was never scraped", name)
			}
		}
	}
	wait("a /metrics")
	wait("a /metrics")                          // a second request proves the first scrape was committed
	writeTargets(hostPort(t, b.URL), "/custom") // __metrics_path__ as in Prometheus
	wait("b /custom")
	// The old target's loop had finished (stale markers included) before
	// the new one started.
	ps := series(t, st, name("m"), labels.MustNewMatcher(labels.MatchEqual, "instance", hostPort(t, a.URL)))
	require.Len(t, ps, 1)
	for k, v := range ps {
		require.Contains(t, k, `team="x"`)
		require.NotContains(t, k, "__metrics_path__")
		require.NotContains(t, k, "__meta_dc")
		require.True(t, value.IsStaleNaN(v[len(v)-1].v))
	}
	cancel()
	require.NoError(t, <-done)
}
