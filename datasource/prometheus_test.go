package datasource

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/seismo-agent/seismo/collectors"
	"github.com/seismo-agent/seismo/store"
	"github.com/stretchr/testify/require"
)

const prometheusBin = "/usr/bin/prometheus"

// TestAgainstRealPrometheus starts the Debian prometheus binary on a free
// loopback port scraping itself, scrapes its /metrics with seismo's scraper
// into the store (same job and instance labels), and checks that stable
// expressions give the same answer through Local and through Remote
// against that server.
func TestAgainstRealPrometheus(t *testing.T) {
	if _, err := os.Stat(prometheusBin); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is required under CI: %v", prometheusBin, err)
		}
		t.Skipf("%s not installed", prometheusBin)
	}
	dir := t.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	cfg := fmt.Sprintf("global:\n  scrape_interval: 1s\n  evaluation_interval: 1m\nscrape_configs:\n  - job_name: prometheus\n    static_configs:\n      - targets: [%q]\n", addr)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "p.yml"), []byte(cfg), 0o600))

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, prometheusBin,
		"--web.listen-address="+addr,
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--config.file="+filepath.Join(dir, "p.yml"),
		"--log.level=warn")
	out, err := os.Create(filepath.Join(dir, "prometheus.log"))
	require.NoError(t, err)
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	defer func() {
		cancel()
		_ = cmd.Wait()
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(dir, "prometheus.log"))
			t.Logf("prometheus log:\n%s", b)
		}
	}()

	remote, err := NewRemote(RemoteConfig{Name: "prometheus", URL: "http://" + addr, Timeout: 10 * time.Second})
	require.NoError(t, err)
	defer remote.Close()
	// Wait until Prometheus has scraped itself: poll on a ticker, bounded by
	// ctx (an external process has no event to wait on).
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		v, err := remote.Instant(ctx, `up{job="prometheus"}`, time.Now())
		if err == nil && len(v) == 1 && v[0].F == 1 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("prometheus never scraped itself: %v", err)
		case <-tick.C:
		}
	}

	st, err := store.New(store.Options{Config: store.DefaultConfig()})
	require.NoError(t, err)
	tgt, err := collectors.NewScrapeTarget(collectors.ScrapeConfig{JobName: "prometheus"}, addr, st, nil)
	require.NoError(t, err)
	ts := time.Now().Truncate(time.Millisecond)
	require.NoError(t, tgt.Collect(ctx, ts))
	local, err := NewLocal(LocalOptions{Queryable: st, Types: st.MetricTypes})
	require.NoError(t, err)

	// The metric types: Prometheus' /api/v1/metadata, and what the
	// store's scrape of the same /metrics found in its # TYPE lines.
	t.Run("metric types", func(t *testing.T) {
		for name, typer := range map[string]Typer{"remote": remote, "local": local} {
			types, err := typer.MetricTypes(ctx)
			require.NoError(t, err, name)
			require.Equal(t, "gauge", types["go_goroutines"], name)
			require.Equal(t, "histogram", types["prometheus_http_request_duration_seconds"], name)
			require.Equal(t, "summary", types["go_gc_duration_seconds"], name)
			// Keyed by its family with or without _total: OpenMetrics
			// names a counter's family without it.
			require.Contains(t, []string{types["prometheus_http_requests_total"], types["prometheus_http_requests"]}, "counter", name)
		}
	})

	for _, q := range []string{
		`up{job="prometheus"}`,
		`max by (job, instance, version, revision, branch, goversion) (prometheus_build_info)`,
		`prometheus_config_last_reload_successful`,
		// Not by quantile or le: seismo parses with Prometheus 3's textparse,
		// which normalises quantile="0" to "0.0" as Prometheus 3 stores it;
		// the Debian peer is Prometheus 2.42, which keeps "0".
		`count by (job) (go_gc_duration_seconds)`,
		`count(prometheus_engine_query_duration_seconds{slice="inner_eval"}) by (quantile)`,
	} {
		t.Run(q, func(t *testing.T) {
			want, err := local.Instant(ctx, q, ts)
			require.NoError(t, err)
			require.NotEmpty(t, want, "the expression must select something")
			got, err := remote.Instant(ctx, q, ts)
			require.NoError(t, err)
			require.Equal(t, want.String(), got.String())
		})
	}
}
