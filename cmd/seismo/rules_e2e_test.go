package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

const rulesE2EConfig = `data_dir: state
http:
  listen_address: 127.0.0.1:0
log:
  format: json
  level: debug
rules:
  files: [always.yml]
  evaluation_interval: 1s
  resend_delay: 3s
  snapshot_interval: 1s
  builtin: {enabled: false}
`

// waitAlert reads log lines until alertname is handed to the notifier.
func (p *proc) waitAlert(t *testing.T, alertname string) map[string]any {
	t.Helper()
	for {
		m := p.waitLog(t, "alert sent")
		if m["alertname"] == alertname {
			return m
		}
	}
}

// TestBinaryRestartKeepsFiring drives an alert to firing, stops the agent
// (SIGTERM, and separately kill -9 after a snapshot), restarts it, and
// checks the alert is still firing since the same time: the first
// notification after the restart is the periodic re-send of the old alert,
// not a new firing.
func TestBinaryRestartKeepsFiring(t *testing.T) {
	bin := buildSeismo(t)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			cfgPath := filepath.Join(dir, "seismo.yml")
			require.NoError(t, os.WriteFile(cfgPath, []byte(rulesE2EConfig), 0o600))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "always.yml"),
				[]byte("groups: [{name: g, rules: [{alert: Always, expr: 'vector(1) > 0'}]}]\n"), 0o600))

			p := startSeismo(t, bin, dir, nil, "run", "--config", cfgPath)
			first := p.waitAlert(t, "Always")
			require.Equal(t, "firing", first["state"])
			// The re-send comes resend_delay later; by then a snapshot
			// (every second) holds the firing state.
			resent := p.waitAlert(t, "Always")
			require.Equal(t, first["starts_at"], resent["starts_at"])
			require.NoError(t, p.cmd.Process.Signal(sig))
			p.wait(t)

			p2 := startSeismo(t, bin, dir, nil, "run", "--config", cfgPath)
			ready := p2.waitLog(t, "agent ready")
			base := "http://" + ready["listen_address"].(string)
			code, body := do(t, "GET", base+"/api/v1/alerts")
			require.Equal(t, 200, code)
			var resp struct {
				Data struct {
					Alerts []struct {
						State   string `json:"state"`
						FiredAt string `json:"firedAt"`
					} `json:"alerts"`
				} `json:"data"`
			}
			require.NoError(t, json.Unmarshal([]byte(body), &resp))
			require.Len(t, resp.Data.Alerts, 1)
			require.Equal(t, "firing", resp.Data.Alerts[0].State, "still firing after the restart")

			next := p2.waitAlert(t, "Always")
			require.Equal(t, "firing", next["state"])
			require.Equal(t, first["starts_at"], next["starts_at"], "a re-send of the old alert, not a new firing")
			require.NoError(t, p2.cmd.Process.Signal(syscall.SIGTERM))
			require.Equal(t, 0, p2.wait(t))
		})
	}
}

// TestBinaryRuleFileWatch breaks a rule file under a running agent: the
// watch reloads it, the old rules keep running and the reload metric is 0;
// fixing the file brings it back to 1.
func TestBinaryRuleFileWatch(t *testing.T) {
	bin := buildSeismo(t)
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "seismo.yml")
	rulesPath := filepath.Join(dir, "always.yml")
	require.NoError(t, os.WriteFile(cfgPath, []byte(strings.Replace(rulesE2EConfig, "level: debug", "level: info", 1)), 0o600))
	require.NoError(t, os.WriteFile(rulesPath, []byte("groups: [{name: g, rules: [{alert: Always, expr: 'vector(1) > 0'}]}]\n"), 0o600))

	p := startSeismo(t, bin, dir, nil, "run", "--config", cfgPath)
	ready := p.waitLog(t, "agent ready")
	base := "http://" + ready["listen_address"].(string)
	require.Equal(t, "seismo_rules_last_reload_successful 1", metricLine(t, base, "seismo_rules_last_reload_successful"))

	require.NoError(t, os.WriteFile(rulesPath, []byte("groups: [{name: g, rules: [{alert: Always, expr: 'vector(1) >'}]}]\n"), 0o600))
	failed := p.waitLog(t, "rules not reloaded, keeping the running ones")
	require.Contains(t, failed["err"], "always.yml:1:50: group \"g\", rule 1 \"Always\": expr:")
	require.Equal(t, "seismo_rules_last_reload_successful 0", metricLine(t, base, "seismo_rules_last_reload_successful"))
	code, body := do(t, "GET", base+"/api/v1/rules")
	require.Equal(t, 200, code)
	require.Contains(t, body, `"query":"vector(1) \u003e 0"`, "the old rule keeps running")

	require.NoError(t, os.WriteFile(rulesPath, []byte("groups: [{name: g, rules: [{alert: Always, expr: 'vector(2) > 0'}]}]\n"), 0o600))
	p.waitLog(t, "rules loaded")
	require.Equal(t, "seismo_rules_last_reload_successful 1", metricLine(t, base, "seismo_rules_last_reload_successful"))

	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 0, p.wait(t))
}
