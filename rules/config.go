package rules

import (
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"

	"github.com/seismo-agent/seismo/detect"
	"github.com/seismo-agent/seismo/internal/configutil"
)

// Config is the `rules` section of the agent config.
type Config struct {
	// Files are rule files or glob patterns; relative paths are resolved
	// against the config file's directory.
	Files []string `koanf:"files"`
	// EvaluationInterval applies to groups without their own interval.
	EvaluationInterval time.Duration `koanf:"evaluation_interval"`
	// ResendDelay is how often firing alerts are sent again.
	ResendDelay time.Duration `koanf:"resend_delay"`
	// ResolvedRetention is how long resolved alerts are kept and re-sent.
	ResolvedRetention time.Duration `koanf:"resolved_retention"`
	// FlapWindow and FlapThreshold: that many firing/resolved changes in
	// the window make an alert flapping (one notice instead of many).
	FlapWindow    time.Duration `koanf:"flap_window"`
	FlapThreshold int           `koanf:"flap_threshold"`
	// SeriesGrace is how long a vanished series' detector stays live
	// (counted in the API and the console).
	SeriesGrace time.Duration `koanf:"series_grace"`
	// SeriesRetention is how long a vanished series' detector is kept,
	// dormant, after that, so that a series back from a target's outage
	// or a deploy is judged with what its detector had learnt. 0 forgets
	// it after series_grace; any other value must exceed series_grace.
	SeriesRetention time.Duration `koanf:"series_retention"`
	// DormantLimit is the most dormant detectors one rule keeps: past it,
	// those whose series have been gone longest are forgotten first, so
	// that a rule over pods that a service redeploys often holds a
	// bounded number of old pods' detectors, not a day of them. 0 keeps
	// every one for series_retention.
	DormantLimit int `koanf:"dormant_limit"`
	// SnapshotInterval is how often detector and alert state is saved to
	// the data directory (also saved on shutdown).
	SnapshotInterval time.Duration `koanf:"snapshot_interval"`
	// WarmStart, when positive, fills anomaly and composite detectors
	// from a range query over this much history at their first evaluation
	// after a start or reload: cold detectors get the whole window, restored
	// ones the evaluations they missed. 0 disables it.
	WarmStart time.Duration `koanf:"warm_start"`
	// Datasource is the datasource of groups that name none, the built-in
	// pack's included: "" or "local" is the embedded store, any other name
	// one of datasources.remote.
	Datasource string `koanf:"datasource"`
	// QueryOffset is the query_offset of groups that set none, the
	// built-in pack's included: evaluate at tick minus this, for stores
	// where recent samples arrive late or are hidden (VictoriaMetrics'
	// -search.latencyOffset, remote write lag).
	QueryOffset time.Duration `koanf:"query_offset"`
	// TimeZone is the time_zone of auto and seasonal detectors that set
	// none, the built-in pack's included: the IANA zone whose days their
	// time-of-day baselines follow. Empty is UTC.
	TimeZone string `koanf:"time_zone"`
	// ExternalLabels are added to every alert, as Prometheus'
	// global.external_labels are.
	ExternalLabels map[string]string `koanf:"external_labels"`
	// ReplicaLabel names the external label that tells HA replicas apart.
	// It is not an alert label, so replicas send identical alerts (one
	// page through Alertmanager and one incident key); its value travels
	// as the alert's replica.
	ReplicaLabel string `koanf:"replica_label"`
	// Shard splits the evaluated series between replicas.
	Shard ShardConfig `koanf:"shard"`
	// WatchFiles reloads rules when a rule file changes.
	WatchFiles bool `koanf:"watch_files"`
	// Builtin configures the embedded rule pack.
	Builtin BuiltinConfig `koanf:"builtin"`
}

// DefaultConfig returns the section's defaults.
func DefaultConfig() Config {
	return Config{
		EvaluationInterval: 15 * time.Second,
		ResendDelay:        time.Minute,
		ResolvedRetention:  15 * time.Minute,
		FlapWindow:         10 * time.Minute,
		FlapThreshold:      4,
		SeriesGrace:        5 * time.Minute,
		SeriesRetention:    24 * time.Hour,
		DormantLimit:       10000,
		SnapshotInterval:   time.Minute,
		WarmStart:          time.Hour,
		WatchFiles:         true,
		Shard:              ShardConfig{Total: 1},
		Builtin:            DefaultBuiltinConfig(),
	}
}

