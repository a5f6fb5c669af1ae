package main

import (
	"context"
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

	"github.com/seismo-agent/seismo/demo"
	"github.com/seismo-agent/seismo/internal/testlog"
)

// demoE2EEnv gates TestDemoEndToEnd: it runs the full story in real time.
const demoE2EEnv = "DEMO_E2E"

// demoE2EStory is the story TestDemoEndToEnd runs: 75s of warm-up, 20s of
// normal traffic, then three outages of 45s, each followed by 30s of
// recovery and 20s of normal traffic: 6m20s in all.
var demoE2EStory = demo.StoryOptions{WarmUp: 75 * time.Second, Normal: 20 * time.Second, Outage: 45 * time.Second,
	Recovery: 30 * time.Second, SurgeRamp: 10 * time.Second}

// demoE2ESlack bounds the time beyond the story's length that the run may
// take (start-up, Alertmanager, shutdown on a loaded machine): past it the
// test fails instead of hanging until the go test timeout.
const demoE2ESlack = 3 * time.Minute

// TestDemoEndToEnd runs the demo story at full length with a real
// Alertmanager (Debian's prometheus-alertmanager) among the receivers, and
// checks for each outage that the expected alert is detected within its
// delay with an explanation naming the right signals, that drafts are
// written, that the alert reaches Alertmanager and comes out of its webhook,
// and that no alert fires in the normal phases. Set DEMO_E2E=1 to run
// it; under CI=true a missing Alertmanager is then a failure.
func TestDemoEndToEnd(t *testing.T) {
	if os.Getenv(demoE2EEnv) != "1" {
		t.Skipf("set %s=1 to run the %v demo story end to end", demoE2EEnv, demoE2EStory.Length())
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

	amURL := startAlertmanager(t, amBin, "http://"+amHookLn.Addr().String()+"/", 5*time.Second)

	dir := t.TempDir()
	var out testlog.Buffer
	ctx, cancel := context.WithTimeout(t.Context(), demoE2EStory.Length()+demoE2ESlack)
	defer cancel()
	sum, err := runDemo(ctx, &out, &out, demoRunOptions{
		interval:        time.Second,
		story:           demoE2EStory,
		rate:            50,
		alertsFile:      filepath.Join(dir, "alerts.jsonl"),
		agentLog:        filepath.Join(dir, "agent.log"),
		alertmanagerURL: amURL,
	})
	t.Logf("demo output:\n%s", out.String())
	require.NoError(t, err, "demo story (%v, budget %v more)", demoE2EStory.Length(), demoE2ESlack)

	want := map[string]struct {
		within  time.Duration
		signals []string
	}{
		demo.OutageSaturation: {30 * time.Second, []string{"symptom", "resource"}},
		demo.OutageStorm:      {30 * time.Second, []string{"limited_share"}},
		demo.OutageSurge:      {40 * time.Second, []string{"requests", "latency"}},
	}
	require.Len(t, sum.Outages, len(want))
	for _, r := range sum.Outages {
		w, ok := want[r.Outage]
		require.True(t, ok, "unexpected outage %q", r.Outage)
		require.True(t, r.Detected, "outage %q: none of %v fired", r.Outage, r.Expected)
		require.Contains(t, r.Expected, r.Alert, "outage %q: detected by %s, want one of %v", r.Outage, r.Alert, r.Expected)
		require.LessOrEqual(t, r.DetectedAfter, w.within, "outage %q: %s fired %v after the fault, want within %v",
			r.Outage, r.Alert, r.DetectedAfter, w.within)
		require.NotNil(t, r.Explanation, "outage %q: %s has no explanation", r.Outage, r.Alert)
		var names []string
		for _, s := range r.Explanation.Signals {
			names = append(names, s.Name)
		}
		for _, s := range w.signals {
			require.Contains(t, names, s, "outage %q: %s's explanation lacks signal %q", r.Outage, r.Alert, s)
		}
		require.Positive(t, r.Drafts, "outage %q: %s wrote no status-update draft", r.Outage, r.Alert)
		if r.Outage == demo.OutageSaturation {
			require.True(t, r.Resolved, "outage %q: %s did not resolve after the fix", r.Outage, r.Alert)
		}
	}
	for _, f := range sum.FalseAlerts {
		t.Errorf("false alert %s at +%v in phase %q", f.Name, f.At.Round(time.Second), f.Phase)
	}
	require.Empty(t, sum.FalseAlerts, "alerts in normal phases")

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
		require.True(t, time.Now().Before(deadline), "alerts out of Alertmanager: %v, want each of the detecting alerts", got)
		<-tick.C
	}
}
