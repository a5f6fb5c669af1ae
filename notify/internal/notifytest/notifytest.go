// Package notifytest holds fixtures shared by the integration tests: sample
// alerts and golden-file comparison.
package notifytest

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/require"

	"github.com/seismo-agent/seismo/internal/model"
)

// Update rewrites golden files: go test ./notify/... -update
var Update = flag.Bool("update", false, "rewrite golden files")

// T0 is the fixed time of the fixtures.
var T0 = time.Date(2026, 3, 14, 15, 23, 0, 0, time.UTC)

// Firing returns a firing saturation-without-CPU alert with its explanation.
func Firing() *model.Alert {
	return &model.Alert{
		Labels:      labels.FromStrings("alertname", "LatencyUpCPUFlat", "instance", "web-1:8080", "service", "storefront", "severity", "page"),
		Annotations: map[string]string{"summary": "Storefront p99 latency is 11x its usual level while CPU is flat", "runbook_url": "https://runbooks.example/latency"},
		State:       model.StateFiring,
		StartsAt:    T0,
		EndsAt:      T0.Add(4 * time.Minute),
		Value:       2.4, PeakValue: 2.4,
		GeneratorURL: "http://127.0.0.1:9797/rules#LatencyUpCPUFlat",
		Explanation: &model.Explanation{Detector: "decoupling", Kind: "saturation_without_cpu", Score: 0.97, Direction: "up",
			Signals: []model.Signal{
				{Name: "symptom", Unit: "s", Current: 2.4, Expected: 0.21, Lower: 0.15, Upper: 0.32},
				{Name: "resource", Unit: "cores", Current: 1.1, Expected: 1.2, Lower: 0.8, Upper: 1.9},
			},
			Cause:   "requests are queueing for worker threads while CPU stays flat",
			Summary: "p99 latency 2.4 s against 0.21 s expected while CPU stays at 1.1 cores"},
		Draft:  &model.Draft{Component: "Storefront"},
		Recent: []float64{0.2, 0.22, 0.21, 0.4, 1.9, 2.4, 2.2},
	}
}

// Storm returns a firing rate-limit-storm alert with breadth figures.
func Storm() *model.Alert {
	return &model.Alert{
		Labels:   labels.FromStrings("alertname", "RateLimitStorm", "instance", "id-1:8080", "service", "identity", "severity", "page"),
		State:    model.StateFiring,
		StartsAt: T0.Add(time.Minute),
		Value:    0.62, PeakValue: 0.71,
		Explanation: &model.Explanation{Detector: "storm", Kind: "rate_limit_storm", Score: 0.99, Direction: "up",
			Signals: []model.Signal{{Name: "value", Unit: "ratio", Current: 0.62, Expected: 0.004, Lower: 0, Upper: 0.02}},
			Breadth: &model.Breadth{Label: "client", Active: 480, Affected: 451, AffectedShare: 0.94, Concentration: 0.003, Top: []string{"10.0.0.7", "10.0.3.1"}},
			Cause:   "a rate limiter is rejecting most clients",
			Summary: "62% of requests answered 429 across 451 of 480 clients"},
		Recent: []float64{0, 0, 0.01, 0.6, 0.7, 0.1, 0.62},
	}
}

// Resolved returns Firing resolved 19 minutes later with the value at resolve.
func Resolved() *model.Alert {
	a := Firing()
	a.State, a.EndsAt, a.Value, a.PeakValue = model.StateResolved, T0.Add(19*time.Minute), 0.23, 3.1
	return a
}

// Unrecovered returns an auto alert on a latency that doubled for good,
// resolved a day later by the detector's taking the new level for
// normal, with the value still beyond the band it fired against.
func Unrecovered() *model.Alert {
	return &model.Alert{
		Labels:   labels.FromStrings("alertname", "CheckoutLatency", "service", "checkout", "severity", "page"),
		State:    model.StateResolved,
		StartsAt: T0,
		EndsAt:   T0.Add(24 * time.Hour),
		Value:    0.41, PeakValue: 0.47,
		Unrecovered: true,
		Explanation: &model.Explanation{Detector: "auto", Kind: "level_shift", Score: 0.99, Direction: "up", Evidence: "level",
			Signals: []model.Signal{{Name: "value", Unit: "s", Current: 0.41, Expected: 0.4, Lower: 0.33, Upper: 0.47}},
			Summary: "CheckoutLatency: level shift up to 0.41, expected 0.4 (normal 0.33 to 0.47); resolved without recovering: 0.41 is still above the normal range of 0.17 to 0.23 it had when the alert fired, and the detector now takes it for normal"},
		Recent: []float64{0.2, 0.41, 0.42, 0.4, 0.41},
	}
}

// Golden compares got with testdata/name, rewriting it under -update. JSON
// is indented first so that diffs are readable.
func Golden(t *testing.T, name string, got []byte) {
	t.Helper()
	if json.Valid(got) {
		var buf bytes.Buffer
		require.NoError(t, json.Indent(&buf, got, "", "  "))
		buf.WriteByte('\n')
		got = buf.Bytes()
	}
	p := filepath.Join("testdata", name)
	if *Update {
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, got, 0o644))
	}
	want, err := os.ReadFile(p)
	require.NoError(t, err, "run go test -update to create it")
	require.Equal(t, string(want), string(got))
}
