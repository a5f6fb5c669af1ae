package collectors

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/seismo-agent/seismo/store"
)

// Target is one scrape target driven by its caller instead of the
// Scheduler: the caller picks every timestamp. It behaves exactly like a
// scheduled target (same labels, synthetic series, limits, staleness). It
// is for tests, backfills and tools; it is not safe for concurrent use.
type Target struct {
	l     *loop
	app   *store.Appender
	cache *seriesCache
	synth *synthetic
}

// NewScrapeTarget returns a target of job sc (defaults from DefaultConfig
// applied) at instance (host:port), appending to st and counting into set
// (nil: nowhere).
func NewScrapeTarget(sc ScrapeConfig, instance string, st *store.Store, set *metrics.Set) (*Target, error) {
	cfg := DefaultConfig()
	cfg.Host.Enabled, cfg.Cgroup.Enabled = false, false
	if len(sc.StaticConfigs) == 0 && len(sc.FileSDConfigs) == 0 {
		sc.StaticConfigs = []StaticConfig{{Targets: []string{instance}}}
	}
	cfg.ScrapeConfigs = []ScrapeConfig{sc}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if set == nil {
		set = metrics.NewSet()
	}
	s := &Scheduler{store: st, set: set, now: time.Now}
	s.logger = discardLogger()
	j, err := s.newJob(jobSpecs(cfg)[0])
	if err != nil {
		return nil, err
	}
	j.m = newJobMetrics(set, sc.JobName)
	var extra map[string]string
	for _, g := range sc.StaticConfigs {
		for _, t := range g.Targets {
			if t == instance {
				extra = g.Labels
			}
		}
	}
	b := labels.NewBuilder(labels.FromMap(extra))
	b.Set("job", sc.JobName)
	b.Set("instance", instance)
	ls := b.Labels()
	l := j.newLoop(ls.String(), ls)
	l.tm = j.m.target(instance)
	return &Target{l: l, app: st.Appender(), cache: newSeriesCache(), synth: newSynthetic(ls)}, nil
}

// Collect scrapes once, stamping every sample with ts, and returns the
// scrape's error (up is 0 then).
func (t *Target) Collect(ctx context.Context, ts time.Time) error {
	t.l.once(ctx, ts, t.app, t.cache, t.synth)
	if t.l.tm.lastErr != "" {
		return fmt.Errorf("scrape %s: %s", t.l.instance, t.l.tm.lastErr)
	}
	return nil
}

// Stop marks every series of the target stale at ts, as when the target
// goes away.
func (t *Target) Stop(ts time.Time) {
	ms := ts.UnixMilli()
	t.cache.staleAll(t.app, ms)
	stale := math.Float64frombits(value.StaleNaN)
	t.synth.append(t.app, ms, [3]float64{stale, stale, stale})
	t.app.Commit()
}
