// Package draft turns an incident (an alert group's life from first firing to
// resolve) into status-page update drafts: Investigating, Identified,
// Monitoring and Resolved, with the affected component, a Statuspage impact
// level, times in a configured zone, and a post-mortem timeline skeleton on
// resolve. It is pure: the caller passes the alerts and the time, and decides
// where drafts go. Drafts are for people to review; nothing here posts them.
package draft

import (
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/seismo-agent/seismo/internal/model"
)

// Phase is a status-page update phase.
type Phase int

// Phases in the order an incident goes through them.
const (
	PhaseNone Phase = iota
	PhaseInvestigating
	PhaseIdentified
	PhaseMonitoring
	PhaseResolved
)

var phaseNames = []string{"none", "investigating", "identified", "monitoring", "resolved"}

func (p Phase) String() string {
	if p < 0 || int(p) >= len(phaseNames) {
		return "unknown"
	}
	return phaseNames[p]
}

// MarshalText implements encoding.TextMarshaler.
func (p Phase) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (p *Phase) UnmarshalText(b []byte) error {
	i := slices.Index(phaseNames, string(b))
	if i < 0 {
		return fmt.Errorf("unknown phase %q", b)
	}
	*p = Phase(i)
	return nil
}

// Statuspage component states used as impact levels.
const (
	ImpactDegraded = "degraded_performance"
	ImpactPartial  = "partial_outage"
	ImpactMajor    = "major_outage"
)

var impactRank = map[string]int{"": 0, ImpactDegraded: 1, ImpactPartial: 2, ImpactMajor: 3}

// ValidImpact reports whether s is a known impact level (or empty).
func ValidImpact(s string) bool { _, ok := impactRank[s]; return ok }

// Draft is one rendered status update, for review.
type Draft struct {
	IncidentID string    `json:"incident_id"`
	Seq        int       `json:"seq"`
	Phase      Phase     `json:"phase"`
	Component  string    `json:"component"`
	Impact     string    `json:"impact"`
	Title      string    `json:"title"`
	Text       string    `json:"text"`
	Markdown   string    `json:"markdown"`
	Timeline   string    `json:"timeline,omitempty"`
	CreatedAt  time.Time `json:"created_at"`
}

// Event is one line of the incident timeline.
type Event struct {
	At   time.Time `json:"at"`
	Kind string    `json:"kind"`
	Text string    `json:"text"`
}

// Peak is the largest value an alert reached.
type Peak struct {
	Value float64   `json:"value"`
	Unit  string    `json:"unit,omitempty"`
	At    time.Time `json:"at"`
}

// AlertSummary is what a draft needs to know of one alert.
type AlertSummary struct {
	Name     string  `json:"name"`
	Severity string  `json:"severity,omitempty"`
	Value    float64 `json:"value"`
	Unit     string  `json:"unit,omitempty"`
	Summary  string  `json:"summary,omitempty"`
	Resolved bool    `json:"resolved"`
	// Unrecovered: resolved with the value still beyond the band the
	// alert fired against (model.Alert.Unrecovered).
	Unrecovered bool `json:"unrecovered,omitempty"`
}

// Incident is the life of one alert group, from which drafts are rendered.
type Incident struct {
	ID          string            `json:"id"`
	GroupKey    string            `json:"group_key"`
	GroupLabels map[string]string `json:"group_labels,omitempty"`
	Component   string            `json:"component"`
	Impact      string            `json:"impact"`
	Kind        string            `json:"kind,omitempty"`
	Cause       string            `json:"cause,omitempty"`
	Summary     string            `json:"summary,omitempty"`
	Phase       Phase             `json:"phase"`

	FirstAnomalyAt time.Time `json:"first_anomaly_at"`
	FiringAt       time.Time `json:"firing_at"`
	IdentifiedAt   time.Time `json:"identified_at,omitzero"`
	RecoveredAt    time.Time `json:"recovered_at,omitzero"`
	ResolvedAt     time.Time `json:"resolved_at,omitzero"`

	Peaks  map[string]Peak `json:"peaks,omitempty"`
	Alerts []AlertSummary  `json:"alerts,omitempty"`
	Events []Event         `json:"events,omitempty"`
	Drafts []*Draft        `json:"drafts,omitempty"`

	// Affected holds the label sets of the incident's alerts that say
	// users are affected (not monitoring gaps): an alert that later turns
	// out to be a metric that stopped updating leaves it, and an incident
	// left with none is withdrawn (see Observe).
	Affected map[string]bool `json:"affected,omitempty"`
	// Withdrawn is set when the incident was resolved as a monitoring gap
	// rather than recovered.
	Withdrawn bool `json:"withdrawn,omitempty"`
}

// NewIncident starts tracking a group.
func NewIncident(groupKey string, groupLabels map[string]string) *Incident {
	return &Incident{GroupKey: groupKey, GroupLabels: maps.Clone(groupLabels), Peaks: map[string]Peak{}}
}

// Active reports whether the incident has started and not yet resolved.
func (inc *Incident) Active() bool {
	return inc.Phase != PhaseNone && inc.Phase != PhaseResolved
}

