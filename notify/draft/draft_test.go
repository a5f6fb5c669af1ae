package draft_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/require"

	"github.com/seismo-agent/seismo/internal/model"
	"github.com/seismo-agent/seismo/notify/draft"
	"github.com/seismo-agent/seismo/notify/templates"
)

var update = flag.Bool("update", false, "rewrite golden files")

func golden(t *testing.T, name, got string) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(got), 0o644))
	}
	want, err := os.ReadFile(p)
	require.NoError(t, err, "run go test -update to create it")
	require.Equal(t, string(want), got)
}

// shapes are the three outages seismo exists for, as the detectors explain them.
var shapes = map[string]*model.Alert{
	"saturation_without_cpu": {
		Labels: labels.FromStrings("alertname", "LatencyUpCPUFlat", "severity", "page", "service", "storefront"),
		Draft:  &model.Draft{Component: "Storefront"},
		Value:  2.4, PeakValue: 3.1,
		Explanation: &model.Explanation{Detector: "decoupling", Kind: "saturation_without_cpu", Score: 0.97, Direction: "up",
			Signals: []model.Signal{
				{Name: "symptom", Unit: "s", Current: 2.4, Expected: 0.21, Lower: 0.15, Upper: 0.32},
				{Name: "resource", Unit: "cores", Current: 1.1, Expected: 1.2, Lower: 0.8, Upper: 1.9},
			},
			Cause:   "requests are queueing for worker threads while CPU stays flat",
			Summary: "p99 latency 2.4 s against 0.21 s expected while CPU stays at 1.1 cores"},
	},
	"rate_limit_storm": {
		Labels: labels.FromStrings("alertname", "RateLimitStorm", "severity", "page", "service", "identity"),
		Draft:  &model.Draft{Component: "Login"},
		Value:  0.62, PeakValue: 0.71,
		Explanation: &model.Explanation{Detector: "storm", Kind: "rate_limit_storm", Score: 0.99, Direction: "up",
			Signals: []model.Signal{{Name: "value", Unit: "ratio", Current: 0.62, Expected: 0.004, Lower: 0, Upper: 0.02}},
			Breadth: &model.Breadth{Label: "client", Active: 480, Affected: 451, AffectedShare: 0.94, Concentration: 0.003, Top: []string{"10.0.0.7", "10.0.3.1"}},
			Cause:   "a rate limiter is rejecting most clients",
			Summary: "62% of requests answered 429 across 451 of 480 clients"},
	},
	"surge_saturation": {
		Labels: labels.FromStrings("alertname", "SurgeSaturation", "severity", "critical", "service", "exchange-web"),
		Value:  0.48, PeakValue: 0.5,
		Explanation: &model.Explanation{Detector: "surge", Kind: "surge_saturation", Score: 0.98, Direction: "up",
			Signals: []model.Signal{
				{Name: "errors", Unit: "ratio", Current: 0.48, Expected: 0.01, Lower: 0, Upper: 0.03},
				{Name: "requests", Unit: "req/s", Current: 5200, Expected: 1040, Lower: 800, Upper: 1400},
			},
			Cause:   "traffic rose 5x in four minutes and the web processes saturated",
			Summary: "requests 5.0x usual; 48% of requests failing; health checks failing"},
	},
}

func TestDraftGolden(t *testing.T) {
	tmpl, err := templates.Load(nil)
	require.NoError(t, err)
	loc := time.FixedZone("", -3*3600)
	r := draft.NewRenderer(tmpl, loc)
	for shape, proto := range shapes {
		t.Run(shape, func(t *testing.T) {
			t0 := time.Date(2026, 3, 14, 15, 23, 0, 0, time.UTC)
			inc := draft.NewIncident(`0:{alertname="x"}`, map[string]string{"alertname": proto.Name()})
			a := *proto
			a.State, a.StartsAt = model.StateFiring, t0
			// Investigating: the alert fires before its cause is known.
			noCause := a
			ex := *a.Explanation
			ex.Cause = ""
			noCause.Explanation = &ex
			steps := []struct {
				at     time.Duration
				alerts []*model.Alert
				tick   bool
			}{
				{at: 1 * time.Minute, alerts: []*model.Alert{&noCause}},
				{at: 6 * time.Minute, alerts: []*model.Alert{&a}},
				{at: 20 * time.Minute, alerts: []*model.Alert{resolvedAt(&a, t0.Add(19*time.Minute), a.Value/20)}},
				{at: 31 * time.Minute, tick: true},
			}
			var phases []string
			for _, s := range steps {
				now := t0.Add(s.at)
				if s.tick {
					require.True(t, inc.Tick(now, 10*time.Minute))
				} else {
					entered := inc.Observe(s.alerts, now)
					require.Len(t, entered, 1)
				}
				d, err := r.Render(inc, now)
				require.NoError(t, err)
				phases = append(phases, d.Phase.String())
				var b strings.Builder
				fmt.Fprintf(&b, "title: %s\nimpact: %s\ncomponent: %s\n\n--- text\n%s\n\n--- markdown\n%s", d.Title, d.Impact, d.Component, d.Text, d.Markdown)
				if d.Timeline != "" {
					fmt.Fprintf(&b, "\n--- timeline\n%s", d.Timeline)
				}
				golden(t, filepath.Join(shape, fmt.Sprintf("%d-%s.golden", len(phases), d.Phase)), b.String())
			}
			require.Equal(t, []string{"investigating", "identified", "monitoring", "resolved"}, phases)
		})
	}
}

