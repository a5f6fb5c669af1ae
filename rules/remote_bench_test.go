package rules

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/stretchr/testify/require"

	"github.com/seismo-agent/seismo/datasource"
	"github.com/seismo-agent/seismo/detect"
)

// startVictoriaMetrics runs the Debian victoria-metrics binary on a free
// loopback port with a temporary data directory and returns its URL; it
// skips when the binary is missing, except under CI=true. Samples are
// searchable at once (no latency offset, no cache).
func startVictoriaMetrics(b testing.TB) string {
	b.Helper()
	const bin = "/usr/bin/victoria-metrics"
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv("CI") == "true" {
			b.Fatalf("%s is required under CI=true: %v", bin, err)
		}
		b.Skipf("%s not installed", bin)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(b, err)
	addr := l.Addr().String()
	require.NoError(b, l.Close())
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "-httpListenAddr="+addr, "-storageDataPath="+filepath.Join(b.TempDir(), "vm"),
		"-retentionPeriod=100y", "-search.latencyOffset=0s", "-search.disableCache", "-loggerLevel=ERROR")
	require.NoError(b, cmd.Start())
	b.Cleanup(func() { cancel(); _ = cmd.Wait() })
	base := "http://" + addr
	require.Eventually(b, func() bool {
		resp, err := http.Get(base + "/health")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, time.Minute, 100*time.Millisecond)
	return base
}

// importSeries writes n series load{i="0".."n-1"} with points samples each,
// 15s apart and ending at end, through the JSON line import API.
func importSeries(b *testing.B, vm string, n, points int, end time.Time) {
	b.Helper()
	var buf bytes.Buffer
	ts := make([]int64, points)
	for j := range ts {
		ts[j] = end.Add(-time.Duration(points-1-j) * 15 * time.Second).UnixMilli()
	}
	for i := range n {
		vs := make([]float64, points)
		for j := range vs {
			vs[j] = float64((i+j)%7) + 10
		}
		line, err := json.Marshal(map[string]any{"metric": map[string]string{"__name__": "load", "i": fmt.Sprint(i)}, "values": vs, "timestamps": ts})
		require.NoError(b, err)
		buf.Write(line)
		buf.WriteByte('\n')
	}
	resp, err := http.Post(vm+"/api/v1/import", "application/json", &buf)
	require.NoError(b, err)
	resp.Body.Close()
	require.Equal(b, http.StatusNoContent, resp.StatusCode)
	resp, err = http.Get(vm + "/internal/force_flush")
	require.NoError(b, err)
	resp.Body.Close()
}

const benchRemoteRules = `groups:
  - name: g
    interval: 15s
    rules:
      - anomaly: Load
        expr: load
        detector: {type: mad}
`

// BenchmarkRemoteEval measures one evaluation of an anomaly rule whose
// query returns n series from a real VictoriaMetrics: the HTTP query, JSON
// decoding, and a detector and alert lifecycle per series. series/s is the
// throughput one group loop sustains.
func BenchmarkRemoteEval(b *testing.B) {
	vm := startVictoriaMetrics(b)
	end := time.Now().Truncate(15 * time.Second)
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("series=%d", n), func(b *testing.B) {
			importSeries(b, vm, n, 1, end)
			src, err := datasource.NewRemote(datasource.RemoteConfig{Name: "vm", URL: vm, Timeout: time.Minute})
			require.NoError(b, err)
			benchEvalLoop(b, src, n, end)
		})
	}
}

// benchEvalLoop loads benchRemoteRules on src, checks that one evaluation
// at at sees n series, and times repeated evaluations at at.
func benchEvalLoop(b *testing.B, src datasource.Source, n int, at time.Time) {
	m, err := NewManager(Options{Source: src})
	require.NoError(b, err)
	cfg := testConfig(writeRules(b, b.TempDir(), "r.yml", benchRemoteRules))
	cfg.WarmStart = 0
	require.NoError(b, m.ApplyConfig(cfg))
	ctx := context.Background()
	require.NoError(b, m.EvalGroups(ctx, at))
	require.Len(b, m.groups[0].rules[0].series, n)
	b.ReportAllocs()
	for b.Loop() {
		if err := m.EvalGroups(ctx, at); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "series/s")
}

