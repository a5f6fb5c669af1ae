package main

// End-to-end tests of seismo on a remote datasource: the real binary
// against real VictoriaMetrics, Prometheus and Alertmanager processes on
// loopback ports with temporary data directories.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seismo-agent/seismo/internal/testlog"
	"github.com/seismo-agent/seismo/notify/webhook"
)

// needBinary returns path if it exists; otherwise the test skips, or fails
// under CI=true.
func needBinary(t *testing.T, path string) string {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is required under CI=true: %v", path, err)
		}
		t.Skipf("%s not installed", path)
	}
	return path
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

// startServer runs an external server and waits until GET url+ready
// answers 200. Its log is shown if the test fails.
func startServer(t *testing.T, name, readyURL string, args ...string) {
	t.Helper()
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	var logs testlog.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("%s log:\n%s", name, logs.String())
		}
	})
	waitFor(t, time.Minute, name+" ready", func() bool {
		resp, err := http.Get(readyURL)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// waitFor polls cond on a ticker; the bound only guards against a hung
// test.
func waitFor(t *testing.T, bound time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(bound)
	defer deadline.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			t.Fatalf("%s: not within %v", what, bound)
		case <-tick.C:
		}
	}
}

// startVictoriaMetrics runs VictoriaMetrics single-node and returns its URL.
// Recent samples are visible at once (no latency offset, no result cache),
// so the test can write and read in the same second.
func startVictoriaMetrics(t *testing.T) string {
	t.Helper()
	bin := needBinary(t, "/usr/bin/victoria-metrics")
	addr := freeAddr(t)
	startServer(t, bin, "http://"+addr+"/health",
		"-httpListenAddr="+addr, "-storageDataPath="+filepath.Join(t.TempDir(), "vm"),
		"-retentionPeriod=100y", "-search.latencyOffset=0s", "-search.disableCache", "-loggerLevel=ERROR")
	return "http://" + addr
}

// vmImport writes samples of one series through VictoriaMetrics' JSON
// line import API and flushes them to search.
func vmImport(t *testing.T, vm string, metric map[string]string, ts []time.Time, vs []float64) {
	t.Helper()
	line := struct {
		Metric     map[string]string `json:"metric"`
		Values     []float64         `json:"values"`
		Timestamps []int64           `json:"timestamps"`
	}{Metric: metric, Values: vs}
	for _, x := range ts {
		line.Timestamps = append(line.Timestamps, x.UnixMilli())
	}
	b, err := json.Marshal(line)
	require.NoError(t, err)
	resp, err := http.Post(vm+"/api/v1/import", "application/json", bytes.NewReader(b))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	resp, err = http.Get(vm + "/internal/force_flush")
	require.NoError(t, err)
	resp.Body.Close()
}

// hookReceiver is a webhook receiver that records every alert of every
// delivery.
type hookReceiver struct {
	mu     sync.Mutex
	alerts []webhook.Alert
	url    string
}

