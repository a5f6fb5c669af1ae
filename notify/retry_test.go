package notify_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
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
