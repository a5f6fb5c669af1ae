package rules

import (
	"context"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/seismo-agent/seismo/detect"
	"github.com/seismo-agent/seismo/internal/model"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// seriesFunc returns, per query, the value of one series at ts; NaN-free:
// ok=false means the series is absent.
type seriesFunc func(q string, ts time.Time) (float64, bool)

func vecSource(lset labels.Labels, f seriesFunc) *fakeSource {
	return &fakeSource{instant: func(q string, ts time.Time) (promql.Vector, error) {
		v, ok := f(q, ts)
		if !ok {
			return nil, nil
		}
		return promql.Vector{{Metric: lset, F: v, T: ts.UnixMilli()}}, nil
	}}
}

// recorder collects notifications and transitions.
type recorder struct {
	mu          sync.Mutex
	sent        []*model.Alert
	transitions []Transition
}

func (r *recorder) notify(_ context.Context, as ...*model.Alert) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sent = append(r.sent, as...)
}

func (r *recorder) onTransition(tr Transition) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.transitions = append(r.transitions, tr)
}

func (r *recorder) take() []*model.Alert {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.sent
	r.sent = nil
	return s
}

func writeRules(t testing.TB, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	return p
}

func testConfig(files ...string) Config {
	c := DefaultConfig()
	c.Files = files
	c.Builtin.Enabled = false
	c.WatchFiles = false
	c.EvaluationInterval = 10 * time.Second
	return c
}

func newTestManager(t *testing.T, src *fakeSource, rec *recorder, dataDir string, rules string) (*Manager, Config) {
	t.Helper()
	m, err := NewManager(Options{
		Source: src, Notify: rec.notify, OnTransition: rec.onTransition,
		Lookup: fakeLookup, Kinds: fakeKindNames, DataDir: dataDir,
	})
	require.NoError(t, err)
	cfg := testConfig(writeRules(t, t.TempDir(), "r.yml", rules))
	require.NoError(t, m.ApplyConfig(cfg))
	return m, cfg
}

// reopen saves m's state, closes it, and returns a new manager on the
// same data directory with cfg applied, as a restarted agent has.
func reopen(t *testing.T, m *Manager, src *fakeSource, dataDir string, cfg Config) *Manager {
	t.Helper()
	require.NoError(t, m.Save())
	require.NoError(t, m.Close())
	m2, err := NewManager(Options{Source: src, Lookup: fakeLookup, Kinds: fakeKindNames, DataDir: dataDir})
	require.NoError(t, err)
	t.Cleanup(func() { _ = m2.Close() })
	require.NoError(t, m2.ApplyConfig(cfg))
	return m2
}

func TestLifecycle(t *testing.T) {
	lset := labels.FromStrings("__name__", "x", "instance", "a")
	// step: series value (<0 means absent), state after the evaluation,
	// notifications sent by it and the state they carry.
	type step = lifecycleStep
	tests := []struct {
		name  string
		rules string
		steps []step
	}{
		{
			name:  "for delays firing, resolve sends value at resolve time",
			rules: "groups: [{name: g, rules: [{alert: A, expr: 'x > 5', for: 20s}]}]",
			steps: []step{
				{value: 1, state: model.StateInactive},
				{value: 9, state: model.StatePending},
				{value: 9, state: model.StatePending},
				{value: 9, state: model.StateFiring, sent: 1, sentAs: model.StateFiring},
				{value: 3, state: model.StateResolved, sent: 1, sentAs: model.StateResolved},
			},
		},
		{
			name:  "pending that ends is dropped silently",
			rules: "groups: [{name: g, rules: [{alert: A, expr: 'x > 5', for: 30s}]}]",
			steps: []step{
				{value: 9, state: model.StatePending},
				{value: 1, state: model.StateInactive},
			},
		},
		{
			name:  "keep_firing_for holds the alert",
			rules: "groups: [{name: g, rules: [{alert: A, expr: 'x > 5', keep_firing_for: 20s}]}]",
			steps: []step{
				{value: 9, state: model.StateFiring, sent: 1, sentAs: model.StateFiring},
				{value: 1, state: model.StateFiring},
				{value: 1, state: model.StateFiring},
				{value: 1, state: model.StateResolved, sent: 1, sentAs: model.StateResolved},
			},
		},
		{
			name:  "warming up never pages",
			rules: "groups: [{name: g, rules: [{anomaly: A, expr: x, detector: {type: fake, threshold: 5, warm_up: 2}}]}]",
			steps: []step{
				{value: 9, state: model.StateWarmingUp},
				{value: 9, state: model.StateWarmingUp},
				{value: 9, state: model.StateFiring, sent: 1, sentAs: model.StateFiring},
				{value: 1, state: model.StateResolved, sent: 1, sentAs: model.StateResolved},
			},
		},
		{
			name:  "flapping sends one notice",
			rules: "groups: [{name: g, rules: [{alert: A, expr: 'x > 5'}]}]",
			steps: []step{
				{value: 9, state: model.StateFiring, sent: 1, sentAs: model.StateFiring},
				{value: 1, state: model.StateResolved, sent: 1, sentAs: model.StateResolved},
				{value: 9, state: model.StateFiring, sent: 1, sentAs: model.StateFiring},
				{value: 1, state: model.StateResolved, sent: 1, sentAs: model.StateFiring}, // 4th change: flapping notice
				{value: 9, state: model.StateFiring},
				{value: 1, state: model.StateResolved},
				{value: 9, state: model.StateFiring},
			},
		},
	}
	// Each case runs twice: driven directly at explicit tick times, and by
	// the manager's own evaluation loop on fake time (synctest), where the
	// group's interval and offset decide the ticks.
	for _, tt := range tests {
		for _, mode := range []string{"direct", "loop"} {
			t.Run(tt.name+"/"+mode, func(t *testing.T) {
				if mode == "loop" {
					synctest.Test(t, func(t *testing.T) { runLifecycleSteps(t, lset, tt.rules, tt.steps, true) })
					return
				}
				runLifecycleSteps(t, lset, tt.rules, tt.steps, false)
			})
		}
	}
}

type lifecycleStep = struct {
	value  float64
	state  model.AlertState
	sent   int
	sentAs model.AlertState
}

func runLifecycleSteps(t *testing.T, lset labels.Labels, rules string, steps []lifecycleStep, loop bool) {
	var mu sync.Mutex
	i := 0
	src := vecSource(lset, func(q string, ts time.Time) (float64, bool) {
		mu.Lock()
		defer mu.Unlock()
		v := steps[min(i, len(steps)-1)].value
		if q == "x" {
			return v, v >= 0
		}
		return v, v > 5 // 'x > 5' keeps the series only while true
	})
	rec := &recorder{}
	m, _ := newTestManager(t, src, rec, "", rules)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var done chan error
	if loop {
		done = make(chan error, 1)
		go func() { done <- m.Run(ctx) }()
		// Just past the group's first tick.
		first := nextTick(time.Now(), m.Groups()[0])
		time.Sleep(time.Until(first) + time.Millisecond)
	}
	for n := range steps {
		st := steps[n]
		if loop {
			if n > 0 {
				mu.Lock()
				i = n
				mu.Unlock()
				time.Sleep(10 * time.Second)
			}
			synctest.Wait()
		} else {
			i = n
			require.NoError(t, m.EvalGroups(ctx, t0.Add(time.Duration(n)*10*time.Second)))
		}
		state := model.StateInactive
		if as := m.Alerts(); len(as) > 0 {
			require.Len(t, as, 1)
			state = as[0].State
		}
		require.Equal(t, st.state, state, "step %d", n)
		sent := rec.take()
		require.Len(t, sent, st.sent, "step %d", n)
		if st.sent > 0 {
			require.Equal(t, st.sentAs, sent[0].State, "step %d", n)
			require.Equal(t, "A", sent[0].Name())
			if sent[0].State == model.StateResolved {
				require.Equal(t, st.value, sent[0].Value, "value at resolve time")
			}
		}
	}
	if loop {
		cancel()
		require.NoError(t, <-done)
	}
}

