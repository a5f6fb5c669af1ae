// Package webhook sends notifications as Alertmanager's webhook v4 JSON, with
// a seismo object per alert, an optional HMAC-SHA256 signature and custom
// headers.
package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/seismo-agent/seismo/internal/configutil"
	"github.com/seismo-agent/seismo/internal/httpconf"
	"github.com/seismo-agent/seismo/internal/model"
	"github.com/seismo-agent/seismo/notify"
	"github.com/seismo-agent/seismo/notify/draft"
)

// Headers of a signed request. The signature is
// hex(HMAC-SHA256(secret, timestamp + "." + body)).
const (
	DefaultSignatureHeader = "X-Seismo-Signature"
	TimestampHeader        = "X-Seismo-Timestamp"
)

// Config is one webhook_configs entry.
type Config struct {
	URL     configutil.Secret `koanf:"url"`
	URLFile string            `koanf:"url_file"`
	// SendResolved sends notifications whose alerts all resolved.
	SendResolved *bool `koanf:"send_resolved"`
	// MaxAlerts truncates the alert list (0: no limit).
	MaxAlerts int `koanf:"max_alerts"`
	// Headers are added to every request; values are secrets.
	Headers map[string]configutil.Secret `koanf:"headers"`
	// HMACSecret, when set, signs every request (see docs/notify.md).
	HMACSecret      configutil.Secret `koanf:"hmac_secret"`
	HMACSecretFile  string            `koanf:"hmac_secret_file"`
	SignatureHeader string            `koanf:"signature_header"`
	Timeout         time.Duration     `koanf:"timeout"`
	// TLSConfig sets the CA, client certificate and server name for https
	// URLs.
	TLSConfig httpconf.TLSConfig `koanf:"tls_config"`
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{SignatureHeader: DefaultSignatureHeader, Timeout: 10 * time.Second}
}

// Resolve reads *_file secrets relative to baseDir.
func (c *Config) Resolve(baseDir string) error {
	var errs configutil.Errors
	var err error
	if c.URL, err = configutil.ResolveSecret(c.URL, c.URLFile, baseDir); err != nil {
		errs.Addf("url_file", "%v", err)
	}
	if c.HMACSecret, err = configutil.ResolveSecret(c.HMACSecret, c.HMACSecretFile, baseDir); err != nil {
		errs.Addf("hmac_secret_file", "%v", err)
	}
	cc := httpconf.ClientConfig{TLSConfig: c.TLSConfig}
	errs.Merge("", cc.Resolve(baseDir))
	c.TLSConfig = cc.TLSConfig
	return errs.Err()
}

// Validate checks the entry; errors never contain the URL.
func (c *Config) Validate() error {
	var errs configutil.Errors
	if c.URL == "" && c.URLFile == "" {
		errs.Addf("url", "required")
	} else if c.URL != "" {
		if u, err := url.Parse(string(c.URL)); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs.Addf("url", "want an absolute http(s) URL")
		}
	}
	if c.MaxAlerts < 0 {
		errs.Addf("max_alerts", "must not be negative")
	}
	if c.Timeout <= 0 {
		errs.Addf("timeout", "must be positive")
	}
	for k := range c.Headers {
		if k == "" || strings.ContainsAny(k, " :\r\n") {
			errs.Addf("headers", "bad header name %q", k)
		}
	}
	cc := httpconf.ClientConfig{TLSConfig: c.TLSConfig}
	errs.Merge("", cc.Validate())
	return errs.Err()
}

// SendsResolved reports whether notifications whose alerts all resolved are
// sent (the default).
func (c *Config) SendsResolved() bool { return c.SendResolved == nil || *c.SendResolved }

// Notifier posts to one webhook URL.
type Notifier struct {
	cfg         Config
	client      *http.Client
	externalURL string
	now         func() time.Time
}

var (
	_ notify.Notifier      = (*Notifier)(nil)
	_ notify.DraftNotifier = (*Notifier)(nil)
)