func newHookReceiver(t *testing.T) *hookReceiver {
	h := &hookReceiver{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m webhook.Message
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		h.mu.Lock()
		h.alerts = append(h.alerts, m.Alerts...)
		h.mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	h.url = srv.URL + "/"
	return h
}

// received returns the alerts received with alertname and status.
func (h *hookReceiver) received(name, status string) []webhook.Alert {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []webhook.Alert
	for _, a := range h.alerts {
		if a.Labels["alertname"] == name && a.Status == status {
			out = append(out, a)
		}
	}
	return out
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", url, b)
	require.NoError(t, json.Unmarshal(b, v), "%s", b)
}

type apiRule struct {
	Name      string `json:"name"`
	Health    string `json:"health"`
	LastError string `json:"lastError"`
	Detector  *struct {
		Series    int `json:"series"`
		WarmingUp int `json:"warmingUp"`
	} `json:"detector"`
}

func agentRules(t *testing.T, base string) map[string]apiRule {
	t.Helper()
	var resp struct {
		Data struct {
			Groups []struct {
				Rules []apiRule `json:"rules"`
			} `json:"groups"`
		} `json:"data"`
	}
	getJSON(t, base+"/api/v1/rules", &resp)
	out := map[string]apiRule{}
	for _, g := range resp.Data.Groups {
		for _, r := range g.Rules {
			out[r.Name] = r
		}
	}
	return out
}

func alertStates(t *testing.T, base string) map[string]string {
	t.Helper()
	var resp struct {
		Data struct {
			Alerts []struct {
				Labels map[string]string `json:"labels"`
				State  string            `json:"state"`
			} `json:"alerts"`
		} `json:"data"`
	}
	getJSON(t, base+"/api/v1/alerts", &resp)
	out := map[string]string{}
	for _, a := range resp.Data.Alerts {
		out[a.Labels["alertname"]] = a.State
	}
	return out
}

// metricValue sums the samples of a metric on the agent's /metrics whose
// line starts with prefix.
func metricValue(t *testing.T, base, prefix string) float64 {
	t.Helper()
	_, body := do(t, "GET", base+"/metrics")
	sum := 0.0
	for line := range strings.Lines(body) {
		if strings.HasPrefix(line, prefix) {
			f := strings.Fields(line)
			v, err := strconv.ParseFloat(f[len(f)-1], 64)
			require.NoError(t, err)
			sum += v
		}
	}
	return sum
}

const remoteAgentConfig = `data_dir: state
http:
  listen_address: 127.0.0.1:0
  enable_lifecycle: true
log:
  format: json
collectors:
  host: {enabled: false}
  cgroup: {enabled: false}
datasources:
  remote:
    - name: central
      url: %s
      timeout: 10s
rules:
  datasource: central
  files: [rules.yml]
  evaluation_interval: 1s
  resend_delay: 2s
  warm_start: 10m
  builtin:
    interval: 1s
    metrics: {selector: 'job="shop"'}
notify:
  route:
    receiver: hook
    group_by: ['...']
    group_wait: 100ms
    group_interval: 1s
    repeat_interval: 1h
  receivers:
    - name: hook
      webhook_configs: [{url: %q}]
`

// The mad detector needs warm_up samples before it judges: 300 at a 1s
// interval is five minutes that only a warm start can skip.
const remoteRules = `groups:
  - name: shop
    interval: 1s
    rules:
      - anomaly: LatencyAnomaly
        expr: latency_seconds{job="shop"}
        detector: {type: mad, warm_up: 300, half_life: 5000}
        labels: {severity: page}
`

// TestRemoteWarmStartAndRestart runs the agent on VictoriaMetrics with no
// local collection: a datasource URL fixed by a reload (no restart), the
// built-in pack and a user rule evaluated through the remote API, a
// detector judging from its first evaluation thanks to the warm start, and
// a restart in the middle of the incident that keeps the alert firing
// without a second page.
func TestRemoteWarmStartAndRestart(t *testing.T) {
	bin := buildSeismo(t)
	vm := startVictoriaMetrics(t)
	series := map[string]string{"__name__": "latency_seconds", "job": "shop", "instance": "web-1"}
	normal := func(i int) float64 { return 0.1 + 0.01*math.Sin(float64(i)*0.7) + 0.005*math.Sin(float64(i)*1.9) }
	// Ten minutes of normal history at 1s.
	now := time.Now().Truncate(time.Second)
	var ts []time.Time
	var vs []float64
	for i := 600; i > 0; i-- {
		ts = append(ts, now.Add(-time.Duration(i)*time.Second))
		vs = append(vs, normal(i))
	}
	vmImport(t, vm, series, ts, vs)
	// Live samples every second; incident switches the level.
	var incident atomic.Bool
	feedCtx, stopFeed := context.WithCancel(context.Background())
	feedDone := make(chan struct{})
	go func() {
		defer close(feedDone)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for i := 0; ; i++ {
			v := normal(i)
			if incident.Load() {
				v = 1 + normal(i)
			}
			vmImport(t, vm, series, []time.Time{time.Now()}, []float64{v})
			select {
			case <-feedCtx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	defer func() { stopFeed(); <-feedDone }()

	hook := newHookReceiver(t)
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "seismo.yml")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "rules.yml"), []byte(remoteRules), 0o600))
	// First with a datasource nobody serves.
	require.NoError(t, os.WriteFile(cfgPath, []byte(fmt.Sprintf(remoteAgentConfig, "http://"+freeAddr(t), hook.url)), 0o600))

	p := startSeismo(t, bin, dir, nil, "run", "--config", cfgPath)
	base := "http://" + p.waitLog(t, "agent ready")["listen_address"].(string)
	waitFor(t, time.Minute, "evaluation failures against the wrong URL", func() bool {
		return metricValue(t, base, `seismo_rules_group_evaluation_failures_total{file="`+filepath.Join(dir, "rules.yml")) > 0
	})

	// Fix the URL; reload, no restart.
	require.NoError(t, os.WriteFile(cfgPath, []byte(fmt.Sprintf(remoteAgentConfig, vm, hook.url)), 0o600))
	code, body := do(t, "POST", base+"/-/reload")
	require.Equal(t, 200, code, body)
	waitFor(t, time.Minute, "LatencyAnomaly evaluated through VictoriaMetrics", func() bool {
		r := agentRules(t, base)["LatencyAnomaly"]
		return r.Health == "ok" && r.Detector != nil && r.Detector.Series == 1
	})
	r := agentRules(t, base)["LatencyAnomaly"]
	require.Zero(t, r.Detector.WarmingUp, "warm start: the detector judges from its first evaluation, not after 300")
	require.Positive(t, metricValue(t, base, `seismo_rules_group_warm_starts_total{file="`+filepath.Join(dir, "rules.yml")))
	// The built-in pack too evaluates through VictoriaMetrics, without
	// errors (each rule's last error clears at its next evaluation).
	waitFor(t, time.Minute, "every rule evaluated without error", func() bool {
		rs := agentRules(t, base)
		for _, r := range rs {
			if r.Health != "ok" || r.LastError != "" {
				return false
			}
		}
		_, builtin := rs["SaturationWithoutCPU"]
		return builtin
	})
	// Nothing is collected locally: the embedded store is empty.
	var labelsResp struct {
		Data []string `json:"data"`
	}
	getJSON(t, base+"/api/v1/labels", &labelsResp)
	require.Empty(t, labelsResp.Data, "no local scraping")

	incident.Store(true)
	waitFor(t, time.Minute, "LatencyAnomaly paged", func() bool { return len(hook.received("LatencyAnomaly", "firing")) > 0 })
	first := hook.received("LatencyAnomaly", "firing")[0]
	require.NotEmpty(t, first.Seismo.IncidentKey)

	// Restart mid-incident, same data directory.
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 0, p.wait(t))
	p = startSeismo(t, bin, dir, nil, "run", "--config", cfgPath)
	base = "http://" + p.waitLog(t, "agent ready")["listen_address"].(string)
	evals := `seismo_rules_group_evaluations_total{file="` + filepath.Join(dir, "rules.yml")
	waitFor(t, time.Minute, "ten evaluations after the restart", func() bool { return metricValue(t, base, evals) >= 10 })
	require.Equal(t, "firing", alertStates(t, base)["LatencyAnomaly"], "the alert keeps firing across the restart")
	require.Len(t, hook.received("LatencyAnomaly", "firing"), 1, "one page for one incident, restart or not")
	require.Empty(t, hook.received("LatencyAnomaly", "resolved"))
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 0, p.wait(t))
}

