package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seismo-agent/seismo/internal/demo"
)

// demoE2EEnv gates TestDemoEndToEnd: it runs the full story, about eight
// minutes of real time.
const demoE2EEnv = "SEISMO_DEMO_E2E"

// TestDemoEndToEnd runs the demo story at full length with a real
// Alertmanager (Debian's prometheus-alertmanager) among the receivers, and
// checks for each outage that the expected alert is detected within its
// delay with an explanation naming the right signals, that drafts are
// written, that the alert reaches Alertmanager and comes out of its webhook,
// and that no alert fires in the normal phases. Set SEISMO_DEMO_E2E=1 to run
// it; under CI=true a missing Alertmanager is then a failure.
func TestDemoEndToEnd(t *testing.T) {
	if os.Getenv(demoE2EEnv) != "1" {
		t.Skipf("set %s=1 to run the eight-minute demo story end to end", demoE2EEnv)
	}
	amBin := ""
	for _, name := range []string{"prometheus-alertmanager", "alertmanager"} {
		if p, err := exec.LookPath(name); err == nil {
			amBin = p
			break
		}
	}
	if amBin == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("prometheus-alertmanager is required under CI=true")
		}
		t.Skip("prometheus-alertmanager not installed")
	}

	// What comes out of Alertmanager's own webhook.
	fromAM := demo.NewReceiver(nil)
	amHookLn, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	hook := &http.Server{Handler: fromAM, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = hook.Serve(amHookLn) }()
	defer hook.Close()
	var (
		mu    sync.Mutex
		viaAM []string
	)
	go func() {
		for {
			select {
			case ev := <-fromAM.Events():
				if ev.Alert != nil && ev.Alert.Status == "firing" {
					mu.Lock()
					viaAM = append(viaAM, ev.Alert.Labels["alertname"])
					mu.Unlock()
				}
			case <-t.Context().Done():
				return
			}
		}
	}()

	amURL := startAlertmanager(t, amBin, "http://"+amHookLn.Addr().String()+"/")

	dir := t.TempDir()
	var out syncBuffer
	sum, err := runDemo(t.Context(), &out, &out, demoRunOptions{
		interval: time.Second,
		story: demo.StoryOptions{WarmUp: 75 * time.Second, Normal: 20 * time.Second, Outage: 60 * time.Second,
			Recovery: 40 * time.Second, SurgeRamp: 10 * time.Second},
		rate:            50,
		alertsFile:      filepath.Join(dir, "alerts.jsonl"),
		agentLog:        filepath.Join(dir, "agent.log"),
		alertmanagerURL: amURL,
	})
	t.Logf("demo output:\n%s", out.String())
	require.NoError(t, err)

	want := map[string]struct {
		within  time.Duration
		signals []string
	}{
		demo.OutageSaturation: {45 * time.Second, []string{"symptom", "resource"}},
		demo.OutageStorm:      {45 * time.Second, []string{"limited_share"}},
		demo.OutageSurge:      {60 * time.Second, []string{"requests", "latency"}},
	}
	require.Len(t, sum.Outages, len(want))
	for _, r := range sum.Outages {
		w := want[r.Outage]
		require.True(t, r.Detected, r.Outage)
		require.Contains(t, r.Expected, r.Alert, r.Outage)
		require.LessOrEqual(t, r.DetectedAfter, w.within, r.Outage)
		require.NotNil(t, r.Explanation, r.Outage)
		var names []string
		for _, s := range r.Explanation.Signals {
			names = append(names, s.Name)
		}
		for _, s := range w.signals {
			require.Contains(t, names, s, r.Outage)
		}
		require.Positive(t, r.Drafts, r.Outage)
		if r.Outage == demo.OutageSaturation {
			require.True(t, r.Resolved, "the pool-shrink alert resolves after the fix")
		}
	}
	require.Empty(t, sum.FalseAlerts)

	// Alertmanager forwards with group_wait 1s: give it a bounded moment.
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		mu.Lock()
		got := slices.Clone(viaAM)
		mu.Unlock()
		missing := 0
		for _, r := range sum.Outages {
			if !slices.Contains(got, r.Alert) {
				missing++
			}
		}
		if missing == 0 {
			break
		}
		require.True(t, time.Now().Before(deadline), "alerts out of Alertmanager: %v", got)
		<-tick.C
	}
}

// startAlertmanager runs Alertmanager on a loopback port, forwarding every
// alert to hookURL, and returns its URL once it is ready.
func startAlertmanager(t *testing.T, bin, hookURL string) string {
	t.Helper()
	dir := t.TempDir()
	cfg := fmt.Sprintf(`route:
  receiver: hook
  group_by: [alertname]
  group_wait: 1s
  group_interval: 5s
  repeat_interval: 1h
receivers:
  - name: hook
    webhook_configs:
      - url: %q
        send_resolved: true
`, hookURL)
	cfgFile := filepath.Join(dir, "alertmanager.yml")
	require.NoError(t, os.WriteFile(cfgFile, []byte(cfg), 0o600))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close() // Alertmanager binds it; the window for a clash is tiny
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--config.file="+cfgFile, "--storage.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--cluster.listen-address=")
	var logs syncBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
	})
	url := "http://" + addr
	deadline := time.Now().Add(20 * time.Second)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		resp, err := http.Get(url + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return url
			}
		}
		require.True(t, time.Now().Before(deadline), "alertmanager not ready:\n%s", logs.String())
		<-tick.C
	}
}
