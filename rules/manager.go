// Package rules owns seismo's rule files and their evaluation: Prometheus
// rule groups extended with `anomaly:` rules, strict parsing that reports
// every problem as file:line:col, one evaluation loop per group, the alert
// lifecycle (warming up, pending, firing, resolved, flapping), reload that
// keeps state, persistence of detector and alert state, the built-in rule
// pack, promtool-style unit tests and replay over recorded data.
//
// Time is an input: evaluation runs at the tick time it is handed, loops
// take a now func. Alerts leave through the Notify func the caller gives;
// rules never imports notify.
package rules

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"

	"github.com/seismo-agent/seismo/datasource"
	"github.com/seismo-agent/seismo/detect"
	"github.com/seismo-agent/seismo/internal/configutil"
	"github.com/seismo-agent/seismo/internal/model"
)

// NotifyFunc receives alerts due for sending: new firing, resolved, and
// periodic re-sends of firing ones. It must not block for long; the caller
// owns queueing and retries.
type NotifyFunc func(ctx context.Context, alerts ...*model.Alert)

// Options are what the Manager needs from its owner.
type Options struct {
	// Source answers the groups' queries; Sources holds the named ones a
	// group may pick with `datasource:`.
	Source  datasource.Source
	Sources map[string]datasource.Source
	Notify  NotifyFunc
	// Record receives recording rule results (nil: results are dropped).
	Record func(ctx context.Context, ts time.Time, v promql.Vector) error
	// DataDir, when set, holds the state database (rules.db).
	DataDir     string
	ExternalURL string
	Logger      *slog.Logger
	Metrics     *metrics.Set
	Now         func() time.Time
	// Lookup and Kinds resolve detector types; nil means the detect
	// registry.
	Lookup func(string) (detect.Kind, bool)
	Kinds  func() []string
	// OnTransition, when set, sees every alert state change.
	OnTransition func(Transition)
	// History, when set, keeps recent values, bands and transitions for
	// live charts.
	History *History
}

// Manager loads rule groups, evaluates them on their intervals and keeps
// alert and detector state across reloads and restarts. Its methods are
// safe for concurrent use.
type Manager struct {
	opts   Options
	logger *slog.Logger
	ext    *url.URL
	db     *stateDB
	mets   *managerMetrics

	// linting counts the lints waiting for metric types (see lint);
	// Close cancels their wait with lintCancel.
	linting    sync.WaitGroup
	lintCtx    context.Context
	lintCancel context.CancelFunc

	mu      sync.Mutex
	cfg     Config
	sources map[string]datasource.Source // named datasources in force
	groups  []*groupState
	runCtx  context.Context
	loops   map[*groupState]*loop
	restore *savedState // state read at start, claimed by the first rules loaded
	// saveMu orders whole saves and per-group alert saves (durable.go), so
	// that an older snapshot never overwrites a newer alert state. It is
	// never held while taking mu.
	saveMu  sync.Mutex
	trans   transitions
	started chan struct{}
	startOK sync.Once
	closed  bool

	// afterWatchReload, set by tests, runs after each reload the file
	// watch triggers.
	afterWatchReload func(error)
	// blankWait, set by tests, replaces the pause before a blank rule
	// file is read again (see ruleFileReader).
	blankWait func()
	// watchReady is closed once the file watch is in place (or off).
	watchReady chan struct{}
	// anySource, set by Replay, accepts any group datasource and answers
	// every group from Options.Source.
	anySource bool
	// onObserve, set by Replay, sees every evaluated value.
	onObserve func(r *Rule, l labels.Labels, p TracePoint)
}

