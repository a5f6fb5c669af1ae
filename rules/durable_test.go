package rules

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"

	"github.com/seismo-agent/seismo/internal/model"
)

// TestAlertStateOnDiskBeforeNotify checks that when an alert changes state
// its state is already in rules.db as it is handed on (a kill -9 right
// after the notification must not forget the alert), and that re-sends of
// an unchanged state do not write.
func TestAlertStateOnDiskBeforeNotify(t *testing.T) {
	lset := labels.FromStrings("__name__", "x")
	value := 9.0
	src := vecSource(lset, func(string, time.Time) (float64, bool) { return value, value > 5 })
	dir := t.TempDir()
	var (
		m      *Manager
		onDisk []string
	)
	notify := func(_ context.Context, alerts ...*model.Alert) {
		for _, a := range alerts {
			var saved []byte
			require.NoError(t, m.db.db.View(func(tx *bolt.Tx) error {
				if b := tx.Bucket(bucketAlerts); b != nil {
					_ = b.ForEach(func(_, v []byte) error { saved = append(saved, v...); return nil })
				}
				return nil
			}))
			onDisk = append(onDisk, a.State.String()+" "+string(saved))
		}
	}
	var err error
	m, err = NewManager(Options{Source: src, Notify: notify, Lookup: fakeLookup, Kinds: fakeKindNames, DataDir: dir})
	require.NoError(t, err)
	defer m.Close()
	cfg := testConfig(writeRules(t, t.TempDir(), "a.yml", "groups: [{name: g, rules: [{alert: A, expr: 'x > 5'}]}]"))
	cfg.ResendDelay = time.Nanosecond // every evaluation re-sends
	require.NoError(t, m.ApplyConfig(cfg))
	ctx := context.Background()
	require.NoError(t, m.EvalGroups(ctx, t0))
	require.Len(t, onDisk, 1)
	require.Contains(t, onDisk[0], "firing ")
	require.Contains(t, onDisk[0], fmt.Sprintf(`"state":%d`, model.StateFiring), "the firing state is on disk when the alert is handed on")
	value = 1
	require.NoError(t, m.EvalGroups(ctx, t0.Add(10*time.Second)))
	require.Len(t, onDisk, 2)
	require.Contains(t, onDisk[1], "resolved ")
	require.Contains(t, onDisk[1], fmt.Sprintf(`"state":%d`, model.StateResolved), "the resolved state is on disk when the alert is handed on")
}
