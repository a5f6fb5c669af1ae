package slack_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/require"

	"github.com/seismo-agent/seismo/internal/configutil"
	"github.com/seismo-agent/seismo/internal/httpconf"
	"github.com/seismo-agent/seismo/internal/model"
	"github.com/seismo-agent/seismo/notify"
	"github.com/seismo-agent/seismo/notify/draft"
	"github.com/seismo-agent/seismo/notify/internal/notifytest"
	"github.com/seismo-agent/seismo/notify/slack"
	"github.com/seismo-agent/seismo/notify/templates"
)

const secret = "SECRET-HOOK-XYZ"

func newWebhookNotifier(t *testing.T, url string) *slack.Notifier {
	t.Helper()
	cfg := slack.DefaultConfig()
	cfg.APIURL = configutil.Secret(url)
	return mustNew(t, cfg)
}

func mustNew(t *testing.T, cfg slack.Config) *slack.Notifier {
	t.Helper()
	tm, err := templates.Load(nil)
	require.NoError(t, err)
	n, err := slack.New(cfg, tm, nil, "http://seismo.example:9797")
	require.NoError(t, err)
	return n
}

func groupCtx() context.Context {
	return notify.WithGroup(context.Background(), notify.Group{Key: `0:{alertname="LatencyUpCPUFlat"}`, Receiver: "team",
		Labels: map[string]string{"alertname": "LatencyUpCPUFlat"}})
}

func hookServer(t *testing.T, status int, retryAfter, body string) (*httptest.Server, chan []byte) {
	t.Helper()
	got := make(chan []byte, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- b
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv, got
}

func TestWebhookGolden(t *testing.T) {
	many := func() []*model.Alert {
		var out []*model.Alert
		for i := range 12 {
			a := notifytest.Firing()
			a.Labels = labels.NewBuilder(a.Labels).Set("instance", fmt.Sprintf("web-%d", i)).Labels()
			a.Annotations = map[string]string{"summary": fmt.Sprintf("instance %d", i)}
			out = append(out, a)
		}
		return out
	}
	tests := []struct {
		name   string
		alerts []*model.Alert
	}{
		{"firing", []*model.Alert{notifytest.Firing(), notifytest.Storm()}},
		{"resolved", []*model.Alert{notifytest.Resolved()}},
		{"unrecovered", []*model.Alert{notifytest.Unrecovered()}},
		{"truncated", many()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, got := hookServer(t, http.StatusOK, "", "ok")
			retry, err := newWebhookNotifier(t, srv.URL+"/services/"+secret).Notify(groupCtx(), tt.alerts...)
			require.NoError(t, err)
			require.False(t, retry)
			notifytest.Golden(t, tt.name+".json", <-got)
		})
	}
}

func TestDraftMessage(t *testing.T) {
	srv, got := hookServer(t, http.StatusOK, "", "ok")
	d := &draft.Draft{Phase: draft.PhaseResolved, Component: "Login", Impact: draft.ImpactMajor, IncidentID: "i-1",
		Title: "Login: a major outage (Resolved)", Text: "Between 12:23 and 12:42 UTC-3 ...", Timeline: "# Post-mortem"}
	_, err := newWebhookNotifier(t, srv.URL+"/services/"+secret).NotifyDraft(groupCtx(), d)
	require.NoError(t, err)
	notifytest.Golden(t, "draft.json", <-got)
}

func TestWebhookRetryMatrix(t *testing.T) {
	tests := []struct {
		status     int
		retryAfter string
		body       string
		wantRetry  bool
		wantAfter  string
	}{
		{status: 400, body: "invalid_payload"},
		{status: 403, body: "invalid_token"},
		{status: 404, body: "no_service"},
		{status: 410, body: "channel_is_archived"},
		{status: 429, retryAfter: "7", wantRetry: true, wantAfter: "7s"},
		{status: 429, wantRetry: true},
		{status: 500, wantRetry: true},
		{status: 503, wantRetry: true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.status, tt.retryAfter), func(t *testing.T) {
			srv, _ := hookServer(t, tt.status, tt.retryAfter, tt.body)
			retry, err := newWebhookNotifier(t, srv.URL+"/services/"+secret).Notify(groupCtx(), notifytest.Firing())
			require.Error(t, err)
			require.Equal(t, tt.wantRetry, retry)
			require.NotContains(t, err.Error(), secret)
			if tt.wantAfter != "" {
				after, ok := notify.RetryAfterOf(err)
				require.True(t, ok)
				require.Equal(t, tt.wantAfter, after.String())
			}
		})
	}
	t.Run("network error", func(t *testing.T) {
		srv, _ := hookServer(t, 200, "", "ok")
		srv.Close()
		retry, err := newWebhookNotifier(t, srv.URL+"/services/"+secret).Notify(groupCtx(), notifytest.Firing())
		require.Error(t, err)
		require.True(t, retry)
		require.NotContains(t, err.Error(), secret)
	})
}