func TestAnomalyAlertCarriesExplanation(t *testing.T) {
	lset := labels.FromStrings("__name__", "lat", "route", "/buy")
	vals := []float64{1, 1, 8, 8, 8, 8}
	i := 0
	src := vecSource(lset, func(string, time.Time) (float64, bool) { return vals[i], true })
	rec := &recorder{}
	rules := `groups:
  - name: g
    labels: {team: shop}
    rules:
      - anomaly: Lat
        expr: lat
        detector: {type: fake, threshold: 5}
        labels: {severity: page}
        annotations: {summary: "{{ $labels.route }} at {{ $value }} expected {{ $expected }}"}
        draft: {component: Storefront, impact: degraded_performance}
`
	m, _ := newTestManager(t, src, rec, "", rules)
	var fired *model.Alert
	for ; i < len(vals); i++ {
		require.NoError(t, m.EvalGroups(context.Background(), t0.Add(time.Duration(i)*10*time.Second)))
		for _, a := range rec.take() {
			if fired == nil {
				fired = a
			}
		}
	}
	require.NotNil(t, fired)
	require.Equal(t, `{alertname="Lat", route="/buy", severity="page", team="shop"}`, fired.Labels.String())
	require.Equal(t, "/buy at 8 expected 1", fired.Annotations["summary"])
	require.Equal(t, t0.Add(20*time.Second), fired.StartsAt)
	require.Equal(t, "Storefront", fired.Draft.Component)
	require.Equal(t, []float64{1, 1, 8}, fired.Recent)
	require.NotNil(t, fired.Explanation)
	require.Equal(t, "spike", fired.Explanation.Kind)
	require.Equal(t, "spike", fired.Explanation.Evidence)
	require.Equal(t, "Lat: spike up to 8, expected 1 (normal 0 to 5); far outside the spread of its recent samples", fired.Explanation.Summary)
	require.Equal(t, 8.0, fired.Explanation.Signals[0].Current)
	require.Equal(t, 1.0, fired.Explanation.Signals[0].Expected)

	as := m.Alerts()
	require.Len(t, as, 1)
	require.Equal(t, "level_shift", as[0].Explanation.Kind, "a persisting departure is a level shift")
}

// autoQueueRule returns a rule manager, closed with the test, with one
// anomaly rule "Queue" over the series queue from src, judged by the
// real auto detector; what it sends goes to rec.
func autoQueueRule(t testing.TB, src *fakeSource, rec *recorder) *Manager {
	t.Helper()
	m, err := NewManager(Options{Source: src, Notify: rec.notify, OnTransition: rec.onTransition, Lookup: detect.Lookup, Kinds: detect.Kinds})
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close() })
	require.NoError(t, m.ApplyConfig(testConfig(writeRules(t, t.TempDir(), "r.yml", `groups:
  - name: g
    rules:
      - anomaly: Queue
        expr: queue
        detector: {type: auto}
`))))
	return m
}

// TestAutoRestartIsOneIncident: a gauge that keeps far above 0 reads 0
// for ten evaluations, as a restarted exporter's does. The rule pages
// once, names the drop for what it likely is, stays firing while the
// zeros last, and resolves once the series is back and calm.
func TestAutoRestartIsOneIncident(t *testing.T) {
	lset := labels.FromStrings("__name__", "queue", "pool", "io")
	const drop, zeros = 3*1440 + 100, 10
	rng := rand.New(rand.NewPCG(3, 4))
	vals := make([]float64, drop+200)
	for i := range vals {
		vals[i] = 50 + 10*math.Sin(2*math.Pi*float64(i)/1440) + rng.NormFloat64()
		if i >= drop && i < drop+zeros {
			vals[i] = 0
		}
	}
	i := 0
	rec := &recorder{}
	m := autoQueueRule(t, vecSource(lset, func(string, time.Time) (float64, bool) { return vals[i], true }), rec)
	var firing, resolved []*model.Alert
	for ; i < len(vals); i++ {
		require.NoError(t, m.EvalGroups(context.Background(), t0.Add(time.Duration(i)*time.Minute)))
		for _, a := range rec.take() {
			switch {
			case i < drop:
				require.Failf(t, "an alert before the drop", "row %d: %s", i, a.Explanation.Summary)
			case a.State == model.StateFiring && (len(firing) == 0 || !firing[len(firing)-1].StartsAt.Equal(a.StartsAt)):
				firing = append(firing, a)
			case a.State == model.StateResolved && len(resolved) == 0:
				resolved = append(resolved, a)
				require.GreaterOrEqual(t, i, drop+zeros, "resolved while the zeros last")
			}
		}
	}
	require.Len(t, firing, 1, "one page for the restart")
	require.Equal(t, t0.Add(drop*time.Minute), firing[0].StartsAt)
	require.Equal(t, "zero", firing[0].Explanation.Evidence)
	require.Contains(t, firing[0].Explanation.Summary, "restart", firing[0].Explanation.Summary)
	require.Len(t, resolved, 1, "resolved once back")
	t.Log(firing[0].Explanation.Summary)
}

