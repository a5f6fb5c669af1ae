package datasource

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/require"

	"github.com/seismo-agent/seismo/store"
)

const victoriaMetricsBin = "/usr/bin/victoria-metrics"

// startVictoriaMetrics runs the Debian victoria-metrics binary on a free
// loopback port with a temporary data directory and returns its URL.
// Samples are visible at once: no latency offset and no result cache.
func startVictoriaMetrics(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat(victoriaMetricsBin); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is required under CI: %v", victoriaMetricsBin, err)
		}
		t.Skipf("%s not installed", victoriaMetricsBin)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, victoriaMetricsBin, "-httpListenAddr="+addr, "-storageDataPath="+filepath.Join(dir, "vm"),
		"-retentionPeriod=100y", "-search.latencyOffset=0s", "-search.disableCache", "-loggerLevel=ERROR")
	out, err := os.Create(filepath.Join(dir, "vm.log"))
	require.NoError(t, err)
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		out.Close()
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(dir, "vm.log"))
			t.Logf("victoria-metrics log:\n%s", b)
		}
	})
	base := "http://" + addr
	require.Eventually(t, func() bool {
		resp, err := http.Get(base + "/health")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, time.Minute, 100*time.Millisecond, "victoria-metrics not ready")
	return base
}

type series struct {
	lset labels.Labels
	ts   []int64
	vs   []float64
}

