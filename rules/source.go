package rules

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/storage"

	"github.com/seismo-agent/seismo/datasource"
	"github.com/seismo-agent/seismo/store"
)

// engineSource answers PromQL with Prometheus' engine over a Queryable; the
// replay and unit-test commands use it over a store they fill themselves.
type engineSource struct {
	eng *promql.Engine
	q   storage.Queryable
}

func newEngineSource(q storage.Queryable) *engineSource {
	return &engineSource{
		q: q,
		eng: promql.NewEngine(promql.EngineOpts{
			MaxSamples:           50_000_000,
			Timeout:              time.Minute,
			LookbackDelta:        5 * time.Minute,
			EnableAtModifier:     true,
			EnableNegativeOffset: true,
			Parser:               promqlParser,
		}),
	}
}

func (s *engineSource) Name() string { return "local" }

func (s *engineSource) Instant(ctx context.Context, q string, ts time.Time) (promql.Vector, error) {
	qry, err := s.eng.NewInstantQuery(ctx, s.q, nil, q, ts)
	if err != nil {
		return nil, err
	}
	defer qry.Close()
	res := qry.Exec(ctx)
	if res.Err != nil {
		return nil, res.Err
	}
	switch v := res.Value.(type) {
	case promql.Vector:
		return v, nil
	case promql.Scalar:
		return promql.Vector{{T: v.T, F: v.V}}, nil
	}
	return nil, errors.New("expression must return a vector or a scalar, got " + string(res.Value.Type()))
}

func (s *engineSource) Range(ctx context.Context, q string, start, end time.Time, step time.Duration) (promql.Matrix, error) {
	qry, err := s.eng.NewRangeQuery(ctx, s.q, nil, q, start, end, step)
	if err != nil {
		return nil, err
	}
	defer qry.Close()
	res := qry.Exec(ctx)
	if res.Err != nil {
		return nil, res.Err
	}
	return res.Matrix()
}

// NewQueryableSource returns a Source that runs Prometheus' engine over q,
// for commands that fill a store of their own (replay, unit tests).
func NewQueryableSource(q storage.Queryable) datasource.Source {
	return newEngineSource(q)
}

// RecordTo returns a recording-rule sink that appends results to st, so
// that later rules (and later ticks of a replay) can read them.
func RecordTo(st *store.Store) func(ctx context.Context, ts time.Time, v promql.Vector) error {
	return func(_ context.Context, ts time.Time, v promql.Vector) error {
		app := st.Appender()
		var errs []error
		for _, s := range v {
			if _, err := app.Append(store.SeriesRef{}, s.Metric, ts.UnixMilli(), s.F); err != nil {
				errs = append(errs, fmt.Errorf("record %s: %w", s.Metric, err))
			}
		}
		app.Commit()
		return errors.Join(errs...)
	}
}