// fakeAPI is a Slack Web API that records calls.
type fakeAPI struct {
	mu    sync.Mutex
	calls []url.Values
	paths []string
	reply string
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	f.mu.Lock()
	f.paths = append(f.paths, r.URL.Path)
	form := r.PostForm
	form.Set("auth", r.Header.Get("Authorization"))
	f.calls = append(f.calls, form)
	reply := f.reply
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if reply == "" {
		reply = `{"ok": true, "channel": "C123", "ts": "1700000000.000100"}`
	}
	_, _ = io.WriteString(w, reply)
}

func botNotifier(t *testing.T, base string) *slack.Notifier {
	cfg := slack.DefaultConfig()
	cfg.Token, cfg.Channel, cfg.APIBase = "xoxb-"+secret, "#alerts", base+"/api"
	return mustNew(t, cfg)
}

// TestBotUpdatesGroupMessage: the first notification of a group posts, the
// next ones (including the resolve) update the same message; after the
// resolve a new incident posts a new message.
func TestBotUpdatesGroupMessage(t *testing.T) {
	api := &fakeAPI{}
	srv := httptest.NewServer(api)
	defer srv.Close()
	n := botNotifier(t, srv.URL)
	for _, alerts := range [][]*model.Alert{
		{notifytest.Firing()},
		{notifytest.Firing(), notifytest.Storm()},
		{notifytest.Resolved()},
		{notifytest.Firing()},
	} {
		retry, err := n.Notify(groupCtx(), alerts...)
		require.NoError(t, err)
		require.False(t, retry)
	}
	api.mu.Lock()
	defer api.mu.Unlock()
	require.Equal(t, []string{"/api/chat.postMessage", "/api/chat.update", "/api/chat.update", "/api/chat.postMessage"}, api.paths)
	require.Equal(t, "#alerts", api.calls[0].Get("channel"))
	require.Contains(t, []string{"Bearer xoxb-" + secret, "xoxb-" + secret}, api.calls[0].Get("auth")+api.calls[0].Get("token"))
	for _, c := range api.calls[1:3] {
		require.Equal(t, "C123", c.Get("channel"))
		require.Equal(t, "1700000000.000100", c.Get("ts"))
	}
	require.Contains(t, api.calls[2].Get("blocks"), "Value at resolve: *230 ms*")
	require.Contains(t, api.calls[0].Get("blocks"), "▁▁▁▁▆█▇")
}

