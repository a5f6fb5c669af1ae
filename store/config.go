package store

import (
	"time"

	"github.com/seismo-agent/seismo/internal/configutil"
)

// Defaults for Config.
const (
	DefaultRetention = time.Hour
	DefaultMaxSeries = 100_000
)

// Config is the "storage" section of the agent config.
type Config struct {
	// Retention is how long samples are kept. It should cover the longest
	// range any rule reads (rate windows, offsets, detector warm-up).
	Retention time.Duration `koanf:"retention" yaml:"retention"`
	// MaxSeries bounds the number of series held at once. Samples of new
	// series beyond it are dropped and counted in
	// seismo_store_samples_rejected_total{reason="series_limit"}.
	MaxSeries int `koanf:"max_series" yaml:"max_series"`
}

// DefaultConfig returns the defaults for the storage section.
func DefaultConfig() Config {
	return Config{Retention: DefaultRetention, MaxSeries: DefaultMaxSeries}
}

// Validate reports every problem with field paths relative to the section.
func (c Config) Validate() error {
	var errs configutil.Errors
	if c.Retention < time.Minute {
		errs.Addf("retention", "must be at least 1m, got %s", c.Retention)
	}
	if c.MaxSeries < 1 {
		errs.Addf("max_series", "must be positive, got %d", c.MaxSeries)
	}
	return errs.Err()
}
