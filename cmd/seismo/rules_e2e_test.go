package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

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

// detectorCounts is a rule's detector as /api/v1/rules reports it.
type detectorCounts struct{ Series, Dormant, WarmingUp int }

// startScraping runs the binary scraping target every second into the
// rule file ruleFile, evaluated every second, logging JSON at logLevel;
// rulesExtra adds lines to the rules section. It returns the process and
// its base URL.
func startScraping(t *testing.T, target *httptest.Server, logLevel, rulesExtra, ruleFile string) (*proc, string) {
	t.Helper()
	bin := buildSeismo(t)
	u, err := url.Parse(target.URL)
	require.NoError(t, err)
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "seismo.yml")
	require.NoError(t, os.WriteFile(cfgPath, []byte(fmt.Sprintf(`data_dir: state
http:
  listen_address: 127.0.0.1:0
log: {format: json, level: %s}
collectors:
  scrape_interval: 1s
  scrape_timeout: 1s
  host: {enabled: false}
  cgroup: {enabled: false}
  scrape_configs:
    - job_name: app
      static_configs: [{targets: [%q]}]
rules:
  files: [rules.yml]
  evaluation_interval: 1s
  builtin: {enabled: false}
%s`, logLevel, u.Host, rulesExtra)), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "rules.yml"), []byte(ruleFile), 0o600))
	p := startSeismo(t, bin, dir, nil, "run", "--config", cfgPath)
	ready := p.waitLog(t, "agent ready")
	return p, "http://" + ready["listen_address"].(string)
}

// ruleDetectors returns the detector of each rule of the agent's one
// group.
func ruleDetectors(t *testing.T, base string) []detectorCounts {
	t.Helper()
	code, body := do(t, "GET", base+"/api/v1/rules")
	require.Equal(t, 200, code, body)
	var resp struct {
		Data struct {
			Groups []struct {
				Rules []struct {
					Detector *detectorCounts `json:"detector"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &resp), body)
	require.Len(t, resp.Data.Groups, 1, body)
	var out []detectorCounts
	for _, r := range resp.Data.Groups[0].Rules {
		require.NotNil(t, r.Detector, body)
		out = append(out, *r.Detector)
	}
	return out
}

// waitDetectors polls the rules' detectors until ok accepts them, and
// returns them. The deadline only guards against a hung test.
func waitDetectors(t *testing.T, base, what string, ok func([]detectorCounts) bool) []detectorCounts {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ds := ruleDetectors(t, base)
		if ok(ds) {
			return ds
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: the detectors stayed at %+v", what, ds)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// warm reports whether every rule's detector has its series and judges.
func warm(ds []detectorCounts) bool {
	for _, d := range ds {
		if d.Series != 1 || d.WarmingUp != 0 {
			return false
		}
	}
	return true
}

// TestBinaryDetectorSurvivesTargetOutage scrapes a loopback target
// every second into an auto rule (warm-up of 5 samples), takes the target
// down for longer than series_grace (2s) and brings it back. While it is
// down the rule's detector is dormant, not forgotten; back, the series is
// judged at once instead of warming up again.
func TestBinaryDetectorSurvivesTargetOutage(t *testing.T) {
	var down atomic.Bool
	var n atomic.Int64
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if down.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintf(w, "queue_length %d\n", 5+n.Add(1)%3)
	}))
	t.Cleanup(target.Close)
	p, base := startScraping(t, target, "info", "  series_grace: 2s\n  series_retention: 1h\n",
		"groups: [{name: g, rules: [{anomaly: Queue, expr: queue_length, detector: {type: auto, warm_up: 5}}]}]\n")

	waitDetectors(t, base, "warm", warm)
	down.Store(true)
	waitDetectors(t, base, "dormant", func(ds []detectorCounts) bool { return ds[0].Series == 0 && ds[0].Dormant == 1 })
	code, body := do(t, "GET", base+"/metrics")
	require.Equal(t, 200, code)
	require.Contains(t, body, `seismo_rules_detectors{state="dormant"} 1`)

	down.Store(false)
	back := waitDetectors(t, base, "back", func(ds []detectorCounts) bool { return ds[0].Series == 1 })
	require.Equal(t, detectorCounts{Series: 1}, back[0], "woken with what it had learnt, not warming up")
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 0, p.wait(t))
}

// TestBinaryRestartMaskRecipe checks the recipe docs/rules.md gives for
// restarts: a rule whose expression drops its series while the target's
// process_start_time_seconds is recent neither pages the restart nor
// learns it. The target restarts (its start time moves to now, and its
// queue reads 0 for three seconds, far below its 5 to 7): the plain rule
// pages the drop, the masked one stays quiet.
func TestBinaryRestartMaskRecipe(t *testing.T) {
	var mu sync.Mutex
	start, zeroUntil := float64(time.Now().Add(-time.Hour).Unix()), time.Time{}
	var n atomic.Int64
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		q := 5 + n.Add(1)%3
		if time.Now().Before(zeroUntil) {
			q = 0
		}
		fmt.Fprintf(w, "queue_length %d\nprocess_start_time_seconds %g\n", q, start)
	}))
	t.Cleanup(target.Close)
	p, base := startScraping(t, target, "debug", "", `groups:
  - name: g
    rules:
      - anomaly: Queue
        expr: queue_length
        detector: {type: auto, warm_up: 5}
      - anomaly: QueueMasked
        expr: queue_length unless on(instance) (time() - process_start_time_seconds < 6)
        detector: {type: auto, warm_up: 5}
`)
	// Every alert handed to the notifier, read off the debug log (which
	// must be drained as it comes).
	sent := make(chan string, 64)
	go func() {
		defer close(sent)
		for m := range p.logs {
			if m["msg"] == "alert sent" && m["state"] == "firing" {
				sent <- m["alertname"].(string)
			}
		}
	}()
	waitDetectors(t, base, "warm", warm)

	mu.Lock()
	start, zeroUntil = float64(time.Now().Unix()), time.Now().Add(3*time.Second)
	mu.Unlock()
	var got []string
	quiet := time.After(12 * time.Second) // the mask's 6 s and more
	for done := false; !done; {
		select {
		case name := <-sent:
			got = append(got, name)
		case <-quiet:
			done = true
		}
	}
	require.Contains(t, got, "Queue", "the restart's zeros page the plain rule")
	require.NotContains(t, got, "QueueMasked", "the masked rule pages nothing")
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 0, p.wait(t))
}
