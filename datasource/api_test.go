package datasource

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seismo-agent/seismo/internal/httpconf"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func apiServer(t testing.TB, check func(*http.Request) bool) *httptest.Server {
	t.Helper()
	a := NewAPI(newLocal(t, fixtureStore(t)), func() time.Time { return time.Unix(300, 0) })
	mux := http.NewServeMux()
	mux.Handle("/api/v1/query", a.QueryHandler())
	mux.Handle("/api/v1/query_range", a.QueryRangeHandler())
	mux.Handle("/api/v1/labels", a.LabelsHandler())
	mux.Handle("/api/v1/label/{name}/values", a.LabelValuesHandler())
	mux.Handle("/api/v1/series", a.SeriesHandler())
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if check != nil && !check(r) {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestAPIHandlers(t *testing.T) {
	srv := apiServer(t, nil)
	tests := []struct {
		name   string
		path   string
		post   bool
		code   int
		expect string // substring of the JSON body
	}{
		{"instant vector", `/api/v1/query?query=count+by+(code)(http_requests_total)&time=300`, false, 200,
			`{"status":"success","data":{"resultType":"vector","result":[{"metric":{"code":"200"},"value":[300,"2"]},{"metric":{"code":"500"},"value":[300,"1"]}]}}`},
		{"default time is now", `/api/v1/query?query=g`, false, 200, `"value":[300,"5"]`},
		{"RFC 3339 time", `/api/v1/query?query=g&time=1970-01-01T00:05:00Z`, false, 200, `"value":[300,"5"]`},
		{"scalar", `/api/v1/query?query=1%2B1&time=300`, false, 200, `{"resultType":"scalar","result":[300,"2"]}`},
		{"matrix from a range selector", `/api/v1/query?query=g[30s]&time=300`, false, 200, `"values":[[285,"5"],[300,"5"]]`},
		{"empty vector", `/api/v1/query?query=nothing&time=300`, false, 200, `"result":[]`},
		{"POST form", `/api/v1/query`, true, 200, `"value":[300,"5"]`},
		{"range", `/api/v1/query_range?query=count(http_requests_total)&start=120&end=300&step=60`, false, 200,
			`{"resultType":"matrix","result":[{"metric":{},"values":[[120,"3"],[180,"3"],[240,"3"],[300,"3"]]}]}`},
		{"range with duration step", `/api/v1/query_range?query=g&start=120&end=300&step=1m`, false, 200, `[[120,"5"],[180,"5"],[240,"5"],[300,"5"]]`},
		{"bad query", `/api/v1/query?query=rate(&time=300`, false, 400, `"errorType":"bad_data"`},
		{"missing query", `/api/v1/query`, false, 400, `missing query parameter`},
		{"bad time", `/api/v1/query?query=g&time=yesterday`, false, 400, `invalid parameter \"time\"`},
		{"bad step", `/api/v1/query_range?query=g&start=0&end=10&step=0`, false, 400, `step`},
		{"too many points", `/api/v1/query_range?query=g&start=0&end=100000&step=1`, false, 400, `11000 points`},
		{"end before start", `/api/v1/query_range?query=g&start=10&end=0&step=1`, false, 400, `before start`},
		{"label names", `/api/v1/labels`, false, 200, `{"status":"success","data":["__name__","code","job","le"]}`},
		{"label names of a selector", `/api/v1/labels?match[]=g`, false, 200, `{"status":"success","data":["__name__"]}`},
		{"label values", `/api/v1/label/job/values`, false, 200, `{"status":"success","data":["a","b"]}`},
		{"metric names", `/api/v1/label/__name__/values?start=0&end=300`, false, 200, `["g","http_requests_total","lat_bucket","resets_total"]`},
		{"series", `/api/v1/series?match[]=http_requests_total{job="b"}&match[]=g`, false, 200, `{"status":"success","data":[{"__name__":"g"},{"__name__":"http_requests_total","code":"200","job":"b"}]}`},
		{"series needs match[]", `/api/v1/series`, false, 400, `no match[]`},
		{"bad selector", `/api/v1/labels?match[]=%7B`, false, 400, `bad_data`},
		{"execution error", `/api/v1/query?query=label_replace(g,"a","b","c","(")&time=300`, false, 422, `"errorType":"execution"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var resp *http.Response
			var err error
			if tc.post {
				resp, err = http.PostForm(srv.URL+tc.path, url.Values{"query": {"g"}, "time": {"300"}})
			} else {
				resp, err = http.Get(srv.URL + tc.path)
			}
			require.NoError(t, err)
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.Equal(t, tc.code, resp.StatusCode, string(b))
			require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
			require.True(t, json.Valid(b))
			require.Contains(t, string(b), tc.expect)
		})
	}
}

func TestRemoteAgreesWithLocal(t *testing.T) {
	srv := apiServer(t, nil)
	r, err := NewRemote(RemoteConfig{Name: "prom", URL: srv.URL})
	require.NoError(t, err)
	defer r.Close()
	l := newLocal(t, fixtureStore(t))
	ctx := context.Background()
	for _, q := range []string{`sum by (code) (rate(http_requests_total[1m]))`, `histogram_quantile(0.9, sum by (le) (rate(lat_bucket[1m])))`, `scalar(g)`, `http_requests_total`} {
		t.Run(q, func(t *testing.T) {
			want, err := l.Instant(ctx, q, time.Unix(300, 0))
			require.NoError(t, err)
			got, err := r.Instant(ctx, q, time.Unix(300, 0))
			require.NoError(t, err)
			require.Equal(t, want.String(), got.String())
			if strings.HasPrefix(q, "scalar") {
				return
			}
			wantM, err := l.Range(ctx, `sum(`+q+`)`, time.Unix(120, 0), time.Unix(300, 0), 30*time.Second)
			require.NoError(t, err)
			gotM, err := r.Range(ctx, `sum(`+q+`)`, time.Unix(120, 0), time.Unix(300, 0), 30*time.Second)
			require.NoError(t, err)
			require.Equal(t, wantM.String(), gotM.String())
		})
	}
}

func TestRemoteAuthErrorsAndTimeout(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "token"), []byte("tok3n\n"), 0o600))
	bearer := func(r *http.Request) bool {
		return r.Header.Get("Authorization") == "Bearer tok3n" && r.Header.Get("X-Scope-OrgID") == "team"
	}
	basic := func(r *http.Request) bool { u, p, ok := r.BasicAuth(); return ok && u == "u" && p == "pa55" }
	tests := []struct {
		name    string
		check   func(*http.Request) bool
		cfg     RemoteConfig
		q       string
		wantErr string
	}{
		{"bearer from file with header", bearer, RemoteConfig{Authorization: &httpconf.Authorization{CredentialsFile: "token"}, Headers: map[string]string{"X-Scope-OrgID": "team"}}, "g", ""},
		{"basic auth", basic, RemoteConfig{BasicAuth: &httpconf.BasicAuth{Username: "u", Password: "pa55"}}, "g", ""},
		{"wrong password", basic, RemoteConfig{BasicAuth: &httpconf.BasicAuth{Username: "u", Password: "wrong"}}, "g", "401"},
		{"bad query names the remote", nil, RemoteConfig{}, "rate(", `remote "r": bad_data`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := apiServer(t, tc.check)
			cfg := Config{Remote: []RemoteConfig{tc.cfg}}
			cfg.Remote[0].Name, cfg.Remote[0].URL = "r", srv.URL
			require.NoError(t, cfg.Resolve(dir))
			require.NoError(t, cfg.Validate())
			r, err := NewRemote(cfg.Remote[0])
			require.NoError(t, err)
			defer r.Close()
			v, err := r.Instant(context.Background(), tc.q, time.Unix(300, 0))
			if tc.wantErr == "" {
				require.NoError(t, err)
				require.Len(t, v, 1)
				require.Equal(t, 5.0, v[0].F)
				return
			}
			require.ErrorContains(t, err, tc.wantErr)
			require.NotContains(t, err.Error(), "pa55")
			require.NotContains(t, err.Error(), "wrong")
		})
	}

	t.Run("no credentials to another host on redirect", func(t *testing.T) {
		other := apiServer(t, func(r *http.Request) bool {
			if r.Header.Get("Authorization") != "" {
				t.Error("credentials leaked to another host")
			}
			return true
		})
		srv := httptest.NewServer(http.RedirectHandler(strings.Replace(other.URL, "127.0.0.1", "localhost", 1)+"/api/v1/query?query=g", http.StatusFound))
		defer srv.Close()
		r, err := NewRemote(RemoteConfig{Name: "r", URL: srv.URL, Authorization: &httpconf.Authorization{Credentials: "tok3n"}})
		require.NoError(t, err)
		defer r.Close()
		_, err = r.Instant(context.Background(), "g", time.Unix(300, 0))
		require.Error(t, err)
	})

	t.Run("timeout", func(t *testing.T) {
		release := make(chan struct{})
		srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-release:
			}
		}))
		defer srv.Close()
		defer close(release)
		r, err := NewRemote(RemoteConfig{Name: "slow", URL: srv.URL, Timeout: 50 * time.Millisecond})
		require.NoError(t, err)
		defer r.Close()
		_, err = r.Instant(context.Background(), "g", time.Unix(300, 0))
		require.ErrorIs(t, err, context.DeadlineExceeded)
	})
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want []string
	}{
		{"empty", Config{}, nil},
		{"good", Config{Remote: []RemoteConfig{{Name: "prom", URL: "http://p:9090"}}}, nil},
		{"bad", Config{Remote: []RemoteConfig{
			{Name: "local", URL: "p:9090"},
			{Name: "a", URL: "http://u:hunter2@p/", BasicAuth: &httpconf.BasicAuth{}, Authorization: &httpconf.Authorization{}},
			{Name: "a", URL: "http://p", TLSConfig: httpconf.TLSConfig{KeyFile: "k"}},
		}}, []string{
			`remote[0].name: "local" is the embedded store`, "remote[0].url: want an absolute http(s) URL",
			"remote[1].url: put credentials in basic_auth", "remote[1].authorization: basic_auth and authorization are mutually exclusive",
			"remote[1].basic_auth.username: must not be empty", `remote[2].name: duplicate name "a"`, "remote[2].tls_config.cert_file",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if tc.want == nil {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			for _, w := range tc.want {
				require.ErrorContains(t, err, w)
			}
			require.False(t, strings.Contains(err.Error(), "hunter2"))
		})
	}
}

// TestAPILimits checks each limit of the query API: samples per query,
// query time, points per series and the request body cap.
func TestAPILimits(t *testing.T) {
	st := fixtureStore(t)
	serve := func(t *testing.T, opts LocalOptions, maxPoints int, bodyCap int64, hold func(*Local)) string {
		opts.Queryable = st
		l, err := NewLocal(opts)
		require.NoError(t, err)
		if hold != nil {
			hold(l)
		}
		a := NewAPI(l, func() time.Time { return time.Unix(300, 0) })
		a.MaxPoints = maxPoints
		mux := http.NewServeMux()
		mux.Handle("/api/v1/query", a.QueryHandler())
		mux.Handle("/api/v1/query_range", a.QueryRangeHandler())
		mux.Handle("/api/v1/labels", a.LabelsHandler())
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			r.Body = http.MaxBytesReader(w, r.Body, bodyCap)
			mux.ServeHTTP(w, r)
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	tests := []struct {
		name      string
		opts      LocalOptions
		maxPoints int
		path      string
		form      url.Values
		code      int
		expect    string
	}{
		{"samples within the limit", LocalOptions{MaxSamples: 100}, 100, `/api/v1/query?query=http_requests_total&time=300`, nil, 200, `"status":"success"`},
		{"too many samples", LocalOptions{MaxSamples: 10}, 100, `/api/v1/query?query=http_requests_total[5m]&time=300`, nil, 422, `too many samples`},
		{"too many samples in a range query", LocalOptions{MaxSamples: 10}, 100, `/api/v1/query_range?query=g&start=0&end=300&step=15`, nil, 422, `too many samples`},
		{"engine timeout", LocalOptions{Timeout: time.Nanosecond}, 100, `/api/v1/query?query=g&time=300`, nil, 503, `"errorType":"timeout"`},
		{"points within the limit", LocalOptions{}, 5, `/api/v1/query_range?query=g&start=0&end=300&step=60`, nil, 200, `"status":"success"`},
		{"too many points", LocalOptions{}, 5, `/api/v1/query_range?query=g&start=0&end=300&step=30`, nil, 400, `maximum resolution of 5 points`},
		{"form body over the cap", LocalOptions{}, 100, `/api/v1/query`, url.Values{"query": {strings.Repeat("g", 3000)}}, 413, `request body over 2048 bytes`},
		{"labels form body over the cap", LocalOptions{}, 100, `/api/v1/labels`, url.Values{"match[]": {strings.Repeat("g", 3000)}}, 413, `request body over 2048 bytes`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			base := serve(t, tc.opts, tc.maxPoints, 2048, nil)
			var resp *http.Response
			var err error
			if tc.form != nil {
				resp, err = http.PostForm(base+tc.path, tc.form)
			} else {
				resp, err = http.Get(base + tc.path)
			}
			require.NoError(t, err)
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.Equal(t, tc.code, resp.StatusCode, string(b))
			require.Contains(t, string(b), tc.expect)
		})
	}
	t.Run("no turn to evaluate within the timeout", func(t *testing.T) {
		var l *Local
		base := serve(t, LocalOptions{MaxConcurrent: 1, Timeout: time.Second}, 100, 2048, func(x *Local) {
			l = x
			l.turns <- struct{}{} // a query that never ends holds the only turn
		})
		resp, err := http.Get(base + "/api/v1/query?query=g&time=300")
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.Equal(t, 503, resp.StatusCode, string(b))
		require.Contains(t, string(b), "waiting for a turn to evaluate")
		<-l.turns
		resp2, err := http.Get(base + "/api/v1/query?query=g&time=300")
		require.NoError(t, err)
		resp2.Body.Close()
		require.Equal(t, 200, resp2.StatusCode, "the turn is free again")
	})
}

// TestMetadataHandler: /api/v1/metadata gives the types the store's
// scrapes found, in Prometheus' form, by metric and up to a limit, and
// another agent's Remote reads them as Prometheus' own.
func TestMetadataHandler(t *testing.T) {
	st := fixtureStore(t)
	st.SetType([]byte("http_requests_total"), "counter")
	st.SetType([]byte("g"), "gauge")
	st.SetType([]byte("lat"), "histogram")
	l, err := NewLocal(LocalOptions{Queryable: st, Types: st.MetricTypes})
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("/api/v1/metadata", NewAPI(l, nil).MetadataHandler())
	srv := httptest.NewServer(mux)
	defer srv.Close()
	for path, want := range map[string]string{
		"/api/v1/metadata":                `{"status":"success","data":{"g":[{"type":"gauge","help":"","unit":""}],"http_requests_total":[{"type":"counter","help":"","unit":""}],"lat":[{"type":"histogram","help":"","unit":""}]}}`,
		"/api/v1/metadata?metric=lat":     `{"status":"success","data":{"lat":[{"type":"histogram","help":"","unit":""}]}}`,
		"/api/v1/metadata?limit=1":        `{"status":"success","data":{"g":[{"type":"gauge","help":"","unit":""}]}}`,
		"/api/v1/metadata?metric=nothing": `{"status":"success","data":{}}`,
		"/api/v1/metadata?limit=many":     `{"status":"error","errorType":"bad_data","error":"invalid parameter \"limit\": strconv.Atoi: parsing \"many\": invalid syntax"}`,
	} {
		resp, err := http.Get(srv.URL + path)
		require.NoError(t, err)
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		require.JSONEq(t, want, string(b), path)
	}
	r, err := NewRemote(RemoteConfig{Name: "agent", URL: srv.URL})
	require.NoError(t, err)
	defer r.Close()
	types, err := r.MetricTypes(context.Background())
	require.NoError(t, err)
	require.Equal(t, map[string]string{"http_requests_total": "counter", "g": "gauge", "lat": "histogram"}, types)
}