// NewManager builds a manager with no rules; call ApplyConfig to load them
// and Run to evaluate.
func NewManager(opts Options) (*Manager, error) {
	if opts.Source == nil {
		return nil, errors.New("rules: a datasource is required")
	}
	if opts.Notify == nil {
		opts.Notify = func(context.Context, ...*model.Alert) {}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Metrics == nil {
		opts.Metrics = metrics.NewSet()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	m := &Manager{
		opts:    opts,
		logger:  opts.Logger.With("component", "rules"),
		loops:   map[*groupState]*loop{},
		started: make(chan struct{}),
		cfg:     DefaultConfig(),
		sources: opts.Sources,

		watchReady: make(chan struct{}),
	}
	m.lintCtx, m.lintCancel = context.WithCancel(context.Background())
	if opts.ExternalURL != "" {
		u, err := url.Parse(opts.ExternalURL)
		if err != nil {
			return nil, fmt.Errorf("rules: external URL: %w", err)
		}
		m.ext = u
	}
	m.mets = newManagerMetrics(opts.Metrics, m)
	if opts.DataDir != "" {
		db, err := openStateDB(opts.DataDir)
		if err != nil {
			return nil, err
		}
		st, err := db.load()
		if err != nil {
			m.logger.Warn("rule state unreadable, starting cold", "err", err)
			st = &savedState{}
		}
		m.db, m.restore = db, st
	}
	return m, nil
}

// Started is closed once Run has started the group loops.
func (m *Manager) Started() <-chan struct{} { return m.started }

// ApplyConfig loads the rules cfg names and swaps them in, keeping the state
// of unchanged rules. On error the running rules stay and the error holds
// every problem (file:line:col).
func (m *Manager) ApplyConfig(cfg Config) error {
	commit, err := m.Prepare(cfg)
	if err != nil {
		return err
	}
	commit()
	return nil
}

// Prepare parses and compiles the rules cfg names without touching the
// running ones and returns the commit that swaps them in; commit cannot
// fail. A failed Prepare sets seismo_rules_last_reload_successful to 0.
func (m *Manager) Prepare(cfg Config) (commit func(), err error) {
	m.mu.Lock()
	sources := m.sources
	m.mu.Unlock()
	return m.PrepareSources(cfg, sources)
}

// PrepareSources is Prepare with a new set of named datasources (a
// reloaded datasources section): groups are checked against them, and
// commit makes every group query its source from the new set. Rules whose
// datasource name is unchanged keep their state.
func (m *Manager) PrepareSources(cfg Config, sources map[string]datasource.Source) (commit func(), err error) {
	groups, err := m.load(cfg, sources)
	if err != nil {
		m.mets.reloadOK.Store(false)
		m.mets.reloadFailures.Inc()
		m.logger.Error("rules not reloaded, keeping the running ones", "err", err)
		return nil, err
	}
	return func() {
		m.swap(cfg, groups, sources)
		m.lint(cfg, groups)
	}, nil
}

// lintTimeout bounds how long lint waits for the datasources' metric
// types before it tells counters by their names.
const lintTimeout = 10 * time.Second

// lint logs what LintTyped finds in the groups just swapped in. Where a
// group's datasource knows its metrics' types (datasource.Typer: a
// Prometheus' metadata, the types the local store's scrapes found),
// counters are told by them; they are fetched in the background, for at
// most lintTimeout, so that a slow datasource holds up no reload, and
// the warnings are logged when they come. A datasource that fails to
// answer, or does not know a metric, leaves it to its name. The rules run
// meanwhile whatever the warnings say. A source that knows no types yet
// is asked again (see typesOf). A replay goes by names: it asks its
// datasource for the evaluations it replays and nothing else.
func (m *Manager) lint(cfg Config, groups []*Group) {
	typers := map[string]datasource.Typer{} // by the groups' datasource field
	m.mu.Lock()
	for _, g := range groups {
		if t, ok := m.sourceFor(cfg, g).(datasource.Typer); ok && !m.anySource {
			typers[g.Source] = t
		}
	}
	m.mu.Unlock()
	if len(typers) == 0 {
		m.logWarnings(Lint(groups))
		return
	}
	m.linting.Add(1)
	go func() {
		defer m.linting.Done()
		ctx, cancel := context.WithTimeout(m.lintCtx, lintTimeout)
		defer cancel()
		known := make(map[string]map[string]string, len(typers))
		for key, t := range typers {
			types, err := typesOf(ctx, t)
			if err != nil {
				m.logger.Info("metric types unknown, counters told by their names", "datasource", cmp.Or(key, cfg.Datasource, "default"), "err", err)
				continue
			}
			known[key] = types
		}
		m.logWarnings(LintTyped(groups, func(source, metric string) string { return known[source][metric] }))
	}()
}

// typesOf asks t for its metric types until it knows some or ctx ends,
// once a second: the local store knows none before its first scrape,
// which at start-up is under way as the rules load. A source that keeps
// no metadata answers an empty map to the end.
func typesOf(ctx context.Context, t datasource.Typer) (map[string]string, error) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		types, err := t.MetricTypes(ctx)
		if err != nil || len(types) > 0 {
			return types, err
		}
		select {
		case <-ctx.Done():
			return types, nil
		case <-tick.C:
		}
	}
}

// logWarnings logs Lint's warnings.
func (m *Manager) logWarnings(warnings Errors) {
	for _, w := range warnings {
		m.logger.Warn("rule most likely wrong", "warning", w.Error())
	}
}

