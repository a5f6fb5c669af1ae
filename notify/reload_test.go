package notify_test

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/stretchr/testify/require"

	"github.com/seismo-agent/seismo/notify"
)

func config(t *testing.T, receivers map[string]notify.Notifier) *notify.Config {
	t.Helper()
	rc := notify.DefaultRoute()
	rc.Receiver = "team"
	route, err := notify.CompileRoute(rc)
	require.NoError(t, err)
	cfg := &notify.Config{Route: route, Receivers: map[string][]notify.Integration{}, QueueCapacity: 10,
		Backoff: notify.Backoff{Initial: time.Second, Max: time.Minute}}
	for name, n := range receivers {
		cfg.Receivers[name] = []notify.Integration{{Type: "fake", Notifier: n, SendResolved: true}}
	}
	return cfg
}

// TestReloadKeepsState: a reload with an equivalent config re-routes the
// held alerts without notifying them again.
func TestReloadKeepsState(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fake{start: time.Now()}
		d := newDispatcher(t, dispatcherOpts{}, f)
		defer d.Close()
		stop := run(t, d)
		script(t, d, f.start, []step{{at: 0, fire: []string{"Latency/a"}}}, time.Minute)
		require.NoError(t, d.ApplyConfig(config(t, map[string]notify.Notifier{"team": f})))
		time.Sleep(time.Hour)
		synctest.Wait()
		stop()
		require.Equal(t, []string{`00:00:30 {alertname="Latency"}: a=firing`}, f.lines())
	})
}

// TestReloadDropsRemovedReceiver: pending notifications of a receiver that
// the new config no longer has are dropped with a metric, and the
// receiver's own series are deleted.
func TestReloadDropsRemovedReceiver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		down := &fake{fail: func(int) (bool, error) { return true, errors.New("down") }}
		set := metrics.NewSet()
		d := newDispatcher(t, dispatcherOpts{set: set}, down)
		defer d.Close()
		stop := run(t, d)
		script(t, d, time.Now(), []step{{at: 0, fire: []string{"Latency/a"}}}, time.Minute)
		require.Equal(t, 1, d.Pending())
		rc := notify.DefaultRoute()
		rc.Receiver = "other"
		route, err := notify.CompileRoute(rc)
		require.NoError(t, err)
		cfg := config(t, map[string]notify.Notifier{"other": &fake{}})
		cfg.Route = route
		require.NoError(t, d.ApplyConfig(cfg))
		time.Sleep(5 * time.Minute)
		synctest.Wait()
		stop()
		require.Zero(t, d.Pending())
		require.Equal(t, uint64(1), counter(set, `seismo_notify_notifications_dropped_total{reason="receiver_removed"}`))
		for _, name := range set.ListMetricNames() {
			require.NotContains(t, name, `receiver="team"`, "metrics of a removed receiver are deleted")
		}
	})
}
