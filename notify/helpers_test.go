package notify_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/prometheus/alertmanager/template"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/require"

	"github.com/seismo-agent/seismo/internal/model"
	"github.com/seismo-agent/seismo/notify"
	"github.com/seismo-agent/seismo/notify/draft"
	"github.com/seismo-agent/seismo/notify/templates"
)

// fake is a Notifier with function fields; it records every successful
// delivery as one line.
type fake struct {
	mu      sync.Mutex
	fail    func(n int) (bool, error) // n counts attempts from 1
	calls   int
	got     []string
	drafts  []*draft.Draft
	attempt []time.Time
	start   time.Time
}

func (f *fake) Notify(ctx context.Context, alerts ...*model.Alert) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	f.attempt = append(f.attempt, time.Now())
	if f.fail != nil {
		if retry, err := f.fail(f.calls); err != nil {
			return retry, err
		}
	}
	line := describe(notify.GroupFrom(ctx), alerts)
	if !f.start.IsZero() {
		line = fmtOffset(time.Since(f.start)) + " " + line
	}
	f.got = append(f.got, line)
	return false, nil
}

func (f *fake) NotifyDraft(_ context.Context, d *draft.Draft) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.drafts = append(f.drafts, d)
	return false, nil
}

func (f *fake) lines() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.got)
}

// describe renders a notification as "group: A1=firing A2=resolved".
func describe(g notify.Group, alerts []*model.Alert) string {
	var parts []string
	for _, a := range alerts {
		parts = append(parts, fmt.Sprintf("%s=%s", a.Labels.Get("instance"), a.State))
	}
	return fmt.Sprintf("%s: %s", labelsOf(g.Labels), strings.Join(parts, " "))
}

func labelsOf(m map[string]string) string {
	return labels.FromMap(m).String()
}

func firing(name, instance string, startsAt time.Time) *model.Alert {
	return &model.Alert{
		Labels:   labels.FromStrings("alertname", name, "instance", instance, "severity", "page"),
		State:    model.StateFiring,
		StartsAt: startsAt,
		Value:    1,
	}
}

func resolved(a *model.Alert, at time.Time) *model.Alert {
	c := *a
	c.State = model.StateResolved
	c.EndsAt = at
	return &c
}

type dispatcherOpts struct {
	dir      string
	route    notify.RouteConfig
	capacity int
	drafts   bool
	set      *metrics.Set
	logger   *slog.Logger
}

func newDispatcher(t testing.TB, o dispatcherOpts, recv notify.Notifier) *notify.Dispatcher {
	t.Helper()
	if o.dir == "" {
		o.dir = t.TempDir()
	}
	if o.route.Receiver == "" {
		o.route = notify.DefaultRoute()
		o.route.Receiver = "team"
	}
	if o.capacity == 0 {
		o.capacity = 100
	}
	if o.set == nil {
		o.set = metrics.NewSet()
	}
	if o.logger == nil {
		o.logger = slog.New(slog.DiscardHandler)
	}
	d, err := notify.New(notify.Options{Logger: o.logger, Metrics: o.set, DataDir: o.dir,
		Rand: func() float64 { return 0 }})
	require.NoError(t, err)
	route, err := notify.CompileRoute(o.route)
	require.NoError(t, err)
	cfg := &notify.Config{
		Route:         route,
		Receivers:     map[string][]notify.Integration{"team": {{Type: "fake", Notifier: recv, SendResolved: true}}},
		QueueCapacity: o.capacity,
		Backoff:       notify.Backoff{Initial: time.Second, Max: time.Minute},
	}
	if o.drafts {
		cfg.Drafts = draft.NewRenderer(mustTemplates(t), time.UTC)
		cfg.DraftReceivers = []string{"team"}
		cfg.DraftHold = 10 * time.Minute
		cfg.DraftKeep = 10
	}
	require.NoError(t, d.ApplyConfig(cfg))
	return d
}

// run starts d.Run and returns a stop function that waits for it.
func run(t *testing.T, d *notify.Dispatcher) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	return func() {
		cancel()
		require.NoError(t, <-done)
	}
}

func fmtOffset(d time.Duration) string {
	d = d.Round(time.Second)
	return fmt.Sprintf("%02d:%02d:%02d", int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60)
}

func mustTemplates(t testing.TB) *template.Template {
	t.Helper()
	tm, err := templates.Load(nil)
	require.NoError(t, err)
	return tm
}

// step is one scripted change: at offset, fire or resolve "Name/instance".
type step struct {
	at      time.Duration
	fire    []string
	resolve []string
}

// script replays steps against d (under synctest: time is virtual) and then
// lets time run until end.
func script(t *testing.T, d *notify.Dispatcher, t0 time.Time, steps []step, end time.Duration) {
	t.Helper()
	active := map[string]*model.Alert{}
	for _, s := range steps {
		time.Sleep(time.Until(t0.Add(s.at)))
		var batch []*model.Alert
		for _, id := range s.fire {
			name, inst, _ := strings.Cut(id, "/")
			a, ok := active[id]
			if !ok {
				a = firing(name, inst, time.Now())
				active[id] = a
			}
			batch = append(batch, a)
		}
		for _, id := range s.resolve {
			a := active[id]
			require.NotNil(t, a, "resolve of %s before it fired", id)
			batch = append(batch, resolved(a, time.Now()))
			delete(active, id)
		}
		d.Notify(context.Background(), batch...)
	}
	time.Sleep(time.Until(t0.Add(end)))
}

func pairs(kv []string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

func labelsFrom(kv []string) labels.Labels { return labels.FromStrings(kv...) }
