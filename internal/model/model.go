// Package model holds the small value types that cross package boundaries in
// seismo: the explanation a detector gives for a verdict and the alert that
// the rules engine hands to the notifier. It is a leaf: it imports nothing of
// the project, so detect, rules and notify can all depend on it.
package model

import (
	"fmt"
	"time"

	"github.com/prometheus/prometheus/model/labels"
)

// Signal is one input named in an explanation, with where it is and where it
// was expected to be.
type Signal struct {
	// Name is the role of the signal in the detector ("symptom", "resource",
	// "requests", "errors", "value"), or a user-given name.
	Name string `json:"name"`
	// Query is the PromQL expression that produced the signal, when known.
	Query string `json:"query,omitempty"`
	// Unit is a hint for formatting: "s", "ratio", "req/s", "cores", "" (plain).
	Unit     string  `json:"unit,omitempty"`
	Current  float64 `json:"current"`
	Expected float64 `json:"expected"`
	Lower    float64 `json:"lower"`
	Upper    float64 `json:"upper"`
}

// Breadth describes how widely a per-client signal (429s, errors) is spread.
type Breadth struct {
	// Label is the label that identifies a client ("client", "route", "tenant").
	Label string `json:"label"`
	// Active is the number of clients that sent requests in the window.
	Active int `json:"active"`
	// Affected is the number of active clients above the per-client threshold.
	Affected int `json:"affected"`
	// AffectedShare is Affected/Active.
	AffectedShare float64 `json:"affected_share"`
	// Concentration is the Herfindahl–Hirschman index of the affected events
	// over clients: 1/Active when spread evenly, 1 when one client has all.
	Concentration float64 `json:"concentration"`
	// Top lists the most affected clients, largest first (at most a few).
	Top []string `json:"top,omitempty"`
}

// Explanation is the structured reason for a verdict. Notifications and
// status drafts render it; it never holds pre-rendered markup.
type Explanation struct {
	// Detector is the detector type ("auto", "decoupling", "storm", ...).
	Detector string `json:"detector"`
	// Kind names the failure shape, stable for templates:
	// "level_shift", "spike", "dip", "frozen", "saturation_without_cpu",
	// "rate_limit_storm", "concentrated_limiting", "surge_saturation",
	// "error_rate".
	Kind string `json:"kind"`
	// Score is the anomaly score in [0, 1].
	Score float64 `json:"score"`
	// Direction is "up", "down" or "".
	Direction string `json:"direction,omitempty"`
	// Evidence names what a univariate detector found unusual, stable
	// for templates: "level", "time_of_day", "changes", "spike",
	// "record", "zero", "frozen"; empty when the detector does not say.
	Evidence string   `json:"evidence,omitempty"`
	Signals  []Signal `json:"signals,omitempty"`
	Breadth  *Breadth `json:"breadth,omitempty"`
	// Cause is a short hint at the likely cause, for the Identified draft
	// ("a rate limiter is rejecting most clients"). Empty when unknown.
	Cause string `json:"cause,omitempty"`
	// Summary is one human sentence with the numbers in it.
	Summary string `json:"summary"`
	// StoppedWith names, for an alert on a series that has stopped
	// moving, the series of other rules of the same target that stopped
	// with it, as rule{labels}: one hang, such as an exporter's.
	StoppedWith []string `json:"stopped_with,omitempty"`
}

// AlertState is the lifecycle state of an alert.
type AlertState int

// Alert states, in lifecycle order.
const (
	StateInactive AlertState = iota
	StateWarmingUp
	StatePending
	StateFiring
	StateResolved
)

func (s AlertState) String() string {
	switch s {
	case StateInactive:
		return "inactive"
	case StateWarmingUp:
		return "warming_up"
	case StatePending:
		return "pending"
	case StateFiring:
		return "firing"
	case StateResolved:
		return "resolved"
	}
	return "unknown"
}

// Draft carries a rule's `draft:` block: what a status-page update says.
type Draft struct {
	Component string `json:"component,omitempty" yaml:"component"`
	// Impact is a Statuspage component state: "degraded_performance",
	// "partial_outage" or "major_outage". Empty means derive from severity.
	Impact string `json:"impact,omitempty" yaml:"impact"`
}

// Alert is one alert instance as the rules engine hands it to the notifier.
// The notifier must treat it as read-only.
type Alert struct {
	// Labels is the final label set, including alertname. Its hash is the
	// alert's identity.
	Labels      labels.Labels     `json:"labels"`
	Annotations map[string]string `json:"annotations,omitempty"`
	State       AlertState        `json:"-"`
	// StartsAt is when the alert started firing; EndsAt is the resolve time
	// for resolved alerts, or a time ahead (valid-until) for firing ones.
	StartsAt time.Time `json:"startsAt"`
	EndsAt   time.Time `json:"endsAt"`
	// Value is the expression value now; for a resolved alert, the value at
	// resolve time, never the last firing value.
	Value float64 `json:"value"`
	// PeakValue is the largest value seen while pending or firing.
	PeakValue    float64 `json:"peakValue"`
	GeneratorURL string  `json:"generatorURL,omitempty"`
	// Flapping is set when the alert changed state too often in the flap
	// window; the notifier sends one flapping notice instead of every change.
	Flapping bool `json:"flapping,omitempty"`
	// Unrecovered is set on a resolved anomaly alert whose value is still
	// beyond the normal band it fired against: the detector has taken the
	// new level for normal, and the series has not come back.
	Unrecovered bool         `json:"unrecovered,omitempty"`
	Explanation *Explanation `json:"explanation,omitempty"`
	Draft       *Draft       `json:"draft,omitempty"`
	// Recent holds the last values of the alerted series, oldest first, for
	// sparklines. It may be empty.
	Recent []float64 `json:"recent,omitempty"`
	// Replica is the value of the agent's replica label (rules.replica_label),
	// which is not among Labels: HA replicas send identical alerts and say
	// here which of them sent this one. Empty without HA.
	Replica string `json:"replica,omitempty"`
}

// IncidentKey identifies one incident of an alert for receivers that
// de-duplicate: the fingerprint of its labels and the unix second it
// started firing. Replicas that evaluate the same rules on the same data
// give the same key (the replica label is not an alert label, and groups
// evaluate at the same instants everywhere); the next incident of the same
// alert gets a new key. Empty before the alert fires.
func (a *Alert) IncidentKey() string {
	if a.StartsAt.IsZero() {
		return ""
	}
	return fmt.Sprintf("%016x-%d", a.Fingerprint(), a.StartsAt.Unix())
}

// Fingerprint returns the alert's identity: the hash of its label set.
func (a *Alert) Fingerprint() uint64 { return a.Labels.Hash() }

// Name returns the alertname label.
func (a *Alert) Name() string { return a.Labels.Get(labels.AlertName) }

// Resolved reports whether the alert has resolved.
func (a *Alert) Resolved() bool { return a.State == StateResolved }

// SameCause reports whether two alerts agree on every label both carry,
// alertname and severity aside: an alert and the alert that suppresses it
// (a rule's suppressed_by, or one hang) are of one target.
func SameCause(a, b labels.Labels) bool {
	ok := true
	a.Range(func(l labels.Label) {
		if l.Name == labels.AlertName || l.Name == "severity" {
			return
		}
		if v := b.Get(l.Name); v != "" && v != l.Value {
			ok = false
		}
	})
	return ok
}
