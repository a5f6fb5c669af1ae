package rules

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/require"

	"github.com/seismo-agent/seismo/internal/model"
)

func metricValue(t *testing.T, set *metrics.Set, name string) string {
	t.Helper()
	var b bytes.Buffer
	set.WritePrometheus(&b)
	for _, l := range strings.Split(b.String(), "\n") {
		if v, ok := strings.CutPrefix(l, name+" "); ok {
			return v
		}
	}
	t.Fatalf("metric %s not found in:\n%s", name, b.String())
	return ""
}

// reloadManager is a manager over one series lset at 9, with the fake
// detector kinds, a recorder for its notifications and its metrics.
func reloadManager(t *testing.T, lset labels.Labels) (*Manager, *recorder, *metrics.Set) {
	t.Helper()
	src := vecSource(lset, func(q string, ts time.Time) (float64, bool) { return 9, true })
	rec := &recorder{}
	set := metrics.NewSet()
	m, err := NewManager(Options{Source: src, Notify: rec.notify, Lookup: fakeLookup, Kinds: fakeKindNames, Metrics: set})
	require.NoError(t, err)
	return m, rec, set
}

// TestReload changes one rule, keeps another and breaks a third file:
// state is kept where it should be, and a broken file keeps the old rules
// running with the reload metric at 0.
func TestReload(t *testing.T) {
	lset := labels.FromStrings("__name__", "x")
	m, rec, set := reloadManager(t, lset)
	dir := t.TempDir()
	const keep = "groups: [{name: k, rules: [{anomaly: Keep, expr: x, detector: {type: fake, threshold: 5, warm_up: 1}}]}]"
	const change = "groups: [{name: c, rules: [{alert: Change, expr: 'x > 5', labels: {severity: page}}]}]"
	f1 := writeRules(t, dir, "keep.yml", keep)
	f2 := writeRules(t, dir, "change.yml", change)
	cfg := testConfig(f1, f2)
	require.NoError(t, m.ApplyConfig(cfg))
	ctx := context.Background()
	for i := range 3 {
		require.NoError(t, m.EvalGroups(ctx, t0.Add(time.Duration(i)*10*time.Second)))
	}
	rec.take()
	firing := func() map[string]model.AlertState {
		out := map[string]model.AlertState{}
		for _, a := range m.Alerts() {
			out[a.Name()] = a.State
		}
		return out
	}
	require.Equal(t, map[string]model.AlertState{"Keep": model.StateFiring, "Change": model.StateFiring}, firing())
	keepDet := m.groups[0].rules[0].series[lset.Hash()].det

	// Change one rule's annotations; keep the other.
	writeRules(t, dir, "change.yml", strings.Replace(change, "labels: {severity: page}", "labels: {severity: page}, annotations: {summary: new}", 1))
	require.NoError(t, m.ApplyConfig(cfg))
	require.Equal(t, "1", metricValue(t, set, "seismo_rules_last_reload_successful"))
	require.Same(t, keepDet, m.groups[0].rules[0].series[lset.Hash()].det, "unchanged rule keeps its detector")
	require.NoError(t, m.EvalGroups(ctx, t0.Add(30*time.Second)))
	require.Empty(t, rec.take(), "no new firing notification after a reload")
	require.Equal(t, map[string]model.AlertState{"Keep": model.StateFiring, "Change": model.StateFiring}, firing())

	// Break a third file: everything keeps running.
	f3 := writeRules(t, dir, "broken.yml", "groups: [{name: b, rules: [{alert: B, expr: 'up =='}]}]")
	cfg.Files = append(cfg.Files, f3)
	err := m.ApplyConfig(cfg)
	require.ErrorContains(t, err, "broken.yml:1:45: group \"b\", rule 1 \"B\": expr:")
	require.Equal(t, "0", metricValue(t, set, "seismo_rules_last_reload_successful"))
	require.Len(t, m.Groups(), 2, "old rules still loaded")
	require.NoError(t, m.EvalGroups(ctx, t0.Add(40*time.Second)))
	require.Equal(t, map[string]model.AlertState{"Keep": model.StateFiring, "Change": model.StateFiring}, firing())

	// Fix it: metric back to 1; a group that disappears loses its metrics.
	cfg.Files = cfg.Files[:1]
	require.NoError(t, m.ApplyConfig(cfg))
	require.Equal(t, "1", metricValue(t, set, "seismo_rules_last_reload_successful"))
	var b bytes.Buffer
	set.WritePrometheus(&b)
	require.NotContains(t, b.String(), `group="c"`)
	require.Contains(t, b.String(), `seismo_rules_group_evaluations_total{file="`+f1+`",group="k"} 5`)
}

