package collectors

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSchedulerTargets(t *testing.T) {
	good := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte("x 1\n"))
	}))
	defer good.Close()
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "nope", http.StatusInternalServerError)
	}))
	defer bad.Close()
	cfg := fixtureConfig(time.Second)
	cfg.Host.Enabled, cfg.Cgroup.Enabled = false, false
	cfg.ScrapeConfigs = []ScrapeConfig{{JobName: "svc", StaticConfigs: []StaticConfig{{
		Targets: []string{strings.TrimPrefix(good.URL, "http://"), strings.TrimPrefix(bad.URL, "http://")},
	}}}}
	s, err := New(Options{Config: cfg, Store: newTestStore(t)})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- s.Run(ctx) }()
	require.Eventually(t, func() bool {
		// One snapshot: checking health on one and the count on another
		// passes when the first is taken before the targets exist.
		ts := s.Targets()
		for _, x := range ts {
			if x.Health == "unknown" {
				return false
			}
		}
		return len(ts) == 2
	}, time.Minute, 50*time.Millisecond)
	byHealth := map[string]TargetStatus{}
	for _, x := range s.Targets() {
		require.Equal(t, "svc", x.Job)
		require.Equal(t, time.Second, x.Interval)
		require.False(t, x.LastScrape.IsZero())
		byHealth[x.Health] = x
	}
	require.Equal(t, strings.TrimPrefix(good.URL, "http://"), byHealth["up"].Instance)
	require.Empty(t, byHealth["up"].LastError)
	require.Equal(t, strings.TrimPrefix(bad.URL, "http://"), byHealth["down"].Instance)
	require.Contains(t, byHealth["down"].LastError, "500")
	cancel()
	require.NoError(t, <-done)
}