// load reads the configured files and the built-in pack.
func (m *Manager) load(cfg Config, sources map[string]datasource.Source) ([]*Group, error) {
	popts := ParseOptions{Lookup: m.opts.Lookup, Kinds: m.opts.Kinds, DefaultInterval: cfg.EvaluationInterval, TimeZone: cfg.TimeZone}
	if sources != nil {
		for name := range sources {
			popts.Sources = append(popts.Sources, name)
		}
		slices.Sort(popts.Sources)
	} else if !m.anySource {
		popts.Sources = []string{}
	}
	if d := cfg.Datasource; d != "" && d != "local" && !m.anySource && sources[d] == nil {
		return nil, Errors{{Msg: fmt.Sprintf("rules.datasource: unknown datasource %q (have %s)", d, strings.Join(popts.Sources, ", "))}}
	}
	var (
		groups []*Group
		errs   Errors
	)
	if cfg.Builtin.Enabled {
		gs, err := cfg.Builtin.Groups(popts)
		if err != nil {
			errs = append(errs, asErrors(err, BuiltinFile)...)
		}
		groups = append(groups, gs...)
	}
	gs, err := parseFiles(popts, m.ruleFileReader(), cfg.expandFiles()...)
	if err != nil {
		errs = append(errs, asErrors(err, "")...)
	}
	groups = append(groups, gs...)
	if len(errs) > 0 {
		return nil, errs
	}
	return groups, nil
}

// ruleFileReader returns how load reads rule files: a file that reads
// blank while rules from it are running is most likely being written
// (see configutil.Blank), and would drop those rules and their alerts'
// state. It is read again, and one that stays blank is an error, so the
// reload is refused and the running rules stay. A file meant to hold no
// rules says `groups: []`. m.mu is not held.
func (m *Manager) ruleFileReader() func(string) ([]byte, error) {
	m.mu.Lock()
	running := map[string]bool{}
	for _, g := range m.groups {
		running[g.spec.File] = true
	}
	m.mu.Unlock()
	return func(f string) ([]byte, error) {
		for try := 0; ; try++ {
			b, err := os.ReadFile(f)
			if err != nil || !running[f] || !configutil.Blank(b) {
				return b, err
			}
			if try == configutil.BlankRereads {
				return nil, errors.New("the file is blank, where it held rules that are running (a write in progress? write rule files elsewhere and rename them into place; `groups: []` holds no rules)")
			}
			if m.blankWait != nil {
				m.blankWait()
			} else {
				time.Sleep(configutil.BlankRereadDelay)
			}
		}
	}
}

func asErrors(err error, file string) Errors {
	var es Errors
	if errors.As(err, &es) {
		return es
	}
	return Errors{{File: file, Msg: err.Error()}}
}

// sourceFor returns the source a group queries: its own datasource, else
// rules.datasource, else the default source. m.mu is held.
func (m *Manager) sourceFor(cfg Config, g *Group) datasource.Source {
	name := cmp.Or(g.Source, cfg.Datasource)
	if name != "" {
		if s := m.sources[name]; s != nil {
			return s
		}
	}
	return m.opts.Source
}

// swap stops the old loops, moves state from old to new rules and starts
// the new loops.
func (m *Manager) swap(cfg Config, groups []*Group, sources map[string]datasource.Source) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sources = sources
	for g, l := range m.loops {
		l.stop()
		delete(m.loops, g)
	}
	next := make([]*groupState, 0, len(groups))
	for _, g := range groups {
		next = append(next, newGroupState(g, m.newEnv(cfg, g)))
	}
	for _, g := range next {
		g.peers = next
	}
	transferState(m.groups, next)
	if m.restore != nil {
		// The first rules loaded claim the saved state; what is left
		// belongs to rules that no longer exist and is dropped.
		m.restore.apply(next, m.logger)
		m.restore = nil
	}
	old := m.groups
	m.groups, m.cfg = next, cfg
	m.mets.syncGroups(old, next)
	m.mets.reloadOK.Store(true)
	m.mets.reloadTime.Store(m.opts.Now().Unix())
	if m.runCtx != nil {
		for _, g := range next {
			m.loops[g] = m.startLoop(m.runCtx, g)
		}
	}
	m.logger.Info("rules loaded", "groups", len(next), "rules", countRules(next))
}

func countRules(gs []*groupState) int {
	n := 0
	for _, g := range gs {
		n += len(g.rules)
	}
	return n
}

