package rules

import (
	"context"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/template"
)

// templateData is what label and annotation templates see. It extends
// Prometheus' alert template data (.Labels, .ExternalLabels, .ExternalURL,
// .Value) with the detector's view, so `{{ $expected | humanize }}` works.
type templateData struct {
	Labels         map[string]string
	ExternalLabels map[string]string
	ExternalURL    string
	Value          float64
	Score          float64
	Expected       float64
	Lower          float64
	Upper          float64
	Summary        string
}

const templateDefs = "{{$labels := .Labels}}{{$externalLabels := .ExternalLabels}}" +
	"{{$externalURL := .ExternalURL}}{{$value := .Value}}{{$score := .Score}}" +
	"{{$expected := .Expected}}{{$lower := .Lower}}{{$upper := .Upper}}{{$summary := .Summary}}"

// checkTemplate parses a label or annotation template without running it.
func checkTemplate(rule, text string) error {
	if !strings.Contains(text, "{{") {
		return nil
	}
	e := template.NewTemplateExpander(context.Background(), templateDefs+text, "__alert_"+rule,
		templateData{}, 0, nil, nil, nil)
	return e.ParseTest()
}

// expandTemplate runs a label or annotation template. On error it returns
// the error text in the result, as Prometheus does, so a broken annotation
// is visible where people read it.
func expandTemplate(ctx context.Context, rule, text string, data templateData, ts time.Time, q template.QueryFunc, ext *url.URL) string {
	if !strings.Contains(text, "{{") {
		return text
	}
	e := template.NewTemplateExpander(ctx, templateDefs+text, "__alert_"+rule, data,
		model.TimeFromUnixNano(ts.UnixNano()), q, ext, nil)
	s, err := e.Expand()
	if err != nil {
		return "<error expanding template: " + err.Error() + ">"
	}
	return s
}