func TestBotAPIErrors(t *testing.T) {
	tests := []struct {
		reply     string
		wantRetry bool
	}{
		{`{"ok": false, "error": "channel_not_found"}`, false},
		{`{"ok": false, "error": "invalid_auth"}`, false},
		{`{"ok": false, "error": "ratelimited"}`, true},
		{`{"ok": false, "error": "internal_error"}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.reply, func(t *testing.T) {
			srv := httptest.NewServer(&fakeAPI{reply: tt.reply})
			defer srv.Close()
			retry, err := botNotifier(t, srv.URL).Notify(groupCtx(), notifytest.Firing())
			require.Error(t, err)
			require.Equal(t, tt.wantRetry, retry)
			require.NotContains(t, err.Error(), secret)
		})
	}
}

func TestContextCancel(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-release }))
	defer srv.Close()
	defer close(release)
	ctx, cancel := context.WithCancel(groupCtx())
	done := make(chan error, 1)
	n := newWebhookNotifier(t, srv.URL+"/services/"+secret)
	go func() {
		_, err := n.Notify(ctx, notifytest.Firing())
		done <- err
	}()
	cancel()
	err := <-done
	require.True(t, errors.Is(err, context.Canceled), "%v", err)
	require.NotContains(t, err.Error(), secret)
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  slack.Config
		want string
	}{
		{"nothing", slack.Config{}, "api_url: set api_url (incoming webhook) or token and channel (bot)"},
		{"both", slack.Config{APIURL: "https://h/" + secret, Token: secret}, "api_url: set either api_url"},
		{"token without channel", slack.Config{Token: secret}, "channel: required with a bot token"},
		{"bad url", slack.Config{APIURL: "hooks.slack.com/" + secret}, "api_url: want an absolute http(s) URL"},
		{"plain http", slack.Config{APIURL: "http://hooks.slack.com/" + secret}, "api_url: must use https"},
		{"plain http to a bot API base", slack.Config{Token: secret, Channel: "#c", APIBase: "http://slack.example/api/"}, "api_base: must use https"},
		{"bad tls_config", slack.Config{APIURL: "https://hooks.slack.com/" + secret, TLSConfig: httpconf.TLSConfig{CertFile: "c.pem"}}, "tls_config.cert_file: cert_file and key_file must be set together"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			require.ErrorContains(t, err, tt.want)
			require.NotContains(t, err.Error(), secret)
		})
	}
}

func TestPlainHTTPOnlyToLoopback(t *testing.T) {
	for _, u := range []string{"http://127.0.0.1:8080/hook", "http://[::1]/hook", "http://localhost/hook", "https://hooks.slack.com/x"} {
		cfg := slack.DefaultConfig()
		cfg.APIURL = configutil.Secret(u)
		require.NoError(t, cfg.Validate(), u)
	}
}

func TestBrokenTemplateFailsAtNew(t *testing.T) {
	tm, err := templates.Load(nil)
	require.NoError(t, err)
	cfg := slack.DefaultConfig()
	cfg.APIURL = "https://hooks.example/x"
	cfg.Alert = `{{ .NoSuchField.Deeper }}`
	_, err = slack.New(cfg, tm, nil, "")
	require.Error(t, err)
	require.True(t, strings.Contains(err.Error(), "render slack alert"), err.Error())
}

// TestSizeLimits: long texts are cut to Slack's limits (header 150, section
// 3000 characters).
func TestSizeLimits(t *testing.T) {
	srv, got := hookServer(t, http.StatusOK, "", "ok")
	a := notifytest.Firing()
	a.Labels = labels.NewBuilder(a.Labels).Set("service", strings.Repeat("Long", 60)).Labels()
	a.Annotations = map[string]string{"summary": strings.Repeat("é", 5000)}
	_, err := newWebhookNotifier(t, srv.URL).Notify(groupCtx(), a)
	require.NoError(t, err)
	var msg struct {
		Blocks []struct {
			Type string `json:"type"`
			Text struct {
				Text string `json:"text"`
			} `json:"text"`
		} `json:"blocks"`
	}
	require.NoError(t, json.Unmarshal(<-got, &msg))
	require.Equal(t, "header", msg.Blocks[0].Type)
	require.Equal(t, 150, utf8.RuneCountInString(msg.Blocks[0].Text.Text))
	require.Equal(t, 3000, utf8.RuneCountInString(msg.Blocks[1].Text.Text))
	require.True(t, strings.HasSuffix(msg.Blocks[1].Text.Text, "…"))
}

// mapState is an in-memory notify.State.
type mapState map[string][]byte

func (m mapState) Get(k string) ([]byte, bool)  { v, ok := m[k]; return v, ok }
func (m mapState) Put(k string, v []byte) error { m[k] = v; return nil }
func (m mapState) Delete(k string) error        { delete(m, k); return nil }

// TestBotMessageSurvivesRestart: a new notifier (a restarted agent) with
// the same state updates the message the old one posted.
func TestBotMessageSurvivesRestart(t *testing.T) {
	api := &fakeAPI{}
	srv := httptest.NewServer(api)
	defer srv.Close()
	st := mapState{}
	first := botNotifier(t, srv.URL)
	first.UseState(st)
	_, err := first.Notify(groupCtx(), notifytest.Firing())
	require.NoError(t, err)

	second := botNotifier(t, srv.URL)
	second.UseState(st)
	_, err = second.Notify(groupCtx(), notifytest.Resolved())
	require.NoError(t, err)
	require.Empty(t, st, "a resolved group's message is forgotten")
	api.mu.Lock()
	defer api.mu.Unlock()
	require.Equal(t, []string{"/api/chat.postMessage", "/api/chat.update"}, api.paths)
}

// TestAutoEvidence: an auto alert says what the detector found unusual:
// its summary in words (the explanation's, when the rule has no summary
// annotation) and the evidence beside the score.
func TestAutoEvidence(t *testing.T) {
	srv, got := hookServer(t, http.StatusOK, "", "ok")
	a := notifytest.Firing()
	a.Labels = labels.FromStrings("alertname", "QueueDepth", "pool", "io", "severity", "page")
	a.Annotations = nil
	a.Value = 0
	a.Explanation = &model.Explanation{Detector: "auto", Kind: "dip", Score: 0.71, Direction: "down", Evidence: "changes",
		Signals: []model.Signal{{Name: "value", Current: 0, Expected: 0, Lower: 0, Upper: 4}},
		Summary: "QueueDepth: value 0, expected 0 (normal 0 to 4); it moves from sample to sample far more than usual"}
	_, err := newWebhookNotifier(t, srv.URL+"/services/"+secret).Notify(groupCtx(), a)
	require.NoError(t, err)
	body := string(<-got)
	require.Contains(t, body, "it moves from sample to sample far more than usual")
	require.Contains(t, body, "score 0.71 (changes)")
}
