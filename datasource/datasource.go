// Package datasource answers PromQL for the rules engine and the HTTP API,
// either from the embedded store through Prometheus' own engine or from a
// remote Prometheus-compatible API (Prometheus, VictoriaMetrics, Thanos,
// Mimir). Callers cannot tell the two apart.
package datasource

import (
	"context"
	"time"

	"github.com/prometheus/prometheus/promql"
)

// Source evaluates PromQL. Implementations are safe for concurrent use and
// return promptly when ctx is cancelled.
type Source interface {
	// Name identifies the source in logs, metrics and errors ("local" for
	// the embedded store).
	Name() string
	// Instant evaluates q at ts. A scalar result is returned as a one-element
	// vector with empty labels.
	Instant(ctx context.Context, q string, ts time.Time) (promql.Vector, error)
	// Range evaluates q over [start, end] every step.
	Range(ctx context.Context, q string, start, end time.Time, step time.Duration) (promql.Matrix, error)
}

// Typer is a Source that knows its metrics' types from their metadata,
// as Prometheus' /api/v1/metadata gives them: metric family → "counter",
// "gauge", "histogram", "summary", ... A family it does not know is not
// in the map; a source that keeps no metadata (VictoriaMetrics) returns
// an empty one.
type Typer interface {
	MetricTypes(ctx context.Context) (map[string]string, error)
}
