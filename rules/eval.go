package rules

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"math"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/template"

	"github.com/seismo-agent/seismo/datasource"
	"github.com/seismo-agent/seismo/detect"
	"github.com/seismo-agent/seismo/internal/model"
)

// recentLen is how many recent values an alert carries for sparklines.
const recentLen = 30

// minUnchanged is how many evaluations in a row of the same value an
// anomaly alert's summary names (see univariateExplanation).
const minUnchanged = 5

// Transition is one alert state change, as replay and tests report it.
type Transition struct {
	Time   time.Time
	Group  string
	Rule   string
	Labels labels.Labels
	From   model.AlertState
	To     model.AlertState
	Value  float64
	// Score, Expected, Lower and Upper are the detector's view (zero for
	// plain alerting rules).
	Score, Expected, Lower, Upper float64
	Explanation                   *model.Explanation
	// SuppressedBy names the rule whose firing alert suppresses this one
	// (see Rule.SuppressedBy); a suppressed alert is not sent.
	// SuppressedHang says it is one hang with that alert's (see "One
	// hang, one page").
	SuppressedBy   string
	SuppressedHang bool
}

// seriesState is one detector instance (univariate: per series; composite:
// per group) and its recent history.
type seriesState struct {
	labels   labels.Labels
	det      detect.Detector
	comp     detect.Composite
	lastSeen time.Time
	last     detect.Verdict
	// info is the composite detector's current informational finding.
	info *model.Explanation
	// run counts consecutive anomalous verdicts (spike vs level shift).
	run    int
	recent []float64
	// still is the time of the first of the latest evaluations in a
	// row with the same value: where a freeze began (see "One hang, one
	// page").
	still time.Time
	// snap is a dormant detector's state (see release): det and comp are
	// nil meanwhile, and a snapshot is smaller than the detector.
	snap []byte
}

// unchanged is how many of the latest values, the current one
// included, are the same value (at most recentLen).
func (s *seriesState) unchanged() int {
	n := len(s.recent)
	if n == 0 {
		return 0
	}
	same := 1
	for i := n - 2; i >= 0 && s.recent[i] == s.recent[n-1]; i-- {
		same++
	}
	return same
}

// push keeps v, the value at ts, among the recent values.
func (s *seriesState) push(ts time.Time, v float64) {
	if n := len(s.recent); n == 0 || s.recent[n-1] != v {
		s.still = ts
	}
	if len(s.recent) == recentLen {
		copy(s.recent, s.recent[1:])
		s.recent = s.recent[:recentLen-1]
	}
	s.recent = append(s.recent, v)
}

// ruleState is a rule's runtime: its detectors, alerts and health.
type ruleState struct {
	rule  *Rule
	group *groupState

	mu     sync.Mutex
	series map[uint64]*seriesState
	// dormant holds the detectors of series gone for longer than
	// series_grace, for series_retention, in case they come back (see
	// release); nil until one is.
	dormant  map[uint64]*seriesState
	alerts   map[uint64]*alertState
	lastEval time.Time
	evalDur  time.Duration
	lastErr  error
	// warmed is set once a warm start was tried.
	warmed bool
	// causes are the pending or firing alerts of the rules named in
	// suppressed_by, gathered at the start of each evaluation, and still
	// the alerts that may suppress a frozen one, gathered when one may
	// be (see needsStill); under mu.
	causes, still []cause
}

// cause is an alert that may suppress others: a pending or firing alert
// of a rule named in suppressed_by (ruleState.causes), or an alert on a
// series that has not moved since since, which may suppress a frozen
// alert (ruleState.still; see "One hang, one page").
type cause struct {
	rule   string
	labels labels.Labels
	since  time.Time
}

func newRuleState(r *Rule, g *groupState) *ruleState {
	return &ruleState{rule: r, group: g, series: map[uint64]*seriesState{}, alerts: map[uint64]*alertState{}}
}

// groupState is a group's runtime.
type groupState struct {
	spec  *Group
	rules []*ruleState
	env   *evalEnv
	// peers are every group loaded with this one, this one included
	// (nil: this one alone); set at load, read only.
	peers []*groupState

	mu       sync.Mutex
	lastEval time.Time
	evalDur  time.Duration
}

// evalEnv is what evaluation needs from its owner.
type evalEnv struct {
	source datasource.Source
	// external labels are added to every alert; replica is the value of
	// the replica label, kept out of the alert's labels.
	external labels.Labels
	replica  string
	// shard selects the series this replica evaluates.
	shard ShardConfig
	// queryOffset is the group's query_offset, else rules.query_offset.
	queryOffset  time.Duration
	lifecycle    Lifecycle
	grace        time.Duration
	retention    time.Duration
	dormantLimit int
	warmStart    time.Duration
	externalURL  *url.URL
	record       func(ctx context.Context, ts time.Time, v promql.Vector) error
	onTransition func(Transition)
	onObserve    func(r *Rule, l labels.Labels, p TracePoint)
	// history, when set, also keeps the composite detectors' other
	// signals, so a live chart shows each signal.
	history *History
	metrics *groupMetrics
}

func newGroupState(g *Group, env *evalEnv) *groupState {
	gs := &groupState{spec: g, env: env}
	for _, r := range g.Rules {
		gs.rules = append(gs.rules, newRuleState(r, gs))
	}
	return gs
}

