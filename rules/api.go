package rules

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/seismo-agent/seismo/detect"
	"github.com/seismo-agent/seismo/internal/apiv1"
	"github.com/seismo-agent/seismo/internal/model"
)

// The API's JSON shapes live in internal/apiv1, shared with the console.
type (
	apiResponse = apiv1.Response
	apiBand     = apiv1.Band
	apiAlert    = apiv1.Alert
	apiDetector = apiv1.Detector
	apiRule     = apiv1.Rule
	apiGroup    = apiv1.Group
)

func writeAPI(w http.ResponseWriter, code int, v apiResponse) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func finitePtr(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

// firedAt is when the current episode started firing; a pending alert that
// fired before has none yet.
func firedAt(a *alertState) time.Time {
	if a.State == model.StateFiring || a.State == model.StateResolved {
		return a.FiredAt
	}
	return time.Time{}
}

// apiAlerts returns the rule's alerts whose state is in states (all of
// them when states is empty) and how many it left out.
func (rs *ruleState) apiAlerts(states stringSet) ([]apiAlert, int) {
	out := make([]apiAlert, 0, len(rs.alerts))
	omitted := 0
	for _, a := range rs.alerts {
		if !states.has(a.State.String()) {
			omitted++
			continue
		}
		aa := apiAlert{
			Labels:          a.Labels.Map(),
			Annotations:     a.Annotations.Map(),
			State:           a.State.String(),
			ActiveAt:        timePtr(a.ActiveAt),
			FiredAt:         timePtr(firedAt(a)),
			ResolvedAt:      timePtr(a.ResolvedAt),
			KeepFiringSince: timePtr(a.KeepFiringSince),
			HeldBy:          a.HeldBy,
			Value:           strconv.FormatFloat(a.Value, 'e', -1, 64),
			Flapping:        a.Flapping,
			SuppressedBy:    a.SuppressedBy,
			SuppressedHang:  a.SuppressedHang,
			Unrecovered:     a.Unrecovered && a.State == model.StateResolved,
			Explanation:     a.Explanation,
			Draft:           rs.rule.Draft,
		}
		if rs.rule.Detector != nil && a.State != model.StateWarmingUp {
			aa.Score = finitePtr(a.Verdict.Score)
			aa.Expected = finitePtr(a.Verdict.Expected)
			if a.Verdict.Upper > a.Verdict.Lower {
				aa.Band = &apiBand{Lower: a.Verdict.Lower, Upper: a.Verdict.Upper}
			}
		}
		out = append(out, aa)
	}
	slices.SortFunc(out, func(a, b apiAlert) int {
		return cmp.Compare(labelString(a.Labels), labelString(b.Labels))
	})
	return out, omitted
}

func labelString(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	s := ""
	for _, k := range keys {
		s += k + "\x00" + m[k] + "\x00"
	}
	return s
}

func (rs *ruleState) api() apiRule {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	r := rs.rule
	ar := apiRule{
		Name:           r.Name,
		Query:          r.Expr,
		Labels:         r.Labels.Map(),
		Health:         "unknown",
		EvaluationTime: rs.evalDur.Seconds(),
		LastEvaluation: rs.lastEval,
		Enabled:        r.Enabled,
		Draft:          r.Draft,
	}
	switch {
	case rs.lastErr != nil:
		ar.Health, ar.LastError = "err", rs.lastErr.Error()
	case !rs.lastEval.IsZero():
		ar.Health = "ok"
	}
	if r.Type == TypeRecording {
		ar.Type = "recording"
		return ar
	}
	ar.Type = "alerting"
	ar.Duration = r.For.Seconds()
	ar.KeepFiringFor = r.KeepFiringFor.Seconds()
	ar.SuppressedBy = r.SuppressedBy
	ar.Annotations = r.Annotations.Map()
	ar.Alerts, _ = rs.apiAlerts(nil)
	ar.State = "inactive"
	for _, a := range ar.Alerts {
		// The rule's state is its most advanced alert's.
		if stateRank(a.State) > stateRank(ar.State) {
			ar.State = a.State
		}
	}
	if r.Type == TypeAnomaly {
		ar.Kind = "anomaly"
		d := &apiDetector{Type: r.Detector.Type, Series: len(rs.series), Dormant: len(rs.dormant)}
		for _, ss := range rs.series {
			if ss.last.State == detect.StateWarmingUp {
				d.WarmingUp++
			}
			if ss.info != nil {
				d.Info = append(d.Info, ss.info)
			}
		}
		if len(r.Detector.Signals) > 0 {
			d.Signals = map[string]string{}
			var q []string
			for _, s := range r.Detector.Signals {
				d.Signals[s.Name] = s.Expr
				q = append(q, s.Name+": "+s.Expr)
			}
			// Prometheus clients show "query"; name each signal in it.
			ar.Query = strings.Join(q, "; ")
		}
		ar.Detector = d
	}
	return ar
}

func stateRank(s string) int {
	switch s {
	case "warming_up":
		return 1
	case "resolved":
		return 2
	case "pending":
		return 3
	case "firing":
		return 4
	}
	return 0
}

// RulesHandler serves GET /api/v1/rules: every group and rule with its
// health and alerts. Query parameters as Prometheus: type=alert|record,
// rule_name[], rule_group[], file[], exclude_alerts=true.
func (m *Manager) RulesHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			writeAPI(w, http.StatusBadRequest, apiResponse{Status: "error", ErrorType: "bad_data", Error: err.Error()})
			return
		}
		typ := r.Form.Get("type")
		if typ != "" && typ != "alert" && typ != "record" {
			writeAPI(w, http.StatusBadRequest, apiResponse{Status: "error", ErrorType: "bad_data", Error: `type must be "alert" or "record"`})
			return
		}
		names, groupsF, files := set(r.Form["rule_name[]"]), set(r.Form["rule_group[]"]), set(r.Form["file[]"])
		excludeAlerts := r.Form.Get("exclude_alerts") == "true"
		m.mu.Lock()
		groups := m.groups
		m.mu.Unlock()
		out := []apiGroup{}
		for _, g := range groups {
			if !groupsF.has(g.spec.Name) || !files.has(g.spec.File) {
				continue
			}
			g.mu.Lock()
			ag := apiGroup{
				Name: g.spec.Name, File: g.spec.File, Interval: g.spec.Interval.Seconds(),
				Limit: g.spec.Limit, Datasource: g.spec.Source,
				EvaluationTime: g.evalDur.Seconds(), LastEvaluation: g.lastEval, Rules: []apiRule{},
			}
			g.mu.Unlock()
			for _, rs := range g.rules {
				isRec := rs.rule.Type == TypeRecording
				if (typ == "alert" && isRec) || (typ == "record" && !isRec) || !names.has(rs.rule.Name) {
					continue
				}
				ar := rs.api()
				if excludeAlerts {
					ar.Alerts = nil
				}
				ag.Rules = append(ag.Rules, ar)
			}
			if len(ag.Rules) > 0 || (len(names) == 0 && typ == "") {
				out = append(out, ag)
			}
		}
		writeAPI(w, http.StatusOK, apiResponse{Status: "success", Data: map[string]any{"groups": out}})
	})
}