// TestAutoLastingShiftIsOneIncident: a queue on a daily cycle, evaluated
// every 15 s, doubles for good on its fourth day, as after a deploy that
// halved a pool. The rule pages once and stays firing while the series
// stays beyond every estimate of normal it had before the move
// (detect.Verdict.Shifted), until a day later the detector takes the new
// level for the series' normal; the resolve then says it was no recovery.
// Before, the detector's episode ended within the hour, and each hour's
// slice, seeing the doubled value for the first time, paged again: 10
// pages over the day. A dip of half an hour on the same series recovers
// and resolves as before, with nothing noted.
//
// Changes that are no clean step page once too: noise three times what
// it was, and a rise of half over a day. The level follows them, so no
// run beyond every estimate begins, but the series lingers away from
// the normal it had at the alert (detect.Verdict.Lingering), and the
// rule holds while it does, for up to a day. Without that hold they
// paged 18 and 11 times over the day.
func TestAutoLastingShiftIsOneIncident(t *testing.T) {
	const perDay = 5760 // 15-s evaluations
	lset := labels.FromStrings("__name__", "queue", "pool", "io")
	doubled := func(x, _ float64, _ int) float64 { return 2 * x }
	for _, tc := range []struct {
		name        string
		from, until int // the evaluations the queue is changed at
		change      func(x, noise float64, k int) float64
		unrecovered bool
		heldBy      string // what /api/v1/alerts says holds the alert most of its hold
	}{
		{"doubled for good", 3 * perDay, 6 * perDay, doubled, true, holdMove},
		{"doubled for half an hour", 3*perDay + 40*60*4, 3*perDay + 40*60*4 + 120, doubled, false, ""},
		// Changes that are no clean step, which the level follows: the
		// series lingers away from the normal it had at the alert.
		{"noise tripled for good", 3 * perDay, 6 * perDay, func(x, noise float64, _ int) float64 { return x + x/(1+0.03*noise)*0.06*noise }, true, holdLingering},
		{"a rise of half over a day", 3 * perDay, 6 * perDay, func(x, _ float64, k int) float64 { return x * (1 + 0.5*min(float64(k)/perDay, 1)) }, true, holdLingering},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(5, 6))
			n := tc.from + perDay + perDay/4
			vals := make([]float64, n)
			for i := range vals {
				noise := rng.NormFloat64()
				vals[i] = 100 * (1 + 0.3*math.Sin(2*math.Pi*float64(i)/perDay)) * (1 + 0.03*noise)
				if i >= tc.from && i < tc.until {
					vals[i] = tc.change(vals[i], noise, i-tc.from)
				}
			}
			i := 0
			rec := &recorder{}
			m := autoQueueRule(t, vecSource(lset, func(string, time.Time) (float64, bool) { return vals[i], true }), rec)
			var firing, resolved []*model.Alert
			var apiUnrecovered []bool
			heldBy := map[string]int{} // hourly, while firing
			for ; i < n; i++ {
				require.NoError(t, m.EvalGroups(context.Background(), t0.Add(time.Duration(i)*15*time.Second)))
				if i%240 == 0 {
					as, _ := m.groups[0].rules[0].apiAlerts(stringSet{"firing": true})
					for _, aa := range as {
						heldBy[aa.HeldBy]++
					}
				}
				for _, a := range rec.take() {
					switch {
					case i < tc.from:
						require.Failf(t, "an alert before the move", "row %d: %s", i, a.Explanation.Summary)
					case a.State == model.StateFiring && (len(firing) == 0 || !firing[len(firing)-1].StartsAt.Equal(a.StartsAt)):
						firing = append(firing, a)
					case a.State == model.StateResolved && (len(resolved) == 0 || !resolved[len(resolved)-1].EndsAt.Equal(a.EndsAt)):
						resolved = append(resolved, a)
						as, _ := m.groups[0].rules[0].apiAlerts(stringSet{"resolved": true})
						for _, aa := range as {
							apiUnrecovered = append(apiUnrecovered, aa.Unrecovered)
						}
					}
				}
			}
			require.Len(t, firing, 1, "one page for the move")
			require.Len(t, resolved, 1, "one resolve")
			r := resolved[0]
			require.Equal(t, tc.unrecovered, r.Unrecovered, r.Explanation.Summary)
			require.Equal(t, tc.unrecovered, strings.Contains(r.Explanation.Summary, "resolved without recovering"), r.Explanation.Summary)
			if tc.unrecovered {
				require.Greater(t, r.EndsAt.Sub(r.StartsAt), 23*time.Hour, "firing while the move lasts")
			}
			require.Equal(t, []bool{tc.unrecovered}, apiUnrecovered, "the API's alert at its resolve")
			if tc.heldBy != "" {
				most, hours := "", 0
				for k, h := range heldBy {
					if k != "" && h > hours {
						most, hours = k, h
					}
				}
				require.Equal(t, tc.heldBy, most, "held by, hourly: %v", heldBy)
			}
			t.Logf("resolved after %s, held by (hourly) %v: %s", r.EndsAt.Sub(r.StartsAt), heldBy, r.Explanation.Summary)
		})
	}
}

// TestAutoExplanationSaysWhy: an auto rule's alert names what the
// detector found unusual, in the explanation's evidence and in words in
// its summary: a value far outside its recent spread, here (not yet a
// record: records count after a whole day).
func TestAutoExplanationSaysWhy(t *testing.T) {
	lset := labels.FromStrings("__name__", "queue", "pool", "io")
	i := 0
	val := func(i int) float64 {
		if i == 300 {
			return 400
		}
		return float64(10 + i%7) // within 10 to 16
	}
	rec := &recorder{}
	m := autoQueueRule(t, vecSource(lset, func(string, time.Time) (float64, bool) { return val(i), true }), rec)
	var fired *model.Alert
	for ; i <= 300 && fired == nil; i++ {
		require.NoError(t, m.EvalGroups(context.Background(), t0.Add(time.Duration(i)*time.Minute)))
		for _, a := range rec.take() {
			if a.State == model.StateFiring && fired == nil {
				fired = a
			}
		}
	}
	require.NotNil(t, fired, "no alert")
	require.Equal(t, 400.0, fired.Value)
	require.Equal(t, "spike", fired.Explanation.Evidence)
	require.True(t, strings.HasSuffix(fired.Explanation.Summary, "; far outside the spread of its recent samples"), fired.Explanation.Summary)
	t.Log(fired.Explanation.Summary)
}

func TestCompositeRule(t *testing.T) {
	var a float64
	src := &fakeSource{instant: func(q string, ts time.Time) (promql.Vector, error) {
		switch q {
		case "sum(a)":
			return promql.Vector{{Metric: labels.EmptyLabels(), F: a}}, nil
		case "b":
			return promql.Vector{
				{Metric: labels.FromStrings("client", "c2", "x", "1"), F: 1},
				{Metric: labels.FromStrings("client", "c1", "x", "1"), F: 1},
			}, nil
		}
		return nil, nil
	}}
	rec := &recorder{}
	m, _ := newTestManager(t, src, rec, "", "groups: [{name: g, rules: [{anomaly: S, detector: {type: fakecomp, a: sum(a), b: b}}]}]")
	a = 1
	require.NoError(t, m.EvalGroups(context.Background(), t0))
	require.Empty(t, rec.take())
	a = 15 // informational: told on the API, never an alert
	require.NoError(t, m.EvalGroups(context.Background(), t0.Add(5*time.Second)))
	require.Empty(t, rec.take())
	require.Empty(t, m.Alerts())
	rec2 := httptest.NewRecorder()
	m.RulesHandler().ServeHTTP(rec2, httptest.NewRequest(http.MethodGet, "/api/v1/rules", nil))
	require.Contains(t, rec2.Body.String(), `"info":[{"detector":"fakecomp"`)

	a = 50
	require.NoError(t, m.EvalGroups(context.Background(), t0.Add(10*time.Second)))
	sent := rec.take()
	require.Len(t, sent, 1)
	require.Equal(t, `{alertname="S"}`, sent[0].Labels.String())
	require.Equal(t, "a is 50", sent[0].Explanation.Summary)
	require.Equal(t, []float64{1, 15, 50}, sent[0].Recent)
	rs := m.groups[0].rules[0]
	require.Len(t, rs.series, 1, "one group: the first signal has no labels")
	for _, ss := range rs.series {
		require.Equal(t, []string{"c1", "c2"}, ss.comp.(*fakeComposite).Keys, "per-key samples keyed by key_label, sorted")
	}
}

