package rules

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/stretchr/testify/require"

	"github.com/seismo-agent/seismo/detect"
	"github.com/seismo-agent/seismo/internal/model"
)

// frozenSeries is one series of TestFrozenTogetherIsOnePage: a daily
// cycle whose value is held from row from for rows rows.
type frozenSeries struct {
	metric, instance string
	from, rows       int
	vals             []float64
}

// TestFrozenTogetherIsOnePage: evaluated every 15 s and every minute, an
// exporter on instance a hangs at 10:00 on the fourth day, and two rules, Queue and Inflight, watch its
// metrics. They page once between them: the rule that sees the freeze
// first pages, the other's alert fires suppressed by it. A freeze at the
// same time on instance b (another target) pages on its own, and so
// does one that begins two hours later on instance a (another cause).
// The hang's page names the other rule's series as stopped with it;
// the others name none.
// The same with the agent restarted seven minutes into the hang: when
// each series stopped moving is kept with its detector. And with
// Inflight under `for: 30m` and a hang of 20 minutes: Inflight's alert,
// pending, suppresses nothing, so Queue pages the hang; a pending alert
// that never fires must not have held back the one page. And with Queue
// in one group and the others in another, on the same datasource.
func TestFrozenTogetherIsOnePage(t *testing.T) {
	for _, step := range []time.Duration{15 * time.Second, time.Minute} {
		for _, variant := range []string{"running", "restarted", "for", "groups"} {
			t.Run(step.String()+"/"+variant, func(t *testing.T) {
				hangPages(t, step, variant)
			})
		}
	}
}

func hangPages(t *testing.T, step time.Duration, variant string) {
	perDay := int(24 * time.Hour / step)
	day3 := 3 * perDay
	ten, noon := day3+perDay*10/24, day3+perDay*12/24
	hang, forInflight, secondGroup := perDay*3/24, "", ""
	switch variant {
	case "for":
		hang, forInflight = perDay*20/1440, "\n        for: 30m"
	case "groups":
		secondGroup = "\n  - name: app-saturation\n    rules:"
	}
	series := []*frozenSeries{
		{metric: "queue", instance: "a", from: ten, rows: hang},
		{metric: "inflight", instance: "a", from: ten, rows: hang},
		{metric: "inflight", instance: "b", from: ten, rows: perDay * 3 / 24},
		{metric: "workers", instance: "a", from: noon, rows: perDay * 3 / 24},
	}
	rows := noon + perDay*4/24
	for k, s := range series {
		rng := rand.New(rand.NewPCG(uint64(k+1), 6))
		s.vals = make([]float64, rows)
		for i := range s.vals {
			s.vals[i] = 100 * (1 + 0.3*math.Sin(2*math.Pi*float64(i)/float64(perDay))) * (1 + 0.03*rng.NormFloat64())
			if i >= s.from && i < s.from+s.rows {
				s.vals[i] = s.vals[s.from-1]
			}
		}
	}
	i := 0
	src := &fakeSource{instant: func(q string, ts time.Time) (promql.Vector, error) {
		var out promql.Vector
		for _, s := range series {
			if s.metric == q {
				out = append(out, promql.Sample{Metric: labels.FromStrings("__name__", q, "instance", s.instance, "job", "app"), F: s.vals[i], T: ts.UnixMilli()})
			}
		}
		return out, nil
	}}
	rec := &recorder{}
	dataDir := t.TempDir()
	open := func() *Manager {
		m, err := NewManager(Options{Source: src, Notify: rec.notify, OnTransition: rec.onTransition, Lookup: detect.Lookup, Kinds: detect.Kinds, DataDir: dataDir})
		require.NoError(t, err)
		t.Cleanup(func() { _ = m.Close() })
		return m
	}
	m := open()
	cfg := testConfig(writeRules(t, t.TempDir(), "r.yml", `groups:
  - name: app
    rules:
      - anomaly: Queue
        expr: queue
        detector: {type: auto}`+secondGroup+`
      - anomaly: Inflight
        expr: inflight
        detector: {type: auto}`+forInflight+`
      - anomaly: Workers
        expr: workers
        detector: {type: auto}
`))
	require.NoError(t, m.ApplyConfig(cfg))
	pages := map[string]int{} // by alertname and instance
	started := map[string]time.Time{}
	var suppressed []apiAlert
	for ; i < rows; i++ {
		if variant == "restarted" && i == ten+int(7*time.Minute/step) {
			require.NoError(t, m.Save())
			require.NoError(t, m.Close())
			m = open()
			require.NoError(t, m.ApplyConfig(cfg))
		}
		require.NoError(t, m.EvalGroups(context.Background(), t0.Add(time.Duration(i)*step)))
		for _, a := range rec.take() {
			k := a.Labels.Get(labels.AlertName) + "/" + a.Labels.Get("instance")
			if a.State == model.StateFiring && i >= ten && !a.StartsAt.Equal(started[k]) {
				started[k] = a.StartsAt
				t.Logf("page %s at %s (%d after the freeze): %s", k, a.StartsAt.Format("15:04:05"), i-ten, a.Explanation.Summary)
				pages[k]++
				// The hang's page names the other metric it stopped
				// (stoppedWith); a freeze elsewhere or at another time
				// names none.
				switch k {
				case "Queue/a":
					require.Equal(t, []string{`Inflight{instance="a", job="app"}`}, a.Explanation.StoppedWith, a.Explanation.Summary)
				case "Inflight/a":
					require.Equal(t, []string{`Queue{instance="a", job="app"}`}, a.Explanation.StoppedWith, a.Explanation.Summary)
				default:
					require.Empty(t, a.Explanation.StoppedWith, a.Explanation.Summary)
				}
				if len(a.Explanation.StoppedWith) > 0 {
					require.Contains(t, a.Explanation.Summary, "; stopped with it: "+a.Explanation.StoppedWith[0])
				}
			}
		}
		if i == ten+perDay*3/24-1 { // the last row of the first freeze
			for _, g := range m.groups {
				for _, rs := range g.rules {
					as, _ := rs.apiAlerts(stringSet{"firing": true})
					for _, a := range as {
						if a.SuppressedBy != "" {
							suppressed = append(suppressed, a)
						}
					}
				}
			}
		}
	}
	t.Logf("pages %v", pages)
	require.Equal(t, 1, pages["Queue/a"]+pages["Inflight/a"], "instance a's hang at 10:00: pages %v", pages)
	require.Equal(t, 1, pages["Inflight/b"], "instance b's freeze at 10:00: pages %v", pages)
	require.Equal(t, 1, pages["Workers/a"], "instance a's freeze at 12:00: pages %v", pages)
	require.Len(t, pages, 3, "pages %v", pages)
	if variant == "for" {
		return
	}
	require.Len(t, suppressed, 1, "suppressed at the hang's end")
	s := suppressed[0]
	require.Equal(t, "a", s.Labels["instance"])
	require.Equal(t, "frozen", s.Explanation.Kind, s.Explanation.Summary)
	require.True(t, s.SuppressedHang)
	paged := "Queue"
	if pages["Inflight/a"] == 1 {
		paged = "Inflight"
	}
	require.Equal(t, paged, s.SuppressedBy)
	require.NotEqual(t, paged, s.Labels[labels.AlertName])
}
