package webhook_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seismo-agent/seismo/internal/configutil"
	"github.com/seismo-agent/seismo/internal/model"
	"github.com/seismo-agent/seismo/notify"
	"github.com/seismo-agent/seismo/notify/draft"
	"github.com/seismo-agent/seismo/notify/internal/notifytest"
	"github.com/seismo-agent/seismo/notify/webhook"
)

const secretPath = "/hooks/SECRET-TOKEN-123"

type captured struct {
	header http.Header
	body   []byte
}

// server answers with status (and Retry-After when set) and records requests.
func server(t *testing.T, status int, retryAfter string) (*httptest.Server, chan captured) {
	t.Helper()
	got := make(chan captured, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- captured{header: r.Header.Clone(), body: b}
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		w.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)
	return srv, got
}

func newNotifier(url string, mod func(*webhook.Config)) *webhook.Notifier {
	cfg := webhook.DefaultConfig()
	cfg.URL = configutil.Secret(url)
	if mod != nil {
		mod(&cfg)
	}
	return webhook.New(cfg, nil, "http://seismo.example:9797", func() time.Time { return notifytest.T0 })
}

func groupCtx() context.Context {
	return notify.WithGroup(context.Background(), notify.Group{Key: `0:{service="storefront"}`, Receiver: "team", Labels: map[string]string{"service": "storefront"}})
}

func TestGolden(t *testing.T) {
	tests := []struct {
		name   string
		alerts []*model.Alert
		mod    func(*webhook.Config)
	}{
		{"firing", []*model.Alert{notifytest.Firing(), notifytest.Storm()}, nil},
		{"resolved", []*model.Alert{notifytest.Resolved()}, nil},
		{"max_alerts", []*model.Alert{notifytest.Firing(), notifytest.Storm()}, func(c *webhook.Config) { c.MaxAlerts = 1 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, got := server(t, http.StatusOK, "")
			retry, err := newNotifier(srv.URL+secretPath, tt.mod).Notify(groupCtx(), tt.alerts...)
			require.NoError(t, err)
			require.False(t, retry)
			c := <-got
			require.Equal(t, "application/json", c.header.Get("Content-Type"))
			notifytest.Golden(t, tt.name+".json", c.body)
		})
	}
}

func TestDraftGolden(t *testing.T) {
	srv, got := server(t, http.StatusOK, "")
	d := &draft.Draft{IncidentID: "20260314-152300-0abc1234", Seq: 1, Phase: draft.PhaseInvestigating, Component: "Storefront",
		Impact: draft.ImpactPartial, Title: "Storefront: a partial outage (Investigating)", Text: "We are investigating.", Markdown: "**Investigating**", CreatedAt: notifytest.T0}
	_, err := newNotifier(srv.URL, nil).NotifyDraft(groupCtx(), d)
	require.NoError(t, err)
	notifytest.Golden(t, "draft.json", (<-got).body)
}

func TestSignatureAndHeaders(t *testing.T) {
	srv, got := server(t, http.StatusOK, "")
	n := newNotifier(srv.URL, func(c *webhook.Config) {
		c.HMACSecret = "s3cr3t"
		c.Headers = map[string]configutil.Secret{"Authorization": "Bearer tok", "X-Team": "web"}
	})
	_, err := n.Notify(groupCtx(), notifytest.Firing())
	require.NoError(t, err)
	c := <-got
	ts := c.header.Get(webhook.TimestampHeader)
	require.Equal(t, fmt.Sprint(notifytest.T0.Unix()), ts)
	sig := c.header.Get(webhook.DefaultSignatureHeader)
	require.True(t, webhook.Verify([]byte("s3cr3t"), sig, ts, c.body, notifytest.T0, 5*time.Minute))
	require.False(t, webhook.Verify([]byte("wrong"), sig, ts, c.body, notifytest.T0, 5*time.Minute), "wrong secret")
	require.False(t, webhook.Verify([]byte("s3cr3t"), sig, ts, append(c.body, ' '), notifytest.T0, 5*time.Minute), "changed body")
	require.False(t, webhook.Verify([]byte("s3cr3t"), sig, ts, c.body, notifytest.T0.Add(time.Hour), 5*time.Minute), "replayed later")
	require.Equal(t, "Bearer tok", c.header.Get("Authorization"))
	require.Equal(t, "web", c.header.Get("X-Team"))
}

func TestRetryMatrix(t *testing.T) {
	tests := []struct {
		status     int
		retryAfter string
		wantRetry  bool
		wantAfter  time.Duration
	}{
		{status: 301}, {status: 400}, {status: 401}, {status: 404}, {status: 422},
		{status: 408, wantRetry: true},
		{status: 429, wantRetry: true},
		{status: 429, retryAfter: "30", wantRetry: true, wantAfter: 30 * time.Second},
		{status: 500, wantRetry: true}, {status: 502, wantRetry: true}, {status: 503, wantRetry: true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d%s", tt.status, tt.retryAfter), func(t *testing.T) {
			srv, _ := server(t, tt.status, tt.retryAfter)
			n := newNotifier(srv.URL+secretPath, nil)
			n2 := webhook.New(webhook.Config{URL: configutil.Secret(srv.URL + secretPath), Timeout: time.Second}, &http.Client{
				CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}, "", nil)
			for _, n := range []*webhook.Notifier{n, n2} {
				retry, err := n.Notify(groupCtx(), notifytest.Firing())
				if tt.status == 301 && n != n2 {
					continue // the default client follows redirects
				}
				require.Error(t, err)
				require.Equal(t, tt.wantRetry, retry)
				require.NotContains(t, err.Error(), "SECRET")
				after, _ := notify.RetryAfterOf(err)
				require.Equal(t, tt.wantAfter, after)
			}
		})
	}
	t.Run("network error", func(t *testing.T) {
		srv, _ := server(t, 200, "")
		srv.Close()
		retry, err := newNotifier(srv.URL+secretPath, nil).Notify(groupCtx(), notifytest.Firing())
		require.Error(t, err)
		require.True(t, retry)
		require.NotContains(t, err.Error(), "SECRET")
	})
}

func TestContextCancel(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-release }))
	defer srv.Close()
	defer close(release)
	ctx, cancel := context.WithCancel(groupCtx())
	done := make(chan error, 1)
	go func() {
		_, err := newNotifier(srv.URL+secretPath, nil).Notify(ctx, notifytest.Firing())
		done <- err
	}()
	cancel()
	err := <-done // a hang here fails the test by its timeout
	require.True(t, errors.Is(err, context.Canceled), "%v", err)
	require.NotContains(t, err.Error(), "SECRET")
}

func TestValidate(t *testing.T) {
	cfg := webhook.Config{URL: "ftp://x/SECRET", MaxAlerts: -1, Headers: map[string]configutil.Secret{"Bad Header": "x"}}
	err := cfg.Validate()
	require.Error(t, err)
	for _, want := range []string{"url: want an absolute http(s) URL", "max_alerts: must not be negative", "timeout: must be positive", `headers: bad header name "Bad Header"`} {
		require.Contains(t, err.Error(), want)
	}
	require.NotContains(t, err.Error(), "SECRET")
}
