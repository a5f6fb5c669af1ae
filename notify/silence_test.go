package notify_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/require"

	"github.com/seismo-agent/seismo/notify"
)

func TestSilences(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		f := &fake{start: time.Now()}
		d := newDispatcher(t, dispatcherOpts{dir: dir}, f)
		h := d.SilencesHandler()

		body := `{"matchers": ["alertname=\"Latency\"", "instance=~\"a|b\""], "endsAt": "` +
			time.Now().Add(time.Hour).Format(time.RFC3339) + `", "createdBy": "ops", "comment": "deploy"}`
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/api/v1/silences", strings.NewReader(body)))
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		var created struct {
			Data struct{ SilenceID string } `json:"data"`
		}
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &created))
		require.NotEmpty(t, created.Data.SilenceID)

		stop := run(t, d)
		script(t, d, f.start, []step{{at: 0, fire: []string{"Latency/a", "Latency/c"}}}, time.Minute)
		synctest.Wait()
		stop()
		require.Equal(t, []string{`00:00:30 {alertname="Latency"}: c=firing`}, f.lines())
		require.NoError(t, d.Close())

		// The silence survives a restart and can be listed and deleted.
		d2 := newDispatcher(t, dispatcherOpts{dir: dir}, f)
		defer d2.Close()
		h2 := d2.SilencesHandler()
		rec = httptest.NewRecorder()
		h2.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/silences", nil))
		require.Equal(t, http.StatusOK, rec.Code)
		require.Contains(t, rec.Body.String(), `"status":"active"`)
		require.Contains(t, rec.Body.String(), created.Data.SilenceID)
		require.Equal(t, []string{created.Data.SilenceID}, d2.SilencedBy(labels.FromStrings("alertname", "Latency", "instance", "a")))
		require.Empty(t, d2.SilencedBy(labels.FromStrings("alertname", "Latency", "instance", "c")))

		rec = httptest.NewRecorder()
		h2.ServeHTTP(rec, httptest.NewRequest(http.MethodDelete, "/api/v1/silences/"+created.Data.SilenceID, nil))
		require.Equal(t, http.StatusOK, rec.Code)
		rec = httptest.NewRecorder()
		h2.ServeHTTP(rec, httptest.NewRequest(http.MethodDelete, "/api/v1/silences/"+created.Data.SilenceID, nil))
		require.Equal(t, http.StatusNotFound, rec.Code)
	})
}

func TestSilenceAPIRejects(t *testing.T) {
	d := newDispatcher(t, dispatcherOpts{}, &fake{})
	defer d.Close()
	tests := []struct {
		name, body, want string
	}{
		{"no matchers", `{"endsAt": "2999-01-01T00:00:00Z"}`, "at least one matcher"},
		{"bad matcher", `{"matchers": ["nope"], "endsAt": "2999-01-01T00:00:00Z"}`, "bad matcher"},
		{"ends before start", `{"matchers": ["a=\"b\""], "startsAt": "2999-01-02T00:00:00Z", "endsAt": "2999-01-01T00:00:00Z"}`, "endsAt must be after startsAt"},
		{"unknown field", `{"matchers": ["a=\"b\""], "until": "x"}`, "unknown field"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			d.SilencesHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/api/v1/silences", strings.NewReader(tt.body)))
			require.Equal(t, http.StatusBadRequest, rec.Code)
			require.Contains(t, rec.Body.String(), tt.want)
		})
	}
}

func TestExpiredSilencesAreDeleted(t *testing.T) {
	d := newDispatcher(t, dispatcherOpts{}, &fake{})
	defer d.Close()
	now := time.Now()
	_, err := d.AddSilence(notify.Silence{Matchers: []string{`a="b"`}, StartsAt: now.Add(-10 * 24 * time.Hour), EndsAt: now.Add(-6 * 24 * time.Hour)})
	require.NoError(t, err)
	recent, err := d.AddSilence(notify.Silence{Matchers: []string{`a="b"`}, StartsAt: now.Add(-2 * time.Hour), EndsAt: now.Add(-time.Hour)})
	require.NoError(t, err)
	rec := httptest.NewRecorder()
	d.SilencesHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/silences", nil))
	var list struct {
		Data []notify.Silence `json:"data"`
	}
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &list))
	require.Len(t, list.Data, 1)
	require.Equal(t, recent.ID, list.Data[0].ID)
	require.Equal(t, "expired", list.Data[0].Status)
}
