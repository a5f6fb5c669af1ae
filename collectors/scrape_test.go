package collectors

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/pem"
	"io"
	"log"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/seismo-agent/seismo/internal/httpconf"
	"github.com/seismo-agent/seismo/store"
	"github.com/stretchr/testify/require"
)

type point struct {
	t int64
	v float64
}

func newTestStore(t testing.TB) *store.Store {
	t.Helper()
	st, err := store.New(store.Options{Config: store.DefaultConfig()})
	require.NoError(t, err)
	return st
}

// series returns every stored series matching the selector-ish matchers,
// keyed by their label string.
func series(t testing.TB, st *store.Store, ms ...*labels.Matcher) map[string][]point {
	t.Helper()
	q, err := st.Querier(math.MinInt64, math.MaxInt64)
	require.NoError(t, err)
	defer q.Close()
	out := map[string][]point{}
	ss := q.Select(context.Background(), true, nil, ms...)
	for ss.Next() {
		it := ss.At().Iterator(nil)
		var ps []point
		for it.Next() == chunkenc.ValFloat {
			ts, v := it.At()
			ps = append(ps, point{ts, v})
		}
		out[ss.At().Labels().String()] = ps
	}
	return out
}

func name(n string) *labels.Matcher { return labels.MustNewMatcher(labels.MatchEqual, "__name__", n) }

func lastValue(t testing.TB, st *store.Store, ms ...*labels.Matcher) float64 {
	t.Helper()
	got := series(t, st, ms...)
	require.Len(t, got, 1, "series %v", ms)
	for _, ps := range got {
		return ps[len(ps)-1].v
	}
	return 0
}

func metricText(set *metrics.Set) string {
	var b bytes.Buffer
	set.WritePrometheus(&b)
	return b.String()
}

func hostPort(t testing.TB, srvURL string) string {
	u, err := url.Parse(srvURL)
	require.NoError(t, err)
	return u.Host
}

func protoBody(t testing.TB) []byte {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "requests_total", Help: "h"}, []string{"code"})
	c.WithLabelValues("200").Add(7)
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	require.NoError(t, err)
	var b bytes.Buffer
	enc := expfmt.NewEncoder(&b, expfmt.NewFormat(expfmt.TypeProtoDelim))
	for _, mf := range mfs {
		require.NoError(t, enc.Encode(mf))
	}
	return b.Bytes()
}

