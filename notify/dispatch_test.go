package notify_test

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/stretchr/testify/require"

	"github.com/seismo-agent/seismo/internal/model"
	"github.com/seismo-agent/seismo/notify"
)

// TestTimings checks Alertmanager's group_wait / group_interval /
// repeat_interval semantics with the default timings (30s, 5m, 4h).
func TestTimings(t *testing.T) {
	tests := []struct {
		name  string
		steps []step
		end   time.Duration
		want  []string
	}{
		{
			name:  "first notification waits group_wait",
			steps: []step{{at: 0, fire: []string{"Latency/a"}}},
			end:   time.Minute,
			want:  []string{`00:00:30 {alertname="Latency"}: a=firing`},
		},
		{
			name: "alerts arriving during group_wait share the first notification",
			steps: []step{
				{at: 0, fire: []string{"Latency/a"}},
				{at: 10 * time.Second, fire: []string{"Latency/b"}},
			},
			end:  time.Minute,
			want: []string{`00:00:30 {alertname="Latency"}: a=firing b=firing`},
		},
		{
			name: "a new alert after the first flush waits for the next group_interval tick",
			steps: []step{
				{at: 0, fire: []string{"Latency/a"}},
				{at: time.Minute, fire: []string{"Latency/b"}},
			},
			end: 20 * time.Minute,
			want: []string{
				`00:00:30 {alertname="Latency"}: a=firing`,
				`00:05:30 {alertname="Latency"}: a=firing b=firing`,
			},
		},
		{
			name: "re-sent alerts with nothing new are not notified again before repeat_interval",
			steps: []step{
				{at: 0, fire: []string{"Latency/a"}},
				{at: 2 * time.Minute, fire: []string{"Latency/a"}},
				{at: 3 * time.Hour, fire: []string{"Latency/a"}},
			},
			end: 4*time.Hour + 6*time.Minute,
			want: []string{
				`00:00:30 {alertname="Latency"}: a=firing`,
				`04:00:30 {alertname="Latency"}: a=firing`,
			},
		},
		{
			name: "a resolve is sent at the next tick, then the group is gone",
			steps: []step{
				{at: 0, fire: []string{"Latency/a"}},
				{at: 7 * time.Minute, resolve: []string{"Latency/a"}},
				{at: 30 * time.Minute, fire: []string{"Latency/b"}},
			},
			end: 40 * time.Minute,
			want: []string{
				`00:00:30 {alertname="Latency"}: a=firing`,
				`00:10:30 {alertname="Latency"}: a=resolved`,
				`00:30:30 {alertname="Latency"}: b=firing`,
			},
		},
		{
			name: "the worked example in docs/notify.md",
			steps: []step{
				{at: 0, fire: []string{"Latency/a"}},
				{at: 10 * time.Second, fire: []string{"Latency/b"}},
				{at: 2 * time.Minute, fire: []string{"Latency/c"}},
				{at: time.Hour, resolve: []string{"Latency/a"}},
			},
			end: 5*time.Hour + time.Minute,
			want: []string{
				`00:00:30 {alertname="Latency"}: a=firing b=firing`,
				`00:05:30 {alertname="Latency"}: a=firing b=firing c=firing`,
				`01:00:30 {alertname="Latency"}: a=resolved b=firing c=firing`,
				`05:00:30 {alertname="Latency"}: b=firing c=firing`,
			},
		},
		{
			name: "groups by alertname are independent",
			steps: []step{
				{at: 0, fire: []string{"Latency/a"}},
				{at: 20 * time.Second, fire: []string{"Errors/a"}},
			},
			end: time.Minute,
			want: []string{
				`00:00:30 {alertname="Latency"}: a=firing`,
				`00:00:50 {alertname="Errors"}: a=firing`,
			},
		},
		{
			name: "an alert that fired and resolved within group_wait is never sent",
			steps: []step{
				{at: 0, fire: []string{"Latency/a"}},
				{at: 10 * time.Second, resolve: []string{"Latency/a"}},
			},
			end:  time.Hour,
			want: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := &fake{start: time.Now()}
				d := newDispatcher(t, dispatcherOpts{}, f)
				defer d.Close()
				stop := run(t, d)
				script(t, d, f.start, tt.steps, tt.end)
				synctest.Wait()
				stop()
				require.Equal(t, tt.want, f.lines())
			})
		})
	}
}

func TestOldAlertSkipsGroupWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fake{start: time.Now()}
		d := newDispatcher(t, dispatcherOpts{}, f)
		defer d.Close()
		stop := run(t, d)
		d.Notify(t.Context(), firing("Latency", "a", time.Now().Add(-time.Hour)))
		synctest.Wait()
		stop()
		require.Equal(t, []string{`00:00:00 {alertname="Latency"}: a=firing`}, f.lines())
	})
}