func resolvedAt(a *model.Alert, at time.Time, v float64) *model.Alert {
	c := *a
	c.State, c.EndsAt, c.Value = model.StateResolved, at, v
	return &c
}

func TestImpact(t *testing.T) {
	tests := []struct {
		name  string
		alert model.Alert
		want  string
	}{
		{"draft block wins", model.Alert{Draft: &model.Draft{Impact: draft.ImpactDegraded},
			Labels: labels.FromStrings("severity", "critical")}, draft.ImpactDegraded},
		{"error share above half", model.Alert{Explanation: &model.Explanation{Kind: "error_rate"}, Value: 0.6}, draft.ImpactMajor},
		{"some errors", model.Alert{Explanation: &model.Explanation{Signals: []model.Signal{{Name: "errors", Unit: "ratio", Current: 0.1}}}}, draft.ImpactPartial},
		{"page without numbers", model.Alert{Labels: labels.FromStrings("severity", "page")}, draft.ImpactPartial},
		{"warning", model.Alert{Labels: labels.FromStrings("severity", "warning")}, draft.ImpactDegraded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := tt.alert
			a.State = model.StateFiring
			inc := draft.NewIncident("k", nil)
			inc.Observe([]*model.Alert{&a}, time.Unix(0, 0))
			require.Equal(t, tt.want, inc.Impact)
		})
	}
}

func TestZoneName(t *testing.T) {
	tests := []struct {
		loc  *time.Location
		want string
	}{
		{time.UTC, "UTC"},
		{time.FixedZone("", -3*3600), "UTC-3"},
		{time.FixedZone("", 5*3600+1800), "UTC+5:30"},
		{time.FixedZone("CET", 3600), "CET"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			require.Equal(t, tt.want, draft.ZoneName(time.Unix(0, 0).In(tt.loc)))
		})
	}
}

// TestRefireDuringMonitoring: firing again while Monitoring goes back to
// Investigating (or Identified when the cause is known) and cancels the
// resolve.
func TestRefireDuringMonitoring(t *testing.T) {
	t0 := time.Date(2026, 3, 14, 15, 0, 0, 0, time.UTC)
	tests := []struct {
		name  string
		cause string
		want  draft.Phase
	}{
		{"no cause", "", draft.PhaseInvestigating},
		{"cause known", "a rate limiter is rejecting most clients", draft.PhaseIdentified},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &model.Alert{Labels: labels.FromStrings("alertname", "X"), State: model.StateFiring, StartsAt: t0,
				Explanation: &model.Explanation{Kind: "rate_limit_storm", Cause: tt.cause}}
			inc := draft.NewIncident("k", nil)
			inc.Observe([]*model.Alert{a}, t0)
			require.Equal(t, []draft.Phase{draft.PhaseMonitoring}, inc.Observe([]*model.Alert{resolvedAt(a, t0.Add(5*time.Minute), 0)}, t0.Add(6*time.Minute)))
			require.False(t, inc.Tick(t0.Add(10*time.Minute), 10*time.Minute), "holding")
			require.Equal(t, []draft.Phase{tt.want}, inc.Observe([]*model.Alert{a}, t0.Add(11*time.Minute)))
			require.False(t, inc.Tick(t0.Add(time.Hour), 10*time.Minute), "firing again: no resolve")
			require.True(t, inc.Active())
		})
	}
}

