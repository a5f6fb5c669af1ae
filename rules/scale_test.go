package rules

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/stretchr/testify/require"

	"github.com/seismo-agent/seismo/datasource"
	"github.com/seismo-agent/seismo/internal/model"
	"github.com/seismo-agent/seismo/store"
)

// newTestStore returns an embedded store filled by fill(app).
func newTestStore(t *testing.T, fill func(app *store.Appender)) *store.Store {
	t.Helper()
	st, err := store.New(store.Options{Config: store.DefaultConfig()})
	require.NoError(t, err)
	app := st.Appender()
	fill(app)
	app.Commit()
	return st
}

// TestShardsCoverEverySeriesOnce runs three managers with the same rules
// over the same store, one per shard: together they alert on every series
// exactly once, for a plain alerting rule, a univariate anomaly rule and a
// composite one, and each shard gets a fair part.
func TestShardsCoverEverySeriesOnce(t *testing.T) {
	const n = 300
	st := newTestStore(t, func(app *store.Appender) {
		for i := range n {
			l := labels.FromStrings("__name__", "load", "i", fmt.Sprint(i))
			_, err := app.Append(store.SeriesRef{}, l, t0.UnixMilli(), 50)
			require.NoError(t, err)
		}
	})
	f := writeRules(t, t.TempDir(), "r.yml", `groups:
  - name: g
    rules:
      - alert: High
        expr: load > 5
      - anomaly: Odd
        expr: load
        detector: {type: fake, threshold: 5}
      - anomaly: Comp
        detector: {type: fakecomp, threshold: 5, a: 'sum by (i) (load)'}
`)
	owner := map[string][]int{} // alertname/i -> shards
	perShard := make([]int, 3)
	for shard := range 3 {
		rec := &recorder{}
		m, err := NewManager(Options{Source: NewQueryableSource(st), Notify: rec.notify, Lookup: fakeLookup, Kinds: fakeKindNames})
		require.NoError(t, err)
		cfg := testConfig(f)
		cfg.Shard = ShardConfig{Index: shard, Total: 3}
		require.NoError(t, cfg.Validate())
		require.NoError(t, m.ApplyConfig(cfg))
		require.NoError(t, m.EvalGroups(context.Background(), t0))
		for _, a := range m.Alerts() {
			require.Equal(t, model.StateFiring, a.State, "%s", a.Labels)
			k := a.Name() + "/" + a.Labels.Get("i")
			owner[k] = append(owner[k], shard)
			perShard[shard]++
		}
	}
	for _, name := range []string{"High", "Odd", "Comp"} {
		for i := range n {
			k := fmt.Sprintf("%s/%d", name, i)
			require.Len(t, owner[k], 1, "%s must be evaluated by exactly one shard, got %v", k, owner[k])
		}
	}
	require.Len(t, owner, 3*n, "no alert outside the series")
	for s, c := range perShard {
		require.InDelta(t, n, c, 0.3*n, "shard %d got %d of %d alerts: the hash must spread them", s, c, 3*n)
	}
}

// TestShardConsistentHash moves few series when a shard is added.
func TestShardConsistentHash(t *testing.T) {
	moved := 0
	const keys = 10000
	for k := range keys {
		h := labels.FromStrings("i", fmt.Sprint(k)).Hash()
		if jumpHash(h, 3) != jumpHash(h, 4) {
			moved++
		}
	}
	// Ideal: a quarter; a mod-N hash would move three quarters.
	require.InDelta(t, keys/4, moved, keys/20, "moved %d of %d", moved, keys)
}