// outageSteps fire and resolve alerts in three groups over an hour. Groups
// start at different seconds so that their ticks never coincide and the
// delivery order is fully determined.
var outageSteps = []step{
	{at: 0, fire: []string{"Latency/a"}},
	{at: time.Second, fire: []string{"Errors/a"}},
	{at: 2 * time.Minute, fire: []string{"Latency/b"}},
	{at: 8 * time.Minute, resolve: []string{"Errors/a"}},
	{at: 9 * time.Minute, fire: []string{"Queue/a"}},
	{at: 16 * time.Minute, resolve: []string{"Latency/a"}},
	{at: 21 * time.Minute, resolve: []string{"Latency/b", "Queue/a"}},
	{at: 40 * time.Minute, fire: []string{"Latency/c"}},
}

// TestOutage: the receiver is down for 25 minutes while alerts fire and
// resolve; afterwards every notification arrives exactly once and in the
// order they were made, the same sequence as with no outage.
func TestOutage(t *testing.T) {
	var want []string
	synctest.Test(t, func(t *testing.T) {
		f := &fake{}
		d := newDispatcher(t, dispatcherOpts{}, f)
		defer d.Close()
		stop := run(t, d)
		script(t, d, time.Now(), outageSteps, time.Hour)
		stop()
		want = f.lines()
	})
	require.Len(t, want, 9, "%q", want)

	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		f := &fake{fail: func(int) (bool, error) {
			if time.Since(t0) < 25*time.Minute {
				return true, errors.New("connection refused")
			}
			return false, nil
		}}
		set := metrics.NewSet()
		d := newDispatcher(t, dispatcherOpts{set: set}, f)
		defer d.Close()
		stop := run(t, d)
		script(t, d, t0, outageSteps, 2*time.Hour)
		stop()
		require.Equal(t, want, f.lines())
		require.Zero(t, d.Pending())
		// Only Latency/c is still firing: resolved groups leave the
		// notification log.
		require.Equal(t, 1.0, set.GetOrCreateGauge("seismo_notify_log_entries", nil).Get())
		require.Greater(t, counter(set, `seismo_notify_notification_retries_total{integration="fake",receiver="team"}`), uint64(0))
		require.Equal(t, uint64(len(want)), counter(set, `seismo_notify_notifications_total{integration="fake",receiver="team"}`))
	})
}

// TestOutageRestart stops the agent cleanly in the middle of an outage and
// starts a new one on the same data directory: pending notifications are
// delivered once, and alerts the rules engine sends again are not repeated.
func TestOutageRestart(t *testing.T) {
	var want []string
	synctest.Test(t, func(t *testing.T) {
		f := &fake{}
		d := newDispatcher(t, dispatcherOpts{}, f)
		defer d.Close()
		stop := run(t, d)
		script(t, d, time.Now(), outageSteps[:5], 12*time.Minute)
		stop()
		want = f.lines()
	})
	require.NotEmpty(t, want)

	dir := t.TempDir()
	var got []string
	synctest.Test(t, func(t *testing.T) {
		down := &fake{fail: func(int) (bool, error) { return true, errors.New("503") }}
		d := newDispatcher(t, dispatcherOpts{dir: dir}, down)
		stop := run(t, d)
		script(t, d, time.Now(), outageSteps[:5], 12*time.Minute)
		stop()
		require.NoError(t, d.Close())
		require.Empty(t, down.lines())
		require.Equal(t, len(want), d.Pending())

		up := &fake{}
		d2 := newDispatcher(t, dispatcherOpts{dir: dir}, up)
		defer d2.Close()
		stop2 := run(t, d2)
		// The rules engine re-sends what is still firing after a restart.
		d2.Notify(t.Context(), firing("Latency", "a", time.Now().Add(-12*time.Minute)))
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		stop2()
		got = up.lines()
	})
	require.Equal(t, want, got)
}

func TestQueueOverflowDropsOldest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		f := &fake{fail: func(int) (bool, error) {
			if time.Since(t0) < 10*time.Minute {
				return true, errors.New("down")
			}
			return false, nil
		}}
		set := metrics.NewSet()
		d := newDispatcher(t, dispatcherOpts{capacity: 2, set: set}, f)
		defer d.Close()
		stop := run(t, d)
		script(t, d, t0, []step{
			{at: 0, fire: []string{"A/x"}},
			{at: time.Second, fire: []string{"B/x"}},
			{at: 2 * time.Second, fire: []string{"C/x"}},
			{at: 3 * time.Second, fire: []string{"D/x"}},
		}, 20*time.Minute)
		stop()
		// Capacity 2 keeps the two newest.
		require.Equal(t, []string{`{alertname="C"}: x=firing`, `{alertname="D"}: x=firing`}, f.lines())
		require.Equal(t, uint64(2), counter(set, `seismo_notify_notifications_failed_total{integration="fake",receiver="team",reason="queue_full"}`))
	})
}

