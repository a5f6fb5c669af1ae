// Package setup is the `notify` section of the agent config and builds the
// dispatcher's configuration from it: routes, receivers with their
// integrations, templates and drafts. It sits apart from package notify
// because it imports every integration, and every integration imports notify.
package setup

import (
	"cmp"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/seismo-agent/seismo/internal/configutil"
	"github.com/seismo-agent/seismo/notify"
	"github.com/seismo-agent/seismo/notify/alertmanager"
	"github.com/seismo-agent/seismo/notify/draft"
	"github.com/seismo-agent/seismo/notify/file"
	"github.com/seismo-agent/seismo/notify/slack"
	"github.com/seismo-agent/seismo/notify/templates"
	"github.com/seismo-agent/seismo/notify/webhook"
)

// Config is the `notify` section.
type Config struct {
	Route     notify.RouteConfig `koanf:"route"`
	Receivers []Receiver         `koanf:"receivers"`
	// Templates are file globs parsed after the built-in templates; a
	// template defined there replaces the built-in one of the same name.
	Templates []string     `koanf:"templates"`
	Drafts    draft.Config `koanf:"drafts"`
	// QueueCapacity bounds each integration's pending notifications.
	QueueCapacity int           `koanf:"queue_capacity"`
	MinBackoff    time.Duration `koanf:"min_backoff"`
	MaxBackoff    time.Duration `koanf:"max_backoff"`
}

// Receiver is a named set of integrations.
type Receiver struct {
	Name                string                `koanf:"name"`
	SlackConfigs        []slack.Config        `koanf:"slack_configs"`
	WebhookConfigs      []webhook.Config      `koanf:"webhook_configs"`
	AlertmanagerConfigs []alertmanager.Config `koanf:"alertmanager_configs"`
	FileConfigs         []file.Config         `koanf:"file_configs"`
}

// DefaultConfig returns the section's defaults: every alert is written as a
// JSON line to standard output, so the agent is useful without a receiver.
func DefaultConfig() Config {
	r := notify.DefaultRoute()
	r.Receiver = "stdout"
	return Config{
		Route:         r,
		Receivers:     []Receiver{{Name: "stdout", FileConfigs: []file.Config{{Path: file.Stdout}}}},
		Drafts:        draft.DefaultConfig(),
		QueueCapacity: 1000,
		MinBackoff:    time.Second,
		MaxBackoff:    5 * time.Minute,
	}
}

// Resolve fills per-entry defaults, reads *_file secrets and resolves paths
// against baseDir.
func (c *Config) Resolve(baseDir string) error {
	var errs configutil.Errors
	for i := range c.Templates {
		c.Templates[i] = configutil.ResolvePath(baseDir, c.Templates[i])
	}
	for i := range c.Receivers {
		r := &c.Receivers[i]
		p := fmt.Sprintf("receivers[%d]", i)
		for j := range r.SlackConfigs {
			sc := &r.SlackConfigs[j]
			fill(sc, slack.DefaultConfig(), func(d, v *slack.Config) {
				v.APIBase = cmp.Or(v.APIBase, d.APIBase)
				v.Title, v.Fallback, v.Alert = cmp.Or(v.Title, d.Title), cmp.Or(v.Fallback, d.Fallback), cmp.Or(v.Alert, d.Alert)
				v.MaxAlerts, v.Timeout = cmp.Or(v.MaxAlerts, d.MaxAlerts), cmp.Or(v.Timeout, d.Timeout)
			})
			errs.Merge(fmt.Sprintf("%s.slack_configs[%d]", p, j), sc.Resolve(baseDir))
		}
		for j := range r.WebhookConfigs {
			wc := &r.WebhookConfigs[j]
			fill(wc, webhook.DefaultConfig(), func(d, v *webhook.Config) {
				v.SignatureHeader, v.Timeout = cmp.Or(v.SignatureHeader, d.SignatureHeader), cmp.Or(v.Timeout, d.Timeout)
			})
			errs.Merge(fmt.Sprintf("%s.webhook_configs[%d]", p, j), wc.Resolve(baseDir))
		}
		for j := range r.AlertmanagerConfigs {
			fill(&r.AlertmanagerConfigs[j], alertmanager.DefaultConfig(), func(d, v *alertmanager.Config) {
				v.EndsAtAhead, v.Timeout = cmp.Or(v.EndsAtAhead, d.EndsAtAhead), cmp.Or(v.Timeout, d.Timeout)
			})
		}
		for j := range r.FileConfigs {
			errs.Merge(fmt.Sprintf("%s.file_configs[%d]", p, j), r.FileConfigs[j].Resolve(baseDir))
		}
	}
	return errs.Err()
}

