package rules

import (
	"path/filepath"
	"time"

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
	// SeriesGrace is how long a detector outlives its vanished series.
	SeriesGrace time.Duration `koanf:"series_grace"`
	// SnapshotInterval is how often detector and alert state is saved to
	// the data directory (also saved on shutdown).
	SnapshotInterval time.Duration `koanf:"snapshot_interval"`
	// WarmStart, when positive, feeds a cold anomaly rule's detectors this
	// much history from a range query before its first judgement (useful
	// with a remote datasource that holds history); 0 disables it.
	WarmStart time.Duration `koanf:"warm_start"`
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
		SnapshotInterval:   time.Minute,
		WatchFiles:         true,
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
	if c.WarmStart < 0 {
		errs.Addf("warm_start", "must not be negative, got %s", c.WarmStart)
	}
	if c.FlapThreshold < 0 {
		errs.Addf("flap_threshold", "must not be negative (0 disables flap detection), got %d", c.FlapThreshold)
	}
	errs.Merge("builtin", c.Builtin.Validate())
	return errs.Err()
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
