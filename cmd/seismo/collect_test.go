package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seismo-agent/seismo/collectors"
	"github.com/seismo-agent/seismo/internal/config"
)

// TestWireCollect runs the agent with a scrape job, queries what it
// scraped through /api/v1/query, reloads with a second job and checks that
// the first job's history survived.
func TestWireCollect(t *testing.T) {
	hits := make(chan string, 64)
	serve := func(name string) *httptest.Server {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			select {
			case hits <- name:
			default:
			}
			w.Write([]byte("requests_total 42\n"))
		}))
		t.Cleanup(srv.Close)
		return srv
	}
	first, second := serve("first"), serve("second")
	job := func(name string, srv *httptest.Server) collectors.ScrapeConfig {
		u, _ := url.Parse(srv.URL)
		return collectors.ScrapeConfig{JobName: name, MetricsPath: "/metrics", Scheme: "http", StaticConfigs: []collectors.StaticConfig{{Targets: []string{u.Host}}}}
	}
	cfgWith := func(jobs ...collectors.ScrapeConfig) *config.Config {
		c := testConfig()
		c.DataDir = t.TempDir()
		c.Collectors.Host.Enabled, c.Collectors.Cgroup.Enabled = false, false
		c.Collectors.ScrapeInterval, c.Collectors.ScrapeTimeout = time.Second, time.Second
		c.Collectors.ScrapeConfigs = jobs
		return c
	}
	cfg := cfgWith(job("first", first))
	next := cfgWith(job("first", first), job("second", second))
	a := newTestAgent(t, agentOptions{load: func() (*config.Config, error) { return next, nil }})
	c, err := wireCollect(a, cfg)
	require.NoError(t, err)
	require.Contains(t, c.sources, "local")
	base := startAgent(t, a)

	// A target's next request proves its previous scrape was committed.
	waitScrapes := func(name string, n int) {
		t.Helper()
		for n > 0 {
			select {
			case got := <-hits:
				if got == name {
					n--
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("%s was not scraped", name)
			}
		}
	}
	query := func(q string) string {
		t.Helper()
		code, body := do(t, http.MethodGet, base+"/api/v1/query?query="+url.QueryEscape(q))
		require.Equal(t, http.StatusOK, code, body)
		return body
	}
	waitScrapes("first", 2)
	require.Contains(t, query(`requests_total{job="first"}`), `"value":[`)
	require.Contains(t, query(`requests_total{job="first"}`), `,"42"]`)

	require.NoError(t, a.reload(context.Background()))
	waitScrapes("second", 2)
	body := query(`count_over_time(up{job="first"}[1m]) >= 2`)
	require.Contains(t, body, `"job":"first"`, "the unchanged job kept its history: %s", body)
	require.True(t, strings.Contains(query(`up{job="second"}`), `"1"]`))
	code, names := do(t, http.MethodGet, base+"/api/v1/label/job/values")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, `{"status":"success","data":["first","second"]}`, names)
}