// New returns a notifier; client nil uses a client with cfg.Timeout.
func New(cfg Config, client *http.Client, externalURL string, now func() time.Time) *Notifier {
	if client == nil {
		client = &http.Client{Timeout: cfg.Timeout}
	}
	if now == nil {
		now = time.Now
	}
	if cfg.SignatureHeader == "" {
		cfg.SignatureHeader = DefaultSignatureHeader
	}
	return &Notifier{cfg: cfg, client: client, externalURL: externalURL, now: now}
}

// Secrets lists the strings to redact from this notifier's errors.
func (n *Notifier) Secrets() []string {
	s := []string{string(n.cfg.URL), string(n.cfg.HMACSecret)}
	for _, v := range n.cfg.Headers {
		s = append(s, string(v))
	}
	return s
}

// Notify posts the alerts.
func (n *Notifier) Notify(ctx context.Context, alerts ...*model.Alert) (bool, error) {
	return n.post(ctx, NewMessage(ctx, n.externalURL, n.cfg.MaxAlerts, alerts...))
}

// DraftMessage is the body posted for a status-update draft. Receivers tell
// it from alert notifications by its kind.
type DraftMessage struct {
	Kind     string       `json:"kind"` // "status_draft"
	Review   string       `json:"review"`
	GroupKey string       `json:"groupKey"`
	Receiver string       `json:"receiver"`
	Draft    *draft.Draft `json:"draft"`
}

// NotifyDraft posts a status-update draft for review.
func (n *Notifier) NotifyDraft(ctx context.Context, d *draft.Draft) (bool, error) {
	g := notify.GroupFrom(ctx)
	return n.post(ctx, &DraftMessage{Kind: "status_draft", Review: "draft for review: not posted to any status page",
		GroupKey: g.Key, Receiver: g.Receiver, Draft: d})
}

func (n *Notifier) post(ctx context.Context, msg any) (bool, error) {
	body, err := json.Marshal(msg)
	if err != nil {
		return false, fmt.Errorf("encode webhook message: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, string(n.cfg.URL), bytes.NewReader(body))
	if err != nil {
		return false, notify.Redact(fmt.Errorf("webhook request: %w", err), n.Secrets()...)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "seismo")
	for k, v := range n.cfg.Headers {
		req.Header.Set(k, string(v))
	}
	if n.cfg.HMACSecret != "" {
		ts := strconv.FormatInt(n.now().Unix(), 10)
		req.Header.Set(TimestampHeader, ts)
		req.Header.Set(n.cfg.SignatureHeader, "sha256="+Sign([]byte(n.cfg.HMACSecret), ts, body))
	}
	resp, err := n.client.Do(req)
	if err != nil {
		return ctx.Err() == nil, notify.Redact(fmt.Errorf("post to %s: %w", notify.RedactURL(string(n.cfg.URL)), err), n.Secrets()...)
	}
	retry, err := notify.CheckResponse(resp, n.now())
	if err != nil {
		return retry, notify.Redact(fmt.Errorf("post to %s: %w", notify.RedactURL(string(n.cfg.URL)), err), n.Secrets()...)
	}
	return false, nil
}

// Sign returns hex(HMAC-SHA256(secret, timestamp + "." + body)).
func Sign(secret []byte, timestamp string, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(timestamp))
	m.Write([]byte{'.'})
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// Verify checks a signature header value ("sha256=<hex>") against the body
// and timestamp, rejecting timestamps further than maxSkew from now.
func Verify(secret []byte, header, timestamp string, body []byte, now time.Time, maxSkew time.Duration) bool {
	ts, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil {
		return false
	}
	if d := now.Sub(time.Unix(ts, 0)); d > maxSkew || d < -maxSkew {
		return false
	}
	want := "sha256=" + Sign(secret, timestamp, body)
	return hmac.Equal([]byte(header), []byte(want))
}
