package draft

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/alertmanager/template"

	"github.com/seismo-agent/seismo/notify/templates"
)

// Renderer renders drafts from templates (see notify/templates, draft.*).
type Renderer struct {
	tmpl *template.Template
	loc  *time.Location
}

// NewRenderer returns a renderer that prints times in loc (UTC when nil).
func NewRenderer(t *template.Template, loc *time.Location) *Renderer {
	if loc == nil {
		loc = time.UTC
	}
	return &Renderer{tmpl: t, loc: loc}
}

// Data is what draft templates see.
type Data struct {
	Phase      string
	PhaseTitle string
	Component  string
	// Impact is the Statuspage component state; ImpactText is it in words.
	Impact     string
	ImpactText string
	Kind       string
	Cause      string
	Summary    string
	// Start is the time of the first anomaly, End the recovery time, both
	// "15:04" in the configured zone; Date is "2006-01-02"; Zone is "UTC-3".
	Start, End, Date, Zone string
	// EndDate is the end's date when it is not Date's, else empty.
	EndDate  string
	Duration string
	Alerts   []AlertSummary
	// Unrecovered is set when an alert of the incident resolved with its
	// value still beyond the band it fired against: the alert ended, the
	// component did not come back.
	Unrecovered bool
	// Withdrawn is set when the incident's alerts turned out to be a
	// monitoring gap (a metric that stopped updating): Phase is
	// "resolved", PhaseTitle "Withdrawn".
	Withdrawn bool
	Events    []EventView
	Incident  *Incident
}

// EventView is a timeline event with its time formatted.
type EventView struct {
	Time string
	Kind string
	Text string
}

// Render renders the draft for the incident's current phase and records it
// on the incident.
func (r *Renderer) Render(inc *Incident, now time.Time) (*Draft, error) {
	d := r.data(inc, now)
	out := &Draft{IncidentID: inc.ID, Seq: len(inc.Drafts) + 1, Phase: inc.Phase,
		Component: inc.Component, Impact: inc.Impact, CreatedAt: now}
	var err error
	exec := func(name string) string {
		if err != nil {
			return ""
		}
		var s string
		s, err = r.tmpl.ExecuteTextString(`{{ template "`+name+`" . }}`, d)
		if err != nil {
			err = fmt.Errorf("render %s: %w", name, err)
		}
		return strings.TrimSpace(s)
	}
	out.Title = exec("draft.title")
	out.Text = exec("draft.text")
	out.Markdown = exec("draft.markdown") + "\n"
	if inc.Phase == PhaseResolved && !inc.Withdrawn {
		out.Timeline = exec("draft.timeline") + "\n"
	}
	if err != nil {
		return nil, err
	}
	inc.Drafts = append(inc.Drafts, out)
	return out, nil
}

func (r *Renderer) data(inc *Incident, now time.Time) *Data {
	start := inc.FirstAnomalyAt.In(r.loc)
	end := now
	if !inc.RecoveredAt.IsZero() {
		end = inc.RecoveredAt
	}
	end = end.In(r.loc)
	d := &Data{
		Phase: inc.Phase.String(), PhaseTitle: title(inc.Phase.String()),
		Component: inc.Component, Impact: inc.Impact, ImpactText: ImpactText(inc.Impact),
		Kind: inc.Kind, Cause: inc.Cause, Summary: inc.Summary,
		Start: start.Format("15:04"), End: end.Format("15:04"), Date: start.Format("2006-01-02"),
		Zone: ZoneName(start), Duration: humanDuration(end.Sub(start)),
		Alerts: inc.Alerts, Incident: inc, Withdrawn: inc.Withdrawn,
		Unrecovered: slices.ContainsFunc(inc.Alerts, func(a AlertSummary) bool { return a.Unrecovered }),
	}
	if inc.Withdrawn {
		d.PhaseTitle = "Withdrawn"
	}
	if e := end.Format("2006-01-02"); e != d.Date {
		d.EndDate = e
	}
	events := slices.Clone(inc.Events)
	for name, p := range inc.Peaks {
		events = append(events, Event{At: p.At, Kind: "peak", Text: fmt.Sprintf("peak: %s at %s", name, templates.FormatValue(p.Value, p.Unit))})
	}
	slices.SortStableFunc(events, func(a, b Event) int {
		return cmp.Or(a.At.Compare(b.At), cmp.Compare(a.Text, b.Text))
	})
	for _, e := range events {
		d.Events = append(d.Events, EventView{Time: e.At.In(r.loc).Format("15:04:05"), Kind: e.Kind, Text: e.Text})
	}
	return d
}

// ImpactText returns an impact level in words.
func ImpactText(impact string) string {
	switch impact {
	case ImpactMajor:
		return "a major outage"
	case ImpactPartial:
		return "a partial outage"
	}
	return "degraded performance"
}

func title(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// ZoneName names t's zone for people: "UTC", "UTC-3", "UTC+5:30", or the
// abbreviation when the zone has one ("CET").
func ZoneName(t time.Time) string {
	name, off := t.Zone()
	if name != "" && name[0] != '+' && name[0] != '-' && name != "UTC" {
		return name
	}
	if off == 0 {
		return "UTC"
	}
	sign := "+"
	if off < 0 {
		sign, off = "-", -off
	}
	h, m := off/3600, off%3600/60
	if m == 0 {
		return fmt.Sprintf("UTC%s%d", sign, h)
	}
	return fmt.Sprintf("UTC%s%d:%02d", sign, h, m)
}

func humanDuration(d time.Duration) string {
	d = d.Round(time.Second)
	plural := func(n int, unit string) string {
		if n == 1 {
			return fmt.Sprintf("1 %s", unit)
		}
		return fmt.Sprintf("%d %ss", n, unit)
	}
	h, m, s := int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60
	switch {
	case h > 0 && m > 0:
		return plural(h, "hour") + " " + plural(m, "minute")
	case h > 0:
		return plural(h, "hour")
	case m > 0:
		return plural(m, "minute")
	}
	return plural(s, "second")
}
