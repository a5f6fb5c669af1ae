package main

import (
	"context"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seismo-agent/seismo/collectors"
	"github.com/seismo-agent/seismo/datasource"
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

// TestCollectConfigDecodes loads a config file that sets every key of the
// collection sections through the real loader (strict keys, durations,
// squashed auth fields, sizes, *_file secrets, relative paths).
func TestCollectConfigDecodes(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "pw"), []byte("s3cret\n"), 0o600))
	yml := `
data_dir: data
collectors:
  scrape_interval: 30s
  scrape_timeout: 5s
  proc_path: /host/proc
  sys_path: /host/sys
  scrape_configs:
    - job_name: shop
      scrape_interval: 10s
      scrape_timeout: 2s
      metrics_path: /m
      scheme: https
      honor_labels: true
      basic_auth: {username: u, password_file: pw}
      tls_config: {ca_file: ca.pem, server_name: shop, insecure_skip_verify: false}
      body_size_limit: 10MB
      sample_limit: 1000
      label_limit: 20
      static_configs:
        - targets: [localhost:8080]
          labels: {env: prod}
      file_sd_configs:
        - files: [sd/*.json]
          refresh_interval: 1m
    - job_name: api
      authorization: {credentials_file: pw}
      body_size_limit: 4096
      static_configs: [{targets: ["localhost:9090"]}]
  host: {enabled: false, job_name: host, interval: 1m, instance: web-1}
  cgroup: {enabled: true, job_name: cg, interval: 0s, instance: "", path: /system.slice/shop.service}
  probe_configs:
    - job_name: health
      interval: 15s
      timeout: 3s
      targets: [http://localhost:8080/healthz]
      labels: {service: shop}
      method: HEAD
      valid_status_codes: [200, 204]
      bearer_token_file: pw
storage: {retention: 2h, max_series: 5000}
datasources:
  remote:
    - name: central
      url: http://prometheus:9090
      timeout: 10s
      basic_auth: {username: u, password_file: pw}
      tls_config: {ca_file: ca.pem}
      headers: {X-Scope-OrgID: team}
`
	file := filepath.Join(dir, "seismo.yml")
	require.NoError(t, os.WriteFile(file, []byte(yml), 0o600))
	cfg, err := config.Load(config.LoadOptions{File: file})
	require.NoError(t, err)
	c := cfg.Collectors
	require.Equal(t, 30*time.Second, c.ScrapeInterval)
	shop := c.ScrapeConfigs[0]
	require.Equal(t, collectors.ByteSize(10<<20), shop.BodySizeLimit)
	require.Equal(t, "s3cret", string(shop.BasicAuth.Password))
	require.Equal(t, filepath.Join(dir, "ca.pem"), shop.TLSConfig.CAFile)
	require.Equal(t, filepath.Join(dir, "sd/*.json"), shop.FileSDConfigs[0].Files[0])
	require.Equal(t, time.Minute, shop.FileSDConfigs[0].RefreshInterval)
	api := c.ScrapeConfigs[1]
	require.Equal(t, "/metrics", api.MetricsPath, "per-job defaults are filled")
	require.Equal(t, "http", api.Scheme)
	require.Equal(t, collectors.ByteSize(4096), api.BodySizeLimit)
	require.Equal(t, "s3cret", string(api.Authorization.Credentials))
	require.Equal(t, "s3cret", string(c.ProbeConfigs[0].Authorization.Credentials))
	require.Equal(t, []int{200, 204}, c.ProbeConfigs[0].ValidStatusCodes)
	require.Equal(t, "/system.slice/shop.service", c.Cgroup.Path)
	require.Equal(t, 2*time.Hour, cfg.Storage.Retention)
	require.Equal(t, "s3cret", string(cfg.Datasources.Remote[0].BasicAuth.Password))
	require.Equal(t, "team", cfg.Datasources.Remote[0].Headers["X-Scope-OrgID"])

	// Errors name the file position and the field path.
	bad := strings.Replace(yml, "scrape_timeout: 2s", "scrape_timeout: 20s", 1)
	bad = strings.Replace(bad, "max_series: 5000", "max_series: 0", 1)
	bad = strings.Replace(bad, "sample_limit: 1000", "sample_limt: 1000", 1)
	require.NoError(t, os.WriteFile(file, []byte(bad), 0o600))
	_, err = config.Load(config.LoadOptions{File: file})
	require.ErrorContains(t, err, "collectors.scrape_configs[0].scrape_timeout: 20s is longer than scrape_interval 10s")
	require.ErrorContains(t, err, "storage.max_series: must be positive")
	require.ErrorContains(t, err, "sample_limt")
	require.NotContains(t, err.Error(), "s3cret")
}

// TestBuildSourcesReusesUnchangedRemotes: a reload keeps the running
// client of a remote whose config is unchanged (and its connections),
// builds a new one for a changed remote, and drops removed ones.
func TestBuildSourcesReusesUnchangedRemotes(t *testing.T) {
	c := &collected{}
	a := datasource.RemoteConfig{Name: "a", URL: "http://127.0.0.1:9090", Timeout: time.Second}
	b := datasource.RemoteConfig{Name: "b", URL: "http://127.0.0.1:8428", Timeout: time.Second}
	s1, r1, err := c.buildSources(datasource.Config{Remote: []datasource.RemoteConfig{a, b}})
	require.NoError(t, err)
	c.useSources(s1, r1)
	require.Contains(t, s1, "local")

	b2 := b
	b2.URL = "http://127.0.0.1:8429"
	s2, r2, err := c.buildSources(datasource.Config{Remote: []datasource.RemoteConfig{a, b2}})
	require.NoError(t, err)
	require.Same(t, s1["a"], s2["a"], "unchanged remote reused")
	require.NotSame(t, s1["b"], s2["b"], "changed remote rebuilt")
	c.useSources(s2, r2)

	s3, r3, err := c.buildSources(datasource.Config{})
	require.NoError(t, err)
	c.useSources(s3, r3)
	require.Equal(t, []string{"local"}, slices.Collect(maps.Keys(c.sources)))
}
