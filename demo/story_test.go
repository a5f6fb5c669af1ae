package demo

import (
	"bytes"
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seismo-agent/seismo/demo/loadgen"
	"github.com/seismo-agent/seismo/internal/model"
	"github.com/seismo-agent/seismo/notify/draft"
	"github.com/seismo-agent/seismo/notify/webhook"
)

func alertEv(status, name, fp string) Event {
	return Event{Alert: &webhook.Alert{
		Status: status, Fingerprint: fp,
		Labels:      map[string]string{"alertname": name, "severity": "page"},
		Annotations: map[string]string{"summary": name + " summary"},
		Seismo: &webhook.Seismo{Detector: "decoupling", Score: 0.9, Explanation: &model.Explanation{
			Detector: "decoupling", Summary: "latency up, cpu flat",
			Signals: []model.Signal{{Name: "symptom", Unit: "s", Current: 0.9, Expected: 0.1, Lower: 0.05, Upper: 0.2}},
			Breadth: &model.Breadth{Label: "client", Active: 50, Affected: 45, AffectedShare: 0.9, Concentration: 0.02},
			Cause:   "workers starved",
		}},
	}}
}

func infoEv(name, fp string) Event {
	ev := alertEv("firing", name, fp)
	ev.Alert.Labels["severity"] = "info"
	return ev
}

func TestRunStory(t *testing.T) {
	type timed struct {
		at time.Duration
		ev Event
	}
	var calls []string
	phase := func(name string, kind PhaseKind, outage string, d time.Duration) Phase {
		p := Phase{Name: name, Kind: kind, Outage: outage, Duration: d}
		if kind == PhaseOutage {
			p.Expect = []string{"Expected" + outage}
			p.Begin = func() error { calls = append(calls, "begin "+outage); return nil }
			p.End = func() error { calls = append(calls, "end "+outage); return nil }
		}
		return p
	}
	phases := []Phase{
		phase("warm", PhaseWarmUp, "", 10*time.Second),  // 0-10
		phase("quiet", PhaseNormal, "", 10*time.Second), // 10-20
		phase("o1", PhaseOutage, "A", 20*time.Second),   // 20-40
		phase("r1", PhaseRecovery, "A", 10*time.Second), // 40-50
		phase("quiet", PhaseNormal, "", 10*time.Second), // 50-60
		phase("o2", PhaseOutage, "B", 20*time.Second),   // 60-80
		phase("r2", PhaseRecovery, "B", 10*time.Second), // 80-90
	}
	script := []timed{
		{15 * time.Second, alertEv("firing", "Flappy", "f0")},        // false alert
		{25 * time.Second, alertEv("firing", "HighErrorRate", "f1")}, // generic first
		{27 * time.Second, alertEv("firing", "HighErrorRate", "f1")}, // repeat: ignored
		{29 * time.Second, alertEv("firing", "ExpectedA", "f2")},     // expected outranks
		{30 * time.Second, Event{Draft: &draft.Draft{Phase: draft.PhaseInvestigating, Component: "Shop", Impact: "degraded_performance", Title: "Slow checkout", Text: "We are investigating."}}},
		{45 * time.Second, alertEv("resolved", "HighErrorRate", "f1")}, // not the detecting alert
		{55 * time.Second, alertEv("resolved", "ExpectedA", "f2")},     // 15 s after the fix, in the next normal phase
		{56 * time.Second, alertEv("resolved", "ExpectedA", "f2")},     // repeat: ignored
		{57 * time.Second, infoEv("HeavyClient", "f4")},                // informational: not false
		{58 * time.Second, alertEv("firing", "ExpectedB", "f5")},       // false, and still firing when B starts
		{85 * time.Second, alertEv("firing", "Other", "f3")},           // late, during recovery
	}
	synctest.Test(t, func(t *testing.T) {
		events := make(chan Event)
		go func() {
			start := time.Now()
			for _, s := range script {
				time.Sleep(s.at - time.Since(start))
				s.ev.At = time.Now()
				events <- s.ev
			}
		}()
		var out bytes.Buffer
		statusCalls := 0
		sum, err := RunStory(t.Context(), StoryConfig{
			Phases: phases, Events: events, Out: &out, EvalInterval: 2 * time.Second,
			Status: func() string { statusCalls++; return "load ok" }, StatusEvery: 30 * time.Second,
		})
		require.NoError(t, err)
		require.Equal(t, []string{"begin A", "end A", "begin B", "end B"}, calls)
		require.Equal(t, 90*time.Second, sum.Wall)
		require.Equal(t, []FalseAlert{{Name: "Flappy", At: 15 * time.Second, Phase: "quiet"}, {Name: "ExpectedB", At: 58 * time.Second, Phase: "quiet"}}, sum.FalseAlerts)
		require.Equal(t, []FalseAlert{{Name: "HeavyClient", At: 57 * time.Second, Phase: "quiet"}}, sum.Informational)
		require.Len(t, sum.Outages, 2)
		a, b := sum.Outages[0], sum.Outages[1]
		require.Equal(t, OutageResult{
			Outage: "A", Expected: []string{"ExpectedA"}, InjectedAt: 20 * time.Second,
			Detected: true, DetectedAfter: 9 * time.Second, Alert: "ExpectedA", AlsoFired: []string{"HighErrorRate"},
			FirstAlert: "HighErrorRate", FirstAfter: 5 * time.Second, Explanation: alertEv("firing", "x", "x").Alert.Seismo.Explanation,
			RemovedAt: 40 * time.Second, Resolved: true, ResolvedAfter: 15 * time.Second, Drafts: 1,
		}, a)
		require.True(t, b.Detected)
		require.Equal(t, "Other", b.Alert)
		require.Equal(t, 25*time.Second, b.DetectedAfter)
		require.False(t, b.Resolved)
		require.Equal(t, []string{"ExpectedB"}, b.AlreadyFiring)
		require.Positive(t, statusCalls)

		text := out.String()
		for _, want := range []string{
			"== o1 (outage, 20s)", "FIRING  ExpectedA severity=page detector=decoupling score=0.90",
			"latency up, cpu flat", "symptom   0.9s (expected 0.1s, band 0.05s–0.2s)", "breadth   45 of 50 client values affected (90%)",
			"cause: workers starved", "DRAFT   investigating · Shop · degraded_performance", "We are investigating.",
			"[    55s] RESOLVED ExpectedA", "fault removed", "== summary", "9s (4.5 evals)", "Other (expected ExpectedB)",
			"false alerts during warm-up and normal phases: 2", "Flappy at +15s (quiet)", "informational alerts (severity info, not paging): 1", "wall time: 1m30s",
		} {
			require.Contains(t, text, want)
		}
		require.Equal(t, 1, countLines(text, "FIRING  HighErrorRate"), "repeats are not shown")
	})
}

