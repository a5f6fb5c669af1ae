package collectors

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"math"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/seismo-agent/seismo/store"
)

// Options configure a Scheduler.
type Options struct {
	Config Config
	Store  *store.Store
	Logger *slog.Logger
	// Metrics receives seismo_collector_*; nil registers nowhere.
	Metrics *metrics.Set
	// Now is the clock for timestamps and durations; nil means time.Now.
	// Timers use the time package, so tests run under testing/synctest.
	Now func() time.Time
}

// Scheduler runs every target of every job on its interval. Each target
// has one goroutine that fires at a fixed offset inside the interval,
// derived from a hash of the job name and the target, so targets spread
// over the interval and keep their phase across restarts and reloads.
type Scheduler struct {
	store  *store.Store
	logger *slog.Logger
	set    *metrics.Set
	now    func() time.Time

	mu      sync.Mutex
	jobs    map[string]*job
	runCtx  context.Context // nil until Run
	running bool
}

// New validates cfg and prepares its jobs; Run starts them.
func New(opts Options) (*Scheduler, error) {
	if opts.Store == nil {
		return nil, errors.New("collectors: a store is required")
	}
	s := &Scheduler{store: opts.Store, logger: opts.Logger, set: opts.Metrics, now: opts.Now, jobs: map[string]*job{}}
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	s.logger = s.logger.With("component", "collectors")
	if s.set == nil {
		s.set = metrics.NewSet()
	}
	if s.now == nil {
		s.now = time.Now
	}
	if err := s.ApplyConfig(opts.Config); err != nil {
		return nil, err
	}
	return s, nil
}

// Run runs the jobs until ctx ends, then stops every target (writing
// staleness markers for their series) and returns nil once all goroutines
// have exited.
func (s *Scheduler) Run(ctx context.Context) error {
	s.mu.Lock()
	if s.running {
		s.mu.Unlock()
		return errors.New("collectors: Run called twice")
	}
	s.running, s.runCtx = true, ctx
	for _, j := range s.jobs {
		j.start(ctx)
	}
	s.mu.Unlock()

	<-ctx.Done()

	s.mu.Lock()
	defer s.mu.Unlock()
	for _, j := range s.jobs {
		j.stop()
	}
	s.runCtx = nil
	return nil
}

// ApplyConfig swaps in a new config: Prepare, then commit.
func (s *Scheduler) ApplyConfig(cfg Config) error {
	commit, err := s.Prepare(cfg)
	if err != nil {
		return err
	}
	commit()
	return nil
}

// Prepare validates cfg and builds every new or changed job without
// touching the running ones; the returned commit swaps them in and cannot
// fail. On error nothing changes. Jobs whose definition is unchanged keep
// running untouched (same phase, same series cache, no staleness markers);
// changed jobs restart; removed jobs stop and mark their series stale.
// Stored history is never dropped. Reloads must not run concurrently.
func (s *Scheduler) Prepare(cfg Config) (commit func(), err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	specs := jobSpecs(cfg)
	s.mu.Lock()
	current := s.jobs
	s.mu.Unlock()
	next := make(map[string]*job, len(specs))
	var fresh []*job
	for _, sp := range specs {
		if old, ok := current[sp.name]; ok && reflect.DeepEqual(old.spec, sp) {
			next[sp.name] = old
			continue
		}
		j, err := s.newJob(sp)
		if err != nil {
			for _, f := range fresh {
				f.release()
			}
			return nil, fmt.Errorf("job %q: %w", sp.name, err)
		}
		next[sp.name] = j
		fresh = append(fresh, j)
	}
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		for name, old := range s.jobs {
			if next[name] != old {
				old.stop()
			}
		}
		s.jobs = next
		if s.runCtx != nil {
			for _, j := range fresh {
				j.start(s.runCtx)
			}
		}
	}, nil
}

// jobSpec is a job's complete definition with defaults applied; two equal
// specs run identically.
type jobSpec struct {
	name     string
	kind     string // scrape, probe, host, cgroup
	interval time.Duration
	timeout  time.Duration
	scrape   *ScrapeConfig
	probe    *ProbeConfig
	host     *HostConfig
	cgroup   *CgroupConfig
	procPath string
	sysPath  string
}

