package notify

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/VictoriaMetrics/metrics"
	bolt "go.etcd.io/bbolt"

	"github.com/seismo-agent/seismo/internal/model"
	"github.com/seismo-agent/seismo/notify/draft"
)

// Options are the dispatcher's dependencies.
type Options struct {
	Logger  *slog.Logger
	Metrics *metrics.Set
	// Now is the clock for timestamps; timers use the time package (so that
	// tests run under testing/synctest).
	Now func() time.Time
	// DataDir holds notify.db (outbox, notification log, silences) and
	// drafts/.
	DataDir string
	// Rand returns floats in [0, 1) for back-off jitter; nil uses math/rand.
	Rand func() float64
}

// Integration is one configured destination of a receiver.
type Integration struct {
	// Type is the integration's kind ("slack", "webhook", ...).
	Type     string
	Notifier Notifier
	// SendResolved sends notifications whose alerts all resolved.
	SendResolved bool
	// Secrets are strings (URLs, tokens) to redact from the integration's
	// errors before they are logged.
	Secrets []string

	id       string
	receiver string
}

// Config is the dispatcher's built configuration (see notify/setup, which
// builds it from the config file section).
type Config struct {
	Route *Route
	// Receivers maps receiver names to their integrations.
	Receivers map[string][]Integration
	// QueueCapacity bounds each integration's queue; the oldest entry is
	// dropped on overflow.
	QueueCapacity int
	Backoff       Backoff
	// Drafts renders status-update drafts; nil disables them.
	Drafts         *draft.Renderer
	DraftReceivers []string
	DraftHold      time.Duration
	DraftKeep      int
}

// Dispatcher routes, groups and de-duplicates alerts, and delivers
// notifications through the outbox. Notify is safe for concurrent use.
type Dispatcher struct {
	logger  *slog.Logger
	metrics *metrics.Set
	now     func() time.Time
	rand    func() float64
	dataDir string

	db  *bolt.DB
	ob  *outbox
	sil *silences

	flushMu sync.Mutex
	mu      sync.Mutex
	cfg     *Config
	groups  map[string]*aggrGroup
	nflog   map[string]nflogEntry
	runCtx  context.Context
	wg      sync.WaitGroup
	workers map[string]chan struct{}
	closed  bool
	// incidentWake is signalled when an incident may have a new resolve
	// deadline.
	incidentWake chan struct{}
	draftMu      sync.Mutex
	incidents    map[string]*draft.Incident // by group key
	history      []*draft.Incident          // newest last, bounded
}

// New opens the state in opts.DataDir (creating it) and returns a dispatcher
// that routes nothing until ApplyConfig.
func New(opts Options) (*Dispatcher, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Metrics == nil {
		opts.Metrics = metrics.NewSet()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.DataDir == "" {
		return nil, errors.New("notify: a data directory is required for the outbox")
	}
	if err := os.MkdirAll(opts.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("create data directory: %w", err)
	}
	db, err := bolt.Open(filepath.Join(opts.DataDir, "notify.db"), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		return nil, fmt.Errorf("open notify state: %w", err)
	}
	d := &Dispatcher{
		logger: opts.Logger.With("component", "notify"), metrics: opts.Metrics,
		now: opts.Now, rand: opts.Rand, dataDir: opts.DataDir, db: db,
		groups: map[string]*aggrGroup{}, nflog: map[string]nflogEntry{},
		workers: map[string]chan struct{}{}, incidents: map[string]*draft.Incident{},
		incidentWake: make(chan struct{}, 1),
	}
	if d.ob, err = openOutbox(db); err != nil {
		_ = db.Close()
		return nil, err
	}
	if err := d.loadNflog(); err != nil {
		_ = db.Close()
		return nil, err
	}
	if d.sil, err = openSilences(db, d.now); err != nil {
		_ = db.Close()
		return nil, err
	}
	d.loadIncidents()
	d.metrics.GetOrCreateGauge("seismo_notify_outbox_entries", func() float64 { return float64(d.ob.total()) })
	d.metrics.GetOrCreateGauge("seismo_notify_log_entries", func() float64 {
		d.mu.Lock()
		defer d.mu.Unlock()
		return float64(len(d.nflog))
	})
	if n := d.ob.total(); n > 0 {
		d.logger.Info("pending notifications found in the outbox", "count", n)
	}
	return d, nil
}

// Close releases the state files. It is idempotent; call it after Run returned.
func (d *Dispatcher) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	return d.db.Close()
}

