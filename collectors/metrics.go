package collectors

import (
	"strings"

	"github.com/VictoriaMetrics/metrics"
)

// jobMetrics are a job's self-metrics, registered when the job starts
// (label values initialised to 0) and removed when it stops.
type jobMetrics struct {
	set      *metrics.Set
	jobLabel string // job="name"
	names    []string
	appended *metrics.Counter
	targets  *metrics.Gauge
	errors   map[string]*metrics.Counter
	dropped  map[string]*metrics.Counter
}

// targetMetrics are one target's gauges.
type targetMetrics struct {
	names    []string
	duration *metrics.Gauge
	success  *metrics.Gauge
	lastErr  string // owned by the target's loop
}

func newJobMetrics(set *metrics.Set, job string) *jobMetrics {
	m := &jobMetrics{set: set, errors: map[string]*metrics.Counter{}, dropped: map[string]*metrics.Counter{}}
	jl := `job=` + quoteLabel(job)
	m.jobLabel = jl
	m.appended = m.counter(`seismo_collector_samples_appended_total{` + jl + `}`)
	name := `seismo_collector_targets{` + jl + `}`
	m.targets = set.GetOrCreateGauge(name, nil)
	m.names = append(m.names, name)
	for _, r := range errorReasons {
		m.errors[r] = m.counter(`seismo_collector_errors_total{` + jl + `,reason="` + r + `"}`)
	}
	for _, r := range dropReasons {
		m.dropped[r] = m.counter(`seismo_collector_samples_dropped_total{` + jl + `,reason="` + r + `"}`)
	}
	return m
}

func (m *jobMetrics) counter(name string) *metrics.Counter {
	m.names = append(m.names, name)
	return m.set.GetOrCreateCounter(name)
}

func (m *jobMetrics) target(instance string) *targetMetrics {
	ls := `{` + m.jobLabel + `,instance=` + quoteLabel(instance) + `}`
	t := &targetMetrics{names: []string{"seismo_collector_duration_seconds" + ls, "seismo_collector_success" + ls}}
	t.duration = m.set.GetOrCreateGauge(t.names[0], nil)
	t.success = m.set.GetOrCreateGauge(t.names[1], nil)
	return t
}

func (m *jobMetrics) removeTarget(t *targetMetrics) {
	for _, n := range t.names {
		m.set.UnregisterMetric(n)
	}
}

func (m *jobMetrics) unregister() {
	for _, n := range m.names {
		m.set.UnregisterMetric(n)
	}
}

// quoteLabel quotes a label value as the exposition format escapes it.
func quoteLabel(v string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(v) + `"`
}
