package rules

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seismo-agent/seismo/detect"
	"github.com/seismo-agent/seismo/internal/testlog"
)

// TestRawCounter: a counter's value judged as it is is found; the same
// counter under rate(), increase() and the other functions that use it as
// one is not, nor a gauge.
func TestRawCounter(t *testing.T) {
	for expr, want := range map[string]string{
		`http_requests_total`:                                              "http_requests_total",
		`sum by (code) (http_requests_total{job="shop"})`:                  "http_requests_total",
		`http_requests_total > 100`:                                        "http_requests_total",
		`sum(rate(a_total[1m])) / sum(b_total)`:                            "b_total",
		`histogram_quantile(0.99, sum by (le) (latency_seconds_bucket))`:   "latency_seconds_bucket",
		`last_over_time(a_total[5m])`:                                      "a_total",
		`rate(http_requests_total[1m])`:                                    "",
		`histogram_quantile(0.99, sum by (le) (rate(latency_bucket[5m])))`: "",
		`increase(a_total[1h]) > 0`:                                        "",
		`max_over_time(rate(a_total[1m])[1h:1m])`:                          "",
		`absent(a_total)`:                                                  "",
		`count by (job) (a_total)`:                                         "",
		`time() - timestamp(a_total) > 300`:                                "",
		`queue_length`:                                                     "",
		`pg_stat_activity_count`:                                           "",
		`rate(a_sum[5m]) / rate(a_count[5m])`:                              "",
	} {
		e, err := promqlParser.ParseExpr(expr)
		require.NoError(t, err, expr)
		require.Equal(t, want, rawCounter(e, func(n string) bool { return counterNamed(n, nil) }), expr)
	}
}

// TestRawCounterTyped: with the datasource's metadata, a series is a
// counter by its type or its family's, whatever its name; by its name
// where the metadata does not know it.
func TestRawCounterTyped(t *testing.T) {
	types := map[string]string{
		"requests_served":        "counter",   // a counter named against convention
		"pool_connections_total": "gauge",     // a gauge that ends in _total
		"om_requests":            "counter",   // OpenMetrics: the family without _total
		"latency_seconds":        "histogram", // its _bucket, _count and _sum
		"rpc_seconds":            "summary",   // its _count and _sum, not its quantiles
		"queue_length":           "gauge",
	}
	typeOf := func(n string) string { return types[n] }
	for expr, want := range map[string]string{
		`sum(requests_served)`:                        "requests_served",
		`sum(rate(requests_served[1m]))`:              "",
		`pool_connections_total`:                      "",
		`om_requests_total`:                           "om_requests_total",
		`sum by (le) (latency_seconds_bucket)`:        "latency_seconds_bucket",
		`latency_seconds_sum / latency_seconds_count`: "latency_seconds_sum",
		`rpc_seconds_count`:                           "rpc_seconds_count",
		`rpc_seconds{quantile="0.99"}`:                "",
		`queue_length`:                                "",
		`unknown_total`:                               "unknown_total", // by its name
		`unknown_gauge`:                               "",
	} {
		e, err := promqlParser.ParseExpr(expr)
		require.NoError(t, err, expr)
		require.Equal(t, want, rawCounter(e, func(n string) bool { return counterNamed(n, typeOf) }), expr)
	}
}

// TestThresholdOp: a comparison with a number at the top of an expr is
// a threshold; one between two series, or inside, is not.
func TestThresholdOp(t *testing.T) {
	for expr, want := range map[string]string{
		`rate(x[1m]) > 5`:          ">",
		`(rate(x[1m]) < bool 0.5)`: "<",
		`-1 >= queue_length`:       ">=",
		`rate(x[1m])`:              "",
		`a > b`:                    "",
		`sum(rate(x[1m]) > 5)`:     "",
		`rate(x[1m]) * 5`:          "",
		`queue_length != (-(1))`:   "!=",
	} {
		e, err := promqlParser.ParseExpr(expr)
		require.NoError(t, err, expr)
		require.Equal(t, want, thresholdOp(e), expr)
	}
}

