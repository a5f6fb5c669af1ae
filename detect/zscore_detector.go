package detect

import (
	"fmt"
	"math"

	"github.com/seismo-agent/seismo/internal/configutil"
)

func init() {
	register(Kind{
		Name: "zscore",
		Doc: "Plain baseline: deviation from an exponentially weighted mean in exponentially " +
			"weighted standard deviations, alerting once per excursion beyond the band.",
		NewConfig: func() Config { c := DefaultZScoreConfig(); return &c },
	})
}

// ZScoreConfig configures the zscore detector, the plain baseline that
// `auto` is measured against: an EWMA z-score that fires once and then
// stays silent until the value is back inside the band.
type ZScoreConfig struct {
	// HalfLife is how many samples it takes the baseline to half forget.
	HalfLife float64 `yaml:"half_life"`
	// WarmUp is the number of samples before any score is given.
	WarmUp int `yaml:"warm_up"`
	// Threshold is the score at and above which a sample is anomalous
	// (0.5 is about 4.4 standard deviations).
	Threshold float64 `yaml:"threshold"`
	// Band is the half-width of the normal band in standard deviations;
	// after an alert the score stays 0 until a value is back inside it.
	Band float64 `yaml:"band"`
}

// DefaultZScoreConfig returns the defaults: the textbook choices (the
// `ewma` detector's half-life, warm-up and 3-sigma band), not tuned.
func DefaultZScoreConfig() ZScoreConfig {
	return ZScoreConfig{HalfLife: 50, WarmUp: 30, Threshold: 0.5, Band: 3}
}

// Validate reports every invalid field.
func (c *ZScoreConfig) Validate() error {
	var errs configutil.Errors
	checkHalfLife(&errs, "half_life", c.HalfLife)
	checkCommon(&errs, c.Threshold, c.WarmUp, c.Band)
	return errs.Err()
}

// New builds a detector.
func (c *ZScoreConfig) New() (Detector, error) {
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("zscore detector: %w", err)
	}
	return &zscoreDetector{locScale: newLocScale("zscore", c.WarmUp, c.Threshold, c.Band, c.fields()), stats: NewEWMA(AlphaForHalfLife(c.HalfLife))}, nil
}

// AlertThreshold is the default threshold for alerts.
func (c *ZScoreConfig) AlertThreshold() float64 { return c.Threshold }

func (c *ZScoreConfig) fields() []configField {
	return []configField{{"half_life", c.HalfLife}, {"warm_up", float64(c.WarmUp)}, {"threshold", c.Threshold}, {"band", c.Band}}
}

type zscoreDetector struct {
	locScale
	stats EWMA
}

func (d *zscoreDetector) Observe(_ int64, x float64) Verdict {
	if !finite(x) {
		return skipVerdict(d.last)
	}
	loc := d.stats.Mean()
	scale := max(d.stats.Std(), d.rng.floor(loc, d.stats.Count() >= d.warmUp))
	z := (x - loc) / scale
	v := bandVerdict(x, loc, scale, d.band, zScore(z))
	// Fire once: after an alert the score stays 0 (the state anomalous)
	// until a value is back inside the band.
	switch {
	case d.stats.Count() < d.warmUp:
		v.State, v.Score = StateWarmingUp, 0
	case d.last.State == StateAnomalous && math.Abs(z) > d.band:
		v.State, v.Score = StateAnomalous, 0
	case v.Score >= d.threshold:
		v.State = StateAnomalous
	}
	v.Evidence = scored(v.Score, EvidenceSpike)
	d.stats.Update(x)
	d.rng.observe(x)
	d.last = v
	return v
}

func (d *zscoreDetector) MarshalBinary() ([]byte, error) { return d.marshal(&d.stats) }

func (d *zscoreDetector) UnmarshalBinary(b []byte) error { return d.unmarshal(b, &d.stats) }
