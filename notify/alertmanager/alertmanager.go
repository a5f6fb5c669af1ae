// Package alertmanager pushes alerts to one or more Alertmanagers through
// POST /api/v2/alerts, the way Prometheus does: firing alerts carry an endsAt
// ahead of now so that they resolve by themselves if the agent stops sending,
// and resolved alerts are sent with their resolve time. Every URL gets every
// alert (HA pairs deduplicate among themselves).
//
// Route this receiver with group_by ['...'], a short group_interval and a
// repeat_interval below ResendAhead so that firing alerts are re-sent before
// they expire (see docs/notify.md).
package alertmanager

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/seismo-agent/seismo/internal/configutil"
	"github.com/seismo-agent/seismo/internal/httpconf"
	"github.com/seismo-agent/seismo/internal/model"
	"github.com/seismo-agent/seismo/notify"
)

// Config is one alertmanager_configs entry.
type Config struct {
	// URLs are Alertmanager base URLs ("http://am-0:9093"); every one gets
	// every alert.
	URLs []configutil.Secret `koanf:"urls"`
	// EndsAtAhead is how far ahead of the send time a firing alert's endsAt
	// is set; Alertmanager resolves the alert then unless it is re-sent.
	EndsAtAhead time.Duration `koanf:"ends_at_ahead"`
	Timeout     time.Duration `koanf:"timeout"`
	// TLSConfig sets the CA, client certificate and server name for https
	// URLs (the same for every URL of the entry).
	TLSConfig httpconf.TLSConfig `koanf:"tls_config"`
}

// Resolve makes the TLS file paths absolute against baseDir.
func (c *Config) Resolve(baseDir string) error {
	cc := httpconf.ClientConfig{TLSConfig: c.TLSConfig}
	err := cc.Resolve(baseDir)
	c.TLSConfig = cc.TLSConfig
	return err
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config { return Config{EndsAtAhead: 5 * time.Minute, Timeout: 10 * time.Second} }

// Validate checks the entry; errors never contain the URLs.
func (c *Config) Validate() error {
	var errs configutil.Errors
	if len(c.URLs) == 0 {
		errs.Addf("urls", "at least one URL is required")
	}
	for i, u := range c.URLs {
		p, err := url.Parse(string(u))
		if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			errs.Addf(fmt.Sprintf("urls[%d]", i), "want an absolute http(s) URL")
		}
	}
	if c.EndsAtAhead <= 0 {
		errs.Addf("ends_at_ahead", "must be positive")
	}
	if c.Timeout <= 0 {
		errs.Addf("timeout", "must be positive")
	}
	cc := httpconf.ClientConfig{TLSConfig: c.TLSConfig}
	errs.Merge("", cc.Validate())
	return errs.Err()
}

// Alert is the element of the POST /api/v2/alerts body.
type Alert struct {
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations,omitempty"`
	StartsAt     time.Time         `json:"startsAt,omitzero"`
	EndsAt       time.Time         `json:"endsAt,omitzero"`
	GeneratorURL string            `json:"generatorURL,omitempty"`
}

// Notifier posts to every configured Alertmanager.
type Notifier struct {
	cfg    Config
	client *http.Client
	now    func() time.Time
}

var _ notify.Notifier = (*Notifier)(nil)

// New returns a notifier; client nil uses a client with cfg.Timeout.
func New(cfg Config, client *http.Client, now func() time.Time) *Notifier {
	if client == nil {
		client = &http.Client{Timeout: cfg.Timeout}
	}
	if now == nil {
		now = time.Now
	}
	return &Notifier{cfg: cfg, client: client, now: now}
}

// Secrets lists the strings to redact from errors.
func (n *Notifier) Secrets() []string {
	s := make([]string, len(n.cfg.URLs))
	for i, u := range n.cfg.URLs {
		s[i] = string(u)
	}
	return s
}

// Body returns the request body for alerts at time now.
func (n *Notifier) Body(alerts []*model.Alert, now time.Time) []Alert {
	out := make([]Alert, 0, len(alerts))
	for _, a := range alerts {
		end := now.Add(n.cfg.EndsAtAhead)
		if a.Resolved() {
			end = a.EndsAt
			if end.IsZero() {
				end = now
			}
		}
		out = append(out, Alert{Labels: a.Labels.Map(), Annotations: a.Annotations, StartsAt: a.StartsAt, EndsAt: end, GeneratorURL: a.GeneratorURL})
	}
	return out
}

// Notify posts the alerts to every URL concurrently. It succeeds only when
// every Alertmanager accepted them, and asks for a retry when any failure is
// retryable (Alertmanager deduplicates the repeat).
func (n *Notifier) Notify(ctx context.Context, alerts ...*model.Alert) (bool, error) {
	body, err := json.Marshal(n.Body(alerts, n.now()))
	if err != nil {
		return false, fmt.Errorf("encode alerts: %w", err)
	}
	var (
		mu    sync.Mutex
		retry bool
		errs  []error
		wg    sync.WaitGroup
	)
	for _, u := range n.cfg.URLs {
		wg.Go(func() {
			r, err := n.post(ctx, string(u), body)
			if err != nil {
				mu.Lock()
				retry = retry || r
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(errs) == 0 {
		return false, nil
	}
	return retry, notify.Redact(errors.Join(errs...), n.Secrets()...)
}

func (n *Notifier) post(ctx context.Context, base string, body []byte) (bool, error) {
	where := notify.RedactURL(base)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(base, "/")+"/api/v2/alerts", bytes.NewReader(body))
	if err != nil {
		return false, fmt.Errorf("alertmanager %s: %w", where, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "seismo")
	resp, err := n.client.Do(req)
	if err != nil {
		return ctx.Err() == nil, fmt.Errorf("alertmanager %s: %w", where, err)
	}
	retry, err := notify.CheckResponse(resp, n.now())
	if err != nil {
		return retry, fmt.Errorf("alertmanager %s: %w", where, err)
	}
	return false, nil
}