func TestShardValidate(t *testing.T) {
	for _, tc := range []struct {
		s    ShardConfig
		want string
	}{
		{ShardConfig{Index: 0, Total: 1}, ""},
		{ShardConfig{Index: 2, Total: 3}, ""},
		{ShardConfig{Index: 3, Total: 3}, "index: must be between 0 and total-1 (2), got 3"},
		{ShardConfig{Index: -1, Total: 3}, "index: must be between 0 and total-1 (2), got -1"},
		{ShardConfig{Index: 0, Total: 0}, "total: must be at least 1, got 0"},
	} {
		t.Run(fmt.Sprint(tc.s), func(t *testing.T) {
			err := tc.s.Validate()
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// TestExternalAndReplicaLabels: external labels join every alert; the
// replica label does not, so two replicas send identical alerts with the
// same incident key, each naming itself as the replica.
func TestExternalAndReplicaLabels(t *testing.T) {
	lset := labels.FromStrings("__name__", "x", "instance", "a")
	var keys []string
	for _, replica := range []string{"r0", "r1"} {
		rec := &recorder{}
		src := vecSource(lset, func(string, time.Time) (float64, bool) { return 9, true })
		m, err := NewManager(Options{Source: src, Notify: rec.notify})
		require.NoError(t, err)
		cfg := testConfig(writeRules(t, t.TempDir(), "r.yml", "groups: [{name: g, rules: [{alert: A, expr: x > 1, labels: {cluster: mine}}]}]"))
		cfg.ExternalLabels = map[string]string{"cluster": "eu1", "region": "eu", "replica": replica}
		cfg.ReplicaLabel = "replica"
		require.NoError(t, cfg.Validate())
		require.NoError(t, m.ApplyConfig(cfg))
		require.NoError(t, m.EvalGroups(context.Background(), t0))
		sent := rec.take()
		require.Len(t, sent, 1)
		a := sent[0]
		require.Equal(t, `{alertname="A", cluster="mine", instance="a", region="eu"}`, a.Labels.String(),
			"the rule's own label wins over an external one; the replica label is not an alert label")
		require.Equal(t, replica, a.Replica)
		keys = append(keys, a.IncidentKey())
	}
	require.NotEmpty(t, keys[0])
	require.Equal(t, keys[0], keys[1], "replicas give one incident key")

	cfg := DefaultConfig()
	cfg.ExternalLabels = map[string]string{"__x": "1", "alertname": "y"}
	cfg.ReplicaLabel = "replica"
	err := cfg.Validate()
	require.ErrorContains(t, err, `external_labels.__x: invalid label name "__x"`)
	require.ErrorContains(t, err, "external_labels.alertname: alertname is the rule's")
	require.ErrorContains(t, err, `replica_label: "replica" is not one of external_labels`)
}

// countingSource answers from a store and counts queries.
type countingSource struct {
	datasource.Source
	name            string
	instant, range_ int
}

func (c *countingSource) Name() string { return c.name }
func (c *countingSource) Instant(ctx context.Context, q string, ts time.Time) (promql.Vector, error) {
	c.instant++
	return c.Source.Instant(ctx, q, ts)
}
func (c *countingSource) Range(ctx context.Context, q string, start, end time.Time, step time.Duration) (promql.Matrix, error) {
	c.range_++
	return c.Source.Range(ctx, q, start, end, step)
}

// TestDefaultDatasourceAndReload: rules.datasource sends every group that
// names none (the built-in pack's too) to that source; PrepareSources swaps
// the named sources on reload and keeps the rules' state.
func TestDefaultDatasourceAndReload(t *testing.T) {
	st := newTestStore(t, func(app *store.Appender) {
		_, err := app.Append(store.SeriesRef{}, labels.FromStrings("__name__", "x"), t0.UnixMilli(), 9)
		require.NoError(t, err)
	})
	local := &countingSource{Source: NewQueryableSource(st), name: "local"}
	remoteA := &countingSource{Source: NewQueryableSource(st), name: "central"}
	remoteB := &countingSource{Source: NewQueryableSource(st), name: "central"}
	rec := &recorder{}
	m, err := NewManager(Options{Source: local, Sources: map[string]datasource.Source{"local": local, "central": remoteA}, Notify: rec.notify})
	require.NoError(t, err)
	cfg := testConfig(writeRules(t, t.TempDir(), "r.yml", "groups: [{name: g, rules: [{alert: A, expr: x > 1, for: 20s}]}]"))
	cfg.Builtin.Enabled = true
	cfg.Datasource = "central"
	require.NoError(t, m.ApplyConfig(cfg))
	ctx := context.Background()
	require.NoError(t, m.EvalGroups(ctx, t0))
	require.Zero(t, local.instant, "no query may reach the embedded store")
	require.Positive(t, remoteA.instant)
	require.Equal(t, model.StatePending, stateOf(t, m, "A"))

	// Reload with a new "central": same rule state, new source.
	commit, err := m.PrepareSources(cfg, map[string]datasource.Source{"local": local, "central": remoteB})
	require.NoError(t, err)
	commit()
	before := remoteA.instant
	_ = m.EvalGroups(ctx, t0.Add(20*time.Second))
	require.Equal(t, before, remoteA.instant, "the old source is no longer queried")
	require.Positive(t, remoteB.instant)
	require.Equal(t, model.StateFiring, stateOf(t, m, "A"), "the pending alert kept its state across the reload")

	// A name that is no longer there fails the reload and keeps the rules.
	_, err = m.PrepareSources(cfg, map[string]datasource.Source{"local": local})
	require.ErrorContains(t, err, `rules.datasource: unknown datasource "central" (have local)`)
}

func stateOf(t *testing.T, m *Manager, name string) model.AlertState {
	t.Helper()
	for _, a := range m.Alerts() {
		if a.Name() == name {
			return a.State
		}
	}
	t.Fatalf("no alert %s", name)
	return 0
}

// TestDefaultQueryOffset: rules.query_offset applies to groups that set
// none; a group's own query_offset wins.
func TestDefaultQueryOffset(t *testing.T) {
	var mu sync.Mutex
	asked := map[string]time.Time{}
	src := &fakeSource{instant: func(q string, ts time.Time) (promql.Vector, error) {
		mu.Lock()
		defer mu.Unlock()
		asked[q] = ts
		return nil, nil
	}}
	m, err := NewManager(Options{Source: src})
	require.NoError(t, err)
	cfg := testConfig(writeRules(t, t.TempDir(), "r.yml", `groups:
  - {name: a, rules: [{alert: A, expr: a > 1}]}
  - {name: b, query_offset: 5s, rules: [{alert: B, expr: b > 1}]}
`))
	cfg.QueryOffset = 30 * time.Second
	require.NoError(t, cfg.Validate())
	require.NoError(t, m.ApplyConfig(cfg))
	require.NoError(t, m.EvalGroups(context.Background(), t0))
	require.Equal(t, t0.Add(-30*time.Second), asked["a > 1"])
	require.Equal(t, t0.Add(-5*time.Second), asked["b > 1"])
	cfg.QueryOffset = -time.Second
	require.ErrorContains(t, cfg.Validate(), "query_offset: must not be negative")
}
