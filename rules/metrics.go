package rules

import (
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/VictoriaMetrics/metrics"

	"github.com/seismo-agent/seismo/internal/model"
)

// durationBuckets are the evaluation duration histogram bounds (seconds).
var durationBuckets = []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

type managerMetrics struct {
	set            *metrics.Set
	reloadOK       atomic.Bool
	reloadTime     atomic.Int64
	reloadFailures *metrics.Counter

	mu     sync.Mutex
	groups map[string]*groupMetrics
}

// groupMetrics are one group's evaluation metrics, labelled by file and
// group and removed when the group goes away.
type groupMetrics struct {
	names    []string
	evals    *metrics.Counter
	failures *metrics.Counter
	missed   *metrics.Counter
	// warmStarts counts the range queries that filled detectors.
	warmStarts *metrics.Counter
	// dormantEvictions counts dormant detectors forgotten past
	// dormant_limit (see ruleState.evictDormant).
	dormantEvictions *metrics.Counter
	// notRestored counts saved detector snapshots that did not restore
	// at start (see savedState.apply): those detectors started cold.
	notRestored *metrics.Counter
	duration    *metrics.PrometheusHistogram
}

func newManagerMetrics(set *metrics.Set, m *Manager) *managerMetrics {
	mm := &managerMetrics{set: set, groups: map[string]*groupMetrics{}}
	mm.reloadOK.Store(true)
	set.GetOrCreateGauge("seismo_rules_last_reload_successful", func() float64 {
		if mm.reloadOK.Load() {
			return 1
		}
		return 0
	})
	set.GetOrCreateGauge("seismo_rules_last_reload_success_timestamp_seconds", func() float64 {
		return float64(mm.reloadTime.Load())
	})
	mm.reloadFailures = set.GetOrCreateCounter("seismo_rules_reload_failures_total")
	for _, st := range []model.AlertState{model.StateWarmingUp, model.StatePending, model.StateFiring, model.StateResolved} {
		st := st
		set.GetOrCreateGauge(fmt.Sprintf(`seismo_rules_alerts{state=%q}`, st.String()), func() float64 {
			n := 0
			for _, a := range m.Alerts() {
				if a.State == st {
					n++
				}
			}
			return float64(n)
		})
	}
	for _, st := range []string{"live", "dormant"} {
		set.GetOrCreateGauge(fmt.Sprintf(`seismo_rules_detectors{state=%q}`, st), func() float64 {
			live, dormant := m.detectorCounts()
			if st == "live" {
				return float64(live)
			}
			return float64(dormant)
		})
	}
	return mm
}

func quote(s string) string { return strconv.Quote(s) }

// group returns (creating) the metrics of g; the zero counts exist from the
// start so that rate() sees the first failure.
func (mm *managerMetrics) group(g *Group) *groupMetrics {
	mm.mu.Lock()
	defer mm.mu.Unlock()
	k := g.Key()
	if gm := mm.groups[k]; gm != nil {
		return gm
	}
	l := fmt.Sprintf(`{file=%s,group=%s}`, quote(g.File), quote(g.Name))
	gm := &groupMetrics{
		names: []string{
			"seismo_rules_group_evaluations_total" + l,
			"seismo_rules_group_evaluation_failures_total" + l,
			"seismo_rules_group_iterations_missed_total" + l,
			"seismo_rules_group_evaluation_duration_seconds" + l,
			"seismo_rules_group_warm_starts_total" + l,
			"seismo_rules_group_dormant_evictions_total" + l,
			"seismo_rules_group_snapshots_not_restored_total" + l,
		},
	}
	gm.evals = mm.set.GetOrCreateCounter(gm.names[0])
	gm.failures = mm.set.GetOrCreateCounter(gm.names[1])
	gm.missed = mm.set.GetOrCreateCounter(gm.names[2])
	gm.duration = mm.set.GetOrCreatePrometheusHistogramExt(gm.names[3], durationBuckets)
	gm.warmStarts = mm.set.GetOrCreateCounter(gm.names[4])
	gm.dormantEvictions = mm.set.GetOrCreateCounter(gm.names[5])
	gm.notRestored = mm.set.GetOrCreateCounter(gm.names[6])
	mm.groups[k] = gm
	return gm
}

// syncGroups removes the metrics of groups that are gone.
func (mm *managerMetrics) syncGroups(old, next []*groupState) {
	keep := map[string]bool{}
	for _, g := range next {
		keep[g.spec.Key()] = true
	}
	mm.mu.Lock()
	defer mm.mu.Unlock()
	for _, g := range old {
		k := g.spec.Key()
		if keep[k] {
			continue
		}
		if gm := mm.groups[k]; gm != nil {
			for _, n := range gm.names {
				mm.set.UnregisterMetric(n)
			}
			delete(mm.groups, k)
		}
	}
}
