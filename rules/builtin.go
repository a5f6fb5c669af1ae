package rules

import (
	"bytes"
	"embed"
	"fmt"
	"math"
	"strings"
	"text/template"
	"time"

	"github.com/prometheus/common/model"

	"github.com/seismo-agent/seismo/detect"
	"github.com/seismo-agent/seismo/internal/configutil"
)

//go:embed builtin/*.yml
var builtinFS embed.FS

// BuiltinFile is the name built-in groups carry as their file.
const BuiltinFile = "<builtin>/pack.yml"

// BuiltinConfig configures the embedded rule pack.
type BuiltinConfig struct {
	// Enabled loads the pack.
	Enabled bool `koanf:"enabled"`
	// Disabled lists rule names of the pack to switch off.
	Disabled []string `koanf:"disabled"`
	// Interval is the pack's evaluation interval.
	Interval time.Duration `koanf:"interval"`
	// Component names the service in status-update drafts.
	Component string `koanf:"component"`
	// ErrorRatio is the 5xx share above which HighErrorRate fires.
	ErrorRatio float64 `koanf:"error_ratio"`
	// RateWindow is the range of every rate() and histogram window in the
	// pack. Shorter reacts faster and is noisier; keep at least four
	// scrape intervals.
	RateWindow time.Duration `koanf:"rate_window"`
	// KeepFiringFor is the keep_firing_for of the pack's storm, surge,
	// 5xx and probe rules: how long they stay firing after their
	// condition clears, so one incident that comes in waves is one alert.
	// 0 resolves at once.
	KeepFiringFor time.Duration `koanf:"keep_firing_for"`
	// Metrics names the metrics and labels the pack reads.
	Metrics BuiltinMetrics `koanf:"metrics"`
}

// BuiltinMetrics names the metrics and labels the built-in pack queries:
// the one place to adapt it to a service's naming.
type BuiltinMetrics struct {
	// Selector is added to every selector, e.g. `job="shop"`.
	Selector       string `koanf:"selector"`
	Requests       string `koanf:"requests"`
	DurationBucket string `koanf:"duration_bucket"`
	ProcessCPU     string `koanf:"process_cpu"`
	NodeCPU        string `koanf:"node_cpu"`
	Probe          string `koanf:"probe"`
	Up             string `koanf:"up"`
	QueueLength    string `koanf:"queue_length"`
	InFlight       string `koanf:"in_flight"`
	Workers        string `koanf:"workers"`
	// WorkerPoolSize is the pool's fixed size, for a service that exports
	// no gauge of it: when positive it is used instead of Workers.
	WorkerPoolSize float64 `koanf:"worker_pool_size"`
	CodeLabel      string  `koanf:"code_label"`
	RouteLabel     string  `koanf:"route_label"`
	ClientLabel    string  `koanf:"client_label"`
}

// DefaultBuiltinConfig returns the pack's defaults: the conventional names
// that Prometheus client libraries, node_exporter and blackbox_exporter use.
func DefaultBuiltinConfig() BuiltinConfig {
	return BuiltinConfig{
		Enabled:    true,
		Interval:   15 * time.Second,
		Component:  "Service",
		ErrorRatio: 0.05,
		RateWindow: time.Minute,
		// Lulls of a minute or two between waves of one incident (a
		// limiter reset, instances flapping in and out of the load
		// balancer) are bridged; the storm and surge detectors hold on
		// their own too (resolve_after), so this is added to theirs.
		KeepFiringFor: 2 * time.Minute,
		Metrics: BuiltinMetrics{
			Requests:       "http_requests_total",
			DurationBucket: "http_request_duration_seconds_bucket",
			ProcessCPU:     "process_cpu_seconds_total",
			NodeCPU:        "node_cpu_seconds_total",
			Probe:          "probe_success",
			Up:             "up",
			QueueLength:    "http_server_queue_length",
			InFlight:       "http_server_requests_in_flight",
			Workers:        "http_server_workers",
			CodeLabel:      "code",
			RouteLabel:     "route",
			ClientLabel:    "client",
		},
	}
}

