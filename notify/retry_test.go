package notify_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seismo-agent/seismo/notify"
)

func TestCheckResponse(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		status     int
		retryAfter string
		wantRetry  bool
		wantErr    bool
		wantAfter  time.Duration
	}{
		{status: 200}, {status: 202}, {status: 204},
		{status: 301, wantErr: true},
		{status: 400, wantErr: true},
		{status: 401, wantErr: true},
		{status: 403, wantErr: true},
		{status: 404, wantErr: true},
		{status: 408, wantErr: true, wantRetry: true},
		{status: 413, wantErr: true},
		{status: 429, wantErr: true, wantRetry: true},
		{status: 429, retryAfter: "17", wantErr: true, wantRetry: true, wantAfter: 17 * time.Second},
		{status: 429, retryAfter: now.Add(90 * time.Second).Format(http.TimeFormat), wantErr: true, wantRetry: true, wantAfter: 90 * time.Second},
		{status: 500, wantErr: true, wantRetry: true},
		{status: 502, wantErr: true, wantRetry: true},
		{status: 503, retryAfter: "3", wantErr: true, wantRetry: true, wantAfter: 3 * time.Second},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d%s", tt.status, tt.retryAfter), func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				if tt.retryAfter != "" {
					w.Header().Set("Retry-After", tt.retryAfter)
				}
				w.WriteHeader(tt.status)
				_, _ = w.Write([]byte("body text"))
			}))
			defer srv.Close()
			client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			resp, err := client.Get(srv.URL)
			require.NoError(t, err)
			retry, err := notify.CheckResponse(resp, now)
			require.Equal(t, tt.wantRetry, retry)
			if !tt.wantErr {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, fmt.Sprintf("unexpected status %d: body text", tt.status))
			after, ok := notify.RetryAfterOf(err)
			require.Equal(t, tt.wantAfter != 0, ok)
			require.Equal(t, tt.wantAfter, after)
		})
	}
}

func TestBackoff(t *testing.T) {
	tests := []struct {
		name string
		rand float64
		want []time.Duration
	}{
		{"jitter low", 0, []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second}},
		{"jitter high", 0.999999999, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := notify.Backoff{Initial: time.Second, Max: 10 * time.Second, Rand: func() float64 { return tt.rand }}
			var got []time.Duration
			for n := 1; n <= len(tt.want); n++ {
				got = append(got, b.Delay(n).Round(time.Millisecond))
			}
			require.Equal(t, tt.want, got)
		})
	}
}

func TestRedact(t *testing.T) {
	const hook = "https://hooks.slack.com/services/T000/B000/XXXXSECRET"
	tests := []struct {
		name string
		err  error
	}{
		{"plain", fmt.Errorf("post %s: connection refused", hook)},
		{"quoted url error", fmt.Errorf("Post %q: dial tcp: timeout", hook)},
		{"escaped", fmt.Errorf("bad url %s", "https%3A%2F%2Fhooks.slack.com%2Fservices%2FT000%2FB000%2FXXXXSECRET")},
		{"token", errors.New("auth xoxb-123-SECRET failed")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := notify.Redact(tt.err, hook, "xoxb-123-SECRET")
			require.NotContains(t, err.Error(), "SECRET")
			require.NotContains(t, err.Error(), "T000")
		})
	}
	t.Run("keeps retry-after and sentinels", func(t *testing.T) {
		err := notify.Redact(notify.RetryAfter(fmt.Errorf("x %s: %w", hook, http.ErrHandlerTimeout), 5*time.Second), hook)
		after, ok := notify.RetryAfterOf(err)
		require.True(t, ok)
		require.Equal(t, 5*time.Second, after)
		require.ErrorIs(t, err, http.ErrHandlerTimeout)
		require.NotContains(t, err.Error(), "SECRET")
	})
	require.Equal(t, "https://hooks.slack.com/<redacted>", notify.RedactURL(hook))
	require.Equal(t, "https://h:8080", notify.RedactURL("https://user:pw@h:8080"))
}

// logRecorder keeps the messages of log records.
type logRecorder struct {
	mu   sync.Mutex
	msgs []string
}

func (l *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecorder) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	msg := r.Message
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "err" {
			msg += ": " + a.Value.String()
		}
		return true
	})
	l.msgs = append(l.msgs, msg)
	return nil
}
func (l *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logRecorder) WithGroup(string) slog.Handler      { return l }

// TestLogOnlyWhenErrorChanges: a failing receiver logs once per distinct
// error, and once when it recovers.
func TestLogOnlyWhenErrorChanges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &logRecorder{}
		f := &fake{fail: func(n int) (bool, error) {
			switch {
			case n <= 4:
				return true, errors.New("503 unavailable")
			case n <= 7:
				return true, errors.New("connection refused")
			}
			return false, nil
		}}
		d := newDispatcher(t, dispatcherOpts{logger: slog.New(rec)}, f)
		defer d.Close()
		stop := run(t, d)
		d.Notify(t.Context(), firing("Latency", "a", time.Now().Add(-time.Hour)))
		time.Sleep(time.Hour)
		stop()
		rec.mu.Lock()
		defer rec.mu.Unlock()
		require.Equal(t, []string{
			"notification failed, will retry: 503 unavailable",
			"notification failed, will retry: connection refused",
			"notification delivered after failures",
		}, rec.msgs)
	})
}
