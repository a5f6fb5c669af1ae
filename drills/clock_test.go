package drills

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/require"

	"github.com/seismo-agent/seismo/datasource"
	"github.com/seismo-agent/seismo/internal/configutil"
	"github.com/seismo-agent/seismo/notify"
	"github.com/seismo-agent/seismo/notify/webhook"
	"github.com/seismo-agent/seismo/rules"
	"github.com/seismo-agent/seismo/store"
)

// fakeClock is the injected wall clock of the clock-jump drill.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

// TestDrillClockJumps wires the real store, rule manager, dispatcher and
// webhook notifier with an injected clock, as the agent does, and drives
// evaluation through the clock jumping back an hour and forward a day while
// alerts are firing: samples are stamped by the same clock, as scrapes are.
// Every alert must be notified firing while its signal is on — never
// resolved early — and resolved after it is switched off.
func TestDrillClockJumps(t *testing.T) {
	rc := newReceiver(t)
	dir := t.TempDir()
	rulesFile := filepath.Join(dir, "drill.rules.yml")
	writeFile(t, rulesFile, drillRules)

	clock := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	logger := slog.New(slog.DiscardHandler)
	st, err := store.New(store.Options{Config: store.Config{Retention: 48 * time.Hour, MaxSeries: 1000}, Now: clock.now})
	require.NoError(t, err)
	local, err := datasource.NewLocal(datasource.LocalOptions{Queryable: st, Logger: logger})
	require.NoError(t, err)

	d, err := notify.New(notify.Options{Logger: logger, Metrics: metrics.NewSet(), DataDir: dir, Now: clock.now})
	require.NoError(t, err)
	defer d.Close()
	route, err := notify.CompileRoute(notify.RouteConfig{Receiver: "hook", GroupBy: []string{notify.GroupByAll}, GroupInterval: time.Second, RepeatInterval: time.Hour})
	require.NoError(t, err)
	wc := webhook.DefaultConfig()
	wc.URL = configutil.Secret(rc.srv.URL)
	wh := webhook.New(wc, nil, "", clock.now)
	require.NoError(t, d.ApplyConfig(&notify.Config{
		Route:         route,
		Receivers:     map[string][]notify.Integration{"hook": {{Type: "webhook", Notifier: wh, SendResolved: true}}},
		QueueCapacity: 100,
		Backoff:       notify.Backoff{Initial: 10 * time.Millisecond, Max: 100 * time.Millisecond},
	}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	defer func() { cancel(); <-done }()

	m, err := rules.NewManager(rules.Options{Source: local, Notify: d.Notify, DataDir: dir, Logger: logger, Metrics: metrics.NewSet(), Now: clock.now})
	require.NoError(t, err)
	defer m.Close()
	cfg := rules.DefaultConfig()
	cfg.Files = []string{rulesFile}
	cfg.EvaluationInterval = 15 * time.Second
	cfg.FlapThreshold = 0
	cfg.WatchFiles = false
	cfg.Builtin.Enabled = false
	require.NoError(t, m.ApplyConfig(cfg))

	on := map[string]bool{}
	app := st.Appender()
	refs := map[string]store.SeriesRef{}
	step := func(ts time.Time) {
		clock.set(ts)
		for id, v := range on {
			x := 0.0
			if v {
				x = 1
			}
			refs[id], err = app.Append(refs[id], labels.FromStrings("__name__", "drill_signal", "id", id, "job", "drill"), ts.UnixMilli(), x)
			require.NoError(t, err)
		}
		app.Commit()
		require.NoError(t, m.EvalGroups(context.Background(), ts))
	}
	early := 0
	check := func() {
		for id, v := range on {
			if v && rc.has(id, "resolved") {
				early++
				t.Logf("%s resolved while its signal is on", id)
			}
		}
	}
	waitFor := func(id, status string) {
		require.Eventually(t, func() bool { return rc.has(id, status) }, 30*time.Second, 10*time.Millisecond, "%s never %s", id, status)
	}

	ts := clock.now()
	advance := func(n int) {
		for range n {
			ts = ts.Add(15 * time.Second)
			step(ts)
			check()
		}
	}
	on["a"] = true
	advance(2)
	waitFor("a", "firing")
	ts = ts.Add(-time.Hour) // the clock jumps back an hour
	on["b"] = true
	advance(8)
	waitFor("b", "firing")
	time.Sleep(2 * time.Second) // a group interval: an early resolve of a would arrive by now
	check()
	ts = ts.Add(25 * time.Hour) // and forward a day
	on["c"] = true
	advance(8)
	waitFor("c", "firing")
	time.Sleep(2 * time.Second)
	check()
	for id := range on {
		on[id] = false
	}
	advance(4)
	for id := range on {
		waitFor(id, "resolved")
	}
	for _, x := range rc.deliveries() {
		t.Logf("delivered %s %s startsAt %s", x.id, x.status, x.startsAt.Format(time.RFC3339))
	}
	tg := &target{on: on}
	lost, dup, figs := verdict(t, tg, rc)
	report(t, "clock-jumps", "clock jumped back 1h and forward 25h while 3 alerts fired, then they resolved", lost+early, dup,
		append(figs, fmt.Sprintf("%d resolved early", early))...)
}