// eval evaluates every enabled rule at ts and returns the alerts due for
// sending. It never returns early for a failing rule: each rule records its
// own error.
func (g *groupState) eval(ctx context.Context, ts time.Time) ([]*model.Alert, error) {
	start := time.Now() // measurement only; never used as evaluation time
	var (
		out  []*model.Alert
		errs []error
		// Composite signals of one evaluation, by expression: the pack's
		// shapes share request rate and p99 latency, so each is queried
		// once per evaluation, and every rule sees the same values.
		signals = map[string]promql.Vector{}
	)
	for _, rs := range g.rules {
		if !rs.rule.Enabled {
			continue
		}
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
		rstart := time.Now()
		alerts, err := rs.eval(ctx, ts, signals)
		rs.mu.Lock()
		rs.lastEval, rs.evalDur, rs.lastErr = ts, time.Since(rstart), err
		rs.mu.Unlock()
		if err != nil {
			errs = append(errs, fmt.Errorf("rule %q: %w", rs.rule.Name, err))
			if g.env.metrics != nil {
				g.env.metrics.failures.Inc()
			}
		}
		out = append(out, alerts...)
	}
	d := time.Since(start)
	g.mu.Lock()
	g.lastEval, g.evalDur = ts, d
	g.mu.Unlock()
	if g.env.metrics != nil {
		g.env.metrics.evals.Inc()
		g.env.metrics.duration.Update(d.Seconds())
	}
	return out, errors.Join(errs...)
}

func (rs *ruleState) queryTime(ts time.Time) time.Time { return ts.Add(-rs.group.env.queryOffset) }

// eval evaluates the rule at ts; signals holds the composite signals the
// group's evaluation at ts has queried so far (read only once stored).
func (rs *ruleState) eval(ctx context.Context, ts time.Time, signals map[string]promql.Vector) ([]*model.Alert, error) {
	r := rs.rule
	env := rs.group.env
	causes := rs.gatherCauses() // locks the causes' rules, one at a time
	rs.mu.Lock()
	rs.causes = causes
	rs.mu.Unlock()
	switch {
	case r.Type == TypeRecording:
		vec, err := env.source.Instant(ctx, r.Expr, rs.queryTime(ts))
		if err != nil {
			return nil, err
		}
		for i := range vec {
			b := labels.NewBuilder(vec[i].Metric)
			b.Set(labels.MetricName, r.Name)
			rs.group.spec.Labels.Range(func(l labels.Label) { b.Set(l.Name, l.Value) })
			r.Labels.Range(func(l labels.Label) { b.Set(l.Name, l.Value) })
			vec[i].Metric = b.Labels()
			vec[i].T = ts.UnixMilli()
		}
		if env.record != nil {
			return nil, env.record(ctx, ts, vec)
		}
		return nil, nil
	case r.Type == TypeAnomaly && r.Detector.Composite():
		return rs.evalComposite(ctx, ts, signals)
	default:
		return rs.evalSeries(ctx, ts)
	}
}

type obs struct {
	lset    labels.Labels
	series  uint64
	cond    condition
	verdict detect.Verdict
	expl    *model.Explanation
}

// evalSeries evaluates an alerting rule or a univariate anomaly rule: each
// returned series is one alert candidate.
func (rs *ruleState) evalSeries(ctx context.Context, ts time.Time) ([]*model.Alert, error) {
	r := rs.rule
	vec, err := rs.group.env.source.Instant(ctx, r.Expr, rs.queryTime(ts))
	if err != nil {
		return nil, err
	}
	if lim := rs.group.spec.Limit; lim > 0 && len(vec) > lim {
		return nil, fmt.Errorf("query returned %d series, over the group limit %d", len(vec), lim)
	}
	vec = rs.group.env.shard.filter(vec)
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if r.Type == TypeAnomaly {
		rs.warmStart(ctx, ts)
	}
	obsv := make([]obs, 0, len(vec))
	for _, s := range vec {
		if s.H != nil {
			continue
		}
		o := obs{lset: s.Metric, cond: condition{known: true, value: s.F}}
		if r.Type == TypeAnomaly {
			key := s.Metric.Hash()
			ss := rs.wake(key)
			if ss == nil {
				d, err := r.Detector.Config.(detect.UnivariateConfig).New()
				if err != nil {
					return nil, fmt.Errorf("new detector: %w", err)
				}
				ss = &seriesState{labels: s.Metric, det: d}
				rs.series[key] = ss
			}
			v := ss.det.Observe(ts.UnixMilli(), s.F)
			ss.lastSeen, ss.last = ts, v
			ss.push(ts, s.F)
			if v.State == detect.StateAnomalous {
				ss.run++
			} else {
				ss.run = 0
			}
			if obs := rs.group.env.onObserve; obs != nil {
				obs(r, s.Metric, TracePoint{T: ts, Value: s.F, Expected: v.Expected, Lower: v.Lower, Upper: v.Upper, HasBand: v.State != detect.StateWarmingUp})
			}
			o.series = key
			o.verdict = v
			o.cond.active = v.State == detect.StateAnomalous
			o.cond.warming = v.State == detect.StateWarmingUp
			o.cond.held = holdOf(v)
			if o.cond.active {
				o.expl = univariateExplanation(r, v, s.F, ss.run, ss.unchanged())
			}
		} else {
			o.cond.active = true
			if obs := rs.group.env.onObserve; obs != nil {
				obs(r, s.Metric, TracePoint{T: ts, Value: s.F})
			}
		}
		obsv = append(obsv, o)
	}
	rs.release(ts)
	rs.still = nil
	if r.Type == TypeAnomaly && rs.needsStill(obsv) {
		// gatherStill locks other rules, of this group and others; with
		// this one's lock held, two groups' rules could each wait on the
		// other's.
		rs.mu.Unlock()
		still, stopped := rs.gatherStill()
		rs.mu.Lock()
		rs.still = still
		rs.stoppedWith(obsv, stopped)
	}
	return rs.apply(ctx, ts, obsv), nil
}