// startPrometheus runs Prometheus scraping target every second and returns
// its URL.
func startPrometheus(t *testing.T, target string) string {
	t.Helper()
	bin := needBinary(t, "/usr/bin/prometheus")
	addr := freeAddr(t)
	dir := t.TempDir()
	cfg := fmt.Sprintf("global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: shop\n    static_configs:\n      - targets: [%q]\n", target)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o600))
	startServer(t, bin, "http://"+addr+"/-/ready",
		"--web.listen-address="+addr, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--config.file="+filepath.Join(dir, "prometheus.yml"), "--log.level=warn")
	return "http://" + addr
}

// startAlertmanager runs Alertmanager from bin on a loopback port,
// forwarding every alert to hookURL with the given group interval, and
// returns its URL once it is ready.
func startAlertmanager(t *testing.T, bin, hookURL string, groupInterval time.Duration) string {
	t.Helper()
	addr := freeAddr(t)
	dir := t.TempDir()
	cfg := fmt.Sprintf(`route:
  receiver: hook
  group_by: [alertname]
  group_wait: 1s
  group_interval: %s
  repeat_interval: 1h
receivers:
  - name: hook
    webhook_configs:
      - url: %q
        send_resolved: true
`, groupInterval, hookURL)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "am.yml"), []byte(cfg), 0o600))
	startServer(t, bin, "http://"+addr+"/-/ready",
		"--config.file="+filepath.Join(dir, "am.yml"), "--storage.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--cluster.listen-address=")
	return "http://" + addr
}

