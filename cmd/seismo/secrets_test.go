package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"

	"github.com/seismo-agent/seismo/internal/config"
	"github.com/seismo-agent/seismo/internal/testlog"
)

// Every secret the agent config below holds. None may appear in a log
// line, an HTTP answer or an error.
const (
	secretBearer   = "sEcReT-bearer-7f3a"
	secretBasic    = "sEcReT-basic-19c2"
	secretHookPath = "sEcReT-hookpath-a1"
	secretHMAC     = "sEcReT-hmac-b2"
	secretHeader   = "sEcReT-header-c3"
	secretSlack    = "sEcReT-slack-d4"
	secretAM       = "sEcReT-am-e5"
	secretDS       = "sEcReT-ds-f6"
	secretScrape   = "sEcReT-scrape-g7"
)

const secretsYAML = `
data_dir: state
log: {level: debug, format: json}
http:
  listen_address: 127.0.0.1:0
  web_config_file: web.yml
  authorization: {credentials_file: bearer-token}
collectors:
  scrape_interval: 1s
  scrape_timeout: 1s
  host: {enabled: false}
  cgroup: {enabled: false}
  scrape_configs:
    - job_name: target
      authorization: {credentials: ` + secretScrape + `}
      static_configs: [{targets: ["TARGET"]}]
datasources:
  remote:
    - name: ds
      url: DS_URL
      basic_auth: {username: u, password: ` + secretDS + `}
rules:
  files: [always.rules.yml]
  builtin: {enabled: false}
notify:
  min_backoff: 100ms
  max_backoff: 200ms
  route:
    receiver: all
    group_by: [alertname]
    group_wait: 0s
    group_interval: 1s
    repeat_interval: 1m
  receivers:
    - name: all
      webhook_configs:
        - url_file: hook-url
          hmac_secret: ` + secretHMAC + `
          headers: {X-Token: ` + secretHeader + `}
      slack_configs:
        - api_url: SINK/services/` + secretSlack + `
      alertmanager_configs:
        - urls: [AM_URL]
`

const alwaysRules = `groups:
  - name: local
    interval: 1s
    rules:
      - alert: Always
        expr: vector(1)
        labels: {severity: page}
  - name: remote
    interval: 1s
    datasource: ds
    rules:
      - alert: RemoteDown
        expr: up == 0
`

// counter counts requests to one loopback server, which always fails.
type counter struct {
	mu   sync.Mutex
	hits int
}

func (c *counter) server(t *testing.T, code int) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		c.mu.Lock()
		c.hits++
		c.mu.Unlock()
		http.Error(w, "failing on purpose", code)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func (c *counter) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hits
}

