package detect

import (
	"fmt"
	"time"

	"github.com/seismo-agent/seismo/internal/configutil"
)

func init() {
	register(Kind{
		Name: "seasonal",
		Doc: "Deviation from what this time of the period usually looks like " +
			"(hour-of-week buckets by default), learned online.",
		NewConfig: func() Config { c := DefaultSeasonalConfig(); return &c },
	})
}

// SeasonalConfig configures the seasonal detector.
type SeasonalConfig struct {
	// Period is the length of the seasonal cycle (default one week).
	Period time.Duration `yaml:"period"`
	// Buckets is the number of equal slices of the period, each with its own
	// baseline (default 168: hour of week).
	Buckets int `yaml:"buckets"`
	// HalfLife is, per bucket, how many visits it takes to half forget.
	HalfLife float64 `yaml:"half_life"`
	// MinVisits is the number of samples a bucket needs before it is
	// trusted; until then the global robust baseline is used.
	MinVisits int `yaml:"min_visits"`
	// WarmUp is the number of samples before any score is given.
	WarmUp int `yaml:"warm_up"`
	// Threshold is the score at and above which a sample is anomalous.
	Threshold float64 `yaml:"threshold"`
	// Band is the half-width of the reported normal band in standard
	// deviations.
	Band float64 `yaml:"band"`
	// TimeZone is the IANA time zone (e.g. "Europe/Berlin") whose wall
	// clock the period's buckets follow; empty is UTC (see auto's).
	TimeZone string `yaml:"time_zone"`
}

// DefaultSeasonalConfig returns the defaults.
func DefaultSeasonalConfig() SeasonalConfig {
	return SeasonalConfig{Period: 7 * 24 * time.Hour, Buckets: 168, HalfLife: 20, MinVisits: 8, WarmUp: 30, Threshold: 0.5, Band: 3}
}

// Validate reports every invalid field.
func (c *SeasonalConfig) Validate() error {
	var errs configutil.Errors
	if c.Buckets < 1 || c.Buckets > 10080 {
		errs.Addf("buckets", "must be between 1 and 10080, got %d", c.Buckets)
	}
	if c.Period < time.Minute || (c.Buckets >= 1 && c.Period.Milliseconds() < int64(c.Buckets)) {
		errs.Addf("period", "must be at least 1m and 1ms per bucket, got %v", c.Period)
	}
	checkHalfLife(&errs, "half_life", c.HalfLife)
	if c.MinVisits < 2 {
		errs.Addf("min_visits", "must be at least 2, got %d", c.MinVisits)
	}
	checkCommon(&errs, c.Threshold, c.WarmUp, c.Band)
	checkTimeZone(&errs, c.TimeZone)
	return errs.Err()
}

// New builds a detector.
func (c *SeasonalConfig) New() (Detector, error) {
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("seasonal detector: %w", err)
	}
	return &seasonalDetector{
		cfg:    *c,
		season: NewSeasonal(c.Period.Milliseconds(), c.Buckets, AlphaForHalfLife(c.HalfLife)),
		global: NewRobust(AlphaForHalfLife(100), 3),
		resid:  NewRobust(AlphaForHalfLife(200), 3),
		rng:    newValueRange(),
		zone:   newZoneClock(c.TimeZone),
	}, nil
}

// AlertThreshold is the default threshold for alerts.
func (c *SeasonalConfig) AlertThreshold() float64 { return c.Threshold }

// SetTimeZone implements TimeZoned.
func (c *SeasonalConfig) SetTimeZone(zone string) { c.TimeZone = zone }

func (c *SeasonalConfig) fields() []configField {
	return []configField{{"period", float64(c.Period)}, {"buckets", float64(c.Buckets)}, {"half_life", c.HalfLife},
		{"min_visits", float64(c.MinVisits)}, {"warm_up", float64(c.WarmUp)}, {"threshold", c.Threshold}, {"band", c.Band}}
}

type seasonalDetector struct {
	cfg    SeasonalConfig
	season Seasonal
	global Robust // fallback while a bucket is still learning
	// resid is the spread of values around their bucket's mean, pooled over
	// all buckets: one bucket alone sees too few samples to know its spread.
	resid Robust
	rng   valueRange // for the floor under the scale
	last  Verdict
	zone  zoneClock // derived from the config
}

func (d *seasonalDetector) Observe(ts int64, x float64) Verdict {
	if !finite(x) {
		return skipVerdict(d.last)
	}
	b := d.season.At(d.zone.local(ts))
	expected, scale := d.global.Loc(), d.global.Scale()
	seasonal := b.Count() >= uint64(d.cfg.MinVisits)
	ev := EvidenceSpike // against the global baseline until the bucket judges
	if seasonal && d.resid.Count() >= uint64(d.cfg.MinVisits) {
		expected, scale, ev = b.Mean(), d.resid.Scale(), EvidenceTimeOfDay
	}
	warm := d.global.Count() >= uint64(d.cfg.WarmUp)
	scale = max(scale, d.rng.floor(expected, warm))
	v := bandVerdict(x, expected, scale, d.cfg.Band, zScore((x-expected)/scale))
	settle(&v, warm, d.cfg.Threshold)
	v.Evidence = scored(v.Score, ev)
	if seasonal {
		d.resid.Update(x - b.Mean())
	}
	b.Update(x)
	d.global.Update(x)
	d.rng.observe(x)
	d.last = v
	return v
}

const seasonalKind = "seasonal"

func (d *seasonalDetector) MarshalBinary() ([]byte, error) {
	w := newEncoder(seasonalKind, 64+32*d.cfg.Buckets)
	encodeConfig(w, d.cfg.fields())
	w.str(d.cfg.TimeZone)
	d.season.encode(w)
	d.global.encode(w)
	d.resid.encode(w)
	d.rng.encode(w)
	encodeVerdict(w, d.last)
	return w.b, nil
}

func (d *seasonalDetector) UnmarshalBinary(b []byte) error {
	r, err := newDecoder(seasonalKind, b)
	if err != nil {
		return err
	}
	checkConfig(r, d.cfg.fields())
	r.configStr("time_zone", d.cfg.TimeZone)
	d.season.decode(r)
	d.global.decode(r)
	d.resid.decode(r)
	d.rng.decode(r)
	d.last = decodeVerdict(r)
	return r.finish()
}
