package webhook

import (
	"context"
	"fmt"
	"time"

	"github.com/seismo-agent/seismo/internal/model"
	"github.com/seismo-agent/seismo/notify"
)

// Version is the Alertmanager webhook payload version this package emits.
const Version = "4"

// Message is Alertmanager's webhook v4 document, so existing receivers work
// unchanged, with a seismo object added to each alert.
type Message struct {
	Version           string            `json:"version"`
	GroupKey          string            `json:"groupKey"`
	TruncatedAlerts   int               `json:"truncatedAlerts"`
	Status            string            `json:"status"`
	Receiver          string            `json:"receiver"`
	GroupLabels       map[string]string `json:"groupLabels"`
	CommonLabels      map[string]string `json:"commonLabels"`
	CommonAnnotations map[string]string `json:"commonAnnotations"`
	ExternalURL       string            `json:"externalURL"`
	Alerts            []Alert           `json:"alerts"`
}

// Alert is one alert of a Message.
type Alert struct {
	Status       string            `json:"status"`
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations"`
	StartsAt     time.Time         `json:"startsAt"`
	EndsAt       time.Time         `json:"endsAt"`
	GeneratorURL string            `json:"generatorURL"`
	Fingerprint  string            `json:"fingerprint"`
	Seismo       *Seismo           `json:"seismo,omitempty"`
}

// Seismo is what seismo adds to each alert: the detector's view of it.
type Seismo struct {
	Value     float64 `json:"value"`
	PeakValue float64 `json:"peakValue"`
	Detector  string  `json:"detector,omitempty"`
	Kind      string  `json:"kind,omitempty"`
	Score     float64 `json:"score"`
	// Expected and Band describe the first signal of the explanation (the
	// symptom), the one the alert is about.
	Expected    *float64           `json:"expected,omitempty"`
	Band        *[2]float64        `json:"band,omitempty"`
	Explanation *model.Explanation `json:"explanation,omitempty"`
	Breadth     *model.Breadth     `json:"breadth,omitempty"`
	Flapping    bool               `json:"flapping,omitempty"`
	Recent      []float64          `json:"recent,omitempty"`
	// IncidentKey identifies this incident of the alert: the same from
	// every HA replica and across restarts, new for the next incident of
	// the same alert. Receivers de-duplicate on it.
	IncidentKey string `json:"incidentKey,omitempty"`
	// Replica is the value of the sending agent's replica label.
	Replica string `json:"replica,omitempty"`
}

// NewMessage builds the document for alerts; maxAlerts > 0 truncates the
// alert list (truncatedAlerts counts the rest).
func NewMessage(ctx context.Context, externalURL string, maxAlerts int, alerts ...*model.Alert) *Message {
	g := notify.GroupFrom(ctx, alerts...)
	m := &Message{
		Version: Version, GroupKey: g.Key, Status: notify.Status(alerts), Receiver: g.Receiver,
		GroupLabels: nonNil(g.Labels), CommonLabels: notify.CommonLabels(alerts),
		CommonAnnotations: notify.CommonAnnotations(alerts), ExternalURL: externalURL,
		Alerts: []Alert{},
	}
	if maxAlerts > 0 && len(alerts) > maxAlerts {
		m.TruncatedAlerts = len(alerts) - maxAlerts
		alerts = alerts[:maxAlerts]
	}
	for _, a := range alerts {
		m.Alerts = append(m.Alerts, NewAlert(a))
	}
	return m
}

// NewAlert converts one alert.
func NewAlert(a *model.Alert) Alert {
	status := "firing"
	endsAt := time.Time{}
	if a.Resolved() {
		status, endsAt = "resolved", a.EndsAt
	}
	s := &Seismo{Value: a.Value, PeakValue: a.PeakValue, Flapping: a.Flapping, Recent: a.Recent,
		IncidentKey: a.IncidentKey(), Replica: a.Replica}
	if ex := a.Explanation; ex != nil {
		s.Detector, s.Kind, s.Score, s.Explanation, s.Breadth = ex.Detector, ex.Kind, ex.Score, ex, ex.Breadth
		if len(ex.Signals) > 0 {
			sig := ex.Signals[0]
			s.Expected = &sig.Expected
			s.Band = &[2]float64{sig.Lower, sig.Upper}
		}
	}
	return Alert{
		Status: status, Labels: a.Labels.Map(), Annotations: nonNil(a.Annotations),
		StartsAt: a.StartsAt, EndsAt: endsAt, GeneratorURL: a.GeneratorURL,
		Fingerprint: fmt.Sprintf("%016x", a.Fingerprint()), Seismo: s,
	}
}

func nonNil(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}