func (m *Manager) newEnv(cfg Config, g *Group) *evalEnv {
	ext := labels.FromMap(cfg.ExternalLabels)
	if cfg.ReplicaLabel != "" {
		ext = labels.NewBuilder(ext).Del(cfg.ReplicaLabel).Labels()
	}
	env := &evalEnv{
		source:       m.sourceFor(cfg, g),
		external:     ext,
		replica:      cfg.ExternalLabels[cfg.ReplicaLabel],
		shard:        cfg.Shard,
		queryOffset:  cmp.Or(g.QueryOffset, cfg.QueryOffset),
		lifecycle:    cfg.lifecycle(),
		grace:        cfg.SeriesGrace,
		retention:    cfg.SeriesRetention,
		dormantLimit: cfg.DormantLimit,
		warmStart:    cfg.WarmStart,
		externalURL:  m.ext,
		record:       m.opts.Record,
		onTransition: m.opts.OnTransition,
		onObserve:    m.onObserve,
		metrics:      m.mets.group(g),
	}
	if h := m.opts.History; h != nil {
		env.history = h
		obs, tr := env.onObserve, env.onTransition
		env.onObserve = func(r *Rule, l labels.Labels, p TracePoint) {
			h.observe(r, l, p)
			if obs != nil {
				obs(r, l, p)
			}
		}
		env.onTransition = func(t Transition) {
			h.transition(t)
			if tr != nil {
				tr(t)
			}
		}
	}
	return env
}

// ruleKey identifies a rule across reloads and restarts: group key, name and
// the occurrence of that name within the group.
type ruleKey struct {
	group string
	name  string
	nth   int
}

func (k ruleKey) String() string { return k.group + "\x00" + k.name + "\x00" + strconv.Itoa(k.nth) }

func ruleKeys(g *groupState) map[*ruleState]ruleKey {
	seen := map[string]int{}
	out := make(map[*ruleState]ruleKey, len(g.rules))
	for _, rs := range g.rules {
		n := seen[rs.rule.Name]
		seen[rs.rule.Name] = n + 1
		out[rs] = ruleKey{g.spec.Key(), rs.rule.Name, n}
	}
	return out
}

// transferState carries state from old to new rules with the same key: an
// unchanged rule keeps everything, a changed one keeps its alerts and, when
// its detector config is the same, its detectors.
func transferState(old, next []*groupState) {
	prev := map[ruleKey]*ruleState{}
	for _, g := range old {
		for rs, k := range ruleKeys(g) {
			prev[k] = rs
		}
	}
	for _, g := range next {
		for rs, k := range ruleKeys(g) {
			o := prev[k]
			if o == nil {
				continue
			}
			o.mu.Lock()
			rs.alerts = o.alerts
			if sameDetector(o.rule, rs.rule) {
				rs.series, rs.dormant = o.series, o.dormant
			}
			rs.lastEval, rs.evalDur, rs.lastErr = o.lastEval, o.evalDur, o.lastErr
			o.mu.Unlock()
		}
	}
}

func sameDetector(a, b *Rule) bool {
	if a.Detector == nil || b.Detector == nil {
		return false
	}
	return a.Detector.Hash == b.Detector.Hash && a.Expr == b.Expr
}

// Run evaluates every group on its interval until ctx ends, saving state
// periodically and once more at the end. It returns nil when ctx ends.
func (m *Manager) Run(ctx context.Context) error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return errors.New("rules: manager closed")
	}
	m.runCtx = ctx
	for _, g := range m.groups {
		m.loops[g] = m.startLoop(ctx, g)
	}
	snapEvery := m.cfg.SnapshotInterval
	m.mu.Unlock()
	m.startOK.Do(func() { close(m.started) })

	var wg sync.WaitGroup
	if m.db != nil {
		wg.Go(func() {
			t := time.NewTicker(snapEvery)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
					if err := m.Save(); err != nil {
						m.logger.Error("save rule state", "err", err)
					}
				}
			}
		})
	}
	wg.Go(func() { m.watch(ctx) })
	<-ctx.Done()
	wg.Wait()

	m.mu.Lock()
	for g, l := range m.loops {
		l.stop()
		delete(m.loops, g)
	}
	m.runCtx = nil
	m.mu.Unlock()
	if m.db != nil {
		if err := m.Save(); err != nil {
			m.logger.Error("save rule state at shutdown", "err", err)
		}
	}
	return m.Close()
}

// Close releases the state database. It is idempotent.
func (m *Manager) Close() error {
	m.lintCancel() // a metadata fetch under way holds up no shutdown
	m.linting.Wait()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil
	}
	m.closed = true
	if m.db != nil {
		return m.db.close()
	}
	return nil
}

