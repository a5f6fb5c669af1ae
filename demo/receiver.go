package demo

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/seismo-agent/seismo/notify/draft"
	"github.com/seismo-agent/seismo/notify/webhook"
)

// Event is one thing the agent told the demo: an alert of a notification
// (firing or resolved) or a status-update draft.
type Event struct {
	// At is when the demo received it.
	At    time.Time
	Alert *webhook.Alert
	Draft *draft.Draft
}

// Receiver is a webhook endpoint for the agent's notifications: it accepts
// Alertmanager webhook v4 documents and seismo's status-draft messages and
// hands them on as Events. ServeHTTP may be called concurrently; it waits
// for the reader of Events, so a slow reader makes the agent retry rather
// than lose anything.
type Receiver struct {
	events chan Event
	now    func() time.Time
}

// NewReceiver returns a receiver; now defaults to time.Now.
func NewReceiver(now func() time.Time) *Receiver {
	if now == nil {
		now = time.Now
	}
	return &Receiver{events: make(chan Event, 64), now: now}
}

// Events delivers what the receiver accepted, in arrival order.
func (r *Receiver) Events() <-chan Event { return r.events }

// maxBody bounds one notification.
const maxBody = 4 << 20

func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, maxBody))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	evs, err := r.decode(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	for _, ev := range evs {
		select {
		case r.events <- ev:
		case <-req.Context().Done():
			http.Error(w, "receiver busy", http.StatusServiceUnavailable)
			return
		}
	}
	w.WriteHeader(http.StatusOK)
}

func (r *Receiver) decode(body []byte) ([]Event, error) {
	at := r.now()
	var kind struct {
		Kind string `json:"kind"`
	}
	if err := json.Unmarshal(body, &kind); err != nil {
		return nil, fmt.Errorf("decode notification: %w", err)
	}
	if kind.Kind == "status_draft" {
		var m webhook.DraftMessage
		if err := json.Unmarshal(body, &m); err != nil {
			return nil, fmt.Errorf("decode draft: %w", err)
		}
		if m.Draft == nil {
			return nil, fmt.Errorf("decode draft: no draft in message")
		}
		return []Event{{At: at, Draft: m.Draft}}, nil
	}
	var m webhook.Message
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("decode alerts: %w", err)
	}
	evs := make([]Event, 0, len(m.Alerts))
	for i := range m.Alerts {
		evs = append(evs, Event{At: at, Alert: &m.Alerts[i]})
	}
	return evs, nil
}