func jobSpecs(cfg Config) []jobSpec {
	var out []jobSpec
	for i := range cfg.ScrapeConfigs {
		sc := cfg.ScrapeConfigs[i]
		interval, timeout := sc.intervals(cfg.ScrapeInterval, cfg.ScrapeTimeout)
		if sc.MetricsPath == "" {
			sc.MetricsPath = DefaultMetricsPath
		}
		if sc.Scheme == "" {
			sc.Scheme = "http"
		}
		out = append(out, jobSpec{name: sc.JobName, kind: "scrape", interval: interval, timeout: timeout, scrape: &sc})
	}
	for i := range cfg.ProbeConfigs {
		pc := cfg.ProbeConfigs[i]
		interval := cmp(pc.Interval, cfg.ScrapeInterval)
		timeout := cmp(pc.Timeout, min(cfg.ScrapeTimeout, interval))
		out = append(out, jobSpec{name: pc.JobName, kind: "probe", interval: interval, timeout: timeout, probe: &pc})
	}
	if h := cfg.Host; h.Enabled {
		interval := cmp(h.Interval, cfg.ScrapeInterval)
		out = append(out, jobSpec{name: h.JobName, kind: "host", interval: interval, timeout: min(cfg.ScrapeTimeout, interval), host: &h, procPath: cfg.ProcPath})
	}
	if c := cfg.Cgroup; c.Enabled {
		interval := cmp(c.Interval, cfg.ScrapeInterval)
		out = append(out, jobSpec{name: c.JobName, kind: "cgroup", interval: interval, timeout: min(cfg.ScrapeTimeout, interval), cgroup: &c, procPath: cfg.ProcPath, sysPath: cfg.SysPath})
	}
	return out
}

func cmp(v, def time.Duration) time.Duration {
	if v == 0 {
		return def
	}
	return v
}

// job is a running job: its targets' loops, its discovery and its metrics.
type job struct {
	spec   jobSpec
	s      *Scheduler
	client *http.Client
	m      *jobMetrics

	cancel context.CancelFunc
	wg     sync.WaitGroup // discovery goroutine

	mu    sync.Mutex
	loops map[string]*loop
}

func (s *Scheduler) newJob(sp jobSpec) (*job, error) {
	j := &job{spec: sp, s: s, loops: map[string]*loop{}}
	var err error
	switch sp.kind {
	case "scrape":
		j.client, err = newHTTPClient(sp.scrape.HTTPClientConfig)
	case "probe":
		j.client, err = newHTTPClient(sp.probe.HTTPClientConfig)
	}
	if err != nil {
		return nil, err
	}
	return j, nil
}

// release frees what newJob built for a job that never started.
func (j *job) release() { closeIdle(j.client) }

func (j *job) start(ctx context.Context) {
	j.m = newJobMetrics(j.s.set, j.spec.name)
	ctx, j.cancel = context.WithCancel(ctx)
	sp := j.spec
	switch sp.kind {
	case "scrape":
		static := sp.scrape.StaticConfigs
		if len(sp.scrape.FileSDConfigs) == 0 {
			j.sync(ctx, static)
			return
		}
		sd := newFileSD(sp.scrape.FileSDConfigs, j.s.logger.With("job", sp.name))
		j.wg.Go(func() {
			sd.run(ctx, func(groups []StaticConfig) { j.sync(ctx, append(slices.Clip(static), groups...)) })
		})
	case "probe":
		j.sync(ctx, []StaticConfig{{Targets: sp.probe.Targets, Labels: sp.probe.Labels}})
	case "host":
		j.sync(ctx, []StaticConfig{{Targets: []string{cmpStr(sp.host.Instance, "localhost")}}})
	case "cgroup":
		j.sync(ctx, []StaticConfig{{Targets: []string{cmpStr(sp.cgroup.Instance, "localhost")}}})
	}
}