// warmStart fills the rule's detectors from a range query at its first
// evaluation after a start or reload, so they judge at once instead of
// warming up again: cold detectors get the whole warm_start window, those
// restored from a snapshot the evaluations they missed, and detectors that
// are up to date (a reload that kept them) nothing. A failed query only
// means a slower start. rs.mu is held.
func (rs *ruleState) warmStart(ctx context.Context, ts time.Time) {
	env := rs.group.env
	if rs.warmed {
		return
	}
	rs.warmed = true
	if env.warmStart <= 0 {
		return
	}
	iv := rs.group.spec.Interval
	last := ts.Add(-iv) // the last tick before this one
	first := last.Add(-env.warmStart)
	if len(rs.series) > 0 {
		oldest := last
		for _, ss := range rs.series {
			if ss.lastSeen.Before(oldest) {
				oldest = ss.lastSeen
			}
		}
		if !oldest.Before(last) {
			return // fed up to the last tick
		}
		if oldest.After(first) {
			// Align to the ticks after the oldest one seen.
			first = last.Add(-last.Sub(oldest) / iv * iv).Add(iv)
			if first.After(last) {
				return
			}
		}
	}
	start, end := rs.queryTime(first), rs.queryTime(last)
	off := env.queryOffset
	if rs.rule.Detector.Composite() {
		rs.warmComposite(ctx, start, end, iv, off)
		return
	}
	mat, err := env.source.Range(ctx, rs.rule.Expr, start, end, iv)
	if err != nil {
		return
	}
	if env.metrics != nil {
		env.metrics.warmStarts.Inc()
	}
	for _, s := range mat {
		if !env.shard.Owns(s.Metric.Hash()) {
			continue
		}
		key := s.Metric.Hash()
		ss := rs.wake(key)
		if ss == nil {
			d, err := rs.rule.Detector.Config.(detect.UnivariateConfig).New()
			if err != nil {
				return
			}
			ss = &seriesState{labels: s.Metric, det: d}
			rs.series[key] = ss
		}
		for _, p := range s.Floats {
			pt := time.UnixMilli(p.T).Add(off) // tick time
			if !pt.After(ss.lastSeen) {
				continue
			}
			ss.last = ss.det.Observe(pt.UnixMilli(), p.F)
			ss.push(pt, p.F)
			if ss.last.State == detect.StateAnomalous {
				ss.run++
			} else {
				ss.run = 0
			}
			ss.lastSeen = pt
		}
	}
}

// warmComposite replays every signal's range query through the composite
// detectors, one step at a time, as live evaluation would have fed them.
// rs.mu is held.
func (rs *ruleState) warmComposite(ctx context.Context, start, end time.Time, step, off time.Duration) {
	d := rs.rule.Detector
	env := rs.group.env
	byTime := map[int64][]promql.Vector{}
	for i, sig := range d.Signals {
		mat, err := env.source.Range(ctx, sig.Expr, start, end, step)
		if err != nil {
			return
		}
		for _, s := range mat {
			for _, p := range s.Floats {
				vecs := byTime[p.T]
				if vecs == nil {
					vecs = make([]promql.Vector, len(d.Signals))
					byTime[p.T] = vecs
				}
				vecs[i] = append(vecs[i], promql.Sample{Metric: s.Metric, T: p.T, F: p.F})
			}
		}
	}
	if env.metrics != nil {
		env.metrics.warmStarts.Inc()
	}
	times := make([]int64, 0, len(byTime))
	for t := range byTime {
		times = append(times, t)
	}
	slices.Sort(times)
	for _, t := range times {
		if _, err := rs.feedComposite(time.UnixMilli(t).Add(off), byTime[t], true); err != nil {
			return
		}
	}
}

