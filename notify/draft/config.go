package draft

import (
	"time"
	// Drafts name a configured zone; containers often lack tzdata.
	_ "time/tzdata"

	"github.com/seismo-agent/seismo/internal/configutil"
)

// Config is the `drafts` part of the notify section.
type Config struct {
	// Receivers get every draft, marked as a draft for review.
	Receivers []string `koanf:"receivers"`
	// TimeZone is an IANA zone name for the times in drafts ("America/Sao_Paulo").
	TimeZone string `koanf:"time_zone"`
	// Hold is how long a recovered incident stays in Monitoring before the
	// Resolved draft.
	Hold time.Duration `koanf:"hold"`
	// Keep is how many incidents /api/v1/drafts lists.
	Keep int `koanf:"keep"`
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{TimeZone: "UTC", Hold: 10 * time.Minute, Keep: 50}
}

// Validate checks the section.
func (c *Config) Validate() error {
	var errs configutil.Errors
	if _, err := time.LoadLocation(c.TimeZone); err != nil {
		errs.Addf("time_zone", "unknown time zone %q", c.TimeZone)
	}
	if c.Hold < 0 {
		errs.Addf("hold", "must not be negative")
	}
	if c.Keep < 0 {
		errs.Addf("keep", "must not be negative")
	}
	return errs.Err()
}

// Location returns the configured zone (UTC if it cannot be loaded).
func (c *Config) Location() *time.Location {
	if loc, err := time.LoadLocation(c.TimeZone); err == nil {
		return loc
	}
	return time.UTC
}
