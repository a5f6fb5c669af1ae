package notify

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/alertmanager/template"

	"github.com/seismo-agent/seismo/internal/model"
	"github.com/seismo-agent/seismo/notify/templates"
)

// Data is what notification templates see: Alertmanager's template data (so
// `.Status`, `.Alerts.Firing`, `.CommonLabels` and the built-in templates
// work as in Alertmanager) plus Items, one per alert with seismo's details.
type Data struct {
	*template.Data
	Items []Item
}

// Item is one alert with what the detector said about it.
type Item struct {
	Name, Severity, Status, Fingerprint string
	Labels, Annotations                 template.KV
	StartsAt, EndsAt                    time.Time
	GeneratorURL, RunbookURL            string
	Resolved                            bool
	// Value is the value now; for a resolved alert, the value at resolve time.
	Value, PeakValue float64
	Unit             string
	Explanation      *model.Explanation
	// Signal is the explanation's first signal (the symptom), if any.
	Signal    *model.Signal
	Sparkline string
	Flapping  bool
	// Unrecovered: resolved with the value still beyond the band the
	// alert fired against (model.Alert.Unrecovered).
	Unrecovered bool
	// IncidentKey identifies this incident of the alert, the same from
	// every HA replica (model.Alert.IncidentKey); Replica says which
	// replica sent it.
	IncidentKey, Replica string
}

// NewData builds template data for one notification.
func NewData(ctx context.Context, externalURL string, alerts ...*model.Alert) *Data {
	g := GroupFrom(ctx, alerts...)
	d := &Data{Data: &template.Data{
		Receiver: g.Receiver, Status: Status(alerts), GroupLabels: g.Labels,
		CommonLabels: CommonLabels(alerts), CommonAnnotations: CommonAnnotations(alerts),
		ExternalURL: externalURL,
	}}
	if d.GroupLabels == nil {
		d.GroupLabels = template.KV{}
	}
	for _, a := range alerts {
		status := "firing"
		if a.Resolved() {
			status = "resolved"
		}
		fp := fmt.Sprintf("%016x", a.Fingerprint())
		ann := template.KV(a.Annotations)
		if ann == nil {
			ann = template.KV{}
		}
		d.Alerts = append(d.Alerts, template.Alert{Status: status, Labels: a.Labels.Map(), Annotations: ann,
			StartsAt: a.StartsAt, EndsAt: a.EndsAt, GeneratorURL: a.GeneratorURL, Fingerprint: fp})
		it := Item{Name: a.Name(), Severity: a.Labels.Get("severity"), Status: status, Fingerprint: fp,
			Labels: a.Labels.Map(), Annotations: ann, StartsAt: a.StartsAt, EndsAt: a.EndsAt,
			GeneratorURL: a.GeneratorURL, RunbookURL: a.Annotations["runbook_url"], Resolved: a.Resolved(),
			Value: a.Value, PeakValue: a.PeakValue, Explanation: a.Explanation,
			Sparkline: templates.Sparkline(a.Recent), Flapping: a.Flapping, Unrecovered: a.Unrecovered,
			IncidentKey: a.IncidentKey(), Replica: a.Replica}
		if ex := a.Explanation; ex != nil && len(ex.Signals) > 0 {
			s := ex.Signals[0]
			it.Signal, it.Unit = &s, s.Unit
		}
		d.Items = append(d.Items, it)
	}
	return d
}
