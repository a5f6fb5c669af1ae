package notify_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seismo-agent/seismo/notify"
)

// FuzzSilenceAPI posts arbitrary bodies to the silences API. Properties:
// no panic; the answer is 200 or 400 with a JSON body saying so; an
// accepted silence is listed with what was posted (unless it expired long
// enough ago to be collected at once), survives a restart unchanged, and
// can be deleted exactly once.
func FuzzSilenceAPI(f *testing.F) {
	for _, s := range []string{
		`{"matchers": ["alertname=\"Latency\"", "instance=~\"a|b\""], "endsAt": "2999-01-01T00:00:00Z", "createdBy": "ops", "comment": "deploy"}`,
		`{"matchers": ["a!=b", "c!~\"(\""], "endsAt": "2999-01-01T00:00:00Z"}`,
		`{"matchers": ["a=\"b\""], "startsAt": "2000-01-01T00:00:00Z", "endsAt": "2000-01-02T00:00:00Z"}`,
		`{"id": "x", "status": "active", "matchers": ["a=\"\\\"\""], "endsAt": "2999-01-01T00:00:00+14:00"}`,
		`{"matchers": [], "endsAt": "0001-01-01T00:00:00Z"}`,
		`[]`, `null`, `{"matchers": ["a=b"], "endsAt": "9999-12-31T23:59:59.999999999Z"} trailing`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if len(body) > 16<<10 {
			t.Skip("the body limit is tested elsewhere")
		}
		dir := t.TempDir()
		d := newDispatcher(t, dispatcherOpts{dir: dir}, &fake{})
		h := d.SilencesHandler()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/api/v1/silences", strings.NewReader(string(body))))
		var resp struct {
			Status string `json:"status"`
			Error  string `json:"error"`
			Data   struct {
				SilenceID string `json:"silenceID"`
			} `json:"data"`
		}
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &resp), "answer is not JSON: %q", rec.Body.String())
		if rec.Code != http.StatusOK {
			require.NoError(t, d.Close())
			require.Equal(t, http.StatusBadRequest, rec.Code, rec.Body.String())
			require.Equal(t, "error", resp.Status)
			require.NotEmpty(t, resp.Error)
			return
		}
		require.Equal(t, "success", resp.Status)
		require.NotEmpty(t, resp.Data.SilenceID)

		var posted notify.Silence
		require.NoError(t, json.NewDecoder(strings.NewReader(string(body))).Decode(&posted))
		list := func(d *notify.Dispatcher) []notify.Silence {
			rec := httptest.NewRecorder()
			d.SilencesHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/silences", nil))
			require.Equal(t, http.StatusOK, rec.Code)
			var l struct {
				Data []notify.Silence `json:"data"`
			}
			require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &l))
			return l.Data
		}
		before := list(d)
		require.NoError(t, d.Close())
		if time.Since(posted.EndsAt) > 4*24*time.Hour {
			return // may have been collected as long expired
		}
		require.Len(t, before, 1)
		got := before[0]
		require.Equal(t, resp.Data.SilenceID, got.ID)
		require.Equal(t, posted.Matchers, got.Matchers)
		require.True(t, posted.EndsAt.Equal(got.EndsAt), "endsAt %s became %s", posted.EndsAt, got.EndsAt)
		if !posted.StartsAt.IsZero() {
			require.True(t, posted.StartsAt.Equal(got.StartsAt), "startsAt %s became %s", posted.StartsAt, got.StartsAt)
		}
		require.Equal(t, posted.CreatedBy, got.CreatedBy)
		require.Equal(t, posted.Comment, got.Comment)

		// A restart keeps it unchanged.
		d2 := newDispatcher(t, dispatcherOpts{dir: dir}, &fake{})
		defer d2.Close()
		after := list(d2)
		require.Len(t, after, 1)
		a, b := before[0], after[0]
		require.True(t, a.StartsAt.Equal(b.StartsAt) && a.EndsAt.Equal(b.EndsAt))
		a.StartsAt, a.EndsAt, b.StartsAt, b.EndsAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
		a.Status, b.Status = "", ""
		require.Equal(t, a, b, "silence changed across a restart")

		for _, want := range []int{http.StatusOK, http.StatusNotFound} {
			rec := httptest.NewRecorder()
			d2.SilencesHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodDelete, "/api/v1/silences/"+got.ID, nil))
			require.Equal(t, want, rec.Code, rec.Body.String())
		}
	})
}