// ApplyConfig swaps in a new configuration. Alerts held in groups are routed
// again under the new tree; the notification log keeps them from being sent
// twice. Pending deliveries to integrations that no longer exist are dropped
// with a log line and a metric.
func (d *Dispatcher) ApplyConfig(cfg *Config) error {
	if cfg == nil || cfg.Route == nil {
		return errors.New("notify: config without a route")
	}
	for name, ints := range cfg.Receivers {
		for i := range ints {
			ints[i].receiver = name
			ints[i].id = fmt.Sprintf("%s/%s/%d", name, ints[i].Type, i)
			d.initMetrics(&ints[i])
			if st, ok := ints[i].Notifier.(Stateful); ok {
				st.UseState(&boltState{db: d.db, prefix: ints[i].id})
			}
		}
	}
	if cfg.Backoff.Initial <= 0 {
		cfg.Backoff.Initial = time.Second
	}
	if cfg.Backoff.Max < cfg.Backoff.Initial {
		cfg.Backoff.Max = max(5*time.Minute, cfg.Backoff.Initial)
	}
	if cfg.Backoff.Rand == nil {
		cfg.Backoff.Rand = d.rand
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	old := d.groups
	d.cfg = cfg
	d.groups = map[string]*aggrGroup{}
	var alerts []*model.Alert
	for _, ag := range old {
		ag.stop()
		alerts = append(alerts, ag.all()...)
	}
	now := d.now()
	for _, a := range alerts {
		d.insertLocked(a, now)
	}
	if d.runCtx != nil {
		d.startWorkersLocked()
		// Wake every worker, so those of removed integrations retire.
		for _, ch := range d.workers {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
	return nil
}

func (d *Dispatcher) config() *Config {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cfg
}

// Notify takes alert transitions from the rules engine. It never blocks on
// delivery.
func (d *Dispatcher) Notify(_ context.Context, alerts ...*model.Alert) {
	now := d.now()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cfg == nil {
		d.metrics.GetOrCreateCounter(`seismo_notify_alerts_dropped_total{reason="no_config"}`).Add(len(alerts))
		return
	}
	for _, a := range alerts {
		if a.State != model.StateFiring && a.State != model.StateResolved {
			// Only firing and resolved alerts are notified, as in Prometheus.
			d.metrics.GetOrCreateCounter(`seismo_notify_alerts_dropped_total{reason="not_firing"}`).Inc()
			continue
		}
		c := *a
		d.insertLocked(&c, now)
	}
	d.metrics.GetOrCreateCounter("seismo_notify_alerts_received_total").Add(len(alerts))
}

func (d *Dispatcher) insertLocked(a *model.Alert, now time.Time) {
	for _, r := range d.cfg.Route.Match(a.Labels) {
		gl := r.groupLabels(a)
		key := r.ID + ":" + labelString(gl)
		ag, ok := d.groups[key]
		if !ok {
			ag = newAggrGroup(r, key, gl)
			d.groups[key] = ag
			if d.runCtx != nil {
				d.startGroupLocked(ag)
			}
		}
		ag.insert(a, now)
	}
}

// Run starts group timers and delivery workers and blocks until ctx is
// cancelled; then it waits for every goroutine it started.
func (d *Dispatcher) Run(ctx context.Context) error {
	d.mu.Lock()
	if d.runCtx != nil {
		d.mu.Unlock()
		return errors.New("notify: already running")
	}
	if d.closed {
		d.mu.Unlock()
		return errors.New("notify: closed")
	}
	d.runCtx = ctx
	for _, ag := range d.groups {
		d.startGroupLocked(ag)
	}
	d.startWorkersLocked()
	d.wg.Add(1)
	go d.runIncidents(ctx)
	d.mu.Unlock()

	<-ctx.Done()
	d.wg.Wait()
	d.mu.Lock()
	d.runCtx = nil
	d.workers = map[string]chan struct{}{}
	for _, ag := range d.groups {
		ag.cancel = nil
	}
	d.mu.Unlock()
	return nil
}

func (d *Dispatcher) startWorkersLocked() {
	var ids []string
	if d.cfg == nil {
		return
	}
	for _, ints := range d.cfg.Receivers {
		for _, in := range ints {
			ids = append(ids, in.id)
		}
	}
	ids = append(ids, d.ob.ids()...)
	for _, id := range ids {
		d.ensureWorkerLocked(id)
	}
}

func (d *Dispatcher) ensureWorkerLocked(id string) {
	if d.runCtx == nil {
		return
	}
	if ch, ok := d.workers[id]; ok {
		select {
		case ch <- struct{}{}:
		default:
		}
		return
	}
	ch := make(chan struct{}, 1)
	d.workers[id] = ch
	d.wg.Add(1)
	go d.runWorker(d.runCtx, id, ch)
}

func (d *Dispatcher) integration(id string) (Integration, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.integrationLocked(id)
}

func (d *Dispatcher) integrationLocked(id string) (Integration, bool) {
	if d.cfg == nil {
		return Integration{}, false
	}
	for _, ints := range d.cfg.Receivers {
		for _, in := range ints {
			if in.id == id {
				return in, true
			}
		}
	}
	return Integration{}, false
}

func (d *Dispatcher) startGroupLocked(ag *aggrGroup) {
	ctx, cancel := context.WithCancel(d.runCtx)
	ag.cancel = cancel
	d.wg.Add(1)
	go d.runGroup(ctx, ag)
}

// runGroup is an aggregation group's timer loop, as in Alertmanager: the
// first notification waits group_wait after the group was created; later ones
// are considered every group_interval.
func (d *Dispatcher) runGroup(ctx context.Context, ag *aggrGroup) {
	defer d.wg.Done()
	wait := ag.route.GroupWait
	if ag.hasFlushed() {
		wait = ag.route.GroupInterval
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ag.kick:
			if !ag.hasFlushed() {
				d.flush(ctx, ag)
				timer.Reset(ag.route.GroupInterval)
			}
		case <-timer.C:
			d.flush(ctx, ag)
			timer.Reset(ag.route.GroupInterval)
		}
		if d.retireGroup(ag) {
			return
		}
	}
}

// retireGroup removes a group with no alerts.
func (d *Dispatcher) retireGroup(ag *aggrGroup) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !ag.empty() {
		return false
	}
	if d.groups[ag.key] == ag {
		delete(d.groups, ag.key)
	}
	return true
}

func (d *Dispatcher) flush(ctx context.Context, ag *aggrGroup) {
	// Flushes are serialised: reading and updating the notification log is
	// one step, also when a reload briefly leaves an old group flushing
	// next to its replacement.
	d.flushMu.Lock()
	defer d.flushMu.Unlock()
	// A group replaced by a reload (or stopped) must not flush: its alerts
	// are stale, and a firing alert it still holds would be announced
	// again after its replacement sent the resolve. (select may pick the
	// timer over a cancelled context.)
	if ctx.Err() != nil {
		return
	}
	now := d.now()
	cfg := d.config()
	all := ag.all()
	alerts := d.sil.filter(all, now)
	if n := len(all) - len(alerts); n > 0 {
		d.metrics.GetOrCreateCounter("seismo_notify_alerts_silenced_total").Add(n)
	}
	repeat := ag.route.RepeatInterval
	var entries []*entry
	nfUpdates := map[string]nflogEntry{}
	group := Group{Key: ag.key, Receiver: ag.route.Receiver, Labels: ag.labels}
	firing, resolved, flapping := splitFingerprints(alerts)
	for _, in := range cfg.Receivers[ag.route.Receiver] {
		nfKey := in.id + "|" + ag.key
		d.mu.Lock()
		prev, ok := d.nflog[nfKey]
		d.mu.Unlock()
		var prevp *nflogEntry
		if ok {
			prevp = &prev
		}
		if !needsUpdate(prevp, firing, resolved, flapping, in.SendResolved, repeat, now) {
			continue
		}
		nfUpdates[nfKey] = nflogEntry{Firing: firing, Resolved: resolved, Flapping: flapping, At: now}
		send := alerts
		if !in.SendResolved {
			send = slices.DeleteFunc(slices.Clone(alerts), (*model.Alert).Resolved)
		}
		if len(send) == 0 {
			continue
		}
		entries = append(entries, newEntry(in.id, group, send, nil, now))
	}
	if len(alerts) > 0 {
		entries = append(entries, d.observeIncident(cfg, ag, group, alerts, now)...)
	}
	d.enqueue(cfg, entries, nfUpdates)
	ag.deleteResolved(all)
}

func (d *Dispatcher) enqueue(cfg *Config, entries []*entry, nf map[string]nflogEntry) {
	if len(entries) == 0 && len(nf) == 0 {
		return
	}
	dropped, err := d.ob.add(entries, cfg.QueueCapacity, func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketNflog)
		for k, v := range nf {
			if len(v.Firing) == 0 {
				// Nothing firing is the same as never notified (see
				// needsUpdate), so the log does not grow with old groups.
				if err := b.Delete([]byte(k)); err != nil {
					return err
				}
				continue
			}
			raw, err := json.Marshal(v)
			if err != nil {
				return err
			}
			if err := b.Put([]byte(k), raw); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		// The notification cannot be made durable; leave the log untouched so
		// that the next flush tries again.
		d.logger.Error("cannot write notifications to the outbox", "err", err)
		d.metrics.GetOrCreateCounter("seismo_notify_outbox_write_errors_total").Inc()
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for k, v := range nf {
		if len(v.Firing) == 0 {
			delete(d.nflog, k)
		} else {
			d.nflog[k] = v
		}
	}
	for _, e := range dropped {
		recv, typ := splitID(e.Integration)
		d.metrics.GetOrCreateCounter(fmt.Sprintf(`seismo_notify_notifications_failed_total{integration=%q,receiver=%q,reason="queue_full"}`, typ, recv)).Inc()
		d.logger.Warn("notification queue full, dropped the oldest notification",
			"integration", e.Integration, "group", e.Group.Key, "queued_at", e.CreatedAt, "capacity", cfg.QueueCapacity)
	}
	for _, e := range entries {
		d.ensureWorkerLocked(e.Integration)
	}
}

// runWorker delivers one integration's queue in order: the head entry is
// retried with back-off until it succeeds or fails permanently.
func (d *Dispatcher) runWorker(ctx context.Context, id string, wake <-chan struct{}) {
	defer d.wg.Done()
	var elog errorLog
	recv, typ := splitID(id)
	lbl := fmt.Sprintf(`{integration=%q,receiver=%q}`, typ, recv)
	qlen := d.metrics.GetOrCreateGauge("seismo_notify_queue_length"+lbl, nil)
	for {
		in, ok := d.integration(id)
		if !ok && d.retireWorker(id) {
			return
		}
		qlen.Set(float64(d.ob.len(id)))
		e := d.ob.head(id)
		if e == nil || !ok {
			select {
			case <-ctx.Done():
				return
			case <-wake:
				continue
			}
		}
		retry, err := d.attempt(ctx, in, e)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			d.metrics.GetOrCreateCounter("seismo_notify_notifications_total" + lbl).Inc()
			d.metrics.GetOrCreatePrometheusHistogram(fmt.Sprintf(`seismo_notify_delivery_latency_seconds{integration=%q}`, typ)).Update(d.now().Sub(e.CreatedAt).Seconds())
			if elog.changed(nil) {
				d.logger.Info("notification delivered after failures", "integration", id, "attempts", e.attempts+1)
			}
			d.removeEntry(e)
			continue
		}
		if !retry {
			d.metrics.GetOrCreateCounter(fmt.Sprintf(`seismo_notify_notifications_failed_total{integration=%q,receiver=%q,reason="permanent"}`, typ, recv)).Inc()
			d.logger.Error("notification failed permanently, not retrying", "integration", id, "group", e.Group.Key, "err", err)
			elog.changed(nil)
			d.removeEntry(e)
			continue
		}
		e.attempts++
		d.metrics.GetOrCreateCounter(fmt.Sprintf(`seismo_notify_notifications_failed_total{integration=%q,receiver=%q,reason="transient"}`, typ, recv)).Inc()
		d.metrics.GetOrCreateCounter("seismo_notify_notification_retries_total" + lbl).Inc()
		delay := d.config().Backoff.Delay(e.attempts)
		if ra, ok := RetryAfterOf(err); ok {
			delay = ra
		}
		if elog.changed(err) {
			d.logger.Warn("notification failed, will retry", "integration", id, "group", e.Group.Key, "retry_in", delay, "err", err)
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

func (d *Dispatcher) attempt(ctx context.Context, in Integration, e *entry) (retry bool, err error) {
	ctx = WithGroup(ctx, e.Group)
	if e.Draft != nil {
		dn, ok := in.Notifier.(DraftNotifier)
		if !ok {
			return false, nil // nothing to deliver for this integration
		}
		retry, err = dn.NotifyDraft(ctx, e.Draft)
	} else {
		retry, err = in.Notifier.Notify(ctx, e.alerts()...)
	}
	return retry, Redact(err, in.Secrets...)
}

func (d *Dispatcher) removeEntry(e *entry) {
	if err := d.ob.remove(e); err != nil {
		d.logger.Error("cannot remove a delivered notification from the outbox", "err", err)
	}
}

// retireWorker ends the worker of an integration that is no longer
// configured: its pending notifications are dropped (counted and logged) and
// its metrics deleted. It reports false if the integration came back.
func (d *Dispatcher) retireWorker(id string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.integrationLocked(id); ok {
		return false
	}
	delete(d.workers, id)
	n, err := d.ob.removeAll(id)
	if err != nil {
		d.logger.Error("cannot drop the notifications of a removed receiver", "integration", id, "err", err)
	}
	if n > 0 {
		d.metrics.GetOrCreateCounter(`seismo_notify_notifications_dropped_total{reason="receiver_removed"}`).Add(n)
		d.logger.Warn("dropped pending notifications of a receiver that is no longer configured", "integration", id, "count", n)
	}
	for _, name := range integrationMetrics(splitID(id)) {
		d.metrics.UnregisterMetric(name)
	}
	return true
}

// integrationMetrics names the series kept per integration.
func integrationMetrics(receiver, typ string) []string {
	lbl := fmt.Sprintf(`{integration=%q,receiver=%q}`, typ, receiver)
	names := []string{"seismo_notify_notifications_total" + lbl, "seismo_notify_notification_retries_total" + lbl, "seismo_notify_queue_length" + lbl}
	for _, r := range []string{"transient", "permanent", "queue_full"} {
		names = append(names, fmt.Sprintf(`seismo_notify_notifications_failed_total{integration=%q,receiver=%q,reason=%q}`, typ, receiver, r))
	}
	return names
}

func (d *Dispatcher) initMetrics(in *Integration) {
	for _, name := range integrationMetrics(in.receiver, in.Type) {
		if strings.HasPrefix(name, "seismo_notify_queue_length") {
			d.metrics.GetOrCreateGauge(name, nil)
			continue
		}
		d.metrics.GetOrCreateCounter(name)
	}
}

// Pending returns the number of notifications waiting in the outbox.
func (d *Dispatcher) Pending() int { return d.ob.total() }

func splitID(id string) (receiver, typ string) {
	parts := strings.Split(id, "/")
	if len(parts) < 3 {
		return id, ""
	}
	return strings.Join(parts[:len(parts)-2], "/"), parts[len(parts)-2]
}

func labelString(m map[string]string) string {
	keys := slices.Sorted(maps.Keys(m))
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s=%q", k, m[k])
	}
	b.WriteByte('}')
	return b.String()
}

// aggrGroup holds the alerts of one group of one route.
type aggrGroup struct {
	route  *Route
	key    string
	labels map[string]string
	kick   chan struct{}
	cancel context.CancelFunc

	mu      sync.Mutex
	alerts  map[uint64]*model.Alert
	flushed bool
}

func newAggrGroup(r *Route, key string, labels map[string]string) *aggrGroup {
	return &aggrGroup{route: r, key: key, labels: labels, kick: make(chan struct{}, 1), alerts: map[uint64]*model.Alert{}}
}

func (ag *aggrGroup) insert(a *model.Alert, now time.Time) {
	ag.mu.Lock()
	defer ag.mu.Unlock()
	fp := a.Fingerprint()
	// A flapping alert stays firing here: its resolves are held back until
	// the rules engine says it stopped flapping, so a flapping alert makes
	// one notice (see needsUpdate) instead of one per change.
	if a.Flapping && a.Resolved() {
		if cur, ok := ag.alerts[fp]; ok && !cur.Resolved() {
			c := *cur
			c.Flapping, c.Value = true, a.Value
			a = &c
		}
	}
	ag.alerts[fp] = a
	// As in Alertmanager: an alert that is older than group_wait is sent
	// without waiting for the timer.
	if !ag.flushed && !a.StartsAt.Add(ag.route.GroupWait).After(now) {
		select {
		case ag.kick <- struct{}{}:
		default:
		}
	}
}

func (ag *aggrGroup) stop() {
	if ag.cancel != nil {
		ag.cancel()
	}
}

// all returns the alerts sorted by label set, so notifications are stable.
func (ag *aggrGroup) all() []*model.Alert {
	ag.mu.Lock()
	defer ag.mu.Unlock()
	out := slices.Collect(maps.Values(ag.alerts))
	sort.Slice(out, func(i, j int) bool { return cmp.Compare(out[i].Labels.String(), out[j].Labels.String()) < 0 })
	return out
}

func (ag *aggrGroup) hasFlushed() bool {
	ag.mu.Lock()
	defer ag.mu.Unlock()
	return ag.flushed
}

func (ag *aggrGroup) empty() bool {
	ag.mu.Lock()
	defer ag.mu.Unlock()
	return len(ag.alerts) == 0
}

// deleteResolved drops resolved alerts that were part of the flush and have
// not been replaced since.
func (ag *aggrGroup) deleteResolved(flushed []*model.Alert) {
	ag.mu.Lock()
	defer ag.mu.Unlock()
	ag.flushed = true
	for _, a := range flushed {
		fp := a.Fingerprint()
		if cur, ok := ag.alerts[fp]; ok && cur == a && a.Resolved() {
			delete(ag.alerts, fp)
		}
	}
}