func TestRunStoryCancelRemovesFault(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		removed := false
		done := make(chan error, 1)
		go func() {
			_, err := RunStory(ctx, StoryConfig{Out: &bytes.Buffer{}, Events: make(chan Event), Phases: []Phase{{
				Name: "o", Kind: PhaseOutage, Duration: time.Hour,
				End: func() error { removed = true; return nil },
			}}})
			done <- err
		}()
		time.Sleep(time.Minute)
		cancel()
		require.ErrorIs(t, <-done, context.Canceled)
		require.True(t, removed)
	})
}

func countLines(text, sub string) int {
	n := 0
	for _, l := range bytes.Split([]byte(text), []byte("\n")) {
		if bytes.Contains(l, []byte(sub)) {
			n++
		}
	}
	return n
}

func TestDefaultPhases(t *testing.T) {
	svc, err := NewService(Options{})
	require.NoError(t, err)
	gen, err := loadgen.New(loadgen.Options{Target: "http://127.0.0.1:1", Duration: time.Second})
	require.NoError(t, err)
	ps := DefaultPhases(svc, gen, StoryOptions{WarmUp: 3 * time.Second, Normal: 2 * time.Second, LookAlike: time.Second, Outage: 5 * time.Second, Recovery: 4 * time.Second})
	var kinds []PhaseKind
	var total time.Duration
	for _, p := range ps {
		kinds = append(kinds, p.Kind)
		total += p.Duration
	}
	require.Equal(t, []PhaseKind{PhaseWarmUp, PhaseNormal, PhaseNormal,
		PhaseOutage, PhaseRecovery, PhaseNormal,
		PhaseOutage, PhaseRecovery, PhaseNormal,
		PhaseOutage, PhaseRecovery, PhaseNormal}, kinds)
	require.Equal(t, 3*time.Second+2*time.Second+time.Second+3*(5*time.Second+4*time.Second+2*time.Second), total)
	require.Equal(t, total, StoryOptions{WarmUp: 3 * time.Second, Normal: 2 * time.Second, LookAlike: time.Second, Outage: 5 * time.Second, Recovery: 4 * time.Second}.Length())

	// Each outage's Begin and End switch its mechanism on and off.
	checks := []func() bool{
		func() bool { return svc.FaultActive(FaultPoolShrink) },
		func() bool { return svc.FaultActive(FaultLimiterGlobal) },
		func() bool { return gen.SurgeFactor() == 5 },
	}
	i := 0
	for _, p := range ps {
		if p.Kind != PhaseOutage {
			continue
		}
		require.NotEmpty(t, p.Expect)
		require.False(t, checks[i](), p.Name)
		require.NoError(t, p.Begin())
		require.True(t, checks[i](), p.Name)
		require.NoError(t, p.End())
		require.False(t, checks[i](), p.Name)
		i++
	}
	require.Equal(t, 3, i)
}