// TestCompositeGroups splits a composite rule by the first signal's labels:
// one detector and one alert per instance; a label-less signal feeds every
// group, a labelled one only its own.
func TestCompositeGroups(t *testing.T) {
	a := map[string]float64{"i1": 1, "i2": 1}
	src := &fakeSource{instant: func(q string, ts time.Time) (promql.Vector, error) {
		switch q {
		case "a":
			return promql.Vector{
				{Metric: labels.FromStrings("instance", "i1"), F: a["i1"]},
				{Metric: labels.FromStrings("instance", "i2"), F: a["i2"]},
			}, nil
		case "b":
			return promql.Vector{
				{Metric: labels.FromStrings("instance", "i1", "client", "x"), F: 1},
				{Metric: labels.FromStrings("instance", "i2", "client", "y"), F: 1},
				{Metric: labels.FromStrings("client", "z"), F: 1},
			}, nil
		}
		return nil, nil
	}}
	rec := &recorder{}
	dataDir := t.TempDir()
	m, cfg := newTestManager(t, src, rec, dataDir, "groups: [{name: g, rules: [{anomaly: S, detector: {type: fakecomp, a: a, b: b}}]}]")
	ctx := context.Background()
	require.NoError(t, m.EvalGroups(ctx, t0))
	rs := m.groups[0].rules[0]
	require.Len(t, rs.series, 2)
	keys := map[string][]string{}
	for _, ss := range rs.series {
		keys[ss.labels.String()] = ss.comp.(*fakeComposite).Keys
	}
	require.Equal(t, map[string][]string{`{instance="i1"}`: {"x", "z"}, `{instance="i2"}`: {"y", "z"}}, keys)

	a["i2"] = 50
	require.NoError(t, m.EvalGroups(ctx, t0.Add(10*time.Second)))
	sent := rec.take()
	require.Len(t, sent, 1)
	require.Equal(t, `{alertname="S", instance="i2"}`, sent[0].Labels.String())
	require.Equal(t, []float64{1, 50}, sent[0].Recent)

	// Group detectors are saved and restored per group.
	m2 := reopen(t, m, src, dataDir, cfg)
	require.Len(t, m2.groups[0].rules[0].series, 2)
	require.Equal(t, model.StateFiring, m2.Alerts()[0].State)
}

// TestSeriesDormantAfterGrace: a series gone for longer than
// series_grace leaves the live set, its detector kept dormant for
// series_retention and woken, with what it had learnt, when the series
// comes back. Gone longer than that, it is forgotten, and so it is at
// once with series_retention 0. Dormant detectors are saved and restored
// with the rest.
func TestSeriesDormantAfterGrace(t *testing.T) {
	present := true
	lset := labels.FromStrings("__name__", "x")
	src := vecSource(lset, func(string, time.Time) (float64, bool) { return 1, present })
	const rules = "groups: [{name: g, rules: [{anomaly: A, expr: x, detector: {type: fake}}]}]"
	m, cfg := newTestManager(t, src, &recorder{}, "", rules)
	ctx := context.Background()
	require.NoError(t, m.EvalGroups(ctx, t0))
	rs := m.groups[0].rules[0]
	require.Len(t, rs.series, 1)
	seen := func() int { return rs.series[lset.Hash()].det.(*fakeDetector).N } // samples its detector saw
	present = false
	require.NoError(t, m.EvalGroups(ctx, t0.Add(cfg.SeriesGrace)))
	require.Len(t, rs.series, 1, "live within the grace period")
	require.NoError(t, m.EvalGroups(ctx, t0.Add(cfg.SeriesGrace+time.Second)))
	require.Empty(t, rs.series, "out of the live set after the grace period")
	require.Len(t, rs.dormant, 1, "dormant")
	require.NotEmpty(t, rs.dormant[lset.Hash()].snap, "kept as its snapshot")
	require.Nil(t, rs.dormant[lset.Hash()].det)
	live, dormant := m.detectorCounts()
	require.Equal(t, [2]int{0, 1}, [2]int{live, dormant}, "seismo_rules_detectors")
	require.Equal(t, 1, rs.api().Detector.Dormant, "the API's count")

	present = true
	back := t0.Add(time.Hour)
	require.NoError(t, m.EvalGroups(ctx, back))
	require.Empty(t, rs.dormant)
	require.Equal(t, 2, seen(), "woken with the sample it had seen")

	present = false
	require.NoError(t, m.EvalGroups(ctx, back.Add(cfg.SeriesGrace+time.Second)))
	require.Len(t, rs.dormant, 1)
	require.NoError(t, m.EvalGroups(ctx, back.Add(cfg.SeriesRetention+time.Second)))
	require.Empty(t, rs.dormant, "forgotten after series_retention")
	present = true
	require.NoError(t, m.EvalGroups(ctx, back.Add(cfg.SeriesRetention+2*time.Second)))
	require.Equal(t, 1, seen(), "a new detector")

	// Saved and restored, and dormant again at the first evaluation
	// without its series.
	dataDir := t.TempDir()
	present = true
	m4, cfg4 := newTestManager(t, src, &recorder{}, dataDir, rules)
	require.NoError(t, m4.EvalGroups(ctx, t0))
	require.NoError(t, m4.EvalGroups(ctx, t0.Add(time.Second)))
	present = false
	require.NoError(t, m4.EvalGroups(ctx, t0.Add(cfg.SeriesGrace+2*time.Second)))
	require.Len(t, m4.groups[0].rules[0].dormant, 1)
	m5 := reopen(t, m4, src, dataDir, cfg4)
	rs5 := m5.groups[0].rules[0]
	require.NoError(t, m5.EvalGroups(ctx, t0.Add(cfg.SeriesGrace+3*time.Second)))
	require.Empty(t, rs5.series)
	require.Len(t, rs5.dormant, 1, "restored dormant")
	present = true
	require.NoError(t, m5.EvalGroups(ctx, t0.Add(cfg.SeriesGrace+4*time.Second)))
	require.Equal(t, 3, rs5.series[lset.Hash()].det.(*fakeDetector).N, "woken with the two samples it had seen")

	// A retention within the grace period is refused, naming both.
	bad := cfg
	bad.SeriesRetention = time.Minute
	require.ErrorContains(t, bad.Validate(), "series_retention: must be 0 (keep no dormant detectors) or longer than series_grace (5m0s), got 1m0s")
	bad.SeriesRetention = -time.Hour
	require.ErrorContains(t, bad.Validate(), "series_retention: must be 0")

	// With series_retention 0 nothing is kept after series_grace.
	present = true
	cfg.SeriesRetention = 0
	m3, err := NewManager(Options{Source: src, Lookup: fakeLookup, Kinds: fakeKindNames})
	require.NoError(t, err)
	defer m3.Close()
	require.NoError(t, m3.ApplyConfig(cfg))
	rs3 := m3.groups[0].rules[0]
	require.NoError(t, m3.EvalGroups(ctx, t0))
	present = false
	require.NoError(t, m3.EvalGroups(ctx, t0.Add(cfg.SeriesGrace+time.Second)))
	require.Empty(t, rs3.series)
	require.Empty(t, rs3.dormant)
}

