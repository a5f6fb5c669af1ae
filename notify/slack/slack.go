// Package slack sends notifications to Slack as Block Kit messages with the
// explanation and a sparkline, through an incoming webhook or a bot token.
// With a bot token, later notifications of the same group (including its
// resolve) update the group's message with chat.update instead of posting
// again.
package slack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/prometheus/alertmanager/template"
	"github.com/slack-go/slack"

	"github.com/seismo-agent/seismo/internal/configutil"
	"github.com/seismo-agent/seismo/internal/httpconf"
	"github.com/seismo-agent/seismo/internal/model"
	"github.com/seismo-agent/seismo/notify"
	"github.com/seismo-agent/seismo/notify/draft"
)

// Slack's limits (https://api.slack.com/reference/block-kit/blocks).
const (
	maxBlocks      = 50
	maxHeaderChars = 150
	maxTextChars   = 3000
)

// Config is one slack_configs entry: either APIURL (incoming webhook) or
// Token and Channel (bot).
type Config struct {
	APIURL     configutil.Secret `koanf:"api_url"`
	APIURLFile string            `koanf:"api_url_file"`
	Token      configutil.Secret `koanf:"token"`
	TokenFile  string            `koanf:"token_file"`
	Channel    string            `koanf:"channel"`
	// APIBase is Slack's Web API base URL (for tests and proxies).
	APIBase      string `koanf:"api_base"`
	SendResolved *bool  `koanf:"send_resolved"`
	Username     string `koanf:"username"`
	IconEmoji    string `koanf:"icon_emoji"`
	// Title and Fallback are templates over notify.Data; Alert is a template
	// over notify.Item, rendered once per alert.
	Title    string `koanf:"title"`
	Fallback string `koanf:"fallback"`
	Alert    string `koanf:"alert"`
	// MaxAlerts bounds the alerts shown in one message (the rest are counted).
	MaxAlerts int           `koanf:"max_alerts"`
	Timeout   time.Duration `koanf:"timeout"`
	// TLSConfig sets the CA, client certificate and server name for the
	// connection to Slack (or a proxy in front of it).
	TLSConfig httpconf.TLSConfig `koanf:"tls_config"`
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{
		APIBase: "https://slack.com/api/",
		Title:   `{{ template "slack.seismo.title" . }}`, Fallback: `{{ template "slack.seismo.fallback" . }}`,
		Alert: `{{ template "slack.seismo.alert" . }}`, MaxAlerts: 10, Timeout: 10 * time.Second,
	}
}

// Resolve reads *_file secrets relative to baseDir.
func (c *Config) Resolve(baseDir string) error {
	var errs configutil.Errors
	var err error
	if c.APIURL, err = configutil.ResolveSecret(c.APIURL, c.APIURLFile, baseDir); err != nil {
		errs.Addf("api_url_file", "%v", err)
	}
	if c.Token, err = configutil.ResolveSecret(c.Token, c.TokenFile, baseDir); err != nil {
		errs.Addf("token_file", "%v", err)
	}
	cc := httpconf.ClientConfig{TLSConfig: c.TLSConfig}
	errs.Merge("", cc.Resolve(baseDir))
	c.TLSConfig = cc.TLSConfig
	return errs.Err()
}

// Validate checks the entry; errors never contain the URL or token.
func (c *Config) Validate() error {
	var errs configutil.Errors
	hasURL := c.APIURL != "" || c.APIURLFile != ""
	hasToken := c.Token != "" || c.TokenFile != ""
	switch {
	case hasURL && hasToken:
		errs.Addf("api_url", "set either api_url (incoming webhook) or token (bot), not both")
	case !hasURL && !hasToken:
		errs.Addf("api_url", "set api_url (incoming webhook) or token and channel (bot)")
	case hasToken && c.Channel == "":
		errs.Addf("channel", "required with a bot token")
	}
	if c.APIURL != "" {
		if msg := checkHTTPS(string(c.APIURL)); msg != "" {
			errs.Addf("api_url", "%s", msg)
		}
	}
	if hasToken && c.APIBase != "" {
		if msg := checkHTTPS(c.APIBase); msg != "" {
			errs.Addf("api_base", "%s", msg)
		}
	}
	cc := httpconf.ClientConfig{TLSConfig: c.TLSConfig}
	errs.Merge("", cc.Validate())
	if c.MaxAlerts <= 0 || c.MaxAlerts > maxBlocks-5 {
		errs.Addf("max_alerts", "must be between 1 and %d", maxBlocks-5)
	}
	if c.Timeout <= 0 {
		errs.Addf("timeout", "must be positive")
	}
	return errs.Err()
}

