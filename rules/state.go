package rules

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	bolt "go.etcd.io/bbolt"

	"github.com/seismo-agent/seismo/detect"
)

// stateFile is the state database's name inside the data directory.
const stateFile = "rules.db"

var (
	bucketAlerts    = []byte("alerts")
	bucketDetectors = []byte("detectors")
)

// stateDB persists alert states and detector snapshots in bbolt: one write
// transaction per save, so a crash leaves the previous snapshot intact.
type stateDB struct {
	db *bolt.DB
}

func openStateDB(dir string) (*stateDB, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("rules: data dir: %w", err)
	}
	p := filepath.Join(dir, stateFile)
	db, err := bolt.Open(p, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		return nil, fmt.Errorf("rules: open state %q: %w", p, err)
	}
	return &stateDB{db: db}, nil
}

func (s *stateDB) close() error { return s.db.Close() }

// savedSeries is one detector instance on disk.
type savedSeries struct {
	Labels   labels.Labels `json:"labels"`
	LastSeen time.Time     `json:"lastSeen"`
	Run      int           `json:"run"`
	Recent   []float64     `json:"recent,omitempty"`
	// Still is when the latest run of one value in Recent began (zero
	// in files written before it was kept: not known).
	Still time.Time      `json:"still"`
	Last  detect.Verdict `json:"last"`
	State []byte         `json:"state"`
}

// savedState is everything read from disk at start, keyed by rule.
type savedState struct {
	alerts    map[string]map[uint64]*alertState
	detectors map[string]map[uint64]*savedSeries // rule key + detector hash
}

func detectorKey(rk ruleKey, hash uint64) string {
	return rk.String() + "\x00" + strconv.FormatUint(hash, 16)
}

func (s *stateDB) load() (*savedState, error) {
	st := &savedState{alerts: map[string]map[uint64]*alertState{}, detectors: map[string]map[uint64]*savedSeries{}}
	err := s.db.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucketAlerts); b != nil {
			if err := b.ForEach(func(k, v []byte) error {
				var m map[uint64]*alertState
				if err := json.Unmarshal(v, &m); err != nil {
					return fmt.Errorf("alerts of %q: %w", k, err)
				}
				st.alerts[string(k)] = m
				return nil
			}); err != nil {
				return err
			}
		}
		if b := tx.Bucket(bucketDetectors); b != nil {
			return b.ForEach(func(k, v []byte) error {
				var m map[uint64]*savedSeries
				if err := json.Unmarshal(v, &m); err != nil {
					return fmt.Errorf("detectors of %q: %w", k, err)
				}
				st.detectors[string(k)] = m
				return nil
			})
		}
		return nil
	})
	return st, err
}

// apply restores saved state into rules that have none yet, and forgets
// what it used. A rule some of whose snapshots do not restore (of a
// format an upgrade no longer reads, say) is logged to logger and
// counted in seismo_rules_group_snapshots_not_restored_total: those
// detectors start cold.
func (st *savedState) apply(groups []*groupState, logger *slog.Logger) {
	for _, g := range groups {
		for rs, k := range ruleKeys(g) {
			rs.mu.Lock()
			if saved, ok := st.alerts[k.String()]; ok && len(rs.alerts) == 0 {
				rs.alerts = saved
				delete(st.alerts, k.String())
			}
			if rs.rule.Detector != nil && len(rs.series) == 0 {
				dk := detectorKey(k, rs.rule.Detector.Hash)
				if saved, ok := st.detectors[dk]; ok {
					if failed, err := rs.restoreDetectors(saved); failed > 0 {
						logger.Warn("detector snapshots not restored; those detectors start cold", "group", g.spec.Name, "file", g.spec.File,
							"rule", rs.rule.Name, "not_restored", failed, "saved", len(saved), "err", err)
						if m := g.env.metrics; m != nil {
							m.notRestored.Add(failed)
						}
					}
					delete(st.detectors, dk)
				}
			}
			rs.mu.Unlock()
		}
	}
}