// TestRestartKeepsFiring saves state, builds a new manager over the same
// data directory and checks the alert is still firing, nobody is notified
// again, and the detector is not cold.
func TestRestartKeepsFiring(t *testing.T) {
	lset := labels.FromStrings("__name__", "x")
	src := vecSource(lset, func(q string, ts time.Time) (float64, bool) { return 9, true })
	dataDir := t.TempDir()
	rules := `groups: [{name: g, rules: [
  {anomaly: A, expr: x, detector: {type: fake, threshold: 5, warm_up: 3}},
  {alert: B, expr: 'x > 5'}]}]`
	ctx := context.Background()

	rec := &recorder{}
	m, cfg := newTestManager(t, src, rec, dataDir, rules)
	for i := range 5 {
		require.NoError(t, m.EvalGroups(ctx, t0.Add(time.Duration(i)*10*time.Second)))
	}
	require.Len(t, rec.take(), 2)
	require.NoError(t, m.Save())
	require.NoError(t, m.Close())
	require.NoError(t, m.Close(), "Close is idempotent")

	rec2 := &recorder{}
	m2, err := NewManager(Options{Source: src, Notify: rec2.notify, OnTransition: rec2.onTransition, Lookup: fakeLookup, Kinds: fakeKindNames, DataDir: dataDir})
	require.NoError(t, err)
	defer m2.Close()
	require.NoError(t, m2.ApplyConfig(cfg))
	require.NoError(t, m2.EvalGroups(ctx, t0.Add(50*time.Second)))
	require.Empty(t, rec2.take(), "no new notification after restart")
	require.Empty(t, rec2.transitions, "no state change after restart")
	as := m2.Alerts()
	require.Len(t, as, 2)
	starts := map[string]time.Time{"A": t0.Add(30 * time.Second), "B": t0}
	for _, a := range as {
		require.Equal(t, model.StateFiring, a.State, a.Name())
		require.True(t, starts[a.Name()].Equal(a.StartsAt), a.Name())
	}
	det := m2.groups[0].rules[0].series[lset.Hash()].det.(*fakeDetector)
	require.Equal(t, 6, det.N, "detector restored, not cold")

	// The periodic re-send resumes one resend_delay after the last send.
	require.NoError(t, m2.EvalGroups(ctx, t0.Add(100*time.Second)))
	require.Len(t, rec2.take(), 2)
}

// TestWatchReloadsChangedFile edits a rule file in place and by rename (as
// editors do) and waits for the watch to reload it.
func TestWatchReloadsChangedFile(t *testing.T) {
	src := vecSource(labels.FromStrings("__name__", "x"), func(string, time.Time) (float64, bool) { return 1, true })
	m, err := NewManager(Options{Source: src, Lookup: fakeLookup, Kinds: fakeKindNames})
	require.NoError(t, err)
	reloaded := make(chan error, 4)
	m.afterWatchReload = func(err error) { reloaded <- err }
	dir := t.TempDir()
	f := writeRules(t, dir, "r.yml", "groups: [{name: a, rules: [{alert: A, expr: x}]}]")
	cfg := testConfig(f)
	cfg.WatchFiles = true
	require.NoError(t, m.ApplyConfig(cfg))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- m.Run(ctx) }()
	defer func() {
		cancel()
		require.NoError(t, <-done)
	}()
	<-m.watchReady

	wait := func() error {
		select {
		case err := <-reloaded:
			return err
		case <-time.After(20 * time.Second):
			t.Fatal("no reload after the file changed")
			return nil
		}
	}
	names := func() []string {
		var out []string
		for _, g := range m.Groups() {
			out = append(out, g.Name)
		}
		return out
	}
	writeRules(t, dir, "r.yml", "groups: [{name: b, rules: [{alert: A, expr: x}]}]")
	require.NoError(t, wait())
	require.Equal(t, []string{"b"}, names())

	tmp := writeRules(t, dir, "r.yml.tmp", "groups: [{name: c, rules: [{alert: A, expr: x}]}]")
	require.NoError(t, os.Rename(tmp, f))
	require.NoError(t, wait())
	require.Equal(t, []string{"c"}, names())

	writeRules(t, dir, "r.yml", "groups: [{name: d, rules: [{alert: A, expr: 'x =='}]}]")
	require.ErrorContains(t, wait(), "r.yml:1:45")
	require.Equal(t, []string{"c"}, names(), "a broken edit keeps the running rules")
}