// TestDraftUnrecovered: an incident whose alert resolved with its value
// still beyond the band it fired against (a latency doubled for good,
// taken for normal by the detector a day on) is not drafted as working
// normally or resolved: the drafts say the component has not returned
// to its earlier level.
func TestDraftUnrecovered(t *testing.T) {
	tmpl, err := templates.Load(nil)
	require.NoError(t, err)
	r := draft.NewRenderer(tmpl, time.UTC)
	t0 := time.Date(2026, 3, 14, 15, 23, 0, 0, time.UTC)
	a := &model.Alert{
		Labels: labels.FromStrings("alertname", "CheckoutLatency", "severity", "page", "service", "checkout"),
		Draft:  &model.Draft{Component: "Checkout"},
		State:  model.StateFiring, StartsAt: t0, Value: 0.41, PeakValue: 0.47,
		Explanation: &model.Explanation{Detector: "auto", Kind: "level_shift", Score: 0.99, Direction: "up",
			Signals: []model.Signal{{Name: "value", Unit: "s", Current: 0.41, Expected: 0.2, Lower: 0.17, Upper: 0.23}},
			Summary: "CheckoutLatency: level shift up to 0.41, expected 0.2 (normal 0.17 to 0.23)"},
	}
	for _, unrecovered := range []bool{true, false} {
		inc := draft.NewIncident(`0:{alertname="x"}`, map[string]string{"alertname": a.Name()})
		inc.Observe([]*model.Alert{a}, t0.Add(time.Minute))
		res := resolvedAt(a, t0.Add(24*time.Hour), 0.41)
		res.Unrecovered = unrecovered
		inc.Observe([]*model.Alert{res}, t0.Add(24*time.Hour))
		mon, err := r.Render(inc, t0.Add(24*time.Hour))
		require.NoError(t, err)
		require.Equal(t, draft.PhaseMonitoring, mon.Phase)
		require.True(t, inc.Tick(t0.Add(25*time.Hour), 10*time.Minute))
		done, err := r.Render(inc, t0.Add(25*time.Hour))
		require.NoError(t, err)
		require.Equal(t, draft.PhaseResolved, done.Phase)
		const notBack = "has not returned to its earlier level"
		require.Equal(t, unrecovered, strings.Contains(mon.Text, notBack), mon.Text)
		require.Equal(t, unrecovered, strings.Contains(done.Text, notBack), done.Text)
		require.Equal(t, !unrecovered, strings.Contains(mon.Text, "working normally"), mon.Text)
		require.Equal(t, !unrecovered, strings.Contains(done.Text, "has been resolved"), done.Text)
		require.True(t, strings.HasPrefix(done.Text, "Between 15:23 UTC on 2026-03-14 and 15:23 on 2026-03-15 (24 hours)"), "an incident over midnight names both days: %s", done.Text)
		t.Logf("unrecovered %v:\n  %s\n  %s", unrecovered, mon.Text, done.Text)
	}
}

// TestDraftLeavesFrozenOut: an alert on a metric that has stopped
// updating is about the monitoring, not the service. Alone it opens no
// incident, and beside a real alert it neither words the incident nor
// gives it its cause.
func TestDraftLeavesFrozenOut(t *testing.T) {
	t0 := time.Date(2026, 3, 14, 15, 0, 0, 0, time.UTC)
	frozen := &model.Alert{Labels: labels.FromStrings("alertname", "QueueAnomaly", "service", "checkout"), State: model.StateFiring, StartsAt: t0,
		Explanation: &model.Explanation{Detector: "auto", Kind: "frozen", Evidence: "frozen",
			Cause:   "the metric has stopped updating (an exporter or source that hangs), so its value no longer says how the service is",
			Summary: "QueueAnomaly: value 100, expected 100.4 (normal 93.92 to 106.8); it has stopped moving"}}
	inc := draft.NewIncident("k", nil)
	require.Empty(t, inc.Observe([]*model.Alert{frozen}, t0))
	require.False(t, inc.Active(), "a frozen metric alone opened an incident")

	latency := &model.Alert{Labels: labels.FromStrings("alertname", "CheckoutLatency", "service", "checkout"), State: model.StateFiring, StartsAt: t0,
		Explanation: &model.Explanation{Detector: "auto", Kind: "level_shift", Summary: "CheckoutLatency: level shift up to 0.41"}}
	require.Equal(t, []draft.Phase{draft.PhaseInvestigating}, inc.Observe([]*model.Alert{frozen, latency}, t0.Add(time.Minute)))
	require.Empty(t, inc.Cause, "the frozen metric's cause on the outage's incident")
	require.Equal(t, "level_shift", inc.Kind)
	require.Len(t, inc.Alerts, 1)
	require.Equal(t, "CheckoutLatency", inc.Alerts[0].Name)
	require.Equal(t, []draft.Phase{draft.PhaseMonitoring}, inc.Observe([]*model.Alert{frozen, resolvedAt(latency, t0.Add(5*time.Minute), 0.2)}, t0.Add(6*time.Minute)),
		"the frozen metric kept the incident open")
}