// Validate reports every problem with its field path.
func (c *Config) Validate() error {
	var errs configutil.Errors
	for i, f := range c.Files {
		if _, err := filepath.Match(f, ""); err != nil {
			errs.Addf(configutil.Join("files", "["+itoa(i)+"]"), "bad pattern %q: %v", f, err)
		}
	}
	pos := func(name string, d time.Duration) {
		if d <= 0 {
			errs.Addf(name, "must be positive, got %s", d)
		}
	}
	pos("evaluation_interval", c.EvaluationInterval)
	pos("resend_delay", c.ResendDelay)
	pos("resolved_retention", c.ResolvedRetention)
	pos("flap_window", c.FlapWindow)
	pos("series_grace", c.SeriesGrace)
	pos("snapshot_interval", c.SnapshotInterval)
	if c.QueryOffset < 0 {
		errs.Addf("query_offset", "must not be negative, got %s", c.QueryOffset)
	}
	if c.SeriesRetention < 0 || c.SeriesRetention > 0 && c.SeriesRetention <= c.SeriesGrace {
		errs.Addf("series_retention", "must be 0 (keep no dormant detectors) or longer than series_grace (%s), got %s", c.SeriesGrace, c.SeriesRetention)
	}
	if c.DormantLimit < 0 {
		errs.Addf("dormant_limit", "must not be negative (0 keeps every dormant detector for series_retention), got %d", c.DormantLimit)
	}
	if c.WarmStart < 0 {
		errs.Addf("warm_start", "must not be negative, got %s", c.WarmStart)
	}
	if err := detect.CheckTimeZone(c.TimeZone); err != nil {
		errs.Addf("time_zone", "%v", err)
	}
	if c.FlapThreshold < 0 {
		errs.Addf("flap_threshold", "must not be negative (0 disables flap detection), got %d", c.FlapThreshold)
	}
	for name := range c.ExternalLabels {
		if !model.LabelName(name).IsValidLegacy() || strings.HasPrefix(name, "__") {
			errs.Addf("external_labels."+name, "invalid label name %q", name)
		}
		if name == labels.AlertName {
			errs.Addf("external_labels."+name, "alertname is the rule's")
		}
	}
	if c.ReplicaLabel != "" {
		if _, ok := c.ExternalLabels[c.ReplicaLabel]; !ok {
			errs.Addf("replica_label", "%q is not one of external_labels", c.ReplicaLabel)
		}
	}
	errs.Merge("shard", c.Shard.Validate())
	errs.Merge("builtin", c.Builtin.Validate())
	return errs.Err()
}

// ShardConfig splits the series that rules evaluate between replicas
// that load the same rules: each series (and each composite detector's
// group) belongs to exactly one shard by a consistent hash of its labels,
// so Total replicas together cover every series once.
type ShardConfig struct {
	// Index is this replica's shard, 0 to Total-1.
	Index int `koanf:"index"`
	// Total is the number of shards; 1 means no sharding.
	Total int `koanf:"total"`
}

// Validate reports every problem with its field path.
func (s *ShardConfig) Validate() error {
	var errs configutil.Errors
	if s.Total < 1 {
		errs.Addf("total", "must be at least 1, got %d", s.Total)
	}
	if s.Index < 0 || (s.Total >= 1 && s.Index >= s.Total) {
		errs.Addf("index", "must be between 0 and total-1 (%d), got %d", s.Total-1, s.Index)
	}
	return errs.Err()
}

// Owns reports whether the series with label hash h belongs to this
// shard.
func (s ShardConfig) Owns(h uint64) bool {
	if s.Total <= 1 {
		return true
	}
	return jumpHash(h, s.Total) == s.Index
}

// filter keeps the samples of the series this shard owns.
func (s ShardConfig) filter(vec promql.Vector) promql.Vector {
	if s.Total <= 1 {
		return vec
	}
	out := vec[:0:0]
	for _, smp := range vec {
		if s.Owns(smp.Metric.Hash()) {
			out = append(out, smp)
		}
	}
	return out
}

// jumpHash is Lamping and Veach's jump consistent hash: going from n to
// n+1 shards moves only 1/(n+1) of the keys.
func jumpHash(key uint64, buckets int) int {
	var b, j int64 = -1, 0
	for j < int64(buckets) {
		b = j
		key = key*2862933555777941757 + 1
		j = int64(float64(b+1) * (float64(int64(1)<<31) / float64((key>>33)+1)))
	}
	return int(b)
}

// Resolve makes relative rule file paths absolute against baseDir.
func (c *Config) Resolve(baseDir string) error {
	for i, f := range c.Files {
		c.Files[i] = configutil.ResolvePath(baseDir, f)
	}
	return nil
}

func (c *Config) lifecycle() Lifecycle {
	return Lifecycle{
		ResendDelay:       c.ResendDelay,
		ResolvedRetention: c.ResolvedRetention,
		FlapWindow:        c.FlapWindow,
		FlapThreshold:     c.FlapThreshold,
	}
}

// expandFiles resolves the glob patterns; a pattern without magic that
// matches nothing is kept so that reading it reports the missing file.
func (c *Config) expandFiles() []string {
	var out []string
	for _, f := range c.Files {
		m, err := filepath.Glob(f)
		if err != nil || len(m) == 0 {
			if !hasMeta(f) {
				out = append(out, f)
			}
			continue
		}
		out = append(out, m...)
	}
	return out
}

func hasMeta(p string) bool {
	for _, c := range p {
		switch c {
		case '*', '?', '[', '\\':
			return true
		}
	}
	return false
}

func itoa(i int) string {
	const digits = "0123456789"
	if i < 10 {
		return digits[i : i+1]
	}
	return itoa(i/10) + digits[i%10:i%10+1]
}