// BenchmarkRemoteWarmStart measures a cold start of that rule over 1000
// series with an hour of history at 15s (240 samples each) in a real
// VictoriaMetrics: the range query and 240k detector updates.
func BenchmarkRemoteWarmStart(b *testing.B) {
	vm := startVictoriaMetrics(b)
	end := time.Now().Truncate(15 * time.Second)
	const n = 1000
	importSeries(b, vm, n, 241, end)
	src, err := datasource.NewRemote(datasource.RemoteConfig{Name: "vm", URL: vm, Timeout: time.Minute})
	require.NoError(b, err)
	f := writeRules(b, b.TempDir(), "r.yml", benchRemoteRules)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		m, err := NewManager(Options{Source: src})
		require.NoError(b, err)
		cfg := testConfig(f)
		cfg.EvaluationInterval = 15 * time.Second
		cfg.WarmStart = time.Hour
		require.NoError(b, m.ApplyConfig(cfg))
		require.NoError(b, m.EvalGroups(ctx, end.Add(15*time.Second)))
		warm := 0
		for _, ss := range m.groups[0].rules[0].series {
			if ss.last.State != detect.StateWarmingUp {
				warm++
			}
		}
		if warm != n {
			b.Fatalf("%d series warm, want %d", warm, n)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "series/s")
}

// BenchmarkRemoteEvalPrometheus is BenchmarkRemoteEval against a real
// Prometheus that scrapes the n series from a loopback target.
func BenchmarkRemoteEvalPrometheus(b *testing.B) {
	const bin = "/usr/bin/prometheus"
	if _, err := os.Stat(bin); err != nil {
		b.Skipf("%s not installed", bin)
	}
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("series=%d", n), func(b *testing.B) {
			var page bytes.Buffer
			page.WriteString("# TYPE load gauge\n")
			for i := range n {
				fmt.Fprintf(&page, "load{i=\"%d\"} %d\n", i, i%7+10)
			}
			target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(page.Bytes()) }))
			defer target.Close()
			l, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(b, err)
			addr := l.Addr().String()
			require.NoError(b, l.Close())
			dir := b.TempDir()
			cfg := fmt.Sprintf("global: {scrape_interval: 1s}\nscrape_configs: [{job_name: t, static_configs: [{targets: [%q]}]}]\n", strings.TrimPrefix(target.URL, "http://"))
			require.NoError(b, os.WriteFile(filepath.Join(dir, "p.yml"), []byte(cfg), 0o600))
			ctx, cancel := context.WithCancel(context.Background())
			cmd := exec.CommandContext(ctx, bin, "--web.listen-address="+addr, "--storage.tsdb.path="+filepath.Join(dir, "data"),
				"--config.file="+filepath.Join(dir, "p.yml"), "--log.level=error")
			require.NoError(b, cmd.Start())
			defer func() { cancel(); _ = cmd.Wait() }()
			src, err := datasource.NewRemote(datasource.RemoteConfig{Name: "prom", URL: "http://" + addr, Timeout: time.Minute})
			require.NoError(b, err)
			require.Eventually(b, func() bool {
				v, err := src.Instant(context.Background(), "count(load)", time.Now())
				return err == nil && len(v) == 1 && int(v[0].F) == n
			}, time.Minute, 200*time.Millisecond)
			benchEvalLoop(b, src, n, time.Now())
		})
	}
}

// BenchmarkHeapPerSeries reports the heap the rules engine keeps per
// series of an anomaly rule (detector, labels, recent values) after 40
// evaluations of 10k series: what a replica or shard must hold.
func BenchmarkHeapPerSeries(b *testing.B) {
	for _, typ := range []string{"mad", "auto"} {
		b.Run(typ, func(b *testing.B) {
			const n = 10000
			vec := make(promql.Vector, n)
			for i := range vec {
				vec[i] = promql.Sample{Metric: labels.FromStrings("__name__", "load", "i", fmt.Sprint(i)), F: float64(i % 7)}
			}
			src := &fakeSource{instant: func(string, time.Time) (promql.Vector, error) { return vec, nil }}
			f := writeRules(b, b.TempDir(), "r.yml", "groups: [{name: g, rules: [{anomaly: L, expr: load, detector: {type: "+typ+"}}]}]")
			var perSeries float64
			for b.Loop() {
				var ms runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&ms)
				before := ms.HeapAlloc
				m, err := NewManager(Options{Source: src})
				require.NoError(b, err)
				cfg := testConfig(f)
				cfg.WarmStart = 0
				require.NoError(b, m.ApplyConfig(cfg))
				for i := range 40 {
					require.NoError(b, m.EvalGroups(context.Background(), t0.Add(time.Duration(i)*15*time.Second)))
				}
				runtime.GC()
				runtime.ReadMemStats(&ms)
				perSeries = float64(int64(ms.HeapAlloc)-int64(before)) / n
				runtime.KeepAlive(m)
			}
			b.ReportMetric(perSeries, "B/series")
		})
	}
}
