package rules

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"math"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"

	"github.com/seismo-agent/seismo/detect"
)

// TestSnapshotNotRestoredIsLogged: an `auto` rule's saved detector whose
// snapshot is of a format this release no longer reads (as after an
// upgrade across a format change) starts cold, and the agent says so
// with the rule, the count and the reason; one that restores is kept.
func TestSnapshotNotRestoredIsLogged(t *testing.T) {
	lset := labels.FromStrings("__name__", "queue", "pool", "io")
	src := vecSource(lset, func(_ string, ts time.Time) (float64, bool) {
		return 100 + 10*math.Sin(float64(ts.Unix())/600), true
	})
	for _, tc := range []struct {
		name    string
		version byte
		cold    bool
	}{
		{"current format", 0, false},
		{"format too old", 32, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dataDir := t.TempDir()
			ctx := context.Background()
			newManager := func(logger *slog.Logger, set *metrics.Set) *Manager {
				m, err := NewManager(Options{Source: src, Lookup: detect.Lookup, Kinds: detect.Kinds, DataDir: dataDir, Logger: logger, Metrics: set})
				require.NoError(t, err)
				return m
			}
			m := newManager(nil, nil)
			cfg := testConfig(writeRules(t, t.TempDir(), "r.yml", "groups: [{name: g, rules: [{anomaly: Queue, expr: queue, detector: {type: auto}}]}]"))
			require.NoError(t, m.ApplyConfig(cfg))
			for i := range 200 {
				require.NoError(t, m.EvalGroups(ctx, t0.Add(time.Duration(i)*time.Minute)))
			}
			require.NoError(t, m.Save())
			require.NoError(t, m.Close())

			if tc.version != 0 { // rewrite the saved snapshot's format byte
				db, err := openStateDB(dataDir)
				require.NoError(t, err)
				require.NoError(t, db.db.Update(func(tx *bolt.Tx) error {
					b := tx.Bucket(bucketDetectors)
					require.NotNil(t, b)
					var keys [][]byte
					require.NoError(t, b.ForEach(func(k, _ []byte) error { keys = append(keys, bytes.Clone(k)); return nil }))
					require.Len(t, keys, 1)
					var saved map[uint64]*savedSeries
					require.NoError(t, json.Unmarshal(b.Get(keys[0]), &saved))
					require.Len(t, saved, 1)
					for _, s := range saved {
						s.State[0] = tc.version
					}
					v, err := json.Marshal(saved)
					require.NoError(t, err)
					return b.Put(keys[0], v)
				}))
				require.NoError(t, db.close())
			}

			var log bytes.Buffer
			set := metrics.NewSet()
			m2 := newManager(slog.New(slog.NewTextHandler(&log, nil)), set)
			defer m2.Close()
			require.NoError(t, m2.ApplyConfig(cfg))
			rs := m2.groups[0].rules[0]
			require.Equal(t, tc.cold, len(rs.series) == 0, "cold")
			notRestored := "0"
			if tc.cold {
				notRestored = "1"
			}
			require.Equal(t, notRestored, metricValue(t, set, `seismo_rules_group_snapshots_not_restored_total{file="`+cfg.Files[0]+`",group="g"}`))
			if !tc.cold {
				require.NotContains(t, log.String(), "not restored")
				return
			}
			require.Contains(t, log.String(), `msg="detector snapshots not restored; those detectors start cold" component=rules group=g`)
			require.Contains(t, log.String(), "rule=Queue not_restored=1 saved=1")
			require.Contains(t, log.String(), "version 32, want 33 to ")
			t.Log(log.String())
		})
	}
}
