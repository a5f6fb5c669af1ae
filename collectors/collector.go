// Package collectors samples metrics and appends them to the embedded store:
// scrapes of Prometheus/OpenMetrics targets (static and file_sd), host CPU,
// load, memory and pressure stall information, cgroup v1/v2 CPU usage and
// throttling, and HTTP probes. The Scheduler owns time: it runs every target
// on its job's interval at a deterministic offset, writes staleness markers
// when series or targets disappear, and keeps the self-metrics
// seismo_collector_*.
package collectors

import (
	"context"
	"time"

	"github.com/prometheus/prometheus/model/labels"
)

// Sample is one value of one series at the collection time.
type Sample struct {
	Labels labels.Labels
	Value  float64
}

// Collector produces samples on demand. The Scheduler calls Collect from a
// single goroutine per target, at most once at a time, with a ctx that ends
// at the job's timeout; Collect must return promptly when ctx ends. now is
// the collection timestamp every returned sample gets. The returned slice may
// be reused by the next call.
//
// Returned samples carry their own labels; the Scheduler adds job and
// instance (and the target's static labels) unless a sample already has
// them.
type Collector interface {
	Collect(ctx context.Context, now time.Time) ([]Sample, error)
}

// CollectorFunc adapts a function to Collector.
type CollectorFunc func(ctx context.Context, now time.Time) ([]Sample, error)

// Collect calls f.
func (f CollectorFunc) Collect(ctx context.Context, now time.Time) ([]Sample, error) {
	return f(ctx, now)
}
