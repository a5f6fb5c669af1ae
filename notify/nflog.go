package notify

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/seismo-agent/seismo/internal/model"
)

// nflogEntry records what was last queued for one integration and group:
// Alertmanager's notification log. It is persisted with the outbox entry it
// describes, so a restart neither repeats nor forgets a notification.
type nflogEntry struct {
	Firing   []uint64  `json:"firing"`
	Resolved []uint64  `json:"resolved"`
	Flapping []uint64  `json:"flapping,omitempty"`
	At       time.Time `json:"at"`
}

func splitFingerprints(alerts []*model.Alert) (firing, resolved, flapping []uint64) {
	firing, resolved = []uint64{}, []uint64{}
	for _, a := range alerts {
		switch {
		case a.Resolved():
			resolved = append(resolved, a.Fingerprint())
		case a.Flapping:
			flapping = append(flapping, a.Fingerprint())
			fallthrough
		default:
			firing = append(firing, a.Fingerprint())
		}
	}
	slices.Sort(firing)
	slices.Sort(resolved)
	slices.Sort(flapping)
	return firing, resolved, flapping
}

func subset(sub, set []uint64) bool {
	for _, x := range sub {
		if _, ok := slices.BinarySearch(set, x); !ok {
			return false
		}
	}
	return true
}

// needsUpdate is Alertmanager's de-duplication rule: notify when a firing
// alert is new to the receiver, when everything resolved after a firing
// notification, when (with send_resolved) a resolved alert is new, or when
// repeat_interval has passed since the last notification. seismo adds one
// rule: an alert that starts flapping is notified once.
func needsUpdate(prev *nflogEntry, firing, resolved, flapping []uint64, sendResolved bool, repeat time.Duration, now time.Time) bool {
	switch {
	case prev == nil:
		return len(firing) > 0
	case !subset(firing, prev.Firing), !subset(flapping, prev.Flapping):
		return true
	case len(firing) == 0:
		return len(prev.Firing) > 0
	case sendResolved && !subset(resolved, prev.Resolved):
		return true
	}
	return !prev.At.After(now.Add(-repeat))
}

func (d *Dispatcher) loadNflog() error {
	return d.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketNflog).ForEach(func(k, v []byte) error {
			var e nflogEntry
			if err := json.Unmarshal(v, &e); err != nil {
				return fmt.Errorf("decode notification log: %w", err)
			}
			d.nflog[string(k)] = e
			return nil
		})
	})
}
