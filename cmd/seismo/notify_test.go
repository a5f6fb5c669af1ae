package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/require"

	"github.com/seismo-agent/seismo/internal/config"
	"github.com/seismo-agent/seismo/internal/model"
)

const notifyYAML = `
data_dir: state
http: {listen_address: 127.0.0.1:0, enable_admin_api: true}
notify:
  route:
    receiver: hook
    group_by: [alertname]
    group_wait: 0s
    routes:
      - receiver: am
        matchers: ['severity="page"']
        group_by: ['...']
        group_interval: 30s
        repeat_interval: 1m
        continue: true
      - receiver: hook             # the root receiver gets only what no child matched
  receivers:
    - name: hook
      webhook_configs:
        - url_file: hook-url
          hmac_secret: s3cr3t
          headers: {X-Team: web}
    - name: am
      alertmanager_configs:
        - urls: [HOOK]
    - name: slack
      slack_configs:
        - api_url: https://hooks.example/services/SECRET
    - name: audit
      file_configs:
        - path: audit.jsonl
  drafts:
    receivers: [audit]
    time_zone: America/Sao_Paulo
`

// TestWireNotify loads a notify section with every integration from YAML,
// runs the agent, and checks that an alert from the rules side reaches the
// webhook, that the silences and drafts APIs are mounted, and that a reload
// builds a new config.
func TestWireNotify(t *testing.T) {
	got := make(chan *http.Request, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		got <- r
	}))
	defer srv.Close()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "hook-url"), []byte(srv.URL+"/hook\n"), 0o600))
	cfgPath := filepath.Join(dir, "seismo.yml")
	require.NoError(t, os.WriteFile(cfgPath, []byte(strings.ReplaceAll(notifyYAML, "HOOK", srv.URL)), 0o600))
	load := func() (*config.Config, error) { return config.Load(config.LoadOptions{File: cfgPath}) }
	cfg, err := load()
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, "audit.jsonl"), cfg.Notify.Receivers[3].FileConfigs[0].Path)

	a := newTestAgent(t, agentOptions{load: load})
	fn, svc, err := wireNotify(a, cfg)
	require.NoError(t, err)
	a.addService(svc)
	base := startAgent(t, a)

	fn(context.Background(), &model.Alert{Labels: labels.FromStrings("alertname", "Down", "severity", "page"),
		State: model.StateFiring, StartsAt: time.Now().Add(-time.Minute), Value: 1})
	paths := map[string]*http.Request{}
	for len(paths) < 2 {
		select {
		case r := <-got:
			paths[r.URL.Path] = r
		case <-time.After(30 * time.Second):
			t.Fatalf("notifications did not arrive; got %v", paths)
		}
	}
	require.Contains(t, paths, "/hook")
	require.Contains(t, paths, "/api/v2/alerts")
	require.Equal(t, "web", paths["/hook"].Header.Get("X-Team"))
	require.True(t, strings.HasPrefix(paths["/hook"].Header.Get("X-Seismo-Signature"), "sha256="))

	req, err := http.NewRequest(http.MethodPost, base+"/api/v1/silences",
		strings.NewReader(`{"matchers": ["alertname=\"Down\""], "endsAt": "2999-01-01T00:00:00Z"}`))
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	var created struct {
		Data struct{ SilenceID string } `json:"data"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&created))
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	code, body := do(t, http.MethodGet, base+"/api/v1/silences")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, created.Data.SilenceID)
	code, _ = do(t, http.MethodDelete, base+"/api/v1/silences/"+created.Data.SilenceID)
	require.Equal(t, http.StatusOK, code)

	code, body = do(t, http.MethodGet, base+"/api/v1/drafts")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `"phase":"investigating"`)

	require.NoError(t, a.reload(context.Background()))
}
