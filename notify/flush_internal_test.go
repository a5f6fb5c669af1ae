package notify

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/require"

	"github.com/seismo-agent/seismo/internal/model"
)

type nopNotifier struct{}

func (nopNotifier) Notify(context.Context, ...*model.Alert) (bool, error) { return false, nil }

// TestReplacedGroupDoesNotFlush checks that a group whose context is
// cancelled (a reload replaced it) queues nothing: its alerts are stale,
// and flushing them re-announced resolved alerts as firing.
func TestReplacedGroupDoesNotFlush(t *testing.T) {
	d, err := New(Options{Logger: slog.New(slog.DiscardHandler), Metrics: metrics.NewSet(), DataDir: t.TempDir()})
	require.NoError(t, err)
	defer d.Close()
	route, err := CompileRoute(RouteConfig{Receiver: "r", GroupBy: []string{GroupByAll}, GroupInterval: time.Second, RepeatInterval: time.Hour})
	require.NoError(t, err)
	require.NoError(t, d.ApplyConfig(&Config{Route: route, QueueCapacity: 10,
		Receivers: map[string][]Integration{"r": {{Type: "nop", Notifier: nopNotifier{}, SendResolved: true}}}}))
	d.Notify(context.Background(), &model.Alert{Labels: labels.FromStrings("alertname", "A"), State: model.StateFiring, StartsAt: time.Now()})
	d.mu.Lock()
	require.Len(t, d.groups, 1)
	var ag *aggrGroup
	for _, g := range d.groups {
		ag = g
	}
	d.mu.Unlock()

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	d.flush(cancelled, ag)
	require.Equal(t, 0, d.Pending(), "a replaced group queued a notification")
	d.flush(context.Background(), ag)
	require.Equal(t, 1, d.Pending())
}