// TestDormantLimit: a rule whose series churn (a pod label that every
// deploy changes) keeps at most dormant_limit dormant detectors, and
// forgets first those whose series have been gone longest; a series
// back within the limit is woken with what it had learnt.
func TestDormantLimit(t *testing.T) {
	var pods []string // the series present now
	src := &fakeSource{instant: func(_ string, ts time.Time) (promql.Vector, error) {
		var v promql.Vector
		for _, p := range pods {
			v = append(v, promql.Sample{Metric: labels.FromStrings("__name__", "x", "pod", p), F: 1, T: ts.UnixMilli()})
		}
		return v, nil
	}}
	hash := func(p string) uint64 { return labels.FromStrings("__name__", "x", "pod", p).Hash() }
	set := metrics.NewSet()
	m, err := NewManager(Options{Source: src, Lookup: fakeLookup, Kinds: fakeKindNames, Metrics: set})
	require.NoError(t, err)
	defer m.Close()
	cfg := testConfig(writeRules(t, t.TempDir(), "r.yml", "groups: [{name: g, rules: [{anomaly: A, expr: x, detector: {type: fake}}]}]"))
	cfg.DormantLimit = 3
	require.NoError(t, m.ApplyConfig(cfg))
	ctx := context.Background()
	rs := m.groups[0].rules[0]

	// Five deploys a minute apart, each replacing the pod: a, b, c, d, e.
	ts := t0
	for _, p := range []string{"a", "b", "c", "d", "e"} {
		pods = []string{p}
		require.NoError(t, m.EvalGroups(ctx, ts))
		ts = ts.Add(time.Minute)
	}
	pods = nil
	require.NoError(t, m.EvalGroups(ctx, ts.Add(cfg.SeriesGrace+time.Second)))
	require.Empty(t, rs.series)
	var kept []string
	for _, p := range []string{"a", "b", "c", "d", "e"} {
		if rs.dormant[hash(p)] != nil {
			kept = append(kept, p)
		}
	}
	require.Equal(t, []string{"c", "d", "e"}, kept, "the three seen last kept")
	require.Equal(t, "2", metricValue(t, set, `seismo_rules_group_dormant_evictions_total{file="`+cfg.Files[0]+`",group="g"}`))

	// c comes back with what it had learnt; a starts again.
	pods = []string{"a", "c"}
	require.NoError(t, m.EvalGroups(ctx, ts.Add(cfg.SeriesGrace+2*time.Second)))
	require.Equal(t, 2, rs.series[hash("c")].det.(*fakeDetector).N, "woken")
	require.Equal(t, 1, rs.series[hash("a")].det.(*fakeDetector).N, "a new detector")

	// A negative limit is refused, naming the field.
	bad := cfg
	bad.DormantLimit = -1
	require.ErrorContains(t, bad.Validate(), "dormant_limit: must not be negative")
}

// TestCompositeDormant: a composite rule's group (here an instance)
// whose first signal vanishes for longer than series_grace, while other
// groups' goes on, keeps its detector dormant and wakes it when the
// instance comes back.
func TestCompositeDormant(t *testing.T) {
	present := true
	src := &fakeSource{instant: func(q string, ts time.Time) (promql.Vector, error) {
		vec := promql.Vector{{Metric: labels.FromStrings("instance", "i2"), F: 1}}
		if present {
			vec = append(vec, promql.Sample{Metric: labels.FromStrings("instance", "i1"), F: 1})
		}
		return vec, nil
	}}
	m, cfg := newTestManager(t, src, &recorder{}, "", "groups: [{name: g, rules: [{anomaly: S, detector: {type: fakecomp, a: a, b: b}}]}]")
	ctx := context.Background()
	require.NoError(t, m.EvalGroups(ctx, t0))
	rs := m.groups[0].rules[0]
	require.Len(t, rs.series, 2)
	i1 := labels.FromStrings("instance", "i1").Hash()
	present = false
	require.NoError(t, m.EvalGroups(ctx, t0.Add(cfg.SeriesGrace+time.Second)))
	require.Len(t, rs.series, 1)
	require.Len(t, rs.dormant, 1)
	require.NotEmpty(t, rs.dormant[i1].snap)
	present = true
	require.NoError(t, m.EvalGroups(ctx, t0.Add(time.Hour)))
	require.Empty(t, rs.dormant)
	require.Equal(t, 2, rs.series[i1].comp.(*fakeComposite).N, "woken with what it had seen")
}

// TestAutoKeepsItsDayAcrossAnOutage: a queue on a daily cycle, evaluated
// every minute for three days, then gone for 30 minutes (its target
// down) and back. Its auto detector comes back with the day it had
// learnt: no warm-up, and no page for values the day explains. With
// series_retention 0 it starts again from nothing.
func TestAutoKeepsItsDayAcrossAnOutage(t *testing.T) {
	lset := labels.FromStrings("__name__", "queue", "pool", "io")
	const gone, back = 3*1440 + 600, 3*1440 + 630
	rng := rand.New(rand.NewPCG(7, 8))
	vals := make([]float64, back+120)
	for i := range vals {
		vals[i] = 50 + 10*math.Sin(2*math.Pi*float64(i)/1440) + rng.NormFloat64()
	}
	for _, retention := range []time.Duration{24 * time.Hour, 0} {
		i := 0
		rec := &recorder{}
		m := autoQueueRule(t, vecSource(lset, func(string, time.Time) (float64, bool) { return vals[i], i < gone || i >= back }), rec)
		cfg := m.cfg
		cfg.SeriesRetention = retention
		require.NoError(t, m.ApplyConfig(cfg))
		rs := m.groups[0].rules[0]
		for ; i < len(vals); i++ {
			require.NoError(t, m.EvalGroups(context.Background(), t0.Add(time.Duration(i)*time.Minute)))
			if i == back {
				state := rs.series[lset.Hash()].last.State
				if retention > 0 {
					require.Equal(t, detect.StateNormal, state, "back with what it learnt")
				} else {
					require.Equal(t, detect.StateWarmingUp, state, "forgotten")
				}
			}
		}
		require.Empty(t, rec.take(), "retention %s: no page", retention)
	}
}

// TestRunLoop drives the evaluation loop on fake time: ticks land on the
// group's deterministic offset, firing alerts are re-sent every
// resend_delay, and Run returns when its context ends.
func TestRunLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lset := labels.FromStrings("__name__", "x")
		var mu sync.Mutex
		var evals []time.Time
		src := vecSource(lset, func(_ string, ts time.Time) (float64, bool) {
			mu.Lock()
			defer mu.Unlock()
			evals = append(evals, ts)
			return 9, true
		})
		rec := &recorder{}
		m, cfg := newTestManager(t, src, rec, "", "groups: [{name: g, interval: 10s, rules: [{alert: A, expr: 'x > 5'}]}]")
		cfg.ResendDelay = 30 * time.Second
		require.NoError(t, m.ApplyConfig(cfg))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- m.Run(ctx) }()
		time.Sleep(95 * time.Second)
		synctest.Wait()
		cancel()
		require.NoError(t, <-done)

		mu.Lock()
		defer mu.Unlock()
		off := groupOffset(m.groups[0].spec)
		require.Len(t, evals, int((95*time.Second-off)/(10*time.Second))+1, "one evaluation per interval")
		for i, ts := range evals {
			require.Equal(t, off, time.Duration(ts.UnixNano())%(10*time.Second), "eval %d at the group's offset", i)
			if i > 0 {
				require.Equal(t, 10*time.Second, ts.Sub(evals[i-1]))
			}
		}
		sent := rec.take()
		require.Len(t, sent, (len(evals)-1)/3+1, "first firing plus a re-send every 30s")
		for _, a := range sent {
			require.Equal(t, evals[0], a.StartsAt)
			require.True(t, a.EndsAt.After(a.StartsAt))
		}
	})
}