// checkHTTPS returns why u is not acceptable for Slack, or "". The URL
// (a secret: it carries the webhook's key) is never part of the answer.
// Slack must be reached over https; plain http is allowed only to a
// loopback address, where a local relay or a test server listens and
// nothing crosses a network.
func checkHTTPS(u string) string {
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		return "want an absolute http(s) URL"
	}
	if p.Scheme == "http" && !isLoopback(p.Hostname()) {
		return "must use https: the URL and messages would cross the network in clear text (http is accepted only for loopback addresses)"
	}
	return ""
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// SendsResolved reports whether notifications whose alerts all resolved are
// sent (the default).
func (c *Config) SendsResolved() bool { return c.SendResolved == nil || *c.SendResolved }

// Notifier posts to one Slack destination.
type Notifier struct {
	cfg         Config
	tmpl        *template.Template
	httpClient  *http.Client
	api         *slack.Client
	externalURL string

	mu       sync.Mutex
	messages map[string]posted // by group key, bot mode only
	state    notify.State      // persists messages across restarts; may be nil
}

type posted struct {
	Channel string `json:"channel"`
	TS      string `json:"ts"`
}

var (
	_ notify.Notifier      = (*Notifier)(nil)
	_ notify.DraftNotifier = (*Notifier)(nil)
	_ notify.Stateful      = (*Notifier)(nil)
)

// UseState keeps the message of each group (bot mode) in st, so that a
// restarted agent still updates the message it posted before.
func (n *Notifier) UseState(st notify.State) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.state = st
}

func (n *Notifier) message(groupKey string) (posted, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if p, ok := n.messages[groupKey]; ok {
		return p, true
	}
	if n.state == nil {
		return posted{}, false
	}
	b, ok := n.state.Get(groupKey)
	var p posted
	if !ok || json.Unmarshal(b, &p) != nil {
		return posted{}, false
	}
	n.messages[groupKey] = p
	return p, true
}

// remember records (or, with an empty ts, forgets) a group's message. A
// failure to persist only means a new message after a restart.
func (n *Notifier) remember(groupKey string, p posted) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if p.TS == "" {
		delete(n.messages, groupKey)
		if n.state != nil {
			_ = n.state.Delete(groupKey)
		}
		return
	}
	n.messages[groupKey] = p
	if n.state != nil {
		if b, err := json.Marshal(p); err == nil {
			_ = n.state.Put(groupKey, b)
		}
	}
}

// New returns a notifier. It renders the templates once against sample data
// so that a broken template fails at config load, not at send time.
func New(cfg Config, tmpl *template.Template, client *http.Client, externalURL string) (*Notifier, error) {
	if client == nil {
		client = &http.Client{Timeout: cfg.Timeout}
	}
	n := &Notifier{cfg: cfg, tmpl: tmpl, httpClient: client, externalURL: externalURL, messages: map[string]posted{}}
	if cfg.Token != "" {
		base := cfg.APIBase
		if !strings.HasSuffix(base, "/") {
			base += "/"
		}
		n.api = slack.New(string(cfg.Token), slack.OptionAPIURL(base), slack.OptionHTTPClient(client))
	}
	if _, _, err := n.render(notify.NewData(context.Background(), externalURL, sampleAlert())); err != nil {
		return nil, err
	}
	return n, nil
}

// Secrets lists the strings to redact from errors.
func (n *Notifier) Secrets() []string { return []string{string(n.cfg.APIURL), string(n.cfg.Token)} }

// Notify posts (or, with a bot token, updates) the group's message.
func (n *Notifier) Notify(ctx context.Context, alerts ...*model.Alert) (bool, error) {
	data := notify.NewData(ctx, n.externalURL, alerts...)
	fallback, blocks, err := n.render(data)
	if err != nil {
		return false, err
	}
	g := notify.GroupFrom(ctx, alerts...)
	return n.send(ctx, g.Key, data.Status == "resolved", fallback, blocks)
}

// NotifyDraft posts a status-update draft, clearly marked as a draft.
func (n *Notifier) NotifyDraft(ctx context.Context, d *draft.Draft) (bool, error) {
	head := fmt.Sprintf("DRAFT status update (%s): review before posting", d.Phase)
	blocks := []slack.Block{
		slack.NewHeaderBlock(slack.NewTextBlockObject(slack.PlainTextType, truncate(head, maxHeaderChars), false, false)),
		section(fmt.Sprintf("*%s*\n%s", d.Title, d.Text)),
		slack.NewContextBlock("", slack.NewTextBlockObject(slack.MarkdownType,
			truncate(fmt.Sprintf("Not posted anywhere. Component *%s*, impact `%s`, incident `%s`.", d.Component, d.Impact, d.IncidentID), maxTextChars), false, false)),
	}
	if d.Timeline != "" {
		blocks = append(blocks, slack.NewDividerBlock(), section("*Post-mortem skeleton*\n```"+truncate(d.Timeline, maxTextChars-40)+"```"))
	}
	return n.send(ctx, "", false, head+": "+d.Title, blocks)
}

