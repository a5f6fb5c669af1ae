package datasource

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/util/annotations"
)

// LocalOptions configure a Local source.
type LocalOptions struct {
	// Queryable is what the engine reads: the embedded store.
	Queryable storage.Queryable
	Logger    *slog.Logger
	// Timeout bounds one query; zero means two minutes, like Prometheus.
	Timeout time.Duration
	// MaxSamples bounds the samples one query may hold in memory; zero
	// means 50 million, Prometheus' default.
	MaxSamples int
	// LookbackDelta is how far back an instant selector looks; zero means
	// five minutes.
	LookbackDelta time.Duration
	// MaxConcurrent bounds the queries evaluated at once; more wait for a
	// turn, at most Timeout, and then fail as timed out. Zero means no
	// bound. PromQL evaluation is CPU-bound: more queries at once than
	// cores only makes each slower and starves everything else.
	MaxConcurrent int
	// CPUShare, between 0 and 1, bounds the share of time each of the
	// MaxConcurrent turns is in use: after a query held its turn for d, the
	// turn stays taken for d*(1/CPUShare - 1) more, so queries waiting in
	// line cannot keep a CPU busy all the time. 0 or 1 means no pause.
	CPUShare float64
	// Now is the clock the pause is measured with; nil means time.Now.
	Now func() time.Time
	// Types, when set, gives the metric families' types that the
	// scrapes into the store found (store.Store.MetricTypes); the source
	// is then a Typer.
	Types func() map[string]string
}

// Local evaluates PromQL with Prometheus' own engine over a Queryable (the
// embedded store), so rule expressions get exact PromQL semantics.
type Local struct {
	// The engine is built on the first query: an engine holds a few
	// hundred kilobytes of query statistics, which a source nobody
	// queries (such as the HTTP API's, usually) need not keep.
	engineOpts promql.EngineOpts
	engineOnce sync.Once
	eng        *promql.Engine
	q          storage.Queryable
	timeout    time.Duration
	turns      chan struct{} // nil: no bound on concurrent queries
	rest       float64       // pause after a turn, as a multiple of its length
	now        func() time.Time
	types      func() map[string]string // nil: no types known
}

func (l *Local) engine() *promql.Engine {
	l.engineOnce.Do(func() { l.eng = promql.NewEngine(l.engineOpts) })
	return l.eng
}