// TestFlappingEnds checks that a flapping alert that calms down sends its
// real state once, and that flapping is not entered below the threshold.
func TestFlappingEnds(t *testing.T) {
	lset := labels.FromStrings("__name__", "x")
	var v float64
	src := vecSource(lset, func(q string, ts time.Time) (float64, bool) { return v, v > 5 })
	rec := &recorder{}
	m, cfg := newTestManager(t, src, rec, "", "groups: [{name: g, rules: [{alert: A, expr: 'x > 5'}]}]")
	ctx := context.Background()
	ts := t0
	step := func(val float64) []*model.Alert {
		v = val
		ts = ts.Add(10 * time.Second)
		require.NoError(t, m.EvalGroups(ctx, ts))
		return rec.take()
	}
	for _, val := range []float64{9, 1, 9, 1} { // four changes: flapping
		step(val)
	}
	as := m.Alerts()
	require.Len(t, as, 1)
	require.True(t, as[0].Flapping)
	// Quiet (resolved) for a whole flap window: one resolved notice, not
	// flapping any more.
	var sent []*model.Alert
	for ts.Sub(t0) < 20*time.Minute {
		sent = append(sent, step(1)...)
	}
	require.NotEmpty(t, sent)
	last := sent[len(sent)-1]
	require.False(t, last.Flapping)
	require.Equal(t, model.StateResolved, last.State)
	calm := false
	for i, a := range sent {
		if !a.Flapping {
			calm = true
		}
		if calm {
			require.False(t, a.Flapping, "sent %d: flapping again after calming down", i)
			require.Equal(t, model.StateResolved, a.State, "sent %d", i)
		} else {
			require.Equal(t, model.StateFiring, a.State, "sent %d: a flapping alert stays open downstream", i)
		}
	}
	require.LessOrEqual(t, len(sent), int(20*time.Minute/cfg.ResendDelay)+1, "at most one notice per resend delay")
}

func TestWarmStart(t *testing.T) {
	lset := labels.FromStrings("__name__", "x")
	var rangeCalls int
	src := vecSource(lset, func(string, time.Time) (float64, bool) { return 9, true })
	hist := &fakeSource{instant: src.instant}
	rangeFn := func(q string, start, end time.Time, step time.Duration) (promql.Matrix, error) {
		rangeCalls++
		var pts []promql.FPoint
		for ts := start; !ts.After(end); ts = ts.Add(step) {
			pts = append(pts, promql.FPoint{T: ts.UnixMilli(), F: 1})
		}
		return promql.Matrix{{Metric: lset, Floats: pts}}, nil
	}
	rec := &recorder{}
	m, err := NewManager(Options{Source: &rangeSource{hist, rangeFn}, Notify: rec.notify, Lookup: fakeLookup, Kinds: fakeKindNames})
	require.NoError(t, err)
	cfg := testConfig(writeRules(t, t.TempDir(), "r.yml", "groups: [{name: g, rules: [{anomaly: A, expr: x, detector: {type: fake, threshold: 5, warm_up: 5}}]}]"))
	cfg.WarmStart = time.Minute
	require.NoError(t, m.ApplyConfig(cfg))
	require.NoError(t, m.EvalGroups(context.Background(), t0))
	require.Equal(t, 1, rangeCalls)
	sent := rec.take()
	require.Len(t, sent, 1, "warm detector judges at the first evaluation")
	require.Equal(t, []float64{1, 1, 1, 1, 1, 1, 1, 9}, sent[0].Recent, "a minute of history at 10s, both ends included")
	require.NoError(t, m.EvalGroups(context.Background(), t0.Add(10*time.Second)))
	require.Equal(t, 1, rangeCalls, "warm start runs once")
}

type rangeSource struct {
	*fakeSource
	rangeFn func(q string, start, end time.Time, step time.Duration) (promql.Matrix, error)
}

func (r *rangeSource) Range(_ context.Context, q string, start, end time.Time, step time.Duration) (promql.Matrix, error) {
	return r.rangeFn(q, start, end, step)
}

// TestFiringHeldWhileDetectorRewarms changes a firing anomaly rule's
// detector config: the new detector warms up, and the alert stays firing
// instead of resolving on no evidence.
func TestFiringHeldWhileDetectorRewarms(t *testing.T) {
	lset := labels.FromStrings("__name__", "x")
	src := vecSource(lset, func(string, time.Time) (float64, bool) { return 9, true })
	rec := &recorder{}
	dir := t.TempDir()
	m, err := NewManager(Options{Source: src, Notify: rec.notify, OnTransition: rec.onTransition, Lookup: fakeLookup, Kinds: fakeKindNames})
	require.NoError(t, err)
	f := writeRules(t, dir, "r.yml", "groups: [{name: g, rules: [{anomaly: A, expr: x, detector: {type: fake, threshold: 5}}]}]")
	cfg := testConfig(f)
	require.NoError(t, m.ApplyConfig(cfg))
	ctx := context.Background()
	require.NoError(t, m.EvalGroups(ctx, t0))
	require.Equal(t, model.StateFiring, m.Alerts()[0].State)

	writeRules(t, dir, "r.yml", "groups: [{name: g, rules: [{anomaly: A, expr: x, detector: {type: fake, threshold: 6, warm_up: 2}}]}]")
	require.NoError(t, m.ApplyConfig(cfg))
	for i := 1; i <= 3; i++ {
		require.NoError(t, m.EvalGroups(ctx, t0.Add(time.Duration(i)*10*time.Second)))
		require.Equal(t, model.StateFiring, m.Alerts()[0].State, "eval %d", i)
	}
	for _, tr := range rec.transitions {
		require.NotEqual(t, model.StateResolved, tr.To)
	}
}

// TestCompositeSignalsQueriedOncePerEval checks that the built-in pack's
// shapes, which share the request rate and p99 latency, query each shared
// expression once per evaluation.
func TestCompositeSignalsQueriedOncePerEval(t *testing.T) {
	var mu sync.Mutex
	calls := map[string]int{}
	src := &fakeSource{instant: func(q string, _ time.Time) (promql.Vector, error) {
		mu.Lock()
		calls[q]++
		mu.Unlock()
		return promql.Vector{{Metric: labels.EmptyLabels(), F: 1}}, nil
	}}
	m, err := NewManager(Options{Source: src, Kinds: detect.Kinds})
	require.NoError(t, err)
	defer m.Close()
	cfg := testConfig()
	cfg.Builtin.Enabled = true
	require.NoError(t, m.ApplyConfig(cfg))
	for i := range 2 {
		require.NoError(t, m.EvalGroups(context.Background(), t0.Add(time.Duration(i)*15*time.Second)))
	}
	requests := `sum(rate(http_requests_total[1m]))`
	p99 := `histogram_quantile(0.99, sum by (le) (rate(http_request_duration_seconds_bucket[1m])))`
	require.Equal(t, 2, calls[requests], "request rate: once per evaluation (saturation traffic, surge requests)")
	require.Equal(t, 2, calls[p99], "p99 latency: once per evaluation (saturation symptom, surge latency)")
}

// TestEvidenceWords: every evidence a detector can name has words in the
// summary, and no evidence has none.
func TestEvidenceWords(t *testing.T) {
	require.Empty(t, evidenceWords(detect.EvidenceNone))
	seen := map[string]bool{}
	for e := detect.EvidenceLevel; e.String() != ""; e++ {
		w := evidenceWords(e)
		require.NotEmpty(t, w, "evidence %v", e)
		require.False(t, seen[w], "two evidences read the same: %q", w)
		seen[w] = true
	}
	require.Len(t, seen, 7)
}