func cmpStr(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// sync makes the job's loops match groups: new targets start, vanished
// ones stop (marking their series stale), the rest run on untouched.
func (j *job) sync(ctx context.Context, groups []StaticConfig) {
	want := map[string]labels.Labels{}
	for _, g := range groups {
		for _, t := range g.Targets {
			b := labels.NewBuilder(labels.EmptyLabels())
			for k, v := range g.Labels {
				// Of the internal labels, per-target scheme and path are
				// honoured as in Prometheus; the rest (__meta_*) dropped.
				if !strings.HasPrefix(k, "__") || k == labelScheme || k == labelMetricsPath {
					b.Set(k, v)
				}
			}
			b.Set("job", j.spec.name)
			b.Set("instance", t)
			ls := b.Labels()
			want[ls.String()] = ls
		}
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if ctx.Err() != nil {
		return
	}
	for key, l := range j.loops {
		if _, ok := want[key]; !ok {
			l.stop()
			delete(j.loops, key)
		}
	}
	for key, ls := range want {
		if _, ok := j.loops[key]; ok {
			continue
		}
		l := j.newLoop(key, ls)
		j.loops[key] = l
		l.start(ctx)
	}
	j.m.targets.Set(float64(len(j.loops)))
}

// Target labels that set a target's scheme and metrics path, as in
// Prometheus (file_sd files often carry them).
const (
	labelScheme      = "__scheme__"
	labelMetricsPath = "__metrics_path__"
)

func (j *job) newLoop(key string, ls labels.Labels) *loop {
	sp := j.spec
	instance := ls.Get("instance")
	var r runner
	switch sp.kind {
	case "scrape":
		scheme := cmpStr(ls.Get(labelScheme), sp.scrape.Scheme)
		path := cmpStr(ls.Get(labelMetricsPath), sp.scrape.MetricsPath)
		ls = labels.NewBuilder(ls).Del(labelScheme, labelMetricsPath).Labels()
		r = newScraper(scheme+"://"+instance+path, j.client, sp.scrape, sp.timeout, ls)
	case "probe":
		r = &collectorRunner{c: NewProbeCollector(instance, sp.probe.Method, sp.probe.ValidStatusCodes, j.client, j.s.now), target: ls}
	case "host":
		c, err := NewHostCollector(sp.procPath)
		if err != nil { // counted as a failed collection on every tick
			r = &collectorRunner{c: CollectorFunc(func(context.Context, time.Time) ([]Sample, error) { return nil, err }), target: ls}
		} else {
			r = &collectorRunner{c: c, target: ls}
		}
	case "cgroup":
		r = &collectorRunner{c: NewCgroupCollector(sp.procPath, sp.sysPath, sp.cgroup.Path), target: ls}
	}
	h := fnv.New64a()
	h.Write([]byte(sp.name + "\xff" + key))
	return &loop{
		job:      sp.name,
		instance: instance,
		labels:   ls,
		interval: sp.interval,
		timeout:  sp.timeout,
		// Whole milliseconds, so sample timestamps show the exact phase.
		offset: time.Duration(h.Sum64()%uint64(sp.interval.Milliseconds())) * time.Millisecond,
		runner: r,
		store:  j.s.store,
		now:    j.s.now,
		logger: j.s.logger.With("job", sp.name, "instance", instance),
		m:      j.m,
	}
}

// stop ends discovery and every loop, waits for them, and removes the
// job's metrics.
func (j *job) stop() {
	if j.cancel == nil {
		j.release()
		return
	}
	j.cancel()
	j.wg.Wait()
	j.mu.Lock()
	for key, l := range j.loops {
		l.stop()
		delete(j.loops, key)
	}
	j.mu.Unlock()
	j.m.unregister()
	j.release()
}

// runner performs one collection of one target, appending to app through
// cache.
type runner interface {
	run(ctx context.Context, ts time.Time, app *store.Appender, cache *seriesCache) (result, error)
}

// collectorRunner adapts a Collector: it adds the target labels and appends
// the samples.
type collectorRunner struct {
	c      Collector
	target labels.Labels
	lb     *labels.Builder
	buf    []byte
}

func (r *collectorRunner) run(ctx context.Context, ts time.Time, app *store.Appender, cache *seriesCache) (result, error) {
	samples, err := r.c.Collect(ctx, ts)
	if err != nil {
		return result{}, err
	}
	if r.lb == nil {
		r.lb = labels.NewBuilder(labels.EmptyLabels())
	}
	res := result{scraped: len(samples)}
	t := ts.UnixMilli()
	for _, smp := range samples {
		r.buf = smp.Labels.Bytes(r.buf)
		e := cache.get(r.buf)
		if e == nil {
			e = cache.add(r.buf, withTargetLabels(r.lb, smp.Labels, r.target, true))
		}
		if err := cache.appendEntry(app, e, t, smp.Value); err != nil {
			switch {
			case errors.Is(err, errDuplicate):
				res.dropped[0]++
			case errors.Is(err, store.ErrSeriesLimit):
				res.dropped[1]++
			default:
				return res, failf(ReasonInvalidSeries, "%v", err)
			}
		}
	}
	return res, nil
}

// loop runs one target.
type loop struct {
	job, instance string
	labels        labels.Labels
	interval      time.Duration
	timeout       time.Duration
	offset        time.Duration
	runner        runner
	store         *store.Store
	now           func() time.Time
	logger        *slog.Logger
	m             *jobMetrics

	cancel context.CancelFunc
	done   chan struct{}
	tm     *targetMetrics
	status targetStatus // the last collection, for Scheduler.Targets
}

func (l *loop) start(ctx context.Context) {
	ctx, l.cancel = context.WithCancel(ctx)
	l.done = make(chan struct{})
	l.tm = l.m.target(l.instance)
	go l.run(ctx)
}

func (l *loop) stop() {
	l.cancel()
	<-l.done
	l.m.removeTarget(l.tm)
}

// synthetic are the per-target series Prometheus adds to every scrape.
type synthetic struct {
	lsets [3]labels.Labels
	refs  [3]store.SeriesRef
}

func newSynthetic(target labels.Labels) *synthetic {
	s := &synthetic{}
	for i, name := range []string{"up", "scrape_duration_seconds", "scrape_samples_scraped"} {
		b := labels.NewBuilder(target)
		b.Set(labels.MetricName, name)
		s.lsets[i] = b.Labels()
	}
	return s
}

func (s *synthetic) append(app *store.Appender, t int64, vals [3]float64) {
	for i := range s.lsets {
		s.refs[i], _ = app.Append(s.refs[i], s.lsets[i], t, vals[i])
	}
}

// first returns the first tick at or after now that falls on the loop's
// offset within its interval.
func (l *loop) first(now time.Time) time.Time {
	next := now.Truncate(l.interval).Add(l.offset)
	if next.Before(now) {
		next = next.Add(l.interval)
	}
	return next
}

func (l *loop) run(ctx context.Context) {
	defer close(l.done)
	app := l.store.Appender()
	cache := newSeriesCache()
	synth := newSynthetic(l.labels)
	next := l.first(l.now())
	timer := time.NewTimer(next.Sub(l.now()))
	defer timer.Stop()
	ran := false
	for {
		select {
		case <-ctx.Done():
			if ran {
				t := l.now().UnixMilli()
				cache.staleAll(app, t)
				stale := math.Float64frombits(value.StaleNaN)
				synth.append(app, t, [3]float64{stale, stale, stale})
				app.Commit()
			}
			return
		case <-timer.C:
		}
		l.once(ctx, next, app, cache, synth)
		ran = true
		now := l.now()
		for !next.After(now) {
			next = next.Add(l.interval) // skip ticks missed by a slow collection
		}
		timer.Reset(next.Sub(now))
	}
}

func (l *loop) once(ctx context.Context, ts time.Time, app *store.Appender, cache *seriesCache, synth *synthetic) {
	start := l.now()
	cctx, cancel := context.WithTimeout(ctx, l.timeout)
	cache.begin()
	res, err := l.runner.run(cctx, ts, app, cache)
	cancel()
	if ctx.Err() != nil { // shutting down: the stop path marks staleness
		app.Rollback()
		return
	}
	t := ts.UnixMilli()
	up := 1.0
	if err != nil {
		up = 0
		app.Rollback()
		reason := reasonOf(err)
		l.m.errors[reason].Inc()
		if l.tm.lastErr != err.Error() { // log only when the error changes
			l.logger.Warn("collection failed", "reason", reason, "err", err)
		}
		l.tm.lastErr = err.Error()
	} else {
		l.tm.lastErr = ""
	}
	cache.commitStaleness(app, t, err == nil)
	dur := l.now().Sub(start).Seconds()
	synth.append(app, t, [3]float64{up, dur, float64(res.scraped)})
	n := app.Commit()
	l.m.appended.Add(n)
	for i, reason := range dropReasons {
		if res.dropped[i] > 0 {
			l.m.dropped[reason].Add(res.dropped[i])
		}
	}
	l.tm.duration.Set(dur)
	l.tm.success.Set(up)
	l.status.set(ts, dur, err)
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