// TestSaveKeepsDiskUntilRulesLoad checks that a save before any rules are
// loaded does not wipe the saved state, and that state of rules that no
// longer exist is dropped once rules load.
func TestSaveKeepsDiskUntilRulesLoad(t *testing.T) {
	lset := labels.FromStrings("__name__", "x")
	src := vecSource(lset, func(string, time.Time) (float64, bool) { return 9, true })
	dataDir := t.TempDir()
	m, cfg := newTestManager(t, src, &recorder{}, dataDir, "groups: [{name: g, rules: [{alert: A, expr: 'x > 5'}, {alert: B, expr: 'x > 5'}]}]")
	require.NoError(t, m.EvalGroups(context.Background(), t0))
	require.NoError(t, m.Save())
	require.NoError(t, m.Close())

	open := func() *Manager {
		m, err := NewManager(Options{Source: src, Lookup: fakeLookup, Kinds: fakeKindNames, DataDir: dataDir})
		require.NoError(t, err)
		return m
	}
	m2 := open()
	require.NoError(t, m2.Save(), "nothing loaded yet")
	require.NoError(t, m2.Close())

	m3 := open()
	writeRules(t, filepath.Dir(cfg.Files[0]), "r.yml", "groups: [{name: g, rules: [{alert: A, expr: 'x > 5'}]}]")
	require.NoError(t, m3.ApplyConfig(cfg))
	require.Len(t, m3.Alerts(), 1, "A's state survived the early save")
	require.NoError(t, m3.Save())
	require.NoError(t, m3.Close())

	st, err := openStateDB(dataDir)
	require.NoError(t, err)
	defer st.close()
	saved, err := st.load()
	require.NoError(t, err)
	require.Len(t, saved.alerts, 1, "B's state is gone with B")
}

// TestReloadWaitsForABlankRuleFile: a reload that finds a running rule
// file blank (truncated by a write in progress, or comments only) reads
// it again and refuses it if it stays blank; the rules and their alerts
// keep running. Written between two reads, it is taken. A file meant to
// hold no rules says `groups: []`.
func TestReloadWaitsForABlankRuleFile(t *testing.T) {
	m, _, set := reloadManager(t, labels.FromStrings("__name__", "x"))
	dir := t.TempDir()
	const rules = "groups: [{name: c, rules: [{alert: High, expr: 'x > 5'}]}]"
	f := writeRules(t, dir, "r.yml", rules)
	cfg := testConfig(f)
	require.NoError(t, m.ApplyConfig(cfg))
	require.NoError(t, m.EvalGroups(context.Background(), t0))
	require.Len(t, m.Alerts(), 1)

	for _, blank := range []string{"", "# being written\n", "---\n"} {
		writeRules(t, dir, "r.yml", blank)
		err := m.ApplyConfig(cfg)
		require.ErrorContains(t, err, "r.yml: the file is blank, where it held rules that are running")
		require.Equal(t, "0", metricValue(t, set, "seismo_rules_last_reload_successful"))
		require.Len(t, m.Groups(), 1, "the running rules stay")
		require.Len(t, m.Alerts(), 1, "and their alert")
	}

	writeRules(t, dir, "r.yml", "")
	m.blankWait = func() { writeRules(t, dir, "r.yml", strings.Replace(rules, "x > 5", "x > 6", 1)) }
	require.NoError(t, m.ApplyConfig(cfg), "written between two reads")
	m.blankWait = nil
	require.Len(t, m.Alerts(), 1, "the alert keeps its state")

	writeRules(t, dir, "r.yml", "groups: []")
	require.NoError(t, m.ApplyConfig(cfg))
	require.Empty(t, m.Groups(), "a file that holds no rules on purpose")
}
