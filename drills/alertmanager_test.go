package drills

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const alertmanagerBin = "/usr/bin/prometheus-alertmanager"

// amProc is a real Alertmanager on a fixed loopback port.
type amProc struct {
	cmd  *exec.Cmd
	base string
}

func startAlertmanager(t *testing.T, dir string, port int) *amProc {
	t.Helper()
	if _, err := os.Stat(alertmanagerBin); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is required under CI=true: %v", alertmanagerBin, err)
		}
		t.Skipf("%s not installed", alertmanagerBin)
	}
	cfg := filepath.Join(dir, "am.yml")
	require.NoError(t, os.WriteFile(cfg, []byte("route:\n  receiver: \"null\"\nreceivers:\n  - name: \"null\"\n"), 0o600))
	logf, err := os.OpenFile(filepath.Join(dir, "am.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	require.NoError(t, err)
	defer logf.Close()
	cmd := exec.Command(alertmanagerBin, fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port), "--cluster.listen-address=",
		"--storage.path="+dir, "--config.file="+cfg)
	cmd.Stdout, cmd.Stderr = logf, logf
	require.NoError(t, cmd.Start())
	am := &amProc{cmd: cmd, base: fmt.Sprintf("http://127.0.0.1:%d", port)}
	t.Cleanup(am.kill)
	require.Eventually(t, func() bool {
		resp, err := http.Get(am.base + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, time.Minute, 50*time.Millisecond, "alertmanager did not become ready")
	return am
}

func (am *amProc) kill() {
	if am.cmd.ProcessState == nil {
		_ = am.cmd.Process.Kill()
		_ = am.cmd.Wait()
	}
}

// active returns the sorted ids of the alerts Alertmanager holds active.
func (am *amProc) active(t *testing.T) []string {
	t.Helper()
	resp, err := http.Get(am.base + "/api/v2/alerts?active=true&silenced=true&inhibited=true&unprocessed=true")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var alerts []struct {
		Labels map[string]string `json:"labels"`
		EndsAt time.Time         `json:"endsAt"`
		Status struct {
			State string `json:"state"`
		} `json:"status"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&alerts))
	var ids []string
	now := time.Now()
	for _, a := range alerts {
		if a.Status.State == "active" && a.EndsAt.After(now) {
			ids = append(ids, a.Labels["id"])
		}
	}
	sort.Strings(ids)
	return ids
}

// TestDrillAlertmanagerRestart sends alerts to a real Alertmanager, kills
// it with SIGKILL (it keeps alerts in memory only), changes alerts while it
// is down, and restarts it. Once the agent re-sends, Alertmanager must hold
// exactly the alerts that are firing: none lost, none left over.
func TestDrillAlertmanagerRestart(t *testing.T) {
	down := time.Duration(size(3, 15)) * time.Second
	amDir := t.TempDir()
	port := freePort(t)
	am := startAlertmanager(t, amDir, port)

	tg := newTarget(t)
	notifyCfg := fmt.Sprintf(`  route:
    receiver: am
    group_by: ['...']
    group_wait: 0s
    group_interval: 1s
    repeat_interval: 5s
  receivers:
    - name: am
      alertmanager_configs:
        - urls: [http://127.0.0.1:%d]
          ends_at_ahead: 1m
          timeout: 2s
`, port)
	cfgText := agentConfig(tg, "http://127.0.0.1:1/unused", nil)
	i, j := strings.Index(cfgText, "  route:"), strings.Index(cfgText, "  min_backoff:")
	cfgText = cfgText[:i] + notifyCfg + cfgText[j:]
	dir, cfg := writeAgentFiles(t, cfgText)
	a := startAgent(t, dir, cfg)

	want := func() []string {
		var ids []string
		for id, on := range tg.state() {
			if on {
				ids = append(ids, id)
			}
		}
		sort.Strings(ids)
		return ids
	}
	converge := func(d time.Duration) bool {
		deadline := time.Now().Add(d)
		for time.Now().Before(deadline) {
			if slices.Equal(am.active(t), want()) {
				return true
			}
			time.Sleep(200 * time.Millisecond)
		}
		return false
	}
	for i := range 5 {
		tg.set(fmt.Sprintf("a%d", i), true)
	}
	require.True(t, converge(time.Minute), "alerts did not reach alertmanager: have %v, want %v", am.active(t), want())

	am.kill()
	tg.set("a0", false)
	tg.set("a1", false)
	for i := range 3 {
		tg.set(fmt.Sprintf("b%d", i), true)
	}
	time.Sleep(down)
	am = startAlertmanager(t, amDir, port)
	restarted := time.Now()
	converged := converge(time.Minute)
	took := time.Since(restarted)
	have := am.active(t)
	require.True(t, a.alive())
	require.Equal(t, 0, a.stop())

	lost, extra := 0, 0
	for _, id := range want() {
		if !slices.Contains(have, id) {
			lost++
		}
	}
	for _, id := range have {
		if !slices.Contains(want(), id) {
			extra++
		}
	}
	if !converged {
		t.Logf("alertmanager holds %v, want %v", have, want())
	}
	report(t, "alertmanager-restart", fmt.Sprintf("SIGKILLed Alertmanager holding 5 alerts, resolved 2 and fired 3 while it was down for %s, restarted it", down),
		lost, extra, fmt.Sprintf("Alertmanager matched the agent %s after its restart", took.Round(100*time.Millisecond)))
}
