package collectors

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/seismo-agent/seismo/datasource"
	"github.com/stretchr/testify/require"
)

// TestEndToEndScrapeToPromQL scrapes a real client_golang exposition (gzip,
// content negotiation) five times at explicit 15s steps and evaluates
// rate() and histogram_quantile() over the stored samples through
// Prometheus' engine.
func TestEndToEndScrapeToPromQL(t *testing.T) {
	reg := prometheus.NewRegistry()
	reqs := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "http_requests_total", Help: "Requests."}, []string{"code"})
	lat := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "http_request_duration_seconds", Help: "Latency.", Buckets: []float64{0.1, 0.5, 1}})
	reg.MustRegister(reqs, lat)
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{EnableOpenMetrics: true}))
	defer srv.Close()

	st := newTestStore(t)
	tgt, err := NewScrapeTarget(ScrapeConfig{JobName: "web"}, hostPort(t, srv.URL), st, nil)
	require.NoError(t, err)
	ctx := context.Background()
	t0 := time.Unix(1_700_000_000, 0)
	for i := range 5 {
		if i > 0 {
			// 15s of traffic: 1/s of 200s, 0.1/s of 500s; latencies 1/s
			// under 0.1s, 2/s in (0.1, 0.5], 1/s in (0.5, 1].
			reqs.WithLabelValues("200").Add(15)
			reqs.WithLabelValues("500").Add(1.5)
			for range 15 {
				lat.Observe(0.05)
				lat.Observe(0.3)
				lat.Observe(0.3)
				lat.Observe(0.7)
			}
		}
		require.NoError(t, tgt.Collect(ctx, t0.Add(time.Duration(i)*15*time.Second)))
	}

	l, err := datasource.NewLocal(datasource.LocalOptions{Queryable: st})
	require.NoError(t, err)
	at := t0.Add(time.Minute)
	tests := []struct {
		q    string
		want map[string]float64
	}{
		{`sum by (code) (rate(http_requests_total[1m]))`, map[string]float64{`{code="200"}`: 1, `{code="500"}`: 0.1}},
		{`histogram_quantile(0.5, sum by (le) (rate(http_request_duration_seconds_bucket[1m])))`, map[string]float64{`{}`: 0.3}},
		{`histogram_quantile(0.9, rate(http_request_duration_seconds_bucket{job="web"}[1m]))`, map[string]float64{`{instance="` + hostPort(t, srv.URL) + `", job="web"}`: 0.8}},
		{`rate(http_request_duration_seconds_sum[1m]) / rate(http_request_duration_seconds_count[1m])`, map[string]float64{`{instance="` + hostPort(t, srv.URL) + `", job="web"}`: (0.05 + 0.6 + 0.7) / 4}},
		{`up`, map[string]float64{`{__name__="up", instance="` + hostPort(t, srv.URL) + `", job="web"}`: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.q, func(t *testing.T) {
			v, err := l.Instant(ctx, tc.q, at)
			require.NoError(t, err)
			got := map[string]float64{}
			for _, s := range v {
				got[s.Metric.String()] = s.F
			}
			require.Len(t, got, len(tc.want), "got %v", got)
			for k, w := range tc.want {
				require.Contains(t, got, k)
				require.InDelta(t, w, got[k], 1e-9)
			}
		})
	}
}