// Validate reports every problem with its field path.
func (c *BuiltinConfig) Validate() error {
	var errs configutil.Errors
	if c.Interval <= 0 {
		errs.Addf("interval", "must be positive, got %s", c.Interval)
	}
	if c.RateWindow < time.Second {
		errs.Addf("rate_window", "must be at least 1s, got %s", c.RateWindow)
	}
	if c.KeepFiringFor < 0 {
		errs.Addf("keep_firing_for", "must not be negative, got %s", c.KeepFiringFor)
	}
	if c.ErrorRatio <= 0 || c.ErrorRatio >= 1 {
		errs.Addf("error_ratio", "must be between 0 and 1, got %g", c.ErrorRatio)
	}
	m := c.Metrics
	for _, f := range []struct{ key, v string }{
		{"requests", m.Requests}, {"duration_bucket", m.DurationBucket}, {"process_cpu", m.ProcessCPU},
		{"node_cpu", m.NodeCPU}, {"probe", m.Probe}, {"up", m.Up}, {"queue_length", m.QueueLength},
		{"in_flight", m.InFlight}, {"workers", m.Workers},
	} {
		if !model.UTF8Validation.IsValidMetricName(f.v) || strings.ContainsAny(f.v, "{}\"") {
			errs.Addf("metrics."+f.key, "invalid metric name %q", f.v)
		}
	}
	if !(m.WorkerPoolSize >= 0) || math.IsInf(m.WorkerPoolSize, 0) {
		errs.Addf("metrics.worker_pool_size", "must be 0 (read metrics.workers) or the pool's size, got %v", m.WorkerPoolSize)
	}
	for _, f := range []struct{ key, v string }{
		{"code_label", m.CodeLabel}, {"route_label", m.RouteLabel}, {"client_label", m.ClientLabel},
	} {
		if !model.LabelName(f.v).IsValidLegacy() {
			errs.Addf("metrics."+f.key, "invalid label name %q", f.v)
		}
	}
	if strings.ContainsAny(m.Selector, "{}") {
		errs.Addf("metrics.selector", "give the matchers without braces, e.g. job=\"shop\"")
	}
	return errs.Err()
}

// Render returns the pack's YAML with the configured names filled in.
func (c *BuiltinConfig) Render(hasKind func(string) bool) ([]byte, error) {
	src, err := builtinFS.ReadFile("builtin/pack.yml")
	if err != nil {
		return nil, err
	}
	t, err := template.New("pack").Delims("[[", "]]").Funcs(template.FuncMap{
		"sel": func(metric, extra string) string {
			var ms []string
			if c.Metrics.Selector != "" {
				ms = append(ms, c.Metrics.Selector)
			}
			if extra != "" {
				ms = append(ms, extra)
			}
			if len(ms) == 0 {
				return metric
			}
			return metric + "{" + strings.Join(ms, ",") + "}"
		},
	}).Parse(string(src))
	if err != nil {
		return nil, fmt.Errorf("builtin pack: %w", err)
	}
	data := struct {
		BuiltinMetrics
		Interval      string
		Win           string // "[1m]": the rate window with its brackets
		KeepFiringFor string
		Component     string
		ErrorRatio    float64
		HasSurge      bool
	}{c.Metrics, model.Duration(c.Interval).String(), "[" + model.Duration(c.RateWindow).String() + "]",
		model.Duration(c.KeepFiringFor).String(), c.Component, c.ErrorRatio, hasKind("surge")}
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		return nil, fmt.Errorf("builtin pack: %w", err)
	}
	return b.Bytes(), nil
}

// Groups renders and parses the pack, switching off the rules named in
// Disabled.
func (c *BuiltinConfig) Groups(opts ParseOptions) ([]*Group, error) {
	lookup := opts.Lookup
	if lookup == nil {
		lookup = detect.Lookup
	}
	hasKind := func(k string) bool {
		_, ok := lookup(k)
		return ok
	}
	b, err := c.Render(hasKind)
	if err != nil {
		return nil, err
	}
	opts.DefaultInterval = c.Interval
	opts.Sources = nil
	groups, err := Parse(opts, BuiltinFile, b)
	if err != nil {
		return nil, err
	}
	off := map[string]bool{}
	for _, n := range c.Disabled {
		off[n] = true
	}
	for _, g := range groups {
		for _, r := range g.Rules {
			if off[r.Name] {
				r.Enabled = false
				r.Hash = hashRule(g, r)
				delete(off, r.Name)
			}
		}
	}
	var errs Errors
	for _, n := range c.Disabled {
		if off[n] {
			errs = append(errs, &Error{File: BuiltinFile, Msg: fmt.Sprintf("builtin.disabled: the pack has no rule %q", n)})
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return groups, nil
}