// restoreDetectors rebuilds detector instances from snapshots; a snapshot
// that does not restore is dropped (that detector starts cold). It
// returns how many were dropped, and the first one's error.
func (rs *ruleState) restoreDetectors(saved map[uint64]*savedSeries) (failed int, first error) {
	for key, s := range saved {
		ss := &seriesState{labels: s.Labels, lastSeen: s.LastSeen, run: s.Run, recent: s.Recent, still: s.Still, last: s.Last}
		if err := rs.restore(ss, s.State); err != nil {
			if failed++; first == nil {
				first = err
			}
			continue
		}
		rs.series[key] = ss
	}
	return failed, first
}

// restore gives ss a detector of the rule's kind restored from state,
// or says why state does not restore.
func (rs *ruleState) restore(ss *seriesState, state []byte) error {
	d := rs.rule.Detector
	if d.Composite() {
		c, err := d.Config.(detect.CompositeConfig).New()
		if err == nil {
			err = c.UnmarshalBinary(state)
		}
		if err != nil {
			return err
		}
		ss.comp = c
		return nil
	}
	det, err := d.Config.(detect.UnivariateConfig).New()
	if err == nil {
		err = det.UnmarshalBinary(state)
	}
	if err != nil {
		return err
	}
	ss.det = det
	return nil
}

// marshal returns ss's detector state: its snapshot while dormant.
func (ss *seriesState) marshal() ([]byte, error) {
	switch {
	case ss.snap != nil:
		return ss.snap, nil
	case ss.comp != nil:
		return ss.comp.MarshalBinary()
	}
	return ss.det.MarshalBinary()
}

// Save writes every alert state and detector snapshot to the data
// directory. It is a no-op without a data directory.
func (m *Manager) Save() error {
	if m.db == nil {
		return nil
	}
	m.mu.Lock()
	groups, unclaimed, closed := m.groups, m.restore != nil, m.closed
	m.mu.Unlock()
	if unclaimed || closed {
		return nil // no rules loaded yet (keep what is on disk), or closed
	}
	m.saveMu.Lock() // after mu: see Manager.saveMu
	defer m.saveMu.Unlock()
	alerts := map[string][]byte{}
	dets := map[string][]byte{}
	for _, g := range groups {
		for rs, k := range ruleKeys(g) {
			rs.mu.Lock()
			b, err := rs.encodeAlerts()
			if err != nil {
				rs.mu.Unlock()
				return err
			}
			if b != nil {
				alerts[k.String()] = b
			}
			if rs.rule.Detector != nil {
				saved, err := rs.snapshotDetectors()
				if err != nil {
					rs.mu.Unlock()
					return err
				}
				if len(saved) > 0 {
					b, err := json.Marshal(saved)
					if err != nil {
						rs.mu.Unlock()
						return fmt.Errorf("rules: encode detectors: %w", err)
					}
					dets[detectorKey(k, rs.rule.Detector.Hash)] = b
				}
			}
			rs.mu.Unlock()
		}
	}
	return m.db.db.Update(func(tx *bolt.Tx) error {
		for _, bk := range []struct {
			name []byte
			data map[string][]byte
		}{{bucketAlerts, alerts}, {bucketDetectors, dets}} {
			if tx.Bucket(bk.name) != nil {
				if err := tx.DeleteBucket(bk.name); err != nil {
					return err
				}
			}
			b, err := tx.CreateBucket(bk.name)
			if err != nil {
				return err
			}
			for k, v := range bk.data {
				if err := b.Put([]byte(k), v); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

func (rs *ruleState) snapshotDetectors() (map[uint64]*savedSeries, error) {
	out := map[uint64]*savedSeries{}
	// Dormant detectors too: restored into the live set, they go back to
	// dormant at the first evaluation that does not see their series.
	for k, ss := range rs.allSeries() {
		b, err := ss.marshal()
		if err != nil {
			return nil, fmt.Errorf("rules: snapshot detector of %q: %w", rs.rule.Name, err)
		}
		out[k] = &savedSeries{Labels: ss.labels, LastSeen: ss.lastSeen, Run: ss.run, Recent: ss.recent, Still: ss.still, Last: ss.last, State: b}
	}
	return out, nil
}
