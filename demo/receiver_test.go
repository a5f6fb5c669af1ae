package demo

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seismo-agent/seismo/notify/draft"
	"github.com/seismo-agent/seismo/notify/webhook"
)

func TestReceiver(t *testing.T) {
	at := time.Unix(1_700_000_000, 0)
	alerts, err := json.Marshal(webhook.Message{Version: "4", Status: "firing", Alerts: []webhook.Alert{
		{Status: "firing", Labels: map[string]string{"alertname": "A"}, Fingerprint: "1"},
		{Status: "resolved", Labels: map[string]string{"alertname": "B"}, Fingerprint: "2"},
	}})
	require.NoError(t, err)
	drafted, err := json.Marshal(webhook.DraftMessage{Kind: "status_draft", Draft: &draft.Draft{Title: "T", Phase: draft.PhaseIdentified}})
	require.NoError(t, err)

	tests := []struct {
		name     string
		method   string
		body     string
		wantCode int
		want     []Event
	}{
		{"alerts", http.MethodPost, string(alerts), http.StatusOK, []Event{
			{At: at, Alert: &webhook.Alert{Status: "firing", Labels: map[string]string{"alertname": "A"}, Fingerprint: "1"}},
			{At: at, Alert: &webhook.Alert{Status: "resolved", Labels: map[string]string{"alertname": "B"}, Fingerprint: "2"}},
		}},
		{"draft", http.MethodPost, string(drafted), http.StatusOK, []Event{{At: at, Draft: &draft.Draft{Title: "T", Phase: draft.PhaseIdentified}}}},
		{"draft without draft", http.MethodPost, `{"kind":"status_draft"}`, http.StatusBadRequest, nil},
		{"not json", http.MethodPost, `nope`, http.StatusBadRequest, nil},
		{"wrong method", http.MethodGet, ``, http.StatusMethodNotAllowed, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewReceiver(func() time.Time { return at })
			rec := httptest.NewRecorder()
			r.ServeHTTP(rec, httptest.NewRequest(tt.method, "/", strings.NewReader(tt.body)))
			require.Equal(t, tt.wantCode, rec.Code, rec.Body.String())
			var got []Event
			for len(r.Events()) > 0 {
				ev := <-r.Events()
				if ev.Alert != nil {
					ev.Alert.Annotations = nil // absent in the message, empty after decoding
				}
				got = append(got, ev)
			}
			require.Equal(t, tt.want, got)
		})
	}
}

func TestReceiverGivesUpWhenTheSenderDoes(t *testing.T) {
	r := NewReceiver(nil)
	for range cap(r.events) {
		r.events <- Event{}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rec := httptest.NewRecorder()
	body := `{"version":"4","alerts":[{"status":"firing","labels":{"alertname":"A"}}]}`
	r.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body)).WithContext(ctx))
	require.Equal(t, http.StatusServiceUnavailable, rec.Code)
}