func fill[T any](v *T, d T, f func(d, v *T)) { f(&d, v) }

// Validate checks the section and returns every problem with its path
// relative to the section ("receivers[0].slack_configs[0].api_url").
func (c *Config) Validate() error {
	var errs configutil.Errors
	var names []string
	for i, r := range c.Receivers {
		p := fmt.Sprintf("receivers[%d]", i)
		switch {
		case r.Name == "":
			errs.Addf(p+".name", "required")
		case slices.Contains(names, r.Name):
			errs.Addf(p+".name", "duplicate receiver %q", r.Name)
		}
		names = append(names, r.Name)
		for j := range r.SlackConfigs {
			errs.Merge(fmt.Sprintf("%s.slack_configs[%d]", p, j), r.SlackConfigs[j].Validate())
		}
		for j := range r.WebhookConfigs {
			errs.Merge(fmt.Sprintf("%s.webhook_configs[%d]", p, j), r.WebhookConfigs[j].Validate())
		}
		for j := range r.AlertmanagerConfigs {
			errs.Merge(fmt.Sprintf("%s.alertmanager_configs[%d]", p, j), r.AlertmanagerConfigs[j].Validate())
		}
		for j := range r.FileConfigs {
			errs.Merge(fmt.Sprintf("%s.file_configs[%d]", p, j), r.FileConfigs[j].Validate())
		}
	}
	errs.Merge("route", c.Route.Validate(names))
	c.checkAlertmanagerTimings(&errs, c.Route, "route", c.Route.GroupInterval, c.Route.RepeatInterval)
	errs.Merge("drafts", c.Drafts.Validate())
	for i, n := range c.Drafts.Receivers {
		if !slices.Contains(names, n) {
			errs.Addf(fmt.Sprintf("drafts.receivers[%d]", i), "undefined receiver %q", n)
		}
	}
	if c.QueueCapacity <= 0 {
		errs.Addf("queue_capacity", "must be positive")
	}
	if c.MinBackoff <= 0 {
		errs.Addf("min_backoff", "must be positive")
	}
	if c.MaxBackoff < c.MinBackoff {
		errs.Addf("max_backoff", "must not be below min_backoff")
	}
	tmpl, err := templates.Load(c.Templates)
	if err != nil {
		errs.Addf("templates", "%v", err)
	} else {
		for i, r := range c.Receivers {
			for j, sc := range r.SlackConfigs {
				if _, err := slack.New(sc, tmpl, nil, ""); err != nil {
					errs.Addf(fmt.Sprintf("receivers[%d].slack_configs[%d]", i, j), "%v", notify.RedactString(err.Error(), string(sc.APIURL), string(sc.Token)))
				}
			}
		}
	}
	return errs.Err()
}