const haAgentConfig = `data_dir: state
http:
  listen_address: 127.0.0.1:0
log:
  format: json
collectors:
  host: {enabled: false}
  cgroup: {enabled: false}
datasources:
  remote: [{name: prom, url: %q}]
rules:
  datasource: prom
  files: [rules.yml]
  resend_delay: 2s
  # Both replicas read samples already committed: they see the same data
  # at the same tick, so their alerts start together (one incident key).
  query_offset: 2s
  external_labels: {cluster: test, replica: %s}
  replica_label: replica
  builtin: {enabled: false}
notify:
  route:
    receiver: both
    group_by: ['...']
    group_wait: 100ms
    group_interval: 1s
    repeat_interval: 30s
  receivers:
    - name: both
      webhook_configs: [{url: %q}]
      alertmanager_configs: [{urls: [%q], ends_at_ahead: 1m}]
`

const haRules = `groups:
  - name: shop
    interval: 1s
    rules:
      - alert: QueueDeep
        expr: queue_depth{job="shop"} > 50
        labels: {severity: page}
`

// TestHAPairOnePage runs two replicas with the same rules on the same
// Prometheus, both sending to one real Alertmanager and to a webhook: the
// replica label stays off the alerts, so Alertmanager holds one alert and
// pages once per incident (firing and resolved), and the webhook gets the
// same incident key from both replicas, each naming itself.
func TestHAPairOnePage(t *testing.T) {
	bin := buildSeismo(t)
	var depth atomic.Int64
	depth.Store(1)
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "# TYPE queue_depth gauge\nqueue_depth %d\n", depth.Load())
	}))
	defer target.Close()
	prom := startPrometheus(t, strings.TrimPrefix(target.URL, "http://"))
	fromAM := newHookReceiver(t)
	am := startAlertmanager(t, needBinary(t, "/usr/bin/prometheus-alertmanager"), fromAM.url, 3*time.Second)
	direct := newHookReceiver(t)

	var bases []string
	evals := func() float64 {
		n := 0.0
		for _, b := range bases {
			n += metricValue(t, b, "seismo_rules_group_evaluations_total")
		}
		return n
	}
	for _, replica := range []string{"a", "b"} {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, "rules.yml"), []byte(haRules), 0o600))
		cfgPath := filepath.Join(dir, "seismo.yml")
		require.NoError(t, os.WriteFile(cfgPath, []byte(fmt.Sprintf(haAgentConfig, prom, replica, direct.url, am)), 0o600))
		p := startSeismo(t, bin, dir, nil, "run", "--config", cfgPath)
		bases = append(bases, "http://"+p.waitLog(t, "agent ready")["listen_address"].(string))
	}
	for _, b := range bases {
		waitFor(t, time.Minute, "QueueDeep evaluated through Prometheus", func() bool {
			r := agentRules(t, b)["QueueDeep"]
			return r.Health == "ok" && r.LastError == ""
		})
	}

	depth.Store(100)
	waitFor(t, time.Minute, "both replicas sent QueueDeep", func() bool { return len(direct.received("QueueDeep", "firing")) >= 2 })
	got := direct.received("QueueDeep", "firing")
	replicas := map[string]bool{}
	for _, a := range got {
		replicas[a.Seismo.Replica] = true
		require.Equal(t, got[0].Seismo.IncidentKey, a.Seismo.IncidentKey, "one incident key from both replicas")
		require.Equal(t, "test", a.Labels["cluster"], "external label")
		require.NotContains(t, a.Labels, "replica")
	}
	require.Equal(t, map[string]bool{"a": true, "b": true}, replicas)
	waitFor(t, time.Minute, "Alertmanager paged", func() bool { return len(fromAM.received("QueueDeep", "firing")) > 0 })
	// Let both replicas re-send a few times (resend_delay 2s) past
	// Alertmanager's group_interval (3s): a second alert would page again.
	mark := evals()
	waitFor(t, time.Minute, "both replicas evaluated 8 more times", func() bool { return evals() >= mark+16 })
	var amAlerts []json.RawMessage
	getJSON(t, am+"/api/v2/alerts", &amAlerts)
	require.Len(t, amAlerts, 1, "Alertmanager holds one alert for both replicas")
	require.Len(t, fromAM.received("QueueDeep", "firing"), 1, "one page per incident")

	depth.Store(1)
	waitFor(t, time.Minute, "Alertmanager sent the resolve", func() bool { return len(fromAM.received("QueueDeep", "resolved")) > 0 })
	mark = evals()
	waitFor(t, time.Minute, "both replicas evaluated 8 more times", func() bool { return evals() >= mark+16 })
	require.Len(t, fromAM.received("QueueDeep", "resolved"), 1, "one resolve per incident")
	require.Len(t, fromAM.received("QueueDeep", "firing"), 1, "no page after the resolve")
}
