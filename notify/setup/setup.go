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
	"github.com/seismo-agent/seismo/internal/httpconf"
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
			ac := &r.AlertmanagerConfigs[j]
			fill(ac, alertmanager.DefaultConfig(), func(d, v *alertmanager.Config) {
				v.EndsAtAhead, v.Timeout = cmp.Or(v.EndsAtAhead, d.EndsAtAhead), cmp.Or(v.Timeout, d.Timeout)
			})
			errs.Merge(fmt.Sprintf("%s.alertmanager_configs[%d]", p, j), ac.Resolve(baseDir))
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
			checkTLS(&errs, fmt.Sprintf("%s.slack_configs[%d].tls_config", p, j), r.SlackConfigs[j].TLSConfig)
		}
		for j := range r.WebhookConfigs {
			errs.Merge(fmt.Sprintf("%s.webhook_configs[%d]", p, j), r.WebhookConfigs[j].Validate())
			checkTLS(&errs, fmt.Sprintf("%s.webhook_configs[%d].tls_config", p, j), r.WebhookConfigs[j].TLSConfig)
		}
		for j := range r.AlertmanagerConfigs {
			errs.Merge(fmt.Sprintf("%s.alertmanager_configs[%d]", p, j), r.AlertmanagerConfigs[j].Validate())
			checkTLS(&errs, fmt.Sprintf("%s.alertmanager_configs[%d].tls_config", p, j), r.AlertmanagerConfigs[j].TLSConfig)
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

// checkTLS reads the CA and client certificate files of a receiver's
// tls_config, so that "seismo check config" reports a bad file.
func checkTLS(errs *configutil.Errors, path string, t httpconf.TLSConfig) {
	if t == (httpconf.TLSConfig{}) || (t.CertFile == "") != (t.KeyFile == "") {
		return // nothing set, or already reported by Validate
	}
	if _, err := httpconf.NewTLS(t); err != nil {
		errs.Addf(path, "%v", err)
	}
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
			client, err := clientFor(deps.HTTPClient, sc.Timeout, sc.TLSConfig)
			if err != nil {
				return nil, fmt.Errorf("receivers[%d].slack_configs[%d].tls_config: %w", i, j, err)
			}
			n, err := slack.New(sc, tmpl, client, deps.ExternalURL)
			if err != nil {
				return nil, fmt.Errorf("receivers[%d].slack_configs[%d]: %w", i, j, err)
			}
			ints = append(ints, notify.Integration{Type: "slack", Notifier: n, SendResolved: sc.SendsResolved(), Secrets: n.Secrets()})
		}
		for j, wc := range r.WebhookConfigs {
			client, err := clientFor(deps.HTTPClient, wc.Timeout, wc.TLSConfig)
			if err != nil {
				return nil, fmt.Errorf("receivers[%d].webhook_configs[%d].tls_config: %w", i, j, err)
			}
			n := webhook.New(wc, client, deps.ExternalURL, deps.Now)
			ints = append(ints, notify.Integration{Type: "webhook", Notifier: n, SendResolved: wc.SendsResolved(), Secrets: n.Secrets()})
		}
		for j, ac := range r.AlertmanagerConfigs {
			client, err := clientFor(deps.HTTPClient, ac.Timeout, ac.TLSConfig)
			if err != nil {
				return nil, fmt.Errorf("receivers[%d].alertmanager_configs[%d].tls_config: %w", i, j, err)
			}
			n := alertmanager.New(ac, client, deps.Now)
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

// clientFor returns c when set (tests), else a client with the timeout and,
// when tlsCfg says anything, a transport of its own with those TLS settings
// (CA and client certificate read now, so a bad file fails the load).
func clientFor(c *http.Client, timeout time.Duration, tlsCfg httpconf.TLSConfig) (*http.Client, error) {
	if c != nil {
		return c, nil
	}
	if tlsCfg == (httpconf.TLSConfig{}) {
		return &http.Client{Timeout: timeout}, nil
	}
	t, err := httpconf.NewTLS(tlsCfg)
	if err != nil {
		return nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = t
	return &http.Client{Timeout: timeout, Transport: tr}, nil
}