// TestSecretsNeverLeak runs the agent with a secret in every place a config
// can hold one, makes every receiver, the remote source and the scrape
// target fail (so errors are logged), then reads every endpoint the agent
// mounts, reloads a bad config and checks the config, and finds none of the
// secrets in any of it.
func TestSecretsNeverLeak(t *testing.T) {
	dir := t.TempDir()
	var hook, slackSink, am, ds, target counter
	hookSrv, slackSrv, amSrv := hook.server(t, 500), slackSink.server(t, 500), am.server(t, 500)
	dsSrv, targetSrv := ds.server(t, 500), target.server(t, 401)
	amURL, _ := url.Parse(amSrv.URL)
	amURL.User = url.UserPassword("am", secretAM)
	targetURL, _ := url.Parse(targetSrv.URL)

	hash, err := bcrypt.GenerateFromPassword([]byte(secretBasic), bcrypt.MinCost)
	require.NoError(t, err)
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
		return p
	}
	write("web.yml", fmt.Sprintf("basic_auth_users:\n  alice: %s\n", hash))
	write("bearer-token", secretBearer+"\n")
	write("hook-url", hookSrv.URL+"/hook/"+secretHookPath+"\n")
	write("always.rules.yml", alwaysRules)
	cfgText := strings.NewReplacer("TARGET", targetURL.Host, "DS_URL", dsSrv.URL, "SINK", slackSrv.URL, "AM_URL", amURL.String()).Replace(secretsYAML)
	cfgPath := write("seismo.yml", cfgText)

	var logs testlog.Buffer
	load := func() (*config.Config, error) { return config.Load(config.LoadOptions{File: cfgPath}) }
	cfg, err := load()
	require.NoError(t, err)
	logger, level, err := newLogger(&logs, cfg.Log)
	require.NoError(t, err)
	a, err := newAgent(cfg, agentOptions{logger: logger, load: load})
	require.NoError(t, err)
	require.NoError(t, wire(a, cfg, level))
	base := startAgent(t, a)

	var answers strings.Builder
	call := func(method, path string, auth bool) int {
		t.Helper()
		req, err := http.NewRequest(method, base+path, nil)
		require.NoError(t, err)
		if auth {
			req.Header.Set("Authorization", "Bearer "+secretBearer)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		fmt.Fprintf(&answers, "%s %s -> %d %v\n%s\n", method, path, resp.StatusCode, resp.Header, b)
		return resp.StatusCode
	}

	// Wait until every failing peer was tried twice (the second time after
	// a logged failure), or the remote source and target once.
	deadline := time.Now().Add(60 * time.Second)
	for hook.count() < 2 || slackSink.count() < 2 || am.count() < 2 || ds.count() < 1 || target.count() < 1 {
		require.True(t, time.Now().Before(deadline), "peers not tried: hook %d, slack %d, am %d, ds %d, target %d",
			hook.count(), slackSink.count(), am.count(), ds.count(), target.count())
		call("GET", "/-/healthy", false) // also paces the loop
	}

	// Authentication: required, and the switches are off by default.
	require.Equal(t, 401, call("GET", "/api/v1/alerts", false))
	require.Equal(t, 401, call("GET", "/metrics", false))
	require.Equal(t, 403, call("POST", "/-/reload", true))
	require.Equal(t, 403, call("POST", "/api/v1/silences", true))
	require.Equal(t, 403, call("DELETE", "/api/v1/silences/none", true))

	// Every mounted endpoint, plus the server's own.
	patterns := a.web.Patterns()
	require.Contains(t, patterns, "GET /api/v1/alerts")
	for _, p := range append(patterns, "GET /-/healthy", "GET /-/ready", "GET /metrics", "POST /-/reload") {
		method, path, _ := strings.Cut(p, " ")
		path = strings.NewReplacer("{name}", "__name__", "{id}", "none").Replace(path)
		if strings.HasPrefix(path, "/api/v1/query") {
			path += "?query=" + url.QueryEscape(`{__name__=~".+"}`) + "&start=0&end=1&step=1"
		}
		if path == "/api/v1/series" {
			path += "?match[]=" + url.QueryEscape(`{__name__=~".+"}`)
		}
		call(method, path, true)
	}
	require.Contains(t, answers.String(), `"alertname":"Always"`, "the answers hold real content")

	// A bad config with its secrets: the reload fails and says why.
	bad := strings.Replace(cfgText, slackSrv.URL, "http://hooks.slack.example", 1)
	require.NoError(t, os.WriteFile(cfgPath, []byte(bad), 0o600))
	a.hangup()
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "config reload failed") }, 30*time.Second, 10*time.Millisecond)
	require.Contains(t, logs.String(), "must use https")
	code, stdout, stderr := cli(t, "check", "config", cfgPath)
	require.Equal(t, 1, code)
	require.Contains(t, stdout+stderr, "slack_configs[0].api_url: must use https")

	everything := logs.String() + answers.String() + stdout + stderr
	require.Contains(t, everything, "failing on purpose", "the peers' failures were logged")
	for _, s := range []string{secretBearer, secretBasic, string(hash), secretHookPath, secretHMAC, secretHeader, secretSlack, secretAM, secretDS, secretScrape} {
		if i := strings.Index(everything, s); i >= 0 {
			t.Errorf("secret %q leaked: ...%s...", s, everything[max(0, i-200):min(len(everything), i+100)])
		}
	}
}
