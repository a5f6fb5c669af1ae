package notify

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	bolt "go.etcd.io/bbolt"

	"github.com/seismo-agent/seismo/internal/model"
)

// Silence mutes the alerts its matchers select between StartsAt and EndsAt.
type Silence struct {
	ID        string    `json:"id"`
	Matchers  []string  `json:"matchers"`
	StartsAt  time.Time `json:"startsAt"`
	EndsAt    time.Time `json:"endsAt"`
	CreatedBy string    `json:"createdBy,omitempty"`
	Comment   string    `json:"comment,omitempty"`
	// Status is "pending", "active" or "expired", computed when listed.
	Status string `json:"status,omitempty"`

	ms []*labels.Matcher
}

func (s *Silence) compile() error {
	if len(s.Matchers) == 0 {
		return errors.New("a silence needs at least one matcher")
	}
	s.ms = s.ms[:0]
	for _, m := range s.Matchers {
		pm, err := ParseMatcher(m)
		if err != nil {
			return err
		}
		s.ms = append(s.ms, pm)
	}
	if !s.EndsAt.After(s.StartsAt) {
		return errors.New("endsAt must be after startsAt")
	}
	return nil
}

func (s *Silence) status(now time.Time) string {
	switch {
	case now.Before(s.StartsAt):
		return "pending"
	case now.Before(s.EndsAt):
		return "active"
	}
	return "expired"
}

func (s *Silence) mutes(ls labels.Labels) bool {
	for _, m := range s.ms {
		if !m.Matches(ls.Get(m.Name)) {
			return false
		}
	}
	return true
}

// silences is the persisted set of silences.
type silences struct {
	db  *bolt.DB
	now func() time.Time

	mu   sync.RWMutex
	list map[string]*Silence
}

func openSilences(db *bolt.DB, now func() time.Time) (*silences, error) {
	s := &silences{db: db, now: now, list: map[string]*Silence{}}
	err := db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketSilences).ForEach(func(k, v []byte) error {
			sil := &Silence{}
			if err := json.Unmarshal(v, sil); err != nil {
				return fmt.Errorf("decode silence %s: %w", k, err)
			}
			if err := sil.compile(); err != nil {
				return fmt.Errorf("silence %s: %w", k, err)
			}
			s.list[sil.ID] = sil
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	if err := s.gc(now()); err != nil {
		return nil, err
	}
	return s, nil
}

// silenceRetention is how long an expired silence stays listed.
const silenceRetention = 5 * 24 * time.Hour

// gc deletes silences that expired more than silenceRetention ago.
func (s *silences) gc(now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var old []string
	for id, sil := range s.list {
		if now.Sub(sil.EndsAt) > silenceRetention {
			old = append(old, id)
		}
	}
	if len(old) == 0 {
		return nil
	}
	err := s.db.Update(func(tx *bolt.Tx) error {
		for _, id := range old {
			if err := tx.Bucket(bucketSilences).Delete([]byte(id)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("delete expired silences: %w", err)
	}
	for _, id := range old {
		delete(s.list, id)
	}
	return nil
}

// filter returns the alerts no active silence mutes.
func (s *silences) filter(alerts []*model.Alert, now time.Time) []*model.Alert {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if len(s.list) == 0 {
		return alerts
	}
	return slices.DeleteFunc(slices.Clone(alerts), func(a *model.Alert) bool {
		for _, sil := range s.list {
			if sil.status(now) == "active" && sil.mutes(a.Labels) {
				return true
			}
		}
		return false
	})
}

// mutedBy returns the IDs of the active silences that mute ls, sorted.
func (s *silences) mutedBy(ls labels.Labels, now time.Time) []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var ids []string
	for id, sil := range s.list {
		if sil.status(now) == "active" && sil.mutes(ls) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

func (s *silences) add(sil *Silence) error {
	if sil.ID == "" {
		var b [8]byte
		_, _ = rand.Read(b[:])
		sil.ID = hex.EncodeToString(b[:])
	}
	if sil.StartsAt.IsZero() {
		sil.StartsAt = s.now()
	}
	if err := sil.compile(); err != nil {
		return err
	}
	sil.Status = ""
	raw, err := json.Marshal(sil)
	if err != nil {
		return err
	}
	if err := s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketSilences).Put([]byte(sil.ID), raw) }); err != nil {
		return fmt.Errorf("store silence: %w", err)
	}
	s.mu.Lock()
	s.list[sil.ID] = sil
	s.mu.Unlock()
	return s.gc(s.now())
}

func (s *silences) delete(id string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.list[id]; !ok {
		return false, nil
	}
	if err := s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketSilences).Delete([]byte(id)) }); err != nil {
		return false, fmt.Errorf("delete silence: %w", err)
	}
	delete(s.list, id)
	return true, nil
}

func (s *silences) all(now time.Time) []Silence {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]Silence, 0, len(s.list))
	for _, sil := range s.list {
		c := *sil
		c.ms = nil
		c.Status = sil.status(now)
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b Silence) int { return a.StartsAt.Compare(b.StartsAt) })
	return out
}

// AddSilence stores a silence (assigning an ID when empty) and returns it.
func (d *Dispatcher) AddSilence(s Silence) (Silence, error) {
	err := d.sil.add(&s)
	return s, err
}

// SilencedBy returns the IDs of the active silences that mute an alert with
// labels ls (none: nil). Safe for concurrent use.
func (d *Dispatcher) SilencedBy(ls labels.Labels) []string { return d.sil.mutedBy(ls, d.now()) }

// SilencesHandler serves the silences API:
//
//	GET    /api/v1/silences        list
//	POST   /api/v1/silences        create: {"matchers": ["alertname=\"X\""], "startsAt", "endsAt", "createdBy", "comment"}
//	DELETE /api/v1/silences/{id}   delete
func (d *Dispatcher) SilencesHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := strings.Trim(strings.TrimPrefix(r.URL.Path, "/api/v1/silences"), "/")
		switch {
		case r.Method == http.MethodGet && id == "":
			writeJSON(w, http.StatusOK, map[string]any{"status": "success", "data": d.sil.all(d.now())})
		case r.Method == http.MethodPost && id == "":
			var s Silence
			dec := json.NewDecoder(io.LimitReader(r.Body, 1<<20))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&s); err != nil {
				writeJSON(w, http.StatusBadRequest, apiError("bad silence: "+err.Error()))
				return
			}
			s.ID = ""
			s, err := d.AddSilence(s)
			if err != nil {
				writeJSON(w, http.StatusBadRequest, apiError(err.Error()))
				return
			}
			writeJSON(w, http.StatusOK, map[string]any{"status": "success", "data": map[string]string{"silenceID": s.ID}})
		case r.Method == http.MethodDelete && id != "":
			ok, err := d.sil.delete(id)
			switch {
			case err != nil:
				writeJSON(w, http.StatusInternalServerError, apiError(err.Error()))
			case !ok:
				writeJSON(w, http.StatusNotFound, apiError("no such silence"))
			default:
				writeJSON(w, http.StatusOK, map[string]string{"status": "success"})
			}
		default:
			writeJSON(w, http.StatusMethodNotAllowed, apiError("method not allowed"))
		}
	})
}