// NewLocal returns the "local" source.
func NewLocal(opts LocalOptions) (*Local, error) {
	if opts.Queryable == nil {
		return nil, errors.New("datasource: local source needs a queryable")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	eo := promql.EngineOpts{
		Logger:               opts.Logger.With("component", "promql"),
		MaxSamples:           cmpInt(opts.MaxSamples, 50_000_000),
		Timeout:              cmpDur(opts.Timeout, 2*time.Minute),
		LookbackDelta:        cmpDur(opts.LookbackDelta, 5*time.Minute),
		EnableAtModifier:     true,
		EnableNegativeOffset: true,
	}
	l := &Local{engineOpts: eo, q: opts.Queryable, timeout: eo.Timeout, types: opts.Types}
	if opts.MaxConcurrent > 0 {
		l.turns = make(chan struct{}, opts.MaxConcurrent)
	}
	if opts.CPUShare < 0 || opts.CPUShare > 1 {
		return nil, fmt.Errorf("datasource: CPU share must be between 0 and 1, got %g", opts.CPUShare)
	}
	if opts.CPUShare > 0 && opts.CPUShare < 1 {
		l.rest = 1/opts.CPUShare - 1
	}
	l.now = opts.Now
	if l.now == nil {
		l.now = time.Now
	}
	return l, nil
}

// MetricTypes implements Typer with LocalOptions.Types: an empty map
// where none was given, or before the first scrape.
func (l *Local) MetricTypes(context.Context) (map[string]string, error) {
	if l.types == nil {
		return map[string]string{}, nil
	}
	return l.types(), nil
}

// turn waits for a query turn, at most the query timeout, and returns the
// function that gives it back.
func (l *Local) turn(ctx context.Context) (func(), error) {
	if l.turns == nil {
		return func() {}, nil
	}
	t := time.NewTimer(l.timeout)
	defer t.Stop()
	select {
	case l.turns <- struct{}{}:
		if l.rest == 0 {
			return func() { <-l.turns }, nil
		}
		start := l.now()
		return func() {
			// Rest without holding up the caller: its answer is written
			// while the turn stays taken.
			pause := min(time.Duration(float64(l.now().Sub(start))*l.rest), l.timeout)
			if pause <= 0 {
				<-l.turns
				return
			}
			time.AfterFunc(pause, func() { <-l.turns })
		}, nil
	case <-t.C:
		return nil, promql.ErrQueryTimeout("waiting for a turn to evaluate")
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func cmpInt(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

func cmpDur(v, def time.Duration) time.Duration {
	if v == 0 {
		return def
	}
	return v
}

// Name implements Source.
func (*Local) Name() string { return "local" }

// Instant implements Source.
func (l *Local) Instant(ctx context.Context, q string, ts time.Time) (promql.Vector, error) {
	v, _, err := l.Query(ctx, q, ts)
	if err != nil {
		return nil, err
	}
	return asVector(v)
}

// Range implements Source.
func (l *Local) Range(ctx context.Context, q string, start, end time.Time, step time.Duration) (promql.Matrix, error) {
	v, _, err := l.QueryRange(ctx, q, start, end, step)
	if err != nil {
		return nil, err
	}
	m, ok := v.(promql.Matrix)
	if !ok {
		return nil, fmt.Errorf("range query returned %s, want matrix", v.Type())
	}
	return m, nil
}

// Query evaluates q at ts and returns any result type (vector, scalar,
// matrix for a range selector, string) with the engine's warnings, as the
// HTTP API needs. The result does not alias engine memory.
func (l *Local) Query(ctx context.Context, q string, ts time.Time) (parser.Value, annotations.Annotations, error) {
	done, err := l.turn(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer done()
	qry, err := l.engine().NewInstantQuery(ctx, l.q, nil, q, ts)
	if err != nil {
		return nil, nil, err
	}
	defer qry.Close()
	res := qry.Exec(ctx)
	if res.Err != nil {
		return nil, res.Warnings, res.Err
	}
	return detach(res.Value), res.Warnings, nil
}

// QueryRange evaluates q over [start, end] every step.
func (l *Local) QueryRange(ctx context.Context, q string, start, end time.Time, step time.Duration) (parser.Value, annotations.Annotations, error) {
	if step <= 0 {
		return nil, nil, errors.New("step must be positive")
	}
	done, err := l.turn(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer done()
	qry, err := l.engine().NewRangeQuery(ctx, l.q, nil, q, start, end, step)
	if err != nil {
		return nil, nil, err
	}
	defer qry.Close()
	res := qry.Exec(ctx)
	if res.Err != nil {
		return nil, res.Warnings, res.Err
	}
	return detach(res.Value), res.Warnings, nil
}

// detach copies what the engine may hand back to its pools on Close.
func detach(v parser.Value) parser.Value {
	switch x := v.(type) {
	case promql.Vector:
		return slices.Clone(x)
	case promql.Matrix:
		out := make(promql.Matrix, len(x))
		for i, s := range x {
			out[i] = promql.Series{Metric: s.Metric, Floats: slices.Clone(s.Floats), Histograms: slices.Clone(s.Histograms)}
		}
		return out
	}
	return v
}

// asVector turns an instant result into a vector: a scalar becomes one
// sample with empty labels.
func asVector(v parser.Value) (promql.Vector, error) {
	switch x := v.(type) {
	case promql.Vector:
		return x, nil
	case promql.Scalar:
		return promql.Vector{{T: x.T, F: x.V, Metric: labels.EmptyLabels()}}, nil
	}
	return nil, fmt.Errorf("instant query returned %s, want vector or scalar", v.Type())
}

var _ Source = (*Local)(nil)