func TestScrapeFormatsAndFailures(t *testing.T) {
	proto := protoBody(t)
	reg := prometheus.NewRegistry()
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "requests_total", Help: "h", ConstLabels: prometheus.Labels{"code": "200"}})
	g.Set(7)
	reg.MustRegister(g)
	gzipHandler := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})

	body := func(ct, b string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if ct != "" {
				w.Header().Set("Content-Type", ct)
			} else {
				w.Header()["Content-Type"] = nil
			}
			w.Write([]byte(b))
		}
	}
	const text = "# TYPE requests_total counter\nrequests_total{code=\"200\"} 7\n"
	tests := []struct {
		name    string
		handler http.Handler
		tweak   func(*ScrapeConfig)
		up      float64
		reason  string  // counted error reason when up is 0
		value   float64 // of requests_total{code="200"} when up is 1
		dropped string  // a drop reason expected to be 1
	}{
		{name: "text 0.0.4", handler: body("text/plain; version=0.0.4", text), up: 1, value: 7},
		{name: "openmetrics", handler: body("application/openmetrics-text; version=1.0.0", "# TYPE requests counter\nrequests_total{code=\"200\"} 7\n# EOF\n"), up: 1, value: 7},
		{name: "protobuf", handler: body("application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited", string(proto)), up: 1, value: 7},
		{name: "gzip from client_golang", handler: gzipHandler, up: 1, value: 7},
		{name: "blank content type parsed as text", handler: body("", text), up: 1, value: 7},
		{name: "NaN and Inf values", handler: body("text/plain", "requests_total{code=\"200\"} 7\nx NaN\ny +Inf\n"), up: 1, value: 7},
		{name: "duplicate series keeps the first", handler: body("text/plain", text+"requests_total{code=\"200\"} 9\n"), up: 1, value: 7, dropped: DropDuplicate},
		{name: "http 500", handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(500) }), reason: ReasonHTTPStatus},
		{name: "timeout", handler: http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }), tweak: func(sc *ScrapeConfig) { sc.ScrapeTimeout = 50 * time.Millisecond }, reason: ReasonTimeout},
		{name: "body size limit", handler: body("text/plain", text+strings.Repeat("# padding\n", 100)), tweak: func(sc *ScrapeConfig) { sc.BodySizeLimit = 200 }, reason: ReasonBodySizeLimit},
		{name: "sample limit", handler: body("text/plain", text+"a 1\nb 2\n"), tweak: func(sc *ScrapeConfig) { sc.SampleLimit = 2 }, reason: ReasonSampleLimit},
		{name: "label limit", handler: body("text/plain", "requests_total{code=\"200\",path=\"/\"} 7\n"), tweak: func(sc *ScrapeConfig) { sc.LabelLimit = 4 }, reason: ReasonLabelLimit},
		{name: "truncated", handler: body("text/plain", "requests_total{code=\"20"), reason: ReasonParse},
		{name: "openmetrics without EOF", handler: body("application/openmetrics-text; version=1.0.0", "requests_total{code=\"200\"} 7\n"), reason: ReasonParse},
		{name: "invalid utf-8", handler: body("text/plain", "requests_total{code=\"\xff\"} 7\n"), reason: ReasonParse},
		{name: "NUL where a statement starts", handler: body("text/plain", text+"\x00garbage \xff\n"), reason: ReasonParse},
		{name: "NUL at the start of the body", handler: body("text/plain", "\x00"+text), reason: ReasonParse},
		{name: "NUL after indentation", handler: body("text/plain", text+" \t\x00garbage\n"), reason: ReasonParse},
		{name: "NUL inside a label value is the parser's", handler: body("text/plain", text+"other{l=\"a\x00b\"} 1\n"), up: 1, value: 7},
		{name: "duplicate label name", handler: body("text/plain", "requests_total{code=\"1\",code=\"2\"} 7\n"), reason: ReasonInvalidSeries},
		{name: "bad gzip", handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Encoding", "gzip")
			w.Write([]byte("not gzip"))
		}), reason: ReasonParse},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.handler)
			defer srv.Close()
			st := newTestStore(t)
			set := metrics.NewSet()
			sc := ScrapeConfig{JobName: "app"}
			if tc.tweak != nil {
				tc.tweak(&sc)
			}
			tgt, err := NewScrapeTarget(sc, hostPort(t, srv.URL), st, set)
			require.NoError(t, err)
			err = tgt.Collect(context.Background(), time.UnixMilli(15_000))
			require.Equal(t, tc.up, lastValue(t, st, name("up")))
			text := metricText(set)
			if tc.up == 0 {
				require.Error(t, err)
				require.Contains(t, text, `seismo_collector_errors_total{job="app",reason="`+tc.reason+`"} 1`)
				require.Len(t, series(t, st, name("requests_total")), 0, "nothing of a failed scrape is stored")
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.value, lastValue(t, st, name("requests_total"), labels.MustNewMatcher(labels.MatchEqual, "code", "200")))
			if tc.dropped != "" {
				require.Contains(t, text, `seismo_collector_samples_dropped_total{job="app",reason="`+tc.dropped+`"} 1`)
			}
			require.Contains(t, text, `seismo_collector_success{job="app",instance="`+hostPort(t, srv.URL)+`"} 1`)
		})
	}
}

func TestScrapeStalenessAndCounterReset(t *testing.T) {
	bodies := []string{
		"c_total 10\ng{a=\"x\"} 1\ng{a=\"y\"} 2\n",
		"c_total 20\ng{a=\"x\"} 1\n",  // g{a="y"} disappears
		"c_total 5\ng{a=\"x\"} 1\n",   // counter reset
		"",                            // target down (500)
		"c_total 6\ng{a=\"x\"} NaN\n", // back, NaN value
	}
	i := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if bodies[i] == "" {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte(bodies[i]))
	}))
	defer srv.Close()
	st := newTestStore(t)
	tgt, err := NewScrapeTarget(ScrapeConfig{JobName: "app"}, hostPort(t, srv.URL), st, nil)
	require.NoError(t, err)
	for i = range bodies {
		_ = tgt.Collect(context.Background(), time.UnixMilli(int64(i+1)*1000))
	}
	tgt.Stop(time.UnixMilli(6000))

	stale := math.Float64frombits(value.StaleNaN)
	tests := []struct {
		series string
		want   []point
	}{
		{`{__name__="c_total", instance="` + hostPort(t, srv.URL) + `", job="app"}`, []point{{1000, 10}, {2000, 20}, {3000, 5}, {4000, stale}, {5000, 6}, {6000, stale}}},
		{`{__name__="g", a="y", instance="` + hostPort(t, srv.URL) + `", job="app"}`, []point{{1000, 2}, {2000, stale}}},
		{`{__name__="g", a="x", instance="` + hostPort(t, srv.URL) + `", job="app"}`, []point{{1000, 1}, {2000, 1}, {3000, 1}, {4000, stale}, {5000, math.NaN()}, {6000, stale}}},
		{`{__name__="up", instance="` + hostPort(t, srv.URL) + `", job="app"}`, []point{{1000, 1}, {2000, 1}, {3000, 1}, {4000, 0}, {5000, 1}, {6000, stale}}},
		{`{__name__="scrape_samples_scraped", instance="` + hostPort(t, srv.URL) + `", job="app"}`, []point{{1000, 3}, {2000, 2}, {3000, 2}, {4000, 0}, {5000, 2}, {6000, stale}}},
	}
	all := series(t, st, labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".+"))
	for _, tc := range tests {
		t.Run(tc.series, func(t *testing.T) {
			got, ok := all[tc.series]
			require.True(t, ok, "series missing; have %v", keys(all))
			require.Len(t, got, len(tc.want))
			for i := range tc.want {
				require.Equal(t, tc.want[i].t, got[i].t)
				require.Equal(t, math.Float64bits(tc.want[i].v), math.Float64bits(got[i].v), "point %d: want %v got %v", i, tc.want[i].v, got[i].v)
			}
		})
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestHonorLabels(t *testing.T) {
	const body = "m{job=\"theirs\",instance=\"i\",env=\"\",zone=\"z\"} 1\n"
	tests := []struct {
		honor bool
		want  string
	}{
		{false, `{__name__="m", exported_instance="i", exported_job="theirs", instance="HOST", job="app", team="t", zone="z"}`},
		{true, `{__name__="m", instance="i", job="theirs", team="t", zone="z"}`},
	}
	for _, tc := range tests {
		t.Run(map[bool]string{false: "rename", true: "honor"}[tc.honor], func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte(body)) }))
			defer srv.Close()
			st := newTestStore(t)
			hp := hostPort(t, srv.URL)
			tgt, err := NewScrapeTarget(ScrapeConfig{JobName: "app", HonorLabels: tc.honor, StaticConfigs: []StaticConfig{{Targets: []string{hp}, Labels: map[string]string{"team": "t"}}}}, hp, st, nil)
			require.NoError(t, err)
			require.NoError(t, tgt.Collect(context.Background(), time.UnixMilli(1000)))
			got := series(t, st, name("m"))
			require.Contains(t, got, strings.ReplaceAll(tc.want, "HOST", hp), "have %v", keys(got))
		})
	}
}