func TestRetryPolicy(t *testing.T) {
	tests := []struct {
		name string
		fail func(n int) (bool, error)
		// wantGaps are the waits between attempts.
		wantGaps  []time.Duration
		delivered int
		reason    string
	}{
		{
			name:      "exponential back-off (jitter at its minimum: half)",
			fail:      failFirst(3, true, errors.New("503")),
			wantGaps:  []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second},
			delivered: 1,
			reason:    "transient",
		},
		{
			name:      "Retry-After is honoured",
			fail:      failFirst(1, true, notify.RetryAfter(errors.New("429"), 42*time.Second)),
			wantGaps:  []time.Duration{42 * time.Second},
			delivered: 1,
			reason:    "transient",
		},
		{
			name:      "permanent failure is not retried",
			fail:      failFirst(1, false, errors.New("400 bad request")),
			wantGaps:  nil,
			delivered: 0,
			reason:    "permanent",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := &fake{fail: tt.fail}
				set := metrics.NewSet()
				d := newDispatcher(t, dispatcherOpts{set: set}, f)
				defer d.Close()
				stop := run(t, d)
				d.Notify(t.Context(), firing("Latency", "a", time.Now().Add(-time.Hour)))
				time.Sleep(time.Hour)
				stop()
				var gaps []time.Duration
				for i := 1; i < len(f.attempt); i++ {
					gaps = append(gaps, f.attempt[i].Sub(f.attempt[i-1]))
				}
				require.Equal(t, tt.wantGaps, gaps)
				require.Len(t, f.lines(), tt.delivered)
				require.Zero(t, d.Pending())
				require.Positive(t, counter(set, `seismo_notify_notifications_failed_total{integration="fake",receiver="team",reason="`+tt.reason+`"}`))
			})
		})
	}
}

func failFirst(n int, retry bool, err error) func(int) (bool, error) {
	return func(call int) (bool, error) {
		if call <= n {
			return retry, err
		}
		return false, nil
	}
}

func counter(set *metrics.Set, name string) uint64 {
	return set.GetOrCreateCounter(name).Get()
}

func TestRouting(t *testing.T) {
	route := notify.RouteConfig{
		Receiver: "default",
		GroupBy:  []string{"alertname"},
		Routes: []notify.RouteConfig{
			{Receiver: "db", Matchers: []string{`team="db"`}},
			{Receiver: "pager", Matchers: []string{`severity=~"page|critical"`}, Continue: true,
				Routes: []notify.RouteConfig{{Receiver: "pager-eu", Matchers: []string{`region="eu"`}}}},
			{Receiver: "web", Matchers: []string{`team="web"`}},
		},
	}
	r, err := notify.CompileRoute(route)
	require.NoError(t, err)
	tests := []struct {
		labels []string
		want   []string
	}{
		{[]string{"team", "db", "severity", "page"}, []string{"db"}},
		{[]string{"team", "web", "severity", "page"}, []string{"pager", "web"}},
		{[]string{"team", "web", "severity", "page", "region", "eu"}, []string{"pager-eu", "web"}},
		{[]string{"team", "ops"}, []string{"default"}},
		{[]string{"team", "web"}, []string{"web"}},
	}
	for _, tt := range tests {
		t.Run(labelsOf(pairs(tt.labels)), func(t *testing.T) {
			var got []string
			for _, m := range r.Match(labelsFrom(tt.labels)) {
				got = append(got, m.Receiver)
			}
			require.Equal(t, tt.want, got)
		})
	}
}

func TestRouteValidate(t *testing.T) {
	rc := notify.RouteConfig{
		Receiver: "nope", Matchers: []string{`a="b"`},
		Routes: []notify.RouteConfig{{Matchers: []string{`bad matcher`}, GroupBy: []string{"...", "x"}, GroupWait: -1}},
	}
	err := rc.Validate([]string{"team"})
	require.Error(t, err)
	for _, want := range []string{
		`receiver: undefined receiver "nope"`,
		`matchers: the root route matches every alert`,
		`routes[0].matchers[0]: bad matcher`,
		`routes[0].group_by:`,
		`routes[0].group_wait: must not be negative`,
		`group_interval: must be positive`,
	} {
		require.Contains(t, err.Error(), want)
	}
}

// TestFlapping: an alert that starts flapping is notified once; its resolves
// while flapping are held back; the resolve after it settles is sent.
func TestFlapping(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fake{start: time.Now()}
		d := newDispatcher(t, dispatcherOpts{}, f)
		defer d.Close()
		stop := run(t, d)
		a := firing("Latency", "a", time.Now())
		d.Notify(t.Context(), a)
		time.Sleep(6 * time.Minute)
		for i := range 6 { // flapping: firing, resolved, firing, ...
			c := *a
			c.Flapping = true
			if i%2 == 1 {
				c.State, c.EndsAt = model.StateResolved, time.Now()
			}
			d.Notify(t.Context(), &c)
			time.Sleep(2 * time.Minute)
		}
		time.Sleep(30 * time.Minute)
		d.Notify(t.Context(), resolved(a, time.Now()))
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		stop()
		require.Equal(t, []string{
			`00:00:30 {alertname="Latency"}: a=firing`,
			`00:10:30 {alertname="Latency"}: a=firing`, // the flapping notice
			`00:50:30 {alertname="Latency"}: a=resolved`,
		}, f.lines())
	})
}

func TestRunBeforeApplyConfig(t *testing.T) {
	d, err := notify.New(notify.Options{DataDir: t.TempDir()})
	require.NoError(t, err)
	defer d.Close()
	stop := run(t, d)
	d.Notify(t.Context(), firing("Latency", "a", time.Now())) // dropped and counted, no panic
	stop()
}