// Observe updates the incident with the group's alerts at a notification
// flush and returns the phases it entered, in order (usually none or one).
//
// An alert on a metric that has stopped updating (kind "frozen") is left
// out: it says the monitoring has a gap, not that users are affected, and
// a status page is no place for it. It neither opens an incident nor
// joins, words or keeps open one (its cause would read "the metric has
// stopped updating" on a real outage's page); Slack, webhooks and
// Alertmanager still carry it.
//
// A hang on a metric with a daily cycle may first page as unusual for the
// time of day, minutes before the detector calls it frozen: the incident
// opened then. When every alert that opened or joined it has turned out
// to be a monitoring gap, it is withdrawn: resolved at once, with a
// draft that says so, rather than "recovered" and "resolved" as if users
// had been affected and were no longer.
func (inc *Incident) Observe(all []*model.Alert, now time.Time) []Phase {
	if inc.Active() && inc.turnedGaps(all) {
		return inc.withdraw(all, now)
	}
	alerts := slices.DeleteFunc(slices.Clone(all), monitoringGap)
	defer inc.noteAffected(alerts)
	var firing []*model.Alert
	for _, a := range alerts {
		if !a.Resolved() {
			firing = append(firing, a)
		}
	}
	inc.summarise(alerts, now)
	var entered []Phase
	enter := func(p Phase, kind, text string) {
		inc.Phase = p
		entered = append(entered, p)
		inc.Events = append(inc.Events, Event{At: now, Kind: kind, Text: text})
	}
	switch inc.Phase {
	case PhaseNone, PhaseResolved:
		if len(firing) == 0 {
			return nil
		}
		*inc = Incident{GroupKey: inc.GroupKey, GroupLabels: inc.GroupLabels, Peaks: map[string]Peak{}}
		inc.summarise(alerts, now)
		start := firing[0].StartsAt
		for _, a := range firing {
			if a.StartsAt.Before(start) {
				start = a.StartsAt
			}
		}
		inc.FirstAnomalyAt = start
		inc.FiringAt = now
		inc.ID = incidentID(inc.GroupKey, start)
		inc.Events = append(inc.Events, Event{At: start, Kind: "first_anomaly", Text: describeFirst(firing)})
		enter(PhaseInvestigating, "firing", "alert firing: "+names(firing))
	case PhaseMonitoring:
		if len(firing) > 0 {
			inc.RecoveredAt = time.Time{}
			if inc.Cause != "" {
				enter(PhaseIdentified, "refiring", "alert firing again: "+names(firing))
			} else {
				enter(PhaseInvestigating, "refiring", "alert firing again: "+names(firing))
			}
		}
	}
	if inc.Phase == PhaseInvestigating && inc.Cause != "" {
		inc.IdentifiedAt = now
		enter(PhaseIdentified, "identified", "cause identified: "+inc.Cause)
	}
	if (inc.Phase == PhaseInvestigating || inc.Phase == PhaseIdentified) && len(firing) == 0 {
		rec := now
		for _, a := range alerts {
			if !a.EndsAt.IsZero() && a.EndsAt.Before(rec) && a.EndsAt.After(inc.FirstAnomalyAt) {
				rec = a.EndsAt
			}
		}
		inc.RecoveredAt = rec
		inc.Phase = PhaseMonitoring
		entered = append(entered, PhaseMonitoring)
		inc.Events = append(inc.Events, Event{At: rec, Kind: "recovered", Text: "signals back in their expected band"})
	}
	return entered
}

// Tick moves a recovered incident to Resolved once it has held for hold.
func (inc *Incident) Tick(now time.Time, hold time.Duration) bool {
	if inc.Phase != PhaseMonitoring || now.Before(inc.RecoveredAt.Add(hold)) {
		return false
	}
	inc.Phase = PhaseResolved
	inc.ResolvedAt = now
	inc.Events = append(inc.Events, Event{At: now, Kind: "resolved", Text: fmt.Sprintf("resolved after holding for %s", humanDuration(hold))})
	return true
}

// ResolveDeadline is when a recovered incident resolves, or zero.
func (inc *Incident) ResolveDeadline(hold time.Duration) time.Time {
	if inc.Phase != PhaseMonitoring {
		return time.Time{}
	}
	return inc.RecoveredAt.Add(hold)
}

func (inc *Incident) summarise(alerts []*model.Alert, now time.Time) {
	inc.Alerts = inc.Alerts[:0]
	for _, a := range alerts {
		unit := ""
		var ex *model.Explanation = a.Explanation
		if ex != nil && len(ex.Signals) > 0 {
			unit = ex.Signals[0].Unit
		}
		inc.Alerts = append(inc.Alerts, AlertSummary{Name: a.Name(), Severity: a.Labels.Get("severity"),
			Value: a.Value, Unit: unit, Summary: summaryOf(a), Resolved: a.Resolved(), Unrecovered: a.Unrecovered})
		peak := max(a.PeakValue, a.Value)
		if p, ok := inc.Peaks[a.Name()]; !ok || peak > p.Value {
			inc.Peaks[a.Name()] = Peak{Value: peak, Unit: unit, At: now}
		}
		if a.Resolved() {
			continue
		}
		if inc.Component == "" {
			inc.Component = component(a)
		}
		if ex != nil {
			if inc.Kind == "" || inc.Kind != ex.Kind && kindRank(ex.Kind) > kindRank(inc.Kind) {
				inc.Kind = ex.Kind
				inc.Summary = ex.Summary
			}
			if inc.Cause == "" && ex.Cause != "" {
				inc.Cause = ex.Cause
			}
		}
		if im := impact(a); impactRank[im] > impactRank[inc.Impact] {
			inc.Impact = im
		}
	}
}

