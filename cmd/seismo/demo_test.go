package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seismo-agent/seismo/demo"
	"github.com/seismo-agent/seismo/internal/testlog"
)

// TestDemoRun runs the whole demo with phases too short for detection: it
// checks that the service, receiver, agent and load start on loopback, that
// every phase and the summary are narrated, and that everything stops.
// Detection itself is measured by the full-length demo (docs/demo.md).
func TestDemoRun(t *testing.T) {
	dir := t.TempDir()
	agentLog := filepath.Join(dir, "agent.log")
	code, stdout, stderr := cli(t, "demo", "--warm-up=500ms", "--normal=300ms", "--look-alike=300ms",
		"--outage=1s", "--recovery=300ms", "--alerts-file="+filepath.Join(dir, "alerts.jsonl"), "--agent-log="+agentLog)
	require.Contains(t, []int{0, 1}, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	if code == 1 {
		require.Contains(t, stderr, "outage(s) missed")
	}
	for _, want := range []string{
		"seismo demo: service http://127.0.0.1:", "agent http://127.0.0.1:", "receiver http://127.0.0.1:",
		"== warm-up", "== look-alike", "== outage 1", "== outage 2", "== outage 3", "fault removed",
		"== summary", "saturation without CPU (pool-shrink)", "rate-limit storm (limiter-global)",
		"surge and saturation (5x load)", "false alerts during warm-up and normal phases:",
		"process (service + load + agent): CPU",
	} {
		require.Contains(t, stdout, want)
	}
	log, err := os.ReadFile(agentLog)
	require.NoError(t, err)
	require.Contains(t, string(log), "agent ready")
	// The log and the data directory outlast the agent: it logs its stop,
	// and its last store snapshot finds its directory (the demo once
	// removed both first: "store snapshot failed ... no such file").
	require.Contains(t, string(log), `msg="agent stopped"`)
	require.NotRegexp(t, `level=(WARN|ERROR)`, string(log))
}

func TestDemoServiceAndLoad(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hits.Add(1)%4 == 0 {
			http.Error(w, "slow down", http.StatusTooManyRequests)
		}
	}))
	defer srv.Close()
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"load runs and stops by itself", []string{"demo", "load", "--target", srv.URL, "--rate", "200", "--duration", "300ms", "--report-every", "0"}, 0, "done: sent=", ""},
		{"load needs a URL", []string{"demo", "load", "--target", "localhost", "--duration", "1s"}, 1, "", "target: want an http(s) URL"},
		{"service refuses an unknown fault", []string{"demo", "service", "--listen", "127.0.0.1:0", "--fault", "meteor"}, 1, "", `unknown fault "meteor"`},
		{"service validates options", []string{"demo", "service", "--listen", "127.0.0.1:0", "--workers=-1"}, 1, "", "workers: must be at least 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := cli(t, tt.args...)
			require.Equal(t, tt.code, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
			require.Contains(t, stdout, tt.stdout)
			require.Contains(t, stderr, tt.stderr)
			if tt.code == 0 {
				require.True(t, strings.Contains(stdout, "429=") && hits.Load() > 0)
			}
		})
	}
}

// TestSidecarConfigAgainstDemoService runs the agent with the Kubernetes
// sidecar's config against the demo service on loopback, as the sidecar runs
// next to its application. Only what the pod provides differs: the
// application's address, the state directory, the listen address, and the
// intervals (1s instead of 15s, to keep the test short).
func TestSidecarConfigAgainstDemoService(t *testing.T) {
	svc, err := demo.NewService(demo.Options{})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- svc.Serve(ctx, ln) }()

	kube := filepath.Join("..", "..", "configs", "kubernetes")
	src, err := os.ReadFile(filepath.Join(kube, "seismo-sidecar.yml"))
	require.NoError(t, err)
	dir := t.TempDir()
	text := string(src)
	for _, r := range [][2]string{
		{"localhost:8080", ln.Addr().String()},
		{"data_dir: /var/lib/seismo", "data_dir: " + filepath.Join(dir, "state")},
		{"listen_address: 0.0.0.0:9797", "listen_address: 127.0.0.1:0"},
		{"15s", "1s"},
		{"timeout: 2s", "timeout: 500ms"},
		{"scrape_timeout: 10s", "scrape_timeout: 1s"},
	} {
		require.Contains(t, text, r[0], "the sidecar config changed; update this test")
		text = strings.ReplaceAll(text, r[0], r[1])
	}
	rules, err := os.ReadFile(filepath.Join(kube, "app.rules.yml"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "app.rules.yml"), rules, 0o600))
	cfgFile := filepath.Join(dir, "seismo.yml")
	require.NoError(t, os.WriteFile(cfgFile, []byte(text), 0o600))

	var logs testlog.Buffer
	a, err := newAgentFromFile(cfgFile, &logs)
	require.NoError(t, err)
	ran := make(chan error, 1)
	go func() { ran <- a.run(ctx) }()
	base := "http://" + a.web.Addr().String()
	client := &http.Client{Timeout: 2 * time.Second}
	defer client.CloseIdleConnections()

	get := func(path string) (int, string) {
		resp, err := client.Get(base + path)
		if err != nil {
			return 0, ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	// query returns the value of the single series q selects, or "".
	query := func(q string) string {
		_, body := get("/api/v1/query?query=" + url.QueryEscape(q))
		var r struct {
			Data struct {
				Result []struct {
					Value [2]any `json:"value"`
				} `json:"result"`
			} `json:"data"`
		}
		if json.Unmarshal([]byte(body), &r) != nil || len(r.Data.Result) != 1 {
			return ""
		}
		v, _ := r.Data.Result[0].Value[1].(string)
		return v
	}
	until := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for !cond() {
			require.True(t, time.Now().Before(deadline), "gave up waiting for %s; agent log:\n%s", what, logs.String())
			<-tick.C
		}
	}
	until("readiness", func() bool { code, _ := get("/-/ready"); return code == http.StatusOK })
	until("a scrape of the application", func() bool { return query(`up{job="app"}`) == "1" })
	until("a probe of its health endpoint", func() bool { return query(`probe_success{job="app-health"}`) == "1" })
	require.Equal(t, "8", query(`http_server_workers{job="app"}`))
	_, body := get("/api/v1/rules")
	for _, rule := range []string{"CheckoutSlow", "SaturationWithoutCPU", "RateLimitStorm", "TrafficSurgeSaturation"} {
		require.Contains(t, body, rule)
	}
	code, _ := get("/-/healthy")
	require.Equal(t, http.StatusOK, code)

	cancel()
	require.NoError(t, <-ran)
	require.NoError(t, <-served)
}
