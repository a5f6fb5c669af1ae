// Package apiv1 holds the JSON shapes of seismo's rules and alerts API
// (/api/v1/rules, /api/v1/alerts), shared by the handlers that write them
// (package rules) and the console that reads them (package web/ui), so the
// two cannot drift apart.
//
// The shapes are Prometheus' (so Grafana and scripts that read Prometheus'
// API work), with the detector's view added: score, expected value, band
// and explanation.
package apiv1

import (
	"time"

	"github.com/seismo-agent/seismo/internal/model"
)

// Response is the envelope of every answer.
type Response struct {
	Status    string `json:"status"`
	Data      any    `json:"data,omitempty"`
	ErrorType string `json:"errorType,omitempty"`
	Error     string `json:"error,omitempty"`
}

// What holds a firing alert whose condition is false (Alert.HeldBy).
const (
	HeldByEpisode       = "episode"         // the detector's incident is open
	HeldByMove          = "move"            // the series is beyond every estimate of normal from before the move
	HeldByLingering     = "lingering"       // the series lingers away from the normal the alert fired against
	HeldByKeepFiringFor = "keep_firing_for" // the rule's keep_firing_for has not passed
)

// Band is a detector's expected band at the alert's last evaluation.
type Band struct {
	Lower float64 `json:"lower"`
	Upper float64 `json:"upper"`
}

// Alert is one alert of a rule.
type Alert struct {
	Labels          map[string]string `json:"labels"`
	Annotations     map[string]string `json:"annotations"`
	State           string            `json:"state"`
	ActiveAt        *time.Time        `json:"activeAt,omitempty"`
	FiredAt         *time.Time        `json:"firedAt,omitempty"`
	ResolvedAt      *time.Time        `json:"resolvedAt,omitempty"`
	KeepFiringSince *time.Time        `json:"keepFiringSince,omitempty"`
	// HeldBy says what keeps a firing alert firing while its condition
	// is false: one of the HeldBy constants.
	HeldBy   string `json:"heldBy,omitempty"`
	Value    string `json:"value"`
	Flapping bool   `json:"flapping,omitempty"`
	// SuppressedBy names the rule whose alert is sent in this one's
	// place: its suppressed_by, or (SuppressedHang) an alert on a series
	// of the same target that stopped moving with this one's.
	SuppressedBy   string `json:"suppressedBy,omitempty"`
	SuppressedHang bool   `json:"suppressedHang,omitempty"`
	// Unrecovered: resolved with the value still beyond the band the
	// alert fired against (the detector took the new level for normal).
	Unrecovered bool               `json:"unrecovered,omitempty"`
	Score       *float64           `json:"score,omitempty"`
	Expected    *float64           `json:"expected,omitempty"`
	Band        *Band              `json:"band,omitempty"`
	Explanation *model.Explanation `json:"explanation,omitempty"`
	Draft       *model.Draft       `json:"draft,omitempty"`
}

// Detector is an anomaly rule's detector and what it currently sees.
type Detector struct {
	Type    string            `json:"type"`
	Signals map[string]string `json:"signals,omitempty"`
	// Series is the number of detector instances (one per series).
	Series int `json:"series"`
	// Dormant counts the detectors kept for series gone for longer than
	// rules.series_grace, in case they come back.
	Dormant int `json:"dormant"`
	// WarmingUp counts instances without enough history to judge.
	WarmingUp int `json:"warmingUp"`
	// Info lists current findings worth telling but not paging for (a
	// single heavy client rate-limited); they never become alerts.
	Info []*model.Explanation `json:"info,omitempty"`
}

// Rule is one rule with its alerts.
type Rule struct {
	State          string            `json:"state,omitempty"`
	Name           string            `json:"name"`
	Query          string            `json:"query"`
	Duration       float64           `json:"duration,omitempty"`
	KeepFiringFor  float64           `json:"keepFiringFor,omitempty"`
	SuppressedBy   []string          `json:"suppressedBy,omitempty"`
	Labels         map[string]string `json:"labels"`
	Annotations    map[string]string `json:"annotations,omitempty"`
	Alerts         []Alert           `json:"alerts,omitempty"`
	Health         string            `json:"health"`
	LastError      string            `json:"lastError,omitempty"`
	EvaluationTime float64           `json:"evaluationTime"`
	LastEvaluation time.Time         `json:"lastEvaluation"`
	Type           string            `json:"type"`
	// Kind is "anomaly" for anomaly rules (Type stays "alerting").
	Kind     string       `json:"kind,omitempty"`
	Enabled  bool         `json:"enabled"`
	Detector *Detector    `json:"detector,omitempty"`
	Draft    *model.Draft `json:"draft,omitempty"`
}

// Group is a rule group.
type Group struct {
	Name           string    `json:"name"`
	File           string    `json:"file"`
	Rules          []Rule    `json:"rules"`
	Interval       float64   `json:"interval"`
	Limit          int       `json:"limit"`
	Datasource     string    `json:"datasource,omitempty"`
	EvaluationTime float64   `json:"evaluationTime"`
	LastEvaluation time.Time `json:"lastEvaluation"`
}