// TestExplanationSummary: a value outside its band is a spike, dip or
// level shift in its direction; one inside it (anomalous for a run of
// samples or for its changes) is only a value, which the evidence
// explains. A band edge that is the detector's float tolerance beside
// numbers a billion times larger reads 0.
func TestExplanationSummary(t *testing.T) {
	r := &Rule{Name: "Q", Detector: &DetectorSpec{Type: "auto"}}
	for _, tt := range []struct {
		v     detect.Verdict
		value float64
		run   int
		want  string
	}{
		{detect.Verdict{Expected: 0, Lower: 0, Upper: 3e-9, Direction: detect.DirUp, Evidence: detect.EvidenceSpike}, 3, 1,
			"Q: spike up to 3, expected 0 (normal 0 to 0); far outside the spread of its recent samples"},
		{detect.Verdict{Expected: 100, Lower: 90, Upper: 110, Direction: detect.DirDown, Evidence: detect.EvidenceRecord}, 40, 1,
			"Q: dip down to 40, expected 100 (normal 90 to 110); outside the range of every value seen before"},
		{detect.Verdict{Expected: 100, Lower: 90, Upper: 110, Direction: detect.DirUp, Evidence: detect.EvidenceLevel}, 150, 5,
			"Q: level shift up to 150, expected 100 (normal 90 to 110); its recent samples together lie unusually far from its level"},
		{detect.Verdict{Expected: 0.08333, Lower: 0, Upper: 0.4442, Direction: detect.DirDown, Evidence: detect.EvidenceChanges}, 0, 4,
			"Q: value 0, expected 0.08333 (normal 0 to 0.4442); it moves from sample to sample far more than usual"},
		{detect.Verdict{Expected: 0, Lower: 0, Upper: 0, Direction: detect.DirNone}, 0, 1,
			"Q: value 0, expected 0 (normal 0 to 0)"},
	} {
		require.Equal(t, tt.want, univariateExplanation(r, tt.v, tt.value, tt.run, 1).Summary)
	}
	// A value that has stopped moving says so, from minUnchanged
	// evaluations; a full sparkline of it, "or more".
	v := detect.Verdict{Expected: 103.6, Lower: 93.1, Upper: 114.1, Direction: detect.DirDown, Evidence: detect.EvidenceTimeOfDay}
	require.Equal(t, "Q: value 100, expected 103.6 (normal 93.1 to 114.1); unusual for this time of day", univariateExplanation(r, v, 100, 1, minUnchanged-1).Summary)
	require.Equal(t, "Q: value 100, expected 103.6 (normal 93.1 to 114.1); unusual for this time of day; unchanged at 100 for the last 5 evaluations", univariateExplanation(r, v, 100, 1, minUnchanged).Summary)
	require.Equal(t, "Q: value 100, expected 103.6 (normal 93.1 to 114.1); unusual for this time of day; unchanged at 100 for the last 30 evaluations or more", univariateExplanation(r, v, 100, 1, recentLen).Summary)
}

// TestAutoOutageInWavesIsOneIncident: an auto rule over an outage that
// comes in waves pages once and resolves once, after the last wave. In
// the lulls the detector's state turns normal, but its episode stays
// open (detect.Verdict.Episode), and the alert keeps firing; without the
// hold it resolved at the first lull and fired again at the next wave.
func TestAutoOutageInWavesIsOneIncident(t *testing.T) {
	lset := labels.FromStrings("__name__", "queue", "pool", "io")
	const start, wave, lull, waves = 600, 3, 10, 3
	rng := rand.New(rand.NewPCG(5, 6))
	vals := make([]float64, 800)
	for i := range vals {
		vals[i] = 100 + 5*rng.NormFloat64()
		if k := i - start; k >= 0 && k < waves*(wave+lull) && k%(wave+lull) < wave {
			vals[i] = 400
		}
	}
	i := 0
	rec := &recorder{}
	m := autoQueueRule(t, vecSource(lset, func(string, time.Time) (float64, bool) { return vals[i], true }), rec)
	at := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Minute) }
	// The same detector beside the rule's, to see its state in the lulls.
	twin := detect.NewAuto(detect.DefaultAutoConfig())
	var sent []*model.Alert
	lulls := 0
	for ; i < len(vals); i++ {
		require.NoError(t, m.EvalGroups(context.Background(), at(i)))
		sent = append(sent, rec.take()...)
		v := twin.Observe(at(i).UnixMilli(), vals[i])
		if i > start && i < start+(waves-1)*(wave+lull) && v.State == detect.StateNormal {
			lulls++
		}
	}
	require.Positive(t, lulls, "the detector's state never turned normal between waves: the test shows nothing")
	var firing, resolved []*model.Alert
	for _, a := range sent {
		switch a.State {
		case model.StateFiring:
			if len(firing) == 0 || !firing[len(firing)-1].StartsAt.Equal(a.StartsAt) {
				firing = append(firing, a) // a new firing episode, not a repeat
			}
		case model.StateResolved:
			if len(resolved) == 0 || !resolved[len(resolved)-1].EndsAt.Equal(a.EndsAt) {
				resolved = append(resolved, a) // not a resend of the same resolve
			}
		}
	}
	require.Len(t, firing, 1, "one page for the outage")
	require.Equal(t, at(start), firing[0].StartsAt)
	require.Len(t, resolved, 1, "one resolve")
	lastWave := start + (waves-1)*(wave+lull) + wave - 1
	require.True(t, resolved[0].EndsAt.After(at(lastWave)), "resolved at %v, before the last wave ended at %v", resolved[0].EndsAt, at(lastWave))
	// The last wave's anomalous sample scored 0 (no new alert) and said
	// nothing of why; the alert keeps the explanation before it.
	require.NotEmpty(t, resolved[0].Explanation.Evidence, "the alert lost its explanation: %s", resolved[0].Explanation.Summary)
}

// TestHeldAlertAndKeepFiringFor: a firing alert holds while the
// detector's episode is open (its condition false, KeepFiringSince set
// at the lull's start, as keep_firing_for sets it), and resolves once
// the episode has ended and keep_firing_for has passed since the
// condition went false, whichever comes later.
func TestHeldAlertAndKeepFiringFor(t *testing.T) {
	r := &Rule{KeepFiringFor: 2 * time.Minute}
	lc := Lifecycle{FlapWindow: time.Hour, ResolvedRetention: time.Hour}
	fire := func() *alertState {
		a := &alertState{}
		a.step(t0, condition{active: true, known: true, value: 1}, r, lc)
		require.Equal(t, model.StateFiring, a.State)
		return a
	}
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	held := condition{known: true, held: holdEpisode}
	ended := condition{known: true}

	// A long episode: held for ten minutes, then resolved at its end,
	// keep_firing_for having passed long before.
	a := fire()
	for m := 1; m <= 10; m++ {
		a.step(at(m), held, r, lc)
		require.Equal(t, model.StateFiring, a.State, "minute %d", m)
		require.Equal(t, at(1), a.KeepFiringSince, "the condition went false at the lull's start")
		require.Equal(t, holdEpisode, a.HeldBy, "minute %d", m)
	}
	a.step(at(11), ended, r, lc)
	require.Equal(t, model.StateResolved, a.State)
	require.Equal(t, at(11), a.ResolvedAt)
	require.Empty(t, a.HeldBy, "resolved")

	// A short episode: it ends a minute into the lull, and
	// keep_firing_for holds the alert a minute more.
	a = fire()
	a.step(at(1), held, r, lc)
	a.step(at(2), ended, r, lc)
	require.Equal(t, model.StateFiring, a.State, "keep_firing_for has not passed")
	require.Equal(t, holdKeepFiringFor, a.HeldBy)
	a.step(at(3), ended, r, lc)
	require.Equal(t, model.StateResolved, a.State)

	// A new wave within the episode clears KeepFiringSince.
	a = fire()
	a.step(at(1), held, r, lc)
	a.step(at(2), condition{active: true, known: true, held: holdEpisode, value: 2}, r, lc)
	require.True(t, a.KeepFiringSince.IsZero())
	require.Empty(t, a.HeldBy, "firing on its own condition")
	require.Equal(t, model.StateFiring, a.State)
}

