package rules

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/require"
)

func TestHistoryDrawsLiveAlert(t *testing.T) {
	lset := labels.FromStrings("__name__", "x", "instance", "a")
	src := vecSource(lset, func(_ string, ts time.Time) (float64, bool) {
		if ts.Sub(t0) >= 5*time.Minute {
			return 9, true
		}
		return 1, true
	})
	h := NewHistory(time.Hour)
	rec := &recorder{}
	m, err := NewManager(Options{Source: src, Notify: rec.notify, OnTransition: rec.onTransition,
		Lookup: fakeLookup, Kinds: fakeKindNames, History: h})
	require.NoError(t, err)
	defer m.Close()
	require.NoError(t, m.ApplyConfig(testConfig(writeRules(t, t.TempDir(), "r.yml", `groups:
  - name: g
    rules:
      - anomaly: A
        expr: x
        detector: {type: fake, threshold: 5}
`))))
	for ts := t0; !ts.After(t0.Add(90 * time.Minute)); ts = ts.Add(10 * time.Second) {
		require.NoError(t, m.EvalGroups(context.Background(), ts))
	}
	require.NotEmpty(t, rec.transitions, "the recorder still sees transitions")

	alert := labels.FromStrings("alertname", "A", "instance", "a")
	res := h.Select("A", alert)
	require.Len(t, res.Traces, 1)
	pts := res.Traces[0].Points
	require.Equal(t, t0.Add(90*time.Minute), pts[len(pts)-1].T)
	require.False(t, t0.Add(30*time.Minute).After(pts[0].T), "points older than the window are dropped")
	require.LessOrEqual(t, len(pts), maxHistoryPoints)
	require.NotEmpty(t, res.Transitions)

	var svg strings.Builder
	require.NoError(t, h.WriteSVG(&svg, alert))
	for _, want := range []string{"<svg", "viewBox=", "<polyline", "<polygon", `fill="#f4b4b4"`} {
		require.Contains(t, svg.String(), want)
	}
	require.Empty(t, h.Select("A", labels.FromStrings("alertname", "A", "instance", "b")).Traces,
		"another alert's series are not drawn")
}

func TestHistoryBoundsSeries(t *testing.T) {
	h := NewHistory(time.Hour)
	r := &Rule{Name: "A"}
	for i := range maxHistorySeries + 10 {
		h.observe(r, labels.FromStrings("i", strings.Repeat("x", i+1)), TracePoint{T: t0, Value: 1})
	}
	require.Equal(t, 10, h.Dropped())
	// Once the old series are out of the window they make room.
	h.observe(r, labels.FromStrings("i", "new"), TracePoint{T: t0.Add(2 * time.Hour), Value: 1})
	require.Len(t, h.Select("A", labels.FromStrings("alertname", "A", "i", "new")).Traces, 1)
}

func TestHistorySelectsCompositeSignals(t *testing.T) {
	h := NewHistory(time.Hour)
	r := &Rule{Name: "C"}
	for i := range 3 {
		ts := t0.Add(time.Duration(i) * time.Second)
		h.observe(r, labels.FromStrings("job", "shop", "signal", "symptom"), TracePoint{T: ts, Value: 1, Lower: 0, Upper: 2, HasBand: true})
		h.observe(r, labels.FromStrings("job", "shop", "signal", "resource"), TracePoint{T: ts, Value: 3})
	}
	res := h.Select("C", labels.FromStrings("alertname", "C", "job", "shop", "severity", "page"))
	require.Len(t, res.Traces, 2, "every signal of the composite rule")
	require.Equal(t, "symptom", res.Traces[0].Labels.Get("signal"), "the judged signal first")
	require.Empty(t, h.Select("C", labels.FromStrings("alertname", "C", "job", "other")).Traces)
}
