package notify

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/seismo-agent/seismo/internal/model"
	"github.com/seismo-agent/seismo/notify/draft"
)

// observeIncident advances the group's incident and returns the outbox
// entries for the draft receivers.
func (d *Dispatcher) observeIncident(cfg *Config, ag *aggrGroup, g Group, alerts []*model.Alert, now time.Time) []*entry {
	if cfg.Drafts == nil {
		return nil
	}
	d.draftMu.Lock()
	defer d.draftMu.Unlock()
	inc, ok := d.incidents[ag.key]
	if !ok {
		inc = draft.NewIncident(ag.key, ag.labels)
	}
	phases := inc.Observe(alerts, now)
	if inc.Phase == draft.PhaseNone {
		return nil
	}
	if !ok {
		d.incidents[ag.key] = inc
		d.history = append(d.history, inc)
		if keep := max(cfg.DraftKeep, 1); len(d.history) > keep {
			d.history = slices.Delete(d.history, 0, len(d.history)-keep)
		}
	}
	if len(phases) == 0 {
		d.saveIncident(inc, nil)
		return nil
	}
	if inc.Phase == draft.PhaseMonitoring {
		d.wakeIncidents()
	}
	if inc.Phase == draft.PhaseResolved {
		// Withdrawn (a monitoring gap): done, as tickIncidents is with a
		// resolved one, so that the group's next incident is a new one.
		delete(d.incidents, ag.key)
	}
	return d.renderDraft(cfg, inc, g, now)
}

func (d *Dispatcher) renderDraft(cfg *Config, inc *draft.Incident, g Group, now time.Time) []*entry {
	dr, err := cfg.Drafts.Render(inc, now)
	if err != nil {
		d.logger.Error("cannot render status draft", "incident", inc.ID, "err", err)
		return nil
	}
	d.saveIncident(inc, dr)
	d.metrics.GetOrCreateCounter(fmt.Sprintf(`seismo_notify_drafts_total{phase=%q}`, dr.Phase)).Inc()
	var out []*entry
	for _, r := range cfg.DraftReceivers {
		for _, in := range cfg.Receivers[r] {
			if _, ok := in.Notifier.(DraftNotifier); ok {
				out = append(out, newEntry(in.id, Group{Key: g.Key, Receiver: r, Labels: g.Labels}, nil, dr, now))
			}
		}
	}
	return out
}

// runIncidents resolves recovered incidents once they have held for the
// hold period. It is one loop for all incidents, so that an incident
// restored from disk resolves even if its group never sees another alert.
func (d *Dispatcher) runIncidents(ctx context.Context) {
	defer d.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		next := d.tickIncidents()
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		var c <-chan time.Time
		if !next.IsZero() {
			timer.Reset(next.Sub(d.now()))
			c = timer.C
		}
		select {
		case <-ctx.Done():
			return
		case <-d.incidentWake:
		case <-c:
		}
	}
}

// tickIncidents resolves due incidents and returns the next deadline.
func (d *Dispatcher) tickIncidents() time.Time {
	cfg := d.config()
	if cfg == nil || cfg.Drafts == nil {
		return time.Time{}
	}
	now := d.now()
	var next time.Time
	var entries []*entry
	d.draftMu.Lock()
	for key, inc := range d.incidents {
		if inc.Tick(now, cfg.DraftHold) {
			delete(d.incidents, key)
			entries = append(entries, d.renderDraft(cfg, inc, Group{Key: key, Labels: inc.GroupLabels}, now)...)
			continue
		}
		if dl := inc.ResolveDeadline(cfg.DraftHold); !dl.IsZero() && (next.IsZero() || dl.Before(next)) {
			next = dl
		}
	}
	d.draftMu.Unlock()
	d.enqueue(cfg, entries, nil)
	return next
}

func (d *Dispatcher) wakeIncidents() {
	select {
	case d.incidentWake <- struct{}{}:
	default:
	}
}

// saveIncident writes incident.json and the new draft under
// <data dir>/drafts/<incident id>/ with atomic renames.
func (d *Dispatcher) saveIncident(inc *draft.Incident, dr *draft.Draft) {
	dir := filepath.Join(d.dataDir, "drafts", inc.ID)
	write := func(name string, b []byte) error {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
		tmp := filepath.Join(dir, "."+name+".tmp")
		if err := os.WriteFile(tmp, b, 0o600); err != nil {
			return err
		}
		return os.Rename(tmp, filepath.Join(dir, name))
	}
	b, err := json.MarshalIndent(inc, "", "  ")
	if err == nil {
		err = write("incident.json", b)
	}
	if err == nil && dr != nil {
		body := dr.Markdown
		if dr.Timeline != "" {
			err = write("postmortem.md", []byte(dr.Timeline))
		}
		if err == nil {
			err = write(fmt.Sprintf("%02d-%s.md", dr.Seq, dr.Phase), []byte(body))
		}
	}
	if err != nil {
		d.logger.Error("cannot write status draft", "incident", inc.ID, "err", err)
	}
}

// loadIncidents restores drafts (for the API) and unresolved incidents (so a
// restart continues them) from the data directory.
func (d *Dispatcher) loadIncidents() {
	files, _ := filepath.Glob(filepath.Join(d.dataDir, "drafts", "*", "incident.json"))
	slices.Sort(files)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		inc := &draft.Incident{}
		if err := json.Unmarshal(b, inc); err != nil {
			d.logger.Warn("skipping unreadable incident file", "file", f, "err", err)
			continue
		}
		if inc.Peaks == nil {
			inc.Peaks = map[string]draft.Peak{}
		}
		d.history = append(d.history, inc)
		if inc.Active() {
			d.incidents[inc.GroupKey] = inc
		}
	}
}

// DraftsHandler serves GET /api/v1/drafts (incidents with their drafts,
// newest first) and GET /api/v1/drafts/{incident id}.
func (d *Dispatcher) DraftsHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", http.MethodGet)
			writeJSON(w, http.StatusMethodNotAllowed, apiError("method not allowed"))
			return
		}
		id := strings.Trim(strings.TrimPrefix(r.URL.Path, "/api/v1/drafts"), "/")
		d.draftMu.Lock()
		list := slices.Clone(d.history)
		slices.Reverse(list)
		var body []byte
		var err error
		if id == "" {
			body, err = json.Marshal(map[string]any{"status": "success", "data": list})
		} else {
			i := slices.IndexFunc(list, func(inc *draft.Incident) bool { return inc.ID == id })
			if i < 0 {
				d.draftMu.Unlock()
				writeJSON(w, http.StatusNotFound, apiError("no such incident"))
				return
			}
			body, err = json.Marshal(map[string]any{"status": "success", "data": list[i]})
		}
		d.draftMu.Unlock()
		if err != nil {
			writeJSON(w, http.StatusInternalServerError, apiError(err.Error()))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})
}

func apiError(msg string) map[string]string {
	return map[string]string{"status": "error", "error": msg}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
