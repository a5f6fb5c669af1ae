package rules

import (
	"encoding/json"
	"fmt"
	"sync"

	bolt "go.etcd.io/bbolt"

	"github.com/seismo-agent/seismo/internal/model"
)

// transitions remembers, per group and alert, the state last handed on, so
// that a group writes its alert states to disk before it hands on a state
// change (first firing, resolved) and not for periodic re-sends. Without
// it, an agent killed after announcing an alert but before the next
// periodic Save restarts without the alert and never sends its resolve.
type transitions struct {
	mu   sync.Mutex
	last map[string]map[uint64]model.AlertState // group key, fingerprint
}

// changed records the states of alerts of group g and reports whether any
// differs from what was last recorded.
func (tr *transitions) changed(g string, alerts []*model.Alert) bool {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if tr.last == nil {
		tr.last = map[string]map[uint64]model.AlertState{}
	}
	last := tr.last[g]
	if last == nil {
		last = map[uint64]model.AlertState{}
		tr.last[g] = last
	}
	changed := false
	for _, a := range alerts {
		fp := a.Fingerprint()
		if st, ok := last[fp]; !ok || st != a.State {
			changed = true
			last[fp] = a.State
		}
	}
	if len(last) > 10_000 { // bound memory: forget resolved alerts
		for fp, st := range last {
			if st == model.StateResolved {
				delete(last, fp)
			}
		}
	}
	return changed
}

// saveTransitions writes g's alert states to the state database when
// alerts, about to be handed on, hold a state change. It takes no lock
// that a reload holds while it waits for the group's loop to stop.
func (m *Manager) saveTransitions(g *groupState, alerts []*model.Alert) {
	if m.db == nil || !m.trans.changed(g.spec.Key(), alerts) {
		return
	}
	if err := m.saveAlerts(g); err != nil {
		m.logger.Error("save alert state before notifying", "group", g.spec.Name, "err", err)
	}
}

// encodeAlerts returns the rule's alert states as stored, or nil when it
// has none. The caller holds rs.mu.
func (rs *ruleState) encodeAlerts() ([]byte, error) {
	if len(rs.alerts) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(rs.alerts)
	if err != nil {
		return nil, fmt.Errorf("rules: encode alerts: %w", err)
	}
	return b, nil
}

// saveAlerts writes the alert states of g's rules, leaving other groups'
// entries and detector snapshots as they are.
func (m *Manager) saveAlerts(g *groupState) error {
	m.saveMu.Lock()
	defer m.saveMu.Unlock()
	puts := map[string][]byte{}
	var dels []string
	for rs, k := range ruleKeys(g) {
		rs.mu.Lock()
		b, err := rs.encodeAlerts()
		rs.mu.Unlock()
		switch {
		case err != nil:
			return err
		case b != nil:
			puts[k.String()] = b
		default:
			dels = append(dels, k.String())
		}
	}
	return m.db.db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketAlerts)
		if err != nil {
			return err
		}
		for k, v := range puts {
			if err := b.Put([]byte(k), v); err != nil {
				return err
			}
		}
		for _, k := range dels {
			if err := b.Delete([]byte(k)); err != nil {
				return err
			}
		}
		return nil
	})
}
