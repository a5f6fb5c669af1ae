package config

import (
	"fmt"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"

	"github.com/seismo-agent/seismo/internal/testpki"
	"github.com/seismo-agent/seismo/web"
)

func TestHTTPSecurityKeys(t *testing.T) {
	dir := t.TempDir()
	testpki.New(t, dir) // server.pem and server-key.pem for web.yml
	h, err := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)
	require.NoError(t, err)
	writeFile(t, dir, "web.yml", fmt.Sprintf("tls_server_config:\n  cert_file: server.pem\n  key_file: server-key.pem\nbasic_auth_users:\n  alice: %s\n", h))
	writeFile(t, dir, "bad-web.yml", "tls_server_config:\n  cert_file: nope.pem\n  key_file: server-key.pem\n  min_version: TLS9\n")
	writeFile(t, dir, "token", "t0ken-from-file\n")

	t.Run("defaults", func(t *testing.T) {
		h := DefaultHTTPConfig()
		require.True(t, h.AuthExemptHealth)
		require.False(t, h.EnableLifecycle)
		require.False(t, h.EnableAdminAPI)
		require.Equal(t, 30*time.Second, h.QueryTimeout)
		require.Equal(t, 1024, h.MaxQueuedRequests)
		require.Equal(t, 5*time.Second, h.QueueTimeout)
		require.Equal(t, PoolConfig{MaxConcurrentRequests: 4, MaxQueuedRequests: 256, QueueTimeout: 5 * time.Second, MaxRequestsPerSecond: 100}, h.Console)
		require.NoError(t, h.Validate())
		require.Empty(t, h.AccessConfig().BearerToken)
	})
	t.Run("good", func(t *testing.T) {
		file := writeFile(t, dir, "seismo.yml", `
http:
  web_config_file: web.yml
  authorization: {credentials_file: token}
  enable_lifecycle: true
  enable_admin_api: true
  query_timeout: 5s
  write_timeout: 10s
`)
		cfg, err := Load(LoadOptions{File: file})
		require.NoError(t, err)
		require.Equal(t, filepath.Join(dir, "web.yml"), cfg.HTTP.WebConfigFile, "relative to the config file")
		ac := cfg.HTTP.AccessConfig()
		require.Equal(t, "t0ken-from-file", ac.BearerToken)
		require.True(t, ac.EnableLifecycle)
		require.True(t, ac.EnableAdminAPI)
		require.True(t, ac.AuthExemptHealth)
		require.Equal(t, 10*time.Second, cfg.HTTP.Limits().WriteTimeout)
	})
	t.Run("environment enables the lifecycle API", func(t *testing.T) {
		cfg, err := Load(LoadOptions{File: writeFile(t, dir, "empty.yml", ""), Env: []string{"SEISMO_HTTP__ENABLE_LIFECYCLE=true"}})
		require.NoError(t, err)
		require.True(t, cfg.HTTP.EnableLifecycle)
	})
	t.Run("bad", func(t *testing.T) {
		file := writeFile(t, dir, "seismo.yml", `
http:
  web_config_file: bad-web.yml
  authorization: {type: Basic, credentials: hunter2}
  query_timeout: 1m
  write_timeout: 30s
  read_timeout: 0s
  max_request_body_bytes: 10
  query_max_samples: 0
  max_queued_requests: -1
  queue_timeout: 0s
  console:
    max_concurrent_requests: 0
    max_queued_requests: -2
    queue_timeout: -1s
    max_requests_per_second: -0.5
`)
		_, err := Load(LoadOptions{File: file})
		require.Error(t, err)
		for _, want := range []string{
			"seismo.yml:3:20: http.web_config_file: web config " + filepath.Join(dir, "bad-web.yml") + ": tls_server_config.cert_file: open ",
			`http.web_config_file: web config ` + filepath.Join(dir, "bad-web.yml") + `: tls_server_config.min_version: want TLS10, TLS11, TLS12 or TLS13, got "TLS9"`,
			"http.authorization.type: use basic_auth for Basic authorization",
			"seismo.yml:6:18: http.write_timeout: must exceed query_timeout (1m0s)",
			"http.read_timeout: must be positive",
			"http.max_request_body_bytes: must be at least 1024",
			"http.query_max_samples: must be positive",
			"seismo.yml:10:24: http.max_queued_requests: must not be negative, got -1",
			"seismo.yml:11:18: http.queue_timeout: must be positive, got 0s",
			"seismo.yml:13:30: http.console.max_concurrent_requests: must be positive, got 0",
			"seismo.yml:14:26: http.console.max_queued_requests: must not be negative, got -2",
			"seismo.yml:15:20: http.console.queue_timeout: must be positive, got -1s",
			"seismo.yml:16:30: http.console.max_requests_per_second: must not be negative (0: not paced), got -0.5",
		} {
			require.ErrorContains(t, err, want)
		}
		require.NotContains(t, err.Error(), "hunter2")
	})
}

// TestConsolePool: the console's pool is configured apart from the API's,
// from the file or the environment, and 0 queued or 0 per second mean no
// queue and no pacing for the web server (which takes 0 as "the
// default").
func TestConsolePool(t *testing.T) {
	dir := t.TempDir()
	file := writeFile(t, dir, "seismo.yml", `
http:
  max_concurrent_requests: 32
  console:
    max_concurrent_requests: 2
    max_queued_requests: 0
    max_requests_per_second: 0
`)
	cfg, err := Load(LoadOptions{File: file, Env: []string{"SEISMO_HTTP__CONSOLE__QUEUE_TIMEOUT=2s"}})
	require.NoError(t, err)
	require.Equal(t, PoolConfig{MaxConcurrentRequests: 32, MaxQueuedRequests: 1024, QueueTimeout: 5 * time.Second}, cfg.HTTP.APIPool())
	require.Equal(t, PoolConfig{MaxConcurrentRequests: 2, MaxQueuedRequests: 0, QueueTimeout: 2 * time.Second}, cfg.HTTP.Console)
	require.Equal(t, web.PoolLimits{MaxConcurrentRequests: 2, MaxQueuedRequests: -1, QueueTimeout: 2 * time.Second, MaxRequestsPerSecond: -1},
		cfg.HTTP.Console.Limits(), "0 queued: no queue; 0 per second: not paced")
	require.Equal(t, 1024, cfg.HTTP.APIPool().Limits().MaxQueuedRequests)
}

// TestQueryCPUShare: API queries together may use at most half the usable
// CPUs, whatever the number of turns.
func TestQueryCPUShare(t *testing.T) {
	procs := runtime.GOMAXPROCS(0)
	tests := []struct {
		concurrency int
		want        float64
	}{
		{0, min(1, float64(procs)/2/float64(max(1, procs/2)))},
		{procs, 0.5},
		{2 * procs, 0.25},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.concurrency), func(t *testing.T) {
			h := HTTPConfig{QueryMaxConcurrency: tt.concurrency}
			require.InDelta(t, tt.want, h.QueryCPUShare(), 1e-9)
		})
	}
}