// TestLint: an alerting and an anomaly rule on a raw counter are named
// with the position of their expr, and a composite detector's signal on
// one with the signal's; a threshold in an anomaly rule is named; a
// recording rule and a rule on the counter's rate are not, and the
// built-in pack has nothing to warn of.
func TestLint(t *testing.T) {
	groups, err := Parse(ParseOptions{Lookup: detect.Lookup, Kinds: detect.Kinds}, "r.yml", []byte(`groups:
  - name: g
    rules:
      - record: job:requests:sum
        expr: sum(http_requests_total)
      - anomaly: Requests
        expr: sum(http_requests_total)
        detector: {type: auto}
      - anomaly: RequestRate
        expr: sum(rate(http_requests_total[1m]))
        detector: {type: auto}
      - alert: TooMany
        expr: http_requests_total > 1e6
      - anomaly: Errors
        expr: sum(rate(http_requests_total{code=~"5.."}[1m])) > 0.5
        detector: {type: auto}
      - anomaly: Surge
        detector:
          type: surge
          requests: sum(http_requests_total)
          queue: sum(queue_length)
`))
	require.NoError(t, err)
	var got []string
	for _, w := range Lint(groups) {
		got = append(got, w.Error())
	}
	const tail = ` is a counter, judged without rate(), irate() or increase(): its value only grows and falls to 0 at a restart; rate(http_requests_total[1m]) is what moves with the service`
	require.Equal(t, []string{
		`r.yml:7:15: group "g", rule 2 "Requests": expr: http_requests_total` + tail,
		`r.yml:13:15: group "g", rule 4 "TooMany": expr: http_requests_total` + tail,
		`r.yml:15:15: group "g", rule 5 "Errors": expr: a comparison (>) with a number: an anomaly rule judges the values themselves, ` +
			`and the comparison hides those on its other side, which the detector then takes for missing samples; leave the threshold out, or make it an alert rule`,
		`r.yml:20:21: group "g", rule 6 "Surge": detector.requests: http_requests_total` + tail,
	}, got)

	cfg := DefaultBuiltinConfig()
	builtin, err := cfg.Groups(ParseOptions{Lookup: detect.Lookup, Kinds: detect.Kinds})
	require.NoError(t, err)
	require.NotEmpty(t, builtin)
	require.Empty(t, Lint(builtin))
}

// TestLintLoggedOnLoad: the agent logs each warning when it loads the
// rules, and runs them all the same.
func TestLintLoggedOnLoad(t *testing.T) {
	var log bytes.Buffer
	m, err := NewManager(Options{Source: &fakeSource{}, Lookup: detect.Lookup, Kinds: detect.Kinds, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close() })
	require.NoError(t, m.ApplyConfig(testConfig(writeRules(t, t.TempDir(), "r.yml", `groups:
  - name: g
    rules:
      - anomaly: Requests
        expr: http_requests_total
        detector: {type: auto}
`))))
	require.Contains(t, log.String(), `level=WARN msg="rule most likely wrong"`)
	require.Contains(t, log.String(), `rule 1 \"Requests\": expr: http_requests_total is a counter`)
	require.Len(t, m.Groups(), 1)
}

// typedSource is a fakeSource that knows its metrics' types, or fails
// to tell them; the first calls, empty, answer none (a store before its
// first scrape).
type typedSource struct {
	fakeSource
	types map[string]string
	err   error
	empty atomic.Int32
}

func (s *typedSource) MetricTypes(context.Context) (map[string]string, error) {
	if s.empty.Add(-1) >= 0 {
		return map[string]string{}, nil
	}
	return s.types, s.err
}

// TestLintTypedOnLoad: where the datasource knows the metrics' types,
// the agent's warnings tell counters by them (a counter named against
// convention is warned of, a gauge that ends in _total is not); where
// it fails to answer, by their names, and it says so.
func TestLintTypedOnLoad(t *testing.T) {
	const rulesFile = `groups:
  - name: g
    rules:
      - anomaly: Served
        expr: sum(requests_served)
        detector: {type: auto}
      - anomaly: Pool
        expr: pool_connections_total
        detector: {type: auto}
`
	for _, tc := range []struct {
		name       string
		src        *typedSource
		warned     []string
		notWarned  []string
		typesKnown bool
	}{
		{"types", &typedSource{types: map[string]string{"requests_served": "counter", "pool_connections_total": "gauge"}},
			[]string{`rule 1 \"Served\": expr: requests_served is a counter`}, []string{"pool_connections_total is a counter"}, true},
		{"no answer", &typedSource{err: errors.New("metadata: 503")},
			[]string{`rule 2 \"Pool\": expr: pool_connections_total is a counter`}, []string{"requests_served is a counter"}, false},
		{"types after the first scrape", &typedSource{types: map[string]string{"requests_served": "counter", "pool_connections_total": "gauge"}},
			[]string{`rule 1 \"Served\": expr: requests_served is a counter`}, []string{"pool_connections_total is a counter"}, true},
	} {
		if tc.name == "types after the first scrape" {
			tc.src.empty.Store(1)
		}
		t.Run(tc.name, func(t *testing.T) {
			var log testlog.Buffer
			m, err := NewManager(Options{Source: tc.src, Lookup: detect.Lookup, Kinds: detect.Kinds, Logger: slog.New(slog.NewTextHandler(&log, nil))})
			require.NoError(t, err)
			require.NoError(t, m.ApplyConfig(testConfig(writeRules(t, t.TempDir(), "r.yml", rulesFile))))
			require.Eventually(t, func() bool { return strings.Contains(log.String(), "most likely wrong") }, 5*time.Second, 10*time.Millisecond)
			require.NoError(t, m.Close()) // waits for the lint
			for _, w := range tc.warned {
				require.Contains(t, log.String(), w)
			}
			for _, w := range tc.notWarned {
				require.NotContains(t, log.String(), w)
			}
			if !tc.typesKnown {
				require.Contains(t, log.String(), `msg="metric types unknown, counters told by their names"`)
				require.Contains(t, log.String(), "metadata: 503")
			}
		})
	}
}
