package notify

import (
	"fmt"

	bolt "go.etcd.io/bbolt"
)

var bucketState = []byte("state")

// State is a small persistent key-value store for one integration, kept in
// the notify state file, e.g. the Slack message of each group.
type State interface {
	Get(key string) ([]byte, bool)
	Put(key string, value []byte) error
	Delete(key string) error
}

// Stateful is implemented by integrations that keep state across restarts.
// ApplyConfig calls UseState before the integration's first Notify.
type Stateful interface {
	UseState(State)
}

type boltState struct {
	db     *bolt.DB
	prefix string
}

func (s *boltState) key(k string) []byte { return []byte(s.prefix + "\x00" + k) }

func (s *boltState) Get(k string) ([]byte, bool) {
	var out []byte
	_ = s.db.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucketState); b != nil {
			if v := b.Get(s.key(k)); v != nil {
				out = append([]byte(nil), v...)
			}
		}
		return nil
	})
	return out, out != nil
}

func (s *boltState) Put(k string, v []byte) error {
	err := s.db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketState)
		if err != nil {
			return err
		}
		return b.Put(s.key(k), v)
	})
	if err != nil {
		return fmt.Errorf("store integration state: %w", err)
	}
	return nil
}

func (s *boltState) Delete(k string) error {
	err := s.db.Update(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucketState); b != nil {
			return b.Delete(s.key(k))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("delete integration state: %w", err)
	}
	return nil
}
