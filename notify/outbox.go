package notify

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/seismo-agent/seismo/internal/model"
	"github.com/seismo-agent/seismo/notify/draft"
)

var (
	bucketOutbox   = []byte("outbox")
	bucketNflog    = []byte("nflog")
	bucketSilences = []byte("silences")
)

// storedAlert is an alert as kept in the outbox, with its state (which
// model.Alert leaves out of JSON).
type storedAlert struct {
	*model.Alert
	State model.AlertState `json:"state"`
}

// entry is one pending delivery to one integration.
type entry struct {
	Seq         uint64        `json:"seq"`
	Integration string        `json:"integration"`
	Group       Group         `json:"group"`
	Alerts      []storedAlert `json:"alerts,omitempty"`
	Draft       *draft.Draft  `json:"draft,omitempty"`
	CreatedAt   time.Time     `json:"created_at"`

	attempts int
}

func (e *entry) alerts() []*model.Alert {
	out := make([]*model.Alert, len(e.Alerts))
	for i, s := range e.Alerts {
		a := *s.Alert
		a.State = s.State
		out[i] = &a
	}
	return out
}

func newEntry(integration string, g Group, alerts []*model.Alert, d *draft.Draft, now time.Time) *entry {
	e := &entry{Integration: integration, Group: g, Draft: d, CreatedAt: now}
	for _, a := range alerts {
		e.Alerts = append(e.Alerts, storedAlert{Alert: a, State: a.State})
	}
	return e
}

// outbox is the persistent queue of deliveries, one FIFO per integration.
// An entry is written before it is attempted and deleted once delivered,
// dropped, or failed permanently.
type outbox struct {
	db *bolt.DB

	mu     sync.Mutex
	seq    uint64
	queues map[string][]*entry
}

func seqKey(s uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], s)
	return b[:]
}

func openOutbox(db *bolt.DB) (*outbox, error) {
	o := &outbox{db: db, queues: map[string][]*entry{}}
	err := db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketOutbox, bucketNflog, bucketSilences} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return tx.Bucket(bucketOutbox).ForEach(func(k, v []byte) error {
			e := &entry{}
			if err := json.Unmarshal(v, e); err != nil {
				return fmt.Errorf("decode outbox entry %x: %w", k, err)
			}
			o.seq = max(o.seq, e.Seq)
			o.queues[e.Integration] = append(o.queues[e.Integration], e)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("open outbox: %w", err)
	}
	return o, nil
}

// add persists entries in one transaction and appends them to their queues.
// Queues longer than capacity lose their oldest entries, which are returned.
// extra runs in the same transaction, so that what was queued and what was
// recorded as notified never disagree.
func (o *outbox) add(entries []*entry, capacity int, extra func(*bolt.Tx) error) (dropped []*entry, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	seq := o.seq
	queues := map[string][]*entry{}
	for _, e := range entries {
		seq++
		e.Seq = seq
		if _, ok := queues[e.Integration]; !ok {
			queues[e.Integration] = slices.Clone(o.queues[e.Integration])
		}
		queues[e.Integration] = append(queues[e.Integration], e)
	}
	for id, q := range queues {
		if capacity > 0 && len(q) > capacity {
			n := len(q) - capacity
			dropped = append(dropped, q[:n]...)
			queues[id] = q[n:]
		}
	}
	err = o.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketOutbox)
		for _, e := range entries {
			v, err := json.Marshal(e)
			if err != nil {
				return err
			}
			if err := b.Put(seqKey(e.Seq), v); err != nil {
				return err
			}
		}
		for _, e := range dropped {
			if err := b.Delete(seqKey(e.Seq)); err != nil {
				return err
			}
		}
		if extra != nil {
			return extra(tx)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("write outbox: %w", err)
	}
	o.seq = seq
	for id, q := range queues {
		o.queues[id] = q
	}
	return dropped, nil
}

// head returns the oldest entry for an integration, or nil.
func (o *outbox) head(id string) *entry {
	o.mu.Lock()
	defer o.mu.Unlock()
	if q := o.queues[id]; len(q) > 0 {
		return q[0]
	}
	return nil
}

// remove deletes a delivered (or abandoned) entry.
func (o *outbox) remove(e *entry) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	err := o.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketOutbox).Delete(seqKey(e.Seq))
	})
	q := o.queues[e.Integration]
	if i := slices.Index(q, e); i >= 0 {
		o.queues[e.Integration] = slices.Delete(q, i, i+1)
	}
	if len(o.queues[e.Integration]) == 0 {
		delete(o.queues, e.Integration)
	}
	if err != nil {
		return fmt.Errorf("delete outbox entry: %w", err)
	}
	return nil
}

// removeAll deletes every entry of an integration in one transaction and
// returns how many there were.
func (o *outbox) removeAll(id string) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	q := o.queues[id]
	if len(q) == 0 {
		return 0, nil
	}
	err := o.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketOutbox)
		for _, e := range q {
			if err := b.Delete(seqKey(e.Seq)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("delete outbox entries: %w", err)
	}
	delete(o.queues, id)
	return len(q), nil
}

func (o *outbox) len(id string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.queues[id])
}

// total returns the number of pending entries over all integrations.
func (o *outbox) total() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, q := range o.queues {
		n += len(q)
	}
	return n
}

func (o *outbox) ids() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	ids := make([]string, 0, len(o.queues))
	for id := range o.queues {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}