// loop is one group's evaluation goroutine.
type loop struct {
	cancel context.CancelFunc
	done   chan struct{}
}

func (l *loop) stop() {
	l.cancel()
	<-l.done
}

// groupOffset spreads groups over their interval deterministically: the same
// group always evaluates at the same phase. It hashes the group's name, not
// its file path, so HA replicas whose rule files sit in different places
// still evaluate at the same instants (and their alerts start at the same
// tick, giving the same incident key).
func groupOffset(g *Group) time.Duration {
	h := fnv.New64a()
	h.Write([]byte(g.Name))
	return time.Duration(h.Sum64() % uint64(g.Interval))
}

// nextTick returns the first tick of g strictly after t.
func nextTick(t time.Time, g *Group) time.Time {
	iv := g.Interval
	off := groupOffset(g)
	base := t.Add(-off).Truncate(iv).Add(off)
	for !base.After(t) {
		base = base.Add(iv)
	}
	return base
}

func (m *Manager) startLoop(parent context.Context, g *groupState) *loop {
	ctx, cancel := context.WithCancel(parent)
	l := &loop{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		m.runGroup(ctx, g)
	}()
	return l
}

func (m *Manager) runGroup(ctx context.Context, g *groupState) {
	iv := g.spec.Interval
	next := nextTick(m.opts.Now(), g.spec)
	t := time.NewTimer(next.Sub(m.opts.Now()))
	defer t.Stop()
	var lastErr string
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		ts := next
		alerts, err := g.eval(ctx, ts)
		if ctx.Err() != nil {
			return
		}
		if len(alerts) > 0 {
			m.saveTransitions(g, alerts)
			m.opts.Notify(ctx, alerts...)
		}
		// Log only when the error changes.
		if err != nil && err.Error() != lastErr {
			m.logger.Warn("rule evaluation failed", "group", g.spec.Name, "file", g.spec.File, "err", err)
		}
		if err == nil {
			lastErr = ""
		} else {
			lastErr = err.Error()
		}
		now := m.opts.Now()
		next = next.Add(iv)
		if !next.After(now) {
			missed := int(now.Sub(next)/iv) + 1
			next = next.Add(time.Duration(missed) * iv)
			if g.env.metrics != nil {
				g.env.metrics.missed.Add(missed)
			}
		}
		t.Reset(next.Sub(now))
	}
}

// EvalGroups evaluates every group once at ts, in file order, and hands due
// alerts to Notify. Replay and tests drive time with it.
func (m *Manager) EvalGroups(ctx context.Context, ts time.Time) error {
	m.mu.Lock()
	groups := m.groups
	m.mu.Unlock()
	var errs []error
	for _, g := range groups {
		alerts, err := g.eval(ctx, ts)
		if len(alerts) > 0 {
			m.saveTransitions(g, alerts)
			m.opts.Notify(ctx, alerts...)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("group %q: %w", g.spec.Name, err))
		}
	}
	return errors.Join(errs...)
}

// Groups returns the loaded groups.
func (m *Manager) Groups() []*Group {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*Group, len(m.groups))
	for i, g := range m.groups {
		out[i] = g.spec
	}
	return out
}

// Alerts returns the current alerts (warming up, pending, firing and
// recently resolved), sorted by rule and labels.
// detectorCounts returns how many detectors the rules hold: live (their
// series seen within series_grace) and dormant (see release).
func (m *Manager) detectorCounts() (live, dormant int) {
	m.mu.Lock()
	groups := m.groups
	m.mu.Unlock()
	for _, g := range groups {
		for _, rs := range g.rules {
			rs.mu.Lock()
			live += len(rs.series)
			dormant += len(rs.dormant)
			rs.mu.Unlock()
		}
	}
	return live, dormant
}

func (m *Manager) Alerts() []*model.Alert {
	m.mu.Lock()
	groups := m.groups
	m.mu.Unlock()
	var out []*model.Alert
	for _, g := range groups {
		for _, rs := range g.rules {
			rs.mu.Lock()
			for _, a := range rs.alerts {
				ma := rs.toModel(a, a.ActiveAt)
				ma.State = a.State
				ma.StartsAt = cmp.Or(a.FiredAt, a.ActiveAt)
				out = append(out, ma)
			}
			rs.mu.Unlock()
		}
	}
	slices.SortFunc(out, func(a, b *model.Alert) int { return compareLabels(a, b) })
	return out
}

func compareLabels(a, b *model.Alert) int {
	return cmp.Compare(a.Labels.String(), b.Labels.String())
}
