package notify_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seismo-agent/seismo/internal/model"
	"github.com/seismo-agent/seismo/notify/draft"
)

// TestDraftLifecycle: an incident goes Investigating -> Identified ->
// Monitoring -> Resolved (after the hold), each draft reaches the draft
// receiver, is served by /api/v1/drafts and written under the data dir.
func TestDraftLifecycle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		f := &fake{}
		d := newDispatcher(t, dispatcherOpts{dir: dir, drafts: true}, f)
		defer d.Close()
		stop := run(t, d)
		t0 := time.Now()
		a := firing("LoginErrors", "a", t0)
		d.Notify(t.Context(), a)
		time.Sleep(6 * time.Minute)
		b := *a
		b.Explanation = &model.Explanation{Kind: "rate_limit_storm", Cause: "a rate limiter is rejecting most clients",
			Breadth: &model.Breadth{Label: "client", Active: 40, Affected: 36, AffectedShare: 0.9}}
		d.Notify(t.Context(), &b)
		time.Sleep(10 * time.Minute)
		d.Notify(t.Context(), resolved(&b, time.Now()))
		time.Sleep(time.Hour)
		synctest.Wait()
		stop()

		var phases []draft.Phase
		for _, dr := range f.drafts {
			phases = append(phases, dr.Phase)
		}
		require.Equal(t, []draft.Phase{draft.PhaseInvestigating, draft.PhaseIdentified, draft.PhaseMonitoring, draft.PhaseResolved}, phases)
		last := f.drafts[3]
		require.Equal(t, draft.ImpactMajor, last.Impact)
		require.Contains(t, last.Text, "Between 00:00 and 00:16 UTC on 2000-01-01 (16 minutes)")
		require.Contains(t, last.Timeline, "cause identified: a rate limiter is rejecting most clients")

		rec := httptest.NewRecorder()
		d.DraftsHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/drafts", nil))
		require.Equal(t, http.StatusOK, rec.Code)
		var body struct {
			Data []draft.Incident `json:"data"`
		}
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body))
		require.Len(t, body.Data, 1)
		require.Len(t, body.Data[0].Drafts, 4)
		id := body.Data[0].ID

		for _, name := range []string{"incident.json", "01-investigating.md", "04-resolved.md", "postmortem.md"} {
			_, err := os.Stat(filepath.Join(dir, "drafts", id, name))
			require.NoError(t, err, name)
		}
		rec = httptest.NewRecorder()
		d.DraftsHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/drafts/"+id, nil))
		require.Equal(t, http.StatusOK, rec.Code)
		rec = httptest.NewRecorder()
		d.DraftsHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/drafts/nope", nil))
		require.Equal(t, http.StatusNotFound, rec.Code)
	})
}

// TestDraftWithdrawnHang: through the dispatcher, an alert first
// explained as unusual for the time of day and then as frozen opens an
// incident and withdraws it; the group's next incident is a new one,
// and both are kept.
func TestDraftWithdrawnHang(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fake{}
		d := newDispatcher(t, dispatcherOpts{dir: t.TempDir(), drafts: true}, f)
		defer d.Close()
		stop := run(t, d)
		t0 := time.Now()
		a := firing("QueueAnomaly", "a", t0)
		a.Explanation = &model.Explanation{Detector: "auto", Kind: "spike", Evidence: "time_of_day", Summary: "unusual for this time of day"}
		d.Notify(t.Context(), a)
		time.Sleep(6 * time.Minute)
		hang := *a
		hang.Explanation = &model.Explanation{Detector: "auto", Kind: "frozen", Evidence: "frozen", Summary: "it has stopped moving"}
		d.Notify(t.Context(), &hang)
		time.Sleep(6 * time.Minute)
		d.Notify(t.Context(), resolved(&hang, time.Now()))
		time.Sleep(time.Hour)
		b := firing("QueueAnomaly", "a", time.Now())
		b.Explanation = &model.Explanation{Detector: "auto", Kind: "level_shift", Summary: "level shift up"}
		d.Notify(t.Context(), b)
		time.Sleep(6 * time.Minute)
		synctest.Wait()
		stop()

		var phases []draft.Phase
		for _, dr := range f.drafts {
			phases = append(phases, dr.Phase)
		}
		require.Equal(t, []draft.Phase{draft.PhaseInvestigating, draft.PhaseResolved, draft.PhaseInvestigating}, phases)
		require.Contains(t, f.drafts[1].Text, "was not a problem users see")

		rec := httptest.NewRecorder()
		d.DraftsHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/drafts", nil))
		var body struct {
			Data []draft.Incident `json:"data"`
		}
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body))
		require.Len(t, body.Data, 2)
		withdrawn := 0
		for _, inc := range body.Data {
			if inc.Withdrawn {
				withdrawn++
				require.Len(t, inc.Drafts, 2)
			}
		}
		require.Equal(t, 1, withdrawn)
	})
}

// TestDraftResolvesAfterRestart: an incident that recovered before a restart
// still gets its Resolved draft afterwards, without any new alert.
func TestDraftResolvesAfterRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		f := &fake{}
		d := newDispatcher(t, dispatcherOpts{dir: dir, drafts: true}, f)
		stop := run(t, d)
		a := firing("Latency", "a", time.Now())
		d.Notify(t.Context(), a)
		time.Sleep(time.Minute)
		d.Notify(t.Context(), resolved(a, time.Now()))
		time.Sleep(5 * time.Minute) // recovered, holding
		synctest.Wait()
		stop()
		require.NoError(t, d.Close())
		require.Len(t, f.drafts, 2)

		f2 := &fake{}
		d2 := newDispatcher(t, dispatcherOpts{dir: dir, drafts: true}, f2)
		defer d2.Close()
		stop2 := run(t, d2)
		time.Sleep(30 * time.Minute)
		synctest.Wait()
		stop2()
		require.Len(t, f2.drafts, 1)
		require.Equal(t, draft.PhaseResolved, f2.drafts[0].Phase)
		require.Equal(t, 3, f2.drafts[0].Seq)
	})
}