// TestDraftWithdrawsAHang: a hang on a metric with a daily cycle pages
// first as unusual for the time of day, and the incident opens; when the
// same alert is explained as frozen, the incident is withdrawn, with a
// draft that says users were not affected, not "recovered" and
// "resolved". An incident whose real alert resolved is not withdrawn by
// a frozen alert left in its group, nor one that has a real alert firing.
func TestDraftWithdrawsAHang(t *testing.T) {
	tmpl, err := templates.Load(nil)
	require.NoError(t, err)
	r := draft.NewRenderer(tmpl, time.UTC)
	t0 := time.Date(2026, 3, 14, 15, 0, 0, 0, time.UTC)
	lset := labels.FromStrings("alertname", "QueueAnomaly", "service", "checkout")
	hourly := &model.Alert{Labels: lset, State: model.StateFiring, StartsAt: t0, Value: 120.6,
		Explanation: &model.Explanation{Detector: "auto", Kind: "spike", Evidence: "time_of_day",
			Summary: "QueueAnomaly: value 120.6, expected 118; unusual for this time of day; unchanged at 120.6 for the last 24 evaluations"}}
	frozen := &model.Alert{Labels: lset, State: model.StateFiring, StartsAt: t0, Value: 120.6,
		Explanation: &model.Explanation{Detector: "auto", Kind: "frozen", Evidence: "frozen",
			Cause:   "the metric has stopped updating (an exporter or source that hangs), so its value no longer says how the service is",
			Summary: "QueueAnomaly: value 120.6, expected 116; it has stopped moving"}}

	inc := draft.NewIncident("k", nil)
	require.Equal(t, []draft.Phase{draft.PhaseInvestigating}, inc.Observe([]*model.Alert{hourly}, t0))
	first, err := r.Render(inc, t0)
	require.NoError(t, err)
	require.Contains(t, first.Text, "We are investigating")
	require.Equal(t, []draft.Phase{draft.PhaseResolved}, inc.Observe([]*model.Alert{frozen}, t0.Add(5*time.Minute)))
	require.True(t, inc.Withdrawn)
	require.False(t, inc.Active())
	d, err := r.Render(inc, t0.Add(5*time.Minute))
	require.NoError(t, err)
	require.Equal(t, draft.PhaseResolved, d.Phase)
	require.Equal(t, "checkout: no incident (Withdrawn)", d.Title)
	require.Equal(t, "Update: the alert on checkout at 15:00 UTC was not a problem users see. A metric we watch stopped updating, "+
		"a gap in our monitoring, and checkout was not affected on its account. No action is needed.", d.Text)
	require.Empty(t, d.Timeline, "a post-mortem for a gap in the monitoring")
	require.Contains(t, inc.Events[len(inc.Events)-1].Text, "withdrawn: QueueAnomaly stopped updating")
	require.Empty(t, inc.Observe([]*model.Alert{frozen}, t0.Add(10*time.Minute)), "the hang goes on: nothing new")
	require.False(t, inc.Active())

	// A real alert recovered; the frozen one left in the group does not
	// turn the incident into a gap.
	latency := &model.Alert{Labels: labels.FromStrings("alertname", "CheckoutLatency", "service", "checkout"), State: model.StateFiring, StartsAt: t0,
		Explanation: &model.Explanation{Detector: "auto", Kind: "level_shift", Summary: "CheckoutLatency: level shift up to 0.41"}}
	inc = draft.NewIncident("k", nil)
	require.Equal(t, []draft.Phase{draft.PhaseInvestigating}, inc.Observe([]*model.Alert{latency, hourly}, t0))
	require.Equal(t, []draft.Phase{draft.PhaseMonitoring}, inc.Observe([]*model.Alert{resolvedAt(latency, t0.Add(5*time.Minute), 0.2), frozen}, t0.Add(6*time.Minute)))
	require.Empty(t, inc.Observe([]*model.Alert{frozen}, t0.Add(12*time.Minute)), "the resolved alert left the group")
	require.False(t, inc.Withdrawn)
	require.Equal(t, draft.PhaseMonitoring, inc.Phase)

	// Both firing, one turns frozen: the incident goes on.
	inc = draft.NewIncident("k", nil)
	inc.Observe([]*model.Alert{latency, hourly}, t0)
	require.Empty(t, inc.Observe([]*model.Alert{latency, frozen}, t0.Add(5*time.Minute)))
	require.False(t, inc.Withdrawn)
	require.True(t, inc.Active())
}