// evalComposite queries every signal and feeds one composite detector per
// group. Groups are the label sets of the first signal's series (without
// the key label of a per-key signal): `sum(...)` makes one group,
// `sum by (instance) (...)` one per instance. A series of another signal
// feeds every group whose labels include its own, so a signal without
// labels (say, host CPU) feeds them all: a series feeds every group it
// does not contradict (no label of the group with another value).
func (rs *ruleState) evalComposite(ctx context.Context, ts time.Time, signals map[string]promql.Vector) ([]*model.Alert, error) {
	r := rs.rule
	d := r.Detector
	vecs := make([]promql.Vector, len(d.Signals))
	for i, sig := range d.Signals {
		// The query offset is the group's, so the expression is the key.
		vec, ok := signals[sig.Expr]
		if !ok {
			var err error
			vec, err = rs.group.env.source.Instant(ctx, sig.Expr, rs.queryTime(ts))
			if err != nil {
				return nil, fmt.Errorf("signal %s: %w", sig.Name, err)
			}
			signals[sig.Expr] = vec
		}
		vecs[i] = vec
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.warmStart(ctx, ts)
	obsv, err := rs.feedComposite(ts, vecs, false)
	if err != nil {
		return nil, err
	}
	return rs.apply(ctx, ts, obsv), nil
}

// feedComposite feeds one evaluation's signal vectors to the composite
// detectors of the groups this shard owns and returns their observations.
// warm marks a warm-start replay: no trace, no recent values skipped.
// rs.mu is held.
func (rs *ruleState) feedComposite(ts time.Time, vecs []promql.Vector, warm bool) ([]obs, error) {
	r := rs.rule
	d := r.Detector
	groupOf := func(sig Signal, l labels.Labels) labels.Labels {
		b := labels.NewBuilder(l)
		b.Del(labels.MetricName)
		if sig.PerKey && d.KeyLabel != "" {
			b.Del(d.KeyLabel)
		}
		return b.Labels()
	}
	groups := map[uint64]labels.Labels{}
	for _, s := range vecs[0] {
		g := groupOf(d.Signals[0], s.Metric)
		if rs.group.env.shard.Owns(g.Hash()) {
			groups[g.Hash()] = g
		}
	}
	if len(groups) == 0 {
		// No first signal this tick: judge the known groups on what is left.
		for k, ss := range rs.series {
			groups[k] = ss.labels
		}
		if len(groups) == 0 && rs.group.env.shard.Owns(labels.EmptyLabels().Hash()) {
			groups[labels.EmptyLabels().Hash()] = labels.EmptyLabels()
		}
	}
	keys := make([]uint64, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	obsv := make([]obs, 0, len(groups))
	for _, key := range keys {
		g := groups[key]
		in := detect.Inputs{}
		first := math.NaN()
		for i, sig := range d.Signals {
			var vec promql.Vector
			for _, s := range vecs[i] {
				if compatible(s.Metric, g) {
					vec = append(vec, s)
				}
			}
			in[sig.Name] = toSamples(vec, sig.PerKey, d.KeyLabel)
			if i == 0 && len(vec) > 0 {
				first = 0
				for _, s := range vec {
					first += s.F
				}
			}
			if h := rs.group.env.history; h != nil && i > 0 && len(vec) > 0 {
				sum := 0.0
				for _, s := range vec {
					sum += s.F
				}
				h.observe(r, labels.NewBuilder(g).Set("signal", sig.Name).Labels(), TracePoint{T: ts, Value: sum})
			}
		}
		ss := rs.wake(key)
		if ss == nil {
			c, err := d.Config.(detect.CompositeConfig).New()
			if err != nil {
				return nil, fmt.Errorf("new detector: %w", err)
			}
			ss = &seriesState{labels: g, comp: c}
			rs.series[key] = ss
		}
		if warm && !ts.After(ss.lastSeen) {
			continue // a restored detector already saw this tick
		}
		res := ss.comp.Observe(ts.UnixMilli(), in)
		ss.lastSeen, ss.last = ts, res.Verdict
		if !math.IsNaN(first) {
			ss.push(ts, first)
			if obs := rs.group.env.onObserve; obs != nil && !warm {
				v := res.Verdict
				tl := labels.NewBuilder(g)
				tl.Set("signal", d.Signals[0].Name)
				obs(r, tl.Labels(), TracePoint{T: ts, Value: first, Expected: v.Expected, Lower: v.Lower, Upper: v.Upper,
					HasBand: v.State != detect.StateWarmingUp && v.Upper > v.Lower})
			}
		}
		o := obs{
			lset:    g,
			series:  key,
			verdict: res.Verdict,
			expl:    res.Explanation,
			cond: condition{
				known:   true,
				value:   res.Score,
				active:  res.State == detect.StateAnomalous,
				warming: res.State == detect.StateWarmingUp,
			},
		}
		ss.info = nil
		if res.Informational && o.cond.active {
			// Worth telling, not paging (one heavy client limited): shown
			// on /api/v1/rules, never an alert.
			o.cond.active = false
			ss.info = res.Explanation
		}
		obsv = append(obsv, o)
	}
	rs.release(ts)
	return obsv, nil
}

// release moves the detectors of series gone for longer than
// series_grace out of the live set, where the API and the console count
// them, into dormant, and forgets the dormant ones gone for longer than
// series_retention, or, past dormant_limit, those gone longest. A series
// back within it has its detector woken with what it had learnt (see
// wake). Before, it was forgotten at once: a target down for six
// minutes, or a deploy that long, lost every detector of its series,
// days of daily pattern, and they warmed up again from nothing. rs.mu
// is held.
func (rs *ruleState) release(ts time.Time) {
	env := rs.group.env
	for k, ss := range rs.series {
		if ts.Sub(ss.lastSeen) <= env.grace {
			continue
		}
		delete(rs.series, k)
		if env.retention <= env.grace {
			continue
		}
		b, err := ss.marshal()
		if err != nil {
			continue // forgotten, as before there were dormant detectors
		}
		if rs.dormant == nil {
			rs.dormant = map[uint64]*seriesState{}
		}
		// Kept as its snapshot; its anomalous run ended with the series.
		ss.det, ss.comp, ss.snap, ss.run, ss.info = nil, nil, b, 0, nil
		rs.dormant[k] = ss
	}
	for k, ss := range rs.dormant {
		if ts.Sub(ss.lastSeen) > env.retention {
			delete(rs.dormant, k)
		}
	}
	if over := len(rs.dormant) - env.dormantLimit; env.dormantLimit > 0 && over > 0 {
		rs.evictDormant(over)
	}
}

// evictDormant forgets the n dormant detectors whose series have been
// gone longest, counted in seismo_rules_group_dormant_evictions_total.
// It sorts the dormant set, which costs little beside the evaluation's
// query: only a rule past dormant_limit, where series churn, pays it.
func (rs *ruleState) evictDormant(n int) {
	type gone struct {
		key  uint64
		seen time.Time
	}
	all := make([]gone, 0, len(rs.dormant))
	for k, ss := range rs.dormant {
		all = append(all, gone{k, ss.lastSeen})
	}
	slices.SortFunc(all, func(a, b gone) int {
		return cmp.Or(a.seen.Compare(b.seen), cmp.Compare(a.key, b.key))
	})
	for _, g := range all[:n] {
		delete(rs.dormant, g.key)
	}
	if m := rs.group.env.metrics; m != nil {
		m.dormantEvictions.Add(n)
	}
}

// wake returns the detector state of series key: live, or dormant and
// restored into the live set, or nil for a series not seen within
// series_retention (or whose snapshot does not restore). rs.mu is held.
func (rs *ruleState) wake(key uint64) *seriesState {
	if ss := rs.series[key]; ss != nil {
		return ss
	}
	ss := rs.dormant[key]
	if ss == nil {
		return nil
	}
	delete(rs.dormant, key)
	if rs.restore(ss, ss.snap) != nil { // it starts cold
		return nil
	}
	ss.snap = nil
	rs.series[key] = ss
	return ss
}

// allSeries yields every detector state, live and dormant.
func (rs *ruleState) allSeries() iter.Seq2[uint64, *seriesState] {
	return func(yield func(uint64, *seriesState) bool) {
		for _, m := range []map[uint64]*seriesState{rs.series, rs.dormant} {
			for k, ss := range m {
				if !yield(k, ss) {
					return
				}
			}
		}
	}
}

// toSamples turns a query result into detector samples: per key (the
// series' remaining labels) or summed into one scalar.
func toSamples(vec promql.Vector, perKey bool, keyLabel string) []detect.Sample {
	if !perKey {
		if len(vec) == 0 {
			return nil
		}
		sum := 0.0
		for _, s := range vec {
			sum += s.F
		}
		return []detect.Sample{{Value: sum}}
	}
	out := make([]detect.Sample, 0, len(vec))
	for _, s := range vec {
		k := ""
		if keyLabel != "" {
			k = s.Metric.Get(keyLabel)
		}
		if k == "" {
			k = seriesKey(s.Metric)
		}
		out = append(out, detect.Sample{Key: k, Value: s.F})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// seriesKey names a series by its label values: the one value when one
// label is left (`sum by (client)`), else the label set.
func seriesKey(l labels.Labels) string {
	l = l.DropMetricName()
	if l.Len() == 1 {
		var v string
		l.Range(func(x labels.Label) { v = x.Value })
		return v
	}
	return l.String()
}

// apply runs the state machine for this evaluation's observations and for
// known alerts whose series vanished, and returns the alerts to send.
// rs.mu is held.
func (rs *ruleState) apply(ctx context.Context, ts time.Time, obsv []obs) []*model.Alert {
	env := rs.group.env
	seen := make(map[uint64]bool, len(obsv))
	for _, o := range obsv {
		if !o.cond.active && !o.cond.warming {
			// Normal series: only relevant for alerts that already exist.
			if len(rs.alerts) == 0 {
				continue
			}
			lset, _ := rs.alertLabels(ctx, ts, o)
			fp := lset.Hash()
			if a := rs.alerts[fp]; a != nil {
				seen[fp] = true
				rs.stepAlert(ctx, ts, fp, a, o)
			}
			continue
		}
		lset, ann := rs.alertLabels(ctx, ts, o)
		fp := lset.Hash()
		if seen[fp] {
			continue // two series map to one label set; the first wins
		}
		seen[fp] = true
		a := rs.alerts[fp]
		if a == nil {
			a = &alertState{Labels: lset}
			rs.alerts[fp] = a
		}
		a.Annotations = ann
		a.Series = o.series
		// A sample that turns anomalous again within the detector's
		// episode raises no new alert and has no score or evidence of its
		// own: the alert keeps the explanation of what it fired for.
		if o.cond.active && !(o.verdict.Episode && o.verdict.Score == 0 && a.Explanation != nil) {
			a.Verdict, a.Explanation = o.verdict, o.expl
		}
		rs.stepAlert(ctx, ts, fp, a, o)
	}
	for fp, a := range rs.alerts {
		if seen[fp] {
			continue
		}
		rs.stepAlert(ctx, ts, fp, a, obs{})
	}
	var out []*model.Alert
	for _, a := range rs.alerts {
		if a.needsSending(ts, env.lifecycle) {
			a.LastSentAt = ts
			if a.Flapping {
				a.FlapSent = true
			}
			out = append(out, rs.toModel(a, ts))
		}
	}
	return out
}

func (rs *ruleState) stepAlert(ctx context.Context, ts time.Time, fp uint64, a *alertState, o obs) {
	from := a.State
	if !o.cond.known && from == model.StateFiring && rs.rule.Type == TypeAlerting {
		// The series left the result: the condition no longer holds.
		// Record the value the expression's left-hand side has now.
		if v, ok := rs.resolveValue(ctx, ts, a.Labels); ok {
			o.cond.known, o.cond.value = true, v
		}
	}
	drop := a.step(ts, o.cond, rs.rule, rs.group.env.lifecycle)
	rs.suppress(a)
	if a.State != from && rs.group.env.onTransition != nil {
		rs.group.env.onTransition(Transition{
			Time: ts, Group: rs.group.spec.Name, Rule: rs.rule.Name, Labels: a.Labels,
			From: from, To: a.State, Value: a.Value,
			Score: a.Verdict.Score, Expected: a.Verdict.Expected, Lower: a.Verdict.Lower, Upper: a.Verdict.Upper,
			Explanation: a.Explanation, SuppressedBy: a.SuppressedBy, SuppressedHang: a.SuppressedHang,
		})
	}
	if drop {
		delete(rs.alerts, fp)
	}
}

// gatherCauses returns the pending and firing alerts of the rules this
// rule is suppressed by. Rules of a group are evaluated in order, so a
// cause listed earlier in the group is judged at this same tick.
func (rs *ruleState) gatherCauses() []cause {
	if len(rs.rule.SuppressedBy) == 0 {
		return nil
	}
	var out []cause
	for _, o := range rs.group.rules {
		if o == rs || !o.rule.Enabled || !slices.Contains(rs.rule.SuppressedBy, o.rule.Name) {
			continue
		}
		o.mu.Lock()
		for _, a := range o.alerts {
			if a.State == model.StatePending || a.State == model.StateFiring {
				out = append(out, cause{rule: o.rule.Name, labels: a.Labels})
			}
		}
		o.mu.Unlock()
	}
	return out
}

// gatherStill returns the firing, unsuppressed alerts of the other
// univariate anomaly rules, of every group that queries the same
// datasource, whose series have stopped moving: the causes that may
// suppress a frozen alert (see "One hang, one page"). It returns too
// every series of those rules that has stopped moving, alert or not,
// with its labels less the metric name: what a hang's page names as
// stopped with it (see stoppedWith). rs.mu must not be held: it locks
// the other rules, one at a time.
func (rs *ruleState) gatherStill() (out, stopped []cause) {
	groups := rs.group.peers
	if groups == nil {
		groups = []*groupState{rs.group}
	}
	for _, g := range groups {
		if g.spec.Source != rs.group.spec.Source {
			continue
		}
		for _, o := range g.rules {
			if o == rs || !o.rule.Enabled || !univariate(o.rule) {
				continue
			}
			o.mu.Lock()
			for _, a := range o.alerts {
				if a.State != model.StateFiring || a.SuppressedBy != "" {
					continue
				}
				if ss := o.series[a.Series]; ss != nil && ss.unchanged() >= minUnchanged {
					out = append(out, cause{rule: o.rule.Name, labels: a.Labels, since: ss.still})
				}
			}
			for _, ss := range o.series {
				if ss.unchanged() >= minUnchanged {
					stopped = append(stopped, cause{rule: o.rule.Name, labels: ss.labels.DropMetricName(), since: ss.still})
				}
			}
			o.mu.Unlock()
		}
	}
	return out, stopped
}

// maxStoppedWith is how many other series a hang's summary names; the
// explanation's StoppedWith lists them all.
const maxStoppedWith = 5

// stoppedWith names, in the explanation of each observation that is
// anomalous with a new score on a series that has stopped moving, the
// series of other rules of the same target that stopped within
// frozenTogether of it (stopped, from gatherStill): "Queue: frozen at
// 42 ...; stopped with it: Inflight{instance="a"}". The hang pages once
// (see "One hang, one page"), and the page says it is one: that the
// exporter, not the queue, is what stopped. rs.mu is held.
func (rs *ruleState) stoppedWith(obsv []obs, stopped []cause) {
	if len(stopped) == 0 {
		return
	}
	for i := range obsv {
		o := &obsv[i]
		ss := rs.series[o.series]
		if o.expl == nil || !o.cond.active || o.verdict.Score == 0 || ss == nil || ss.unchanged() < minUnchanged {
			continue
		}
		own := ss.labels.DropMetricName()
		var names []string
		for _, c := range stopped {
			if c.since.Sub(ss.still).Abs() <= frozenTogether && model.SameCause(c.labels, own) {
				name := c.rule
				if !c.labels.IsEmpty() {
					name += c.labels.String()
				}
				names = append(names, name)
			}
		}
		if len(names) == 0 {
			continue
		}
		slices.Sort(names)
		names = slices.Compact(names)
		o.expl.StoppedWith = names
		shown := strings.Join(names[:min(len(names), maxStoppedWith)], ", ")
		if len(names) > maxStoppedWith {
			shown += fmt.Sprintf(" and %d more", len(names)-maxStoppedWith)
		}
		o.expl.Summary += "; stopped with it: " + shown
	}
}

// needsStill reports whether this evaluation may suppress a frozen alert
// or name what stopped with one, so that gatherStill is worth its locks:
// an observation says frozen, or begins a run on a series that has
// stopped moving, or an alert that says frozen is pending or firing
// unsent and not held back for good. Most evaluations have none of
// these, and gather nothing: with 20 rules of 50 firing alerts each,
// gathering at every evaluation took a group's evaluation from about 5
// to 9 ms. rs.mu is held.
func (rs *ruleState) needsStill(obsv []obs) bool {
	for i := range obsv {
		if obsv[i].cond.active && obsv[i].verdict.Evidence == detect.EvidenceFrozen {
			return true
		}
		// The first anomalous verdict of a run, whatever its evidence,
		// on a series that has stopped moving: its alert's summary names
		// what stopped with it (see stoppedWith). Only the first: the
		// plain kinds score every anomalous sample, and gathering at
		// each of them took a group of 20 rules with 50 firing alerts
		// each from 7 to 47 ms an evaluation.
		if obsv[i].cond.active && obsv[i].verdict.Score > 0 {
			if ss := rs.series[obsv[i].series]; ss != nil && ss.run == 1 && ss.unchanged() >= minUnchanged {
				return true
			}
		}
	}
	for _, a := range rs.alerts {
		if isFrozen(a) && (a.State == model.StatePending || a.State == model.StateFiring && a.LastSentAt.IsZero() && !a.SuppressedHang) {
			return true
		}
	}
	return false
}

// univariate reports whether r is an anomaly rule with a detector per
// series, whose alerts may say a metric has stopped moving.
func univariate(r *Rule) bool {
	return r.Type == TypeAnomaly && r.Detector != nil && !r.Detector.Composite()
}

// isFrozen reports whether a's explanation says its metric has stopped
// moving.
func isFrozen(a *alertState) bool {
	return a.Explanation != nil && a.Explanation.Kind == "frozen"
}

// One hang, one page
//
// An exporter that hangs while still being scraped, a Pushgateway whose
// pusher died, or a textfile collector whose writer stopped freezes every
// metric it serves at once. Each anomaly rule watching one of them pages
// it as frozen, and rules differ in alertname, so each was its own group
// downstream and its own page: five rules over one hung exporter paged
// five times for one cause. So a frozen alert is suppressed, as by
// suppressed_by, while an alert of another univariate anomaly rule is
// firing, unsuppressed, with the same values of the labels both carry
// (model.SameCause: the same target), on a series that has not moved for
// minUnchanged evaluations or more, since within frozenTogether of when
// this one's stopped. The other rule may be of any group on the same
// datasource: one exporter's metrics are often watched from several
// groups. The first of them pages; the others are shown, suppressed by its
// rule, in the console and the API, and stay so until they resolve (see
// suppress).
//
// Firing, not pending as for suppressed_by: a cause still pending under a
// longer `for:` may never page if the hang ends first, and nothing would
// have paged it. The first need not have paged as frozen: a freeze on a
// daily cycle may page first as unusual for the time of day, minutes
// before its run is long enough to be judged frozen. A freeze elsewhere
// (another instance) or at another time is another cause and pages. Within
// one rule its series share an alertname, and grouping downstream already
// gathers them.

// frozenTogether is how close in time two series' freezes must begin to
// be one hang. A hang stops every series it serves at the same scrape,
// but a rule over a window (avg_over_time(x[5m])) keeps moving until the
// window has passed it, and a series may have repeated its value by
// chance just before. The ten minutes are the least span a freeze must
// have to page (detect, "A value that stops moving").
const frozenTogether = 10 * time.Minute

// suppress decides whether a pending or firing alert is suppressed: while
// an alert of a rule in suppressed_by is pending or firing with the same
// values of the labels both carry (alertname and severity aside), this
// alert is not sent. An alert already sent as firing is not taken back,
// and when its cause ends an alert still firing is sent from then on. A
// resolved alert keeps its mark, so the resolve of an alert never sent is
// not sent either. rs.mu is held.
func (rs *ruleState) suppress(a *alertState) {
	if a.State != model.StatePending && a.State != model.StateFiring {
		if a.State != model.StateResolved {
			a.SuppressedBy, a.SuppressedHang = "", false
		}
		return
	}
	if a.State == model.StateFiring && a.SuppressedBy == "" && !a.LastSentAt.IsZero() {
		return // already paged
	}
	if a.State == model.StateFiring && a.SuppressedHang {
		// One hang: the page went out for it. When the hang ends, the
		// alert that paged may resolve first; this one is its tail.
		return
	}
	a.SuppressedBy, a.SuppressedHang = "", false
	var since time.Time
	if ss := rs.series[a.Series]; isFrozen(a) && ss != nil {
		since = ss.still
	}
	for _, c := range rs.causes {
		if model.SameCause(c.labels, a.Labels) {
			a.SuppressedBy = c.rule
			return
		}
	}
	if since.IsZero() {
		return
	}
	for _, c := range rs.still {
		if c.since.Sub(since).Abs() <= frozenTogether && model.SameCause(c.labels, a.Labels) {
			a.SuppressedBy, a.SuppressedHang = c.rule, true
			return
		}
	}
}

// resolveValue evaluates the non-literal side of a comparison such as
// `x > 0.05` for the resolved alert's series, so a resolve message carries
// the value at resolve time rather than the last firing value.
func (rs *ruleState) resolveValue(ctx context.Context, ts time.Time, alertLabels labels.Labels) (float64, bool) {
	be, ok := rs.rule.expr.(*parser.BinaryExpr)
	if !ok || !be.Op.IsComparisonOperator() || be.ReturnBool {
		return 0, false
	}
	side := be.LHS
	if _, lit := be.LHS.(*parser.NumberLiteral); lit {
		side = be.RHS
	} else if _, lit := be.RHS.(*parser.NumberLiteral); !lit {
		return 0, false
	}
	vec, err := rs.group.env.source.Instant(ctx, side.String(), rs.queryTime(ts))
	if err != nil {
		return 0, false
	}
	for _, s := range vec {
		if s.H == nil && labelsMatch(s.Metric, alertLabels) {
			return s.F, true
		}
	}
	return 0, false
}

// compatible reports whether series has no label of group with another
// value.
func compatible(series, group labels.Labels) bool {
	ok := true
	group.Range(func(l labels.Label) {
		if v := series.Get(l.Name); v != "" && v != l.Value {
			ok = false
		}
	})
	return ok
}

// labelsMatch reports whether every label of series (but its name) has the
// same value in alert.
func labelsMatch(series, alert labels.Labels) bool {
	ok := true
	series.Range(func(l labels.Label) {
		if l.Name != labels.MetricName && alert.Get(l.Name) != l.Value {
			ok = false
		}
	})
	return ok
}

// alertLabels builds an alert's final label set and annotations.
func (rs *ruleState) alertLabels(ctx context.Context, ts time.Time, o obs) (labels.Labels, labels.Labels) {
	r := rs.rule
	env := rs.group.env
	data := templateData{
		Labels: o.lset.DropMetricName().Map(), Value: o.cond.value,
		Score: o.verdict.Score, Expected: o.verdict.Expected, Lower: o.verdict.Lower, Upper: o.verdict.Upper,
	}
	if o.expl != nil {
		data.Summary = o.expl.Summary
	}
	var q template.QueryFunc = env.source.Instant
	b := labels.NewBuilder(o.lset.DropMetricName())
	// External labels first, so that series, group and rule labels win
	// (as Prometheus keeps a rule's own label over an external one).
	env.external.Range(func(l labels.Label) {
		if b.Get(l.Name) == "" {
			b.Set(l.Name, l.Value)
		}
	})
	rs.group.spec.Labels.Range(func(l labels.Label) { b.Set(l.Name, l.Value) })
	r.Labels.Range(func(l labels.Label) {
		b.Set(l.Name, expandTemplate(ctx, r.Name, l.Value, data, ts, q, env.externalURL))
	})
	b.Set(labels.AlertName, r.Name)
	lset := b.Labels()
	if !o.cond.active {
		return lset, labels.EmptyLabels()
	}
	data.Labels = lset.Map()
	ab := labels.NewScratchBuilder(r.Annotations.Len())
	r.Annotations.Range(func(l labels.Label) {
		ab.Add(l.Name, expandTemplate(ctx, r.Name, l.Value, data, ts, q, env.externalURL))
	})
	return lset, ab.Labels()
}

// toModel renders an alert for the notifier.
func (rs *ruleState) toModel(a *alertState, ts time.Time) *model.Alert {
	lc := rs.group.env.lifecycle
	m := &model.Alert{
		Labels:      a.Labels,
		Annotations: a.Annotations.Map(),
		State:       a.State,
		StartsAt:    a.FiredAt,
		Value:       a.Value,
		PeakValue:   a.PeakValue,
		Flapping:    a.Flapping,
		Unrecovered: a.Unrecovered && a.State == model.StateResolved,
		Explanation: a.Explanation,
		Draft:       rs.rule.Draft,
		Replica:     rs.group.env.replica,
	}
	if u := rs.group.env.externalURL; u != nil {
		m.GeneratorURL = u.String() + "/api/v1/rules?rule=" + url.QueryEscape(rs.rule.Name)
	}
	validFor := 4 * max(lc.ResendDelay, rs.group.spec.Interval)
	switch {
	case a.Flapping:
		// While flapping the alert stays open downstream.
		m.State = model.StateFiring
		m.EndsAt = ts.Add(validFor)
	case a.State == model.StateResolved:
		m.EndsAt = a.ResolvedAt
	default:
		m.EndsAt = ts.Add(validFor)
	}
	var recent []float64
	if ss := rs.series[a.Series]; ss != nil && a.Series != 0 {
		recent = ss.recent
	}
	m.Recent = append([]float64(nil), recent...)
	return m
}

// univariateExplanation describes a univariate verdict: a spike or dip
// while it is young, a level shift once it persists.
func univariateExplanation(r *Rule, v detect.Verdict, value float64, run, unchanged int) *model.Explanation {
	kind := "spike"
	switch {
	case v.Evidence == detect.EvidenceFrozen:
		kind = "frozen"
	case run >= 3:
		kind = "level_shift"
	case v.Direction == detect.DirDown:
		kind = "dip"
	}
	n := fmtNums(value, v.Expected, v.Lower, v.Upper)
	// A value inside its normal band moved nowhere worth a direction: it
	// is anomalous for what the evidence says (a run of samples, its
	// changes), and "spike up to 0, expected 0" read as a contradiction.
	what := strings.ReplaceAll(kind, "_", " ") + " " + directionWord(v.Direction) + " to"
	if v.Lower <= value && value <= v.Upper {
		what = "value"
	}
	summary := fmt.Sprintf("%s: %s %s, expected %s (normal %s to %s)", r.Name, what, n[0], n[1], n[2], n[3])
	if why := evidenceWords(v.Evidence); why != "" {
		summary += "; " + why
	}
	if unchanged >= minUnchanged {
		// A value that has stopped moving is the likeliest cause of an
		// alert on a series that used to move: an exporter that hangs
		// keeps serving its last value, and "unusual for this time of
		// day" alone did not say so.
		summary += fmt.Sprintf("; unchanged at %s for the last %d evaluations", n[0], unchanged)
		if unchanged == recentLen {
			summary += " or more"
		}
	}
	cause := ""
	if kind == "frozen" {
		cause = "the metric has stopped updating (an exporter or source that hangs), so its value no longer says how the service is"
	}
	return &model.Explanation{
		Detector:  r.Detector.Type,
		Kind:      kind,
		Cause:     cause,
		Score:     v.Score,
		Direction: v.Direction.String(),
		Evidence:  v.Evidence.String(),
		Signals: []model.Signal{{
			Name: "value", Query: r.Expr, Current: value,
			Expected: v.Expected, Lower: v.Lower, Upper: v.Upper,
		}},
		Summary: summary,
	}
}

// evidenceWords says in words what the detector found unusual, for the
// summary: without it, a value that is unusual without leaving the band
// (a run of samples unlikely together, or changes far larger than usual)
// read as a contradiction, "to 57, expected 55 (normal 40 to 70)".
func evidenceWords(e detect.Evidence) string {
	switch e {
	case detect.EvidenceLevel:
		return "its recent samples together lie unusually far from its level"
	case detect.EvidenceTimeOfDay:
		return "unusual for this time of day"
	case detect.EvidenceChanges:
		return "it moves from sample to sample far more than usual"
	case detect.EvidenceSpike:
		return "far outside the spread of its recent samples"
	case detect.EvidenceRecord:
		// Not worded by the direction, which is the value's side of the
		// expected value: a record high can lie below a day's profile
		// that expected more.
		return "outside the range of every value seen before"
	case detect.EvidenceZero:
		return "it fell to 0 from well above it, as after a restart or with missing data written as 0"
	case detect.EvidenceFrozen:
		return "it has stopped moving, one value repeated for longer than its repeats have lasted before, as an exporter that hangs leaves it"
	}
	return ""
}

func directionWord(d detect.Direction) string {
	if d == detect.DirDown {
		return "down"
	}
	return "up"
}

func fmtNum(v float64) string {
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// fmtNums formats numbers shown together (a value, its expected value and
// band) with fmtNum, printing as 0 any that is below a millionth of the
// largest: a band's edge at 3e-09 on a queue of 47 is the detector's
// float tolerance, not a bound anyone reads.
func fmtNums(vs ...float64) []string {
	top := 0.0
	for _, v := range vs {
		top = max(top, math.Abs(v))
	}
	out := make([]string, len(vs))
	for i, v := range vs {
		if math.Abs(v) < 1e-6*top {
			v = 0
		}
		out[i] = fmtNum(v)
	}
	return out
}