func (n *Notifier) render(data *notify.Data) (string, []slack.Block, error) {
	title, err := n.tmpl.ExecuteTextString(n.cfg.Title, data)
	if err != nil {
		return "", nil, fmt.Errorf("render slack title: %w", err)
	}
	fallback, err := n.tmpl.ExecuteTextString(n.cfg.Fallback, data)
	if err != nil {
		return "", nil, fmt.Errorf("render slack fallback: %w", err)
	}
	blocks := []slack.Block{slack.NewHeaderBlock(slack.NewTextBlockObject(slack.PlainTextType, truncate(strings.TrimSpace(title), maxHeaderChars), false, false))}
	shown := min(len(data.Items), n.cfg.MaxAlerts)
	for _, it := range data.Items[:shown] {
		text, err := n.tmpl.ExecuteTextString(n.cfg.Alert, it)
		if err != nil {
			return "", nil, fmt.Errorf("render slack alert: %w", err)
		}
		blocks = append(blocks, section(strings.TrimSpace(text)))
	}
	var ctxText, keys []string
	for _, it := range data.Items[:shown] {
		if it.IncidentKey != "" {
			keys = append(keys, "`"+it.IncidentKey+"`")
		}
	}
	if len(keys) > 0 {
		// The stable key lets people and bots match the pages of HA
		// replicas and of restarts to one incident.
		ctxText = append(ctxText, "incident "+strings.Join(keys, ", "))
	}
	if rest := len(data.Items) - shown; rest > 0 {
		ctxText = append(ctxText, fmt.Sprintf("+%d more alerts", rest))
	}
	if n.externalURL != "" {
		ctxText = append(ctxText, fmt.Sprintf("<%s|seismo>", n.externalURL))
	}
	if len(ctxText) > 0 {
		blocks = append(blocks, slack.NewContextBlock("", slack.NewTextBlockObject(slack.MarkdownType, strings.Join(ctxText, " · "), false, false)))
	}
	return truncate(strings.TrimSpace(fallback), maxTextChars), blocks, nil
}

func section(text string) *slack.SectionBlock {
	return slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, truncate(text, maxTextChars), false, false), nil, nil)
}

// truncate cuts s to at most n characters, ending with "…" when cut.
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

func (n *Notifier) send(ctx context.Context, groupKey string, resolved bool, fallback string, blocks []slack.Block) (bool, error) {
	if n.api == nil {
		msg := &slack.WebhookMessage{Text: fallback, Blocks: &slack.Blocks{BlockSet: blocks},
			Username: n.cfg.Username, IconEmoji: n.cfg.IconEmoji, Channel: n.cfg.Channel}
		err := slack.PostWebhookCustomHTTPContext(ctx, string(n.cfg.APIURL), n.httpClient, msg)
		return n.classify(ctx, err)
	}
	opts := []slack.MsgOption{slack.MsgOptionText(fallback, false), slack.MsgOptionBlocks(blocks...)}
	prev, ok := n.message(groupKey)
	var err error
	if ok && groupKey != "" {
		_, _, _, err = n.api.UpdateMessageContext(ctx, prev.Channel, prev.TS, opts...)
	} else {
		if n.cfg.Username != "" {
			opts = append(opts, slack.MsgOptionUsername(n.cfg.Username))
		}
		if n.cfg.IconEmoji != "" {
			opts = append(opts, slack.MsgOptionIconEmoji(n.cfg.IconEmoji))
		}
		var ch, ts string
		ch, ts, err = n.api.PostMessageContext(ctx, n.cfg.Channel, opts...)
		if err == nil && groupKey != "" {
			n.remember(groupKey, posted{Channel: ch, TS: ts})
		}
	}
	if err == nil && resolved && groupKey != "" {
		n.remember(groupKey, posted{})
	}
	return n.classify(ctx, err)
}

// retryableAPIErrors are Slack Web API error codes worth retrying.
var retryableAPIErrors = map[string]bool{
	"ratelimited": true, "internal_error": true, "fatal_error": true,
	"service_unavailable": true, "request_timeout": true,
}

func (n *Notifier) classify(ctx context.Context, err error) (bool, error) {
	if err == nil {
		return false, nil
	}
	red := func(e error) error { return notify.Redact(fmt.Errorf("slack: %w", e), n.Secrets()...) }
	var rl *slack.RateLimitedError
	if errors.As(err, &rl) {
		return true, notify.RetryAfter(red(err), rl.RetryAfter)
	}
	var sc slack.StatusCodeError
	if errors.As(err, &sc) {
		return sc.Code == http.StatusTooManyRequests || sc.Code == http.StatusRequestTimeout || sc.Code >= 500, red(err)
	}
	var se slack.SlackErrorResponse
	if errors.As(err, &se) {
		return retryableAPIErrors[se.Err], red(err)
	}
	// Network errors and the like.
	return ctx.Err() == nil, red(err)
}

func sampleAlert() *model.Alert {
	return &model.Alert{State: model.StateFiring, Value: 1, Recent: []float64{0, 1},
		Explanation: &model.Explanation{Signals: []model.Signal{{Name: "value"}}, Breadth: &model.Breadth{}}}
}