// noteAffected adds the label sets of alerts (none of them a monitoring
// gap) to Affected while the incident is active.
func (inc *Incident) noteAffected(alerts []*model.Alert) {
	if !inc.Active() {
		return
	}
	for _, a := range alerts {
		if inc.Affected == nil {
			inc.Affected = map[string]bool{}
		}
		inc.Affected[a.Labels.String()] = true
	}
}

// turnedGaps removes from Affected the alerts of all that are monitoring
// gaps now, and reports whether that left it empty: every alert of the
// incident turned out to be one. An incident that had none recorded (one
// saved before they were) is never withdrawn.
func (inc *Incident) turnedGaps(all []*model.Alert) bool {
	had := len(inc.Affected) > 0
	for _, a := range all {
		if monitoringGap(a) {
			delete(inc.Affected, a.Labels.String())
		}
	}
	return had && len(inc.Affected) == 0
}

// withdraw resolves the incident as a monitoring gap (see Observe).
func (inc *Incident) withdraw(all []*model.Alert, now time.Time) []Phase {
	gaps := slices.DeleteFunc(slices.Clone(all), func(a *model.Alert) bool { return !monitoringGap(a) })
	inc.summarise(gaps, now)
	inc.Phase, inc.Withdrawn, inc.ResolvedAt = PhaseResolved, true, now
	if inc.RecoveredAt.IsZero() {
		inc.RecoveredAt = now
	}
	inc.Events = append(inc.Events, Event{At: now, Kind: "withdrawn",
		Text: "withdrawn: " + names(gaps) + " stopped updating, a gap in the monitoring, not a problem users see"})
	return []Phase{PhaseResolved}
}

// monitoringGap reports whether a is about the monitoring rather than the
// service: an anomaly alert on a value that has stopped moving.
func monitoringGap(a *model.Alert) bool {
	return a.Explanation != nil && a.Explanation.Kind == "frozen"
}

// kindRank prefers incident shapes, which name a cause, over plain anomalies.
func kindRank(k string) int {
	switch k {
	case "saturation_without_cpu", "rate_limit_storm", "surge_saturation", "concentrated_limiting":
		return 2
	case "":
		return 0
	}
	return 1
}

func summaryOf(a *model.Alert) string {
	if s := a.Annotations["summary"]; s != "" {
		return s
	}
	if a.Explanation != nil {
		return a.Explanation.Summary
	}
	return ""
}

func component(a *model.Alert) string {
	if a.Draft != nil && a.Draft.Component != "" {
		return a.Draft.Component
	}
	for _, l := range []string{"component", "service", "job"} {
		if v := a.Labels.Get(l); v != "" {
			return v
		}
	}
	return a.Name()
}

// impact derives the Statuspage impact: the rule's draft block wins; else
// the error share (an "errors" ratio signal or error_rate value) and breadth
// decide; else severity.
func impact(a *model.Alert) string {
	if a.Draft != nil && a.Draft.Impact != "" {
		return a.Draft.Impact
	}
	if ex := a.Explanation; ex != nil {
		share := -1.0
		for _, s := range ex.Signals {
			if s.Name == "errors" && s.Unit == "ratio" {
				share = s.Current
			}
		}
		if ex.Kind == "error_rate" && share < 0 {
			share = a.Value
		}
		if ex.Breadth != nil && (ex.Kind == "rate_limit_storm") {
			share = max(share, ex.Breadth.AffectedShare)
		}
		switch {
		case share >= 0.5:
			return ImpactMajor
		case share >= 0.05:
			return ImpactPartial
		}
	}
	switch a.Labels.Get("severity") {
	case "page", "critical":
		return ImpactPartial
	}
	return ImpactDegraded
}

func describeFirst(firing []*model.Alert) string {
	a := firing[0]
	if a.Explanation != nil && a.Explanation.Summary != "" {
		return "first anomaly: " + a.Explanation.Summary
	}
	return "first anomaly: " + a.Name()
}

func names(alerts []*model.Alert) string {
	var ns []string
	for _, a := range alerts {
		if !slices.Contains(ns, a.Name()) {
			ns = append(ns, a.Name())
		}
	}
	return strings.Join(ns, ", ")
}

func incidentID(groupKey string, start time.Time) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(groupKey))
	return fmt.Sprintf("%s-%08x", start.UTC().Format("20060102-150405"), h.Sum32())
}