// AlertsHandler serves GET /api/v1/alerts: every pending, firing, warming-up
// and recently resolved alert. A seismo extension: state=S (repeatable)
// keeps the alerts in those states and adds data.omitted, the number left
// out, so that a reader of the few active alerts does not pay for the
// thousands of anomaly rules still warming up.
func (m *Manager) AlertsHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			writeAPI(w, http.StatusBadRequest, apiResponse{Status: "error", ErrorType: "bad_data", Error: err.Error()})
			return
		}
		states := set(r.Form["state"])
		for st := range states {
			if stateRank(st) == 0 {
				writeAPI(w, http.StatusBadRequest, apiResponse{Status: "error", ErrorType: "bad_data",
					Error: fmt.Sprintf("state: %q is none of warming_up, pending, firing, resolved", st)})
				return
			}
		}
		m.mu.Lock()
		groups := m.groups
		m.mu.Unlock()
		alerts := []apiAlert{}
		omitted := 0
		for _, g := range groups {
			for _, rs := range g.rules {
				rs.mu.Lock()
				kept, n := rs.apiAlerts(states)
				rs.mu.Unlock()
				alerts = append(alerts, kept...)
				omitted += n
			}
		}
		data := map[string]any{"alerts": alerts}
		if len(states) > 0 {
			data["omitted"] = omitted
		}
		writeAPI(w, http.StatusOK, apiResponse{Status: "success", Data: data})
	})
}

type stringSet map[string]bool

func set(vals []string) stringSet {
	s := stringSet{}
	for _, v := range vals {
		s[v] = true
	}
	return s
}

// has reports membership; an empty set matches everything.
func (s stringSet) has(v string) bool { return len(s) == 0 || s[v] }
