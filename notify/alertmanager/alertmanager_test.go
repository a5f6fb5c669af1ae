package alertmanager_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seismo-agent/seismo/internal/configutil"
	"github.com/seismo-agent/seismo/internal/model"
	"github.com/seismo-agent/seismo/notify/alertmanager"
	"github.com/seismo-agent/seismo/notify/internal/notifytest"
)

func recorder(t *testing.T, status int) (*httptest.Server, chan []byte) {
	t.Helper()
	got := make(chan []byte, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/api/v2/alerts") || r.Method != http.MethodPost {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		b, _ := io.ReadAll(r.Body)
		got <- b
		w.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)
	return srv, got
}

func newNotifier(now time.Time, urls ...string) *alertmanager.Notifier {
	cfg := alertmanager.DefaultConfig()
	for _, u := range urls {
		cfg.URLs = append(cfg.URLs, configutil.Secret(u))
	}
	return alertmanager.New(cfg, nil, func() time.Time { return now })
}

// TestEveryURLGetsEveryAlert: an HA pair gets the same body; firing alerts
// carry endsAt ahead of now, resolved ones their resolve time.
func TestEveryURLGetsEveryAlert(t *testing.T) {
	a, gotA := recorder(t, http.StatusOK)
	b, gotB := recorder(t, http.StatusOK)
	now := notifytest.T0.Add(5 * time.Minute)
	retry, err := newNotifier(now, a.URL, b.URL+"/").Notify(context.Background(), notifytest.Storm(), notifytest.Resolved())
	require.NoError(t, err)
	require.False(t, retry)
	bodyA, bodyB := <-gotA, <-gotB
	require.Equal(t, bodyA, bodyB)
	notifytest.Golden(t, "alerts.json", bodyA)
	var alerts []alertmanager.Alert
	require.NoError(t, json.Unmarshal(bodyA, &alerts))
	require.Equal(t, now.Add(5*time.Minute), alerts[0].EndsAt)
	require.Equal(t, notifytest.T0.Add(19*time.Minute), alerts[1].EndsAt)
}

// TestRetryMatrix: with several Alertmanagers, the notification succeeds only
// when all accept it and is retried when any failure is retryable.
func TestRetryMatrix(t *testing.T) {
	tests := []struct {
		statuses  []int
		wantRetry bool
	}{
		{[]int{200, 500}, true},
		{[]int{200, 429}, true},
		{[]int{400, 200}, false},
		{[]int{400, 503}, true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.statuses), func(t *testing.T) {
			var urls []string
			for _, s := range tt.statuses {
				srv, _ := recorder(t, s)
				urls = append(urls, srv.URL+"/SECRET-PREFIX")
			}
			retry, err := newNotifier(notifytest.T0, urls...).Notify(context.Background(), notifytest.Firing())
			require.Error(t, err)
			require.Equal(t, tt.wantRetry, retry)
			require.NotContains(t, err.Error(), "SECRET")
		})
	}
}

func TestStatusClasses(t *testing.T) {
	tests := []struct {
		status    int
		wantRetry bool
		wantErr   bool
	}{
		{200, false, false}, {400, false, true}, {404, false, true}, {429, true, true}, {500, true, true}, {503, true, true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.status), func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(tt.status) }))
			defer srv.Close()
			retry, err := newNotifier(notifytest.T0, srv.URL+"/prefix-SECRET").Notify(context.Background(), notifytest.Firing())
			require.Equal(t, tt.wantRetry, retry)
			require.Equal(t, tt.wantErr, err != nil)
			if err != nil {
				require.NotContains(t, err.Error(), "SECRET")
			}
		})
	}
}

func TestContextCancel(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-release }))
	defer srv.Close()
	defer close(release)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := newNotifier(notifytest.T0, srv.URL).Notify(ctx, notifytest.Firing())
		done <- err
	}()
	cancel()
	require.True(t, errors.Is(<-done, context.Canceled))
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestRealAlertmanager pushes an alert to a real Alertmanager, sees it with
// its labels in /api/v2/alerts, resolves it and sees it go. Skipped when the
// binary is missing, except under CI=true.
func TestRealAlertmanager(t *testing.T) {
	const bin = "/usr/bin/prometheus-alertmanager"
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is required under CI=true: %v", bin, err)
		}
		t.Skipf("%s not installed", bin)
	}
	dir := t.TempDir()
	cfg := "route:\n  receiver: \"null\"\nreceivers:\n  - name: \"null\"\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "am.yml"), []byte(cfg), 0o600))
	port := freePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	cmd := exec.Command(bin, fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port), "--cluster.listen-address=",
		"--storage.path="+dir, "--config.file="+filepath.Join(dir, "am.yml"))
	out, err := os.Create(filepath.Join(dir, "am.log"))
	require.NoError(t, err)
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(dir, "am.log"))
			t.Logf("alertmanager log:\n%s", b)
		}
	})
	require.Eventually(t, func() bool {
		resp, err := http.Get(base + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 30*time.Second, 50*time.Millisecond, "alertmanager did not become ready")

	n := alertmanager.New(alertmanager.Config{URLs: []configutil.Secret{configutil.Secret(base)}, EndsAtAhead: 5 * time.Minute, Timeout: 5 * time.Second}, nil, nil)
	a := notifytest.Storm()
	a.StartsAt = time.Now().Add(-time.Minute)
	retry, err := n.Notify(context.Background(), a)
	require.NoError(t, err, "retry=%v", retry)

	type amAlert struct {
		Labels map[string]string `json:"labels"`
		Status struct {
			State string `json:"state"`
		} `json:"status"`
	}
	list := func() []amAlert {
		resp, err := http.Get(base + "/api/v2/alerts")
		require.NoError(t, err)
		defer resp.Body.Close()
		var out []amAlert
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
		return out
	}
	require.Eventually(t, func() bool { return len(list()) == 1 }, 10*time.Second, 20*time.Millisecond)
	got := list()[0]
	require.Equal(t, a.Labels.Map(), got.Labels)
	require.Equal(t, "active", got.Status.State)

	r := *a
	r.State, r.EndsAt = model.StateResolved, time.Now()
	_, err = n.Notify(context.Background(), &r)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(list()) == 0 }, 10*time.Second, 20*time.Millisecond, "the alert did not resolve")
}