func TestScrapeAuthAndTLS(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte("s3cret\n"), 0o600))
	ok := "up_metric 1\n"
	check := func(want func(r *http.Request) bool) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !want(r) {
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			w.Write([]byte(ok))
		})
	}
	basic := func(r *http.Request) bool { u, p, ok := r.BasicAuth(); return ok && u == "u" && p == "pw" }
	bearer := func(r *http.Request) bool { return r.Header.Get("Authorization") == "Bearer s3cret" }
	tests := []struct {
		name   string
		tls    bool
		want   func(*http.Request) bool
		client HTTPClientConfig
		up     float64
	}{
		{"basic auth", false, basic, HTTPClientConfig{BasicAuth: &httpconf.BasicAuth{Username: "u", Password: "pw"}}, 1},
		{"basic auth wrong", false, basic, HTTPClientConfig{BasicAuth: &httpconf.BasicAuth{Username: "u", Password: "no"}}, 0},
		{"bearer token file", false, bearer, HTTPClientConfig{BearerTokenFile: tokenFile}, 1},
		{"authorization credentials", false, bearer, HTTPClientConfig{Authorization: &httpconf.Authorization{Credentials: "s3cret"}}, 1},
		{"tls with ca_file", true, bearer, HTTPClientConfig{BearerTokenFile: tokenFile, TLSConfig: httpconf.TLSConfig{CAFile: "CA"}}, 1},
		{"tls unknown ca", true, bearer, HTTPClientConfig{BearerTokenFile: tokenFile}, 0},
		{"no credentials to another host on redirect", false, nil, HTTPClientConfig{BearerTokenFile: tokenFile}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var srv *httptest.Server
			if tc.tls {
				srv = httptest.NewUnstartedServer(check(tc.want))
				srv.Config.ErrorLog = log.New(io.Discard, "", 0)
				srv.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
				srv.StartTLS()
				ca := filepath.Join(t.TempDir(), "ca.pem")
				require.NoError(t, os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600))
				if tc.client.TLSConfig.CAFile == "CA" {
					tc.client.TLSConfig.CAFile = ca
				}
			} else if tc.want == nil {
				other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.Header.Get("Authorization") != "" {
						t.Error("credentials leaked to another host")
					}
					w.Write([]byte(ok))
				}))
				defer other.Close()
				srv = httptest.NewServer(http.RedirectHandler(strings.Replace(other.URL, "127.0.0.1", "localhost", 1)+"/metrics", http.StatusFound))
			} else {
				srv = httptest.NewServer(check(tc.want))
			}
			defer srv.Close()
			cfg := Config{ScrapeConfigs: []ScrapeConfig{{HTTPClientConfig: tc.client}}}
			require.NoError(t, cfg.Resolve(""))
			sc := cfg.ScrapeConfigs[0]
			sc.JobName = "app"
			if tc.tls {
				sc.Scheme = "https"
			}
			st := newTestStore(t)
			tgt, err := NewScrapeTarget(sc, hostPort(t, srv.URL), st, nil)
			require.NoError(t, err)
			err = tgt.Collect(context.Background(), time.UnixMilli(1000))
			require.Equal(t, tc.up, lastValue(t, st, name("up")))
			if err != nil {
				require.NotContains(t, err.Error(), "s3cret")
				require.NotContains(t, err.Error(), "pw")
			}
		})
	}
}