// checkAlertmanagerTimings reports routes to Alertmanager receivers whose
// timings would let Alertmanager expire firing alerts between re-sends: a
// group is re-sent after repeat_interval, at the next group_interval tick.
func (c *Config) checkAlertmanagerTimings(errs *configutil.Errors, r notify.RouteConfig, path string, gi, ri time.Duration) {
	gi, ri = cmp.Or(r.GroupInterval, gi), cmp.Or(r.RepeatInterval, ri)
	for _, recv := range c.Receivers {
		if recv.Name != r.Receiver {
			continue
		}
		for _, ac := range recv.AlertmanagerConfigs {
			if ri+gi > ac.EndsAtAhead {
				errs.Addf(path+".repeat_interval", "receiver %q sends to Alertmanager with ends_at_ahead %s, but repeat_interval %s plus group_interval %s lets firing alerts expire there between re-sends",
					recv.Name, ac.EndsAtAhead, ri, gi)
			}
		}
	}
	for i, child := range r.Routes {
		if child.Receiver == "" {
			child.Receiver = r.Receiver
		}
		c.checkAlertmanagerTimings(errs, child, fmt.Sprintf("%s.routes[%d]", path, i), gi, ri)
	}
}

// Deps are what Build needs from the agent.
type Deps struct {
	// ExternalURL is the agent's page, linked from messages.
	ExternalURL string
	// HTTPClient is used by every integration; nil gives each a client with
	// its own timeout.
	HTTPClient *http.Client
	// Stdout is where file_configs with path "-" write; nil is os.Stdout.
	Stdout io.Writer
	Now    func() time.Time
}

// Build turns a resolved and validated section into the dispatcher's config.
// Templates are parsed here, at load, never at send time.
func Build(c *Config, deps Deps) (*notify.Config, error) {
	tmpl, err := templates.Load(c.Templates)
	if err != nil {
		return nil, fmt.Errorf("templates: %w", err)
	}
	route, err := notify.CompileRoute(c.Route)
	if err != nil {
		return nil, fmt.Errorf("route: %w", err)
	}
	out := &notify.Config{
		Route: route, Receivers: map[string][]notify.Integration{}, QueueCapacity: c.QueueCapacity,
		Backoff:        notify.Backoff{Initial: c.MinBackoff, Max: c.MaxBackoff},
		Drafts:         draft.NewRenderer(tmpl, c.Drafts.Location()),
		DraftReceivers: c.Drafts.Receivers, DraftHold: c.Drafts.Hold, DraftKeep: c.Drafts.Keep,
	}
	for i, r := range c.Receivers {
		var ints []notify.Integration
		for j, sc := range r.SlackConfigs {
			n, err := slack.New(sc, tmpl, clientFor(deps.HTTPClient, sc.Timeout), deps.ExternalURL)
			if err != nil {
				return nil, fmt.Errorf("receivers[%d].slack_configs[%d]: %w", i, j, err)
			}
			ints = append(ints, notify.Integration{Type: "slack", Notifier: n, SendResolved: sc.SendsResolved(), Secrets: n.Secrets()})
		}
		for _, wc := range r.WebhookConfigs {
			n := webhook.New(wc, clientFor(deps.HTTPClient, wc.Timeout), deps.ExternalURL, deps.Now)
			ints = append(ints, notify.Integration{Type: "webhook", Notifier: n, SendResolved: wc.SendsResolved(), Secrets: n.Secrets()})
		}
		for _, ac := range r.AlertmanagerConfigs {
			n := alertmanager.New(ac, clientFor(deps.HTTPClient, ac.Timeout), deps.Now)
			// Alertmanager must hear about resolves to close its alerts.
			ints = append(ints, notify.Integration{Type: "alertmanager", Notifier: n, SendResolved: true, Secrets: n.Secrets()})
		}
		for _, fc := range r.FileConfigs {
			n := file.New(fc, deps.ExternalURL, deps.Stdout, deps.Now)
			ints = append(ints, notify.Integration{Type: "file", Notifier: n, SendResolved: fc.SendsResolved()})
		}
		out.Receivers[r.Name] = ints
	}
	return out, nil
}

func clientFor(c *http.Client, timeout time.Duration) *http.Client {
	if c != nil {
		return c
	}
	return &http.Client{Timeout: timeout}
}
