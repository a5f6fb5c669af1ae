package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
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