// TestLingeredAlertResolvesUnrecovered: an alert held by its series
// lingering away from the normal it fired against resolves marked
// unrecovered when the detector's memory of that normal runs out
// (detect.LingerFor after the alert), though its value lies within the
// band, as a tripled noise's may; one whose lingering ended sooner (the
// series came back) resolves as a recovery.
func TestLingeredAlertResolvesUnrecovered(t *testing.T) {
	r := &Rule{}
	lc := Lifecycle{FlapWindow: time.Hour, ResolvedRetention: time.Hour}
	for _, tc := range []struct {
		held        time.Duration
		unrecovered bool
	}{
		{2 * time.Hour, false},
		{detect.LingerFor, true},
	} {
		a := &alertState{Explanation: &model.Explanation{Summary: "Q: noisy"}}
		a.Verdict = detect.Verdict{Lower: 90, Upper: 110, Direction: detect.DirUp}
		a.step(t0, condition{active: true, known: true, value: 130}, r, lc)
		require.Equal(t, model.StateFiring, a.State)
		a.step(t0.Add(time.Minute), condition{known: true, held: holdLingering, value: 95}, r, lc)
		require.Equal(t, model.StateFiring, a.State, "held")
		require.Equal(t, holdLingering, a.HeldBy)
		a.step(t0.Add(tc.held), condition{known: true, value: 101}, r, lc)
		require.Equal(t, model.StateResolved, a.State)
		require.Equal(t, tc.unrecovered, a.Unrecovered, "held %s", tc.held)
		if tc.unrecovered {
			require.Equal(t, "Q: noisy; resolved without recovering: for a day the series stayed away from the normal it had when the alert fired (90 to 110), and the detector now takes it for normal", a.Explanation.Summary)
		} else {
			require.Equal(t, "Q: noisy", a.Explanation.Summary)
		}
	}
}

// TestAutoStuckValueSaysUnchanged: a queue on a daily cycle, evaluated
// every 15 s, that freezes at one value (an exporter that hung) pages as
// frozen once auto judges the run of repeats a freeze (detect, frozen),
// and the page says the value has not moved and for how long. Before,
// it paged an hour later, as unusual for this time of day.
func TestAutoStuckValueSaysUnchanged(t *testing.T) {
	const perDay = 5760
	lset := labels.FromStrings("__name__", "queue", "pool", "io")
	rng := rand.New(rand.NewPCG(1, 6))
	vals := make([]float64, 3*perDay+perDay/8)
	for i := range vals {
		vals[i] = 100 * (1 + 0.3*math.Sin(2*math.Pi*float64(i)/perDay)) * (1 + 0.03*rng.NormFloat64())
		if i >= 3*perDay {
			vals[i] = 100
		}
	}
	i := 0
	rec := &recorder{}
	m := autoQueueRule(t, vecSource(lset, func(string, time.Time) (float64, bool) { return vals[i], true }), rec)
	var page *model.Alert
	for ; i < len(vals) && page == nil; i++ {
		require.NoError(t, m.EvalGroups(context.Background(), t0.Add(time.Duration(i)*15*time.Second)))
		for _, a := range rec.take() {
			if a.State == model.StateFiring && i >= 3*perDay {
				page = a
			}
		}
	}
	require.NotNil(t, page, "the frozen value never paged")
	require.Equal(t, "frozen", page.Explanation.Kind, page.Explanation.Summary)
	require.Equal(t, "frozen", page.Explanation.Evidence, page.Explanation.Summary)
	require.Contains(t, page.Explanation.Summary, "; it has stopped moving")
	require.Contains(t, page.Explanation.Cause, "stopped updating")
	// auto judges a run of repeats a freeze once it spans 10 minutes
	// (40 evaluations at 15 s), longer than the 30 values an alert keeps.
	require.Contains(t, page.Explanation.Summary, "; unchanged at 100 for the last 30 evaluations or more")
	require.Less(t, i-3*perDay, 45, "paged late")
	t.Logf("paged %s after the freeze: %s", time.Duration(i-3*perDay)*15*time.Second, page.Explanation.Summary)
}

// TestAutoFreezeIsOneIncident: a queue on a daily cycle, evaluated every
// 15 s, frozen for three hours on its fourth day (an exporter that hung
// and came back) is one page that fires through the freeze, says by then
// that the value is frozen, and resolves within half an hour of the
// value moving again: from the freeze's start to an hour after its end,
// one firing and one resolve.
func TestAutoFreezeIsOneIncident(t *testing.T) {
	const perDay = 5760
	lset := labels.FromStrings("__name__", "queue", "pool", "io")
	rng := rand.New(rand.NewPCG(2, 6))
	from, until := 3*perDay+perDay*10/24, 3*perDay+perDay*13/24
	vals := make([]float64, until+240)
	for i := range vals {
		vals[i] = 100 * (1 + 0.3*math.Sin(2*math.Pi*float64(i)/perDay)) * (1 + 0.03*rng.NormFloat64())
		if i >= from && i < until {
			vals[i] = vals[from-1]
		}
	}
	i := 0
	rec := &recorder{}
	m := autoQueueRule(t, vecSource(lset, func(string, time.Time) (float64, bool) { return vals[i], true }), rec)
	var firing, resolved []int
	firingRows := 0
	for ; i < len(vals); i++ {
		require.NoError(t, m.EvalGroups(context.Background(), t0.Add(time.Duration(i)*15*time.Second)))
		as, _ := m.groups[0].rules[0].apiAlerts(stringSet{"firing": true})
		if len(as) > 0 && i >= from && i < until {
			firingRows++
		}
		if i == until-1 {
			// The page may come first as unusual for the hour (the held
			// value soon lies away from it); by the end it says frozen.
			require.Len(t, as, 1, "firing at the freeze's end")
			require.Equal(t, "frozen", as[0].Explanation.Kind, as[0].Explanation.Summary)
			require.Contains(t, as[0].Explanation.Summary, "it has stopped moving")
		}
		for _, a := range rec.take() {
			if i < from {
				continue // the days before: the series' own false alarms, if any
			}
			switch a.State {
			case model.StateFiring:
				if len(firing) == len(resolved) {
					firing = append(firing, i)
				}
			case model.StateResolved:
				if len(resolved) < len(firing) {
					resolved = append(resolved, i)
				}
			}
		}
	}
	require.Len(t, firing, 1, "pages from the freeze to an hour after it, at rows %v", firing)
	require.Len(t, resolved, 1, "resolves")
	// Within half an hour: the level comes back from three hours behind,
	// as after three hours of missing samples.
	require.Less(t, resolved[0]-until, 120, "resolved %s after the value moved", time.Duration(resolved[0]-until)*15*time.Second)
	// Firing from the page (10 minutes in) to the freeze's end.
	require.Greater(t, firingRows, until-from-60, "firing at %d of the freeze's %d evaluations", firingRows, until-from)
	t.Logf("paged %s into the freeze, resolved %s after it", time.Duration(firing[0]-from)*15*time.Second, time.Duration(resolved[0]-until)*15*time.Second)
}
