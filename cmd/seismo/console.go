package main

import (
	"io"
	"net/http"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/seismo-agent/seismo/collectors"
	"github.com/seismo-agent/seismo/rules"
	"github.com/seismo-agent/seismo/web/ui"
)

// consoleChartWindow is how much history the console's charts show.
const consoleChartWindow = 3 * time.Hour

// consoleSources is what the console reads, gathered while the subsystems
// are wired: their API handlers (called in-process, so the console shows
// what the API answers), the rules' live history and the targets.
type consoleSources struct {
	alerts, rules, silences, drafts http.Handler
	silencedBy                      func(labels.Labels) []string
	history                         *rules.History
	targets                         func() []collectors.TargetStatus
}

// wireConsole mounts the web console (GET / and its pages) on the agent's
// server, under the route prefix and in the console's own concurrency
// slots (http.console), so that an overloaded API does not keep it waiting.
func wireConsole(a *agent) error {
	src := a.ui
	opts := ui.Options{
		Prefix: a.web.RoutePrefix(),
		Alerts: src.alerts, Rules: src.rules, Silences: src.silences, Drafts: src.drafts,
		SilencedBy: src.silencedBy,
		Status: func() ui.Status {
			return ui.Status{
				Version: a.version.Version, Revision: a.version.Revision, GoVersion: a.version.GoVersion,
				StartedAt:    a.startedAt,
				ConfigFile:   configName(a.config()),
				LastReloadOK: a.reloadOK.Get() == 1,
				LastReloadAt: time.Unix(int64(a.reloadSuccess.Get()), 0),
			}
		},
		Config: func() ([]byte, error) { return a.config().RedactedYAML() },
		Logger: a.logger.With("component", "console"),
		Now:    a.opts.now,
	}
	if h := src.history; h != nil {
		opts.Chart = func(w io.Writer, alert labels.Labels) error { return h.WriteSVG(w, alert) }
	}
	if src.targets != nil {
		opts.Targets = func() []ui.Target {
			ts := src.targets()
			out := make([]ui.Target, len(ts))
			for i, t := range ts {
				out[i] = ui.Target{
					Job: t.Job, Instance: t.Instance, Labels: t.Labels, Interval: t.Interval, Health: t.Health,
					LastScrape: t.LastScrape, LastDuration: t.LastDuration, LastError: t.LastError,
				}
			}
			return out
		}
	}
	c, err := ui.New(opts)
	if err != nil {
		return err
	}
	for pattern, h := range c.Routes() {
		a.web.HandleConsole(pattern, h)
	}
	return nil
}