// TestAgainstVictoriaMetrics writes the same samples into VictoriaMetrics
// (import API) and the embedded store, then compares answers through
// Remote and Local. Gauges and steady counters agree; where VictoriaMetrics'
// MetricsQL differs from PromQL on purpose, the test pins the difference
// that docs/deployment.md describes.
func TestAgainstVictoriaMetrics(t *testing.T) {
	vm := startVictoriaMetrics(t)
	end := time.Now().Add(-time.Minute).Truncate(15 * time.Second)
	const n = 40 // ten minutes at 15s
	var data []series
	add := func(lset labels.Labels, f func(i int) float64, upto int) {
		s := series{lset: lset}
		for i := range upto {
			s.ts = append(s.ts, end.Add(-time.Duration(n-1-i)*15*time.Second).UnixMilli())
			s.vs = append(s.vs, f(i))
		}
		data = append(data, s)
	}
	for _, inst := range []string{"a", "b"} {
		add(labels.FromStrings("__name__", "queue", "instance", inst), func(i int) float64 { return float64(i % 7) }, n)
		// A counter that grows by 15 per 15s scrape: 1/s.
		add(labels.FromStrings("__name__", "req_total", "instance", inst), func(i int) float64 { return float64(15 * i) }, n)
	}
	// A series that stopped four scrapes (60s) before the end.
	add(labels.FromStrings("__name__", "gone", "instance", "a"), func(int) float64 { return 1 }, n-4)

	st, err := store.New(store.Options{Config: store.DefaultConfig()})
	require.NoError(t, err)
	app := st.Appender()
	for _, s := range data {
		for i := range s.ts {
			_, err := app.Append(store.SeriesRef{}, s.lset, s.ts[i], s.vs[i])
			require.NoError(t, err)
		}
		line := map[string]any{"metric": s.lset.Map(), "values": s.vs, "timestamps": s.ts}
		b, err := json.Marshal(line)
		require.NoError(t, err)
		resp, err := http.Post(vm+"/api/v1/import", "application/json", bytes.NewReader(b))
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusNoContent, resp.StatusCode)
	}
	app.Commit()
	resp, err := http.Get(vm + "/internal/force_flush")
	require.NoError(t, err)
	resp.Body.Close()

	local, err := NewLocal(LocalOptions{Queryable: st})
	require.NoError(t, err)
	remote, err := NewRemote(RemoteConfig{Name: "vm", URL: vm, Timeout: 10 * time.Second})
	require.NoError(t, err)
	defer remote.Close()
	ctx := context.Background()
	require.Eventually(t, func() bool {
		v, err := remote.Instant(ctx, `count(req_total)`, end)
		return err == nil && len(v) == 1 && v[0].F == 2
	}, 30*time.Second, 100*time.Millisecond, "imported samples not searchable")

	same := []string{
		`queue`,
		`sum by (instance) (queue)`,
		`max_over_time(queue[5m])`,
		`avg_over_time(queue[2m])`,
		`sum(rate(req_total[1m]))`,
		`rate(req_total[5m])`,
	}
	for _, q := range same {
		t.Run(q, func(t *testing.T) {
			want, err := local.Instant(ctx, q, end)
			require.NoError(t, err)
			require.NotEmpty(t, want)
			got, err := remote.Instant(ctx, q, end)
			require.NoError(t, err)
			require.Len(t, got, len(want))
			for i := range want {
				require.Equal(t, want[i].Metric.DropMetricName().String(), got[i].Metric.DropMetricName().String())
				require.InDelta(t, want[i].F, got[i].F, 1e-9, "%s", want[i].Metric)
			}
		})
	}

	// Range queries (what warm start reads) agree on a gauge step by step.
	wantM, err := local.Range(ctx, `sum(queue)`, end.Add(-5*time.Minute), end, 15*time.Second)
	require.NoError(t, err)
	gotM, err := remote.Range(ctx, `sum(queue)`, end.Add(-5*time.Minute), end, 15*time.Second)
	require.NoError(t, err)
	require.Len(t, gotM, 1)
	require.Equal(t, len(wantM[0].Floats), len(gotM[0].Floats))
	for i := range wantM[0].Floats {
		require.Equal(t, wantM[0].Floats[i], gotM[0].Floats[i], "step %d", i)
	}

	// Differences. A rate window holding one sample: PromQL needs two
	// samples inside the window and returns nothing; MetricsQL also uses
	// the sample before the window and returns the rate.
	q := `rate(req_total{instance="a"}[20s])`
	lv, err := local.Instant(ctx, q, end.Add(5*time.Second))
	require.NoError(t, err)
	rv, err := remote.Instant(ctx, q, end.Add(5*time.Second))
	require.NoError(t, err)
	t.Logf("%s: local %v, victoria-metrics %v", q, lv, rv)
	require.Empty(t, lv, "PromQL: one sample in the window, no rate")
	require.Len(t, rv, 1, "MetricsQL: rate from the sample before the window")
	require.InDelta(t, 1, rv[0].F, 1e-9)

	// increase() over a window that is not a multiple of the scrape
	// interval: PromQL extrapolates the samples inside the window to its
	// edges; MetricsQL takes the last sample minus the last one before the
	// window, real samples only, here covering 60s of growth.
	q = `increase(req_total{instance="a"}[50s])`
	lv, err = local.Instant(ctx, q, end)
	require.NoError(t, err)
	rv, err = remote.Instant(ctx, q, end)
	require.NoError(t, err)
	t.Logf("%s: local %v, victoria-metrics %v", q, lv, rv)
	require.Len(t, lv, 1)
	require.Len(t, rv, 1)
	require.InDelta(t, 45*50/45.0, lv[0].F, 1e-9, "PromQL: 45 over the 45s the samples span, extrapolated to 50s")
	require.InDelta(t, 60, rv[0].F, 1e-9, "MetricsQL: last sample minus the one before the window")

	// A series whose samples stopped without a staleness marker (imported,
	// or a lost scrape) stays visible for the 5m lookback in both; series
	// that Prometheus, vmagent or seismo scrape end at once at their
	// staleness marker instead.
	for gap := 0 * time.Second; gap <= 6*time.Minute; gap += 30 * time.Second {
		at := time.UnixMilli(data[len(data)-1].ts[len(data[len(data)-1].ts)-1]).Add(gap)
		lv, err := local.Instant(ctx, `gone`, at)
		require.NoError(t, err)
		rv, err := remote.Instant(ctx, `gone`, at)
		require.NoError(t, err)
		require.Len(t, rv, len(lv), "gone %v after its last sample", gap)
		require.Equal(t, gap < 5*time.Minute, len(lv) == 1, "gone %v after its last sample", gap)
	}
}
