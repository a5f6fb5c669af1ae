package rules

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/require"

	"github.com/seismo-agent/seismo/store"
)

// observed returns how many values each detector of the group's rules has
// seen, by rule name.
func observed(t *testing.T, m *Manager) map[string]int {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]int{}
	for _, g := range m.groups {
		for _, rs := range g.rules {
			rs.mu.Lock()
			for _, ss := range rs.series {
				switch d := ss.det.(type) {
				case *fakeDetector:
					out[rs.rule.Name] += d.N
				}
				if c, ok := ss.comp.(*fakeComposite); ok {
					out[rs.rule.Name] += c.N
				}
			}
			rs.mu.Unlock()
		}
	}
	return out
}

// TestWarmStartFillsAndCatchesUp: a cold agent fills univariate and
// composite detectors with the warm_start window from the store; after a
// restart, restored detectors get exactly the evaluations they missed;
// after a reload that keeps them, nothing is replayed.
func TestWarmStartFillsAndCatchesUp(t *testing.T) {
	const iv = 10 * time.Second
	st := newTestStore(t, func(app *store.Appender) {
		for ts := t0.Add(-time.Hour); !ts.After(t0.Add(10 * time.Minute)); ts = ts.Add(iv) {
			for _, name := range []string{"x", "a"} {
				_, err := app.Append(store.SeriesRef{}, labels.FromStrings("__name__", name), ts.UnixMilli(), 1)
				require.NoError(t, err)
			}
		}
	})
	dir := t.TempDir()
	f := writeRules(t, t.TempDir(), "r.yml", `groups:
  - name: g
    rules:
      - anomaly: Uni
        expr: x
        detector: {type: fake}
      - anomaly: Comp
        detector: {type: fakecomp, a: sum(a)}
`)
	cfg := testConfig(f)
	cfg.WarmStart = 10 * time.Minute
	newManager := func() *Manager {
		m, err := NewManager(Options{Source: NewQueryableSource(st), DataDir: dir, Lookup: fakeLookup, Kinds: fakeKindNames})
		require.NoError(t, err)
		require.NoError(t, m.ApplyConfig(cfg))
		return m
	}
	ctx := context.Background()

	m := newManager()
	require.NoError(t, m.EvalGroups(ctx, t0))
	// Ticks t0-10m-10s .. t0-10s (61, both ends) from history, then t0.
	require.Equal(t, map[string]int{"Uni": 62, "Comp": 62}, observed(t, m), "cold start: the whole window")
	for i := 1; i <= 5; i++ {
		require.NoError(t, m.EvalGroups(ctx, t0.Add(time.Duration(i)*iv)))
	}
	require.Equal(t, map[string]int{"Uni": 67, "Comp": 67}, observed(t, m))
	require.NoError(t, m.Save())
	require.NoError(t, m.Close())

	// Restart 15 ticks later: the missed ticks t0+60s .. t0+190s (14),
	// then t0+200s.
	m = newManager()
	defer m.Close()
	require.NoError(t, m.EvalGroups(ctx, t0.Add(20*iv)))
	require.Equal(t, map[string]int{"Uni": 82, "Comp": 82}, observed(t, m), "restart: only the missed ticks")

	// A reload with the same rules keeps the detectors: nothing replayed.
	require.NoError(t, m.ApplyConfig(cfg))
	require.NoError(t, m.EvalGroups(ctx, t0.Add(21*iv)))
	require.Equal(t, map[string]int{"Uni": 83, "Comp": 83}, observed(t, m), "reload: up to date, nothing replayed")
}
