package demo

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seismo-agent/seismo/notify/alertmanager"
	"github.com/seismo-agent/seismo/notify/webhook"
)

// roundTrip checks that v, decoded from some JSON, encodes to JSON that
// decodes into a value encoding to the same bytes: a receiver that stores
// or forwards what it got loses nothing.
func roundTrip[T any](t *testing.T, v T) {
	t.Helper()
	b1, err := json.Marshal(v)
	require.NoError(t, err, "decoded payload does not encode again")
	var v2 T
	require.NoError(t, json.Unmarshal(b1, &v2), "encoded payload does not decode: %s", b1)
	b2, err := json.Marshal(v2)
	require.NoError(t, err)
	require.Equal(t, string(b1), string(b2), "payload changed in a JSON round trip")
}

// FuzzPayloads feeds arbitrary bodies to the payload decoders seismo's
// receivers use: the demo receiver (Alertmanager webhook v4 documents and
// status drafts), Alertmanager's POST /api/v2/alerts array, and webhook
// signature verification. Properties: no panic; an accepted notification
// gives one event per alert (or exactly one draft); every accepted payload
// survives a JSON round trip unchanged; a signature verifies exactly for
// the body, secret and timestamp it was made for.
func FuzzPayloads(f *testing.F) {
	for _, glob := range []string{"../notify/webhook/testdata/*.json", "../notify/alertmanager/testdata/*.json"} {
		files, err := filepath.Glob(glob)
		require.NoError(f, err)
		for _, p := range files {
			b, err := os.ReadFile(p)
			require.NoError(f, err)
			f.Add(b)
		}
	}
	f.Add([]byte(`{"kind":"status_draft","draft":null}`))
	f.Add([]byte(`{"kind":"status_draft","draft":{"phase":"x","created_at":"2026-01-01T00:00:00+14:00"}}`))
	f.Add([]byte(`{"alerts":[{"seismo":{"band":[1,2],"expected":null,"recent":[1e308]}}]}`))

	at := time.Unix(1_700_000_000, 0)
	rcv := NewReceiver(func() time.Time { return at })
	f.Fuzz(func(t *testing.T, body []byte) {
		if len(body) > maxBody {
			t.Skip("over the receiver's body limit")
		}
		// Demo receiver.
		evs, err := rcv.decode(body)
		if err == nil {
			var kind struct {
				Kind string `json:"kind"`
			}
			require.NoError(t, json.Unmarshal(body, &kind))
			if kind.Kind == "status_draft" {
				require.Len(t, evs, 1)
				require.NotNil(t, evs[0].Draft)
				require.Nil(t, evs[0].Alert)
				roundTrip(t, *evs[0].Draft)
			} else {
				var m webhook.Message
				require.NoError(t, json.NewDecoder(bytes.NewReader(body)).Decode(&m))
				require.Len(t, evs, len(m.Alerts))
				for _, ev := range evs {
					require.NotNil(t, ev.Alert)
					require.Equal(t, at, ev.At)
				}
				roundTrip(t, m)
			}
		}

		// Alertmanager's alerts array.
		var ams []alertmanager.Alert
		if json.Unmarshal(body, &ams) == nil {
			roundTrip(t, ams)
		}

		// Webhook signatures.
		secret := []byte("s3cret")
		ts := strconv.FormatInt(at.Unix(), 10)
		sig := "sha256=" + webhook.Sign(secret, ts, body)
		require.True(t, webhook.Verify(secret, sig, ts, body, at, time.Minute))
		require.False(t, webhook.Verify([]byte("other"), sig, ts, body, at, time.Minute), "wrong secret verified")
		require.False(t, webhook.Verify(secret, sig, ts, body, at.Add(2*time.Minute), time.Minute), "stale timestamp verified")
		require.False(t, webhook.Verify(secret, sig, ts, append(body, 'x'), at, time.Minute), "changed body verified")
		if len(body) > 0 {
			require.False(t, webhook.Verify(secret, sig, ts, body[1:], at, time.Minute), "shortened body verified")
			require.False(t, webhook.Verify(secret, string(body), ts, body, at, time.Minute) && string(body) != sig, "arbitrary header verified")
		}
	})
}
